//! Helpers shared by the store's integration tests.
#![allow(dead_code)]

pub mod broken;
pub mod turns;

/// The PostgreSQL test server. Only the `postgres-tests` binaries call
/// this; with that feature on, an unset `PG_TEST_URL` is a failure, not a
/// skip.
pub fn pg_url() -> String {
    match std::env::var("PG_TEST_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "the postgres-tests feature is on but PG_TEST_URL is unset: \
             run under `bash scripts/with-postgres …` (or drop the feature)"
        ),
    }
}

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_adaptor_store::suite::turn_of;
use agent_adaptor_store::{
    PgStore, RecordStatus, SqliteStore, StoreError, ThreadRecord, ThreadStore,
};

/// The crate's worker binary (`src/bin/store_worker.rs`).
pub fn worker() -> Command {
    Command::new(env!("CARGO_BIN_EXE_store_worker"))
}

/// FNV-1a 64 as hex, as the worker computes it.
pub fn digest(data: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in data.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// A key's records (oldest first) form one linear chain: the first has no
/// predecessor, each next one names the one before, turns count 1, 2, 3 …,
/// only the last is active, ids are unique, and every payload matches its
/// digest. Returns the number of turns.
pub fn check_chain(key: &str, records: &[ThreadRecord]) -> Result<u64, String> {
    let mut ids = HashSet::new();
    for (i, r) in records.iter().enumerate() {
        let at = format!("{key} record #{i} ({})", r.id);
        if r.key != key || !ids.insert(r.id.clone()) {
            return Err(format!("{at}: wrong key or duplicate id"));
        }
        let expected_prev = i.checked_sub(1).map(|p| records[p].id.clone());
        if r.previous_id != expected_prev {
            return Err(format!(
                "{at}: previous_id {:?}, expected {expected_prev:?} (a fork: two turns ran on one state)",
                r.previous_id
            ));
        }
        if turn_of(r) != Some(i as u64 + 1) {
            return Err(format!("{at}: turn {:?}, expected {}", turn_of(r), i + 1));
        }
        let last = i + 1 == records.len();
        let expected_status = if last {
            RecordStatus::Active
        } else {
            RecordStatus::Archived
        };
        if r.status != expected_status {
            return Err(format!("{at}: status {:?}", r.status));
        }
        if let Some(payload) = r.params.values.get("payload")
            && r.params.values.get("digest") != Some(&digest(payload))
        {
            return Err(format!(
                "{at}: payload does not match its digest (torn record)"
            ));
        }
    }
    Ok(records.len() as u64)
}

/// What a test can audit beyond the `ThreadStore` trait.
pub trait Audit: ThreadStore {
    /// Every record of `key`, oldest first.
    fn all_records(&self, key: &str)
    -> impl Future<Output = Result<Vec<ThreadRecord>, StoreError>>;
    /// The backend's own consistency check.
    fn integrity(&self) -> impl Future<Output = Result<(), StoreError>>;
}

impl Audit for SqliteStore {
    fn all_records(
        &self,
        key: &str,
    ) -> impl Future<Output = Result<Vec<ThreadRecord>, StoreError>> {
        self.records(key)
    }
    fn integrity(&self) -> impl Future<Output = Result<(), StoreError>> {
        self.integrity_check()
    }
}

impl Audit for PgStore {
    fn all_records(
        &self,
        key: &str,
    ) -> impl Future<Output = Result<Vec<ThreadRecord>, StoreError>> {
        self.records(key)
    }
    fn integrity(&self) -> impl Future<Output = Result<(), StoreError>> {
        std::future::ready(Ok(()))
    }
}

/// The lines a killed crash worker printed.
pub struct Killed {
    /// `BEGIN` ids, in order.
    pub begun: Vec<String>,
    /// `COMMIT` ids.
    pub committed: Vec<String>,
}

/// Run `store_worker crash …`, wait for its lease, let it start
/// `kill_after` finalizes, wait `delay`, SIGKILL it, and collect what it
/// printed (including lines still in the pipe).
pub fn run_and_kill(args: &[String], kill_after: usize, delay: Duration) -> Result<Killed, String> {
    let mut child = worker()
        .arg("crash")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let (mut begun, mut committed) = (Vec::new(), Vec::new());
    let record = |line: &str, begun: &mut Vec<String>, committed: &mut Vec<String>| {
        let mut parts = line.split(' ');
        match (parts.next(), parts.next()) {
            (Some("BEGIN"), Some(id)) => begun.push(id.to_owned()),
            (Some("COMMIT"), Some(id)) => committed.push(id.to_owned()),
            _ => {}
        }
    };
    let mut ready = false;
    while begun.len() < kill_after {
        let Some(Ok(line)) = lines.next() else {
            let status = child.wait().map_err(|e| e.to_string())?;
            return Err(format!("the worker ended before it was killed: {status}"));
        };
        ready |= line == "READY";
        record(&line, &mut begun, &mut committed);
    }
    if !ready {
        return Err("BEGIN before READY".into());
    }
    std::thread::sleep(delay);
    child.kill().map_err(|e| format!("kill: {e}"))?;
    let status = child.wait().map_err(|e| e.to_string())?;
    if status.signal() != Some(9) {
        return Err(format!("the worker was not killed by SIGKILL: {status}"));
    }
    for line in lines.map_while(Result::ok) {
        record(&line, &mut begun, &mut committed);
    }
    Ok(Killed { begun, committed })
}

/// What the crash loop observed.
#[derive(Debug, Default)]
pub struct CrashStats {
    /// Workers killed.
    pub kills: usize,
    /// Kills after which the killed worker's lease still blocked others.
    pub lease_still_held: usize,
    /// Kills whose in-flight finalize had committed (record present, no
    /// `COMMIT` line yet).
    pub in_flight_committed: usize,
    /// Kills whose in-flight finalize left no trace.
    pub in_flight_rolled_back: usize,
    /// Kills after the in-flight finalize had been acknowledged.
    pub between_finalizes: usize,
    /// Finalizes the workers acknowledged (`COMMIT` lines), over all kills.
    pub acknowledged: u64,
    /// Records in the chain at the end.
    pub turns: u64,
    /// Wall time of the whole loop.
    pub elapsed: Duration,
}

/// Kill `kills` crash workers (`backend` = `--sqlite PATH` or `--pg URL`)
/// mid-finalize on `key`, checking the store after each kill: the backend's
/// integrity check passes; the key's records form one whole chain (so at
/// most one active record, no torn record); every acknowledged finalize is
/// there; nothing appears that no worker began; and the dead worker's lease
/// is taken over once it expires.
pub async fn crash_loop<S: Audit>(
    store: &S,
    backend: &[String],
    key: &str,
    kills: usize,
    ttl: Duration,
) -> Result<CrashStats, String> {
    let started = Instant::now();
    let target = format!("key:{key}");
    let mut stats = CrashStats::default();
    let mut all_begun = HashSet::new();
    for i in 0..kills {
        let mut args = backend.to_vec();
        args.extend(
            [
                "--key",
                key,
                "--owner",
                &format!("child-{i}"),
                "--ttl-ms",
                &ttl.as_millis().to_string(),
            ]
            .map(String::from),
        );
        let kill_after = 1 + (rand_u64() % 3) as usize;
        // Three kills in four come within 3 ms of the BEGIN, inside the
        // finalize on any machine; the rest up to 12 ms in, so kills also land
        // after a finalize returned. (A uniform 0–12 ms put only about half inside a
        // finalize on a fast disk, so "most kills landed inside" was a coin
        // toss.)
        let window_us = if i % 4 == 3 { 12_000 } else { 3_000 };
        let delay = Duration::from_micros(rand_u64() % window_us);
        let killed = tokio::task::spawn_blocking(move || run_and_kill(&args, kill_after, delay))
            .await
            .map_err(|e| e.to_string())??;
        stats.kills += 1;
        let probe = store.acquire_lease(&target, "parent-probe", ttl).await;
        match probe {
            Err(StoreError::Busy { .. }) => stats.lease_still_held += 1,
            Ok(lease) => store
                .release_lease(&lease)
                .await
                .map_err(|e| e.to_string())?,
            Err(e) => return Err(format!("probe: {e}")),
        }
        store
            .integrity()
            .await
            .map_err(|e| format!("kill {i}: integrity: {e}"))?;
        let records = store
            .all_records(key)
            .await
            .map_err(|e| format!("kill {i}: {e}"))?;
        stats.turns = check_chain(key, &records).map_err(|e| format!("kill {i}: {e}"))?;
        let ids: HashSet<&str> = records.iter().map(|r| r.id.as_str()).collect();
        all_begun.extend(killed.begun.iter().cloned());
        if let Some(missing) = killed
            .committed
            .iter()
            .find(|id| !ids.contains(id.as_str()))
        {
            return Err(format!("kill {i}: acknowledged record {missing} is gone"));
        }
        if let Some(phantom) = ids.iter().find(|id| !all_begun.contains(**id)) {
            return Err(format!("kill {i}: record {phantom} that no worker began"));
        }
        stats.acknowledged += killed.committed.len() as u64;
        let in_flight = killed.begun.last().ok_or("no BEGIN")?;
        if killed.committed.contains(in_flight) {
            stats.between_finalizes += 1;
        } else if ids.contains(in_flight.as_str()) {
            stats.in_flight_committed += 1;
        } else {
            stats.in_flight_rolled_back += 1;
        }
        // Every record is an acknowledged finalize or one a kill interrupted
        // after it committed, at most one per kill (a server may finish such
        // a commit after the check that followed its kill, so only the bounds
        // are exact).
        let least = stats.acknowledged + stats.in_flight_committed as u64;
        let most = stats.acknowledged + stats.kills as u64;
        if !(least..=most).contains(&stats.turns) {
            return Err(format!(
                "kill {i}: {} records, but {} acknowledged, {} committed in flight, {} kills",
                stats.turns, stats.acknowledged, stats.in_flight_committed, stats.kills
            ));
        }
        // The dead worker's lease is taken over once it expires.
        let deadline = Instant::now() + ttl + Duration::from_secs(5);
        loop {
            match store.acquire_lease(&target, "parent", ttl).await {
                Ok(lease) => {
                    store
                        .release_lease(&lease)
                        .await
                        .map_err(|e| e.to_string())?;
                    break;
                }
                Err(StoreError::Busy { .. }) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => return Err(format!("kill {i}: takeover: {e}")),
            }
        }
    }
    stats.elapsed = started.elapsed();
    Ok(stats)
}

/// A random u64 without a `rand` dev-dependency.
pub fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(Instant::now())
}

