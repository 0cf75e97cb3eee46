//! # agent-adaptor-testkit
//!
//! Test support for agent-adaptor and for third-party driver authors:
//!
//! * [`mock`] — a scripted mock model server on 127.0.0.1 that speaks the
//!   streaming wire protocols the real CLIs use (OpenAI Responses, OpenAI
//!   Chat Completions, Anthropic Messages, Gemini), so the real CLIs run
//!   offline in tests;
//! * [`mcp`] — a small, real MCP server (`mock-mcp-server`, stdio or
//!   Streamable HTTP, built on `rmcp`) with the tools `lookup`, `add` and
//!   `fail`, and the helpers that start it and read its call log;
//! * [`acp_agent`] — a scripted ACP agent (`fake-acp-agent`) for the
//!   faults no real ACP agent shows on demand;
//! * [`fixtures`] — loading of recorded CLI captures;
//! * [`replay`] — the fake CLI binary's engine (`fake-cli`), which replays a
//!   capture with chosen delays, exit code, stderr noise and stdin rules;
//! * [`proc_tree`] — a stand-in CLI that leaves a process tree (a tool, a
//!   `setsid` daemon) and `/proc` checks of what is left of it.
//!
//! Only tests and benches depend on this crate.
#![forbid(unsafe_code)]

pub mod acp_agent;
mod bins;
pub mod clis;
pub mod fixtures;
pub mod mcp;
pub mod mock;
pub mod proc_tree;
pub mod replay;
pub mod scenarios;
