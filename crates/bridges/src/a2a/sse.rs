//! A small Server-Sent Events decoder (WHATWG rules: `data:` lines joined
//! with newlines, comments ignored, an event ends at a blank line), for the
//! A2A client's streams.

use bytes::{Buf, BytesMut};

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseFrame {
    /// The `event:` field (`"message"` when absent).
    pub(crate) event: String,
    /// The `data:` lines, joined with `\n`.
    pub(crate) data: String,
}

/// Incremental decoder: feed bytes, take complete events.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    buf: BytesMut,
    event: String,
    data: Vec<String>,
    max_event: usize,
}

/// The decoder's input exceeded its limit for one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLarge(pub(crate) usize);

impl SseDecoder {
    /// A decoder refusing events larger than `max_event` bytes.
    pub(crate) fn new(max_event: usize) -> Self {
        SseDecoder {
            buf: BytesMut::new(),
            event: String::new(),
            data: Vec::new(),
            max_event,
        }
    }

    /// Add bytes; returns every event they complete.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseFrame>, TooLarge> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line = self.buf.split_to(pos + 1);
            line.truncate(pos);
            if line.last() == Some(&b'\r') {
                line.truncate(pos - 1);
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            if let Some(frame) = self.line(&line)? {
                out.push(frame);
            }
        }
        if self.buf.len() > self.max_event {
            self.buf.advance(self.buf.len());
            return Err(TooLarge(self.max_event));
        }
        Ok(out)
    }

    /// The event still open when the body ended, if it has data.
    pub(crate) fn finish(&mut self) -> Option<SseFrame> {
        if !self.buf.is_empty() {
            let rest = String::from_utf8_lossy(&self.buf).into_owned();
            self.buf.clear();
            let _ = self.line(&rest);
        }
        self.take()
    }

    fn line(&mut self, line: &str) -> Result<Option<SseFrame>, TooLarge> {
        if line.is_empty() {
            return Ok(self.take());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                let size: usize = self.data.iter().map(String::len).sum::<usize>() + value.len();
                if size > self.max_event {
                    self.data.clear();
                    return Err(TooLarge(self.max_event));
                }
                self.data.push(value.to_owned());
            }
            _ => {}
        }
        Ok(None)
    }

    fn take(&mut self) -> Option<SseFrame> {
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseFrame {
            event: if event.is_empty() {
                "message".into()
            } else {
                event
            },
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_anywhere_and_comments_are_skipped() {
        let mut d = SseDecoder::new(1024);
        let input = b": keep-alive\r\n\r\ndata: {\"a\":\ndata: 1}\n\nevent: error\ndata: x\n\n";
        let mut frames = Vec::new();
        for chunk in input.chunks(3) {
            frames.extend(d.feed(chunk).unwrap());
        }
        assert_eq!(
            frames,
            [
                SseFrame {
                    event: "message".into(),
                    data: "{\"a\":\n1}".into()
                },
                SseFrame {
                    event: "error".into(),
                    data: "x".into()
                }
            ]
        );
        assert_eq!(d.feed(b"data: tail").unwrap(), []);
        assert_eq!(d.finish().map(|f| f.data), Some("tail".into()));
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut d = SseDecoder::new(8);
        assert_eq!(d.feed(b"data: 0123456789\n"), Err(TooLarge(8)));
        let mut d = SseDecoder::new(8);
        assert_eq!(d.feed(&[b'x'; 9]), Err(TooLarge(8)));
    }
}
