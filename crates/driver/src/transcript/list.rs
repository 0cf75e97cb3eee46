//! [`Transcript`]: a run's ordered transcript items, in memory up to a byte
//! budget and in an unlinked spill file beyond it.

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::mem::size_of;
use std::path::Path;
use std::sync::Arc;

use serde::de::{SeqAccess, Visitor};
use serde::ser::{Error as _, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::digest::TranscriptFingerprint;
use super::spill::SpillFile;
use super::{SharedItem, TranscriptItem};

/// The default memory budget of a [`Transcript`]: 2 MiB of items.
///
/// A transcript of a long run (a 1 GiB Claude stream holds ~40k items, a
/// 200k-line Codex run 200k) then costs at most the budget and a 64 KiB
/// write buffer of memory, 4 bytes per spilled item for its record length,
/// and 16 bytes per run of records written; a usual run never reaches it
/// and never touches disk.
pub const DEFAULT_TRANSCRIPT_BUDGET: usize = 2 * 1024 * 1024;

/// How many bytes one read of the spill file fetches at least, so a
/// sequential pass reads many records per system call.
const READ_CHUNK: usize = 64 * 1024;

/// Why a [`Transcript`] could not spill or read back an item.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// Creating, writing or reading the spill file failed.
    #[error("transcript spill file: {context}: {source}")]
    Spill {
        /// What was being done (`"creating the spill file"` …).
        context: &'static str,
        /// The I/O error.
        #[source]
        source: Arc<io::Error>,
    },
    /// A record read back from the spill file is not the item written.
    #[error("transcript item {index} in the spill file is corrupt: {source}")]
    Corrupt {
        /// The item's index in the transcript.
        index: usize,
        /// Why it does not decode.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

impl TranscriptError {
    fn spill(context: &'static str, source: io::Error) -> Self {
        TranscriptError::Spill {
            context,
            source: Arc::new(source),
        }
    }
}

/// How many bytes of records one append to the spill file carries at most
/// (a spill writes several appends; the encoding buffer stays this small).
const WRITE_CHUNK: usize = 64 * 1024;

/// Where the spilled head of a transcript lives: the shared file and this
/// transcript's own records in it.
///
/// Records are appended in runs ("chunks"), each contiguous in the file;
/// other clones of the transcript may append between two runs. So each
/// item costs only its record length (4 bytes), and each run its first
/// index and file offset: an item's offset is its run's plus the lengths
/// of the records before it in the run.
#[derive(Clone)]
struct Spilled {
    file: Arc<SpillFile>,
    /// (index of the first item, file offset of its record) of each run,
    /// in order.
    chunks: Vec<(usize, u64)>,
    /// Length of each record (the item in MessagePack).
    lens: Vec<u32>,
}

impl Spilled {
    /// The file offset of item `index`'s record. `hint` is an (index,
    /// offset) pair a sequential reader computed as the end of the record
    /// it just read; it is used only when it lies inside `index`'s run past
    /// its first item (a run's first item starts at the run's own offset).
    fn start(&self, index: usize, hint: Option<(usize, u64)>) -> Option<u64> {
        if index >= self.lens.len() {
            return None;
        }
        let run = self.chunks.partition_point(|&(first, _)| first <= index) - 1;
        let (first, base) = self.chunks[run];
        let (from, at) = match hint {
            Some((i, at)) if i > first && i <= index => (i, at),
            _ => (first, base),
        };
        let skipped: u64 = self.lens[from..index].iter().map(|&l| u64::from(l)).sum();
        Some(at + skipped)
    }
}

/// A run's transcript: an append-only, ordered list of [`TranscriptItem`]s.
///
/// Items stay in memory until their estimated size passes the budget
/// ([`DEFAULT_TRANSCRIPT_BUDGET`] unless set with
/// [`with_budget`](Self::with_budget)); then the oldest ones are written, as
/// MessagePack records (strings copied, not escaped) in one write per
/// chunk, to an unlinked temporary file and only their offsets are kept.
/// The newest item always stays in memory. Reading back
/// ([`iter`](Self::iter), [`get`](Self::get), [`to_vec`](Self::to_vec))
/// returns every item exactly as pushed.
///
/// A [`TranscriptFingerprint`] of the items (16 bytes in all) is kept so
/// core can check the transcript against the emitted items (RUN-04)
/// without reading the file back.
///
/// Cloning copies the in-memory tail and the offsets and shares the file.
/// The file is append-only, so clones may both push afterwards: each
/// appends its own records and reads back only its own.
///
/// Pushing never fails: when the spill file cannot be created or written,
/// the items stay in memory (nothing is lost, the budget is exceeded), no
/// further spill is tried, and [`spill_error`](Self::spill_error) tells why.
#[derive(Clone)]
pub struct Transcript {
    budget: usize,
    dir: Option<Arc<Path>>,
    /// What core compares with the emitted items (RUN-04).
    fingerprint: TranscriptFingerprint,
    spilled: Option<Spilled>,
    /// The items after the spilled head, in order (shared with the
    /// [`RunEvent::Item`](crate::RunEvent::Item)s that announced them).
    tail: Vec<Arc<TranscriptItem>>,
    /// The estimated size of `tail`.
    tail_bytes: usize,
    spill_error: Option<TranscriptError>,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript::with_budget(DEFAULT_TRANSCRIPT_BUDGET)
    }
}

impl Transcript {
    /// An empty transcript with the default budget.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty transcript that keeps up to `budget` bytes of items (by
    /// estimate) in memory. `0` spills every item but the last.
    pub fn with_budget(budget: usize) -> Self {
        Transcript {
            budget,
            dir: None,
            fingerprint: TranscriptFingerprint::new(),
            spilled: None,
            tail: Vec::new(),
            tail_bytes: 0,
            spill_error: None,
        }
    }

    /// Put the spill file in `dir` instead of the system's temporary
    /// directory (takes effect when the transcript first spills).
    pub fn with_spill_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.dir = Some(Arc::from(dir.as_ref()));
        self
    }

    /// The memory budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.fingerprint.len()
    }

    /// True when there are no items.
    pub fn is_empty(&self) -> bool {
        self.fingerprint.is_empty()
    }

    /// True once some items live in the spill file.
    pub fn is_spilled(&self) -> bool {
        self.spilled.is_some()
    }

    /// Why spilling stopped, when creating or writing the spill file failed
    /// (every item is still held, in memory).
    pub fn spill_error(&self) -> Option<&TranscriptError> {
        self.spill_error.as_ref()
    }

    /// The fingerprint of every item pushed, in order (16 bytes whatever the
    /// length): core compares it with the emitted items' (RUN-04).
    pub fn fingerprint(&self) -> TranscriptFingerprint {
        self.fingerprint
    }

    fn spilled_len(&self) -> usize {
        self.spilled.as_ref().map_or(0, |s| s.lens.len())
    }

    /// Append an item (see the type's docs: never fails, may spill).
    pub fn push(&mut self, item: TranscriptItem) {
        self.push_shared(SharedItem::new(item));
    }

    /// Append an item and return it shared, e.g. for the
    /// [`RunEvent::Item`](crate::RunEvent::Item) that announces it: one
    /// item in memory, not two copies.
    pub fn share(&mut self, item: TranscriptItem) -> SharedItem {
        let item = SharedItem::new(item);
        self.push_shared(item.clone());
        item
    }

    /// Append an item held elsewhere too (see [`share`](Self::share)).
    pub fn push_shared(&mut self, item: SharedItem) {
        self.fingerprint.push_digest(item.digest());
        let item = item.into_arc();
        self.tail_bytes = self.tail_bytes.saturating_add(estimate(&item));
        if self.tail.len() == self.tail.capacity() {
            // Grow by doubling, but never past what the budget can hold
            // (every item counts at least its own size): a tail that
            // stays under 4 MiB should not sit in an 8 MiB vector.
            let most = self.budget / size_of::<TranscriptItem>() + 2;
            let len = self.tail.len();
            let want = (len * 2).clamp(len + 1, most.max(len + 1)).max(4);
            self.tail.reserve_exact(want - len);
        }
        self.tail.push(item);
        if self.tail_bytes > self.budget
            && self.spill_error.is_none()
            && let Err(e) = self.spill_head()
        {
            self.spill_error = Some(e);
        }
    }

    /// Write every in-memory item but the newest to the spill file (one
    /// pass over a budget's worth of items, and nothing left to shift).
    fn spill_head(&mut self) -> Result<(), TranscriptError> {
        let k = self.tail.len().saturating_sub(1);
        if k == 0 {
            return Ok(());
        }
        let left = self.tail.last().map_or(0, |i| estimate(i));
        let file = match &self.spilled {
            Some(s) => Arc::clone(&s.file),
            None => Arc::new(
                SpillFile::create(self.dir.as_deref())
                    .map_err(|e| TranscriptError::spill("creating the spill file", e))?,
            ),
        };
        let spilled = self.spilled.get_or_insert_with(|| Spilled {
            file,
            chunks: Vec::new(),
            lens: Vec::new(),
        });
        let mut buf = Vec::with_capacity(WRITE_CHUNK);
        let mut lens = Vec::new();
        for (i, item) in self.tail[..k].iter().enumerate() {
            let start = buf.len();
            rmp_serde::encode::write_named(&mut buf, item)
                .map_err(|e| TranscriptError::spill("encoding an item", io::Error::other(e)))?;
            let len = u32::try_from(buf.len() - start).map_err(|_| {
                TranscriptError::spill(
                    "encoding an item",
                    io::Error::new(io::ErrorKind::InvalidData, "item larger than 4 GiB"),
                )
            })?;
            lens.push(len);
            if buf.len() >= WRITE_CHUNK || i + 1 == k {
                // One run: its records are contiguous in the file.
                let base = spilled
                    .file
                    .append(&buf)
                    .map_err(|e| TranscriptError::spill("writing the spill file", e))?;
                spilled.chunks.push((spilled.lens.len(), base));
                spilled.lens.append(&mut lens);
                buf.clear();
            }
        }
        self.tail.drain(..k);
        self.tail_bytes = left;
        Ok(())
    }

    /// Every item, borrowed, while nothing has spilled.
    pub fn as_slice(&self) -> Option<&[Arc<TranscriptItem>]> {
        match self.spilled {
            None => Some(&self.tail),
            Some(_) => None,
        }
    }

    /// The last item (always held in memory).
    pub fn last(&self) -> Option<&TranscriptItem> {
        self.tail.last().map(|i| &**i)
    }

    /// The item at `index`: borrowed when in memory, read back when spilled.
    pub fn get(&self, index: usize) -> Result<Option<Cow<'_, TranscriptItem>>, TranscriptError> {
        let head = self.spilled_len();
        if index >= head {
            return Ok(self.tail.get(index - head).map(|i| Cow::Borrowed(&**i)));
        }
        let mut reader = None;
        self.read_spilled(&mut reader, index).map(Some)
    }

    /// Every item in order: borrowed when in memory, read back (in chunks)
    /// when spilled.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            transcript: self,
            next: 0,
            reader: None,
        }
    }

    /// Every item, read into memory.
    pub fn to_vec(&self) -> Result<Vec<TranscriptItem>, TranscriptError> {
        self.iter().map(|r| r.map(Cow::into_owned)).collect()
    }

    fn read_spilled(
        &self,
        reader: &mut Option<Reader>,
        index: usize,
    ) -> Result<Cow<'_, TranscriptItem>, TranscriptError> {
        let Some(s) = &self.spilled else {
            return Err(TranscriptError::spill(
                "reading an item",
                io::Error::new(io::ErrorKind::NotFound, "no spill file"),
            ));
        };
        let hint = reader.as_ref().and_then(|r| r.next);
        let (Some(start), Some(&len)) = (s.start(index, hint), s.lens.get(index)) else {
            return Err(TranscriptError::spill(
                "reading an item",
                io::Error::new(io::ErrorKind::NotFound, "no such spilled item"),
            ));
        };
        let reader = reader.get_or_insert_with(|| Reader {
            file: Arc::clone(&s.file),
            buf: Vec::new(),
            at: 0,
            next: None,
        });
        reader.next = Some((index + 1, start + u64::from(len)));
        let record = reader
            .record(start, len as usize)
            .map_err(|e| TranscriptError::spill("reading an item", e))?;
        rmp_serde::from_slice(record)
            .map(Cow::Owned)
            .map_err(|e| TranscriptError::Corrupt {
                index,
                source: Arc::new(e),
            })
    }
}

