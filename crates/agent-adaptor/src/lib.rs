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
//!
//! ## Threads and their stores
//!
//! A [`Thread`] keeps a conversation under a host key in a [`ThreadStore`]:
//! [`MemoryStore`] (always here), `SqliteStore` (feature `sqlite`, on by
//! default: one file, the embedded default) and `PgStore` (feature
//! `postgres`: several hosts share threads). The stores live in the
//! `agent-adaptor-store` crate, also re-exported as `store` when either
//! feature is on.
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::sync::Arc;
//! use agent_adaptor::{Agent, Runner, SqliteStore, scripted::ScriptedDriver};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = SqliteStore::open(dir.path().join("threads.db")).await.unwrap();
//! let agent = Agent::builder(ScriptedDriver::resumable_reply("hi", "session-1"))
//!     .thread_store(Arc::new(store))
//!     .build()
//!     .unwrap();
//! agent.thread("tenant-7/conversation-42").run("first turn").await.unwrap();
//! // Release the provider processes a driver may keep between turns.
//! agent.close().await;
//! # }
//! # #[cfg(not(feature = "sqlite"))] fn main() {}
//! ```
//!
//! Drivers that keep a provider process alive between the turns of a
//! thread (descriptor `process.persistent`) reuse it for the next turn;
//! [`RunOptions::with_spawn`] forces a fresh process for one call, and
//! [`Agent::close`] reaps every kept process.
#![forbid(unsafe_code)]

pub use agent_adaptor_core::*;

/// The durable thread stores (`agent-adaptor-store`).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use agent_adaptor_store as store;

#[cfg(feature = "sqlite")]
pub use agent_adaptor_store::{Durability, SqliteConfig, SqliteStore};
#[cfg(feature = "postgres")]
pub use agent_adaptor_store::{PgConfig, PgStore};
