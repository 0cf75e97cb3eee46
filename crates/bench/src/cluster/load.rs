//! The bounded load of a cluster run: threads of K turns each, half over
//! AG-UI and half over A2A, spread over the live instances; a share of the
//! streams cut by the client and resumed on another instance, a share of
//! the turns asking for a tool approval answered on another instance (when
//! the servers share approvals). Every request has a timeout; a refused
//! request (busy thread, run limit, dead instance) is retried until the
//! turn's deadline, a run that started is never sent again.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::sse_client::{SseRequest, SseStream, post_sse_partial};

/// One request, at most.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(180);
/// How long a turn keeps retrying a refused request.
const TURN_DEADLINE: Duration = Duration::from_secs(120);
/// Frames a cut stream delivers before the client drops it.
const CUT_AFTER: usize = 3;
/// The mock's keyword for turns that call an approved tool.
pub const APPROVE: &str = "APPROVE-TOOL";

/// The checks that need features a server may not have yet; each is off
/// until its feature landed.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Switches {
    /// Approvals are answered on another instance than the one running
    /// the agent (durable approvals); off: on the same instance.
    pub approvals_anywhere: bool,
    /// A2A streams are resumed (`SubscribeToTask`) and killed tasks read
    /// (`GetTask`) on another instance (tasks in the store); off: a cut
    /// A2A stream is resumed on its own instance.
    pub a2a_anywhere: bool,
    /// The servers take `--lease-ttl` and sweep a dead instance's runs;
    /// streams broken by the kill are then resumed elsewhere and must end
    /// with a terminal event. Off: the killed instance is restarted under
    /// its id to recover its runs, and broken streams are judged from the
    /// store alone.
    pub lease: bool,
    /// A cut AG-UI stream may be resumed on its own instance (the
    /// in-memory reattach; with one instance there is no other). Off: AG-UI
    /// streams are cut only where another instance replays them from the
    /// event log (today a reattach right after the cut can get an empty
    /// 200 or a stream without a terminal event).
    pub agui_reattach: bool,
}

/// The instances as the clients see them.
pub struct Cluster {
    /// Where each instance listens.
    pub addrs: Vec<SocketAddr>,
    alive: Vec<AtomicBool>,
    token: String,
    /// What the servers support.
    pub switches: Switches,
    /// Turns begun so far (the kill waits for a share of them).
    pub started: AtomicUsize,
}

impl Cluster {
    /// Every instance alive.
    pub fn new(addrs: Vec<SocketAddr>, token: String, switches: Switches) -> Cluster {
        Cluster {
            alive: addrs.iter().map(|_| AtomicBool::new(true)).collect(),
            addrs,
            token,
            switches,
            started: AtomicUsize::new(0),
        }
    }

    /// No client picks `node` from now on.
    pub fn mark_dead(&self, node: usize) {
        if let Some(a) = self.alive.get(node) {
            a.store(false, Ordering::SeqCst);
        }
    }

    fn alive(&self, node: usize) -> bool {
        self.alive
            .get(node)
            .is_some_and(|a| a.load(Ordering::SeqCst))
    }

    /// A live instance chosen by `seed`, other than `not` when there is one.
    fn pick(&self, seed: u64, not: Option<usize>) -> usize {
        let live: Vec<usize> = (0..self.addrs.len()).filter(|i| self.alive(*i)).collect();
        let others: Vec<usize> = live.iter().copied().filter(|i| Some(*i) != not).collect();
        let from = if others.is_empty() { &live } else { &others };
        match from.len() {
            0 => not.unwrap_or(0),
            n => from[(mix(seed) % n as u64) as usize],
        }
    }

