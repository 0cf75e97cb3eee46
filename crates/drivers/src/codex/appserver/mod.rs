//! Codex transport B: `codex app-server`, JSON-RPC 2.0 in shape over stdio
//! (one JSON object per line, no `"jsonrpc"` field), protocols.md §1.6.
//!
//! One run is one process: `initialize` (client info) → the `initialized`
//! notification → `thread/start` (or `thread/resume` of the checkpoint's
//! thread; an error answer there is a typed
//! [`RESUME_REJECTED`] failure) → `turn/start` with
//! the prompt (and the output schema). Notifications stream the turn at token
//! level ([`parse`] has the mapping); `turn/completed` is the only terminal,
//! after which stdin is closed and the server exits. Approval requests go to
//! the core's decision sink (`transport.rs`); host tools are the thread's
//! dynamic tools, their calls run by the run's toolbox ([`dynamic_tools`]);
//! cancellation sends `turn/interrupt` before the pump stops the process.
//!
//! # The schema
//!
//! The message types in [`protocol`] are written by hand from the pinned
//! binary's own JSON schema, committed under `schema/` beside this file and
//! regenerated with
//!
//! ```text
//! scripts/codex-schema            # runs: codex app-server generate-json-schema --out DIR
//! scripts/codex-schema --check    # fails when the committed files are stale
//! ```
//!
//! The tests validate every message of the captures and of the live runs
//! against those files with `jsonschema` (`tests/codex_appserver.rs`,
//! `tests/real_codex.rs`), so a field the types rely on cannot drift from
//! what the binary declares.

pub mod dynamic_tools;
pub mod parse;
pub mod protocol;
mod scope;
pub(crate) mod transport;

pub use parse::{AppServerParser, RESUME_REJECTED};
