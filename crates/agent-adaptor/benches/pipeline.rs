//! Event-pipeline throughput benchmark (divan).
//!
//! # What is measured
//!
//! Events per second through the whole live-event path of one run:
//!
//! ```text
//! bench driver ──emit_stream──▶ core sink (FIFO lock, lifecycle check,
//!   translation, timestamp) ──▶ broker (sequence, bounded queue, drop
//!   policy) ──▶ RunStream ──StreamExt::next──▶ consumer (counts events)
//! ```
//!
//! Everything runs on **one core**: a `current_thread` tokio runtime, with the
//! run task (driver + sink + broker publisher) and the consumer interleaved on
//! the same thread. The bench-local [`FloodDriver`] emits `run.started`,
//! `text.start("m1")`, `N` × `text.content("m1", "x")`, `text.end`,
//! `run.finished` — `N + 4` payloads — and returns a default `Response`.
//! One timed iteration is one complete run: `agent.stream("p")`, drain to the
//! end, then `result()` (asserted to be `Ok`).
//!
//! Variants (each for `N` = 10 000 and 100 000):
//!
//! * `pipeline_lossless` — non-blocking (default) broker with
//!   `event_buffer(N + 16)`: nothing can be dropped; asserts that all `N + 4`
//!   events arrive.
//! * `pipeline_default_buffer` — non-blocking broker with the default 1024
//!   buffer: content deltas may be dropped when the producer outruns the
//!   consumer (the drop count is reported once, before the table, as
//!   `probe …` lines, from the aggregated `Event::Dropped`). On a
//!   current-thread runtime this usually reports 0: every sink call takes
//!   the sink's tokio `Mutex`, which spends tokio's cooperative budget (128
//!   per task poll), so the driver task yields to the consumer at least every
//!   ~128 events and the queue never gets near 1024.
//! * `pipeline_blocking` — `blocking_events()` with the default buffer: no
//!   drops, the driver waits for the consumer.
//! * `baseline_mpsc` — the reference: `N + 4` small owned values (a `String`
//!   of one byte plus a `u64`, built per message like the driver's deltas)
//!   sent from a spawned task through `tokio::sync::mpsc::channel(1024)` to
//!   a consumer on the same current-thread runtime.
//!
//! # How to read it
//!
//! The counter is the `N + 4` payloads the producer *offers* per iteration,
//! so divan's `item/s` column is offered events per second (for
//! `pipeline_default_buffer`, fewer may be *delivered*; see the probe lines).
//! Compare each pipeline variant's median against `baseline_mpsc` for the same
//! `N` **from the same run**: the ratio `pipeline / baseline` is the cost of
//! the SDK's per-event work (lock, checks, translation, `Utc::now()`,
//! sequencing, drop accounting) relative to a bare bounded channel, and is far
//! more stable across machines than the absolute numbers.
//!
//! Run with `cargo bench -p agent-adaptor --bench pipeline`.

use std::hint::black_box;

use agent_adaptor::driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, Request, Response, RunContext,
    StreamCapability, StreamPayload, async_trait,
};
use agent_adaptor::{Agent, Event, Runner};
use divan::counter::ItemsCount;
use divan::{Bencher, black_box_drop};
use futures::StreamExt;
use tokio::runtime::Runtime;

/// Content deltas per run.
const SIZES: [usize; 2] = [10_000, 100_000];

/// Payloads the driver emits besides the deltas: run.started, text.start,
/// text.end, run.finished. Core publishes its own RunStarted/RunFinished in
/// place of the driver's run frames, so a lossless run delivers `N + 4`.
const FRAMING: usize = 4;

fn main() {
    probe_drops();
    divan::main();
}

/// A driver that floods the sink with `deltas` one-byte text deltas.
struct FloodDriver {
    deltas: usize,
}

#[async_trait]
impl Driver for FloodDriver {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new("bench-flood", "Bench flood")
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        Some(StreamCapability::FULL)
    }

    async fn run(
        &self,
        _ctx: RunContext,
        _req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        sink.emit_stream(StreamPayload::run_started()).await?;
        sink.emit_stream(StreamPayload::text_start("m1")).await?;
        for _ in 0..self.deltas {
            sink.emit_stream(StreamPayload::text_content("m1", "x"))
                .await?;
        }
        sink.emit_stream(StreamPayload::text_end("m1")).await?;
        sink.emit_stream(StreamPayload::run_finished(None)).await?;
        Ok(Response {
            ..Default::default()
        })
    }
}