    fn request(&self, node: usize, path: &str, body: &Value, extra: &[(&str, &str)]) -> SseRequest {
        let mut headers = vec![
            ("Authorization".to_owned(), format!("Bearer {}", self.token)),
            ("Accept".to_owned(), "text/event-stream".to_owned()),
            ("A2A-Version".to_owned(), "1.0".to_owned()),
        ];
        headers.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        SseRequest {
            addr: self.addrs[node],
            path: path.to_owned(),
            headers,
            body: body.to_string(),
        }
    }
}

/// A pseudo-random number from a seed (splitmix64): reproducible choices.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Which protocol a thread speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// `POST /agui`.
    Agui,
    /// `POST /a2a`, `SendStreamingMessage`.
    A2a,
}

/// How a turn ended, as its client saw it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The run finished with its result.
    Completed,
    /// The run was reported interrupted (its instance died).
    Interrupted,
    /// The instance running it died under the client; the store says
    /// what became of the run.
    Broken,
    /// The run was cancelled because its only client was cut off (the
    /// server cancels a run its last client left; the resume elsewhere
    /// replayed the cancellation).
    CancelledByCut,
    /// Anything else: a check failed.
    Failed(String),
}

/// One turn's record.
#[derive(Clone, Debug, Serialize)]
pub struct TurnReport {
    /// The thread's index.
    pub thread: usize,
    /// The turn's index in its thread.
    pub turn: usize,
    /// Its protocol.
    pub protocol: Protocol,
    /// The unique text in its prompt (the mock log and the store find it).
    pub tag: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Time to the first frame of its first stream, ms.
    pub ttff_ms: Option<f64>,
    /// The instance the run started on.
    pub node: usize,
    /// Approvals answered, and how many of them on another instance.
    pub approvals: (usize, usize),
    /// Streams resumed after a cut or a kill, and how many on another
    /// instance.
    pub resumes: (usize, usize),
    /// Streams that did not end with exactly one terminal event.
    pub stream_errors: Vec<String>,
}

/// The load's shape.
#[derive(Clone, Debug)]
pub struct Load {
    /// A name unique in the database (prefixes thread ids and tags).
    pub phase: String,
    /// Threads.
    pub threads: usize,
    /// Turns per thread.
    pub turns: usize,
    /// Turns running at once, at most.
    pub concurrency: usize,
    /// Every n-th thread asks for an approval (0: none).
    pub approve_every: usize,
    /// Every n-th thread's first stream is cut and resumed (0: none).
    pub cut_every: usize,
}

/// Runs the load; every turn's record, in no particular order.
pub async fn run(cluster: Arc<Cluster>, load: &Load) -> Vec<TurnReport> {
    let permits = Arc::new(Semaphore::new(load.concurrency.max(1)));
    let tasks: Vec<_> = (0..load.threads)
        .map(|thread| {
            let (cluster, permits, load) = (cluster.clone(), permits.clone(), load.clone());
            tokio::spawn(async move {
                let mut out = Vec::new();
                for turn in 0..load.turns {
                    let Ok(_permit) = permits.acquire().await else {
                        break;
                    };
                    cluster.started.fetch_add(1, Ordering::SeqCst);
                    out.push(one_turn(&cluster, &load, thread, turn).await);
                }
                out
            })
        })
        .collect();
    let mut reports = Vec::new();
    for t in tasks {
        if let Ok(r) = t.await {
            reports.extend(r);
        }
    }
    reports
}

