//! `agent-adaptor serve` under load (`agent-adaptor-bench serve-load …`).
//!
//! Starts `agent-adaptor serve --playground` on 127.0.0.1 (a free port,
//! authentication on, the per-client run limit raised to `runs`), then,
//! `rounds` times, makes `runs` raw SSE runs (`POST /sse` with the bearer
//! token, a new `sessionKey` each) **one after another** (the baseline) and
//! then **all at once**. For each run it times the first frame and the end
//! of the stream from the moment it starts to connect
//! ([`sse_client`](crate::sse_client)), and checks that the stream is
//! complete and ordered. Each phase prints one JSON line on stderr; the
//! summary (medians over the rounds, concurrent / sequential ratios) is a
//! Markdown table on stdout.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use crate::sse_client::{SseRequest, check_raw, post_sse};

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `agent-adaptor` binary.
    pub server: PathBuf,
    /// Runs per phase.
    pub runs: usize,
    /// Sequential + concurrent pairs.
    pub rounds: usize,
    /// Home of the server (its thread store), made anew.
    pub work_dir: PathBuf,
}

/// One phase's figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Phase {
    /// `sequential` or `concurrent`.
    pub mode: &'static str,
    /// Which round.
    pub round: usize,
    /// Runs made.
    pub runs: usize,
    /// Streams that were not complete and ordered.
    pub failed: usize,
    /// The first failure.
    pub error: Option<String>,
    /// Time to first frame, ms: median, 90th and 99th percentile, maximum.
    pub ttff_p50_ms: f64,
    /// 90th percentile.
    pub ttff_p90_ms: f64,
    /// 99th percentile.
    pub ttff_p99_ms: f64,
    /// Maximum.
    pub ttff_max_ms: f64,
    /// A whole stream, ms: median.
    pub total_p50_ms: f64,
    /// A whole stream: maximum.
    pub total_max_ms: f64,
    /// Streams whose first frame took 500 ms or more.
    pub ttff_over_500ms: usize,
    /// Connections the kernel dropped because a listen queue was full
    /// during the phase (`ListenOverflows` of `/proc/net/netstat`, the whole
    /// machine's; `None` where it cannot be read). Each costs its client a
    /// SYN retransmission, 1 s later.
    pub listen_overflows: Option<u64>,
    /// Server side (the frames' `meta.time`), ms, median: from
    /// `run_started` to the next frame (the driver's invocation notice,
    /// sent as it calls the model).
    pub before_model_p50_ms: f64,
    /// Server side, ms, median: from the last frame before `run_finished`
    /// to `run_finished` (the run being finished and stored).
    pub finishing_p50_ms: f64,
    /// The phase's wall time, s.
    pub wall_s: f64,
    /// Frames received.
    pub frames: usize,
}

/// Runs the plan; the phases in the order they ran.
pub fn run(plan: &Plan) -> Result<Vec<Phase>, String> {
    let fds = raise_fd_limit(8192);
    if fds < 2 * plan.runs as u64 + 256 {
        return Err(format!(
            "{} runs at once need more descriptors than the limit of {fds} (raise ulimit -Hn)",
            plan.runs
        ));
    }
    let _ = std::fs::remove_dir_all(&plan.work_dir);
    std::fs::create_dir_all(&plan.work_dir).map_err(|e| e.to_string())?;
    let server = Server::start(plan)?;
    let rt = crate::child::runtime()?;
    let mut phases = Vec::new();
    for round in 0..plan.rounds {
        for mode in ["sequential", "concurrent"] {
            let phase = rt.block_on(phase(&server, plan.runs, round, mode));
            eprintln!(
                "{}",
                serde_json::to_string(&phase).map_err(|e| e.to_string())?
            );
            phases.push(phase);
        }
    }
    Ok(phases)
}

