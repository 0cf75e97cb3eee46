//! # agent-adaptor-drivers
//!
//! The built-in provider drivers, one folder each (`claude/`, `codebuddy/`,
//! …), written against the driver SPI only. Protocol families shared by
//! several CLIs live once: [`streamjson`] is the Claude Code stream-json
//! family that CodeBuddy Code also speaks, with the differences as data.
//!
//! Parsers are sans-IO: they turn one stdout line into the live payloads,
//! transcript items and notices it means, and at the end form every layer of
//! the response. The transports (process, stdin protocol) feed them.
//!
//! [`acp`] drives every agent that speaks the Agent Client Protocol (Gemini
//! CLI, Qwen Code, Copilot CLI, opencode, the Zed adapters of Claude Code
//! and Codex, any command), each a launch recipe.
//!
//! Claude Code, CodeBuddy Code and the Codex app-server keep one live
//! process per provider session between the turns of a thread
//! ([`resident`]): turn N+1 is written to the process that served turn N.
#![forbid(unsafe_code)]

// The driver kit's modules, where the drivers (and their users) have
// always found them.
pub use agent_adaptor_driver_kit::{child_env, exit, json_line, one_shot, pump, terminal_guard};

#[cfg(feature = "acp")]
pub mod acp;
#[cfg(feature = "claude")]
pub mod claude;
#[cfg(feature = "codebuddy")]
pub mod codebuddy;
#[cfg(feature = "codex")]
pub mod codex;
#[cfg(feature = "cursor")]
pub mod cursor;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(all(
    feature = "acp",
    feature = "claude",
    feature = "codebuddy",
    feature = "codex",
    feature = "cursor",
    feature = "gemini"
))]
pub mod inspect;
pub mod observe;
pub mod policy;
#[cfg(any(
    feature = "claude",
    feature = "codebuddy",
    feature = "codex",
    feature = "cursor",
    feature = "gemini"
))]
mod probe_common;
#[cfg(any(
    feature = "claude",
    feature = "codebuddy",
    feature = "codex",
    feature = "cursor",
    feature = "gemini"
))]
mod probed;
#[cfg(any(feature = "claude", feature = "codebuddy", feature = "codex"))]
pub mod resident;
#[cfg(any(feature = "claude", feature = "codebuddy"))]
pub mod streamjson;
#[cfg(any(feature = "cursor", feature = "gemini"))]
mod structured;
#[cfg(any(feature = "claude", feature = "codebuddy", feature = "codex"))]
mod tagged;
