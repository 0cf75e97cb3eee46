//! The orchestrator (`agent-adaptor-bench run`): generates the workloads,
//! runs every contender as a child process, interleaved, and writes
//! `results.json` and `results.md`.
//!
//! Each measured run is one child process, started and reaped by this one:
//!
//! * **wall** — from just before the spawn to the reaping (process start-up
//!   and the fake CLI's loading of the workload included, for everyone);
//! * **CPU** — the child's own user + system time (`getrusage(RUSAGE_SELF)`
//!   at its exit, all threads), i.e. the consumer without the fake CLI; the
//!   whole tree (consumer + fake CLI, `RUSAGE_CHILDREN` delta here) is kept
//!   as `tree_cpu_s`;
//! * **peak RSS** — the child's own `ru_maxrss` at its exit. Whole-tree
//!   `wait4` figures would be the fake CLI's, which holds the workload in
//!   memory.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::child::{ChildReport, Contender};
use crate::concurrent::ConcurrentReport;
use crate::report::{self, Results};
use crate::usage;
use crate::workload::{self, Kind, Spec, Stats, Until};

/// The seed of every workload.
pub const SEED: u64 = 13;

/// What `run` does.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    /// Where workloads and results go.
    pub work_dir: PathBuf,
    /// The fake CLI.
    pub fake: PathBuf,
    /// `tests/bench` (the Node SDK runners and their `node_modules`).
    pub node_dir: PathBuf,
    /// Include the SDK contenders.
    pub sdk: bool,
    /// The `agent-adaptor` binary, for the `run --json` contender (left
    /// out without it).
    #[serde(default)]
    pub cli: Option<PathBuf>,
    /// Workload sizes, lines.
    pub sizes: Vec<u64>,
    /// Repetitions of each interleaved round.
    pub reps: u64,
    /// Lines of the latency workloads.
    pub latency_lines: u64,
    /// The fake CLI's delay before each line in the latency runs, ms.
    pub latency_delay_ms: u64,
    /// Repetitions of the latency runs.
    pub latency_reps: u64,
    /// Concurrent runs.
    pub concurrent_runs: u64,
    /// Lines of each concurrent run's workload.
    pub concurrent_lines: u64,
    /// Sequential single runs forming the reference.
    pub single_rounds: u64,
    /// Repetitions of the concurrency pair.
    pub concurrent_reps: u64,
    /// Bytes of the flat-RSS stream (0: skip).
    pub big_bytes: u64,
}

impl Plan {
    /// The full plan of `scripts/bench`.
    pub fn full(work_dir: PathBuf, fake: PathBuf, node_dir: PathBuf) -> Plan {
        Plan {
            work_dir,
            fake,
            node_dir,
            sdk: true,
            cli: None,
            sizes: vec![10_000, 50_000, 200_000],
            // Nine interleaved rounds: on a shared 2-CPU host five left the
            // median of `run()` against its blocking mode (the same work)
            // apart by 30 % in one run and in the other order in the next.
            reps: 9,
            latency_lines: 3_000,
            latency_delay_ms: 1,
            latency_reps: 3,
            concurrent_runs: 256,
            concurrent_lines: 2_000,
            // As many runs in sequence as at once: the same work on both
            // sides, and enough of it (~1 s of CPU) that a noisy host's
            // jitter does not decide the ratio.
            single_rounds: 256,
            concurrent_reps: 5,
            big_bytes: 1 << 30,
        }
    }

    /// A plan small enough for a smoke test (seconds).
    pub fn quick(work_dir: PathBuf, fake: PathBuf, node_dir: PathBuf) -> Plan {
        Plan {
            sizes: vec![300],
            reps: 1,
            latency_lines: 150,
            latency_reps: 1,
            concurrent_runs: 4,
            concurrent_lines: 200,
            single_rounds: 2,
            concurrent_reps: 1,
            big_bytes: 2 << 20,
            ..Plan::full(work_dir, fake, node_dir)
        }
    }
}