async fn phase(server: &Server, runs: usize, round: usize, mode: &'static str) -> Phase {
    let request = |i: usize| SseRequest {
        addr: server.addr,
        path: "/sse".into(),
        headers: vec![
            ("Authorization".into(), format!("Bearer {}", server.token)),
            ("Accept".into(), "text/event-stream".into()),
        ],
        body: json!({"prompt": "hello", "sessionKey": format!("load-{round}-{mode}-{i}")})
            .to_string(),
    };
    let overflows_before = listen_overflows();
    let started = Instant::now();
    let results = if mode == "sequential" {
        let mut out = Vec::with_capacity(runs);
        for i in 0..runs {
            out.push(post_sse(&request(i), async {}).await);
        }
        out
    } else {
        let tasks: Vec<_> = (0..runs)
            .map(|i| {
                let req = request(i);
                tokio::spawn(async move { post_sse(&req, async {}).await })
            })
            .collect();
        let mut out = Vec::with_capacity(runs);
        for t in tasks {
            out.push(t.await.map_err(|e| e.to_string()).and_then(|r| r));
        }
        out
    };
    let wall_s = started.elapsed().as_secs_f64();
    let mut phase = Phase {
        mode,
        round,
        runs,
        wall_s,
        listen_overflows: overflows_before
            .zip(listen_overflows())
            .map(|(a, b)| b.saturating_sub(a)),
        ..Phase::default()
    };
    let (mut ttff, mut total) = (Vec::new(), Vec::new());
    let (mut before_model, mut finishing) = (Vec::new(), Vec::new());
    for result in results {
        match result.and_then(|s| check_raw(&s).map(|_| s)) {
            Ok(s) => {
                phase.frames += s.frames.len();
                ttff.extend(s.first_frame.map(ms));
                total.push(ms(s.total));
                let at = |i: usize| s.frames.get(i).and_then(|f| server_time(&f.data));
                let n = s.frames.len();
                before_model.extend(at(0).zip(at(1)).map(|(a, b)| (b - a) * 1e3));
                if n >= 2 {
                    finishing.extend(at(n - 2).zip(at(n - 1)).map(|(a, b)| (b - a) * 1e3));
                }
            }
            Err(e) => {
                phase.failed += 1;
                phase.error.get_or_insert(e);
            }
        }
    }
    phase.ttff_over_500ms = ttff.iter().filter(|t| **t >= 500.0).count();
    phase.ttff_p50_ms = percentile(&mut ttff, 50.0);
    phase.ttff_p90_ms = percentile(&mut ttff, 90.0);
    phase.ttff_p99_ms = percentile(&mut ttff, 99.0);
    phase.ttff_max_ms = percentile(&mut ttff, 100.0);
    phase.before_model_p50_ms = percentile(&mut before_model, 50.0);
    phase.finishing_p50_ms = percentile(&mut finishing, 50.0);
    phase.total_p50_ms = percentile(&mut total, 50.0);
    phase.total_max_ms = percentile(&mut total, 100.0);
    phase
}

