//! The ACP server's added cost per update (`agent-adaptor-bench acp-server
//! [--updates N] [--reps N]`).
//!
//! One scripted run of `updates` text deltas is consumed two ways, in one
//! process, alternating, `reps` times each:
//!
//! * **direct**: the run's own event stream (`Agent::stream`), every
//!   `TextDelta` counted;
//! * **acp**: the same run behind `AcpServer` on an in-memory duplex, from
//!   the client's `session/prompt` line to its answer, every
//!   `session/update` line parsed as JSON (as a client does) and counted.
//!
//! Both agents use blocking events (no delta is dropped), so both count
//! every update. The figure is the wall time per update (total / updates);
//! the difference is what the server adds per update: mapping to the ACP
//! schema types, serializing, the writer queue and the pipe. The summary is
//! a Markdown table on stdout; the samples are JSON on stderr.

use std::time::{Duration, Instant};

use agent_adaptor_bridges::acp::AcpServer;
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::{Agent, Event, Phase, Runner};
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Text deltas per run.
    pub updates: usize,
    /// Runs per path.
    pub reps: usize,
}

/// One path's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    /// `direct` or `acp`.
    pub path: &'static str,
    /// Updates per run.
    pub updates: usize,
    /// Every run's µs per update.
    pub per_update_us: Vec<f64>,
    /// Their median.
    pub median_us: f64,
}

fn agent(plan: Plan) -> Result<Agent, String> {
    let chunks: Vec<String> = (0..plan.updates).map(|i| format!("w{i} ")).collect();
    Agent::builder(ScriptedDriver::text_chunks(&chunks))
        .blocking_events()
        .build()
        .map_err(|e| e.to_string())
}

async fn direct(agent: &Agent, plan: Plan) -> Result<Duration, String> {
    let start = Instant::now();
    let mut stream = agent.stream("go");
    let mut seen = 0;
    while let Some(event) = stream.next().await {
        if matches!(&event, Event::TextDelta(d) if d.phase == Phase::Content) {
            seen += 1;
        }
    }
    let took = start.elapsed();
    stream.result().await.map_err(|e| e.to_string())?;
    if seen != plan.updates {
        return Err(format!("direct: {seen} deltas of {}", plan.updates));
    }
    Ok(took)
}

async fn acp(agent: &Agent, plan: Plan) -> Result<Duration, String> {
    let server = AcpServer::new(agent.clone());
    let (client, agent_side) = tokio::io::duplex(1 << 20);
    let (agent_in, agent_out) = tokio::io::split(agent_side);
    let serving = tokio::spawn(async move { server.serve(agent_in, agent_out).await });
    let (from, mut to) = tokio::io::split(client);
    let mut lines = BufReader::new(from).lines();
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let mut send = async |frame: Value| {
        let mut line = frame.to_string();
        line.push('\n');
        to.write_all(line.as_bytes())
            .await
            .map_err(|e| e.to_string())
    };
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "session/new",
        "params": {"cwd": cwd, "mcpServers": []}}))
    .await?;
    let first = lines.next_line().await.map_err(|e| e.to_string())?;
    let new: Value = serde_json::from_str(&first.unwrap_or_default()).map_err(|e| e.to_string())?;
    let session = new["result"]["sessionId"].clone();
    let start = Instant::now();
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
    )
    .await?;
    let mut seen = 0;
    let took = loop {
        let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? else {
            return Err("acp: the server ended first".into());
        };
        let frame: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
        if frame["method"] == "session/update" {
            seen += 1;
        } else if frame["id"] == 1 {
            if frame["result"]["stopReason"] != "end_turn" {
                return Err(format!("acp: {frame}"));
            }
            break start.elapsed();
        }
    };
    to.shutdown().await.map_err(|e| e.to_string())?;
    serving
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    if seen != plan.updates {
        return Err(format!("acp: {seen} updates of {}", plan.updates));
    }
    Ok(took)
}

fn summarize(path: &'static str, plan: Plan, runs: &[Duration]) -> Figures {
    let mut per: Vec<f64> = runs
        .iter()
        .map(|d| d.as_secs_f64() * 1e6 / plan.updates as f64)
        .collect();
    let samples = per.clone();
    per.sort_by(f64::total_cmp);
    Figures {
        path,
        updates: plan.updates,
        per_update_us: samples,
        median_us: per[per.len() / 2],
    }
}

/// Run the plan (one warm-up run of each path first).
pub fn run(plan: &Plan) -> Result<Vec<Figures>, String> {
    let plan = Plan {
        updates: plan.updates.max(1),
        reps: plan.reps.max(1),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let agent = agent(plan)?;
        direct(&agent, plan).await?;
        acp(&agent, plan).await?;
        let (mut d, mut a) = (Vec::new(), Vec::new());
        for _ in 0..plan.reps {
            d.push(direct(&agent, plan).await?);
            a.push(acp(&agent, plan).await?);
        }
        Ok(vec![
            summarize("direct", plan, &d),
            summarize("acp", plan, &a),
        ])
    })
}

/// The Markdown summary.
pub fn markdown(figures: &[Figures]) -> String {
    let mut out = String::from(
        "| path | updates | median µs per update | added µs per update |\n|---|---|---|---|\n",
    );
    let base = figures.first().map_or(0.0, |f| f.median_us);
    for f in figures {
        out.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} |\n",
            f.path,
            f.updates,
            f.median_us,
            f.median_us - base
        ));
    }
    out
}
