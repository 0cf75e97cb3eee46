//! `store_worker`: a process that hammers a thread store, for the crate's
//! crash and multi-process race tests (not a user-facing tool).
//!
//! ```text
//! store_worker crash (--sqlite PATH | --pg URL) --key KEY --owner OWNER
//!                    [--ttl-ms 150] [--payload-bytes 32768]
//!     take KEY's lease (waiting out another holder), then finalize one
//!     record after another, forever, printing `READY`, then
//!     `BEGIN <id> <turn>` before and `COMMIT <id>` after each finalize;
//!     meant to be killed with SIGKILL.
//! store_worker race (--sqlite PATH | --pg URL) --prefix P --owner OWNER
//!                   [--keys 20] [--turns 500] [--workers 8]
//!     take TURNS turns over KEYS keys with WORKERS concurrent tasks: each
//!     turn acquires the key's lease (Busy: retry), resolves, finalizes a
//!     record counting the key's turns, releases; prints
//!     `DONE <turns> busy=<retries> lost=<lease losses>`.
//! store_worker turns (--sqlite PATH | --pg URL) --owner OWNER
//!     read lines from stdin: `turn KEY` takes one turn on KEY (as in race
//!     mode) and prints `OK <turn>` or `ERR <error>`; `hold KEY PROMPT…`
//!     takes KEY's lease as a run (`acquire_run_lease`, owner OWNER, TTL
//!     one hour) and prints `HELD`; end of input exits 0. For faults
//!     injected between turns, and for a holder killed mid-run.
//! store_worker record (--sqlite PATH | --pg URL) --key KEY [--words 2000]
//!     run a recorded thread (`record_events`, keep all) on KEY over a
//!     scripted driver answering WORDS deltas, one run after another,
//!     forever, printing `RUN <n>` before run n; meant to be killed with
//!     SIGKILL mid-run (the event log must then hold a prefix).
//! ```
//!
//! Records carry `values["turn"]` (the key's turn count), `values["owner"]`
//! and, in crash mode, a random `payload` with its FNV-1a `digest`, so a
//! checker can tell a whole record from a torn one.
#![forbid(unsafe_code)]

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agent_adaptor_store::suite::{sample_record, turn_of};
use agent_adaptor_store::{
    FinalizeRequest, Lease, PgConfig, PgStore, SqliteStore, StoreError, ThreadRecord, ThreadStore,
};

/// How long a worker waits for a lease before giving up.
const PATIENCE: Duration = Duration::from_secs(60);

struct Args(Vec<String>);

impl Args {
    fn value(&self, flag: &str) -> Option<&str> {
        let at = self.0.iter().position(|a| a == flag)?;
        self.0.get(at + 1).map(String::as_str)
    }

    fn required(&self, flag: &str) -> Result<&str, String> {
        self.value(flag).ok_or_else(|| format!("missing {flag}"))
    }

    fn number(&self, flag: &str, default: u64) -> Result<u64, String> {
        match self.value(flag) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("{flag}: not a number: {v}")),
        }
    }
}

