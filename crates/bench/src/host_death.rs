//! How long after its host dies the last process of a run is gone
//! (`agent-adaptor-bench host-death …`).
//!
//! Each repetition starts `agent-adaptor run --driver claude --json` with
//! the testkit's tree stand-in (`proc_tree`: the CLI, a tool in its group,
//! a `setsid` daemon, all recorded by PID and start time), waits until the
//! three run and the answer streams, then:
//!
//! * **SIGKILL**: times the CLI's death (its parent-death signal), then
//!   starts the next `agent-adaptor run` (a playground run, so no CLI of
//!   its own) at once and times until the tool and the daemon are gone
//!   (its sweep of the process ledger);
//! * **SIGHUP**: times until all three are gone (`run` cancels like
//!   Ctrl-C and stops everything itself).
//!
//! Processes are polled through `/proc` every millisecond. The summary
//! (median and maximum of each figure) is a Markdown table on stdout; each
//! repetition prints one JSON line on stderr.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_adaptor_testkit::proc_tree::{self, PASS_ENV, Proc, RunPids, TreeStandIn};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::Serialize;

/// How long any one wait may take before the repetition fails.
const BOUND: Duration = Duration::from_secs(10);

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `agent-adaptor` binary.
    pub server: PathBuf,
    /// The testkit's `fake-cli`.
    pub fake: PathBuf,
    /// Repetitions of each signal.
    pub reps: usize,
    /// Home of the runs (state directory, pid files), made anew.
    pub work_dir: PathBuf,
}

/// One repetition's figures, ms.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Rep {
    /// SIGKILL of the host → the CLI gone.
    pub kill_cli_gone_ms: f64,
    /// Start of the next `run` → the tool and the daemon gone.
    pub next_start_all_gone_ms: f64,
    /// SIGKILL of the host → the last descendant gone, the next `run`
    /// started at once.
    pub kill_all_gone_ms: f64,
    /// SIGHUP of the host → the last descendant gone.
    pub hup_all_gone_ms: f64,
}

/// Runs the plan.
pub fn run(plan: &Plan) -> Result<Vec<Rep>, String> {
    // The runs start in the work directory: relative paths would move.
    let absolute = |p: &Path| std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
    let plan = &Plan {
        server: absolute(&plan.server)?,
        fake: absolute(&plan.fake)?,
        ..plan.clone()
    };
    let _ = std::fs::remove_dir_all(&plan.work_dir);
    std::fs::create_dir_all(&plan.work_dir).map_err(|e| e.to_string())?;
    // 400 lines 50 ms apart: 20 s of stream, far longer than a repetition.
    let cli = TreeStandIn::new(&plan.fake, 400).map_err(|e| format!("stand-in: {e}"))?;
    let mut reps = Vec::with_capacity(plan.reps);
    for n in 0..plan.reps {
        let mut rep = Rep::default();
        let (mut host, run) = start(plan, &cli, n * 2)?;
        let t0 = Instant::now();
        signal(&host, Signal::SIGKILL)?;
        let leader = run.leader.ok_or("no leader recorded")?;
        let cli_gone = gone_after(&[leader], t0)?;
        let _ = host.wait();
        let t1 = Instant::now();
        let mut next = command(plan, &cli, &plan.work_dir.join("pids-next"))
            .args(["run", "--playground", "--json", "hi"])
            .spawn()
            .map_err(|e| format!("next run: {e}"))?;
        let all_gone = gone_after(&run.all(), t1)?;
        let _ = next.wait();
        rep.kill_cli_gone_ms = ms(cli_gone - t0);
        rep.next_start_all_gone_ms = ms(all_gone - t1);
        rep.kill_all_gone_ms = ms(all_gone - t0);

        let (mut host, run) = start(plan, &cli, n * 2 + 1)?;
        let t0 = Instant::now();
        signal(&host, Signal::SIGHUP)?;
        let all_gone = gone_after(&run.all(), t0)?;
        let _ = host.wait();
        rep.hup_all_gone_ms = ms(all_gone - t0);
        eprintln!(
            "{}",
            serde_json::to_string(&rep).map_err(|e| e.to_string())?
        );
        reps.push(rep);
    }
    Ok(reps)
}

