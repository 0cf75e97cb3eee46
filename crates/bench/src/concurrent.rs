//! Many runs in one process (`agent-adaptor-bench concurrent …`).
//!
//! `runs` runs of one agent are started at once on a multi-thread tokio
//! runtime, each with a task that reads every event of its `stream()`; this
//! is repeated `rounds` times. The report is this process's CPU time spent
//! between the first start and the last result (runtime start-up excluded)
//! and the events the runs handled. With `runs = 1` it is the single-run
//! reference the concurrent figure is compared with.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::child::{Setup, agent, consume, runtime};
use crate::usage::{self, Usage};

/// What `concurrent` prints (one JSON line).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ConcurrentReport {
    /// Runs started at once.
    pub runs: u64,
    /// How many times.
    pub rounds: u64,
    /// Runs that did not succeed.
    pub failed: u64,
    /// The first failure.
    pub error: Option<String>,
    /// Events handled: delivered (without the `Dropped` reports) plus dropped.
    pub events: u64,
    /// Events the broker dropped.
    pub dropped: u64,
    /// CPU of this process over the runs only.
    pub cpu: Usage,
    /// Wall time over the runs, s.
    pub wall_s: f64,
    /// `cpu / events`, µs.
    pub cpu_us_per_event: f64,
}

/// Runs the rounds and reports.
pub fn run(setup: &Setup, runs: u64, rounds: u64) -> Result<ConcurrentReport, String> {
    let agent = agent(setup, false)?;
    let rt = runtime()?;
    let mut report = ConcurrentReport {
        runs,
        rounds,
        ..ConcurrentReport::default()
    };
    let before = usage::this_process();
    let started = Instant::now();
    rt.block_on(async {
        for _ in 0..rounds {
            let tasks: Vec<_> = (0..runs)
                .map(|_| {
                    let agent = agent.clone();
                    tokio::spawn(async move { consume(&agent, false).await })
                })
                .collect();
            for task in tasks {
                match task.await {
                    Ok((tally, outcome)) => {
                        report.events += tally.events - tally.dropped_reports + tally.dropped;
                        report.dropped += tally.dropped;
                        if let Err(e) = outcome {
                            report.failed += 1;
                            report.error.get_or_insert_with(|| e.to_string());
                        }
                    }
                    Err(e) => {
                        report.failed += 1;
                        report.error.get_or_insert_with(|| e.to_string());
                    }
                }
            }
        }
    });
    report.wall_s = started.elapsed().as_secs_f64();
    report.cpu = usage::this_process().since(&before);
    if report.events > 0 {
        report.cpu_us_per_event = report.cpu.cpu_s() * 1e6 / report.events as f64;
    }
    Ok(report)
}