/// Buffered positional reads of a spill file.
struct Reader {
    file: Arc<SpillFile>,
    buf: Vec<u8>,
    /// The file offset of `buf[0]`.
    at: u64,
    /// The item after the last one read, and where its record would start
    /// if it is in the same run (see [`Spilled::start`]).
    next: Option<(usize, u64)>,
}

impl Reader {
    fn record(&mut self, start: u64, len: usize) -> io::Result<&[u8]> {
        let end = start.saturating_add(len as u64);
        let held = self.at.saturating_add(self.buf.len() as u64);
        if start < self.at || end > held {
            self.buf.resize(len.max(READ_CHUNK), 0);
            let n = self.file.read_at(start, &mut self.buf)?;
            self.buf.truncate(n);
            self.at = start;
            if n < len {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "spill file is shorter than the record",
                ));
            }
        }
        let from = usize::try_from(start - self.at).map_err(io::Error::other)?;
        Ok(&self.buf[from..from + len])
    }
}

/// The iterator of [`Transcript::iter`].
pub struct Iter<'a> {
    transcript: &'a Transcript,
    next: usize,
    reader: Option<Reader>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Result<Cow<'a, TranscriptItem>, TranscriptError>;

    fn next(&mut self) -> Option<Self::Item> {
        let t = self.transcript;
        let index = self.next;
        if index >= t.len() {
            return None;
        }
        self.next += 1;
        let head = t.spilled_len();
        if index >= head {
            return t.tail.get(index - head).map(|i| Ok(Cow::Borrowed(&**i)));
        }
        Some(t.read_spilled(&mut self.reader, index))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.transcript.len().saturating_sub(self.next);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").field("next", &self.next).finish()
    }
}