fn main() -> ExitCode {
    let args = Args(std::env::args().skip(1).collect());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("store_worker: runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        let store = open(&args).await?;
        match args.0.first().map(String::as_str) {
            Some("crash") => crash(&args, store).await,
            Some("race") => race(&args, store).await,
            Some("turns") => turns(&args, store).await,
            Some("record") => record(&args, store).await,
            _ => Err("usage: store_worker (crash|race|turns|record) …".to_owned()),
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("store_worker: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn open(args: &Args) -> Result<Arc<dyn ThreadStore>, String> {
    if let Some(path) = args.value("--sqlite") {
        let store = SqliteStore::open(path).await.map_err(|e| e.to_string())?;
        return Ok(Arc::new(store));
    }
    if let Some(url) = args.value("--pg") {
        let config = PgConfig {
            max_connections: 4,
            ..PgConfig::default()
        };
        let store = PgStore::connect_with(url, config)
            .await
            .map_err(|e| e.to_string())?;
        return Ok(Arc::new(store));
    }
    Err("need --sqlite PATH or --pg URL".into())
}

/// FNV-1a, 64 bits, as lowercase hex: the payload's digest.
fn digest(data: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in data.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Take `target`'s lease, retrying while it is busy (for up to PATIENCE).
async fn acquire(
    store: &dyn ThreadStore,
    target: &str,
    owner: &str,
    ttl: Duration,
    busy: &AtomicU64,
) -> Result<Lease, String> {
    let started = Instant::now();
    loop {
        match store.acquire_lease(target, owner, ttl).await {
            Ok(lease) => return Ok(lease),
            Err(StoreError::Busy { .. }) if started.elapsed() < PATIENCE => {
                busy.fetch_add(1, Ordering::Relaxed);
                let pause = 1 + rand::random::<u64>() % 4;
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            Err(e) => return Err(format!("acquire {target}: {e}")),
        }
    }
}

fn say(line: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| format!("stdout: {e}"))
}

async fn crash(args: &Args, store: Arc<dyn ThreadStore>) -> Result<(), String> {
    let key = args.required("--key")?;
    let owner = args.required("--owner")?;
    let ttl = Duration::from_millis(args.number("--ttl-ms", 150)?);
    let payload_bytes =
        usize::try_from(args.number("--payload-bytes", 32 * 1024)?).map_err(|e| e.to_string())?;
    let target = format!("key:{key}");
    let busy = AtomicU64::new(0);
    let mut lease = acquire(&*store, &target, owner, ttl, &busy).await?;
    say("READY")?;
    loop {
        lease = match store.renew_lease(&lease, ttl).await {
            Ok(l) => l,
            Err(StoreError::LeaseLost { .. }) => {
                acquire(&*store, &target, owner, ttl, &busy).await?
            }
            Err(e) => return Err(format!("renew: {e}")),
        };
        let current = store
            .resolve(key, false)
            .await
            .map_err(|e| format!("resolve: {e}"))?;
        let turn = current.as_ref().and_then(turn_of).unwrap_or(0) + 1;
        let mut record = sample_record(key, turn, current.as_ref());
        let payload: String = (0..payload_bytes.div_ceil(16))
            .map(|_| format!("{:016x}", rand::random::<u64>()))
            .collect();
        let values = &mut record.params.values;
        values.insert("owner".into(), owner.to_owned());
        values.insert("digest".into(), digest(&payload));
        values.insert("payload".into(), payload);
        say(&format!("BEGIN {} {turn}", record.id))?;
        let request = FinalizeRequest {
            lease: lease.clone(),
            record: record.clone(),
            require_key_absent: false,
        };
        match store.finalize(request).await {
            Ok(_) => say(&format!("COMMIT {}", record.id))?,
            Err(StoreError::LeaseLost { .. }) => say(&format!("LOST {}", record.id))?,
            Err(e) => return Err(format!("finalize: {e}")),
        }
    }
}

async fn turns(args: &Args, store: Arc<dyn ThreadStore>) -> Result<(), String> {
    let owner = args.required("--owner")?.to_owned();
    let tally = Tally {
        next: AtomicU64::new(0),
        busy: AtomicU64::new(0),
        lost: AtomicU64::new(0),
    };
    let mut line = String::new();
    loop {
        line.clear();
        let read = std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| format!("stdin: {e}"))?;
        if read == 0 {
            return Ok(());
        }
        let mut words = line.trim_end().splitn(3, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("turn"), Some(key), None) => {
                match take_turn(&*store, key, &owner, &tally).await {
                    Ok(saved) => say(&format!("OK {}", turn_of(&saved).unwrap_or(0)))?,
                    Err(e) => say(&format!("ERR {e}"))?,
                }
            }
            (Some("hold"), Some(key), prompt) => {
                let target = format!("key:{key}");
                let ttl = Duration::from_secs(3600);
                match store
                    .acquire_run_lease(&target, &owner, ttl, prompt.unwrap_or(""))
                    .await
                {
                    Ok(_) => say("HELD")?,
                    Err(e) => say(&format!("ERR {e}"))?,
                }
            }
            _ => return Err(format!("unknown command: {line:?}")),
        }
    }
}

struct Tally {
    next: AtomicU64,
    busy: AtomicU64,
    lost: AtomicU64,
}

async fn race(args: &Args, store: Arc<dyn ThreadStore>) -> Result<(), String> {
    let prefix = args.required("--prefix")?.to_owned();
    let owner = args.required("--owner")?.to_owned();
    let keys = args.number("--keys", 20)?.max(1);
    let turns = args.number("--turns", 500)?;
    let workers = args.number("--workers", 8)?.max(1);
    let tally = Arc::new(Tally {
        next: AtomicU64::new(0),
        busy: AtomicU64::new(0),
        lost: AtomicU64::new(0),
    });
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let (store, tally) = (store.clone(), tally.clone());
            let (prefix, owner) = (prefix.clone(), format!("{owner}-w{w}"));
            tokio::spawn(async move {
                let mut done = 0u64;
                while tally.next.fetch_add(1, Ordering::Relaxed) < turns {
                    let key = format!("{prefix}/{}", rand::random::<u64>() % keys);
                    take_turn(&*store, &key, &owner, &tally).await?;
                    done += 1;
                }
                Ok::<u64, String>(done)
            })
        })
        .collect();
    let mut done = 0;
    for task in tasks {
        done += task.await.map_err(|e| e.to_string())??;
    }
    say(&format!(
        "DONE {done} busy={} lost={}",
        tally.busy.load(Ordering::Relaxed),
        tally.lost.load(Ordering::Relaxed)
    ))
}

