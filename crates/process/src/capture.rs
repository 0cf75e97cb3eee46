//! The complete raw capture of one output stream: in memory up to a
//! threshold, then spilled to an unlinked temporary file.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_adaptor_driver::{RawBytes, RawSource};
use bytes::BytesMut;

use crate::budget::{MemoryBudget, capture_memory_budget};

/// An anonymous (already unlinked) temporary file holding a stream's bytes.
///
/// It is written only by the capture (appending, through the file cursor)
/// and read only with positional reads, so readers never disturb the writer.
/// The file disappears when the last `Arc` (capture, line, or a clone of a
/// [`RawBytes`]) is dropped.
pub(crate) struct SpillFile {
    file: File,
}

impl SpillFile {
    fn create(dir: Option<&Path>) -> io::Result<Self> {
        let file = match dir {
            Some(dir) => tempfile::tempfile_in(dir)?,
            None => tempfile::tempfile()?,
        };
        Ok(SpillFile { file })
    }
}

impl fmt::Debug for SpillFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SpillFile")
    }
}

/// A byte range of a spill file, exposed as a [`RawSource`].
#[derive(Debug)]
pub(crate) struct SpillSlice {
    file: Arc<SpillFile>,
    start: u64,
    len: u64,
}

impl SpillSlice {
    pub(crate) fn raw(file: Arc<SpillFile>, start: u64, len: u64) -> RawBytes {
        if len == 0 {
            return RawBytes::default();
        }
        RawBytes::from_source(Arc::new(SpillSlice { file, start, len }))
    }
}

impl RawSource for SpillSlice {
    fn len(&self) -> u64 {
        self.len
    }

    fn open(&self) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(SliceReader {
            file: Arc::clone(&self.file),
            pos: self.start,
            end: self.start.saturating_add(self.len),
        }))
    }
}

/// Reads a range of a spill file with positional reads (`pread`).
struct SliceReader {
    file: Arc<SpillFile>,
    pos: u64,
    end: u64,
}

impl Read for SliceReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end.saturating_sub(self.pos);
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.file.read_at(&mut buf[..want], self.pos)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "spill file is shorter than the captured length",
            ));
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// Make room for `more` bytes, growing by doubling but never past `limit`
/// (the spill threshold): plain doubling would take a buffer that holds at
/// most 4 MiB to up to 8 MiB of capacity, and copy it there.
fn reserve_within(buf: &mut BytesMut, more: usize, limit: usize) {
    let need = buf.len().saturating_add(more);
    if need <= buf.capacity() {
        return;
    }
    if buf.capacity().saturating_mul(2) <= limit {
        // Doubling stays within the limit: the usual (reallocating) growth.
        buf.reserve(more);
    } else {
        // The last step: `BytesMut::reserve` would double past the limit,
        // so move to an exact allocation instead.
        let mut bigger = BytesMut::with_capacity(limit.max(need));
        bigger.extend_from_slice(buf);
        *buf = bigger;
    }
}

enum State {
    Memory(BytesMut),
    Spilled(Arc<SpillFile>),
}

/// Every byte of one stream, in order, exactly as read.
///
/// Offsets are stream offsets. The capture holds the bytes from `base` (0
/// until [`split_to`](Capture::split_to) hands the head of the stream over)
/// to `len`; in memory, or in a spill file whose offset 0 is `base`. It
/// stays in memory while it is under its own threshold *and* the bytes it
/// holds fit in the process-wide [`MemoryBudget`].
pub(crate) struct Capture {
    threshold: usize,
    dir: Option<PathBuf>,
    base: u64,
    len: u64,
    state: State,
    /// What the in-memory bytes are counted against (exactly the
    /// buffer's length while in memory, nothing once spilled).
    budget: &'static MemoryBudget,
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.budget.give_back(self.in_memory());
    }
}

impl Capture {
    /// An empty capture that spills once it would exceed `threshold` bytes
    /// (or the process-wide budget).
    pub(crate) fn new(threshold: usize, dir: Option<PathBuf>) -> Self {
        Self::with_budget(threshold, dir, capture_memory_budget())
    }

    /// An empty capture drawing on `budget` instead of the process's.
    pub(crate) fn with_budget(
        threshold: usize,
        dir: Option<PathBuf>,
        budget: &'static MemoryBudget,
    ) -> Self {
        Capture {
            threshold,
            dir,
            base: 0,
            len: 0,
            state: State::Memory(BytesMut::new()),
            budget,
        }
    }

    /// Bytes held in memory (and counted against the budget).
    fn in_memory(&self) -> usize {
        match &self.state {
            State::Memory(buf) => buf.len(),
            State::Spilled(_) => 0,
        }
    }

