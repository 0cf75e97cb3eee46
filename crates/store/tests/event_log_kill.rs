//! Recording workers killed with SIGKILL mid-run: the thread's event log
//! holds a prefix of what the runs emitted — cursors 1..=N without holes,
//! every run's events in sequence from 1, every row decodes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::Event;
use agent_adaptor_core::thread::EventQuery;
use agent_adaptor_store::suite::read_all;
use agent_adaptor_store::{SqliteStore, ThreadStore};

/// Start a `record` worker on `key`, wait for its `RUN <runs>` line, wait
/// `delay`, SIGKILL it.
fn kill_mid_run(backend: &[String], key: &str, runs: u64, delay: Duration) {
    let mut child = common::worker()
        .arg("record")
        .args(backend)
        .args(["--key", key])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let want = format!("RUN {runs}");
    loop {
        match lines.next() {
            Some(Ok(line)) if line == want => break,
            Some(Ok(_)) => {}
            other => panic!(
                "the worker ended before {want}: {other:?} {:?}",
                child.wait()
            ),
        }
    }
    std::thread::sleep(delay);
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status:?}");
}

/// The log of `key` is a prefix of `runs`+ whole runs: returns whether
/// the last run recorded is cut short.
async fn check_prefix(store: &dyn ThreadStore, key: &str, runs: u64) -> bool {
    let log = read_all(store, key, EventQuery::since(0)).await.unwrap();
    for (i, e) in log.iter().enumerate() {
        assert_eq!(e.cursor, i as u64 + 1, "a hole before cursor {}", e.cursor);
    }
    let mut complete = 0;
    let mut last_cut = false;
    let mut i = 0;
    while i < log.len() {
        let run = &log[i].run_id;
        let start = i;
        while i < log.len() && &log[i].run_id == run {
            let seq = log[i].event.meta().sequence;
            assert_eq!(
                seq,
                (i - start) as u64 + 1,
                "run {run}: a hole at cursor {}",
                log[i].cursor
            );
            i += 1;
        }
        assert!(
            log[start].prompt.is_some(),
            "run {run}: first record without its prompt"
        );
        assert!(
            matches!(log[start].event, Event::RunStarted(_)),
            "run {run} starts elsewhere"
        );
        let finished = matches!(log[i - 1].event, Event::RunFinished(_));
        if i < log.len() {
            assert!(finished, "run {run} is cut short but another follows");
        }
        complete += usize::from(finished);
        last_cut = !finished;
    }
    assert!(
        complete as u64 >= runs,
        "{complete} complete runs, {runs} acknowledged"
    );
    last_cut
}

async fn ten_kills(backend: Vec<String>, store: Arc<dyn ThreadStore>) {
    let base = format!("kill/{:016x}", rand::random::<u64>());
    let mut cut = 0;
    for i in 0..10u64 {
        let key = format!("{base}/{i}");
        let runs = 1 + i % 3;
        let delay = Duration::from_micros(2_000 + rand::random::<u64>() % 40_000);
        kill_mid_run(&backend, &key, runs, delay);
        cut += usize::from(check_prefix(&*store, &key, runs).await);
    }
    eprintln!("{cut} of 10 kills left a run cut short");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_run_leaves_a_prefix_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let backend = vec!["--sqlite".to_owned(), path.display().to_string()];
    ten_kills(backend, Arc::new(store)).await;
}

#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_run_leaves_a_prefix_postgres() {
    let url = common::pg_url();
    let store = agent_adaptor_store::PgStore::connect(&url).await.unwrap();
    ten_kills(vec!["--pg".to_owned(), url], Arc::new(store)).await;
}
