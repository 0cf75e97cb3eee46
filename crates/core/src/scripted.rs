//! A scripted in-process driver: plays a list of steps and returns a fixed
//! response. For tests, examples and offline demos; it speaks the driver SPI
//! exactly like a real driver does, so everything core enforces applies.
//!
//! ```
//! use agent_adaptor_core::{Agent, Runner, scripted::ScriptedDriver};
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let agent = Agent::new(ScriptedDriver::text_reply("Hello, world"));
//! let result = agent.run("hi").await.unwrap();
//! assert_eq!(result.text, "Hello, world");
//! # }
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_driver::{
    ConfigError, DecisionRequest, Descriptor, Driver, DriverError, EventSink, Request, Response,
    RunContext, RunEvent, SessionCodec, StreamCapability, StreamPayload, TerminalPayload,
    TranscriptItem, async_trait,
};

/// One step of a script.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Step {
    /// Emit a live payload.
    Stream(StreamPayload),
    /// Emit an operational event or transcript item.
    Emit(RunEvent),
    /// Wait (cancellation-aware).
    Sleep(Duration),
    /// Ask for a human decision; the outcome is recorded in the response
    /// metadata as `decision.<n>` = result (`approved`, `timed_out` …).
    Decide(DecisionRequest),
    /// Wait until the run is cancelled, then return `Err(Cancelled)`.
    WaitForCancel,
    /// Ignore cancellation and never return (tests core's grace period).
    Hang,
    /// Panic with this message (tests core's panic containment).
    Panic(String),
    /// Open a batch ([`EventSink::begin_batch`]); scripts may leave it
    /// unbalanced, to test that the host copes.
    BeginBatch,
    /// Close a batch ([`EventSink::end_batch`]).
    EndBatch,
    /// Call a host tool of the run ([`Request::host_tools`]); the result is
    /// recorded in the response metadata as `tool.<n>` = its JSON
    /// ([`HostToolResult`](agent_adaptor_driver::HostToolResult)). Declare
    /// a channel with [`ScriptedDriver::with_host_tools`].
    CallTool(agent_adaptor_driver::HostToolCall),
    /// Record [`EventSink::payloads_observed`] in the response metadata as
    /// `observed.<n>` = `true`/`false`.
    NoteObserved,
}

/// How a script ends once its steps are played.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Ending {
    /// Return this response.
    Respond(Box<Response>),
    /// Return an infrastructure error with this message.
    Fail(String),
}

/// An error a script was told to return.
#[derive(Debug, thiserror::Error)]
#[error("scripted failure: {0}")]
pub struct ScriptedError(pub String);

/// A driver that plays a script. Cloning shares the script.
#[derive(Clone)]
pub struct ScriptedDriver {
    descriptor: Descriptor,
    capability: Option<StreamCapability>,
    steps: Arc<[Step]>,
    ending: Ending,
    codec: Option<Arc<dyn SessionCodec>>,
    config_fingerprint: Option<String>,
    config_error: Option<String>,
    requests: Arc<std::sync::Mutex<Vec<Request>>>,
}

impl std::fmt::Debug for ScriptedDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedDriver")
            .field("steps", &self.steps.len())
            .field("capability", &self.capability)
            .finish()
    }
}

impl ScriptedDriver {
    /// A driver that plays `steps` then ends with `ending`, declaring every
    /// stream capability and no run-policy capability (see
    /// [`with_run_policy`](Self::with_run_policy)).
    pub fn new(steps: impl Into<Vec<Step>>, ending: Ending) -> Self {
        let mut descriptor = Descriptor::new("scripted", "Scripted driver");
        // Every request, its workspace included, is recorded for the test.
        descriptor.workspace.directory = true;
        ScriptedDriver {
            descriptor,
            capability: Some(StreamCapability::FULL),
            steps: steps.into().into(),
            ending,
            codec: None,
            config_fingerprint: None,
            config_error: None,
            requests: Default::default(),
        }
    }

    /// A complete, contract-abiding streaming run that answers `text`, sent
    /// as one delta per word.
    pub fn text_reply(text: &str) -> Self {
        let words: Vec<String> = text.split_inclusive(' ').map(str::to_owned).collect();
        Self::text_chunks(&words)
    }

