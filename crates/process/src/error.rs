//! [`ProcessError`]: everything the process helper can fail with.

use std::io;
use std::path::PathBuf;

use agent_adaptor_driver::{DriverError, SinkError};

/// Why a process operation failed.
///
/// Errors name the program (as given to [`Command::new`](crate::Command::new))
/// or a path, never an environment value or stdin content.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessError {
    /// The program does not exist (or is not on the child's `PATH`).
    #[error("program not found: {program}")]
    NotFound {
        /// The program that was not found.
        program: String,
    },
    /// The program exists but may not be executed.
    #[error("permission denied running {program}")]
    PermissionDenied {
        /// The program that could not be executed.
        program: String,
    },
    /// The program was found, at `path`, but is not executable (its mode
    /// has no execute permission for us).
    #[error("cannot start {program}: {} is not executable", path.display())]
    NotExecutable {
        /// The program as given.
        program: String,
        /// The file that was found.
        path: PathBuf,
    },
    /// The program, at `path`, is a script whose `#!` interpreter does not
    /// exist (`execve` reports that as "not found", naming neither).
    #[error(
        "cannot start {program}: bad interpreter {} (the #! line of {}) does not exist",
        interpreter.display(),
        path.display()
    )]
    BadInterpreter {
        /// The program as given.
        program: String,
        /// The script that was found.
        path: PathBuf,
        /// The interpreter its `#!` line names.
        interpreter: PathBuf,
    },
    /// The working directory does not exist or is not a directory.
    #[error("cannot start {program}: working directory not found: {}", cwd.display())]
    CwdNotFound {
        /// The program that was to run there.
        program: String,
        /// The directory that was asked for.
        cwd: PathBuf,
    },
    /// Any other spawn failure.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program that failed to start.
        program: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The sink refused a chunk. [`SinkError::Cancelled`] means the run was
    /// cancelled: stop pulling and call [`Process::shutdown`](crate::Process::shutdown).
    /// Capture continues regardless; chunks are no longer emitted after this.
    #[error(transparent)]
    Sink(SinkError),
    /// The raw capture could not be kept complete (the spill file could not
    /// be created or written, e.g. a full disk). The process is still
    /// stopped and reaped by `finish`/`shutdown`, which report this again.
    #[error("raw capture failed: {0}")]
    Capture(#[source] io::Error),
    /// Waiting for the child or reading its pipes failed.
    #[error("process i/o: {0}")]
    Io(#[source] io::Error),
}

impl ProcessError {
    /// True when the sink reported that the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, ProcessError::Sink(SinkError::Cancelled))
    }
}

impl From<ProcessError> for DriverError {
    /// Spawn failures become [`DriverError::Spawn`] (with the matching
    /// `io::ErrorKind` and, for a file that is not executable or a bad
    /// interpreter, a message naming the path and the interpreter), sink refusals [`DriverError::Sink`], I/O and capture
    /// failures [`DriverError::Io`].
    fn from(err: ProcessError) -> Self {
        match err {
            ProcessError::NotFound { program } => DriverError::Spawn {
                program,
                source: io::ErrorKind::NotFound.into(),
            },
            ProcessError::PermissionDenied { program } => DriverError::Spawn {
                program,
                source: io::ErrorKind::PermissionDenied.into(),
            },
            ProcessError::NotExecutable { program, path } => DriverError::Spawn {
                program,
                source: io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{} is not executable", path.display()),
                ),
            },
            ProcessError::BadInterpreter {
                program,
                path,
                interpreter,
            } => DriverError::Spawn {
                program,
                source: io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "bad interpreter {} (the #! line of {}) does not exist",
                        interpreter.display(),
                        path.display()
                    ),
                ),
            },
            ProcessError::CwdNotFound { program, cwd } => DriverError::Spawn {
                program,
                source: io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("working directory not found: {}", cwd.display()),
                ),
            },
            ProcessError::Spawn { program, source } => DriverError::Spawn { program, source },
            ProcessError::Sink(e) => DriverError::Sink(e),
            ProcessError::Capture(e) | ProcessError::Io(e) => DriverError::Io(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_to_driver_error() {
        let e: DriverError = ProcessError::NotFound {
            program: "claude".into(),
        }
        .into();
        match e {
            DriverError::Spawn { program, source } => {
                assert_eq!(program, "claude");
                assert_eq!(source.kind(), io::ErrorKind::NotFound);
            }
            other => panic!("unexpected {other:?}"),
        }
        let e: DriverError = ProcessError::Sink(SinkError::Cancelled).into();
        assert!(matches!(e, DriverError::Sink(SinkError::Cancelled)));
        assert!(ProcessError::Sink(SinkError::Cancelled).is_cancelled());
    }
}
