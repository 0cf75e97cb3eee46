//! The engine of the `fake-cli` binary, which stands in for a real CLI in tests by
//! replaying a recorded capture (see [`fixtures`](crate::fixtures)).
//!
//! The binary parses its flags ([`Invocation`], [`Options`]; [`USAGE`] lists them),
//! loads the capture, and calls [`replay`] with the real process streams
//! ([`ProcessIo`]). Tests of the engine itself use [`MemoryIo`], which logs every
//! stdout/stderr line, sleep and stdin read in order.
//!
//! * A `.jsonl` capture is printed line by line (optionally after reading stdin to EOF,
//!   like `codex exec` with an open stdin). With [`Options::serve_turns`] it is served
//!   once per turn instead, like a CLI kept running with stream-json input (a resident
//!   process): each `user` frame read from stdin prints the capture again, with
//!   `{{turn}}` replaced by the turn number; `control_request` frames get a success
//!   `control_response`; stdin EOF ends the replay.
//! * A `.transcript` capture is played as the CLI side: the `CLI->SDK` frames are printed
//!   in order, and where the capture has `SDK->CLI` frames the engine first reads that
//!   many lines from stdin, checking each against the recorded frame
//!   ([`StdinCheck`]). At stdin EOF it stops, as the real CLIs do; after the last frame
//!   it waits for stdin EOF (unless [`Options::exit_after_replay`]).
//!
//! ```
//! use agent_adaptor_testkit::fixtures::Capture;
//! use agent_adaptor_testkit::replay::{self, EndReason, MemoryIo, Options};
//!
//! let capture = Capture::Lines(vec!["{\"a\":1}".into(), "{\"b\":2}".into()]);
//! let options = Options { truncate_after: Some(1), exit_code: 9, ..Options::default() };
//! let mut io = MemoryIo::new(Vec::<String>::new());
//! let outcome = replay::replay(&capture, &options, &mut io)?;
//! assert_eq!(outcome.reason, EndReason::Truncated);
//! assert_eq!(outcome.exit_code, 9);
//! assert_eq!(io.stdout_bytes(), b"{\"a\":1}\n");
//! # Ok::<(), std::io::Error>(())
//! ```

mod args;
mod binary;
mod io;
mod options;
mod stamp;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::fixtures::{Capture, Direction, Frame};

pub use args::ArgsRecord;
pub use binary::fake_cli_binary;
pub use io::{IoEvent, MemoryIo, ProcessIo, ReplayIo};
pub use options::{Invocation, OPTS_ENV, Options, StdinCheck, USAGE, USAGE_EXIT_CODE, UsageError};
pub use stamp::NOW_PLACEHOLDER;

/// The exit code when a stdin line does not match the recorded frame.
pub const STDIN_MISMATCH_EXIT_CODE: i32 = 3;

/// Why a replay ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// Every stdout line was written (and, for a transcript, stdin reached EOF unless
    /// [`Options::exit_after_replay`] or [`Options::hang`]).
    Completed,
    /// [`Options::truncate_after`] lines were written and more remained.
    Truncated,
    /// Stdin reached EOF while the transcript still expected host frames.
    StdinClosed,
    /// A stdin line did not match the recorded frame; a diagnostic JSON line was written
    /// on stderr.
    StdinMismatch,
}

/// How a replay ended and what the process should do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Why it ended.
    pub reason: EndReason,
    /// The exit code: [`Options::exit_code`], or [`STDIN_MISMATCH_EXIT_CODE`].
    pub exit_code: i32,
    /// Whether to sleep forever instead of exiting ([`Options::hang`]; never after a
    /// stdin mismatch).
    pub hang: bool,
}

/// Resolves a `--fixture` value: an absolute path as is, otherwise relative to
/// [`fixtures::dir`](crate::fixtures::dir).
pub fn resolve_fixture(fixture: &Path) -> PathBuf {
    if fixture.is_absolute() {
        fixture.to_path_buf()
    } else {
        crate::fixtures::dir().join(fixture)
    }
}