/// One turn: lease, resolve, finalize turn + 1, release. A lost lease (the
/// turn was not saved) retries the whole turn.
async fn take_turn(
    store: &dyn ThreadStore,
    key: &str,
    owner: &str,
    tally: &Tally,
) -> Result<ThreadRecord, String> {
    let target = format!("key:{key}");
    loop {
        let lease = acquire(store, &target, owner, Duration::from_secs(30), &tally.busy).await?;
        let current = store
            .resolve(key, false)
            .await
            .map_err(|e| format!("resolve: {e}"))?;
        let turn = current.as_ref().and_then(turn_of).unwrap_or(0) + 1;
        let mut record = sample_record(key, turn, current.as_ref());
        record
            .params
            .values
            .insert("owner".into(), owner.to_owned());
        let request = FinalizeRequest {
            lease: lease.clone(),
            record,
            require_key_absent: false,
        };
        let outcome = store.finalize(request).await;
        store
            .release_lease(&lease)
            .await
            .map_err(|e| format!("release: {e}"))?;
        match outcome {
            Ok(saved) => return Ok(saved),
            Err(StoreError::LeaseLost { .. }) => {
                tally.lost.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => return Err(format!("finalize: {e}")),
        }
    }
}

/// `record` mode: recorded thread runs, forever (see the module docs).
async fn record(args: &Args, store: Arc<dyn ThreadStore>) -> Result<(), String> {
    use agent_adaptor_core::Runner;
    use agent_adaptor_core::scripted::ScriptedDriver;
    use agent_adaptor_core::thread::Retention;
    let key = args.required("--key")?;
    let words: String = (0..args.number("--words", 2000)?)
        .map(|i| format!("w{i} "))
        .collect();
    let agent = agent_adaptor_core::Agent::builder(ScriptedDriver::resumable_reply(&words, "s"))
        .thread_store(store)
        .build()
        .map_err(|e| e.to_string())?;
    let thread = agent.thread(key).record_events(Retention::keep_all());
    let mut out = std::io::stdout();
    for n in 0u64.. {
        writeln!(out, "RUN {n}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
        thread
            .run(&format!("prompt {n}"))
            .await
            .map_err(|e| format!("run {n}: {e}"))?;
    }
    Ok(())
}
