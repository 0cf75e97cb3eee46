//! An incremental server-sent-events decoder.
//!
//! Bytes go in as they arrive; complete frames come out. A line that is not
//! an SSE field (`data`, `event`, `id`, `retry`, or a `:` comment) is handed
//! out as [`SseItem::Stray`] instead of being dropped, because some vendors
//! (Gemini) put a bare JSON error object into an event stream.

/// One decoded item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event.
    Frame(SseFrame),
    /// A line that is not an SSE field, verbatim (without its line ending).
    Stray(String),
}

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseFrame {
    /// The `event:` name, when there was one.
    pub event: Option<String>,
    /// The `data:` lines joined by `\n`.
    pub data: String,
}

/// The decoder state.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    fields: Fields,
    /// The previous chunk ended in `\r`: a `\n` at the start of the next one
    /// belongs to that line ending.
    after_cr: bool,
}

/// The event being assembled.
#[derive(Debug, Default)]
struct Fields {
    event: Option<String>,
    data: Option<String>,
}

impl SseDecoder {
    /// A fresh decoder.
    pub fn new() -> Self {
        SseDecoder::default()
    }

    /// Feeds `bytes`; complete items are appended to `out`. Lines are
    /// decoded in place (no copy per line); only a line split across two
    /// pushes is buffered.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<SseItem>) {
        if bytes.is_empty() {
            return;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        if !self.buffer.is_empty() {
            // Complete the buffered partial line first.
            let Some(end) = bytes.iter().position(|b| *b == b'\n' || *b == b'\r') else {
                self.buffer.extend_from_slice(bytes);
                return;
            };
            self.buffer.extend_from_slice(&bytes[..end]);
            let line = std::mem::take(&mut self.buffer);
            self.fields.line(&line, out);
            self.buffer = line;
            self.buffer.clear();
            bytes = self.skip_ending(&bytes[end..]);
        }
        loop {
            match bytes.iter().position(|b| *b == b'\n' || *b == b'\r') {
                Some(end) => {
                    self.fields.line(&bytes[..end], out);
                    bytes = self.skip_ending(&bytes[end..]);
                }
                None => {
                    self.buffer.extend_from_slice(bytes);
                    return;
                }
            }
        }
    }

    /// `rest` starts with `\r` or `\n`: the bytes after that line ending.
    fn skip_ending<'a>(&mut self, rest: &'a [u8]) -> &'a [u8] {
        match rest {
            [b'\r', b'\n', tail @ ..] => tail,
            [b'\r'] => {
                self.after_cr = true;
                &[]
            }
            [_, tail @ ..] => tail,
            [] => rest,
        }
    }

    /// The end of the body: a last line without its ending is processed,
    /// and an event not yet dispatched by a blank line is dispatched.
    pub fn finish(&mut self, out: &mut Vec<SseItem>) {
        if !self.buffer.is_empty() {
            let line = std::mem::take(&mut self.buffer);
            self.fields.line(&line, out);
        }
        self.fields.dispatch(out);
    }
}

impl Fields {
    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        let event = self.event.take();
        if let Some(data) = self.data.take() {
            out.push(SseItem::Frame(SseFrame { event, data }));
        }
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseItem>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let line = match std::str::from_utf8(line) {
            Ok(line) => std::borrow::Cow::Borrowed(line),
            Err(_) => String::from_utf8_lossy(line),
        };
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.event = Some(value.to_owned()),
            "id" | "retry" => {}
            _ => out.push(SseItem::Stray(line.into_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Vec<SseItem> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk, &mut out);
        }
        decoder.finish(&mut out);
        out
    }

    fn frame(event: Option<&str>, data: &str) -> SseItem {
        SseItem::Frame(SseFrame {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        })
    }

    #[test]
    fn frames_split_anywhere() {
        let wire = b"event: a\ndata: {\"x\":1}\n\n: keep-alive\n\ndata: one\ndata: two\n\n";
        let whole = decode(&[wire]);
        assert_eq!(
            whole,
            vec![frame(Some("a"), "{\"x\":1}"), frame(None, "one\ntwo")]
        );
        for cut in 0..wire.len() {
            assert_eq!(decode(&[&wire[..cut], &wire[cut..]]), whole, "cut at {cut}");
        }
    }

    #[test]
    fn crlf_frames_split_anywhere_even_in_three_pieces() {
        let wire = b"event: a\r\ndata: x\r\n\r\ndata: y\rdata: z\r\r\ndata: w\n\n";
        let whole = decode(&[wire]);
        assert_eq!(
            whole,
            vec![frame(Some("a"), "x"), frame(None, "y\nz"), frame(None, "w")]
        );
        for a in 0..wire.len() {
            for b in a..wire.len() {
                assert_eq!(
                    decode(&[&wire[..a], &wire[a..b], &wire[b..]]),
                    whole,
                    "cuts {a} {b}"
                );
            }
        }
    }

    #[test]
    fn crlf_and_cr_line_endings() {
        assert_eq!(
            decode(&[b"data: a\r", b"\n\r\ndata: b\r\r"]),
            vec![frame(None, "a"), frame(None, "b")]
        );
    }

    #[test]
    fn stray_lines_are_reported_and_unterminated_event_dispatched() {
        assert_eq!(
            decode(&[b"{\"error\":{}}\ndata: last"]),
            vec![SseItem::Stray("{\"error\":{}}".into()), frame(None, "last")]
        );
    }

    #[test]
    fn utf8_split_across_chunks() {
        let wire = "data: héllo\n\n".as_bytes();
        assert_eq!(
            decode(&[&wire[..8], &wire[8..]]),
            vec![frame(None, "héllo")]
        );
    }
}
