//! `agent-adaptor-bench`: agent-adaptor side by side with the official SDKs
//! and the raw pipe, on the same workloads, on the same machine, in one run.
//!
//! Run it with `scripts/bench` (release build, the pinned SDKs installed,
//! the plot drawn); `docs/performance.md` explains the figures.
//!
//! ```text
//! agent-adaptor-bench run [--quick] [--no-sdk] [--skip-big] [--work-dir DIR]
//!     [--fake PATH] [--cli PATH] [--node-dir DIR] [--sizes 10000,50000,200000] [--reps N]
//!     [--latency-lines N] [--latency-delay-ms N] [--latency-reps N]
//!     [--concurrent-runs N] [--concurrent-lines N] [--single-rounds N]
//!     [--concurrent-reps N] [--big-bytes N]
//! agent-adaptor-bench gen --kind claude|codex (--lines N | --bytes N)
//!     [--seed N] [--stamp] --out FILE
//! agent-adaptor-bench child --contender NAME --kind K --fake PATH
//!     --workload FILE [--delay-ms N] [--latency] [--cli PATH]
//! agent-adaptor-bench concurrent --kind K --fake PATH --workload FILE
//!     --runs N --rounds N
//! agent-adaptor-bench serve-load [--server PATH] [--runs N] [--rounds N]
//!     [--work-dir DIR]
//! agent-adaptor-bench host-death [--server PATH] [--fake PATH] [--reps N]
//!     [--work-dir DIR]
//! agent-adaptor-bench host-tools [--calls N] [--warmup N]
//! agent-adaptor-bench acp-first-delta [--reps N]
//! agent-adaptor-bench acp-server [--updates N] [--reps N]
//! agent-adaptor-bench event-log [--events N] [--reps N] [--pg URL]
//! agent-adaptor-bench cluster [--server PATH] [--instances 1,3] [--threads 300]
//!     [--turns 2] [--concurrency 100] [--claude-threads 10] [--no-kill]
//!     [--lease-ttl SECS] [--approvals-anywhere] [--a2a-anywhere] [--agui-reattach]
//!     [--work-dir DIR]
//! ```
//!
//! `run` is the orchestrator ([`bench`](mod@bench)); `child` and `concurrent` are the
//! measured processes it starts ([`child`], [`concurrent`]); `gen` writes one
//! workload ([`workload`]). `serve-load` is on its own: `agent-adaptor serve`
//! under many concurrent SSE runs ([`serve_load`]). `host-death` times how
//! long after `agent-adaptor run` is killed (or hung up) the last process
//! of its run is gone ([`host_death`]). `host-tools` times one no-op host
//! tool call over each channel against a direct call ([`host_tools`]).
//! `acp-first-delta` times the real Gemini CLI from `run()` to its first
//! text delta over ACP and over stream-json ([`acp_first_delta`]).
//! `acp-server` times what the ACP server adds per update over the run's
//! own event stream ([`acp_server`]). `event-log` times the event log
//! recorder against the same thread run without it, and the replay rate
//! ([`event_log`]). `cluster` runs several `serve` instances over one
//! PostgreSQL (`PG_TEST_URL`) under load and a SIGKILL, checks that no turn
//! is lost or run twice, and measures them ([`cluster`]).

mod acp_first_delta;
mod acp_server;
mod args;
mod bench;
mod child;
mod cli_json;
mod cluster;
mod concurrent;
mod event_log;
mod host_death;
mod host_tools;
mod ordered;
mod report;
mod serve_load;
mod sse_client;
mod usage;
mod workload;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use args::Args;
use child::{Contender, Setup};
use workload::{Kind, Spec, Until};

const USAGE: &str = "usage: agent-adaptor-bench run|gen|child|concurrent|serve-load|cluster|host-death|host-tools|acp-first-delta|acp-server|event-log [flags] (see the crate docs; scripts/bench runs everything)";

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = argv.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let outcome = Args::parse(rest).and_then(|args| match command.as_str() {
        "run" => cmd_run(&args),
        "gen" => cmd_gen(&args),
        "child" => cmd_child(&args),
        "concurrent" => cmd_concurrent(&args),
        "serve-load" => cmd_serve_load(&args),
        "cluster" => cmd_cluster(&args),
        "host-death" => cmd_host_death(&args),
        "host-tools" => cmd_host_tools(&args),
        "acp-first-delta" => cmd_acp_first_delta(&args),
        "acp-server" => cmd_acp_server(&args),
        "event-log" => cmd_event_log(&args),
        other => Err(format!("unknown command {other:?}\n{USAGE}")),
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent-adaptor-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (this crate is `crates/bench`).
fn workspace() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dir.canonicalize().unwrap_or(dir)
}

/// `fake-cli` beside this binary (both are built into the same target
/// directory), or `$AGENT_ADAPTOR_FAKE_CLI`.
fn default_fake() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("AGENT_ADAPTOR_FAKE_CLI") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let beside = exe.with_file_name(format!("fake-cli{}", std::env::consts::EXE_SUFFIX));
    if beside.exists() {
        Ok(beside)
    } else {
        Err(format!(
            "no fake-cli at {} (build it: cargo build --release -p agent-adaptor-testkit --bin fake-cli), or pass --fake",
            beside.display()
        ))
    }
}

