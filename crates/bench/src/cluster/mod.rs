//! `agent-adaptor-bench cluster`: several `agent-adaptor serve` instances
//! over one PostgreSQL database, under a bounded load and a SIGKILL.
//!
//! For each instance count (1 and 3 by default) the same load runs against
//! fresh instances ([`nodes`]) and one mock model server (the testkit's, in
//! this process, so its request log is at hand): T threads of K turns, half
//! over AG-UI and half over A2A ([`load`]). In the multi-instance phase one
//! instance is SIGKILLed once a third of the turns began; the takeover time
//! is from the kill until every run it held is recorded interrupted in the
//! store ([`pg`]). Then the checks ([`audit`]) and the figures: runs per
//! second, time to first frame, takeover time, peak PostgreSQL
//! connections. Optionally a last phase runs the real Claude Code (from
//! `tests/clis`) against the mock on the same instance count.
//!
//! The figures are a Markdown table on stdout and one JSON line per phase
//! on stderr; any failed check fails the command.

mod audit;
mod load;
mod nodes;
mod pg;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use serde::Serialize;
use serde_json::json;

pub use audit::Check;
pub use load::Switches;
use load::{Cluster, Load, Outcome};
use nodes::{Agent, Node, NodeSpec};

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `agent-adaptor` binary (a release build).
    pub server: PathBuf,
    /// The shared database.
    pub pg_url: String,
    /// Instance counts, one phase each; the kill happens in phases of more
    /// than one instance.
    pub instances: Vec<usize>,
    /// Threads per phase.
    pub threads: usize,
    /// Turns per thread.
    pub turns: usize,
    /// Turns at once, at most.
    pub concurrency: usize,
    /// SIGKILL one instance in multi-instance phases.
    pub kill: bool,
    /// Threads of the Claude Code phase (0: none).
    pub claude_threads: usize,
    /// `--lease-ttl` for the servers (also turns the sweeper checks on).
    pub lease_ttl: Option<u64>,
    /// The checks that need features not every server has.
    pub switches: Switches,
    /// Homes and logs of the instances, made anew.
    pub work_dir: PathBuf,
}

/// One phase's figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Phase {
    /// `llm` or `claude`.
    pub agent: &'static str,
    /// Instances at the start.
    pub instances: usize,
    /// Threads.
    pub threads: usize,
    /// Turns tried.
    pub turns: usize,
    /// Turns completed, interrupted, broken by the kill, cancelled by a
    /// cut, failed.
    pub completed: usize,
    /// Cancelled because their only client was cut off.
    pub cancelled_by_cut: usize,
    /// Reported interrupted to the client.
    pub interrupted: usize,
    /// Broken by the kill (judged from the store).
    pub broken: usize,
    /// Failed.
    pub failed: usize,
    /// From the first request to the last turn's end, s.
    pub wall_s: f64,
    /// Completed runs per second of wall time.
    pub runs_per_s: f64,
    /// Time to first frame, ms.
    pub ttff_p50_ms: f64,
    /// 99th percentile.
    pub ttff_p99_ms: f64,
    /// SIGKILL → every run the killed instance held recorded interrupted, ms.
    pub takeover_ms: Option<f64>,
    /// `sweeper` (another instance's, `--lease-ttl`) or `restart` (the
    /// killed instance restarted under its id).
    pub takeover_by: Option<&'static str>,
    /// Runs the killed instance held.
    pub killed_runs: usize,
    /// Peak connections to the database (`pg_stat_activity`, the harness's
    /// own not counted).
    pub pg_connections_peak: i64,
    /// Approvals answered, and on another instance.
    pub approvals: (usize, usize),
    /// Streams resumed, and on another instance.
    pub resumes: (usize, usize),
    /// Requests the mock model received.
    pub model_requests: usize,
    /// The checks.
    pub checks: Vec<Check>,
}

impl Phase {
    /// Checks that failed.
    pub fn failed_checks(&self) -> usize {
        self.checks.iter().filter(|c| !c.passed).count()
    }
}