/// One measured child process.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sample {
    /// The workload's protocol.
    pub kind: Kind,
    /// The workload's size.
    pub workload: Stats,
    /// Who ran.
    pub contender: Contender,
    /// Which repetition.
    pub rep: u64,
    /// Wall time, spawn to reaping, s.
    pub wall_s: f64,
    /// CPU of the whole tree (consumer + fake CLI), s.
    pub tree_cpu_s: f64,
    /// The child's own report.
    pub report: ChildReport,
}

/// The latency runs of one contender.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LatencySample {
    /// The workload's protocol.
    pub kind: Kind,
    /// Who ran.
    pub contender: Contender,
    /// Stamped texts received, over all repetitions.
    pub count: u64,
    /// Percentiles of line written → event received, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Largest, µs.
    pub max_us: f64,
    /// Failures, if any.
    pub errors: Vec<String>,
}

/// Runs `plan` and writes `results.json` and `results.md` into its work dir.
pub fn run(plan: &Plan, log: &mut dyn FnMut(&str)) -> Result<Results, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let workloads = plan.work_dir.join("workloads");
    prune_stale(&workloads);
    let mut results = Results::new(plan);
    if plan.sdk {
        results.machine.sdks = report::sdk_versions(&plan.node_dir);
    }

    let mut contenders: Vec<Contender> = Contender::ALL.to_vec();
    if !plan.sdk {
        contenders.retain(|c| *c != Contender::Sdk);
    }
    if plan.cli.is_none() {
        contenders.retain(|c| *c != Contender::AaCliJson);
    }
    for kind in [Kind::Claude, Kind::Codex] {
        let contenders: Vec<Contender> = contenders
            .iter()
            .copied()
            .filter(|c| c.runs(kind))
            .collect();
        for &lines in &plan.sizes {
            let spec = Spec {
                kind,
                until: Until::Lines(lines),
                seed: SEED,
                stamp: false,
            };
            let (path, stats) = workload::ensure(&spec, &workloads).map_err(|e| e.to_string())?;
            log(&format!(
                "{} {} lines, {:.1} MB: {} rounds of {}",
                kind.as_str(),
                stats.lines,
                stats.bytes as f64 / 1e6,
                plan.reps,
                names(&contenders)
            ));
            for rep in 0..plan.reps {
                for &contender in &contenders {
                    let sample = measure(plan, &exe, kind, &path, stats, contender, rep, 0, false)?;
                    log(&sample_line(&sample));
                    results.samples.push(sample);
                }
            }
        }
    }

    latency(plan, &exe, &workloads, &contenders, &mut results, log)?;
    concurrency(plan, &exe, &workloads, &mut results, log)?;
    if plan.big_bytes > 0 {
        big(plan, &exe, &workloads, &mut results, log)?;
    }

    results.finish();
    let json = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?;
    std::fs::write(plan.work_dir.join("results.json"), json).map_err(|e| e.to_string())?;
    std::fs::write(plan.work_dir.join("results.md"), report::markdown(&results))
        .map_err(|e| e.to_string())?;
    Ok(results)
}

