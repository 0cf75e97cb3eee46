//! The client side of one app-server run, as a [`Duplex`](crate::pump::Duplex)
//! for the shared pump: the handshake (`initialize` → `initialized` →
//! `thread/start` | `thread/resume` → `turn/start`, each request sent when
//! the previous one is answered), the approvals (routed to the core's
//! decision sink, answered only with an offered decision), the host tool
//! calls (`item/tool/call`, run by the run's toolbox while the pump reads on
//! and answered as they finish, `dynamic_tools.rs`), an error answer to
//! every other server request (never left pending: Codex would wait), and
//! `turn/interrupt` on cancellation.

use std::collections::HashMap;
use std::task::{Context, Poll};

use agent_adaptor_driver::{
    DecisionError, DecisionResponse, DecisionResult, DriverError, EventSink, async_trait,
};
use agent_adaptor_driver_kit::host_calls::HostCalls;
use agent_adaptor_process::StdinController;
use serde_json::{Value, json};

use super::dynamic_tools;
use super::parse::AppServerParser;
use super::protocol::{
    Client, METHOD_NOT_FOUND, ThreadParams, choose_decision, decision_request, error_frame,
    error_message, initialized, is_mcp_tool_approval, offered_decisions, result_frame,
};
use crate::pump::{self, ControlFrame, Controller, LineProtocol, Out, write_frame};

/// JSON-RPC "internal error": the answer when no offered decision is safe.
const NO_SAFE_DECISION: i64 = -32603;

/// What a pending client request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Initialize,
    Thread,
    TurnStart,
    Interrupt,
}

/// What the run asks of the server.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Overrides for `thread/start` / `thread/resume`.
    pub thread: ThreadParams,
    /// The thread to resume, if any.
    pub resume: Option<String>,
    /// The prompt.
    pub prompt: String,
    /// The output schema for `turn/start`.
    pub output_schema: Option<Value>,
    /// The run's host tools as `thread/start.dynamicTools`
    /// (`dynamic_tools.rs`); the handshake opts into the experimental API
    /// when there are any.
    pub dynamic_tools: Vec<Value>,
}

/// A host tool call in flight: the id of its `item/tool/call` request and
/// its `callId`.
pub(crate) type ToolCallKey = (Value, String);

/// The parser plus the client state machine, and the run's host tool calls
/// in flight (they borrow the run's sink for `'s`).
#[derive(Debug)]
pub(crate) struct Session<'s> {
    pub(crate) parser: AppServerParser,
    client: Client,
    pending: HashMap<i64, Pending>,
    plan: Plan,
    /// The host tool calls in flight.
    calls: HostCalls<'s, ToolCallKey>,
}

impl<'s> Session<'s> {
    /// A session and the frames to send first (`initialize`); `calls`
    /// serves the run's host tools.
    pub(crate) fn new(
        parser: AppServerParser,
        plan: Plan,
        calls: HostCalls<'s, ToolCallKey>,
    ) -> (Self, Vec<String>) {
        let mut client = Client::new();
        let (id, frame) = client.initialize(!plan.dynamic_tools.is_empty());
        let session = Session {
            parser,
            client,
            pending: HashMap::from([(id, Pending::Initialize)]),
            plan,
            calls,
        };
        (session, vec![frame])
    }

    /// A session for a turn on a resident app-server that already has
    /// `thread` loaded (it served the thread's previous turn): no handshake,
    /// only `turn/start`. Returns the session, what opening the thread in
    /// the parser means (deliver it first), and the `turn/start` frame,
    /// which the caller writes itself (it must know whether any byte of it
    /// reached the server). `calls` serves *this* run's host tools: the
    /// thread's dynamic tools are declared once, at its start, but every
    /// turn answers their calls with its own toolbox.
    pub(crate) fn resident_turn(
        mut parser: AppServerParser,
        plan: Plan,
        mut client: Client,
        thread: &str,
        calls: HostCalls<'s, ToolCallKey>,
    ) -> (Self, Vec<Out>, String) {
        let opened = parser.thread_opened(thread);
        let (id, frame) = client.turn_start(thread, &plan.prompt, plan.output_schema.as_ref());
        let session = Session {
            parser,
            client,
            pending: HashMap::from([(id, Pending::TurnStart)]),
            plan,
            calls,
        };
        (session, opened, frame)
    }

    /// The client (its request ids go on in the next turn of a resident
    /// process).
    pub(crate) fn into_client(self) -> Client {
        self.client
    }

    async fn send(
        &mut self,
        stdin: &mut Option<StdinController>,
        what: Pending,
        (id, frame): (i64, String),
    ) {
        self.pending.insert(id, what);
        write_frame(stdin, &frame).await;
    }

    async fn deliver(
        outs: Vec<Out>,
        sink: &dyn EventSink,
        stdin: &mut Option<StdinController>,
    ) -> Result<(), DriverError> {
        for out in outs {
            pump::deliver(out, sink, &mut None, stdin).await?;
        }
        Ok(())
    }

