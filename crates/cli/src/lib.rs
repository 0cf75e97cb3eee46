//! # agent-adaptor-cli
//!
//! The `agent-adaptor` binary: the library's pipeline at a terminal and on
//! the web.
//!
//! ```text
//! agent-adaptor run "hello"                         # live rendering; the playground when nothing else is usable
//! agent-adaptor run --driver claude --thread t1 "…" # a real CLI, a durable thread
//! agent-adaptor run --json "…"                      # one JSON object per event, then a result line
//! agent-adaptor run --json=result --no-raw "…"      # only the result line (=events: only event lines)
//! agent-adaptor run --thread t1 --new-session "…"   # a fresh session on t1; the old one stays, archived
//! agent-adaptor serve                               # web chat at http://127.0.0.1:8787/ (AG-UI, raw SSE, A2A)
//! agent-adaptor acp [--driver X]                   # ACP (v1) on stdio, for editors
//! agent-adaptor threads list | show KEY [--events [--since N | --tail N]] | fork KEY NEW | delete KEY
//! agent-adaptor inspect [--json] [--driver X]       # binary, version, auth, dirs, models, health
//! agent-adaptor mock-model [--addr 127.0.0.1:8788]  # the scripted mock model server
//! ```
//!
//! What each part owns:
//!
//! * [`args`] — the command line (clap); [`error`] — one-line failures and
//!   exit codes (0 success, 1 failure, 2 usage, 74 output closed or failing,
//!   128 + the signal when cancelled: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP);
//!   [`signals`] — the three signals that stop `run` and `serve` alike.
//! * [`host_record`] — after a host was killed: the process ledger swept
//!   at start, and the threads a dead `run` held freed, its runs recorded
//!   as interrupted.
//! * [`select`] — which driver runs: `--driver` exactly (never a silent
//!   fallback), else the first usable agent CLI, else an LLM API whose key
//!   is set, else the [`playground`].
//! * [`tools`] — the host tools the `llm` agent (the library's
//!   multi-step `LlmDriver`) gets: `list_files`, approved before each call.
//! * [`run`], [`render`], [`approve`], [`json_out`] — `run`: live
//!   rendering, terminal approvals, Ctrl-C, JSON lines;
//!   [`thread_refusal`] — a thread whose session this driver cannot
//!   continue is refused with the commands that go on.
//! * [`serve`] — the web chat page, AG-UI and raw SSE, A2A, thread API.
//! * [`acp`] — ACP on stdio: every driver for editors.
//! * [`threads`], [`inspect`], [`mock_model`], [`store`] — the other
//!   commands and `--store`.
//!
//! Unlike the library crates, this one depends on `agent-adaptor-testkit`:
//! the playground and `mock-model` embed its mock model server. It is
//! therefore not published.
#![forbid(unsafe_code)]

pub mod acp;
pub mod approve;
pub mod args;
pub mod equip;
pub mod error;
pub mod host_record;
pub mod inspect;
pub mod json_out;
pub mod mock_model;
pub mod playground;
pub mod render;
pub mod render_observe;
pub mod run;
pub mod run_resources;
pub mod select;
pub mod serve;
pub mod signals;
pub mod store;
pub mod thread_events;
pub mod thread_policy;
pub mod thread_refusal;
pub mod threads;
pub mod tool_view;
pub mod tools;
pub mod worktrees;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::error::{CliError, EXIT_USAGE};

/// Parse the command line, run the command, and turn its outcome into the
/// exit code, printing a failure as one line on stderr.
pub fn main_entry() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        eprintln!(
            "agent-adaptor: internal error: {} (please report it)",
            error::one_line(&what)
        );
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // Kept whole: the first line says what is wrong, the rest
            // names the missing arguments, suggests a mistyped subcommand
            // or flag ("tip: a similar …") and gives the usage line.
            let text = e.to_string();
            let text = text.trim_end().trim_start_matches("error: ");
            eprintln!("agent-adaptor: error: {text}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agent-adaptor: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(dispatch(cli.command));
    // Background work (a blocked stdin read, a server task) must not hold
    // the exit up.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // A hung-up terminal fails the write; the exit code still tells.
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "agent-adaptor: error: {}", e.one_line());
            ExitCode::from(e.code)
        }
    }
}

async fn dispatch(command: Command) -> Result<(), CliError> {
    match command {
        Command::Run(args) => run::run(args).await,
        Command::Serve(args) => serve::serve(args).await,
        Command::Acp(args) => acp::acp(args).await,
        Command::Threads(args) => threads::threads(args).await,
        Command::Worktrees(args) => worktrees::worktrees(args).await,
        Command::Inspect(args) => inspect::inspect(args).await,
        Command::MockModel(args) => mock_model::mock_model(args).await,
    }
}