/// Removes workloads of older generator versions (they are regenerated on
/// demand, and they are large).
fn prune_stale(workloads: &Path) {
    let current = format!("-g{}.", workload::GENERATOR);
    let Ok(entries) = std::fs::read_dir(workloads) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = name.starts_with("claude-") || name.starts_with("codex-");
        if ours && !name.contains(&current) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn names(contenders: &[Contender]) -> String {
    contenders
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn sample_line(s: &Sample) -> String {
    format!(
        "  {:<18} rep {} wall {:>7.3} s  cpu {:>7.3} s  rss {:>7.1} MiB  events {:>8}{}",
        s.contender.as_str(),
        s.rep,
        s.wall_s,
        s.report.usage.cpu_s(),
        s.report.usage.maxrss_kib as f64 / 1024.0,
        s.report.events.map_or("-".to_owned(), |e| e.to_string()),
        match &s.report.error {
            Some(e) => format!("  ERROR {e}"),
            None => String::new(),
        }
    )
}

/// Runs one contender process and measures it.
#[allow(clippy::too_many_arguments)]
fn measure(
    plan: &Plan,
    exe: &Path,
    kind: Kind,
    workload: &Path,
    stats: Stats,
    contender: Contender,
    rep: u64,
    delay_ms: u64,
    latency: bool,
) -> Result<Sample, String> {
    let mut cmd = if contender == Contender::Sdk {
        let script = match kind {
            Kind::Claude => "claude-sdk.mjs",
            Kind::Codex => "codex-sdk.mjs",
        };
        let mut cmd = Command::new("node");
        cmd.arg(plan.node_dir.join(script));
        cmd.current_dir(&plan.node_dir);
        cmd
    } else {
        let mut cmd = Command::new(exe);
        cmd.args(["child", "--contender", contender.as_str()]);
        if let Some(cli) = &plan.cli {
            cmd.arg("--cli").arg(cli);
        }
        cmd
    };
    cmd.args(["--kind", kind.as_str()])
        .arg("--fake")
        .arg(&plan.fake)
        .arg("--workload")
        .arg(workload)
        .args(["--delay-ms", &delay_ms.to_string()]);
    if latency {
        cmd.arg("--latency");
    }
    let (wall_s, tree_cpu_s, stdout, stderr) = spawn_measured(&mut cmd)?;
    let report = parse_report::<ChildReport>(&stdout).unwrap_or_else(|| ChildReport {
        error: Some(format!(
            "no report (stderr: {})",
            tail(&String::from_utf8_lossy(&stderr))
        )),
        ..ChildReport::default()
    });
    Ok(Sample {
        kind,
        workload: stats,
        contender,
        rep,
        wall_s,
        tree_cpu_s,
        report,
    })
}

/// Spawns `cmd` and waits for it: wall seconds, tree CPU seconds, stdout,
/// stderr.
fn spawn_measured(cmd: &mut Command) -> Result<(f64, f64, Vec<u8>, Vec<u8>), String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let before = usage::reaped_children();
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("spawn {cmd:?}: {e}"))?;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut buf);
        }
        buf
    });
    let mut stdout = Vec::new();
    if let Some(o) = out.as_mut() {
        let _ = o.read_to_end(&mut stdout);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let wall = started.elapsed().as_secs_f64();
    let tree = usage::reaped_children().since(&before).cpu_s();
    let stderr = err_reader.join().unwrap_or_default();
    if !status.success() && parse_report::<serde_json::Value>(&stdout).is_none() {
        return Err(format!(
            "{cmd:?} exited with {status}: {}",
            tail(&String::from_utf8_lossy(&stderr))
        ));
    }
    Ok((wall, tree, stdout, stderr))
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join(" | ")
}

/// The last line of `stdout` that parses as `T`.
fn parse_report<T: for<'de> Deserialize<'de>>(stdout: &[u8]) -> Option<T> {
    String::from_utf8_lossy(stdout)
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l.trim()).ok())
}

fn latency(
    plan: &Plan,
    exe: &Path,
    workloads: &Path,
    contenders: &[Contender],
    results: &mut Results,
    log: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let measured: Vec<Contender> = contenders
        .iter()
        .copied()
        .filter(|c| {
            !matches!(
                c,
                Contender::AaRun | Contender::AaRunBlocking | Contender::AaCliJson
            )
        })
        .collect();
    for kind in [Kind::Claude, Kind::Codex] {
        let spec = Spec {
            kind,
            until: Until::Lines(plan.latency_lines),
            seed: SEED,
            stamp: true,
        };
        let (path, stats) = workload::ensure(&spec, workloads).map_err(|e| e.to_string())?;
        log(&format!(
            "latency {}: {} lines ({} stamped), one every {} ms, {} rounds of {}",
            kind.as_str(),
            stats.lines,
            stats.texts,
            plan.latency_delay_ms,
            plan.latency_reps,
            names(&measured)
        ));
        let mut pooled: Vec<(Contender, Vec<i64>, Vec<String>)> = measured
            .iter()
            .map(|c| (*c, Vec::new(), Vec::new()))
            .collect();
        for rep in 0..plan.latency_reps {
            for (contender, lat, errors) in &mut pooled {
                let s = measure(
                    plan,
                    exe,
                    kind,
                    &path,
                    stats,
                    *contender,
                    rep,
                    plan.latency_delay_ms,
                    true,
                )?;
                if let Some(e) = &s.report.error {
                    errors.push(e.clone());
                }
                lat.extend_from_slice(&s.report.latencies_ns);
            }
        }
        for (contender, mut lat, errors) in pooled {
            lat.sort_unstable();
            let pick = |q: f64| {
                if lat.is_empty() {
                    return f64::NAN;
                }
                let i = ((lat.len() - 1) as f64 * q).round() as usize;
                lat[i] as f64 / 1e3
            };
            let sample = LatencySample {
                kind,
                contender,
                count: lat.len() as u64,
                p50_us: pick(0.5),
                p99_us: pick(0.99),
                max_us: pick(1.0),
                errors,
            };
            log(&format!(
                "  {:<18} n {:>5}  p50 {:>8.1} µs  p99 {:>8.1} µs  max {:>9.1} µs",
                contender.as_str(),
                sample.count,
                sample.p50_us,
                sample.p99_us,
                sample.max_us
            ));
            results.latency.push(sample);
        }
    }
    Ok(())
}