/// Replays `capture` through `io` as configured by `options` (the flags that concern
/// process setup — fixture, record and args files, SIGTERM — are the caller's job).
///
/// Errors are I/O errors of `io` only (e.g. stdout closed by the reader).
pub fn replay<I: ReplayIo + ?Sized>(
    capture: &Capture,
    options: &Options,
    io: &mut I,
) -> std::io::Result<Outcome> {
    for text in &options.stderr {
        io.stderr_line(text)?;
    }
    let mut out = Emitter {
        options,
        written: 0,
        total: if options.serve_turns {
            usize::MAX
        } else {
            capture.stdout_lines().len()
        },
    };
    let reason = match capture {
        Capture::Lines(lines) if options.serve_turns => serve_turns(lines, &mut out, io)?,
        Capture::Lines(lines) => {
            if options.wait_stdin_eof {
                while io.stdin_line()?.is_some() {}
            }
            replay_lines(lines, &mut out, io)?
        }
        Capture::Transcript(frames) => replay_transcript(frames, &mut out, io)?,
    };
    Ok(match reason {
        EndReason::StdinMismatch => Outcome {
            reason,
            exit_code: STDIN_MISMATCH_EXIT_CODE,
            hang: false,
        },
        _ => Outcome {
            reason,
            exit_code: options.exit_code,
            hang: options.hang,
        },
    })
}

fn replay_transcript<I: ReplayIo + ?Sized>(
    frames: &[Frame],
    out: &mut Emitter<'_>,
    io: &mut I,
) -> std::io::Result<EndReason> {
    let options = out.options;
    if out.truncated() {
        return Ok(EndReason::Truncated);
    }
    let mut stdin_count = 0;
    for (index, frame) in frames.iter().enumerate() {
        match frame.dir {
            Direction::SdkToCli => {
                let Some(received) = io.stdin_line()? else {
                    return Ok(EndReason::StdinClosed);
                };
                stdin_count += 1;
                if let Some(diagnostic) =
                    check_stdin(options, &frame.line, &received, stdin_count, index + 1)
                {
                    io.stderr_line(&diagnostic.to_string())?;
                    return Ok(EndReason::StdinMismatch);
                }
            }
            Direction::CliToSdk => {
                out.emit(io, &frame.line)?;
                if out.truncated() {
                    return Ok(EndReason::Truncated);
                }
            }
        }
    }
    // Like the real CLIs in a stdin protocol: stay until the host closes stdin.
    if !options.exit_after_replay && !options.hang {
        while io.stdin_line()?.is_some() {}
    }
    Ok(EndReason::Completed)
}

/// The placeholder a served capture's lines hold for the turn number.
pub const TURN_PLACEHOLDER: &str = "{{turn}}";

/// The placeholder for the session id (see [`with_session`]).
pub const SESSION_PLACEHOLDER: &str = "{{session}}";

/// `capture` with [`SESSION_PLACEHOLDER`] replaced: by the value of a `--resume`
/// argument in `foreign` (a resumed CLI keeps its session id), else by
/// `fake-session-<pid>` (a fresh CLI gets a session of its own).
pub fn with_session(capture: &Capture, foreign: &[String], pid: u32) -> Capture {
    let resumed = foreign
        .iter()
        .position(|a| a == "--resume")
        .and_then(|i| foreign.get(i + 1))
        .cloned();
    let session = resumed.unwrap_or_else(|| format!("fake-session-{pid}"));
    let fill = |line: &String| line.replace(SESSION_PLACEHOLDER, &session);
    match capture {
        Capture::Lines(lines) => Capture::Lines(lines.iter().map(fill).collect()),
        Capture::Transcript(frames) => Capture::Transcript(
            frames
                .iter()
                .map(|f| Frame {
                    dir: f.dir,
                    line: fill(&f.line),
                })
                .collect(),
        ),
    }
}

/// [`Options::serve_turns`]: one turn per `user` frame (or one for plain-text stdin).
fn serve_turns<I: ReplayIo + ?Sized>(
    lines: &[String],
    out: &mut Emitter<'_>,
    io: &mut I,
) -> std::io::Result<EndReason> {
    let mut turn = 0u64;
    let mut plain_prompt = false;
    while let Some(received) = io.stdin_line()? {
        let text = received.trim();
        if text.is_empty() {
            continue;
        }
        let frame: Option<Value> = serde_json::from_str(text).ok();
        let kind = frame
            .as_ref()
            .and_then(|v| v.get("type"))
            .and_then(Value::as_str);
        match kind {
            Some("control_request") => {
                let id = frame
                    .as_ref()
                    .and_then(|v| v.get("request_id"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let reply = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id, "response": {}}});
                out.emit(io, &reply.to_string())?;
                if out.truncated() {
                    return Ok(EndReason::Truncated);
                }
                continue;
            }
            Some("user") => {}
            // Plain text is a one-shot prompt: one turn, however many lines it has.
            None if frame.is_none() && !plain_prompt => plain_prompt = true,
            _ => continue,
        }
        turn += 1;
        let number = turn.to_string();
        for line in lines {
            out.emit(io, &line.replace(TURN_PLACEHOLDER, &number))?;
            if out.truncated() {
                return Ok(EndReason::Truncated);
            }
        }
    }
    Ok(EndReason::Completed)
}