fn kind(args: &Args) -> Result<Kind, String> {
    let k = args.require("--kind")?;
    Kind::parse(k).ok_or_else(|| format!("--kind: {k:?} is not claude or codex"))
}

fn setup(args: &Args) -> Result<Setup, String> {
    Ok(Setup {
        kind: kind(args)?,
        fake: args.path("--fake")?,
        workload: args.path("--workload")?,
        delay_ms: args.number("--delay-ms", 0)?,
        latency: args.switch("--latency"),
        cli: args.get("--cli").map(PathBuf::from),
    })
}

fn cmd_run(args: &Args) -> Result<(), String> {
    let work_dir = args
        .get("--work-dir")
        .map_or_else(|| workspace().join("target/bench"), PathBuf::from);
    let fake = match args.get("--fake") {
        Some(p) => PathBuf::from(p),
        None => default_fake()?,
    };
    let node_dir = args
        .get("--node-dir")
        .map_or_else(|| workspace().join("tests/bench"), PathBuf::from);
    let mut plan = if args.switch("--quick") {
        bench::Plan::quick(work_dir, fake, node_dir)
    } else {
        bench::Plan::full(work_dir, fake, node_dir)
    };
    plan.sdk = !args.switch("--no-sdk");
    plan.cli = args.get("--cli").map(PathBuf::from);
    plan.sizes = args.numbers("--sizes", &plan.sizes)?;
    plan.reps = args.number("--reps", plan.reps)?;
    plan.latency_lines = args.number("--latency-lines", plan.latency_lines)?;
    plan.latency_delay_ms = args.number("--latency-delay-ms", plan.latency_delay_ms)?;
    plan.latency_reps = args.number("--latency-reps", plan.latency_reps)?;
    plan.concurrent_runs = args.number("--concurrent-runs", plan.concurrent_runs)?;
    plan.concurrent_lines = args.number("--concurrent-lines", plan.concurrent_lines)?;
    plan.single_rounds = args.number("--single-rounds", plan.single_rounds)?;
    plan.concurrent_reps = args.number("--concurrent-reps", plan.concurrent_reps)?;
    plan.big_bytes = args.number("--big-bytes", plan.big_bytes)?;
    if args.switch("--skip-big") {
        plan.big_bytes = 0;
    }
    if plan.sdk && !plan.node_dir.join("node_modules").exists() {
        return Err(format!(
            "{} has no node_modules: run scripts/bench (it runs npm ci), or pass --no-sdk",
            plan.node_dir.display()
        ));
    }
    std::fs::create_dir_all(&plan.work_dir).map_err(|e| e.to_string())?;
    let results = bench::run(&plan, &mut |line| eprintln!("{line}"))?;
    let failed: usize = results.summary.iter().map(|s| s.failed as usize).sum();
    println!("{}", report::markdown(&results));
    eprintln!(
        "wrote {} and results.md",
        plan.work_dir.join("results.json").display()
    );
    if failed > 0 {
        return Err(format!("{failed} measured run(s) failed; see results.json"));
    }
    Ok(())
}

fn cmd_gen(args: &Args) -> Result<(), String> {
    let until = match (args.get("--lines"), args.get("--bytes")) {
        (Some(_), None) => Until::Lines(args.number("--lines", 0)?),
        (None, Some(_)) => Until::Bytes(args.number("--bytes", 0)?),
        _ => return Err("give one of --lines N or --bytes N".into()),
    };
    let spec = Spec {
        kind: kind(args)?,
        until,
        seed: args.number("--seed", bench::SEED)?,
        stamp: args.switch("--stamp"),
    };
    let out = args.path("--out")?;
    let stats = workload::generate(&spec, &out).map_err(|e| e.to_string())?;
    println!(
        "{}",
        serde_json::to_string(&stats).map_err(|e| e.to_string())?
    );
    Ok(())
}

fn cmd_child(args: &Args) -> Result<(), String> {
    let name = args.require("--contender")?;
    let contender =
        Contender::parse(name).ok_or_else(|| format!("--contender: unknown {name:?}"))?;
    let report = child::run(contender, &setup(args)?);
    println!(
        "{}",
        serde_json::to_string(&report).map_err(|e| e.to_string())?
    );
    Ok(())
}

fn cmd_concurrent(args: &Args) -> Result<(), String> {
    let report = concurrent::run(
        &setup(args)?,
        args.number("--runs", 1)?,
        args.number("--rounds", 1)?,
    )?;
    println!(
        "{}",
        serde_json::to_string(&report).map_err(|e| e.to_string())?
    );
    Ok(())
}

