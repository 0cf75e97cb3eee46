//! 1,000 randomized spawn → partial read → cancel / shutdown / finish / drop
//! cycles. After every cycle no process of its group may remain, and after
//! every batch the test process holds exactly its baseline descriptors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use agent_adaptor_process::{Process, StdinMode};
use bytes::Bytes;
use common::{
    TestSink, become_subreaper, fd_count, fd_list, pid_exists, sh, split_lines,
    wait_group_gone_async,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const CYCLES: u64 = 1000;
const PARALLEL: u64 = 10;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tail {
    /// The leader exits after its output.
    Exit,
    /// `cat`: echoes stdin until EOF.
    Cat,
    /// `exec sleep 30`: dies on SIGTERM.
    Sleep,
    /// Ignores SIGTERM (and so do its sleeps): only SIGKILL ends it.
    Stubborn,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    Shutdown,
    Finish,
    Drop,
}

/// What one cycle did: how it ended and how many reads it cancelled.
type Outcome = (End, usize);

async fn cycle(seed: u64) -> Result<Outcome, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let n: usize = match rng.random_range(0..4) {
        0 => 0,
        1 => rng.random_range(1..10),
        2 => rng.random_range(10..300),
        _ => rng.random_range(300..3000),
    };
    let len = rng.random_range(0..120);
    let line: String = (0..len)
        .map(|_| rng.sample(rand::distr::Alphanumeric) as char)
        .collect();
    let mut script = String::new();
    for _ in 0..rng.random_range(0..=2) {
        // grandchildren: some hold the output pipes, some do not
        script.push_str(if rng.random_bool(0.5) {
            "sleep 30 & "
        } else {
            "sleep 30 >/dev/null 2>&1 & "
        });
    }
    script.push_str(&format!(
        "yes '{line}' | head -n {n}; echo \"err-{seed}\" >&2; "
    ));
    let tail = [Tail::Exit, Tail::Cat, Tail::Sleep, Tail::Stubborn][rng.random_range(0..4)];
    script.push_str(match tail {
        Tail::Exit => "exit 0",
        Tail::Cat => "cat",
        Tail::Sleep => "exec sleep 30",
        Tail::Stubborn => "trap '' TERM; while :; do sleep 0.05; done",
    });
    let end = [End::Shutdown, End::Shutdown, End::Finish, End::Drop][rng.random_range(0..4)];

    let mut expected: Vec<u8> = format!("{line}\n").repeat(n).into_bytes();
    let mut cmd = sh(&script);
    cmd.close_grace(Duration::from_millis(rng.random_range(10..60)))
        .term_grace(Duration::from_millis(rng.random_range(10..60)));
    let stdin_mode = rng.random_range(0..3);
    let mut echoed: Vec<u8> = Vec::new();
    match stdin_mode {
        0 => {}
        1 => {
            let b = format!("bytes-{seed}\n");
            echoed.extend_from_slice(b.as_bytes());
            cmd.stdin(StdinMode::Bytes(Bytes::from(b)));
        }
        _ => {
            cmd.stdin(StdinMode::Pipe);
        }
    }
    let never_ends = matches!(tail, Tail::Sleep | Tail::Stubborn);
    if end == End::Finish && never_ends {
        cmd.timeout(Some(Duration::from_millis(rng.random_range(20..150))));
    }
    let ctx = format!("seed {seed}: {end:?} {tail:?} stdin#{stdin_mode} `{script}`");

    let sink = TestSink::new();
    let mut p = Process::spawn(&cmd).map_err(|e| format!("{ctx}: spawn: {e}"))?;
    let pid = p.pid();
    let mut controller = p.take_stdin();
    if let Some(c) = controller.as_mut() {
        for i in 0..rng.random_range(0..4) {
            let frame = format!("frame-{seed}-{i}");
            let written = c.write_line(frame.as_bytes()).await;
            if tail != Tail::Cat {
                // nobody reads stdin; the leader may already be gone (EPIPE)
                continue;
            }
            written.map_err(|e| format!("{ctx}: write: {e}"))?;
            echoed.extend_from_slice(frame.as_bytes());
            echoed.push(b'\n');
        }
        if rng.random_bool(0.3) {
            controller.take().unwrap().close().await;
        }
    }
    if tail == Tail::Cat {
        expected.extend_from_slice(&echoed);
    }
    // Lines that will certainly arrive, so a blocking read never hangs.
    let available = split_lines(&expected).len();

    let want = rng.random_range(0..=available);
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut cancels = 0;
    while got.len() < want {
        let res = if rng.random_bool(0.3) {
            let d = Duration::from_micros(rng.random_range(0..400));
            match tokio::time::timeout(d, p.next_line(&sink)).await {
                Ok(r) => r,
                Err(_) => {
                    cancels += 1;
                    if rng.random_bool(0.3) {
                        break; // cancelled for good
                    }
                    continue; // cancelled, then pulled again
                }
            }
        } else {
            tokio::time::timeout(Duration::from_secs(10), p.next_line(&sink))
                .await
                .map_err(|_| format!("{ctx}: next_line hung"))?
        };
        match res.map_err(|e| format!("{ctx}: next_line: {e}"))? {
            Some(l) => got.push(l.bytes().to_vec().unwrap()),
            None => break,
        }
    }

    let fin = match end {
        End::Drop => {
            drop(controller);
            drop(p);
            wait_group_gone_async(pid, Duration::from_secs(5))
                .await
                .map_err(|left| format!("{ctx}: survivors after drop: {left:?}"))?;
            let want_lines = split_lines(&expected);
            if got[..] != want_lines[..got.len()] {
                return Err(format!("{ctx}: lines differ"));
            }
            return Ok((end, cancels));
        }
        End::Finish => {
            drop(controller); // EOF for cat
            tokio::time::timeout(Duration::from_secs(10), p.finish(&sink)).await
        }
        End::Shutdown => tokio::time::timeout(Duration::from_secs(10), p.shutdown(&sink)).await,
    }
    .map_err(|_| format!("{ctx}: {end:?} hung"))?
    .map_err(|e| format!("{ctx}: {end:?}: {e}"))?;

    if pid_exists(pid) {
        return Err(format!("{ctx}: leader {pid} not reaped"));
    }
    wait_group_gone_async(pid, Duration::from_secs(2))
        .await
        .map_err(|left| format!("{ctx}: survivors: {left:?}"))?;

    let raw = fin.stdout.to_vec().unwrap();
    if !expected.starts_with(&raw) {
        return Err(format!(
            "{ctx}: raw stdout ({} bytes) is not a prefix of the output",
            raw.len()
        ));
    }
    // shutdown closes stdin first, so only finish promises the whole echo
    if end == End::Finish && fin.exit.code == Some(0) && raw != expected {
        return Err(format!(
            "{ctx}: clean exit but raw stdout has {} of {} bytes",
            raw.len(),
            expected.len()
        ));
    }
    let raw_lines = split_lines(&raw);
    if got.len() > raw_lines.len() || got[..] != raw_lines[..got.len()] {
        return Err(format!("{ctx}: pulled lines do not match the raw capture"));
    }
    let seen = sink.seen();
    if seen.stdout != raw || seen.stderr != fin.stderr.to_vec().unwrap() {
        return Err(format!("{ctx}: emitted chunks differ from the raw capture"));
    }
    let err_line = format!("err-{seed}\n").into_bytes();
    if !err_line.starts_with(&fin.stderr.to_vec().unwrap()) {
        return Err(format!(
            "{ctx}: unexpected stderr {:?}",
            fin.stderr.to_string_lossy()
        ));
    }
    if fin.exit.code.is_none() && fin.exit.signal.is_none() {
        return Err(format!("{ctx}: exit unknown: {:?}", fin.exit));
    }
    if end == End::Finish && never_ends && !fin.exit.timed_out {
        return Err(format!("{ctx}: expected timed_out, got {:?}", fin.exit));
    }
    if end == End::Finish && matches!(tail, Tail::Exit | Tail::Cat) && fin.exit.code != Some(0) {
        return Err(format!("{ctx}: expected a clean exit, got {:?}", fin.exit));
    }
    Ok((end, cancels))
}

