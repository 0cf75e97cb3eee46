//! The command line (clap): subcommands and their flags.
//!
//! Driver names are taken as plain strings and checked by
//! [`DriverName::parse`], so an unknown one is a single clear error line
//! rather than clap's multi-line usage error.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use agent_adaptor_drivers::acp::argv::CUSTOM;
use agent_adaptor_drivers::acp::{AcpAgent, Recipe};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::equip::EquipArgs;
use crate::error::CliError;

/// `agent-adaptor`: run coding agents and LLM APIs behind one API.
#[derive(Debug, Parser)]
#[command(name = "agent-adaptor", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one prompt and render the run live (or as JSON lines).
    ///
    /// Exit codes: 0 success, 1 the run failed, 2 bad usage, 74 the output
    /// could not be written (closed pipe, full disk; the run is
    /// cancelled), 130 cancelled (Ctrl-C).
    Run(RunArgs),
    /// Serve a web chat, AG-UI and raw SSE endpoints, and an A2A server.
    Serve(ServeArgs),
    /// Serve ACP (Agent Client Protocol v1) on stdin/stdout: an editor
    /// runs this command and uses the driver through ACP.
    ///
    /// Sessions are threads in the store; stdout carries only ACP frames
    /// (logs go to stderr); end of stdin ends the server and every run.
    Acp(AcpArgs),
    /// List, show, fork or delete stored threads.
    Threads(ThreadsArgs),
    /// List the agent worktrees of a repository (runs' kept worktrees,
    /// threads' worktrees) or remove a run's kept worktree.
    Worktrees(crate::worktrees::WorktreesArgs),
    /// Report which drivers are usable here: binary, version, auth, models.
    Inspect(InspectArgs),
    /// Run the scripted mock model server (for trying real CLIs offline).
    MockModel(MockModelArgs),
}

/// How approval requests are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApproveMode {
    /// Ask on the terminal (the default when stdin is a terminal).
    Ask,
    /// Approve every permission and plan review; decline questions.
    All,
    /// Deny everything (the default when stdin is not a terminal).
    None,
}

/// Which lines `run --json` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JsonLines {
    /// Every event line, then the result line.
    All,
    /// The event lines only.
    Events,
    /// The result line only.
    Result,
}

impl JsonLines {
    /// Whether event lines are printed.
    pub fn events(self) -> bool {
        self != JsonLines::Result
    }

    /// Whether the result line is printed.
    pub fn result(self) -> bool {
        self != JsonLines::Events
    }
}

/// The LLM API a `--driver llm` run calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderName {
    /// OpenAI Chat Completions (any OpenAI-compatible server).
    Openai,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini.
    Gemini,
    /// OpenRouter (Chat Completions dialect).
    Openrouter,
}

impl ProviderName {
    /// Every provider, in the order auto-selection tries them.
    pub const ALL: [ProviderName; 5] = [
        ProviderName::Anthropic,
        ProviderName::Openai,
        ProviderName::OpenaiResponses,
        ProviderName::Gemini,
        ProviderName::Openrouter,
    ];

    /// The name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderName::Openai => "openai",
            ProviderName::OpenaiResponses => "openai-responses",
            ProviderName::Anthropic => "anthropic",
            ProviderName::Gemini => "gemini",
            ProviderName::Openrouter => "openrouter",
        }
    }

    /// The conventional variable holding the API key.
    pub fn key_var(self) -> &'static str {
        match self {
            ProviderName::Openai | ProviderName::OpenaiResponses => "OPENAI_API_KEY",
            ProviderName::Anthropic => "ANTHROPIC_API_KEY",
            ProviderName::Gemini => "GEMINI_API_KEY",
            ProviderName::Openrouter => "OPENROUTER_API_KEY",
        }
    }

    /// The model used when `--model` is not given.
    pub fn default_model(self) -> &'static str {
        match self {
            ProviderName::Openai | ProviderName::OpenaiResponses => "gpt-4.1-mini",
            ProviderName::Anthropic => "claude-sonnet-4-5",
            ProviderName::Gemini => "gemini-2.5-flash",
            ProviderName::Openrouter => "openrouter/auto",
        }
    }
}

