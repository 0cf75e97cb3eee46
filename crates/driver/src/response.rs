//! What a driver returns: every result layer from one parse (spec §7, §8).

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read};
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::decision::{DecisionKind, DecisionRequest, DecisionResult};
use crate::session::Checkpoint;
use crate::transcript::Transcript;
use crate::usage::Usage;

/// The final response of one [`Driver::run`](crate::Driver::run).
///
/// A single parse of the official protocol forms all of these layers together:
///
/// * `output`: the final assistant-facing text. Never raw stdout/stderr, the
///   summary, or terminal JSON.
/// * `summary`: an optional short summary; empty when there is no formal one.
///   It must not fall back to the complete output.
/// * `raw`: the complete, untruncated stdout and stderr, plus the official
///   terminal payload.
/// * `transcript`: normalized items, equal item by item to the
///   [`RunEvent::Item`](crate::RunEvent::Item)s emitted during the run.
/// * `usage`: only what the provider reported.
/// * `runtime_services`: services the driver actually observed.
/// * `failure`: a structured business failure.
///
/// `exit_code` is `None` for drivers that run no process (HTTP providers).
#[derive(Debug, Clone, Default)]
pub struct Response {
    /// The final assistant-facing text.
    pub output: String,
    /// A short formal summary, or empty.
    pub summary: String,
    /// Complete raw streams and the official terminal payload.
    pub raw: RawStreams,
    /// Normalized transcript items (mirrors the emitted items exactly),
    /// built with [`Request::new_transcript`](crate::Request::new_transcript)
    /// and moved here (`std::mem::take`), never cloned.
    pub transcript: Transcript,
    /// Usage the provider reported.
    pub usage: Option<Usage>,
    /// The resume checkpoint; core validates it (spec §9) before trusting it.
    pub checkpoint: Option<Checkpoint>,
    /// The structured output slot, when a schema was requested.
    pub structured_output: Option<StructuredOutput>,
    /// Runtime services the driver observed.
    pub runtime_services: Vec<RuntimeServiceReport>,
    /// A structured business failure.
    pub failure: Option<RunFailure>,
    /// The provider process's exit code; `None` when no process ran.
    pub exit_code: Option<i32>,
    /// The signal that ended the process, e.g. `"SIGKILL"`.
    pub signal: Option<String>,
    /// True when the provider was stopped by a timeout.
    pub timed_out: bool,
    /// True when the provider process had finished its output (its
    /// protocol's terminal line, or end of stdout) but did not exit on its
    /// own within a grace period, so it was stopped (`signal` then says
    /// how). That alone is no failure: the turn's outcome is the protocol's.
    pub stopped_after_output: bool,
    /// The provider name (e.g. `"anthropic"`).
    pub provider: String,
    /// The model the provider reported.
    pub model: String,
    /// Free-form provider metadata.
    pub metadata: BTreeMap<String, String>,
}

/// The complete raw output of the provider (spec §8).
#[derive(Debug, Clone, Default)]
pub struct RawStreams {
    /// Every stdout byte, untruncated.
    pub stdout: RawBytes,
    /// Every stderr byte, untruncated.
    pub stderr: RawBytes,
    /// The official terminal event, exactly as recognized; `None` when none was seen.
    pub terminal: Option<TerminalPayload>,
}

/// The official provider terminal event (spec §8).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TerminalPayload {
    /// The provider-native event or method name (e.g. `"turn.completed"`).
    pub event: String,
    /// The exact text of the JSON value the parser recognized, byte for byte
    /// (whitespace around the value is not part of it).
    pub json: Box<RawValue>,
}

impl TerminalPayload {
    /// A terminal payload from the exact JSON text of the event.
    pub fn new(event: impl Into<String>, json: &str) -> Result<Self, serde_json::Error> {
        Ok(TerminalPayload {
            event: event.into(),
            json: RawValue::from_string(json.to_owned())?,
        })
    }
}

impl PartialEq for TerminalPayload {
    fn eq(&self, other: &Self) -> bool {
        self.event == other.event && self.json.get() == other.json.get()
    }
}

