//! The reference driver: a complete, contract-abiding driver that passes
//! every clause — and, with a [`Fault`], a deliberately broken one, so the
//! suite can prove that each of its clauses fails when it should.
//!
//! It simulates a provider that writes a small JSON-lines protocol on stdout,
//! and forms every layer of its response from that one "parse": raw chunks,
//! live payloads (when streaming), transcript items, output, usage, the
//! official terminal payload and a resumable checkpoint.
//!
//! Its simulated provider answers `Reply with exactly: X` with `X` (what a
//! [`LiveRun`](crate::LiveRun) asks), anything else with the configured
//! reply, and stalls on [`STALL_PROMPT`] until the run is cancelled. It
//! declares persistent processes and keeps the sessions it served
//! "resident" until [`Driver::close_processes`].

mod codec;
mod fault;
mod observe;
mod probe;
mod stall;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_adaptor_driver::{
    Checkpoint, ConfigError, ConfigSchema, DecisionKind, DecisionRequest, Descriptor,
    DetectedModel, Driver, DriverError, EnvironmentReport, EventSink, FailureCode,
    FingerprintError, HitlRequested, ModelInfo, Profile, ProfileReport, ProviderCoords,
    QuotaReport, RawStreams, Request, Response, Role, RunContext, RunEvent, RunFailure,
    SessionCodec, SessionState, SkillRef, SkillsReport, StandardSessionCodec, StreamCapability,
    StreamKind, StreamPayload, StructuredOutputCapability, TerminalPayload, TranscriptItem,
    TranscriptKind, Usage, async_trait, canonical_session_config_fingerprint,
};
use serde_json::json;

use codec::RefCodec;
pub use fault::Fault;
pub use stall::STALL_PROMPT;

/// The prompt prefix the simulated provider answers literally.
const EXACT_REPLY: &str = "Reply with exactly:";

/// The reference driver's configuration (everything provider-visible).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReferenceConfig {
    /// The model name it reports.
    pub model: String,
    /// The answer it gives.
    pub reply: String,
}

impl Default for ReferenceConfig {
    fn default() -> Self {
        ReferenceConfig {
            model: "ref-1".into(),
            reply: "Hello from the reference driver".into(),
        }
    }
}

static INSTANCES: AtomicU64 = AtomicU64::new(0);

/// A driver that passes every clause (or, with a fault, breaks one).
#[derive(Debug)]
pub struct ReferenceDriver {
    config: ReferenceConfig,
    fault: Option<Fault>,
    instance: u64,
    calls: AtomicU64,
    /// The sessions kept "resident" until `close_processes`.
    resident: Mutex<BTreeSet<String>>,
    closes: AtomicU64,
    quota_calls: AtomicU64,
}

impl Default for ReferenceDriver {
    fn default() -> Self {
        Self::new(ReferenceConfig::default())
    }
}

impl ReferenceDriver {
    /// A correct driver with `config`.
    pub fn new(config: ReferenceConfig) -> Self {
        ReferenceDriver {
            config,
            fault: None,
            instance: INSTANCES.fetch_add(1, Ordering::Relaxed),
            calls: AtomicU64::new(0),
            resident: Mutex::default(),
            closes: AtomicU64::new(0),
            quota_calls: AtomicU64::new(0),
        }
    }

    /// The same driver with one deliberate fault.
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    fn is(&self, fault: Fault) -> bool {
        self.fault == Some(fault)
    }

    fn tick(&self) -> u64 {
        self.calls.fetch_add(1, Ordering::Relaxed)
    }

    fn codec_fault(&self) -> Option<Fault> {
        self.fault.filter(|f| {
            matches!(
                f,
                Fault::CodecEmptyName
                    | Fault::CodecNonZeroForNone
                    | Fault::CodecDropsData
                    | Fault::CodecLossy
                    | Fault::CodecDriftingGuard
                    | Fault::CodecGuardIgnoresKeys
                    | Fault::CodecPanicsOnEmpty
                    | Fault::CheckpointNotRoundTripping
                    | Fault::CodecRenamesKey
                    | Fault::CodecGuardsEverything
            )
        })
    }
}

