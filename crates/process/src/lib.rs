//! # agent-adaptor-process — the subprocess helper
//!
//! What a driver that runs a provider CLI needs, and nothing more: spawn the
//! program in its **own process group**, feed its stdin, capture the
//! **complete, byte-exact** stdout and stderr (spilling to an unlinked
//! temporary file past a threshold, so a 1 GiB stream keeps memory flat),
//! emit every chunk live to the driver's [`EventSink`] as
//! [`RunEvent::Chunk`], hand stdout to the driver's parser **line by line**
//! (no length cap, bounded memory), and stop the whole group on cancel,
//! timeout or drop (close stdin → `close_grace` → `SIGTERM` → `term_grace` →
//! `SIGKILL`; spec §4, §11, protocols §0.5), and stop a child that does not
//! exit within [`Command::exit_grace`] once its output is over (stdout at
//! end-of-file, or [`Process::expect_exit`] after the protocol's terminal
//! line).
//!
//! It owns process lifetimes and bytes. It must **never** parse or guess a
//! provider protocol (no JSON, no terminal events, no checkpoints): lines are
//! just bytes up to `\n`; meaning is the driver's job (spec §1).
//!
//! ```no_run
//! use agent_adaptor_driver::{DriverError, EventSink, Response};
//! use agent_adaptor_process::{Command, Process};
//!
//! async fn run(sink: &dyn EventSink, cancel: tokio_util::sync::CancellationToken)
//!     -> Result<Response, DriverError>
//! {
//!     let mut cmd = Command::new("codex");
//!     cmd.args(["exec", "--json", "hello"]);
//!     let mut process = Process::spawn(&cmd)?;
//!     loop {
//!         let line = tokio::select! {
//!             line = process.next_line(sink) => line,
//!             () = cancel.cancelled() => {
//!                 process.shutdown(sink).await?;
//!                 return Err(DriverError::Cancelled);
//!             }
//!         };
//!         match line {
//!             Ok(Some(line)) => { /* the driver's parser reads line.bytes() */ }
//!             Ok(None) => break,
//!             Err(err) => {
//!                 process.shutdown(sink).await?;
//!                 return Err(err.into());
//!             }
//!         }
//!     }
//!     let finished = process.finish(sink).await?;
//!     let mut response = Response::default();
//!     finished.exit.apply_to(&mut response);
//!     response.raw = finished.into_raw_streams();
//!     Ok(response)
//! }
//! ```
//!
//! ## Design
//!
//! * **Pull-based.** The sink is borrowed (`&dyn EventSink`), so no task may
//!   hold it: output is read inside [`Process::next_line`],
//!   [`Process::finish`] and [`Process::shutdown`], which `select!` over
//!   stdout, stderr, the child's exit, stdin progress and the lifecycle
//!   clock. `next_line` is cancellation safe.
//! * **Raw first.** Each chunk is appended to the capture synchronously, then
//!   split into lines, then emitted; a caller cancelled at any await loses no
//!   captured byte.
//! * **Lines.** Only `\n` ends a line; a `\r` before it is kept. Lines up to
//!   [`Command::max_line_in_memory`] are [`bytes::Bytes`]; longer ones are a
//!   range of the stdout spill file, exposed as a [`RawBytes`].
//! * **Nothing survives.** `finish`/`shutdown` reap the child, bound pipes
//!   held open by grandchildren, and sweep the group with `SIGKILL`;
//!   dropping a live [`Process`] kills the group synchronously.
//! * **Nothing outlives the host.** Every child carries
//!   [`PROCESS_MARK_ENV`]`=<random>` in its environment (inherited by its
//!   descendants); the end of a process (finish, shutdown, drop) also
//!   `SIGKILL`s every process carrying it that started after the child —
//!   double-forked `setsid` daemons re-parented to init included. On Linux
//!   every child gets `PR_SET_PDEATHSIG = SIGKILL`, so it dies with a host
//!   killed by `SIGKILL`; what it started is named in a ledger record
//!   (`<state>/processes/`) that the next host's first spawn, or a
//!   [`sweep`], uses to stop it.
//! * **Turns.** A child that serves several requests in turn (a driver's
//!   resident process) stays a [`Process`] between them:
//!   [`take_capture`](Process::take_capture) hands over the raw bytes of one
//!   turn (stdout up to the last line pulled, stderr so far), byte-exact and
//!   without loss; [`try_wait`](Process::try_wait) tells whether it still
//!   runs; [`StdinController::write_line_counted`] tells "nothing reached the
//!   child" from "part of the request may have".
//!
//! ## Platforms
//!
//! Unix only (tested on Linux): process groups, `killpg` and positional
//! reads of the spill file have no Windows equivalent here (that would need
//! job objects). On other platforms the crate compiles to nothing.
//!
//! What holds where:
//!
//! * **Linux**: all of the above. The parent-death signal is tied to the
//!   *thread* that spawned the child, not the process: tokio's worker
//!   threads (and a current-thread runtime's thread) live as long as the
//!   runtime, so spawn from async code; a child spawned from a
//!   `spawn_blocking` thread, a worker that went through `block_in_place`
//!   or a short-lived thread is killed when that thread ends. The marker
//!   finds only processes of the same user that kept their environment
//!   (`env -i` drops it).
//! * **macOS** (and other unix): process groups, the shutdown sequence and
//!   the final group `SIGKILL` hold; there is no `/proc`, so descendants in
//!   other groups and marked processes are not found, there is no
//!   parent-death signal and no ledger ([`sweep`] finds nothing): a host
//!   killed by `SIGKILL` leaves its children running.
//!
//! A group signal sent after the leader was reaped relies on the kernel not
//! reusing a process id while it still names a process group; if the group
//! is already empty, an unrelated group could in theory have taken the id in
//! the meantime (the same trade-off every process-group library makes).
#![deny(unsafe_code)]

