//! One `session/prompt` turn of each scenario: the `session/update`s it
//! streams, the requests it makes of the client, and how it ends.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, CreateTerminalRequest, CreateTerminalResponse, CurrentModeUpdate,
    Error, Meta, PermissionOption, PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SessionId,
    SessionUpdate, StopReason, TerminalOutputRequest, TerminalOutputResponse, ToolCall,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
    WaitForTerminalExitRequest, WriteTextFileRequest,
};
use serde_json::{Value, json};

use super::conn::Conn;
use super::keywords::Keywords;
use super::scenario::Scenario;
use super::{
    APPROVED, DENIED, ERROR_CODE, ERROR_MESSAGE, EXIT_STATUS, PERMISSION_CALL_ID, PLAN,
    TEXT_CHUNKS, THOUGHT, USAGE_SIZE, USAGE_USED,
};

/// How a turn ended.
pub enum End {
    /// Answer `session/prompt` with this stop reason (and `_meta`).
    Stop(StopReason, Option<Meta>),
    /// Answer `session/prompt` with this JSON-RPC error.
    Fail(Error),
    /// Exit the process with this status, leaving the prompt unanswered.
    Exit(u8),
}

/// A turn in progress: the connection, the session and what the agent
/// has said so far.
pub struct Turn<'a, R, W> {
    conn: &'a mut Conn<R, W>,
    session: SessionId,
    cwd: PathBuf,
    prompt: String,
    /// The agent's text so far, all deltas joined.
    pub said: String,
}

impl<'a, R: BufRead, W: Write> Turn<'a, R, W> {
    /// A turn of `session` (working in `cwd`) answering `prompt`.
    pub fn new(conn: &'a mut Conn<R, W>, session: SessionId, cwd: &Path, prompt: String) -> Self {
        Turn {
            conn,
            session,
            cwd: cwd.to_path_buf(),
            prompt,
            said: String::new(),
        }
    }

    /// Plays `scenario`'s turn.
    pub fn play(&mut self, scenario: &Scenario) -> io::Result<End> {
        match scenario {
            Scenario::Text | Scenario::Malformed | Scenario::BadVersion => self.text(),
            Scenario::Permission => self.permission(),
            Scenario::FsRead(path) => self.fs_read(path),
            Scenario::FsWrite(path) => self.fs_write(path),
            Scenario::Terminal(command) => self.terminal(command),
            Scenario::Error => Ok(End::Fail(Error::new(ERROR_CODE, ERROR_MESSAGE))),
            Scenario::Exit => {
                self.say(TEXT_CHUNKS[0])?;
                Ok(End::Exit(EXIT_STATUS))
            }
            // Never asked: the agent does not answer prompts in these.
            Scenario::Silent | Scenario::HangOnCancelChild => {
                Ok(End::Fail(Error::internal_error()))
            }
        }
    }

    fn update(&mut self, update: SessionUpdate) -> io::Result<()> {
        self.conn.update(&self.session, update)
    }