#[async_trait]
impl Driver for ReferenceDriver {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new("reference", "Reference driver");
        if self.is(Fault::EmptyDriverType) {
            d.driver_type.clear();
        }
        if self.is(Fault::DriftingDescriptor) {
            d.display_name = format!("Reference driver #{}", self.tick());
        }
        d.models = vec![ModelInfo {
            id: if self.is(Fault::EmptyModelId) {
                String::new()
            } else {
                self.config.model.clone()
            },
            label: "Reference".into(),
        }];
        d.sessions.supports_resume = !self.is(Fault::UndeclaredResume);
        d.process.persistent = true;
        // Skills and profiles are "materialized" in the simulation only.
        d.skills = !self.is(Fault::UndeclaredSkills);
        d.profiles.dedicated = true;
        d.profiles.clone = true;
        d.structured_output = StructuredOutputCapability {
            json_schema_prompt_validate: !self.is(Fault::InconsistentStructuredOutput),
            works_with_run: true,
            works_with_streaming: true,
            ..Default::default()
        };
        // It accepts instructions (a toy model has no system prompt to put
        // them in) and declares one MCP transport.
        d.instructions = true;
        d.mcp.stdio = true;
        if self.is(Fault::IncoherentEquipment) {
            d.mcp.headers = true;
        }
        d
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        if self.is(Fault::PanicInValidate) {
            panic!("validate_config exploded");
        }
        let invalid = self.config.model.is_empty() && !self.is(Fault::AcceptsInvalidConfig);
        if self.is(Fault::RejectConfig) || invalid {
            return Err(ConfigError {
                driver: "reference".into(),
                reason: "model must not be empty".into(),
            });
        }
        Ok(())
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        let mut cap = StreamCapability::FULL;
        if self.is(Fault::ReasoningWithoutCapability) {
            cap.reasoning = false;
        }
        if self.is(Fault::DriftingCapability) && self.tick() % 2 == 1 {
            cap.hitl = false;
        }
        if self.is(Fault::UndeclaredObservation) {
            cap.observation = agent_adaptor_driver::ObservationSupport::NONE;
        }
        Some(cap)
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        if self.is(Fault::ResumeWithoutCodec) {
            return None;
        }
        Some(Arc::new(RefCodec {
            inner: StandardSessionCodec::new("reference"),
            fault: self.codec_fault(),
            calls: AtomicU64::new(0),
        }))
    }

    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        Some(canonical_session_config_fingerprint(
            "reference/configured-driver/v1;session-codec/v1",
            &self.config,
        ))
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        if self.is(Fault::RejectsDeclaredInstructions) && req.instructions.is_some() {
            return Err(DriverError::Protocol(
                "instructions are declared but refused".into(),
            ));
        }
        if req.prompt == STALL_PROMPT {
            stall::stall(&ctx, sink, self.fault).await?;
        }
        let exact = req.prompt.strip_prefix(EXACT_REPLY).map(str::trim);
        let reply = match exact {
            Some(x) if !self.is(Fault::IgnoresThePrompt) => x.to_owned(),
            _ => self.config.reply.clone(),
        };
        let session = format!("ref-{}-{}", self.instance, req.run_id);
        let usage = Usage {
            input_tokens: Some(12),
            output_tokens: Some(5),
            ..Default::default()
        };
        let words: Vec<String> = reply.split_inclusive(' ').map(str::to_owned).collect();
        // The provider's stdout, as the reference protocol writes it.
        let terminal = json!({"type": "result", "session_id": session, "result": reply, "usage": {"input_tokens": 12, "output_tokens": 5}}).to_string();
        let lines = [
            json!({"type": "init", "session_id": session}).to_string(),
            json!({"type": "thinking", "text": "Considering the question."}).to_string(),
            json!({"type": "tool", "id": "t1", "name": "echo", "args": {"text": "hi"}}).to_string(),
            json!({"type": "tool_result", "id": "t1", "output": "hi"}).to_string(),
            json!({"type": "text", "text": reply}).to_string(),
            terminal.clone(),
        ];
        let mut stdout = String::new();
        for l in &lines {
            stdout.push_str(l);
            stdout.push('\n');
        }
        for l in &lines {
            sink.emit(RunEvent::stdout(format!("{l}\n"))).await?;
        }

        let mut items = vec![
            {
                let mut i = TranscriptItem::new(TranscriptKind::Init, "");
                i.session_id = Some(session.clone());
                i
            },
            TranscriptItem::thinking("Considering the question."),
            TranscriptItem::tool_call("t1", "echo", Some(json!({"text": "hi"}))),
            TranscriptItem::tool_result("t1", "hi", false),
            TranscriptItem::assistant(reply.clone()),
            {
                let mut i = TranscriptItem::new(TranscriptKind::Result, "");
                i.session_id = Some(if self.is(Fault::ForeignTerminal) {
                    "another-session".to_owned()
                } else {
                    session.clone()
                });
                i
            },
        ];
        match self.fault {
            Some(Fault::TranscriptWithoutText) => items.push(TranscriptItem::assistant("")),
            Some(Fault::TranscriptToolCallWithoutName) => {
                let mut i = TranscriptItem::tool_call("t2", "", None);
                i.tool_name = None;
                items.push(i);
            }
            Some(Fault::TranscriptResultWithoutId) => {
                let mut i = TranscriptItem::tool_result("t3", "x", false);
                i.tool_use_id = None;
                items.push(i);
            }
            Some(Fault::TranscriptDeltaOnToolCall) => {
                let mut i = TranscriptItem::tool_call("t4", "echo", None);
                i.delta = true;
                items.push(i);
            }
            _ => {}
        }

        if req.streaming {
            let mut p = self.payloads(&session, &words, &usage);
            self.break_payloads(&mut p);
            for payload in p {
                sink.emit_stream(payload).await?;
            }
        }
        for item in &items {
            sink.emit(RunEvent::Item(item.clone().into())).await?;
        }
        if self.is(Fault::InvalidItemEvent) {
            sink.emit(RunEvent::Item(
                TranscriptItem::new(TranscriptKind::ToolCall, "").into(),
            ))
            .await?;
        }
        if self.is(Fault::BrokenMirror) {
            items.pop();
        }

        let mut state = SessionState {
            resume_id: session.clone(),
            display_id: session.clone(),
            data: BTreeMap::from([("cwd".to_owned(), "/work".to_owned())]),
        };
        if self.is(Fault::CheckpointNotRoundTripping) {
            state
                .data
                .insert("unkept".into(), "lost by the codec".into());
        }
        let mut resp = Response {
            output: reply.clone(),
            raw: RawStreams {
                stdout: stdout.clone().into(),
                stderr: Default::default(),
                terminal: TerminalPayload::new("result", &terminal).ok(),
            },
            transcript: {
                let mut transcript = req.new_transcript();
                transcript.extend(items);
                transcript
            },
            usage: Some(usage),
            checkpoint: Some(Checkpoint::valid(state)),
            exit_code: Some(0),
            provider: "reference".into(),
            model: self.config.model.clone(),
            ..Default::default()
        };
        match self.fault {
            Some(Fault::DirtyCheckpoint) => resp.exit_code = Some(1),
            Some(Fault::DecisionFailureWithoutDetail) => {
                resp.checkpoint = None;
                resp.failure = Some(RunFailure::new(FailureCode::DecisionRejected, "denied"));
            }
            Some(Fault::OutputIsStdout) => resp.output = stdout,
            Some(Fault::TerminalNotOnStdout) => {
                resp.raw.terminal =
                    TerminalPayload::new("result", r#"{"type":"result","synthesized":true}"#).ok();
            }
            Some(Fault::FailsTheExactReply) if exact.is_some() => {
                resp.checkpoint = None;
                resp.exit_code = Some(1);
                resp.failure = Some(RunFailure::new(FailureCode::AgentError, "cannot comply"));
            }
            Some(Fault::NoCheckpoint) => resp.checkpoint = None,
            Some(Fault::FailsASuccessCase) => {
                resp.checkpoint = None;
                resp.failure = Some(RunFailure::new(FailureCode::AgentError, "failed anyway"));
            }
            _ => {}
        }
        if resp.checkpoint.as_ref().is_some_and(|c| c.valid) {
            self.resident
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(session);
        }
        Ok(resp)
    }

    async fn close_processes(&self) {
        let before = self.closes.fetch_add(1, Ordering::Relaxed);
        if self.is(Fault::CloseNotIdempotent) && before > 0 {
            panic!("close_processes called on closed processes");
        }
        self.resident
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    fn check_environment(&self) -> Option<EnvironmentReport> {
        Some(probe::environment(self.fault))
    }

    fn detect_model(&self) -> Option<DetectedModel> {
        Some(probe::detect_model(&self.config, self.fault))
    }

    fn quota(&self) -> Option<QuotaReport> {
        Some(probe::quota(self.fault, &self.quota_calls))
    }

    fn config_schema(&self) -> Option<ConfigSchema> {
        Some(probe::config_schema(self.fault))
    }

    fn profile_report(&self, profile: &Profile) -> Option<ProfileReport> {
        Some(probe::profile_report(profile, self.fault))
    }

    fn skills(&self, selection: &[SkillRef]) -> Option<SkillsReport> {
        Some(probe::skills(selection, self.fault))
    }
}