/// A frame's `meta.time` (RFC 3339, UTC) as seconds since midnight.
fn server_time(data: &serde_json::Value) -> Option<f64> {
    let time = data["meta"]["time"].as_str()?;
    let clock = time.get(11..)?.trim_end_matches('Z');
    let mut parts = clock.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    Some(h.parse::<f64>().ok()? * 3600.0 + m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
}

/// `TcpExt: ListenOverflows` of `/proc/net/netstat` (Linux).
fn listen_overflows() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let mut rows = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (rows.next()?, rows.next()?);
    let i = names
        .split_whitespace()
        .position(|n| n == "ListenOverflows")?;
    values.split_whitespace().nth(i)?.parse().ok()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The nearest-rank percentile (0 for no values).
pub(crate) fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

/// One figure of a phase.
type Figure = fn(&Phase) -> f64;

/// The summary: per mode, the median over the rounds of each figure, and
/// concurrent / sequential.
pub fn markdown(phases: &[Phase]) -> String {
    let median = |mode: &str, f: Figure| {
        let mut v: Vec<f64> = phases.iter().filter(|p| p.mode == mode).map(f).collect();
        percentile(&mut v, 50.0)
    };
    let figures: [(&str, Figure); 11] = [
        ("first frame p50 ms", |p| p.ttff_p50_ms),
        ("first frame p90 ms", |p| p.ttff_p90_ms),
        ("first frame p99 ms", |p| p.ttff_p99_ms),
        ("first frame max ms", |p| p.ttff_max_ms),
        ("first frames ≥ 500 ms", |p| p.ttff_over_500ms as f64),
        ("listen queue overflows", |p| {
            p.listen_overflows.map_or(f64::NAN, |n| n as f64)
        }),
        ("whole stream p50 ms", |p| p.total_p50_ms),
        ("whole stream max ms", |p| p.total_max_ms),
        ("server: run_started → model call p50 ms", |p| {
            p.before_model_p50_ms
        }),
        ("server: last frame → run_finished p50 ms", |p| {
            p.finishing_p50_ms
        }),
        ("wall s (all runs)", |p| p.wall_s),
    ];
    let runs = phases.first().map_or(0, |p| p.runs);
    let rounds = phases.iter().filter(|p| p.mode == "concurrent").count();
    let failed: usize = phases.iter().map(|p| p.failed).sum();
    let mut out = format!(
        "**{runs} raw SSE runs, one after another vs all at once (medians of {rounds} rounds; {failed} failed streams)**\n\n\
         | figure | one after another | all at once | at once / one after another |\n|---|---:|---:|---:|\n"
    );
    for (name, f) in figures {
        let (s, c) = (median("sequential", f), median("concurrent", f));
        let ratio = if s > 0.0 {
            format!("{:.1}x", c / s)
        } else {
            "—".into()
        };
        out.push_str(&format!("| {name} | {s:.2} | {c:.2} | {ratio} |\n"));
    }
    out
}

/// The soft `RLIMIT_NOFILE`, raised towards `want` (the server, a child,
/// inherits it); the limit now in force.
pub(crate) fn raise_fd_limit(want: u64) -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < want => {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, want.min(hard), hard);
            getrlimit(Resource::RLIMIT_NOFILE).map_or(soft, |(s, _)| s)
        }
        Ok((soft, _)) => soft,
        Err(_) => 0,
    }
}

/// The running server, killed on drop.
struct Server {
    child: Child,
    addr: SocketAddr,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(plan: &Plan) -> Result<Server, String> {
        let home = plan.work_dir.join("home");
        std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
        let log =
            std::fs::File::create(plan.work_dir.join("serve.log")).map_err(|e| e.to_string())?;
        let mut child = Command::new(&plan.server)
            .args(["serve", "--playground", "--addr", "127.0.0.1:0"])
            .args(["--max-runs-per-client", &plan.runs.to_string()])
            .env("HOME", &home)
            .env("AGENT_ADAPTOR_HOME", home.join("agent-adaptor"))
            .env_remove(TOKEN_ENV)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{}: {e}", plan.server.display()))?;
        let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        // Keep draining stdout so the server never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        let url = first
            .strip_prefix("agent-adaptor serve: http://")
            .ok_or_else(|| format!("unexpected first line {first:?}"))?;
        let (addr, token) = url
            .split_once("/#token=")
            .ok_or_else(|| format!("no token in {first:?}"))?;
        Ok(Server {
            addr: addr.parse().map_err(|e| format!("{addr}: {e}"))?,
            token: token.to_owned(),
            child,
        })
    }
}

/// The variable `serve` would take a fixed token from (left unset here).
const TOKEN_ENV: &str = "AGENT_ADAPTOR_TOKEN";

/// `agent-adaptor` beside this binary (both are built into the same target
/// directory).
pub fn default_server() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let beside = exe.with_file_name(format!("agent-adaptor{}", std::env::consts::EXE_SUFFIX));
    if beside.exists() {
        Ok(beside)
    } else {
        Err(format!(
            "no agent-adaptor at {} (build it: cargo build --release -p agent-adaptor-cli), or pass --server",
            beside.display()
        ))
    }
}

/// The default work directory: the server's home (a fresh thread store) and
/// its log, `serve.log`.
pub fn default_work_dir(workspace: &Path) -> PathBuf {
    workspace.join("target/bench/serve-load")
}