/// A rough estimate of the memory an item holds (its struct and heap).
fn estimate(item: &TranscriptItem) -> usize {
    let s = |o: &Option<String>| o.as_ref().map_or(0, String::len);
    let v = |o: &Option<Value>| o.as_ref().map_or(0, value_size);
    size_of::<TranscriptItem>()
        + item.text.len()
        + s(&item.tool_use_id)
        + s(&item.tool_name)
        + s(&item.model)
        + s(&item.session_id)
        + s(&item.subtype)
        + v(&item.input)
        + v(&item.data)
        + item.usage.as_ref().map_or(0, |_| 64)
        + item
            .errors
            .iter()
            .map(|e| e.len() + size_of::<String>())
            .sum::<usize>()
        + item
            .metadata
            .iter()
            .map(|(k, v)| k.len() + v.len() + 2 * size_of::<String>() + 16)
            .sum::<usize>()
}

fn value_size(v: &Value) -> usize {
    size_of::<Value>()
        + match v {
            Value::String(s) => s.len(),
            Value::Array(a) => a.iter().map(value_size).sum(),
            Value::Object(m) => m
                .iter()
                .map(|(k, v)| k.len() + size_of::<String>() + 16 + value_size(v))
                .sum(),
            _ => 0,
        }
}

impl fmt::Debug for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_slice() {
            Some(items) => f.debug_list().entries(items).finish(),
            None => write!(
                f,
                "Transcript({} items, {} spilled)",
                self.len(),
                self.spilled_len()
            ),
        }
    }
}

