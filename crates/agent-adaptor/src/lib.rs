//! # agent-adaptor
//!
//! Embed coding agents (Claude Code, Codex, Cursor Agent, CodeBuddy Code,
//! Gemini CLI) and plain LLM APIs behind one API:
//!
//! * an [`Agent`] (or, later, a `Thread`) is a [`Runner`];
//! * `stream` returns a [`RunStream`] of typed [`Event`]s — `RunStarted`
//!   first, `RunFinished` last, a strictly increasing `sequence` in between;
//! * the stream's [`result`](RunStream::result) is the one authoritative
//!   outcome: a [`RunResult`] (text, summary, raw streams, transcript,
//!   usage …) or a typed [`Error`].
//!
//! ```
//! use agent_adaptor::{Agent, Event, Phase, Runner, scripted::ScriptedDriver};
//! use futures::StreamExt;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let agent = Agent::new(ScriptedDriver::text_reply("Hello from a scripted agent"));
//! let mut stream = agent.stream("Say hello");
//! while let Some(event) = stream.next().await {
//!     if let Event::TextDelta(d) = &event {
//!         if d.phase == Phase::Content {
//!             print!("{}", d.text);
//!         }
//!     }
//! }
//! let result = stream.result().await.expect("the scripted run succeeds");
//! assert_eq!(result.text, "Hello from a scripted agent");
//! # }
//! ```
//!
//! Drivers implement [`driver::Driver`] from the `agent-adaptor-driver` SPI
//! crate, re-exported here as [`driver`].
#![forbid(unsafe_code)]

pub use agent_adaptor_core::*;