/// A summary row: its label and the figure it shows.
type Row = (&'static str, fn(&Rep) -> f64);

/// The summary: median and maximum of each figure.
pub fn markdown(reps: &[Rep]) -> String {
    let rows: [Row; 4] = [
        (
            "SIGKILL of the host → the CLI gone (parent-death signal)",
            |r| r.kill_cli_gone_ms,
        ),
        (
            "next `run` started → tool and `setsid` daemon gone (ledger sweep)",
            |r| r.next_start_all_gone_ms,
        ),
        (
            "SIGKILL of the host → last descendant gone (next `run` at once)",
            |r| r.kill_all_gone_ms,
        ),
        ("SIGHUP of the host → last descendant gone", |r| {
            r.hup_all_gone_ms
        }),
    ];
    let mut out = format!(
        "| host death, {} repetitions | median ms | max ms |\n|---|---:|---:|\n",
        reps.len()
    );
    for (label, pick) in rows {
        let values: Vec<f64> = reps.iter().map(pick).collect();
        let max = values.iter().copied().fold(0.0, f64::max);
        out.push_str(&format!(
            "| {label} | {:.1} | {max:.1} |\n",
            crate::report::median(values)
        ));
    }
    out
}

/// The default work directory.
pub fn default_work_dir(workspace: &Path) -> PathBuf {
    workspace.join("target/bench/host-death")
}

/// `agent-adaptor` with the stand-in on `PATH`, the plan's state
/// directory, and its PIDs written to `pids`.
fn command(plan: &Plan, cli: &TreeStandIn, pids: &Path) -> Command {
    let mut cmd = Command::new(&plan.server);
    cmd.env_clear()
        .env("PATH", cli.path_var())
        .env("HOME", &plan.work_dir)
        .env("AGENT_ADAPTOR_HOME", plan.work_dir.join("home"))
        .env("AGENT_ADAPTOR_STATE_DIR", plan.work_dir.join("state"))
        .env("AA_TEST_PIDS_DIR", pids)
        .env("AA_TEST_TAG", proc_tree::new_tag())
        .env("AA_TEST_DELAY_MS", "50")
        .current_dir(&plan.work_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// A slow run, once its CLI, tool and daemon all run.
fn start(plan: &Plan, cli: &TreeStandIn, n: usize) -> Result<(Child, RunPids), String> {
    let pids = plan.work_dir.join(format!("pids-{n}"));
    std::fs::create_dir_all(&pids).map_err(|e| e.to_string())?;
    let mut host = command(plan, cli, &pids)
        .args(["run", "--driver", "claude", "--json"])
        .args(PASS_ENV)
        .arg("count slowly")
        .spawn()
        .map_err(|e| format!("{}: {e}", plan.server.display()))?;
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(run) = proc_tree::runs(&pids).into_values().next()
            && run.daemon.is_some()
            && run.all().iter().all(Proc::alive)
        {
            // Well into the stream.
            std::thread::sleep(Duration::from_millis(200));
            return Ok((host, run));
        }
        if Instant::now() >= deadline {
            let _ = host.kill();
            return Err(format!("run {n}: the stand-in did not start its children"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn signal(host: &Child, signal: Signal) -> Result<(), String> {
    let pid = i32::try_from(host.id()).map_err(|e| e.to_string())?;
    kill(Pid::from_raw(pid), signal).map_err(|e| format!("{signal}: {e}"))
}

/// When the last of `procs` was seen gone (polled every millisecond).
fn gone_after(procs: &[Proc], since: Instant) -> Result<Instant, String> {
    loop {
        let now = Instant::now();
        if !procs.iter().any(Proc::alive) {
            return Ok(now);
        }
        if now - since > BOUND {
            let left: Vec<&Proc> = procs.iter().filter(|p| p.alive()).collect();
            // Ours (same start time): not left behind by the bench either.
            for p in &left {
                if let Ok(pid) = i32::try_from(p.pid) {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
            return Err(format!("still running after {BOUND:?}: {left:?}"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
