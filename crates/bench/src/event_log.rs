//! The event log recorder's cost and the replay rate
//! (`agent-adaptor-bench event-log [--events N] [--reps N] [--pg URL]`).
//!
//! One scripted thread run of `events` text deltas on a store (a SQLite
//! file with its default, fully synced durability; PostgreSQL when a URL
//! is given, or `PG_TEST_URL` is set), `reps` times each way, alternating:
//!
//! * **plain**: `thread.run(…)` (lease, resolve, finalize: what a thread
//!   run costs without the log);
//! * **recorded**: the same with `record_events(Retention::keep_all())`,
//!   every event appended to the store before the run's result.
//!
//! Every run uses a key of its own. The figures are medians: the recorded
//! run's wall time over the plain one's (ratio), the difference per
//! recorded event (µs), and the replay rate: every recorded event of a run
//! read back with `since(0)` (pages of 1,000), in events per second. The
//! summary is a Markdown table on stdout; the samples are JSON on stderr.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::thread::{EventQuery, Retention, ThreadStore};
use agent_adaptor_core::{Agent, Runner};
use agent_adaptor_store::{PgStore, SqliteStore};
use serde::Serialize;

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Text deltas per run.
    pub events: usize,
    /// Runs per way and store.
    pub reps: usize,
    /// A PostgreSQL server, when one is given.
    pub pg: Option<String>,
}

/// One store's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    /// `sqlite` or `postgres`.
    pub store: &'static str,
    /// Events recorded per run (the deltas plus the run's other events).
    pub recorded_events: usize,
    /// Every plain run's wall time, ms.
    pub plain_ms: Vec<f64>,
    /// Every recorded run's wall time, ms.
    pub recorded_ms: Vec<f64>,
    /// Every replay's rate, events per second.
    pub replay_per_s: Vec<f64>,
    /// Median recorded over median plain.
    pub ratio: f64,
    /// (median recorded - median plain) per recorded event, µs.
    pub cost_per_event_us: f64,
    /// Median replay rate, events per second.
    pub replay_median_per_s: f64,
}

/// Run the plan on every store it names.
pub fn run(plan: &Plan) -> Result<Vec<Figures>, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("aa-bench-event-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let sqlite = SqliteStore::open(dir.join("threads.db"))
            .await
            .map_err(|e| e.to_string())?;
        let mut all = vec![measure("sqlite", Arc::new(sqlite), plan).await?];
        if let Some(url) = &plan.pg {
            let pg = PgStore::connect(url).await.map_err(|e| e.to_string())?;
            all.push(measure("postgres", Arc::new(pg), plan).await?);
        }
        let _ = std::fs::remove_dir_all(&dir);
        Ok(all)
    })
}

async fn measure(
    name: &'static str,
    store: Arc<dyn ThreadStore>,
    plan: &Plan,
) -> Result<Figures, String> {
    let words: String = (0..plan.events).map(|i| format!("w{i} ")).collect();
    let agent = Agent::builder(ScriptedDriver::resumable_reply(&words, "s"))
        .thread_store(store.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let tag = format!("bench/{}/{:x}", std::process::id(), rand_tag());
    let (mut plain, mut recorded, mut replay) = (Vec::new(), Vec::new(), Vec::new());
    let mut recorded_events = 0;
    for rep in 0..plan.reps {
        let thread = agent.thread(format!("{tag}/plain/{rep}"));
        let start = Instant::now();
        thread.run("p").await.map_err(|e| e.to_string())?;
        plain.push(ms(start.elapsed()));

        let key = format!("{tag}/recorded/{rep}");
        let thread = agent
            .thread(key.clone())
            .record_events(Retention::keep_all());
        let start = Instant::now();
        thread.run("p").await.map_err(|e| e.to_string())?;
        recorded.push(ms(start.elapsed()));

        let start = Instant::now();
        let mut read = 0;
        let mut query = Some(EventQuery::since(0).max_events(1000));
        while let Some(q) = query {
            let page = store.events(&key, &q).await.map_err(|e| e.to_string())?;
            read += page.events.len();
            query = page.next;
        }
        replay.push(read as f64 / start.elapsed().as_secs_f64());
        recorded_events = read;
    }
    let (p, r) = (median(&plain), median(&recorded));
    Ok(Figures {
        store: name,
        recorded_events,
        ratio: r / p,
        cost_per_event_us: (r - p) * 1000.0 / recorded_events.max(1) as f64,
        replay_median_per_s: median(&replay),
        plain_ms: plain,
        recorded_ms: recorded,
        replay_per_s: replay,
    })
}

fn rand_tag() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n => sorted[n / 2],
    }
}

/// The summary table.
pub fn markdown(figures: &[Figures]) -> String {
    let mut out = String::from(
        "| store | events/run | plain run (ms) | recorded run (ms) | recorded / plain | recorder cost per event (µs) | replay (events/s) |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for f in figures {
        out.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} | {:.2} | {:.2} | {:.0} |\n",
            f.store,
            f.recorded_events,
            median(&f.plain_ms),
            median(&f.recorded_ms),
            f.ratio,
            f.cost_per_event_us,
            f.replay_median_per_s
        ));
    }
    out
}