    /// The stream offset just past the last captured byte.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Append bytes. Synchronous, so a cancelled caller never loses them.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let State::Memory(buf) = &mut self.state
            && buf.len().saturating_add(bytes.len()) <= self.threshold
            && self.budget.try_take(bytes.len())
        {
            reserve_within(buf, bytes.len(), self.threshold);
            buf.extend_from_slice(bytes);
            self.len += bytes.len() as u64;
            return Ok(());
        }
        let file = self.spill()?;
        (&file.file).write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Move the capture to its spill file now (if it is not there yet) and
    /// return the file. File offset 0 is stream offset `base`.
    pub(crate) fn spill(&mut self) -> io::Result<Arc<SpillFile>> {
        match &mut self.state {
            State::Spilled(file) => Ok(Arc::clone(file)),
            State::Memory(buf) => {
                let file = Arc::new(SpillFile::create(self.dir.as_deref())?);
                (&file.file).write_all(buf)?;
                let held = buf.len();
                self.state = State::Spilled(Arc::clone(&file));
                self.budget.give_back(held);
                Ok(file)
            }
        }
    }

    /// The captured range `[start, start + len)` backed by the spill file,
    /// spilling first if needed.
    pub(crate) fn file_slice(&mut self, start: u64, len: u64) -> io::Result<RawBytes> {
        let file = self.spill()?;
        Ok(SpillSlice::raw(file, start.saturating_sub(self.base), len))
    }

    /// Hand over the captured stream up to offset `at` (clamped to what is
    /// held) and keep only what follows it, which becomes the new start of
    /// the capture. Slices handed out earlier stay valid.
    pub(crate) fn split_to(&mut self, at: u64) -> io::Result<RawBytes> {
        let at = at.clamp(self.base, self.len);
        let head_len = at - self.base;
        let head = match &mut self.state {
            State::Memory(buf) => {
                let n = usize::try_from(head_len).map_err(io::Error::other)?;
                // The head is handed over: it leaves the budget.
                let head = buf.split_to(n).freeze();
                self.budget.give_back(head.len());
                RawBytes::from_bytes(head)
            }
            State::Spilled(file) => {
                let file = Arc::clone(file);
                let rest_len = self.len - at;
                let mut rest = SliceReader {
                    file: Arc::clone(&file),
                    pos: head_len,
                    end: head_len + rest_len,
                };
                // The rest (usually a few bytes of the next turn) moves to
                // memory, or to a new spill file when it is large.
                let rest_n = usize::try_from(rest_len).unwrap_or(usize::MAX);
                self.state = if rest_len <= self.threshold as u64 && self.budget.try_take(rest_n) {
                    let mut buf = Vec::with_capacity(rest_n);
                    if let Err(err) = rest.read_to_end(&mut buf) {
                        self.budget.give_back(rest_n);
                        return Err(err);
                    }
                    State::Memory(BytesMut::from(&buf[..]))
                } else {
                    let next = Arc::new(SpillFile::create(self.dir.as_deref())?);
                    io::copy(&mut rest, &mut &next.file)?;
                    State::Spilled(next)
                };
                SpillSlice::raw(file, 0, head_len)
            }
        };
        self.base = at;
        Ok(head)
    }

    /// True once the capture lives in a file.
    #[cfg(test)]
    pub(crate) fn is_spilled(&self) -> bool {
        matches!(self.state, State::Spilled(_))
    }

