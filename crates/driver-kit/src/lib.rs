//! # agent-adaptor-driver-kit
//!
//! What a driver for a line-protocol CLI is built on, and nothing of the
//! built-in drivers: the pieces every built-in CLI driver uses, supported
//! for third-party drivers too (`docs/writing-a-driver.md` is the guide).
//!
//! - [`pump`]: the one loop that spawns the CLI, feeds each stdout line to
//!   a sans-IO [`LineProtocol`](pump::LineProtocol), delivers what it means
//!   to the sink, answers control frames, and stops the CLI's process group
//!   on cancellation.
//! - [`one_shot`]: a CLI that reads the prompt on stdin, prints JSON lines
//!   and exits ([`OneShotCli`](one_shot::OneShotCli),
//!   [`run_one_shot`](one_shot::run_one_shot)), and the
//!   [`Emitter`](one_shot::Emitter) that keeps a parser's conventions.
//! - [`exit`]: how the process ended, as a parser judges the turn, and the
//!   shape of a lifecycle notice ([`exit::notice`]).
//! - [`host_calls`]: the host tool calls of a run in flight while the pump
//!   reads on (a controller starts them, the pump drives them).
//! - [`terminal_guard`]: terminal lines believed only when they are the run's.
//! - [`child_env`]: which host environment variables the CLI inherits.
//! - [`json_line`]: decoding one stdout line.
//! - [`scratch`]: a run's private files (instructions, MCP configuration)
//!   that travel as files, never on argv.
//! - [`profile`]: the configuration home of a dedicated or cloned
//!   [`Profile`](agent_adaptor_driver::Profile).
//! - [`skills`]: the skills a run carries, copied where the CLI finds them.
//!
//! A parser is sans-IO: a stdout line in, what it means out. On the
//! [`Emitter`](one_shot::Emitter) the conventions are kept for it —
//! `run.started` once and first, payloads only when the request streams,
//! text closed before a tool call, the failure reported three ways, the
//! terminal line kept exactly:
//!
//! ```
//! use agent_adaptor_driver::{RunEvent, StreamPayload};
//! use agent_adaptor_driver_kit::one_shot::Emitter;
//! use agent_adaptor_driver_kit::pump::{LineProtocol, Out};
//!
//! #[derive(serde::Deserialize)]
//! #[serde(tag = "type", rename_all = "snake_case")]
//! enum Line {
//!     Text { text: String },
//!     Done,
//! }
//!
//! struct Toy(Emitter);
//!
//! impl LineProtocol for Toy {
//!     fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
//!         // Blank, non-JSON and after-the-end lines are handled (notices).
//!         let Some((line, raw)) = self.0.decode::<Line>(out, raw) else {
//!             return;
//!         };
//!         match line {
//!             Line::Text { text } => self.0.text(out, text),
//!             Line::Done => {
//!                 self.0.close_all(out);
//!                 self.0.stream(out, StreamPayload::run_finished(None));
//!                 self.0.terminal("done", raw);
//!             }
//!         }
//!     }
//!     fn terminated(&self) -> bool {
//!         self.0.ended()
//!     }
//! }
//!
//! let mut toy = Toy(Emitter::new("toy", true));
//! let mut out = Vec::new();
//! for line in [&br#"{"type":"text","text":"hi"}"#[..], b"not json", br#"{"type":"done"}"#] {
//!     toy.line_into(line, &mut out);
//! }
//! let kinds: Vec<&str> = out
//!     .iter()
//!     .map(|o| match o {
//!         Out::Stream(p) => p.kind.name(),
//!         Out::Event(RunEvent::Item(_)) => "item",
//!         _ => "notice",
//!     })
//!     .collect();
//! assert_eq!(
//!     kinds,
//!     ["run.started", "text.start", "text.content", "notice", "text.end", "item", "run.finished"]
//! );
//! assert!(toy.terminated());
//!
//! // Not streaming: the same lines mean the transcript only.
//! let mut quiet = Toy(Emitter::new("toy", false));
//! let mut out = Vec::new();
//! quiet.line_into(br#"{"type":"text","text":"hi"}"#, &mut out);
//! quiet.line_into(br#"{"type":"done"}"#, &mut out);
//! assert!(out.iter().all(|o| !matches!(o, Out::Stream(_))));
//! ```
#![forbid(unsafe_code)]

pub mod child_env;
pub mod emitter;
pub mod exit;
pub mod host_calls;
pub mod host_mcp;
pub mod json_line;
pub mod one_shot;
pub mod profile;
pub mod pump;
pub mod scratch;
pub mod skills;
pub mod terminal_guard;
