//! Gemini's `session/load` quirks, with `fake-acp-agent` under Gemini's
//! recipe (`--acp` is ignored by the fake): the driver runs directly on a
//! `Request` so a test can hand it any checkpoint. A replay that goes on
//! after the load answer (`--late-replay N`) never becomes the new turn's
//! text, and a load in the minute the last turn ended first waits, saying
//! why, and that wait ends on cancellation before anything starts.
#![cfg(feature = "acp")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use agent_adaptor_driver::{
    CancellationToken, Driver, DriverError, Emit, EventSink, Request, Response, RunContext,
    RunEvent, SessionContext, SessionMode, SessionState, StreamKind, StreamPayload,
};
use agent_adaptor_drivers::acp::{self, AcpAgent, load};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_testkit::acp_agent::{FakeAcpAgent, TEXT_CHUNKS};

/// What a run emitted; cancels `cancel_on` the moment a notice of that
/// kind arrives.
#[derive(Default)]
struct Seen {
    events: Mutex<Vec<RunEvent>>,
    deltas: Mutex<Vec<String>>,
    cancel_on: Option<(&'static str, CancellationToken)>,
}

impl Seen {
    /// The lifecycle notices of `kind` (their data).
    fn notices(&self, kind: &str) -> Vec<serde_json::Value> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                RunEvent::Lifecycle(ev)
                    if ev.metadata.get("kind").map(String::as_str) == Some(kind) =>
                {
                    Some(ev.data.clone().unwrap_or_default())
                }
                _ => None,
            })
            .collect()
    }
}

impl EventSink for Seen {
    fn emit(&self, event: RunEvent) -> Emit<'_> {
        if let (RunEvent::Lifecycle(ev), Some((kind, cancel))) = (&event, &self.cancel_on)
            && ev.metadata.get("kind").map(String::as_str) == Some(*kind)
        {
            cancel.cancel();
        }
        self.events.lock().unwrap().push(event);
        Emit::ready(Ok(()))
    }

    fn emit_stream(&self, payload: StreamPayload) -> Emit<'_> {
        if let StreamKind::TextContent { delta, .. } = payload.kind {
            self.deltas.lock().unwrap().push(delta);
        }
        Emit::ready(Ok(()))
    }
}

/// The fake's workspace, frame log and session state.
struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        Fake { dir }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("frames.log")
    }

    /// A driver with Gemini's recipe whose program is the fake, sending
    /// the last `late` replayed updates after the load answer.
    fn driver(&self, late: usize) -> acp::AcpDriver {
        let path = |p: &str| self.dir.path().join(p).display().to_string();
        acp::driver(acp::Config {
            command: Some(FakeAcpAgent::binary().unwrap()),
            extra_args: vec![
                "--scenario".into(),
                "text".into(),
                "--log".into(),
                self.log_path().display().to_string(),
                "--state".into(),
                path("state"),
                "--late-replay".into(),
                late.to_string(),
            ],
            cwd: Some(self.dir.path().join("work")),
            env_policy: EnvPolicy::only(["PATH"]),
            ..acp::Config::for_agent(AcpAgent::Gemini)
        })
    }

    /// One turn, continuing `state` when given.
    async fn turn(
        &self,
        driver: &acp::AcpDriver,
        prompt: &str,
        state: Option<SessionState>,
        seen: &Seen,
        ctx: RunContext,
    ) -> Result<Response, DriverError> {
        let mut req = Request::new("run", prompt);
        req.streaming = true;
        req.session = state.map(|state| SessionContext {
            engine_session_id: String::new(),
            mode: SessionMode::ContinueOnly,
            state: Some(state),
            previous_id: String::new(),
        });
        driver.run(ctx, req, seen).await
    }
}

/// The checkpoint state of a successful turn.
fn state_of(resp: &Response) -> SessionState {
    assert!(resp.failure.is_none(), "{:?}", resp.failure);
    resp.checkpoint.as_ref().unwrap().state.clone().unwrap()
}