async fn one_turn(c: &Cluster, load: &Load, thread: usize, turn: usize) -> TurnReport {
    let protocol = if thread.is_multiple_of(2) {
        Protocol::Agui
    } else {
        Protocol::A2a
    };
    // Pairs of threads (one AG-UI, one A2A) share the choices.
    let every = |n: usize, offset: usize| n > 0 && (thread / 2) % n == offset % n;
    let tag = format!("[{} t{thread} k{turn}]", load.phase);
    let approve = every(load.approve_every, 3) && turn == 0;
    let prompt = if approve {
        format!("{APPROVE} list the files {tag}")
    } else {
        format!("hello {tag}")
    };
    let mut report = TurnReport {
        thread,
        turn,
        protocol,
        tag,
        outcome: Outcome::Completed,
        ttff_ms: None,
        node: 0,
        approvals: (0, 0),
        resumes: (0, 0),
        stream_errors: Vec::new(),
    };
    let turn_index = turn;
    let mut turn = Turn {
        c,
        thread_id: format!("{}-t{thread}", load.phase),
        run_id: format!("{}-t{thread}-k{turn}", load.phase),
        prompt,
        seed: ((thread as u64) << 16) | turn as u64,
        cut: every(load.cut_every, 5)
            && turn == 0
            && (protocol == Protocol::A2a || c.addrs.len() > 1 || c.switches.agui_reattach),
    };
    // A thread still leased by a dead instance refuses the run before it
    // starts (its prompt never reaches the model): try again until the
    // lease is recovered, under a new run id.
    let deadline = Instant::now() + TURN_DEADLINE;
    for attempt in 1u64.. {
        report.outcome = match protocol {
            Protocol::Agui => turn.agui(&mut report).await,
            Protocol::A2a => turn.a2a(&mut report).await,
        };
        let retry = matches!(&report.outcome, Outcome::Failed(why) if busy(why));
        if !retry || Instant::now() > deadline {
            break;
        }
        report.stream_errors.clear();
        turn.run_id = format!("{}-k{}-b{attempt}", turn.thread_id, turn_index);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    report
}

/// The instance `node` died under the turn's request.
fn broken(report: &mut TurnReport, node: usize) -> Outcome {
    report.node = node;
    Outcome::Broken
}

/// Whether a refusal says the thread is busy (another run holds its lease).
fn busy(why: &str) -> bool {
    why.to_ascii_lowercase().contains("busy")
}

/// One turn in flight.
struct Turn<'a> {
    c: &'a Cluster,
    thread_id: String,
    run_id: String,
    prompt: String,
    seed: u64,
    cut: bool,
}

/// What opening a stream gave.
enum Opened {
    Stream(usize, SseStream),
    Ended(Outcome),
    /// This instance died under the request.
    Broken(usize),
}