impl ReferenceDriver {
    /// The correct payload sequence of a streaming run.
    fn payloads(&self, session: &str, words: &[String], usage: &Usage) -> Vec<StreamPayload> {
        let source = ProviderCoords {
            thread_id: Some(session.to_owned()),
            ..Default::default()
        };
        let mut p = vec![
            StreamPayload::run_started().with_source(source),
            StreamPayload::step_started("turn"),
            StreamPayload::reasoning_start("r1"),
            StreamPayload::reasoning_content("r1", "Considering the question."),
            StreamPayload::reasoning_end("r1"),
            StreamPayload::tool_call_start("t1", "echo", None),
            StreamPayload::tool_call_args("t1", "{\"text\":"),
            StreamPayload::tool_call_args("t1", "\"hi\"}"),
            StreamPayload::tool_call_end("t1", None),
            StreamPayload::tool_call_result("t1", Some(json!("hi"))),
        ];
        p.extend(observe::payloads(self.fault));
        p.push(StreamPayload::text_start("m1"));
        p.extend(
            words
                .iter()
                .map(|w| StreamPayload::text_content("m1", w.as_str())),
        );
        p.push(StreamPayload::text_end("m1"));
        p.push(StreamPayload::step_finished("turn"));
        p.push(StreamPayload::run_finished(Some(usage.clone())));
        p
    }