fn cmd_serve_load(args: &Args) -> Result<(), String> {
    let plan = serve_load::Plan {
        server: match args.get("--server") {
            Some(p) => PathBuf::from(p),
            None => serve_load::default_server()?,
        },
        runs: args.number("--runs", 500)?,
        rounds: args.number("--rounds", 3)?,
        work_dir: args
            .get("--work-dir")
            .map_or_else(|| serve_load::default_work_dir(&workspace()), PathBuf::from),
    };
    let phases = serve_load::run(&plan)?;
    println!("{}", serve_load::markdown(&phases));
    let failed: usize = phases.iter().map(|p| p.failed).sum();
    if failed > 0 {
        return Err(format!("{failed} stream(s) were not complete and ordered"));
    }
    Ok(())
}

fn cmd_cluster(args: &Args) -> Result<(), String> {
    let server = match args.get("--server") {
        Some(p) => PathBuf::from(p),
        None => serve_load::default_server()?,
    };
    let plan = cluster::Plan {
        // The instances run in their own directories.
        server: std::fs::canonicalize(&server).map_err(|e| format!("{}: {e}", server.display()))?,
        pg_url: std::env::var("PG_TEST_URL")
            .ok()
            .filter(|u| !u.is_empty())
            .ok_or("PG_TEST_URL is not set (run under scripts/with-postgres)")?,
        instances: args
            .numbers("--instances", &[1, 3])?
            .into_iter()
            .map(|n| usize::try_from(n.max(1)).unwrap_or(1))
            .collect(),
        threads: args.number("--threads", 300)?,
        turns: args.number("--turns", 2)?,
        concurrency: args.number("--concurrency", 100)?,
        kill: !args.switch("--no-kill"),
        claude_threads: args.number("--claude-threads", 10)?,
        lease_ttl: args
            .get("--lease-ttl")
            .map(|_| args.number("--lease-ttl", 30))
            .transpose()?,
        switches: cluster::Switches {
            approvals_anywhere: args.switch("--approvals-anywhere"),
            a2a_anywhere: args.switch("--a2a-anywhere"),
            lease: args.get("--lease-ttl").is_some(),
            agui_reattach: args.switch("--agui-reattach"),
        },
        work_dir: args
            .get("--work-dir")
            .map_or_else(|| workspace().join("target/bench/cluster"), PathBuf::from),
    };
    let phases = cluster::run(&plan)?;
    println!("{}", cluster::markdown(&phases));
    let failed: usize = phases.iter().map(cluster::Phase::failed_checks).sum();
    if failed > 0 {
        return Err(format!("{failed} cluster check(s) failed (see the table)"));
    }
    Ok(())
}

fn cmd_host_death(args: &Args) -> Result<(), String> {
    let plan = host_death::Plan {
        server: match args.get("--server") {
            Some(p) => PathBuf::from(p),
            None => serve_load::default_server()?,
        },
        fake: match args.get("--fake") {
            Some(p) => PathBuf::from(p),
            None => default_fake()?,
        },
        reps: args.number("--reps", 30)?,
        work_dir: args
            .get("--work-dir")
            .map_or_else(|| host_death::default_work_dir(&workspace()), PathBuf::from),
    };
    let reps = host_death::run(&plan)?;
    println!("{}", host_death::markdown(&reps));
    Ok(())
}

fn cmd_acp_server(args: &Args) -> Result<(), String> {
    let plan = acp_server::Plan {
        updates: args.number("--updates", 2000)?,
        reps: args.number("--reps", 5)?,
    };
    let figures = acp_server::run(&plan)?;
    eprintln!(
        "{}",
        serde_json::to_string(&figures).map_err(|e| e.to_string())?
    );
    println!("{}", acp_server::markdown(&figures));
    Ok(())
}

fn cmd_host_tools(args: &Args) -> Result<(), String> {
    let plan = host_tools::Plan {
        calls: args.number("--calls", 5000)?,
        warmup: args.number("--warmup", 500)?,
    };
    let figures = host_tools::run(&plan)?;
    eprintln!(
        "{}",
        serde_json::to_string(&figures).map_err(|e| e.to_string())?
    );
    println!("{}", host_tools::markdown(&figures));
    Ok(())
}

fn cmd_acp_first_delta(args: &Args) -> Result<(), String> {
    let plan = acp_first_delta::Plan {
        reps: args.number("--reps", 7)?,
    };
    let figures = acp_first_delta::run(&plan)?;
    eprintln!(
        "{}",
        serde_json::to_string(&figures).map_err(|e| e.to_string())?
    );
    println!("{}", acp_first_delta::markdown(&figures));
    Ok(())
}

fn cmd_event_log(args: &Args) -> Result<(), String> {
    let plan = event_log::Plan {
        events: args.number("--events", 5000)?,
        reps: args.number("--reps", 5)?,
        pg: args
            .get("--pg")
            .map(str::to_owned)
            .or_else(|| std::env::var("PG_TEST_URL").ok().filter(|u| !u.is_empty())),
    };
    let figures = event_log::run(&plan)?;
    eprintln!(
        "{}",
        serde_json::to_string(&figures).map_err(|e| e.to_string())?
    );
    println!("{}", event_log::markdown(&figures));
    Ok(())
}
