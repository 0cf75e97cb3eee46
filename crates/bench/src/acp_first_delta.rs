//! The time from `run()` to the first text delta of the real Gemini CLI, over
//! ACP (`acp:gemini`, `gemini --acp`) and over its stream-json transport
//! (the Gemini driver, `gemini -p … --output-format stream-json`)
//! (`agent-adaptor-bench acp-first-delta [--reps N]`).
//!
//! Both drivers run the same pinned binary (`scripts/install-clis`), offline
//! against one testkit mock model server, with one prepared home and one
//! workspace; the runs alternate (ACP, stream-json, ACP, …) so both see the
//! machine in the same state. A sample is the wall time from the call that
//! starts the run to the first content text delta; every run must end `ok`.
//! The summary (min, median, max per transport, ms, and the ACP median over
//! the stream-json median) is a Markdown table on stdout; the samples are
//! JSON on stderr.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_adaptor_core::{Agent, Event, Phase, Runner};
use agent_adaptor_drivers::acp::{self, AcpAgent};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::gemini;
use agent_adaptor_testkit::clis::{GEMINI, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use futures::StreamExt;
use serde::Serialize;

/// The keyword the mock answers.
const KEYWORD: &str = "ACPFIRSTDELTA";

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Measured runs per transport.
    pub reps: usize,
}

/// One transport's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    /// `acp` or `stream-json`.
    pub transport: &'static str,
    /// Every sample, ms, in run order.
    pub samples_ms: Vec<f64>,
    /// Fastest, ms.
    pub min_ms: f64,
    /// Median, ms.
    pub median_ms: f64,
    /// Slowest, ms.
    pub max_ms: f64,
}

fn figures(transport: &'static str, samples: &[Duration]) -> Figures {
    let samples_ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    let mut sorted = samples_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let median_ms = if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    Figures {
        transport,
        min_ms: sorted.first().copied().unwrap_or_default(),
        max_ms: sorted.last().copied().unwrap_or_default(),
        median_ms,
        samples_ms,
    }
}

/// The wall time from the start of a run of `agent` to its first content
/// text delta; an error when the run has none or does not end `ok`.
async fn first_delta(agent: &Agent) -> Result<Duration, String> {
    let started = Instant::now();
    let mut stream = agent.stream(&format!("{KEYWORD}: answer"));
    let mut first = None;
    while let Some(event) = stream.next().await {
        if first.is_none() && matches!(&event, Event::TextDelta(d) if d.phase == Phase::Content) {
            first = Some(started.elapsed());
        }
    }
    stream
        .result()
        .await
        .map_err(|e| format!("a run failed: {e}"))?;
    first.ok_or_else(|| "a run without a text delta".to_owned())
}

fn acp_agent(binary: &Path, env: &[(String, String)], workspace: &Path) -> Agent {
    Agent::new(acp::driver(acp::Config {
        command: Some(binary.to_path_buf()),
        model: Some(GEMINI.model.into()),
        env: env.iter().cloned().collect(),
        env_policy: EnvPolicy::only(["PATH", "USER"]),
        cwd: Some(workspace.to_path_buf()),
        ..acp::Config::for_agent(AcpAgent::Gemini)
    }))
}

fn stream_json_agent(binary: &Path, env: &[(String, String)], workspace: &Path) -> Agent {
    Agent::new(gemini::driver(gemini::Config {
        command: binary.to_path_buf(),
        model: Some(GEMINI.model.into()),
        env: env.iter().cloned().collect(),
        env_policy: EnvPolicy::only(["PATH", "USER"]),
        cwd: Some(workspace.to_path_buf()),
        ..Default::default()
    }))
}

/// Run the plan: both transports, alternating, one warm-up run each first.
pub fn run(plan: &Plan) -> Result<Vec<Figures>, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let script = Script::new().on_prompt(
            KEYWORD,
            vec![Reply::Text("A short answer of a few deltas.".into())],
        );
        let server = MockServer::start(script)
            .await
            .map_err(|e| format!("start the mock: {e}"))?;
        let home = ScratchDir::new("bench-acp").map_err(|e| e.to_string())?;
        let binary: PathBuf = GEMINI.binary().map_err(|e| e.to_string())?;
        let env = GEMINI
            .prepare(&server.base_url(), home.path())
            .map_err(|e| e.to_string())?;
        let workspace = home.path().join("work");
        std::fs::create_dir_all(&workspace).map_err(|e| e.to_string())?;
        let acp = acp_agent(&binary, &env, &workspace);
        let json = stream_json_agent(&binary, &env, &workspace);
        first_delta(&acp).await?;
        first_delta(&json).await?;
        let (mut acp_samples, mut json_samples) = (Vec::new(), Vec::new());
        for _ in 0..plan.reps {
            acp_samples.push(first_delta(&acp).await?);
            json_samples.push(first_delta(&json).await?);
        }
        acp.close().await;
        json.close().await;
        Ok(vec![
            figures("acp", &acp_samples),
            figures("stream-json", &json_samples),
        ])
    })
}

/// The figures as a Markdown table, with the ACP median over the
/// stream-json median.
pub fn markdown(figures: &[Figures]) -> String {
    let mut out = String::from(
        "| Gemini CLI, run() → first text delta | runs | min ms | median ms | max ms |\n|---|---|---|---|---|\n",
    );
    for f in figures {
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} | {:.0} |\n",
            f.transport,
            f.samples_ms.len(),
            f.min_ms,
            f.median_ms,
            f.max_ms
        ));
    }
    if let [acp, json] = figures
        && json.median_ms > 0.0
    {
        out.push_str(&format!(
            "\nACP median / stream-json median: {:.2}\n",
            acp.median_ms / json.median_ms
        ));
    }
    out
}