/// What a multi-process race observed.
#[derive(Debug)]
pub struct RaceStats {
    /// Turns each process reported, with its busy retries and lost leases.
    pub reports: Vec<String>,
    /// Turns found in the store, summed over the keys.
    pub turns_found: u64,
    /// The highest turn count of one key.
    pub busiest_key: u64,
    /// Wall time of the race (processes started to all exited).
    pub elapsed: Duration,
}

/// Start `processes` `store_worker race` processes at once against
/// `backend` (each `turns` turns over `keys` keys under `prefix`), wait
/// for all, then check every key's chain and sum the turns. `audit` reads
/// a key's records.
pub async fn race<S: Audit>(
    store: &S,
    backend: &[String],
    prefix: &str,
    processes: usize,
    turns: u64,
    keys: u64,
) -> Result<RaceStats, String> {
    let started = Instant::now();
    let children: Vec<_> = (0..processes)
        .map(|p| {
            worker()
                .arg("race")
                .args(backend)
                .args(["--prefix", prefix, "--owner", &format!("proc{p}")])
                .args(["--turns", &turns.to_string(), "--keys", &keys.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|e| format!("spawn: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let reports = tokio::task::spawn_blocking(move || {
        let mut reports = Vec::new();
        for child in children {
            let out = child.wait_with_output().map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if !out.status.success() || !text.starts_with(&format!("DONE {turns} ")) {
                return Err(format!("a racer failed: {} {text:?}", out.status));
            }
            reports.push(text);
        }
        Ok::<_, String>(reports)
    })
    .await
    .map_err(|e| e.to_string())??;
    let elapsed = started.elapsed();
    let (mut turns_found, mut busiest_key) = (0, 0);
    for k in 0..keys {
        let key = format!("{prefix}/{k}");
        let records = store.all_records(&key).await.map_err(|e| e.to_string())?;
        let n = check_chain(&key, &records)?;
        turns_found += n;
        busiest_key = busiest_key.max(n);
    }
    Ok(RaceStats {
        reports,
        turns_found,
        busiest_key,
        elapsed,
    })
}
