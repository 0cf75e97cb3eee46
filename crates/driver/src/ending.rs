//! How a provider process ended, in words a person reads: the exit status
//! ([`describe_exit`]) and the end of its stderr ([`stderr_tail`]), the two
//! facts every failure message of a CLI run is made of.

use std::io::Read;

use crate::redact::redact_text;
use crate::response::RawBytes;

/// At most this many bytes of stderr go into a failure.
pub const STDERR_TAIL_BYTES: usize = 2048;
/// At most this many lines of stderr go into a failure.
pub const STDERR_TAIL_LINES: usize = 20;

/// The exit status in words: `"exited with code 1"`, `"killed by SIGKILL"`,
/// or `"no exit status"` (never `Some(0)` / `None`). A signal wins over a
/// code (a process killed by a signal has no exit code).
///
/// ```
/// use agent_adaptor_driver::describe_exit;
///
/// assert_eq!(describe_exit(Some(1), None), "exited with code 1");
/// assert_eq!(describe_exit(None, Some("SIGKILL")), "killed by SIGKILL");
/// assert_eq!(describe_exit(None, None), "no exit status");
/// ```
pub fn describe_exit(code: Option<i32>, signal: Option<&str>) -> String {
    match (signal, code) {
        (Some(signal), _) => format!("killed by {signal}"),
        (None, Some(code)) => format!("exited with code {code}"),
        (None, None) => "no exit status".to_owned(),
    }
}

/// The last lines of `stderr`, for a failure message: at most
/// [`STDERR_TAIL_LINES`] non-blank lines and [`STDERR_TAIL_BYTES`] bytes
/// (lossy UTF-8, trimmed), with credentials masked by [`redact_text`].
/// `None` when stderr is empty, blank or unreadable.
///
/// Only the end is read into memory, however long the stream is.
pub fn stderr_tail(stderr: &RawBytes) -> Option<String> {
    let max = STDERR_TAIL_BYTES;
    let tail = match stderr.as_memory() {
        Some(bytes) => bytes[bytes.len().saturating_sub(max)..].to_vec(),
        None => read_tail(stderr, max)?,
    };
    let text = String::from_utf8_lossy(&tail);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let kept = &lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..];
    let text = redact_text(kept.join("\n").trim());
    (!text.is_empty()).then_some(text)
}

/// The last `max` bytes of a stream that is not in memory.
fn read_tail(raw: &RawBytes, max: usize) -> Option<Vec<u8>> {
    let mut reader = raw.open().ok()?;
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = reader.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 2 * max {
            tail.drain(..tail.len() - max);
        }
    }
    tail.drain(..tail.len().saturating_sub(max));
    Some(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_spelled_out() {
        assert_eq!(describe_exit(Some(0), None), "exited with code 0");
        assert_eq!(describe_exit(Some(-1), None), "exited with code -1");
        assert_eq!(describe_exit(Some(2), Some("SIGTERM")), "killed by SIGTERM");
        assert_eq!(describe_exit(None, None), "no exit status");
    }

    #[test]
    fn tail_keeps_the_last_lines_bounded_and_redacted() {
        let mut text = String::new();
        for i in 0..100 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str("\n  \nError: Invalid API key sk-ant-api03-secret\n");
        let tail = stderr_tail(&RawBytes::from(text)).unwrap_or_default();
        let lines: Vec<&str> = tail.lines().collect();
        assert_eq!(lines.len(), STDERR_TAIL_LINES);
        assert_eq!(lines[0], "line 81");
        assert_eq!(lines[STDERR_TAIL_LINES - 1], "Error: Invalid API key ***");
        let long = "x".repeat(10 * STDERR_TAIL_BYTES);
        let tail = stderr_tail(&RawBytes::from(long)).unwrap_or_default();
        assert!(tail.len() <= STDERR_TAIL_BYTES);
        assert_eq!(stderr_tail(&RawBytes::default()), None);
        assert_eq!(stderr_tail(&RawBytes::from(" \n\n")), None);
    }
}