async fn wait_fds(baseline: usize) -> Result<(), String> {
    let start = Instant::now();
    loop {
        let now = fd_count();
        if now == baseline {
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(3) {
            return Err(format!(
                "{now} fds open, baseline {baseline}: {:#?}",
                fd_list()
            ));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn run_batch(first: u64, count: u64, outcomes: &mut Vec<Outcome>) {
    let mut set = tokio::task::JoinSet::new();
    for seed in first..first + count {
        set.spawn(cycle(seed));
    }
    while let Some(res) = set.join_next().await {
        match res.unwrap() {
            Ok(outcome) => outcomes.push(outcome),
            Err(msg) => panic!("{msg}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn randomized_cycles_leave_no_process_and_no_descriptor() {
    become_subreaper();
    // warm-up: the runtime's signal and process machinery opens its fds once
    run_batch(1_000_000, PARALLEL, &mut Vec::new()).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let baseline = fd_count();

    let started = Instant::now();
    let mut outcomes = Vec::new();
    let mut seed = 0;
    while seed < CYCLES {
        let count = PARALLEL.min(CYCLES - seed);
        run_batch(seed, count, &mut outcomes).await;
        seed += count;
        if let Err(msg) = wait_fds(baseline).await {
            panic!("after {seed} cycles: {msg}");
        }
    }
    let count = |e: End| outcomes.iter().filter(|(end, _)| *end == e).count();
    let cancels: usize = outcomes.iter().map(|(_, c)| c).sum();
    eprintln!(
        "{CYCLES} cycles in {:?} ({PARALLEL} at a time): {} shutdown, {} finish, {} drop; {cancels} next_line calls cancelled",
        started.elapsed(),
        count(End::Shutdown),
        count(End::Finish),
        count(End::Drop),
    );
    assert_eq!(outcomes.len() as u64, CYCLES);
    assert!(count(End::Shutdown) > 0 && count(End::Finish) > 0 && count(End::Drop) > 0);
    assert!(cancels > 0);
}
