//! Splitting stdout into [`Line`]s: no length cap, bounded memory.

use std::collections::VecDeque;
use std::io;

use agent_adaptor_driver::RawBytes;
use bytes::{Bytes, BytesMut};

use crate::capture::Capture;

/// One stdout line, without its trailing `\n`.
///
/// Only `\n` ends a line; a `\r` before it is **kept** (the helper never
/// rewrites bytes; JSON parsers treat `\r` as whitespace). Bytes are exact:
/// invalid UTF-8 is not replaced.
///
/// There is no length cap. A line up to
/// [`Command::max_line_in_memory`](crate::Command::max_line_in_memory) bytes
/// is held in memory ([`as_memory`](Line::as_memory) returns it); a longer
/// one is a range of the stdout spill file, read with
/// [`RawBytes::open`] so a parser can stream it.
#[derive(Debug, Clone)]
pub struct Line {
    bytes: RawBytes,
    terminated: bool,
    /// Stream offset just past the line (past its `\n` when terminated).
    end: u64,
}

impl Line {
    /// The line's bytes (without the `\n`).
    pub fn bytes(&self) -> &RawBytes {
        &self.bytes
    }

    /// The line's bytes, by value.
    pub fn into_bytes(self) -> RawBytes {
        self.bytes
    }

    /// Length in bytes (without the `\n`).
    pub fn len(&self) -> u64 {
        self.bytes.len()
    }

    /// True for an empty line.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes when the line is held in memory; `None` when it is
    /// file-backed (longer than `max_line_in_memory`).
    pub fn as_memory(&self) -> Option<&[u8]> {
        self.bytes.as_memory()
    }

    /// False only for a final line that ended at end-of-file without `\n`.
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// The stream offset just past this line (and its `\n`).
    pub(crate) fn end(&self) -> u64 {
        self.end
    }
}

/// Turns the stdout byte stream into lines, in step with its capture.
pub(crate) struct LineSplitter {
    max_mem: usize,
    /// Stream offset where the current (unfinished) line begins.
    start: u64,
    /// The unfinished line, while it fits in memory.
    partial: BytesMut,
    /// The unfinished line outgrew memory: it lives only in the capture file.
    in_file: bool,
    /// Complete lines not yet handed out.
    ready: VecDeque<Line>,
    /// False once nobody will pull lines again (finish/shutdown).
    enabled: bool,
}

impl LineSplitter {
    pub(crate) fn new(max_mem: usize) -> Self {
        LineSplitter {
            max_mem,
            start: 0,
            partial: BytesMut::new(),
            in_file: false,
            ready: VecDeque::new(),
            enabled: true,
        }
    }

    /// The next complete line, if one is ready.
    pub(crate) fn pop(&mut self) -> Option<Line> {
        self.ready.pop_front()
    }

    /// Stop splitting and drop queued lines (their bytes stay in the capture).
    pub(crate) fn disable(&mut self) {
        self.enabled = false;
        self.ready.clear();
        self.partial = BytesMut::new();
    }