impl PartialEq for Transcript {
    /// Item by item, like two `Vec`s; a spilled item that cannot be read
    /// back makes the transcripts unequal.
    fn eq(&self, other: &Self) -> bool {
        if self.fingerprint != other.fingerprint {
            return false;
        }
        if let (Some(a), Some(b)) = (self.as_slice(), other.as_slice()) {
            return a == b;
        }
        self.iter()
            .zip(other.iter())
            .all(|(a, b)| matches!((a, b), (Ok(a), Ok(b)) if a == b))
    }
}

impl PartialEq<[TranscriptItem]> for Transcript {
    fn eq(&self, other: &[TranscriptItem]) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other)
                .all(|(a, b)| matches!(a, Ok(a) if *a == *b))
    }
}

impl PartialEq<Vec<TranscriptItem>> for Transcript {
    fn eq(&self, other: &Vec<TranscriptItem>) -> bool {
        *self == other[..]
    }
}

impl PartialEq<Transcript> for Vec<TranscriptItem> {
    fn eq(&self, other: &Transcript) -> bool {
        *other == self[..]
    }
}

impl From<Vec<TranscriptItem>> for Transcript {
    fn from(items: Vec<TranscriptItem>) -> Self {
        items.into_iter().collect()
    }
}

impl FromIterator<TranscriptItem> for Transcript {
    fn from_iter<I: IntoIterator<Item = TranscriptItem>>(iter: I) -> Self {
        let mut t = Transcript::new();
        t.extend(iter);
        t
    }
}

impl Extend<TranscriptItem> for Transcript {
    fn extend<I: IntoIterator<Item = TranscriptItem>>(&mut self, iter: I) {
        for item in iter {
            self.push(item);
        }
    }
}

impl Serialize for Transcript {
    /// A JSON array of the items, streamed (spilled items are read back one
    /// chunk at a time); a read failure is a serialization error.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for item in self.iter() {
            let item = item.map_err(S::Error::custom)?;
            seq.serialize_element(&*item)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Transcript {
    /// An array of items, pushed one by one into a transcript with the
    /// default budget (so a large one spills as it is read).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Items;
        impl<'de> Visitor<'de> for Items {
            type Value = Transcript;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of transcript items")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Transcript, A::Error> {
                let mut t = Transcript::new();
                while let Some(item) = seq.next_element::<TranscriptItem>()? {
                    t.push(item);
                }
                Ok(t)
            }
        }
        deserializer.deserialize_seq(Items)
    }
}

#[cfg(test)]
impl Transcript {
    /// Overwrite the record of spilled item `index` with `bytes` (same length).
    pub(super) fn corrupt_record(&self, index: usize, bytes: &[u8]) -> io::Result<()> {
        let s = self.spilled.as_ref().ok_or(io::ErrorKind::NotFound)?;
        let start = s.start(index, None).ok_or(io::ErrorKind::NotFound)?;
        s.file.overwrite(start, bytes)
    }
}
