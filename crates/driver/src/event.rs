//! Operational events a driver sends through [`EventSink::emit`](crate::EventSink::emit) (spec §6).

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::transcript::SharedItem;

/// Which output stream a raw chunk came from. Only stdout and stderr exist
/// (RUN-01 holds by construction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    /// The process's standard output.
    Stdout,
    /// The process's standard error.
    Stderr,
}

impl OutputStream {
    /// `"stdout"` or `"stderr"`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
}

/// The body of an operational (non-chunk, non-item) event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OperationalEvent {
    /// Human-readable text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// String metadata (no secrets).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl OperationalEvent {
    /// An operational event with text only.
    pub fn text(text: impl Into<String>) -> Self {
        OperationalEvent {
            text: text.into(),
            ..Default::default()
        }
    }
}

/// One operational event or transcript item (spec §6).
///
/// There is no sequence field: ordering is assigned by core on receipt (RUN-03
/// holds by construction).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunEvent {
    /// Raw bytes from stdout or stderr, with any chunk boundary.
    Chunk {
        /// Which stream.
        stream: OutputStream,
        /// The bytes, exactly as read.
        bytes: Bytes,
    },
    /// A transcript item as it is parsed; the sequence of these must equal
    /// [`Response::transcript`](crate::Response::transcript). Shared, so a
    /// driver keeps one copy for its transcript and the event
    /// ([`Transcript::share`](crate::Transcript::share)), and its digest is
    /// worked out once ([`SharedItem`]).
    Item(SharedItem),
    /// The provider process was spawned (pid, argv summary …).
    Spawn(OperationalEvent),
    /// The provider was invoked (argv, model, transport …).
    Invocation(OperationalEvent),
    /// A runtime service report.
    Runtime(OperationalEvent),
    /// A lifecycle note (retry, fallback, warning …).
    Lifecycle(OperationalEvent),
}

impl RunEvent {
    /// A stdout chunk.
    pub fn stdout(bytes: impl Into<Bytes>) -> Self {
        RunEvent::Chunk {
            stream: OutputStream::Stdout,
            bytes: bytes.into(),
        }
    }

    /// A stderr chunk.
    pub fn stderr(bytes: impl Into<Bytes>) -> Self {
        RunEvent::Chunk {
            stream: OutputStream::Stderr,
            bytes: bytes.into(),
        }
    }

    /// The kind name (`"chunk"`, `"item"`, `"spawn"` …).
    pub fn kind_name(&self) -> &'static str {
        match self {
            RunEvent::Chunk { .. } => "chunk",
            RunEvent::Item(_) => "item",
            RunEvent::Spawn(_) => "spawn",
            RunEvent::Invocation(_) => "invocation",
            RunEvent::Runtime(_) => "runtime",
            RunEvent::Lifecycle(_) => "lifecycle",
        }
    }
}