/// A driver the CLI can build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverName {
    /// Claude Code.
    Claude,
    /// Codex.
    Codex,
    /// Cursor Agent.
    Cursor,
    /// CodeBuddy Code.
    Codebuddy,
    /// Gemini CLI.
    Gemini,
    /// An LLM HTTP API (`--provider`).
    Llm,
    /// An ACP agent (`acp:<agent>`, or `acp` with `--acp-command`), by its
    /// launch recipe.
    Acp(&'static Recipe),
}

impl DriverName {
    /// Every driver, in the order auto-selection tries the CLIs.
    pub const ALL: [DriverName; 6] = [
        DriverName::Claude,
        DriverName::Codex,
        DriverName::Gemini,
        DriverName::Cursor,
        DriverName::Codebuddy,
        DriverName::Llm,
    ];

    /// The name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            DriverName::Claude => "claude",
            DriverName::Codex => "codex",
            DriverName::Cursor => "cursor",
            DriverName::Codebuddy => "codebuddy",
            DriverName::Gemini => "gemini",
            DriverName::Llm => "llm",
            DriverName::Acp(recipe) => recipe.driver_type,
        }
    }

    /// Parse a `--driver` value.
    pub fn parse(name: &str) -> Result<DriverName, CliError> {
        if name == CUSTOM.driver_type {
            return Ok(DriverName::Acp(&CUSTOM));
        }
        if let Some(agent) = name.strip_prefix("acp:") {
            return AcpAgent::named(agent)
                .map(|a| DriverName::Acp(a.recipe()))
                .ok_or_else(|| {
                    let names: Vec<&str> = AcpAgent::NAMED.iter().map(|(n, _)| *n).collect();
                    CliError::usage(format!(
                        "unknown ACP agent {agent:?}{} (expected acp:NAME with NAME one of: {}; or --driver acp --acp-command \"CMD ARGS…\")",
                        did_you_mean(agent, names.iter().copied())
                            .map(|n| format!(": did you mean 'acp:{n}'?"))
                            .unwrap_or_default(),
                        names.join(", ")
                    ))
                });
        }
        DriverName::ALL
            .into_iter()
            .find(|d| d.as_str() == name)
            .ok_or_else(|| {
                let names = DriverName::ALL.iter().map(|d| d.as_str()).chain(["acp"]);
                CliError::usage(format!(
                    "unknown driver {name:?}{} (expected one of: claude, codex, cursor, codebuddy, gemini, llm, acp:NAME, acp)",
                    did_you_mean(name, names)
                        .map(|n| format!(": did you mean '{n}'?"))
                        .unwrap_or_default()
                ))
            })
    }
}

