//! The append-only spill file behind a [`Transcript`](super::Transcript):
//! an anonymous (already unlinked) temporary file, shared by every clone of
//! the transcript that spilled into it.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The file and the offset just past its last complete record.
struct Inner {
    file: File,
    end: u64,
}

/// An unlinked temporary file that is only ever appended to.
///
/// Records are written at `end`, never over earlier ones, so several clones
/// of a transcript can append to it and each read back exactly the records
/// whose offsets it kept. Every access holds the lock (the file cursor is
/// shared); a failed write leaves `end` where it was, so a partial record is
/// overwritten by the next append and never referenced.
pub(super) struct SpillFile {
    inner: Mutex<Inner>,
}

impl SpillFile {
    /// A new empty file in `dir`, or in the system's temporary directory.
    pub(super) fn create(dir: Option<&Path>) -> io::Result<Self> {
        let file = match dir {
            Some(dir) => tempfile::tempfile_in(dir)?,
            None => tempfile::tempfile()?,
        };
        Ok(SpillFile {
            inner: Mutex::new(Inner { file, end: 0 }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while the lock was held cannot break an invariant that
        // matters here: `end` only moves after a complete write.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Append `bytes` in one write; the offset they start at.
    pub(super) fn append(&self, bytes: &[u8]) -> io::Result<u64> {
        let mut inner = self.lock();
        let start = inner.end;
        inner.file.seek(SeekFrom::Start(start))?;
        inner.file.write_all(bytes)?;
        inner.end = start.saturating_add(bytes.len() as u64);
        Ok(start)
    }

    /// Read up to `buf.len()` bytes from `pos`, fewer only at the end of
    /// the file; the number read.
    pub(super) fn read_at(&self, pos: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut inner = self.lock();
        inner.file.seek(SeekFrom::Start(pos))?;
        let mut filled = 0;
        while filled < buf.len() {
            match inner.file.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }

    /// Overwrite bytes at `pos` (tests corrupt records with it).
    #[cfg(test)]
    pub(super) fn overwrite(&self, pos: u64, bytes: &[u8]) -> io::Result<()> {
        let mut inner = self.lock();
        inner.file.seek(SeekFrom::Start(pos))?;
        inner.file.write_all(bytes)
    }
}

impl fmt::Debug for SpillFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SpillFile")
    }
}