/// Runs the plan; the phases in order.
pub fn run(plan: &Plan) -> Result<Vec<Phase>, String> {
    let fds = crate::serve_load::raise_fd_limit(8192);
    if fds < 4 * plan.concurrency as u64 + 256 {
        return Err(format!(
            "{} turns at once need more descriptors than the limit of {fds}",
            plan.concurrency
        ));
    }
    let _ = std::fs::remove_dir_all(&plan.work_dir);
    std::fs::create_dir_all(&plan.work_dir).map_err(|e| e.to_string())?;
    let rt = crate::child::runtime()?;
    let mut phases = Vec::new();
    let mut runs = plan
        .instances
        .iter()
        .map(|n| (*n, false))
        .collect::<Vec<_>>();
    if plan.claude_threads > 0 {
        runs.push((plan.instances.iter().copied().max().unwrap_or(1), true));
    }
    for (i, (instances, claude)) in runs.into_iter().enumerate() {
        let phase = rt.block_on(phase(plan, i, instances, claude))?;
        eprintln!(
            "{}",
            serde_json::to_string(&phase).map_err(|e| e.to_string())?
        );
        phases.push(phase);
    }
    Ok(phases)
}

/// What the mock answers: a short streamed answer (about a second), or,
/// for a prompt with [`load::APPROVE`], a tool call that needs an approval
/// first (the LLM agent's `list_files`; Claude Code's `Bash` writing a
/// directory, which it asks its host about).
fn script(claude: bool) -> Script {
    let answer = Reply::Slow {
        text: "A cluster answer, streamed in pieces. ".repeat(3),
        chunk_delay: Duration::from_millis(60),
    };
    let call = if claude {
        Reply::ToolCall {
            name: "Bash".into(),
            arguments: json!({"command": "mkdir -p approved", "description": "Make a directory"}),
        }
    } else {
        Reply::ToolCall {
            name: "list_files".into(),
            arguments: json!({"path": "."}),
        }
    };
    Script::new()
        .on_prompt(load::APPROVE, vec![call, answer.clone()])
        .fallback(answer)
}