    /// A complete streaming run whose answer is the concatenation of `chunks`,
    /// one `text.content` per chunk; with the matching transcript, raw
    /// stdout and terminal payload.
    pub fn text_chunks<S: AsRef<str>>(chunks: &[S]) -> Self {
        let text: String = chunks.iter().map(AsRef::as_ref).collect();
        let item = TranscriptItem::assistant(text.clone());
        let mut steps = vec![
            Step::Stream(StreamPayload::run_started()),
            Step::Stream(StreamPayload::text_start("m1")),
        ];
        steps.extend(
            chunks
                .iter()
                .filter(|c| !c.as_ref().is_empty())
                .map(|c| Step::Stream(StreamPayload::text_content("m1", c.as_ref()))),
        );
        steps.push(Step::Stream(StreamPayload::text_end("m1")));
        steps.push(Step::Emit(RunEvent::Item(item.clone().into())));
        steps.push(Step::Stream(StreamPayload::run_finished(None)));
        let terminal = serde_json::json!({"type": "result", "result": text}).to_string();
        let response = Response {
            output: text.clone(),
            raw: agent_adaptor_driver::RawStreams {
                stdout: format!("{terminal}\n").into(),
                stderr: Default::default(),
                terminal: TerminalPayload::new("result", &terminal).ok(),
            },
            transcript: vec![item].into(),
            exit_code: Some(0),
            provider: "scripted".into(),
            ..Default::default()
        };
        Self::new(steps, Ending::Respond(Box::new(response)))
    }

    /// A text reply from a driver that supports resume: the response carries
    /// a valid checkpoint for `session` (standard codec, a fixed config
    /// fingerprint), so thread runs persist it.
    pub fn resumable_reply(text: &str, session: &str) -> Self {
        let mut driver = Self::text_reply(text).with_resume(
            Arc::new(agent_adaptor_driver::StandardSessionCodec::new("scripted")),
            "scripted-config-v1",
        );
        if let Ending::Respond(resp) = &mut driver.ending {
            resp.checkpoint = Some(agent_adaptor_driver::Checkpoint::valid(
                agent_adaptor_driver::SessionState {
                    resume_id: session.to_owned(),
                    display_id: session.to_owned(),
                    data: Default::default(),
                },
            ));
        }
        driver
    }

    /// The requests this driver was given, when recording is on.
    pub fn recorded_requests(&self) -> Vec<Request> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Declare `capability` (or none at all).
    pub fn with_capability(mut self, capability: Option<StreamCapability>) -> Self {
        self.capability = capability;
        self
    }

    /// Replace the descriptor.
    pub fn with_descriptor(mut self, descriptor: Descriptor) -> Self {
        self.descriptor = descriptor;
        self
    }

    /// Support resume with `codec` and a config fingerprint.
    pub fn with_resume(mut self, codec: Arc<dyn SessionCodec>, fingerprint: &str) -> Self {
        self.descriptor.sessions.supports_resume = true;
        self.codec = Some(codec);
        self.config_fingerprint = Some(fingerprint.to_owned());
        self
    }

    /// Run-policy declarations for a scripted driver whose
    /// [`Step::Decide`]s are all routed to core: every decision kind can be
    /// asked, auto-approved (not questions) and auto-denied; no retry, no
    /// sandbox, web or browser.
    pub const ROUTED_DECISIONS: agent_adaptor_driver::RunPolicyCapabilities = {
        let routed = agent_adaptor_driver::HumanDecisionSupport {
            ask: true,
            auto_approve: true,
            auto_reject: true,
            retry: false,
        };
        agent_adaptor_driver::RunPolicyCapabilities {
            isolation: false,
            web_search: false,
            browser: false,
            permission: routed,
            plan_review: routed,
            question: agent_adaptor_driver::QuestionSupport {
                ask: true,
                auto_reject: true,
                retry: false,
            },
            sandbox_levels: agent_adaptor_driver::SandboxSupport {
                read_only: false,
                workspace_write: false,
                unrestricted: false,
            },
            web_search_levels: agent_adaptor_driver::FeatureSupport {
                allow: false,
                deny: false,
            },
            browser_levels: agent_adaptor_driver::FeatureSupport {
                allow: false,
                deny: false,
            },
        }
    };

    /// Declare these run-policy capabilities (sandbox, web, browser and the
    /// decision modes) in the descriptor.
    pub fn with_run_policy(
        mut self,
        capabilities: agent_adaptor_driver::RunPolicyCapabilities,
    ) -> Self {
        self.descriptor.run_policy = capabilities;
        self
    }