/// `state`, as if its turn had ended long ago (no minute to wait for).
fn ended_long_ago(mut state: SessionState) -> SessionState {
    state.data.insert(load::ENDED_AT.into(), "0".into());
    state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_after_the_load_answer_is_not_the_new_turns_text() {
    let f = Fake::new();
    let answer = TEXT_CHUNKS.concat();
    let seen = Seen::default();
    let first = f
        .turn(
            &f.driver(0),
            "first turn",
            None,
            &seen,
            RunContext::new("r1"),
        )
        .await
        .unwrap();
    let one = state_of(&first);
    assert_eq!(one.data[load::TURNS], "1");
    assert_eq!(one.data[load::LAST_TEXT], load::text_digest(&answer));
    assert!(one.data.contains_key(load::ENDED_AT));

    // Turn 2: the whole replay (turn 1's user and agent message) follows
    // the load answer.
    let seen = Seen::default();
    let second = f
        .turn(
            &f.driver(2),
            "second turn",
            Some(ended_long_ago(one)),
            &seen,
            RunContext::new("r2"),
        )
        .await
        .unwrap();
    assert_eq!(*seen.deltas.lock().unwrap(), TEXT_CHUNKS, "not the replay");
    assert_eq!(second.output, answer);
    assert_eq!(
        seen.notices("acp.replayed"),
        [serde_json::json!({"updates": 2})]
    );
    assert!(seen.notices("acp.load_wait").is_empty());
    let two = state_of(&second);
    assert_eq!(two.data[load::TURNS], "2");

    // Turn 3: turn 1's answer (the same text as turn 2's) and turn 2's
    // user and agent messages come late; only the second user message
    // makes the matching text the end of the replay.
    let seen = Seen::default();
    let third = f
        .turn(
            &f.driver(3),
            "third turn",
            Some(ended_long_ago(two)),
            &seen,
            RunContext::new("r3"),
        )
        .await
        .unwrap();
    assert_eq!(*seen.deltas.lock().unwrap(), TEXT_CHUNKS, "not the replay");
    assert_eq!(third.output, answer);
    assert_eq!(
        seen.notices("acp.replayed"),
        [serde_json::json!({"updates": 4})]
    );
    assert_eq!(state_of(&third).data[load::TURNS], "3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_in_the_minute_of_the_last_turn_waits_and_the_wait_cancels() {
    let f = Fake::new();
    let seen = Seen::default();
    let first = f
        .turn(
            &f.driver(0),
            "first turn",
            None,
            &seen,
            RunContext::new("r1"),
        )
        .await
        .unwrap();
    let mut state = state_of(&first);
    // Half a minute ahead of now: the next minute is always still to come.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    state
        .data
        .insert(load::ENDED_AT.into(), (now + 30).to_string());
    let frames_before = FakeAcpAgent::read_log(&f.log_path()).unwrap().len();

    let ctx = RunContext::new("r2");
    let seen = Seen {
        cancel_on: Some(("acp.load_wait", ctx.cancel.clone())),
        ..Default::default()
    };
    let second = f
        .turn(&f.driver(0), "second turn", Some(state), &seen, ctx)
        .await;
    assert!(matches!(second, Err(DriverError::Cancelled)), "{second:?}");
    let waits = seen.notices("acp.load_wait");
    assert_eq!(waits.len(), 1);
    let ms = waits[0]["waitMs"].as_u64().unwrap();
    assert!(ms > 0 && ms <= 60_000, "{ms}");
    assert_eq!(
        FakeAcpAgent::read_log(&f.log_path()).unwrap().len(),
        frames_before,
        "no agent was started"
    );
}

/// A checkpoint whose final text the replay never shows: nothing after the
/// load answer is lost; the held updates are the turn's, with a notice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_whose_end_never_comes_loses_nothing() {
    let f = Fake::new();
    let seen = Seen::default();
    let first = f
        .turn(
            &f.driver(0),
            "first turn",
            None,
            &seen,
            RunContext::new("r1"),
        )
        .await
        .unwrap();
    let mut state = ended_long_ago(state_of(&first));
    state
        .data
        .insert(load::LAST_TEXT.into(), load::text_digest("never said"));
    let seen = Seen::default();
    let second = f
        .turn(
            &f.driver(2),
            "second turn",
            Some(state),
            &seen,
            RunContext::new("r2"),
        )
        .await
        .unwrap();
    assert!(second.failure.is_none(), "{:?}", second.failure);
    let deltas = seen.deltas.lock().unwrap().clone();
    assert!(
        deltas.ends_with(&TEXT_CHUNKS.map(String::from)),
        "{deltas:?}"
    );
    assert!(
        second.output.ends_with(&TEXT_CHUNKS.concat()),
        "{}",
        second.output
    );
    let unmatched = seen.notices("acp.replay_unmatched");
    assert_eq!(unmatched.len(), 1);
    assert!(unmatched[0]["updates"].as_u64().unwrap() >= 2);
}