/// A source of raw bytes that does not live in memory (for example a spill
/// file written by the process helper when a stream grows large).
pub trait RawSource: Send + Sync + fmt::Debug {
    /// The exact number of bytes.
    fn len(&self) -> u64;
    /// True when there are no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A reader over every byte, from the first.
    fn open(&self) -> io::Result<Box<dyn Read + Send>>;
}

/// The complete bytes of one raw stream: in memory, or behind a [`RawSource`].
///
/// Cloning is cheap (reference counted). Bytes are kept exactly as written;
/// invalid UTF-8 is never replaced.
#[derive(Clone, Default)]
pub struct RawBytes(RawRepr);

#[derive(Clone, Default)]
enum RawRepr {
    #[default]
    Empty,
    Memory(Bytes),
    Source(Arc<dyn RawSource>),
}

impl RawBytes {
    /// Bytes held in memory.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        if bytes.is_empty() {
            RawBytes(RawRepr::Empty)
        } else {
            RawBytes(RawRepr::Memory(bytes))
        }
    }

    /// Bytes behind an external source (e.g. a spill file).
    pub fn from_source(source: Arc<dyn RawSource>) -> Self {
        RawBytes(RawRepr::Source(source))
    }

    /// The exact length in bytes.
    pub fn len(&self) -> u64 {
        match &self.0 {
            RawRepr::Empty => 0,
            RawRepr::Memory(b) => b.len() as u64,
            RawRepr::Source(s) => s.len(),
        }
    }

    /// True when there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, when they are held in memory.
    pub fn as_memory(&self) -> Option<&[u8]> {
        match &self.0 {
            RawRepr::Empty => Some(&[]),
            RawRepr::Memory(b) => Some(b),
            RawRepr::Source(_) => None,
        }
    }

    /// A reader over every byte.
    pub fn open(&self) -> io::Result<Box<dyn Read + Send>> {
        match &self.0 {
            RawRepr::Empty => Ok(Box::new(io::empty())),
            RawRepr::Memory(b) => Ok(Box::new(io::Cursor::new(b.clone()))),
            RawRepr::Source(s) => s.open(),
        }
    }

    /// Every byte, read into memory: one allocation of exactly
    /// [`len`](Self::len) bytes (a growing buffer would reserve up to twice
    /// a long line).
    pub fn to_vec(&self) -> io::Result<Vec<u8>> {
        if let Some(b) = self.as_memory() {
            return Ok(b.to_vec());
        }
        let len = usize::try_from(self.len()).map_err(io::Error::other)?;
        let mut out = Vec::with_capacity(len);
        self.open()?.take(self.len()).read_to_end(&mut out)?;
        Ok(out)
    }

    /// The bytes as text, with invalid UTF-8 replaced (for display only).
    pub fn to_string_lossy(&self) -> io::Result<String> {
        Ok(String::from_utf8_lossy(&self.to_vec()?).into_owned())
    }
}

impl fmt::Debug for RawBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            RawRepr::Empty => f.write_str("RawBytes(0 bytes)"),
            RawRepr::Memory(b) => write!(f, "RawBytes({} bytes in memory)", b.len()),
            RawRepr::Source(s) => write!(f, "RawBytes({} bytes from {s:?})", s.len()),
        }
    }
}

impl From<Vec<u8>> for RawBytes {
    fn from(v: Vec<u8>) -> Self {
        RawBytes::from_bytes(v)
    }
}

impl From<&str> for RawBytes {
    fn from(s: &str) -> Self {
        RawBytes::from_bytes(Bytes::copy_from_slice(s.as_bytes()))
    }
}

impl From<String> for RawBytes {
    fn from(s: String) -> Self {
        RawBytes::from_bytes(s.into_bytes())
    }
}

impl From<Bytes> for RawBytes {
    fn from(b: Bytes) -> Self {
        RawBytes::from_bytes(b)
    }
}

/// A structured business failure (spec §7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFailure {
    /// What went wrong (never empty in a `run.error` frame).
    pub message: String,
    /// The failure code.
    pub code: FailureCode,
    /// Free-form diagnostic metadata (no secrets).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Present iff `code` is `DecisionRejected` or `DecisionTimeout` (RSP-02).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_decision: Option<Box<HumanDecisionFailure>>,
}