    /// Declare that host tools reach this driver natively (it calls them
    /// from [`Step::CallTool`]).
    pub fn with_host_tools(mut self) -> Self {
        self.descriptor.host_tools = agent_adaptor_driver::HostToolChannel::Native;
        self
    }

    /// Make `validate_config` fail with `reason`.
    pub fn with_invalid_config(mut self, reason: &str) -> Self {
        self.config_error = Some(reason.to_owned());
        self
    }

    /// Declare these structured-output mechanisms in the descriptor.
    pub fn with_structured_output(
        mut self,
        capability: agent_adaptor_driver::StructuredOutputCapability,
    ) -> Self {
        self.descriptor.structured_output = capability;
        self
    }

    /// Return `structured` as the response's structured output (what a
    /// driver with a native JSON-schema mode reports). No effect on a
    /// script that ends in a failure.
    pub fn with_response_structured_output(
        mut self,
        structured: agent_adaptor_driver::StructuredOutput,
    ) -> Self {
        if let Ending::Respond(resp) = &mut self.ending {
            resp.structured_output = Some(structured);
        }
        self
    }
}

#[async_trait]
impl Driver for ScriptedDriver {
    fn descriptor(&self) -> Descriptor {
        self.descriptor.clone()
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        match &self.config_error {
            None => Ok(()),
            Some(reason) => Err(ConfigError {
                driver: self.descriptor.driver_type.clone(),
                reason: reason.clone(),
            }),
        }
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        self.capability
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        self.codec.clone()
    }

    fn session_config_fingerprint(
        &self,
    ) -> Option<Result<String, agent_adaptor_driver::FingerprintError>> {
        self.config_fingerprint.clone().map(Ok)
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let mut transcript = req.new_transcript();
        let host_tools = req.host_tools.clone();
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(req);
        let mut decisions: BTreeMap<String, String> = BTreeMap::new();
        for step in self.steps.iter() {
            match step {
                Step::Stream(p) => sink.emit_stream(p.clone()).await?,
                Step::Emit(e) => sink.emit(e.clone()).await?,
                Step::Sleep(d) => {
                    tokio::select! {
                        () = tokio::time::sleep(*d) => {}
                        () = ctx.cancel.cancelled() => return Err(DriverError::Cancelled),
                    }
                }
                Step::Decide(req) => {
                    let result = match sink.decisions() {
                        Some(d) => d.request_decision(req.clone()).await?.result.as_str(),
                        None => "unavailable",
                    };
                    let n = decisions
                        .keys()
                        .filter(|k| k.starts_with("decision."))
                        .count();
                    decisions.insert(format!("decision.{n}"), result.to_owned());
                }
                Step::WaitForCancel => {
                    ctx.cancel.cancelled().await;
                    return Err(DriverError::Cancelled);
                }
                Step::Hang => std::future::pending::<()>().await,
                Step::Panic(msg) => panic!("{msg}"),
                Step::CallTool(call) => {
                    let result = host_tools.call(call.clone(), sink, &ctx.cancel).await;
                    let n = decisions.keys().filter(|k| k.starts_with("tool.")).count();
                    decisions.insert(
                        format!("tool.{n}"),
                        serde_json::to_string(&result).unwrap_or_default(),
                    );
                }
                Step::BeginBatch => sink.begin_batch(),
                Step::EndBatch => sink.end_batch(),
                Step::NoteObserved => {
                    let n = decisions
                        .keys()
                        .filter(|k| k.starts_with("observed."))
                        .count();
                    decisions.insert(
                        format!("observed.{n}"),
                        sink.payloads_observed().to_string(),
                    );
                }
            }
        }
        match &self.ending {
            Ending::Respond(resp) => {
                let mut resp = (**resp).clone();
                resp.metadata.extend(decisions);
                // The scripted items, recorded with the request's budget
                // like a real driver records what it parsed.
                for item in std::mem::take(&mut resp.transcript).iter() {
                    let item = item.map_err(|e| DriverError::Other(Box::new(e)))?;
                    transcript.push(item.into_owned());
                }
                resp.transcript = transcript;
                Ok(resp)
            }
            Ending::Fail(msg) => Err(DriverError::Other(Box::new(ScriptedError(msg.clone())))),
        }
    }
}
