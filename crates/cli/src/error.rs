//! [`CliError`]: what ends a command early, as one line and an exit code.

use std::fmt;

/// Exit code of a run cancelled with Ctrl-C (128 + SIGINT, as shells do).
pub const EXIT_CANCELLED: u8 = 130;
/// Exit code of bad usage (unknown driver, unreadable file …).
pub const EXIT_USAGE: u8 = 2;
/// Exit code of a run whose output could not be written (stdout closed, as
/// by `| head`, or failing, as on a full disk); the run is cancelled
/// (`EX_IOERR` of sysexits.h).
pub const EXIT_OUTPUT: u8 = 74;
/// Exit code of every other failure.
pub const EXIT_FAILURE: u8 = 1;

/// A failure of a command: a one-line message and the process exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// The message (one line; newlines are replaced when printed).
    pub message: String,
    /// The exit code.
    pub code: u8,
}

impl CliError {
    /// A failure (exit 1).
    pub fn failure(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: EXIT_FAILURE,
        }
    }

    /// Bad usage (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: EXIT_USAGE,
        }
    }

    /// A run cancelled by the user (exit 130).
    pub fn cancelled(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: EXIT_CANCELLED,
        }
    }

    /// A run stopped by `stop` (exit 128 + its signal number; Ctrl-C is
    /// 130, as with [`cancelled`](Self::cancelled)).
    pub fn signalled(message: impl Into<String>, stop: crate::signals::Stop) -> Self {
        CliError {
            message: message.into(),
            code: stop.exit_code(),
        }
    }

    /// The message on one line.
    pub fn one_line(&self) -> String {
        one_line(&self.message)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.one_line())
    }
}

impl std::error::Error for CliError {}

/// `text` with every run of line breaks (and the whitespace around them)
/// replaced by "; ", trimmed.
pub fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_printed_on_one_line() {
        let e = CliError::failure("first\n\n  second  \nthird");
        assert_eq!(e.to_string(), "first; second; third");
        assert_eq!(e.code, EXIT_FAILURE);
    }
}