    async fn response(
        &mut self,
        id: &Value,
        result: Result<Value, Value>,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        let Some(what) = id.as_i64().and_then(|i| self.pending.remove(&i)) else {
            return Ok(());
        };
        let resume = self.plan.resume.clone();
        let outs = match (what, result) {
            (Pending::Interrupt, _) => Vec::new(),
            (Pending::Initialize, Ok(_)) => {
                write_frame(stdin, &initialized()).await;
                // A resumed thread keeps the dynamic tools it started with
                // (`dynamic_tools.rs`): only a start declares them.
                let request = match &resume {
                    Some(thread) => self.client.thread_resume(thread, &self.plan.thread),
                    None => self
                        .client
                        .thread_start(&self.plan.thread, &self.plan.dynamic_tools),
                };
                self.send(stdin, Pending::Thread, request).await;
                Vec::new()
            }
            (Pending::Thread, Ok(result)) => {
                let thread = result
                    .get("thread")
                    .and_then(|t| t.get("id"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                match &resume {
                    _ if thread.is_empty() => self
                        .parser
                        .request_failed(thread_method(&resume), "the result names no thread"),
                    Some(wanted) if *wanted != thread => self
                        .parser
                        .resume_rejected(&format!("asked for thread {wanted}, got {thread}")),
                    _ => {
                        let outs = self.parser.thread_opened(&thread);
                        let request = self.client.turn_start(
                            &thread,
                            &self.plan.prompt,
                            self.plan.output_schema.as_ref(),
                        );
                        self.send(stdin, Pending::TurnStart, request).await;
                        outs
                    }
                }
            }
            (Pending::TurnStart, Ok(result)) => {
                if let Some(turn) = result
                    .get("turn")
                    .and_then(|t| t.get("id"))
                    .and_then(Value::as_str)
                {
                    self.parser.turn_accepted(turn);
                }
                Vec::new()
            }
            (Pending::Thread, Err(e)) if resume.is_some() => {
                self.parser.resume_rejected(&error_message(&e))
            }
            (what, Err(e)) => {
                let method = match what {
                    Pending::Initialize => "initialize",
                    Pending::Thread => thread_method(&resume),
                    _ => "turn/start",
                };
                self.parser.request_failed(method, &error_message(&e))
            }
        };
        Self::deliver(outs, sink, stdin).await
    }

    async fn server_request(
        &mut self,
        id: Value,
        method: String,
        params: Value,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        if method == dynamic_tools::TOOL_CALL {
            return self.tool_call(id, &params, stdin).await;
        }
        // After the terminal nobody is asked: the turn is over.
        let request =
            decision_request(&method, &params).filter(|_| !LineProtocol::terminated(&self.parser));
        let Some(request) = request else {
            let message = format!("{method} is not supported by agent-adaptor");
            write_frame(stdin, &error_frame(&id, METHOD_NOT_FOUND, &message)).await;
            return Ok(());
        };
        let answer = match sink.decisions() {
            Some(decisions) => decisions
                .request_decision(request)
                .await
                .map_err(|e| match e {
                    DecisionError::Cancelled => DriverError::Cancelled,
                    other => DriverError::Decision(other),
                })?,
            // Nobody can answer: decline, as a client without a handler would.
            None => DecisionResponse {
                request_id: String::new(),
                result: DecisionResult::Rejected,
                choice: String::new(),
                answer: Default::default(),
                text: "no host decision channel".into(),
            },
        };
        let frame = match choose_decision(&offered_decisions(&params), answer.result) {
            Some(decision) => {
                self.parser.approval_answered(&id, answer.result, &decision);
                if is_mcp_tool_approval(&method, &params) {
                    result_frame(&id, json!({ "action": decision, "content": null }))
                } else {
                    result_frame(&id, json!({ "decision": decision }))
                }
            }
            None => error_frame(
                &id,
                NO_SAFE_DECISION,
                "agent-adaptor: no offered decision matches the host's answer",
            ),
        };
        write_frame(stdin, &frame).await;
        Ok(())
    }

    /// `item/tool/call`: start the host tool call (answered when it
    /// finishes, [`Controller::finish_work`]); a request that names no call
    /// is answered with an error at once.
    async fn tool_call(
        &mut self,
        id: Value,
        params: &Value,
        stdin: &mut Option<StdinController>,
    ) -> Result<(), DriverError> {
        match dynamic_tools::call_of(params) {
            Some(call) => self.calls.start((id, call.call_id.clone()), call),
            None => {
                let message = format!("{} without a callId and a tool", dynamic_tools::TOOL_CALL);
                write_frame(stdin, &error_frame(&id, INVALID_PARAMS, &message)).await;
            }
        }
        Ok(())
    }
}

/// JSON-RPC "invalid params".
const INVALID_PARAMS: i64 = -32602;

fn thread_method(resume: &Option<String>) -> &'static str {
    if resume.is_some() {
        "thread/resume"
    } else {
        "thread/start"
    }
}

impl LineProtocol for Session<'_> {
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        self.parser.line_into(raw, out);
    }

    fn terminated(&self) -> bool {
        LineProtocol::terminated(&self.parser)
    }

    fn observe(&mut self, observed: bool) {
        self.parser.observe(observed);
    }
}

#[async_trait]
impl Controller for Session<'_> {
    async fn control(
        &mut self,
        frame: ControlFrame,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        match frame {
            ControlFrame::Response { id, result } => self.response(&id, result, stdin, sink).await,
            ControlFrame::Request { id, method, params } => {
                self.server_request(id, method, params, stdin, sink).await
            }
            ControlFrame::Cancel { .. } => Ok(()),
        }
    }

    fn poll_work(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.calls.poll_ready(cx)
    }

    async fn finish_work(
        &mut self,
        stdin: &mut Option<StdinController>,
        _sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        for ((id, call_id), result) in self.calls.take() {
            let frame = result_frame(&id, dynamic_tools::response(&result));
            // Before the answer: the item completes after it.
            self.parser.host_tool_answered(&call_id, result);
            write_frame(stdin, &frame).await;
        }
        Ok(())
    }

    async fn interrupt(&mut self, stdin: &mut Option<StdinController>) {
        let ids = (
            self.parser.thread_id().map(str::to_owned),
            self.parser.turn_id().map(str::to_owned),
        );
        if let (Some(thread), Some(turn)) = ids {
            let request = self.client.turn_interrupt(&thread, &turn);
            self.send(stdin, Pending::Interrupt, request).await;
        }
    }
}