    /// The complete bytes (from `base`).
    pub(crate) fn into_raw(mut self) -> RawBytes {
        // Handed over: the bytes leave the budget (`self` drops empty).
        let state = std::mem::replace(&mut self.state, State::Memory(BytesMut::new()));
        if let State::Memory(buf) = &state {
            self.budget.give_back(buf.len());
        }
        match state {
            State::Memory(buf) => RawBytes::from_bytes(buf.freeze()),
            State::Spilled(file) => SpillSlice::raw(file, 0, self.len - self.base),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_in_memory_up_to_threshold() {
        let mut c = Capture::new(4, None);
        c.append(b"ab").unwrap();
        c.append(b"cd").unwrap();
        assert!(!c.is_spilled());
        let raw = c.into_raw();
        assert_eq!(raw.as_memory(), Some(&b"abcd"[..]));
    }

    #[test]
    fn memory_never_grows_past_the_threshold() {
        let threshold = 1000;
        let mut c = Capture::new(threshold, None);
        for _ in 0..333 {
            c.append(b"abc").unwrap();
            if let State::Memory(buf) = &c.state {
                assert!(buf.capacity() <= threshold, "{}", buf.capacity());
            }
        }
        assert!(!c.is_spilled());
        c.append(b"abcd").unwrap();
        assert!(c.is_spilled());
        assert_eq!(c.into_raw().to_vec().unwrap().len(), 1003);
    }

    #[test]
    fn spills_past_threshold_and_reads_back_exactly() {
        let mut c = Capture::new(4, None);
        let mut want = Vec::new();
        for i in 0..1000u32 {
            let chunk: Vec<u8> = (0..(i % 17)).map(|j| (i * 31 + j) as u8).collect();
            c.append(&chunk).unwrap();
            want.extend_from_slice(&chunk);
        }
        assert!(c.is_spilled());
        let raw = c.into_raw();
        assert!(raw.as_memory().is_none());
        assert_eq!(raw.len(), want.len() as u64);
        assert_eq!(raw.to_vec().unwrap(), want);
        // two independent readers
        let mut a = raw.open().unwrap();
        let mut b = raw.open().unwrap();
        let mut x = [0u8; 10];
        let mut y = [0u8; 10];
        a.read_exact(&mut x).unwrap();
        b.read_exact(&mut y).unwrap();
        assert_eq!(x, y);
    }

    #[test]
    fn split_hands_over_the_head_and_keeps_the_rest() {
        for threshold in [1 << 20, 4] {
            let mut c = Capture::new(threshold, None);
            c.append(b"turn one\n").unwrap();
            c.append(b"turn two").unwrap();
            let early = c.file_slice(0, 4).unwrap();
            let head = c.split_to(9).unwrap();
            assert_eq!(head.to_vec().unwrap(), b"turn one\n");
            assert_eq!(
                early.to_vec().unwrap(),
                b"turn",
                "earlier slices stay valid"
            );
            assert_eq!(c.len(), 17, "offsets stay stream offsets");
            c.append(b"\nmore").unwrap();
            let line = c.file_slice(9, 8).unwrap();
            assert_eq!(line.to_vec().unwrap(), b"turn two");
            let second = c.split_to(c.len()).unwrap();
            assert_eq!(second.to_vec().unwrap(), b"turn two\nmore");
            assert!(c.split_to(c.len()).unwrap().is_empty());
            c.append(b"tail").unwrap();
            assert_eq!(c.into_raw().to_vec().unwrap(), b"tail");
        }
    }

    fn budget(limit: usize) -> &'static MemoryBudget {
        Box::leak(Box::new(MemoryBudget::new(limit)))
    }

    #[test]
    fn captures_sharing_a_spent_budget_spill_below_their_own_threshold() {
        let shared = budget(10);
        let mut a = Capture::with_budget(1 << 20, None, shared);
        let mut b = Capture::with_budget(1 << 20, None, shared);
        a.append(b"0123456").unwrap();
        assert_eq!(shared.held(), 7);
        b.append(b"abc").unwrap();
        assert!(!b.is_spilled(), "7 + 3 fits in 10");
        b.append(b"d").unwrap();
        assert!(b.is_spilled(), "one byte more than the budget");
        assert_eq!(shared.held(), 7, "b's spilled bytes left the budget");
        assert_eq!(b.into_raw().to_vec().unwrap(), b"abcd");
        // Handing the stream over gives its bytes back.
        let raw = a.into_raw();
        assert_eq!(raw.as_memory(), Some(&b"0123456"[..]));
        assert_eq!(shared.held(), 0);
    }

    #[test]
    fn split_and_drop_give_their_bytes_back() {
        let shared = budget(100);
        let mut c = Capture::with_budget(1 << 20, None, shared);
        c.append(b"turn one\nturn two").unwrap();
        assert_eq!(shared.held(), 17);
        let head = c.split_to(9).unwrap();
        assert_eq!(head.to_vec().unwrap(), b"turn one\n");
        assert_eq!(shared.held(), 8, "the head is the host's now");
        drop(c);
        assert_eq!(shared.held(), 0);
    }

    #[test]
    fn the_rest_after_a_spilled_head_comes_back_to_memory_within_the_budget() {
        for (limit, in_memory) in [(100, true), (3, false)] {
            let shared = budget(limit);
            let mut c = Capture::with_budget(8, None, shared);
            c.append(b"0123456789").unwrap();
            assert!(c.is_spilled(), "10 bytes exceed the threshold of 8");
            assert_eq!(shared.held(), 0);
            let head = c.split_to(6).unwrap();
            assert_eq!(head.to_vec().unwrap(), b"012345");
            assert_eq!(!c.is_spilled(), in_memory, "limit {limit}");
            assert_eq!(shared.held(), if in_memory { 4 } else { 0 });
            assert_eq!(c.into_raw().to_vec().unwrap(), b"6789");
            assert_eq!(shared.held(), 0);
        }
    }

    #[test]
    fn slice_of_a_growing_file_is_stable() {
        let mut c = Capture::new(1 << 20, None);
        c.append(b"hello world").unwrap();
        let s = c.file_slice(6, 5).unwrap();
        c.append(b" and more").unwrap();
        assert_eq!(s.to_vec().unwrap(), b"world");
        assert_eq!(c.into_raw().to_vec().unwrap(), b"hello world and more");
    }
}