    /// Split `chunk`, which was just appended to `cap` at stream `offset`.
    /// A line that lies wholly inside `chunk` shares its buffer (no copy).
    pub(crate) fn feed(&mut self, chunk: &Bytes, offset: u64, cap: &mut Capture) -> io::Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let mut pos = 0;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            let end = offset + nl as u64;
            let line = self.take_line(chunk, pos..nl, end, cap)?;
            self.ready.push_back(Line {
                bytes: line,
                terminated: true,
                end: end + 1,
            });
            self.start = end + 1;
            pos = nl + 1;
        }
        let rest = &chunk[pos..];
        if !rest.is_empty() && !self.in_file {
            let len = offset + chunk.len() as u64 - self.start;
            if len > self.max_mem as u64 {
                self.in_file = true;
                self.partial = BytesMut::new();
                cap.spill()?;
            } else {
                self.partial.extend_from_slice(rest);
            }
        }
        Ok(())
    }

    /// End of stream at `end`: hand out the final unterminated line, if any.
    pub(crate) fn finish(&mut self, end: u64, cap: &mut Capture) -> io::Result<()> {
        if !self.enabled || end <= self.start {
            return Ok(());
        }
        let line = self.take_line(&Bytes::new(), 0..0, end, cap)?;
        self.ready.push_back(Line {
            bytes: line,
            terminated: false,
            end,
        });
        self.start = end;
        Ok(())
    }

    /// Complete the current line with `chunk[tail]`, the line ending at
    /// stream offset `end`.
    fn take_line(
        &mut self,
        chunk: &Bytes,
        tail: std::ops::Range<usize>,
        end: u64,
        cap: &mut Capture,
    ) -> io::Result<RawBytes> {
        let len = end - self.start;
        if self.in_file || len > self.max_mem as u64 {
            self.in_file = false;
            self.partial = BytesMut::new();
            return cap.file_slice(self.start, len);
        }
        if self.partial.is_empty() {
            return Ok(RawBytes::from_bytes(chunk.slice(tail)));
        }
        self.partial.extend_from_slice(&chunk[tail]);
        Ok(RawBytes::from_bytes(self.partial.split().freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]], max_mem: usize) -> Vec<Line> {
        let mut cap = Capture::new(1 << 20, None);
        let mut s = LineSplitter::new(max_mem);
        let mut out = Vec::new();
        for c in chunks {
            let off = cap.len();
            cap.append(c).unwrap();
            s.feed(&Bytes::copy_from_slice(c), off, &mut cap).unwrap();
            while let Some(l) = s.pop() {
                out.push(l);
            }
        }
        s.finish(cap.len(), &mut cap).unwrap();
        while let Some(l) = s.pop() {
            out.push(l);
        }
        out
    }

    fn texts(lines: &[Line]) -> Vec<Vec<u8>> {
        lines.iter().map(|l| l.bytes().to_vec().unwrap()).collect()
    }

    #[test]
    fn splits_across_chunks_and_keeps_cr() {
        let lines = split(&[b"ab", b"c\r\nd\n\n", b"tail"], 100);
        assert_eq!(
            texts(&lines),
            vec![
                b"abc\r".to_vec(),
                b"d".to_vec(),
                b"".to_vec(),
                b"tail".to_vec()
            ]
        );
        assert!(lines[0].is_terminated());
        assert!(!lines[3].is_terminated());
    }

    #[test]
    fn long_lines_are_file_backed_and_exact() {
        let long: Vec<u8> = (0..50u8)
            .map(|b| if b == b'\n' { 0xff } else { b })
            .collect();
        let mut input = long.clone();
        input.push(b'\n');
        input.extend_from_slice(b"short\n");
        input.extend_from_slice(&long);
        let chunks: Vec<&[u8]> = input.chunks(7).collect();
        let lines = split(&chunks, 10);
        assert_eq!(lines.len(), 3);
        assert!(lines[0].as_memory().is_none());
        assert_eq!(lines[0].bytes().to_vec().unwrap(), long);
        assert_eq!(lines[1].as_memory(), Some(&b"short"[..]));
        assert!(lines[2].as_memory().is_none());
        assert!(!lines[2].is_terminated());
        assert_eq!(lines[2].bytes().to_vec().unwrap(), long);
    }

    #[test]
    fn exact_limit_stays_in_memory() {
        let lines = split(&[b"0123456789\n0123456789a\n"], 10);
        assert!(lines[0].as_memory().is_some());
        assert!(lines[1].as_memory().is_none());
        assert_eq!(lines[1].len(), 11);
    }

    #[test]
    fn no_trailing_line_after_final_newline() {
        assert_eq!(split(&[b"a\n"], 10).len(), 1);
        assert_eq!(split(&[], 10).len(), 0);
    }

    proptest::proptest! {
        /// Any bytes, any chunking, any memory limit, any spill threshold:
        /// the lines are exactly the `\n`-split of the input, each in memory
        /// iff it fits, and the capture is the input.
        #[test]
        fn split_matches_reference(
            data in proptest::collection::vec(
                proptest::prop_oneof![3 => proptest::num::u8::ANY, 1 => proptest::strategy::Just(b'\n')],
                0..600,
            ),
            cuts in proptest::collection::vec(1usize..80, 1..20),
            max_mem in 0usize..40,
            threshold in 0usize..200,
        ) {
            let mut cap = Capture::new(threshold, None);
            let mut s = LineSplitter::new(max_mem);
            let mut got = Vec::new();
            let (mut pos, mut i) = (0, 0);
            while pos < data.len() {
                let end = (pos + cuts[i % cuts.len()]).min(data.len());
                let chunk = &data[pos..end];
                let off = cap.len();
                cap.append(chunk).unwrap();
                s.feed(&Bytes::copy_from_slice(chunk), off, &mut cap).unwrap();
                while let Some(l) = s.pop() {
                    got.push(l);
                }
                pos = end;
                i += 1;
            }
            s.finish(cap.len(), &mut cap).unwrap();
            while let Some(l) = s.pop() {
                got.push(l);
            }
            let mut want: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
            if want.last().is_some_and(|l| l.is_empty()) {
                want.pop();
            }
            proptest::prop_assert_eq!(got.len(), want.len());
            for (l, w) in got.iter().zip(&want) {
                proptest::prop_assert_eq!(&l.bytes().to_vec().unwrap()[..], *w);
                proptest::prop_assert_eq!(l.as_memory().is_some(), w.len() <= max_mem);
            }
            proptest::prop_assert_eq!(cap.into_raw().to_vec().unwrap(), data);
        }
    }
}