/// The candidate closest to a mistyped `input`, when one is close enough
/// (Jaro-Winkler similarity above 0.8, as clap's own suggestions).
pub fn did_you_mean<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(input, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Which driver a run or server uses.
#[derive(Debug, Clone, Args)]
pub struct DriverArgs {
    /// The driver: claude, codex, cursor, codebuddy, gemini, llm, an ACP
    /// agent (acp:gemini, acp:qwen, acp:copilot, acp:opencode, acp:claude,
    /// acp:codex, acp:codebuddy, acp:cursor), or acp with --acp-command.
    /// Without it the first usable CLI (on PATH, with credentials) is used,
    /// else an LLM API whose key is set, else the offline playground.
    #[arg(long, value_name = "NAME")]
    pub driver: Option<String>,
    /// The model (default: the CLI's own; for llm, a per-provider default).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// For `--driver llm`: which API (default: the first whose key is set).
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub provider: Option<ProviderName>,
    /// For `--driver llm`: the API base URL (default: the provider's).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Use the offline playground (the built-in scripted model server)
    /// even when a real driver is usable.
    #[arg(long, conflicts_with_all = ["driver", "provider", "base_url"])]
    pub playground: bool,
    /// For `--driver acp`: the ACP agent's command line, "CMD ARGS…" (split
    /// like a shell does; it must speak ACP on stdio).
    #[arg(long, value_name = "CMD ARGS…")]
    pub acp_command: Option<String>,
    /// Pass this variable of this environment on to the agent CLI
    /// (repeatable; `PREFIX_*` passes every variable starting with
    /// PREFIX_). Without it the CLI gets only PATH, HOME, locale, terminal,
    /// proxy and CA settings and its own documented variables
    /// (`ANTHROPIC_*`, `OPENAI_*` …), never the whole environment.
    #[arg(long = "env", value_name = "NAME", value_parser = crate::select::env_name)]
    pub env: Vec<String>,
}

/// How many events `run --thread` keeps in the thread's event log.
pub const DEFAULT_KEEP_EVENTS: u64 = 10_000;

/// `agent-adaptor run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The driver.
    #[command(flatten)]
    pub driver: DriverArgs,
    /// Run under this thread key: the conversation continues across runs.
    #[arg(long, value_name = "KEY")]
    pub thread: Option<String>,
    /// With `--thread NEW`: start NEW as a fork of this thread (the provider
    /// forks its session on this run).
    #[arg(long, value_name = "KEY", requires = "thread")]
    pub fork_from: Option<String>,
    /// With `--thread`: start a fresh session on the key instead of
    /// continuing the stored one (which stays, archived; `threads show KEY`
    /// lists it). Without it a thread whose session this driver cannot
    /// continue (another driver, model or configuration) is refused.
    #[arg(long, requires = "thread", conflicts_with = "fork_from")]
    pub new_session: bool,
    /// With `--thread`: keep the newest N events of the thread's runs in
    /// its event log (`threads show KEY --events`); 0 records nothing.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_KEEP_EVENTS)]
    pub keep_events: u64,
    /// The thread store: `sqlite:PATH` (default: a file in the user's data
    /// directory) or `postgres://…`.
    #[arg(long, value_name = "STORE")]
    pub store: Option<String>,
    /// The agent's working directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Run in a git worktree of the `--cwd` repository, on a new branch from
    /// HEAD: `agent/<thread>` for a thread (kept across its turns, removed
    /// by `threads delete`), else `agent/<run id>` (kept after the run; see
    /// `worktrees list` and `worktrees remove`).
    #[arg(long)]
    pub worktree: bool,
    /// `--diff`, `--service`, `--service-ready`.
    #[command(flatten)]
    pub resources: crate::run_resources::ResourceArgs,
    /// Request structured output matching this JSON Schema file.
    #[arg(long, value_name = "FILE")]
    pub schema: Option<PathBuf>,
    /// Print JSON lines instead of rendering: `--json` (or `--json=all`)
    /// one object per event, then a result line; `--json=events` the
    /// event lines only; `--json=result` the result line only. With
    /// `--json`/`--json=result` the last stdout line is the result line,
    /// also when the run fails before it starts.
    #[arg(
        long,
        value_enum,
        value_name = "LINES",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "all"
    )]
    pub json: Option<JsonLines>,
    /// With `--json`: leave out the agent CLI's raw output lines
    /// (`process.stdout`, `process.stderr`; often most of the lines). The
    /// `process.spawn` line and every parsed event stay.
    #[arg(long, requires = "json")]
    pub no_raw: bool,
    /// How approvals are answered (default: ask on a terminal, none otherwise).
    #[arg(long, value_enum, value_name = "MODE")]
    pub approve: Option<ApproveMode>,
    /// End the run after this long, as failed (`deadline_exceeded`), with
    /// the agent CLI stopped: `90s`, `5m`, `1h`, `500ms`, or plain seconds.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub timeout: Option<Duration>,
    /// Give the agent CLI this whole environment, as before the allowlist
    /// (every variable, secrets included). Only for a CLI you trust with
    /// all of them; `--env NAME` passes one variable.
    #[arg(long, conflicts_with = "env")]
    pub inherit_env: bool,
    /// Instructions, MCP servers, skills and the profile of the run.
    #[command(flatten)]
    pub equip: EquipArgs,
    /// The prompt.
    #[arg(value_name = "PROMPT", required = true, num_args = 1.., trailing_var_arg = true)]
    pub prompt: Vec<String>,
}