    fn say(&mut self, text: &str) -> io::Result<()> {
        self.said.push_str(text);
        self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::from(text),
        )))
    }

    fn end_turn(&self) -> io::Result<End> {
        Ok(End::Stop(StopReason::EndTurn, None))
    }

    fn text(&mut self) -> io::Result<End> {
        let keywords = match Keywords::parse(&self.prompt) {
            Ok(keywords) => keywords,
            Err(why) => return Ok(End::Fail(Error::invalid_params().data(Value::from(why)))),
        };
        if let Some(mode) = keywords.mode {
            self.update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                mode,
            )))?;
        }
        self.update(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
            ContentBlock::from(THOUGHT),
        )))?;
        if keywords.wait_for_cancel {
            self.say(TEXT_CHUNKS[0])?;
            self.conn.wait_for_cancel(&self.session)?;
            return Ok(End::Stop(StopReason::Cancelled, None));
        }
        for chunk in TEXT_CHUNKS {
            self.say(chunk)?;
        }
        self.update(SessionUpdate::UsageUpdate(UsageUpdate::new(
            USAGE_USED, USAGE_SIZE,
        )))?;
        let entries = PLAN
            .iter()
            .map(|(content, done)| {
                let status = if *done {
                    PlanEntryStatus::Completed
                } else {
                    PlanEntryStatus::InProgress
                };
                PlanEntry::new(*content, PlanEntryPriority::Medium, status)
            })
            .collect();
        self.update(SessionUpdate::Plan(Plan::new(entries)))?;
        // Vendor usage in `_meta`, shaped like Gemini's.
        let meta = json!({"quota": {"token_count": {"input_tokens": 200, "output_tokens": 20}}});
        let Value::Object(meta) = meta else {
            unreachable!("a JSON object literal")
        };
        let stop = keywords.stop.unwrap_or(StopReason::EndTurn);
        Ok(End::Stop(stop, Some(meta)))
    }

    fn permission(&mut self) -> io::Result<End> {
        let input = json!({"command": "echo fake"});
        self.update(SessionUpdate::ToolCall(
            ToolCall::new(PERMISSION_CALL_ID, "Run echo fake")
                .kind(ToolKind::Execute)
                .status(ToolCallStatus::Pending)
                .raw_input(input),
        ))?;
        let options = [
            ("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
            (
                "allow_always",
                "Always allow",
                PermissionOptionKind::AllowAlways,
            ),
            ("reject_once", "Reject", PermissionOptionKind::RejectOnce),
            (
                "reject_always",
                "Always reject",
                PermissionOptionKind::RejectAlways,
            ),
        ];
        let ask = RequestPermissionRequest::new(
            self.session.clone(),
            ToolCallUpdate::new(
                PERMISSION_CALL_ID,
                ToolCallUpdateFields::new()
                    .kind(ToolKind::Execute)
                    .status(ToolCallStatus::Pending)
                    .title("Run echo fake".to_owned()),
            ),
            options
                .iter()
                .map(|(id, name, kind)| PermissionOption::new(*id, *name, *kind))
                .collect(),
        );
        let answer: RequestPermissionResponse =
            match self.conn.call("session/request_permission", ask)? {
                Ok(answer) => answer,
                Err(e) => return Ok(End::Fail(relayed("session/request_permission", &e))),
            };
        let chosen = match answer.outcome {
            RequestPermissionOutcome::Cancelled => {
                return Ok(End::Stop(StopReason::Cancelled, None));
            }
            RequestPermissionOutcome::Selected(selected) => selected.option_id,
            _ => return Ok(End::Fail(Error::invalid_params().data("unknown outcome"))),
        };
        let Some((_, _, kind)) = options.iter().find(|(id, ..)| *id == &*chosen.0) else {
            let why = format!("optionId {chosen} was not offered");
            return Ok(End::Fail(Error::invalid_params().data(why)));
        };
        let allowed = matches!(
            kind,
            PermissionOptionKind::AllowOnce | PermissionOptionKind::AllowAlways
        );
        let (status, text) = if allowed {
            (ToolCallStatus::Completed, APPROVED)
        } else {
            (ToolCallStatus::Failed, DENIED)
        };
        self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            PERMISSION_CALL_ID,
            ToolCallUpdateFields::new().status(status),
        )))?;
        self.say(text)?;
        self.end_turn()
    }

    /// `path` as the agent names it to the client: relative paths are
    /// joined to the session's cwd (ACP paths are absolute), untouched
    /// otherwise (`..` stays, for confinement tests).
    fn absolute(&self, path: &str) -> PathBuf {
        self.cwd.join(path)
    }

    fn fs_read(&mut self, path: &str) -> io::Result<End> {
        let ask = ReadTextFileRequest::new(self.session.clone(), self.absolute(path));
        let text = match self
            .conn
            .call::<ReadTextFileResponse>("fs/read_text_file", ask)?
        {
            Ok(read) => read.content,
            Err(e) => describe(&e),
        };
        self.say(&text)?;
        self.end_turn()
    }

    fn fs_write(&mut self, path: &str) -> io::Result<End> {
        let ask = WriteTextFileRequest::new(
            self.session.clone(),
            self.absolute(path),
            self.prompt.clone(),
        );
        let text = match self.conn.call::<Value>("fs/write_text_file", ask)? {
            Ok(_) => super::WRITTEN.to_owned(),
            Err(e) => describe(&e),
        };
        self.say(&text)?;
        self.end_turn()
    }

    fn terminal(&mut self, command: &str) -> io::Result<End> {
        let text = match self.run_terminal(command)? {
            Ok(output) => output,
            Err(e) => describe(&e),
        };
        self.say(&text)?;
        self.end_turn()
    }

    /// create → wait_for_exit → output → release; the first error wins
    /// (the terminal is still released once created).
    fn run_terminal(&mut self, command: &str) -> io::Result<Result<String, Error>> {
        let mut words = command.split_whitespace().map(str::to_owned);
        let program = words.next().unwrap_or_default();
        let create =
            CreateTerminalRequest::new(self.session.clone(), program).args(words.collect());
        let id = match self
            .conn
            .call::<CreateTerminalResponse>("terminal/create", create)?
        {
            Ok(created) => created.terminal_id,
            Err(e) => return Ok(Err(e)),
        };
        let session = self.session.clone();
        let waited = self.conn.call::<Value>(
            "terminal/wait_for_exit",
            WaitForTerminalExitRequest::new(session.clone(), id.clone()),
        )?;
        let output = match waited {
            Ok(_) => self
                .conn
                .call::<TerminalOutputResponse>(
                    "terminal/output",
                    TerminalOutputRequest::new(session.clone(), id.clone()),
                )?
                .map(|o| o.output),
            Err(e) => Err(e),
        };
        let released = self
            .conn
            .call::<Value>("terminal/release", ReleaseTerminalRequest::new(session, id))?;
        Ok(output.and_then(|output| released.map(|_| output)))
    }
}

/// A client's JSON-RPC error as the agent reports it in text:
/// `error CODE: MESSAGE`.
pub fn describe(e: &Error) -> String {
    format!("error {}: {}", i32::from(e.code), e.message)
}

fn relayed(method: &str, e: &Error) -> Error {
    Error::internal_error().data(format!("{method} failed: {}", describe(e)))
}