impl RunFailure {
    /// A failure with a code and message.
    pub fn new(code: FailureCode, message: impl Into<String>) -> Self {
        RunFailure {
            message: message.into(),
            code,
            metadata: BTreeMap::new(),
            human_decision: None,
        }
    }

    /// An [`AgentError`](FailureCode::AgentError) for a provider that ended
    /// without its terminal event: metadata `reason` is
    /// [`MISSING_TERMINAL`] (the provider said nothing of why, so its
    /// stderr is the why — core puts its last lines in the message).
    pub fn missing_terminal(message: impl Into<String>) -> Self {
        let mut f = RunFailure::new(FailureCode::AgentError, message);
        f.metadata.insert("reason".into(), MISSING_TERMINAL.into());
        f
    }

    /// Whether this is a [`missing_terminal`](RunFailure::missing_terminal) failure.
    pub fn is_missing_terminal(&self) -> bool {
        self.metadata.get("reason").map(String::as_str) == Some(MISSING_TERMINAL)
    }
}

/// The metadata `reason` of a failure whose provider ended without its
/// terminal event.
pub const MISSING_TERMINAL: &str = "missing_terminal";

/// The code of a [`RunFailure`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureCode {
    /// A human rejected a decision.
    DecisionRejected,
    /// A decision was not answered in time.
    DecisionTimeout,
    /// The agent itself failed.
    AgentError,
    /// The run was cancelled.
    Cancelled,
    /// A policy forbade the run.
    PolicyError,
    /// A provider-specific code, kept verbatim. Use [`FailureCode::parse`]
    /// to build one from a string, so a known code never hides in `Other`.
    #[serde(untagged)]
    Other(String),
}

impl FailureCode {
    /// The code named by `s`: a known variant when `s` is one's wire name,
    /// else `Other(s)`.
    pub fn parse(s: &str) -> Self {
        match s {
            "decision_rejected" => FailureCode::DecisionRejected,
            "decision_timeout" => FailureCode::DecisionTimeout,
            "agent_error" => FailureCode::AgentError,
            "cancelled" => FailureCode::Cancelled,
            "policy_error" => FailureCode::PolicyError,
            other => FailureCode::Other(other.to_owned()),
        }
    }

    /// The wire name of the code.
    pub fn as_str(&self) -> &str {
        match self {
            FailureCode::DecisionRejected => "decision_rejected",
            FailureCode::DecisionTimeout => "decision_timeout",
            FailureCode::AgentError => "agent_error",
            FailureCode::Cancelled => "cancelled",
            FailureCode::PolicyError => "policy_error",
            FailureCode::Other(s) => s,
        }
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a human decision ended the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanDecisionFailure {
    /// The decision kind.
    pub kind: DecisionKind,
    /// Which provider operation asked.
    pub source: String,
    /// How it ended.
    pub decision: DecisionResult,
    /// The request that was asked.
    pub request: DecisionRequest,
    /// How many attempts were made.
    pub attempts: u32,
}

/// The structured output slot (filled when the request carried a schema).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuredOutput {
    /// Always `"json_schema"` today.
    pub format: String,
    /// How it was produced.
    pub source: StructuredOutputSource,
    /// The exact JSON text.
    pub raw_json: String,
    /// The parsed value, when it parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// True when it validated against the schema.
    pub valid: bool,
    /// Validation errors, when it did not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validation_errors: Vec<String>,
    /// Hash of the schema it was checked against.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub schema_hash: String,
}

/// How a structured output was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutputSource {
    /// The provider's own JSON-schema mode.
    Native,
    /// A prompt instruction plus local validation of the final text.
    PromptValidate,
}

/// A runtime service the driver actually observed (never a host declaration echoed back).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeServiceReport {
    /// The service's name.
    pub name: String,
    /// `starting`, `running`, `stopped` or `failed`.
    pub status: String,
    /// Where it listens, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// `healthy`, `unhealthy` or `unknown`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub health: String,
    /// Free-form details (no secrets).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}