#[cfg(unix)]
mod budget;
#[cfg(unix)]
mod capture;
#[cfg(unix)]
mod command;
#[cfg(unix)]
mod descendants;
#[cfg(unix)]
mod error;
#[cfg(unix)]
mod finished;
#[cfg(unix)]
mod group;
#[cfg(unix)]
mod ledger;
#[cfg(unix)]
mod lines;
#[cfg(unix)]
mod mark;
#[cfg(unix)]
mod pdeathsig;
#[cfg(unix)]
mod process;
#[cfg(unix)]
mod procfs;
#[cfg(unix)]
mod shutdown;
#[cfg(unix)]
mod spawn;
#[cfg(unix)]
mod stdin;
#[cfg(unix)]
mod sweep;

#[cfg(unix)]
pub use budget::{DEFAULT_CAPTURE_MEMORY_BUDGET, MemoryBudget, capture_memory_budget};
#[cfg(unix)]
pub use command::{
    Command, DEFAULT_CLOSE_GRACE, DEFAULT_EXIT_GRACE, DEFAULT_MAX_LINE_IN_MEMORY,
    DEFAULT_SPILL_THRESHOLD, DEFAULT_TERM_GRACE, StdinMode,
};
#[cfg(unix)]
pub use error::ProcessError;
#[cfg(unix)]
pub use finished::{ExitInfo, Finished, Timeline};
#[cfg(unix)]
pub use ledger::{STATE_DIR_ENV, state_dir};
#[cfg(unix)]
pub use lines::Line;
#[cfg(unix)]
pub use mark::PROCESS_MARK_ENV;
#[cfg(unix)]
pub use process::{Captured, Process};
#[cfg(unix)]
pub use stdin::{PartialWrite, StdinController};
#[cfg(unix)]
pub use sweep::{SweepReport, sweep, sweep_dir};

#[cfg(unix)]
#[doc(no_inline)]
pub use agent_adaptor_driver::{EventSink, RawBytes, RunEvent};
