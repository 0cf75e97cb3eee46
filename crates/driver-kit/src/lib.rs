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
//! - [`terminal_guard`]: terminal lines believed only when they are the run's.
//! - [`child_env`]: which host environment variables the CLI inherits.
//! - [`json_line`]: decoding one stdout line.
#![forbid(unsafe_code)]

pub mod child_env;
pub mod emitter;
pub mod exit;
pub mod json_line;
pub mod one_shot;
pub mod pump;
pub mod terminal_guard;