#[derive(Clone, Copy, Debug)]
enum Variant {
    Lossless,
    DefaultBuffer,
    Blocking,
}

fn runtime() -> Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("cannot build the tokio runtime: {e}"),
    }
}

fn agent(variant: Variant, n: usize) -> Agent {
    let builder = Agent::builder(FloodDriver { deltas: n });
    let builder = match variant {
        Variant::Lossless => builder.event_buffer(n + 16),
        Variant::DefaultBuffer => builder,
        Variant::Blocking => builder.blocking_events(),
    };
    match builder.build() {
        Ok(agent) => agent,
        Err(e) => panic!("cannot build the agent: {e}"),
    }
}

/// What the consumer saw in one run.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    /// Events received (including any `Dropped` report).
    events: u64,
    /// Events the broker reported as dropped.
    dropped: u64,
}

/// One complete run: stream, drain, outcome.
async fn one_run(agent: &Agent) -> Tally {
    let mut stream = agent.stream("p");
    let mut tally = Tally::default();
    while let Some(ev) = stream.next().await {
        if let Event::Dropped(d) = &ev {
            tally.dropped += d.count;
        }
        tally.events += 1;
        black_box_drop(ev);
    }
    if let Err(e) = stream.result().await {
        panic!("bench run failed: {e}");
    }
    tally
}

fn bench_pipeline(bencher: Bencher, variant: Variant, n: usize) {
    let rt = runtime();
    let agent = agent(variant, n);
    let expected = (n + FRAMING) as u64;
    bencher
        .counter(ItemsCount::new(n + FRAMING))
        .bench_local(|| {
            let tally = rt.block_on(one_run(&agent));
            match variant {
                Variant::Lossless | Variant::Blocking => {
                    assert_eq!(tally.events, expected, "{variant:?} lost events");
                    assert_eq!(tally.dropped, 0, "{variant:?} dropped events");
                }
                // Delivered + dropped − the one aggregated `Dropped` report
                // per gap must account for every event.
                Variant::DefaultBuffer => assert!(tally.events + tally.dropped >= expected),
            }
            tally
        });
}

#[divan::bench(args = SIZES)]
fn pipeline_lossless(bencher: Bencher, n: usize) {
    bench_pipeline(bencher, Variant::Lossless, n);
}

#[divan::bench(args = SIZES)]
fn pipeline_default_buffer(bencher: Bencher, n: usize) {
    bench_pipeline(bencher, Variant::DefaultBuffer, n);
}

#[divan::bench(args = SIZES)]
fn pipeline_blocking(bencher: Bencher, n: usize) {
    bench_pipeline(bencher, Variant::Blocking, n);
}

/// The baseline message: as small and owned as a one-byte text delta.
struct Msg {
    text: String,
    seq: u64,
}

async fn baseline_run(total: usize) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Msg>(1024);
    let producer = tokio::spawn(async move {
        for seq in 0..total as u64 {
            let msg = Msg {
                text: "x".to_owned(),
                seq,
            };
            if tx.send(msg).await.is_err() {
                break;
            }
        }
    });
    let mut count = 0u64;
    while let Some(msg) = rx.recv().await {
        black_box(msg.seq);
        black_box_drop(msg.text);
        count += 1;
    }
    if let Err(e) = producer.await {
        panic!("baseline producer failed: {e}");
    }
    count
}

#[divan::bench(args = SIZES)]
fn baseline_mpsc(bencher: Bencher, n: usize) {
    let rt = runtime();
    let total = n + FRAMING;
    bencher.counter(ItemsCount::new(total)).bench_local(|| {
        let count = rt.block_on(baseline_run(total));
        assert_eq!(count, total as u64);
        count
    });
}

/// One untimed run of each pipeline variant per size, printed before the
/// divan table so the drop behaviour of the default buffer is visible.
fn probe_drops() {
    let rt = runtime();
    for variant in [Variant::Lossless, Variant::DefaultBuffer, Variant::Blocking] {
        for n in SIZES {
            let agent = agent(variant, n);
            let tally = rt.block_on(one_run(&agent));
            println!(
                "probe {variant:?} N={n}: offered {}, received {} events, dropped {} deltas",
                n + FRAMING,
                tally.events,
                tally.dropped,
            );
        }
    }
}
