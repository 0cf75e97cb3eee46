//! The fake agent's side of the stdio connection: reads the client's
//! frames (logging each one), writes the agent's, and waits for the answer
//! to an agent→client request while queueing whatever else arrives.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::path::Path;

use agent_client_protocol::v1::schema::{
    Error, RequestId, SessionId, SessionNotification, SessionUpdate,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::frames::{self, Incoming};

/// The connection: the client's frames in, the agent's frames out.
pub struct Conn<R, W> {
    input: R,
    output: W,
    log: Option<File>,
    next_id: i64,
    queued: VecDeque<Incoming>,
}

impl<R: BufRead, W: Write> Conn<R, W> {
    /// A connection over `input`/`output`, appending every received frame
    /// to `log` (one JSON line each) when given.
    pub fn new(input: R, output: W, log: Option<&Path>) -> io::Result<Self> {
        let log = match log {
            Some(path) => Some(OpenOptions::new().create(true).append(true).open(path)?),
            None => None,
        };
        Ok(Self {
            input,
            output,
            log,
            next_id: 0,
            queued: VecDeque::new(),
        })
    }

    /// The next frame from the client; `None` at end of input. Lines that
    /// are not JSON-RPC 2.0 frames are logged, reported on stderr and
    /// skipped.
    pub fn recv(&mut self) -> io::Result<Option<Incoming>> {
        if let Some(frame) = self.queued.pop_front() {
            return Ok(Some(frame));
        }
        self.read_frame()
    }

    fn read_frame(&mut self) -> io::Result<Option<Incoming>> {
        loop {
            let mut line = String::new();
            if self.input.read_line(&mut line)? == 0 {
                return Ok(None);
            }
            let text = line.trim_end_matches(['\r', '\n']);
            if text.trim().is_empty() {
                continue;
            }
            self.log_line(text)?;
            match frames::parse(text) {
                Ok(frame) => return Ok(Some(frame)),
                Err(why) => eprintln!("fake-acp-agent: ignored a frame ({why}): {text}"),
            }
        }
    }

    fn log_line(&mut self, text: &str) -> io::Result<()> {
        let Some(log) = self.log.as_mut() else {
            return Ok(());
        };
        let entry = match serde_json::from_str::<Value>(text) {
            Ok(value) => value,
            Err(_) => serde_json::json!({ "unparsed": text }),
        };
        writeln!(log, "{entry}")?;
        log.flush()
    }

    /// Writes one line as it is (the malformed scenario's garbage too).
    pub fn send_raw(&mut self, line: &str) -> io::Result<()> {
        writeln!(self.output, "{line}")?;
        self.output.flush()
    }

    /// Answers the client's request `id`.
    pub fn respond<T: Serialize>(
        &mut self,
        id: RequestId,
        result: Result<T, Error>,
    ) -> io::Result<()> {
        self.send_raw(&frames::response(id, result))
    }

    /// Sends one `session/update` notification.
    pub fn update(&mut self, session: &SessionId, update: SessionUpdate) -> io::Result<()> {
        let params = SessionNotification::new(session.clone(), update);
        self.send_raw(&frames::notification("session/update", params))
    }

    /// Sends a request to the client and waits for its answer, queueing
    /// the frames that arrive meanwhile for [`recv`](Self::recv). End of
    /// input before the answer is an `UnexpectedEof` error.
    pub fn call<T: DeserializeOwned>(
        &mut self,
        method: &str,
        params: impl Serialize,
    ) -> io::Result<Result<T, Error>> {
        let id = self.next_id;
        self.next_id += 1;
        self.send_raw(&frames::request(id, method, params))?;
        loop {
            match self.read_frame()? {
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the client closed stdin before answering {method}"),
                    ));
                }
                Some(Incoming::Response { id: got, result }) if got == RequestId::Number(id) => {
                    return Ok(result.and_then(|value| {
                        serde_json::from_value(value).map_err(|e| {
                            Error::new(-32602, format!("fake-acp-agent: bad {method} result: {e}"))
                        })
                    }));
                }
                Some(other) => self.queued.push_back(other),
            }
        }
    }

    /// Reads until a `session/cancel` for `session` arrives, queueing
    /// every other frame for [`recv`](Self::recv). End of input first is an
    /// `UnexpectedEof` error.
    pub fn wait_for_cancel(&mut self, session: &SessionId) -> io::Result<()> {
        loop {
            match self.read_frame()? {
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the client closed stdin before session/cancel",
                    ));
                }
                Some(Incoming::Notification { method, params })
                    if method == "session/cancel"
                        && params.get("sessionId").and_then(Value::as_str) == Some(&*session.0) =>
                {
                    return Ok(());
                }
                Some(other) => self.queued.push_back(other),
            }
        }
    }
}
