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
//! crate, re-exported here as [`driver`] (singular: the trait a provider
//! integration implements). The built-in drivers are `drivers` (plural:
//! `drivers::claude`, `drivers::codex` …, one feature each).
//!
//! ## Features
//!
//! One crate to depend on; each feature re-exports one part. Without any,
//! the facade is the core API with the scripted driver and [`MemoryStore`].
//!
//! | feature | module | what |
//! |---|---|---|
//! | `claude`, `codebuddy`, `codex`, `cursor`, `gemini` (default) | `drivers::claude` … | the CLI drivers (`agent-adaptor-drivers`), one feature each |
//! | `sqlite` (default) | `store`, `SqliteStore` | the durable SQLite thread store, the embedded default |
//! | `postgres` | `store`, `PgStore` | the PostgreSQL thread store: several hosts share threads |
//! | `llm` | `llm` | LLM HTTP providers (Chat Completions, Responses, Anthropic, Gemini, OpenRouter) and `llm::agent::LlmDriver` |
//! | `bridges` | `bridges` | the web: `bridges::agui` (AG-UI and raw SSE, an axum `Router` to mount), `bridges::a2a` |
//! | `skills` (default) | `skills` | `skills::Skill`: a skill from a directory, inline `SKILL.md` or an archive extracted safely |
//!
//! ```toml
//! # Claude Code with SQLite threads, served over AG-UI:
//! agent-adaptor = { version = "0.1", default-features = false, features = ["claude", "sqlite", "bridges"] }
//! ```
//!
//! `crates/agent-adaptor/examples/` has one program per main use:
//! `quickstart` (no feature), `claude_approvals`, `durable_thread`,
//! `llm_agent` and `agui_axum`.
//!
//! ```no_run
//! # #[cfg(feature = "claude")]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agent_adaptor::drivers::claude;
//! use agent_adaptor::{Agent, Runner};
//!
//! let mut config = claude::config(); // `claude` from PATH
//! config.host_approvals = true; // permission requests come to the host
//! let agent = Agent::builder(claude::driver(config))
//!     .approval_handler(agent_adaptor::approve_all())
//!     .build()?;
//! println!("{}", agent.run("Summarise README.md").await?.text);
//! # Ok(())
//! # }
//! ```
//!
//! ## Threads and their stores
//!
//! A [`Thread`] keeps a conversation under a host key in a [`ThreadStore`]:
//! [`MemoryStore`] (always here), `SqliteStore` (feature `sqlite`, on by
//! default: one file, the embedded default) and `PgStore` (feature
//! `postgres`: several hosts share threads). The stores live in the
//! `agent-adaptor-store` crate, re-exported as `store` when either
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

/// The built-in CLI drivers (`agent-adaptor-drivers`): `drivers::acp`,
/// `drivers::claude`, `drivers::codebuddy`, `drivers::codex`,
/// `drivers::cursor`, `drivers::gemini`, each behind the feature of that
/// name.
#[cfg(any(
    feature = "acp",
    feature = "claude",
    feature = "codebuddy",
    feature = "codex",
    feature = "cursor",
    feature = "gemini"
))]
pub use agent_adaptor_drivers as drivers;

/// The LLM HTTP providers and their agent driver (`agent-adaptor-llm`,
/// feature `llm`).
#[cfg(feature = "llm")]
pub use agent_adaptor_llm as llm;

/// The web bridges (`agent-adaptor-bridges`, feature `bridges`): AG-UI and
/// raw SSE, A2A.
#[cfg(feature = "bridges")]
pub use agent_adaptor_bridges as bridges;

/// The host-side skill loader (`agent-adaptor-skills`, feature `skills`):
/// `skills::Skill` from a directory, inline `SKILL.md` text or an archive.
#[cfg(feature = "skills")]
pub use agent_adaptor_skills as skills;

/// The durable thread stores (`agent-adaptor-store`).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use agent_adaptor_store as store;

#[cfg(feature = "sqlite")]
pub use agent_adaptor_store::{Durability, SqliteConfig, SqliteStore};
#[cfg(feature = "postgres")]
pub use agent_adaptor_store::{PgConfig, PgStore};

/// README.md's Rust examples, compiled (and run, where they need no CLI) as
/// doctests: they use this facade only.
#[cfg(all(doctest, feature = "claude", feature = "sqlite", feature = "skills"))]
#[doc = include_str!("../../../README.md")]
struct Readme;
