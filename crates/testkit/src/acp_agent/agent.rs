//! The fake agent's request loop: `initialize`, `session/new`,
//! `session/load`, `session/prompt` (played by [`Turn`]), everything else
//! refused with "method not found".

use std::io::{self, BufRead, Write};
use std::process::{Child, Command, Stdio};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, ContentBlock, ContentChunk, Error, Implementation, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, RequestId, SessionId, SessionNotification, SessionUpdate, StopReason,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::conn::Conn;
use super::frames::Incoming;
use super::scenario::{Options, Scenario};
use super::sessions::{self, Sessions};
use super::turn::{End, Turn};
use super::{BAD_PROTOCOL_VERSION, MALFORMED_TEXT, NOT_JSON_LINE};

/// How the agent stopped serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The client closed stdin (the scenario does not outlive it).
    Eof,
    /// A scenario asked to exit with this status.
    Status(u8),
}

/// The agent: its scenario, its sessions and the connection.
pub struct Agent<R, W> {
    conn: Conn<R, W>,
    scenario: Scenario,
    sessions: Sessions,
    /// `sleep 600` of `hang-on-cancel-child`, left running on purpose.
    _child: Option<Child>,
}

impl<R: BufRead, W: Write> Agent<R, W> {
    /// An agent playing `options.scenario` over `input`/`output`; starts
    /// the child of `hang-on-cancel-child` at once.
    pub fn new(options: &Options, input: R, output: W) -> io::Result<Self> {
        let child = match options.scenario {
            Scenario::HangOnCancelChild => Some(
                Command::new("sleep")
                    .arg("600")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?,
            ),
            _ => None,
        };
        Ok(Agent {
            conn: Conn::new(input, output, options.log.as_deref())?,
            scenario: options.scenario.clone(),
            sessions: Sessions::open(options.state.clone())?,
            _child: child,
        })
    }

    /// Serves frames until end of input or a scenario's exit.
    pub fn serve(&mut self) -> io::Result<Exit> {
        while let Some(frame) = self.conn.recv()? {
            // Notifications (`session/cancel` too) and stray responses are
            // only logged: every scenario ignores them.
            if let Incoming::Request { id, method, params } = frame
                && let Some(exit) = self.request(id, &method, params)?
            {
                return Ok(exit);
            }
        }
        Ok(Exit::Eof)
    }

    fn request(&mut self, id: RequestId, method: &str, params: Value) -> io::Result<Option<Exit>> {
        match method {
            "initialize" => {
                let version = if self.scenario == Scenario::BadVersion {
                    serde_json::from_value(json!(BAD_PROTOCOL_VERSION)).map_err(io::Error::other)?
                } else {
                    ProtocolVersion::V1
                };
                let answer = InitializeResponse::new(version)
                    .agent_capabilities(AgentCapabilities::new().load_session(true))
                    .agent_info(Implementation::new(
                        "fake-acp-agent",
                        env!("CARGO_PKG_VERSION"),
                    ));
                self.conn.respond(id, Ok(answer))?;
            }
            "session/new" => self.new_session(id, params)?,
            "session/load" => self.load_session(id, params)?,
            "session/prompt" => return self.prompt(id, params),
            _ => self
                .conn
                .respond::<Value>(id, Err(Error::method_not_found()))?,
        }
        Ok(None)
    }

    fn new_session(&mut self, id: RequestId, params: Value) -> io::Result<()> {
        let ask: NewSessionRequest = match self.params(&id, params)? {
            Some(ask) => ask,
            None => return Ok(()),
        };
        let session = self.sessions.create(ask.cwd)?;
        self.conn
            .respond(id, Ok(NewSessionResponse::new(session.clone())))?;
        if self.scenario == Scenario::Malformed {
            self.conn.send_raw(NOT_JSON_LINE)?;
            let update = SessionNotification::new(
                session,
                SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(
                    MALFORMED_TEXT,
                ))),
            );
            let frame = json!({"method": "session/update", "params": update});
            self.conn.send_raw(&frame.to_string())?;
        }
        Ok(())
    }

    fn load_session(&mut self, id: RequestId, params: Value) -> io::Result<()> {
        let ask: LoadSessionRequest = match self.params(&id, params)? {
            Some(ask) => ask,
            None => return Ok(()),
        };
        let Some(session) = self.sessions.get(&ask.session_id.0).cloned() else {
            let e = Error::session_not_found(ask.session_id);
            return self.conn.respond::<Value>(id, Err(e));
        };
        for turn in &session.turns {
            for (text, user) in [(&turn.user, true), (&turn.agent, false)] {
                let chunk = ContentChunk::new(ContentBlock::from(text.as_str()));
                let update = if user {
                    SessionUpdate::UserMessageChunk(chunk)
                } else {
                    SessionUpdate::AgentMessageChunk(chunk)
                };
                self.conn.update(&ask.session_id, update)?;
            }
        }
        self.conn.respond(id, Ok(LoadSessionResponse::new()))
    }

    fn prompt(&mut self, id: RequestId, params: Value) -> io::Result<Option<Exit>> {
        let ask: PromptRequest = match self.params(&id, params)? {
            Some(ask) => ask,
            None => return Ok(None),
        };
        if self.scenario.is_silent() {
            return Ok(None);
        }
        let Some(cwd) = self.sessions.get(&ask.session_id.0).map(|s| s.cwd.clone()) else {
            let e = Error::session_not_found(ask.session_id);
            self.conn.respond::<Value>(id, Err(e))?;
            return Ok(None);
        };
        let user = prompt_text(&ask.prompt);
        let session: SessionId = ask.session_id;
        let mut turn = Turn::new(&mut self.conn, session.clone(), &cwd, user.clone());
        let end = turn.play(&self.scenario)?;
        let agent = std::mem::take(&mut turn.said);
        match end {
            End::Stop(reason, meta) => {
                if reason == StopReason::EndTurn {
                    self.sessions
                        .record(&session.0, sessions::Turn { user, agent })?;
                }
                self.conn
                    .respond(id, Ok(PromptResponse::new(reason).meta(meta)))?;
                Ok(None)
            }
            End::Fail(e) => {
                self.conn.respond::<Value>(id, Err(e))?;
                Ok(None)
            }
            End::Exit(status) => Ok(Some(Exit::Status(status))),
        }
    }

    /// The request's params as `T`, or `None` after answering "invalid
    /// params".
    fn params<T: DeserializeOwned>(
        &mut self,
        id: &RequestId,
        params: Value,
    ) -> io::Result<Option<T>> {
        match serde_json::from_value(params) {
            Ok(ask) => Ok(Some(ask)),
            Err(e) => {
                let e = Error::invalid_params().data(Value::from(e.to_string()));
                self.conn.respond::<Value>(id.clone(), Err(e))?;
                Ok(None)
            }
        }
    }
}

/// The text blocks of a prompt, joined.
fn prompt_text(prompt: &[ContentBlock]) -> String {
    prompt
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}

/// Runs the agent on stdin/stdout until it is done; silent scenarios then
/// wait for termination.
pub fn run(options: &Options) -> io::Result<Exit> {
    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    let mut agent = Agent::new(options, stdin, stdout)?;
    let exit = agent.serve()?;
    if exit == Exit::Eof && options.scenario.is_silent() {
        loop {
            std::thread::park();
        }
    }
    Ok(exit)
}