fn replay_lines<I: ReplayIo + ?Sized>(
    lines: &[String],
    out: &mut Emitter<'_>,
    io: &mut I,
) -> std::io::Result<EndReason> {
    if out.truncated() {
        return Ok(EndReason::Truncated);
    }
    for line in lines {
        out.emit(io, line)?;
        if out.truncated() {
            return Ok(EndReason::Truncated);
        }
    }
    Ok(EndReason::Completed)
}

/// Writes stdout lines with the configured delay and stderr noise, and tracks truncation.
struct Emitter<'a> {
    options: &'a Options,
    written: usize,
    total: usize,
}

impl Emitter<'_> {
    fn emit<I: ReplayIo + ?Sized>(&mut self, io: &mut I, line: &str) -> std::io::Result<()> {
        if !self.options.delay.is_zero() {
            io.sleep(self.options.delay);
        }
        // `{{now_ns}}` becomes the write time (stamp.rs); other lines are unchanged.
        io.stdout_line(&stamp::fill(line))?;
        self.written += 1;
        if let Some(every) = self.options.stderr_every
            && self.written.is_multiple_of(every.get())
        {
            io.stderr_line(&format!(
                "fake-cli: stderr noise after stdout line {}",
                self.written
            ))?;
        }
        Ok(())
    }

    /// Whether `--truncate-after` says to stop now (and lines remain to be cut).
    fn truncated(&self) -> bool {
        self.options.truncate_after == Some(self.written) && self.written < self.total
    }
}

/// Compares a received stdin line with the recorded frame; `Some(diagnostic)` on a
/// mismatch.
fn check_stdin(
    options: &Options,
    expected: &str,
    received: &str,
    stdin_line: usize,
    capture_line: usize,
) -> Option<Value> {
    let (expected_view, received_view) = match options.stdin_check {
        StdinCheck::None => return None,
        StdinCheck::Type => {
            let (e, r) = (shape(expected), shape(received));
            if e == r {
                return None;
            }
            (Value::String(e), Value::String(r))
        }
        StdinCheck::ExactJson => {
            let normalize = |text: &str| {
                serde_json::from_str::<Value>(text).ok().map(|mut v| {
                    strip_keys(&mut v, &options.ignore_keys);
                    v
                })
            };
            let (e, r) = (normalize(expected), normalize(received));
            if e.is_some() && e == r {
                return None;
            }
            (e.unwrap_or(Value::Null), r.unwrap_or(Value::Null))
        }
    };
    Some(json!({
        "fake_cli": "stdin_mismatch",
        "check": options.stdin_check.as_str(),
        "stdin_line": stdin_line,
        "capture_line": capture_line,
        "expected": expected_view,
        "received": received_view,
        "received_text": received,
    }))
}

/// The message shape compared by [`StdinCheck::Type`].
fn shape(text: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return "<not JSON>".to_owned();
    };
    let Some(object) = value.as_object() else {
        return format!("<JSON {}>", json_kind(&value));
    };
    let str_at = |outer: &str, inner: &str| {
        object
            .get(outer)
            .and_then(|v| v.get(inner))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned()
    };
    if let Some(kind) = object.get("type").and_then(Value::as_str) {
        return match kind {
            "control_request" => format!("control_request/{}", str_at("request", "subtype")),
            "control_response" => format!("control_response/{}", str_at("response", "subtype")),
            other => other.to_owned(),
        };
    }
    if let Some(method) = object.get("method").and_then(Value::as_str) {
        let kind = if object.contains_key("id") {
            "request"
        } else {
            "notification"
        };
        return format!("jsonrpc {kind} {method}");
    }
    if object.contains_key("id") && object.contains_key("error") {
        return "jsonrpc error".to_owned();
    }
    if object.contains_key("id") && object.contains_key("result") {
        return "jsonrpc response".to_owned();
    }
    "<JSON object without type>".to_owned()
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn strip_keys(value: &mut Value, keys: &[String]) {
    match value {
        Value::Object(map) => {
            map.retain(|k, _| !keys.iter().any(|key| key == k));
            map.values_mut().for_each(|v| strip_keys(v, keys));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| strip_keys(v, keys)),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