impl Turn<'_> {
    /// POST `body` to `node` (or, while it refuses or is dead before the
    /// request went out, to another live one) until a stream starts.
    async fn open(
        &self,
        mut node: usize,
        path: &str,
        body: &Value,
        extra: &[(&str, &str)],
        cut: bool,
    ) -> Opened {
        let deadline = Instant::now() + TURN_DEADLINE;
        let mut attempt = 0u64;
        loop {
            attempt += 1;
            let req = self.c.request(node, path, body, extra);
            let cut_after = cut.then_some(CUT_AFTER);
            let reply = tokio::time::timeout(REQUEST_TIMEOUT, post_sse_partial(&req, cut_after));
            let why = match reply.await {
                Err(_) => return Opened::Ended(Outcome::Failed(format!("{path}: timed out"))),
                Ok(Err(e)) if e.starts_with("connect ") => e,
                Ok(Err(_))
                | Ok(Ok(SseStream {
                    broken: Some(_), ..
                })) if !self.c.alive(node) => {
                    return Opened::Broken(node);
                }
                Ok(Err(e)) => return Opened::Ended(Outcome::Failed(format!("{path}: {e}"))),
                Ok(Ok(s)) if s.frames.is_empty() => {
                    let why = format!("status {}: {}", s.status, s.error_body.trim());
                    if !matches!(s.status, 409 | 429 | 503) && !busy(&why) {
                        return Opened::Ended(Outcome::Failed(format!("{path}: {why}")));
                    }
                    why
                }
                Ok(Ok(s)) => return Opened::Stream(node, s),
            };
            if Instant::now() > deadline {
                return Opened::Ended(Outcome::Failed(format!(
                    "{path}: refused until the deadline: {why}"
                )));
            }
            if !self.c.alive(node) {
                node = self.c.pick(self.seed ^ attempt, Some(node));
            }
            tokio::time::sleep(Duration::from_millis(100 * attempt.min(10))).await;
        }
    }

    /// A JSON-RPC call answered with JSON (not a stream).
    async fn rpc(&self, node: usize, body: &Value) -> Result<Value, String> {
        let req = self.c.request(node, "/a2a", body, &[]);
        let s = tokio::time::timeout(REQUEST_TIMEOUT, post_sse_partial(&req, None))
            .await
            .map_err(|_| "timed out".to_owned())??;
        serde_json::from_str(&s.error_body).map_err(|e| format!("{e}: {}", s.error_body))
    }

    /// An AG-UI turn: the run, its resumes after a cut, its approvals.
    async fn agui(&self, report: &mut TurnReport) -> Outcome {
        let messages =
            json!([{"id": format!("{}-m", self.run_id), "role": "user", "content": self.prompt}]);
        let mut run_id = self.run_id.clone();
        let mut body = json!({"threadId": self.thread_id, "runId": run_id, "messages": messages});
        let first = self.c.pick(self.seed, None);
        let (mut node, mut stream) = match self.open(first, "/agui", &body, &[], self.cut).await {
            Opened::Stream(n, s) => (n, s),
            Opened::Ended(o) => return o,
            Opened::Broken(n) => return broken(report, n),
        };
        report.node = node;
        report.ttff_ms = stream.first_frame.map(|d| d.as_secs_f64() * 1e3);
        let mut frames = Vec::new();
        for _ in 0..8 {
            frames.extend(stream.frames.iter().cloned());
            let resume_after = stream.cut || (stream.broken.is_some() && self.c.switches.lease);
            if stream.broken.is_some() && !resume_after {
                return if self.c.alive(node) {
                    Outcome::Failed(format!("AG-UI stream broke: {:?}", stream.broken))
                } else {
                    Outcome::Broken
                };
            }
            if resume_after {
                let last = frames.iter().rev().find_map(|f| f.id_text.clone());
                let Some(last) = last else {
                    return Outcome::Failed("a cut AG-UI stream without an id".into());
                };
                let other = self.c.pick(self.seed ^ 0x5eed, Some(node));
                report.resumes.0 += 1;
                report.resumes.1 += usize::from(other != node);
                let header = [("Last-Event-ID", last.as_str())];
                (node, stream) = match self.open(other, "/agui", &body, &header, false).await {
                    Opened::Stream(n, s) => (n, s),
                    Opened::Ended(o) => return o,
                    Opened::Broken(n) => return broken(report, n),
                };
                continue;
            }
            let kinds: Vec<&str> = frames.iter().map(|f| f.kind()).collect();
            let terminals = kinds
                .iter()
                .filter(|k| matches!(**k, "RUN_FINISHED" | "RUN_ERROR"))
                .count();
            let last = frames.last().map(|f| f.data.clone()).unwrap_or_default();
            let last_kind = last["type"].as_str().unwrap_or("");
            if terminals != 1 || !matches!(last_kind, "RUN_FINISHED" | "RUN_ERROR") {
                report.stream_errors.push(format!(
                    "AG-UI {run_id}: {terminals} terminal events, last {last_kind:?}"
                ));
            }
            if last_kind == "RUN_ERROR" {
                let text = last.to_string();
                return if text.contains("interrupt") {
                    Outcome::Interrupted
                } else {
                    Outcome::Failed(format!("RUN_ERROR: {text}"))
                };
            }
            match last["outcome"]["type"].as_str() {
                Some("interrupt") => {
                    let id = last["outcome"]["interrupts"][0]["id"].clone();
                    let answer_on = if self.c.switches.approvals_anywhere {
                        self.c.pick(self.seed ^ 0xa99, Some(node))
                    } else {
                        node
                    };
                    report.approvals.0 += 1;
                    report.approvals.1 += usize::from(answer_on != node);
                    run_id = format!("{}-resume{}", self.run_id, report.approvals.0);
                    body = json!({"threadId": self.thread_id, "runId": run_id, "messages": messages,
                        "resume": [{"interruptId": id, "status": "resolved", "payload": {"approved": true}}]});
                    (node, stream) = match self.open(answer_on, "/agui", &body, &[], false).await {
                        Opened::Stream(n, s) => (n, s),
                        // The run's host died while it waited: its approval
                        // expired with its lease.
                        Opened::Ended(Outcome::Failed(why))
                            if !self.c.alive(node) && why.contains("expired") =>
                        {
                            return Outcome::Interrupted;
                        }
                        Opened::Ended(o) => return o,
                        // The answering instance died under the answer while
                        // the run's host lives: the same resume elsewhere
                        // (answered once; a retry streams the resumed run).
                        Opened::Broken(n) if n != node && self.c.alive(node) => {
                            let again = self.c.pick(self.seed ^ 0xa9b, Some(n));
                            match self.open(again, "/agui", &body, &[], false).await {
                                Opened::Stream(n, s) => (n, s),
                                Opened::Ended(o) => return o,
                                Opened::Broken(n) => return broken(report, n),
                            }
                        }
                        Opened::Broken(n) => return broken(report, n),
                    };
                    frames.clear();
                }
                Some("success") | None if last_kind == "RUN_FINISHED" => return Outcome::Completed,
                Some("cancelled") if report.resumes.0 > 0 => return Outcome::CancelledByCut,
                other => return Outcome::Failed(format!("RUN_FINISHED outcome {other:?}")),
            }
        }
        Outcome::Failed("too many approvals or resumes".into())
    }

    /// An A2A turn: `SendStreamingMessage`, `SubscribeToTask` after a cut,
    /// approvals as messages to the task.
    async fn a2a(&self, report: &mut TurnReport) -> Outcome {
        let context = &self.thread_id;
        let mut body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": {"messageId": self.run_id, "role": "ROLE_USER", "contextId": context,
                "parts": [{"text": self.prompt}]}}});
        let first = self.c.pick(self.seed, None);
        let (mut node, mut stream) = match self.open(first, "/a2a", &body, &[], self.cut).await {
            Opened::Stream(n, s) => (n, s),
            Opened::Ended(o) => return o,
            Opened::Broken(n) => return broken(report, n),
        };
        report.node = node;
        report.ttff_ms = stream.first_frame.map(|d| d.as_secs_f64() * 1e3);
        let mut states: Vec<String> = Vec::new();
        let mut task_id = String::new();
        for _ in 0..8 {
            for f in &stream.frames {
                if let Some(err) = f.data.get("error") {
                    return Outcome::Failed(format!("A2A error frame: {err}"));
                }
                let r = &f.data["result"];
                if let Some(id) = r["task"]["id"]
                    .as_str()
                    .or(r["statusUpdate"]["taskId"].as_str())
                {
                    task_id = id.to_owned();
                }
                if let Some(s) = r["task"]["status"]["state"]
                    .as_str()
                    .or(r["statusUpdate"]["status"]["state"].as_str())
                {
                    states.push(s.to_owned());
                }
            }
            let kill_resume =
                stream.broken.is_some() && self.c.switches.lease && self.c.switches.a2a_anywhere;
            if stream.broken.is_some() && !kill_resume {
                return if self.c.alive(node) {
                    Outcome::Failed(format!("A2A stream broke: {:?}", stream.broken))
                } else {
                    Outcome::Broken
                };
            }
            if stream.cut || kill_resume {
                let other = if self.c.switches.a2a_anywhere {
                    self.c.pick(self.seed ^ 0x5eed, Some(node))
                } else {
                    node
                };
                report.resumes.0 += 1;
                report.resumes.1 += usize::from(other != node);
                let sub = json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}});
                match self.open(other, "/a2a", &sub, &[], false).await {
                    Opened::Stream(n, s) => (node, stream) = (n, s),
                    Opened::Ended(Outcome::Failed(why))
                        if why.contains("terminal") || why.contains("nothing left to stream") =>
                    {
                        // Finished between the cut and the subscription: read it.
                        let get = json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": task_id}});
                        match self.rpc(other, &get).await {
                            Ok(v) => {
                                states.extend(
                                    v["result"]["status"]["state"].as_str().map(str::to_owned),
                                );
                                stream = SseStream::default();
                                node = other;
                            }
                            Err(e) => return Outcome::Failed(format!("GetTask: {e}")),
                        }
                    }
                    Opened::Ended(o) => return o,
                    Opened::Broken(n) => return broken(report, n),
                }
                continue;
            }
            let finals: Vec<&String> = states.iter().filter(|s| is_final(s)).collect();
            let last = states.last().cloned().unwrap_or_default();
            if finals.len() != 1 || !is_final(&last) {
                report.stream_errors.push(format!(
                    "A2A {}: {} final states {finals:?}, last {last:?}",
                    self.run_id,
                    finals.len()
                ));
            }
            match last.as_str() {
                "TASK_STATE_COMPLETED" => return Outcome::Completed,
                "TASK_STATE_INPUT_REQUIRED" => {
                    let answer_on = if self.c.switches.approvals_anywhere {
                        self.c.pick(self.seed ^ 0xa99, Some(node))
                    } else {
                        node
                    };
                    report.approvals.0 += 1;
                    report.approvals.1 += usize::from(answer_on != node);
                    body = json!({"jsonrpc": "2.0", "id": 4, "method": "SendStreamingMessage",
                        "params": {"message": {"messageId": format!("{}-a{}", self.run_id, report.approvals.0),
                            "role": "ROLE_USER", "contextId": context, "taskId": task_id,
                            "parts": [{"data": {"decision": "approve"}}]}}});
                    (node, stream) = match self.open(answer_on, "/a2a", &body, &[], false).await {
                        Opened::Stream(n, s) => (n, s),
                        // The task's host died while it waited: the task
                        // failed with its run.
                        Opened::Ended(Outcome::Failed(why))
                            if !self.c.alive(node) && why.contains("TASK_STATE_FAILED") =>
                        {
                            return Outcome::Interrupted;
                        }
                        Opened::Ended(o) => return o,
                        // The answering instance died under the answer while
                        // the task's host lives: the answer again elsewhere;
                        // refused (it was recorded), follow the task.
                        Opened::Broken(n) if n != node && self.c.alive(node) => {
                            let again = self.c.pick(self.seed ^ 0xa9b, Some(n));
                            match self.open(again, "/a2a", &body, &[], false).await {
                                Opened::Stream(n, s) => (n, s),
                                Opened::Broken(n) => return broken(report, n),
                                Opened::Ended(_) => (
                                    again,
                                    SseStream {
                                        broken: Some("answered on a dead instance".into()),
                                        ..SseStream::default()
                                    },
                                ),
                            }
                        }
                        Opened::Broken(n) => return broken(report, n),
                    };
                    states.clear();
                }
                other if !self.c.alive(report.node) => {
                    return if other.is_empty() {
                        Outcome::Broken
                    } else {
                        Outcome::Interrupted
                    };
                }
                other => {
                    let last = stream.frames.last().map(|f| f.data.to_string());
                    return Outcome::Failed(format!(
                        "A2A final state {other:?}: {}",
                        last.unwrap_or_default()
                    ));
                }
            }
        }
        Outcome::Failed("too many approvals or resumes".into())
    }
}

/// A state that ends a stream: terminal, or waiting for the client.
fn is_final(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
            | "TASK_STATE_INPUT_REQUIRED"
            | "TASK_STATE_AUTH_REQUIRED"
    )
}