async fn phase(plan: &Plan, index: usize, instances: usize, claude: bool) -> Result<Phase, String> {
    let name = format!("p{index}");
    let mock = MockServer::start(script(claude))
        .await
        .map_err(|e| format!("mock model server: {e}"))?;
    let spec = NodeSpec {
        server: plan.server.clone(),
        pg_url: plan.pg_url.clone(),
        token: format!("cluster-token-{}-{index}", std::process::id()),
        agent: if claude {
            Agent::Claude(mock.base_url())
        } else {
            Agent::Llm(mock.base_url())
        },
        lease_ttl: plan.lease_ttl,
        max_runs: plan.concurrency * 4,
        work_dir: plan.work_dir.join(&name),
    };
    let ids: Vec<String> = (0..instances)
        .map(|i| format!("{name}{}", char::from(b'a' + (i % 26) as u8)))
        .collect();
    let started: Vec<Node> = {
        let spec = spec.clone();
        let ids = ids.clone();
        tokio::task::spawn_blocking(move || {
            ids.iter()
                .map(|id| Node::start(&spec, id))
                .collect::<Result<Vec<Node>, String>>()
        })
        .await
        .map_err(|e| e.to_string())??
    };
    let cluster = Arc::new(Cluster::new(
        started.iter().map(|n| n.addr).collect(),
        spec.token.clone(),
        plan.switches,
    ));
    let pool = pg::connect(&plan.pg_url).await?;

    let peak = Arc::new(AtomicI64::new(0));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = tokio::spawn({
        let (pool, peak, sampling) = (pool.clone(), peak.clone(), sampling.clone());
        async move {
            while sampling.load(Ordering::SeqCst) {
                if let Ok(n) = pg::connections(&pool).await {
                    peak.fetch_max(n, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });

    let load = Load {
        phase: name.clone(),
        threads: if claude {
            plan.claude_threads
        } else {
            plan.threads
        },
        turns: plan.turns,
        concurrency: plan.concurrency,
        approve_every: 10,
        cut_every: 10,
    };
    let total = load.threads * load.turns;
    let victim = (plan.kill && instances > 1).then(|| instances - 1);
    let killer = victim.map(|v| {
        tokio::spawn(kill_and_take_over(
            cluster.clone(),
            pool.clone(),
            spec.clone(),
            (v, ids[v].clone(), started[v].pid()),
            (
                total / 3,
                Duration::from_millis(if claude { 2000 } else { 300 }),
            ),
            plan.lease_ttl,
        ))
    });
    let begun = Instant::now();
    let turns = load::run(cluster.clone(), &load).await;
    let wall_s = begun.elapsed().as_secs_f64();
    let takeover = match killer {
        Some(k) => Some(k.await.map_err(|e| e.to_string())??),
        None => None,
    };
    sampling.store(false, Ordering::SeqCst);
    let _ = sampler.await;

    let interrupted = pg::interrupted_prompts(&pool).await?;
    let requests = mock.requests();
    let killed = takeover
        .as_ref()
        .map(|t| t.prompts.clone())
        .unwrap_or_default();
    let mut saved = Vec::new();
    let unfinished = |o: &Outcome| matches!(o, Outcome::Broken | Outcome::Interrupted);
    for t in turns.iter().filter(|t| unfinished(&t.outcome)) {
        if !interrupted.iter().any(|p| p.contains(&t.tag)) && pg::saved(&pool, &t.tag).await? {
            saved.push(t.tag.clone());
        }
    }
    let checks = audit::checks(
        &turns,
        &audit::Evidence {
            requests: &requests,
            interrupted: &interrupted,
            killed: &killed,
            saved: &saved,
            victim,
            taken_over: takeover.as_ref().map(|t| t.elapsed.is_some()),
        },
    );
    let count = |f: fn(&Outcome) -> bool| turns.iter().filter(|t| f(&t.outcome)).count();
    let mut ttff: Vec<f64> = turns.iter().filter_map(|t| t.ttff_ms).collect();
    let completed = count(|o| *o == Outcome::Completed);
    let phase = Phase {
        agent: if claude { "claude" } else { "llm" },
        instances,
        threads: load.threads,
        turns: turns.len(),
        completed,
        interrupted: count(|o| *o == Outcome::Interrupted),
        cancelled_by_cut: count(|o| *o == Outcome::CancelledByCut),
        broken: count(|o| *o == Outcome::Broken),
        failed: count(|o| matches!(o, Outcome::Failed(_))),
        wall_s,
        runs_per_s: completed as f64 / wall_s.max(1e-9),
        ttff_p50_ms: crate::serve_load::percentile(&mut ttff, 50.0),
        ttff_p99_ms: crate::serve_load::percentile(&mut ttff, 99.0),
        takeover_ms: takeover
            .as_ref()
            .and_then(|t| t.elapsed)
            .map(|d| d.as_secs_f64() * 1e3),
        takeover_by: takeover.as_ref().map(|t| t.by),
        killed_runs: killed.len(),
        pg_connections_peak: peak.load(Ordering::SeqCst),
        approvals: turns
            .iter()
            .fold((0, 0), |a, t| (a.0 + t.approvals.0, a.1 + t.approvals.1)),
        resumes: turns
            .iter()
            .fold((0, 0), |a, t| (a.0 + t.resumes.0, a.1 + t.resumes.1)),
        model_requests: requests.len(),
        checks,
    };
    drop(takeover);
    drop(started);
    mock.shutdown().await;
    pool.close().await;
    Ok(phase)
}

/// What the kill found.
struct Takeover {
    /// The prompts of the runs the killed instance held.
    prompts: Vec<String>,
    /// Kill → all of them recorded interrupted (`None`: not within the bound).
    elapsed: Option<Duration>,
    by: &'static str,
    /// The restarted instance (kept until the phase ends).
    _restarted: Option<Node>,
}

/// Once `after` turns began: mark `victim` dead for the clients, SIGKILL
/// it, read the leases it held, and (without a sweeper) restart it under
/// its id; then time until every run it held is recorded interrupted.
async fn kill_and_take_over(
    cluster: Arc<Cluster>,
    pool: sqlx::PgPool,
    spec: NodeSpec,
    (victim, id, pid): (usize, String, u32),
    (after, settle): (usize, Duration),
    lease_ttl: Option<u64>,
) -> Result<Takeover, String> {
    while cluster.started.load(Ordering::SeqCst) < after.max(1) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Kill while the victim holds runs (bounded: a victim that never gets
    // one is killed anyway), once they had time to reach the model (a CLI
    // takes a while to start).
    for _ in 0..500 {
        if !pg::leased_prompts(&pool, &id).await?.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(settle).await;
    cluster.mark_dead(victim);
    let killed_at = Instant::now();
    nodes::sigkill(pid)?;
    let prompts = pg::leased_prompts(&pool, &id).await?;
    let (restarted, by, bound) = match lease_ttl {
        // The lease expires at most one TTL after the kill (its last
        // renewal came before it); a sweep comes at most a third later.
        Some(ttl) => (
            None,
            "sweeper",
            Duration::from_secs(ttl) * 4 / 3 + Duration::from_secs(2),
        ),
        None => {
            let restarted = tokio::task::spawn_blocking(move || Node::start(&spec, &id))
                .await
                .map_err(|e| e.to_string())??;
            (Some(restarted), "restart", Duration::from_secs(60))
        }
    };
    let elapsed = loop {
        let done = pg::interrupted_prompts(&pool).await?;
        if prompts.iter().all(|p| done.contains(p)) {
            break Some(killed_at.elapsed());
        }
        if killed_at.elapsed() > bound {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    Ok(Takeover {
        prompts,
        elapsed,
        by,
        _restarted: restarted,
    })
}

/// The figures side by side, the multi-instance phase over the first.
pub fn markdown(phases: &[Phase]) -> String {
    let mut out = String::from("| figure |");
    let mut rule = String::from("|---|");
    for p in phases {
        out.push_str(&format!(" {} × {} |", p.instances, p.agent));
        rule.push_str("---:|");
    }
    let ratio = phases.len() >= 2 && phases[0].agent == phases[1].agent;
    if ratio {
        out.push_str(&format!(
            " {} / {} |",
            phases[1].instances, phases[0].instances
        ));
        rule.push_str("---:|");
    }
    out.push('\n');
    out.push_str(&rule);
    out.push('\n');
    type Figure = fn(&Phase) -> Option<f64>;
    let rows: [(&str, Figure); 11] = [
        ("turns (threads × turns)", |p| Some(p.turns as f64)),
        ("completed", |p| Some(p.completed as f64)),
        ("cancelled when their only client was cut", |p| {
            Some(p.cancelled_by_cut as f64)
        }),
        ("runs / s", |p| Some(p.runs_per_s)),
        ("first frame p50 ms", |p| Some(p.ttff_p50_ms)),
        ("first frame p99 ms", |p| Some(p.ttff_p99_ms)),
        ("runs held by the killed instance", |p| {
            p.takeover_by.map(|_| p.killed_runs as f64)
        }),
        ("takeover after SIGKILL ms", |p| p.takeover_ms),
        ("PostgreSQL connections, peak", |p| {
            Some(p.pg_connections_peak as f64)
        }),
        ("approvals answered", |p| Some(p.approvals.0 as f64)),
        ("failed checks", |p| Some(p.failed_checks() as f64)),
    ];
    for (name, f) in rows {
        out.push_str(&format!("| {name} |"));
        for p in phases {
            match f(p) {
                Some(v) if v.fract() == 0.0 => out.push_str(&format!(" {v:.0} |")),
                Some(v) => out.push_str(&format!(" {v:.1} |")),
                None => out.push_str(" — |"),
            }
        }
        if ratio {
            match (f(&phases[0]), f(&phases[1])) {
                (Some(a), Some(b)) if a > 0.0 => out.push_str(&format!(" {:.2}x |", b / a)),
                _ => out.push_str(" — |"),
            }
        }
        out.push('\n');
    }
    for p in phases {
        out.push_str(&format!(
            "\n{} × {}: takeover by {}; approvals {} ({} on another instance); resumed streams {} ({} on another instance)\n",
            p.instances,
            p.agent,
            p.takeover_by.unwrap_or("—"),
            p.approvals.0,
            p.approvals.1,
            p.resumes.0,
            p.resumes.1
        ));
        for c in &p.checks {
            let mark = if c.passed { "ok" } else { "FAILED" };
            out.push_str(&format!("- {mark}: {} ({})\n", c.name, c.detail));
        }
    }
    out
}