fn concurrency(
    plan: &Plan,
    exe: &Path,
    workloads: &Path,
    results: &mut Results,
    log: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let spec = Spec {
        kind: Kind::Claude,
        until: Until::Lines(plan.concurrent_lines),
        seed: SEED,
        stamp: false,
    };
    let (path, stats) = workload::ensure(&spec, workloads).map_err(|e| e.to_string())?;
    log(&format!(
        "concurrency: {} single runs in sequence vs {} at once, claude {} lines each, {} rounds",
        plan.single_rounds, plan.concurrent_runs, stats.lines, plan.concurrent_reps
    ));
    for _ in 0..plan.concurrent_reps {
        for (runs, rounds) in [(1, plan.single_rounds), (plan.concurrent_runs, 1)] {
            let mut cmd = Command::new(exe);
            cmd.args(["concurrent", "--kind", "claude"])
                .arg("--fake")
                .arg(&plan.fake)
                .arg("--workload")
                .arg(&path)
                .args(["--runs", &runs.to_string()])
                .args(["--rounds", &rounds.to_string()]);
            let (_, _, stdout, stderr) = spawn_measured(&mut cmd)?;
            let report = parse_report::<ConcurrentReport>(&stdout).ok_or_else(|| {
                format!(
                    "concurrent: no report: {}",
                    tail(&String::from_utf8_lossy(&stderr))
                )
            })?;
            log(&format!(
                "  runs {:>3} x {:>2}: {:>9} events, cpu {:>6.3} s, {:>6.2} µs/event, wall {:>6.2} s, dropped {}, failed {}",
                report.runs,
                report.rounds,
                report.events,
                report.cpu.cpu_s(),
                report.cpu_us_per_event,
                report.wall_s,
                report.dropped,
                report.failed
            ));
            results.concurrency.push(report);
        }
    }
    Ok(())
}

fn big(
    plan: &Plan,
    exe: &Path,
    workloads: &Path,
    results: &mut Results,
    log: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let spec = Spec {
        kind: Kind::Claude,
        until: Until::Bytes(plan.big_bytes),
        seed: SEED,
        stamp: false,
    };
    let (path, stats) = workload::ensure(&spec, workloads).map_err(|e| e.to_string())?;
    log(&format!(
        "flat RSS: claude {} lines, {:.2} GiB",
        stats.lines,
        stats.bytes as f64 / (1u64 << 30) as f64
    ));
    for contender in [
        Contender::Limit,
        Contender::AaRun,
        Contender::AaRunBlocking,
        Contender::AaStream,
    ] {
        let sample = measure(
            plan,
            exe,
            Kind::Claude,
            &path,
            stats,
            contender,
            0,
            0,
            false,
        )?;
        log(&sample_line(&sample));
        results.big.push(sample);
    }
    // The workload is large: do not keep it around.
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("stats.json"));
    Ok(())
}