/// `agent-adaptor serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The driver.
    #[command(flatten)]
    pub driver: DriverArgs,
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:8787", value_name = "ADDR")]
    pub addr: SocketAddr,
    /// The thread store: `sqlite:PATH` (default: a file in the user's data
    /// directory) or `postgres://…` (shared by several `serve` instances).
    #[arg(long, value_name = "STORE")]
    pub store: Option<String>,
    /// The agents' working directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The access token (at least 16 printable characters). Default: the
    /// `AGENT_ADAPTOR_TOKEN` environment variable, else a random one. Every
    /// request needs it (`Authorization: Bearer <token>`, or the session
    /// cookie the page gets from the printed URL).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Serve without authentication. Only with a loopback `--addr`; anyone
    /// who can reach that address (every local user and process) can then
    /// run prompts and answer approvals.
    #[arg(long, conflicts_with = "token")]
    pub no_auth: bool,
    /// Also answer requests whose `Host` is NAME (besides localhost and
    /// loopback addresses), e.g. the name a proxy forwards. Repeatable.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Also accept state-changing requests from web pages of ORIGIN
    /// (`https://host[:port]`). Repeatable.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// Concurrent runs per client (session or token); more get 429.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub max_runs_per_client: usize,
    /// At most this many open connections (default: from the file
    /// descriptor limit, leaving room for the store and children). At the
    /// limit the oldest idle connection is closed to make room.
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// This server's stable name in the thread store's leases (default
    /// `<hostname>:<port>`). A restart with the same name frees the threads
    /// the previous process held when it died (and records their
    /// interrupted runs) at once; instances sharing a store need distinct
    /// names. No `@` or `/`.
    #[arg(long, value_name = "NAME")]
    pub instance_id: Option<String>,
    /// Seconds a thread's lease lasts without renewal (renewed every third
    /// of it; at least 1). Also how soon after a host sharing the store dies
    /// its threads are free again (between two thirds and four thirds of
    /// it): every instance sweeps expired leases every third of its TTL,
    /// records their runs as interrupted and expires their pending
    /// approvals.
    #[arg(long, default_value_t = 30, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub lease_ttl: u64,
    /// Seconds SIGTERM/Ctrl-C lets requests and streams finish before every
    /// run is cancelled and every connection closed.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub shutdown_grace: u64,
    /// Keep the newest N events of each web thread's log (the runs the page
    /// replays after a reload or a reconnect to another instance); older
    /// runs are pruned when a run ends. 0 records nothing (reconnects then
    /// replay from memory only, on the same instance).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_KEEP_EVENTS)]
    pub keep_events: u64,
    /// The operator log on stderr (runs, approvals and who answered them,
    /// refused requests): `text` (key=value) or `json` (one object a line).
    /// Its level comes from `AGENT_ADAPTOR_LOG` (error, warn, info, debug;
    /// default info).
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    pub log_format: LogFormat,
    /// Allow A2A push notifications to webhooks on `HOST[:PORT]` (a DNS
    /// name, an IPv4 literal or a bracketed IPv6 literal; without a port,
    /// any port). Repeatable. Without it push is off. A name resolving to
    /// a loopback, private, link-local, CGNAT or multicast address is
    /// refused unless the entry is that IP literal (or `localhost`).
    #[arg(long = "push-allow-host", value_name = "HOST[:PORT]")]
    pub push_allow_hosts: Vec<String>,
    /// The file holding the secret that signs push deliveries (at least 16
    /// bytes; default: the `AGENT_ADAPTOR_PUSH_SECRET` environment
    /// variable). Required with `--push-allow-host`.
    #[arg(long, value_name = "PATH")]
    pub push_secret_file: Option<PathBuf>,
    /// Instructions, MCP servers, skills and the profile: the defaults of
    /// every run of the server.
    #[command(flatten)]
    pub equip: EquipArgs,
}

/// `agent-adaptor acp`.
#[derive(Debug, Clone, Args)]
pub struct AcpArgs {
    /// The driver.
    #[command(flatten)]
    pub driver: DriverArgs,
    /// The thread store: `sqlite:PATH` (default: a file in the user's data
    /// directory) or `postgres://…`. Sessions are its threads.
    #[arg(long, value_name = "STORE")]
    pub store: Option<String>,
    /// The directory the llm agent's host tools work in (default: the
    /// current directory). Each session's runs work in the session's own
    /// `cwd`.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Give the agent CLI this whole environment (every variable, secrets
    /// included); `--env NAME` passes one variable.
    #[arg(long, conflicts_with = "env")]
    pub inherit_env: bool,
    /// The log on stderr: `text` or `json`. Its level comes from
    /// `AGENT_ADAPTOR_LOG` (default info).
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    pub log_format: LogFormat,
    /// Instructions, MCP servers, skills and the profile: the defaults of
    /// every session (a session's own MCP servers come on top).
    #[command(flatten)]
    pub equip: EquipArgs,
}