    /// Apply an EVT fault to a correct sequence (inserting before the
    /// terminal frame unless the fault is about the terminal itself).
    fn break_payloads(&self, p: &mut Vec<StreamPayload>) {
        let before_end = p.len() - 1;
        let insert = |p: &mut Vec<StreamPayload>, x: StreamPayload| p.insert(before_end, x);
        match self.fault {
            Some(Fault::SecondRunStarted) => insert(p, StreamPayload::run_started()),
            Some(Fault::NoTerminal) => {
                p.pop();
            }
            Some(Fault::ContentOutsideMessage) => {
                insert(p, StreamPayload::text_content("m-none", "stray"))
            }
            Some(Fault::EmptyTextDelta) => {
                let i = p.len() - 3;
                p.insert(i, StreamPayload::text_content("m1", ""));
            }
            Some(Fault::ArgsForUnknownTool) => {
                insert(p, StreamPayload::tool_call_args("t-none", "{}"))
            }
            Some(Fault::ReasoningOutsideLifecycle) => {
                insert(p, StreamPayload::reasoning_content("r-none", "stray"))
            }
            Some(Fault::UnpairedStep) => insert(p, StreamPayload::step_finished("never-started")),
            Some(Fault::HitlWithoutSource) => insert(
                p,
                StreamKind::HitlRequested(Box::new(HitlRequested {
                    request: DecisionRequest::new(DecisionKind::Permission, ""),
                }))
                .into(),
            ),
            Some(Fault::UserRole) => {
                let mut x = StreamPayload::text_start("m-user");
                x.role = Role::User;
                insert(p, x);
            }
            Some(Fault::OpenAtTerminal) => insert(p, StreamPayload::text_start("m-open")),
            Some(Fault::ArgsAfterCompleteArgs) => {
                insert(
                    p,
                    StreamPayload::tool_call_start("t9", "echo", Some(json!({}))),
                );
                let i = p.len() - 1;
                p.insert(i, StreamPayload::tool_call_args("t9", "{}"));
                let i = p.len() - 1;
                p.insert(i, StreamPayload::tool_call_end("t9", None));
            }
            Some(Fault::CanonicalCustomName) => {
                insert(p, StreamPayload::custom("text.content", "x"))
            }
            _ => {}
        }
    }
}
