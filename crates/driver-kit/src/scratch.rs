//! Per-run files: the instructions, MCP configuration and settings a driver
//! writes for one run travel as files (never on argv, whose length is
//! limited), in a private directory removed when the run ends.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A private directory for one run's files (mode `0700`, files `0600`),
/// removed with everything in it when dropped.
#[derive(Debug)]
pub struct RunScratch {
    dir: tempfile::TempDir,
}

impl RunScratch {
    /// A fresh directory under the system temporary directory, named after
    /// the driver type.
    pub fn new(driver_type: &str) -> io::Result<RunScratch> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("agent-adaptor-{driver_type}-"))
            .tempdir()?;
        restrict(dir.path(), 0o700)?;
        Ok(RunScratch { dir })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write `contents` to `name` (a relative path; parents are created
    /// `0700`) with mode `0600`, and return the file's path.
    pub fn write(&self, name: &str, contents: &[u8]) -> io::Result<PathBuf> {
        let relative = Path::new(name);
        if relative.is_absolute()
            || relative
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not a plain relative path: {name:?}"),
            ));
        }
        let path = self.dir.path().join(relative);
        if let Some(parent) = path.parent() {
            create_private_dir_all(parent)?;
        }
        write_private(&path, contents)?;
        Ok(path)
    }
}

/// `fs::create_dir_all` with mode `0700` for every directory it creates.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Write a file readable by its owner only (`0600`), replacing any.
pub fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    restrict(path, 0o600)
}

#[cfg(unix)]
fn restrict(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn restrict(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn files_are_private_and_removed_with_the_scratch() {
        let scratch = RunScratch::new("toy").unwrap();
        let big = vec![b'x'; 200 * 1024];
        let path = scratch.write("nested/instructions.md", &big).unwrap();
        assert_eq!(fs::read(&path).unwrap().len(), big.len());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(scratch.path()), 0o700);
            assert_eq!(mode(path.parent().unwrap()), 0o700);
        }
        for bad in ["../x", "/etc/x", "a/../../x"] {
            assert_eq!(
                scratch.write(bad, b"x").unwrap_err().kind(),
                io::ErrorKind::InvalidInput,
                "{bad}"
            );
        }
        let dir = scratch.path().to_owned();
        drop(scratch);
        assert!(!dir.exists());
    }
}