/// The format of `serve`'s operator log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// `key=value` lines.
    Text,
    /// One JSON object a line.
    Json,
}

/// `agent-adaptor threads`.
#[derive(Debug, Clone, Args)]
pub struct ThreadsArgs {
    /// The thread store (as for `run`).
    #[arg(long, global = true, value_name = "STORE")]
    pub store: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// The repository whose thread worktrees `show` and `delete` look at
    /// (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: ThreadsCommand,
}

/// The `threads` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum ThreadsCommand {
    /// List the threads that have an active record.
    List,
    /// Show a thread's record (and its conversation, for llm threads) and
    /// the tools always allowed in it.
    Show {
        /// The thread key.
        key: String,
        /// Show the thread's recorded events instead (with `--json`: the
        /// lines of `run --json`, each with its `cursor`).
        #[arg(long)]
        events: bool,
        /// With `--events`: only the events after this cursor.
        #[arg(long, value_name = "N", requires = "events", conflicts_with = "tail")]
        since: Option<u64>,
        /// With `--events`: only the last N events.
        #[arg(long, value_name = "N", requires = "events")]
        tail: Option<u64>,
    },
    /// Copy thread KEY to NEW (llm threads; CLI threads fork with
    /// `run --thread NEW --fork-from KEY`).
    Fork {
        /// The source key.
        key: String,
        /// The new key (must not exist).
        new: String,
    },
    /// Stop always allowing TOOL in thread KEY (granted by answering `a`
    /// at a `run --thread` approval prompt); its next request asks again.
    Revoke {
        /// The thread key.
        key: String,
        /// The tool name, as `threads show KEY` lists it.
        tool: String,
    },
    /// Delete a thread: every record and its lease.
    Delete {
        /// The thread key.
        key: String,
    },
}

/// `agent-adaptor inspect`.
#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    /// Only this driver (`claude`, `acp:qwen`, `llm:openai` …), or a whole
    /// family (`acp`, `llm`).
    #[arg(long, value_name = "NAME")]
    pub driver: Option<String>,
    /// Print JSON (`{"drivers":[…]}`) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `agent-adaptor mock-model`.
#[derive(Debug, Clone, Args)]
pub struct MockModelArgs {
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:8788", value_name = "ADDR")]
    pub addr: SocketAddr,
    /// A script file (JSON; see the testkit's `Script`). Default: the
    /// playground's script.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
}

/// A duration on the command line: a positive number with an optional unit,
/// `ms`, `s` (the default), `m` or `h` (`30`, `30s`, `1.5m`, `500ms`).
pub fn duration(value: &str) -> Result<Duration, String> {
    let v = value.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let not_positive = || format!("{value:?} is not a positive duration (e.g. 30s, 5m)");
    if number.is_empty() {
        return Err(not_positive());
    }
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("{value:?}: the unit must be ms, s, m or h")),
    };
    let secs = number
        .parse::<f64>()
        .ok()
        .map(|n| n * scale)
        .filter(|s| s.is_finite() && *s > 0.0)
        .ok_or_else(not_positive)?;
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{value:?}: {e}"))
}

#[cfg(test)]
mod duration_tests {
    use super::*;

    #[test]
    fn a_mistyped_driver_gets_a_suggestion() {
        let e = DriverName::parse("claud").unwrap_err();
        assert!(e.message.contains("did you mean 'claude'?"), "{e}");
        let e = DriverName::parse("acp:qwn").unwrap_err();
        assert!(e.message.contains("did you mean 'acp:qwen'?"), "{e}");
        let e = DriverName::parse("zzzzzz").unwrap_err();
        assert!(!e.message.contains("did you mean"), "{e}");
    }

    #[test]
    fn durations_take_a_unit_or_plain_seconds() {
        assert_eq!(duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("1.5m"), Ok(Duration::from_secs(90)));
        for bad in ["", "0", "0s", "-1s", "abc", "5 days", "1e3", "s", "1.2.3s"] {
            assert!(duration(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
