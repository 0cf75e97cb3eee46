//! [`TreeWriter`]: writes checked archive entries under a target directory,
//! counting files and the bytes it actually reads against the caps.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;

use crate::ExtractLimits;
use crate::entry_path::RelPath;
use crate::error::{SkillError, io_at};

/// Mode of the directories written (Unix).
pub(crate) const DIR_MODE: u32 = 0o700;
/// Mode of a file written (Unix); `| 0o100` when the entry was executable.
pub(crate) const FILE_MODE: u32 = 0o600;

/// Writes entries under `root`, which it assumes is a fresh, private, empty
/// directory: it only ever creates new directories and new files there
/// (never opens an existing one), and it never creates a link.
pub(crate) struct TreeWriter<'a> {
    root: &'a Path,
    limits: ExtractLimits,
    entries: usize,
    total: u64,
    dirs: HashSet<Vec<String>>,
}

impl<'a> TreeWriter<'a> {
    /// A writer into the empty directory `root`.
    pub fn new(root: &'a Path, limits: ExtractLimits) -> Self {
        Self {
            root,
            limits,
            entries: 0,
            total: 0,
            dirs: HashSet::new(),
        }
    }

    fn count(&mut self) -> Result<(), SkillError> {
        self.entries += 1;
        if self.entries > self.limits.max_files {
            return Err(SkillError::TooManyFiles {
                limit: self.limits.max_files,
            });
        }
        Ok(())
    }

    /// Creates the directory `rel` and any missing parent.
    pub fn dir(&mut self, rel: &RelPath) -> Result<(), SkillError> {
        self.ensure_dirs(rel.parts())
    }

    fn ensure_dirs(&mut self, parts: &[String]) -> Result<(), SkillError> {
        for end in 1..=parts.len() {
            let prefix = &parts[..end];
            if self.dirs.contains(prefix) {
                continue;
            }
            self.count()?;
            let path = prefix
                .iter()
                .fold(self.root.to_path_buf(), |p, c| p.join(c));
            match new_dir(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(SkillError::DuplicateEntry {
                        path: prefix.join("/"),
                    });
                }
                Err(e) => return Err(io_at(&path)(e)),
            }
            self.dirs.insert(prefix.to_vec());
        }
        Ok(())
    }

    /// Writes the file `rel` from `data`. `claimed` is the size the archive
    /// announces: a claim over a cap is refused before anything is read,
    /// and content of another length is a corrupt archive.
    /// Whatever the claim, at most `cap + 1` bytes are read from `data` and
    /// at most `cap` bytes written, `cap` being the smaller of the entry cap
    /// and what is left of the total cap. A read error is turned into a
    /// [`SkillError`] by `read_error`.
    pub fn file(
        &mut self,
        rel: &RelPath,
        executable: bool,
        claimed: u64,
        data: &mut dyn Read,
        read_error: &dyn Fn(io::Error) -> SkillError,
    ) -> Result<(), SkillError> {
        let shown = rel.display();
        let parts = rel.parts();
        if let Some((_, parents)) = parts.split_last() {
            self.ensure_dirs(parents)?;
        }
        if self.dirs.contains(parts) {
            return Err(SkillError::DuplicateEntry { path: shown });
        }
        self.count()?;
        let left = self.limits.max_total_bytes.saturating_sub(self.total);
        let over = |read: u64| {
            if read > self.limits.max_entry_bytes {
                SkillError::EntryTooLarge {
                    path: shown.clone(),
                    limit: self.limits.max_entry_bytes,
                }
            } else {
                SkillError::TotalTooLarge {
                    limit: self.limits.max_total_bytes,
                }
            }
        };
        let cap = self.limits.max_entry_bytes.min(left);
        if claimed > cap {
            return Err(over(claimed));
        }
        let path = rel.under(self.root);
        let mut file = match new_file(&path, executable) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(SkillError::DuplicateEntry { path: shown });
            }
            Err(e) => return Err(io_at(&path)(e)),
        };
        let mut limited = data.take(cap.saturating_add(1));
        let mut buf = vec![0u8; 64 * 1024];
        let mut written = 0u64;
        loop {
            let n = match limited.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(e)),
            };
            let read = written.saturating_add(n as u64);
            if read > cap {
                return Err(over(read));
            }
            file.write_all(&buf[..n]).map_err(io_at(&path))?;
            written = read;
        }
        if written != claimed {
            return Err(SkillError::CorruptArchive {
                reason: format!("entry {shown:?} holds {written} bytes, its header says {claimed}"),
            });
        }
        file.flush().map_err(io_at(&path))?;
        self.total = self.total.saturating_add(written);
        Ok(())
    }
}

/// A new directory, private to the owner.
fn new_dir(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(path)
}

/// A new file (never an existing one, never through a link), private to the
/// owner, executable by the owner when `executable`.
pub(crate) fn new_file(path: &Path, executable: bool) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(
        &mut options,
        if executable {
            FILE_MODE | 0o100
        } else {
            FILE_MODE
        },
    );
    #[cfg(not(unix))]
    let _ = executable;
    options.open(path)
}
