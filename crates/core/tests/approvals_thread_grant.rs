//! "Always allow this tool in this thread": a human's `approve_always`
//! keeps the grant in the thread's policy, the thread's next request for
//! the tool is approved by the policy without asking, revoking asks again,
//! and a run outside a thread cannot grant.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_core::driver::async_trait;
use agent_adaptor_core::driver::{
    Checkpoint, DecisionKind, DecisionRequest, RawStreams, Response, RunEvent, SessionState,
    StandardSessionCodec, StreamPayload, TerminalPayload, TranscriptItem,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::thread::{FinalizeRequest, Lease, StoreError, ThreadRecord};
use agent_adaptor_core::{
    Agent, ApprovalError, ApprovalRequest, Event, MemoryStore, Runner, Thread, ThreadStore,
    notice_kind,
};
use common::*;
use futures::StreamExt;

fn bash_permission() -> DecisionRequest {
    let mut r = DecisionRequest::new(DecisionKind::Permission, "claude.can_use_tool");
    r.prompt = "Allow Bash?".into();
    r.tool_call_id = "t1".into();
    r.payload = Some(serde_json::json!({"tool_name": "Bash", "input": {"command": "ls"}}));
    r
}

/// A resumable driver that asks for Bash once per run.
fn asking_driver() -> ScriptedDriver {
    let item = TranscriptItem::assistant("done".to_owned());
    let steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Decide(bash_permission()),
        Step::Stream(StreamPayload::text_start("m1")),
        Step::Stream(StreamPayload::text_content("m1", "done")),
        Step::Stream(StreamPayload::text_end("m1")),
        Step::Emit(RunEvent::Item(item.clone().into())),
        Step::Stream(StreamPayload::run_finished(None)),
    ];
    let terminal = serde_json::json!({"type": "result", "result": "done"}).to_string();
    let resp = Response {
        output: "done".into(),
        raw: RawStreams {
            stdout: format!("{terminal}\n").into(),
            stderr: Default::default(),
            terminal: TerminalPayload::new("result", &terminal).ok(),
        },
        transcript: vec![item].into(),
        exit_code: Some(0),
        provider: "scripted".into(),
        checkpoint: Some(Checkpoint::valid(SessionState {
            resume_id: "s1".into(),
            display_id: "s1".into(),
            data: Default::default(),
        })),
        ..Default::default()
    };
    ScriptedDriver::new(steps, Ending::Respond(Box::new(resp))).with_resume(
        Arc::new(StandardSessionCodec::new("scripted")),
        "scripted-config-v1",
    )
}

/// Run one turn, answering each approval with `answer`; the events.
async fn turn(thread: &Thread, answer: impl Fn(&ApprovalRequest)) -> Vec<Event> {
    let mut stream = thread.stream("go");
    let mut events = Vec::new();
    while let Some(ev) = stream.next().await {
        if let Event::ApprovalRequest(req) = &ev {
            answer(req);
        }
        events.push(ev);
    }
    let result = stream.result().await.unwrap();
    assert_eq!(result.metadata["decision.0"], "approved");
    events
}

fn asked(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::ApprovalRequest(_)))
        .count()
}

#[tokio::test]
async fn always_allow_grants_the_tool_for_the_thread_until_revoked() {
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::builder(asking_driver())
        .thread_store(store.clone())
        .build()
        .unwrap();
    let thread = agent.thread("t-grant");

    // Turn 1: asked; the human answers "always".
    let events = turn(&thread, |req| {
        assert_eq!(req.always_allow_tool(), Some("Bash"));
        req.approve_always().unwrap();
    })
    .await;
    assert_eq!(asked(&events), 1);
    let resolved = notices(&events, notice_kind::APPROVAL_RESOLVED);
    let data = resolved[0].data.as_ref().unwrap();
    assert_eq!(data["decided_by"], "human");
    assert_eq!(data["thread_grant"]["granted"], true);
    assert_eq!(thread.always_allowed().await.unwrap(), ["Bash"]);
    assert_eq!(
        store.thread_policy("t-grant").await.unwrap().always_allowed,
        ["Bash"]
    );

    // Turn 2: not asked; the policy approves, saying it was the grant.
    let events = turn(&thread, |_| panic!("a granted tool is not asked")).await;
    assert_eq!(asked(&events), 0);
    let resolved = notices(&events, notice_kind::APPROVAL_RESOLVED);
    let data = resolved[0].data.as_ref().unwrap();
    assert_eq!(data["decided_by"], "policy");
    assert_eq!(data["result"], "approved");
    assert_eq!(data["thread_grant"]["tool"], "Bash");
    assert_eq!(data["thread_grant"]["source"], "thread");

    // Revoked: turn 3 asks again.
    assert!(thread.revoke_tool("Bash").await.unwrap());
    assert!(thread.always_allowed().await.unwrap().is_empty());
    let events = turn(&thread, |req| req.approve().unwrap()).await;
    assert_eq!(asked(&events), 1);
}

#[tokio::test]
async fn always_allow_outside_a_thread_is_refused() {
    let agent = Agent::new(asking_driver());
    let mut stream = agent.stream("go");
    while let Some(ev) = stream.next().await {
        if let Event::ApprovalRequest(req) = &ev {
            assert_eq!(req.always_allow_tool(), None);
            assert_eq!(req.approve_always(), Err(ApprovalError::NotGrantable));
            // Nothing was answered: the request is still open.
            req.approve().unwrap();
        }
    }
    stream.result().await.unwrap();
}

/// A memory store whose policy cannot be written.
struct NoPolicyWrites(MemoryStore);

#[async_trait]
impl ThreadStore for NoPolicyWrites {
    async fn resolve(&self, key: &str, archived: bool) -> Result<Option<ThreadRecord>, StoreError> {
        self.0.resolve(key, archived).await
    }
    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: std::time::Duration,
    ) -> Result<Lease, StoreError> {
        self.0.acquire_lease(target, owner, ttl).await
    }
    async fn renew_lease(
        &self,
        lease: &Lease,
        ttl: std::time::Duration,
    ) -> Result<Lease, StoreError> {
        self.0.renew_lease(lease, ttl).await
    }
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        self.0.release_lease(lease).await
    }
    async fn finalize(&self, request: FinalizeRequest) -> Result<ThreadRecord, StoreError> {
        self.0.finalize(request).await
    }
    async fn set_tool_allowed(&self, _: &str, _: &str, _: bool) -> Result<bool, StoreError> {
        Err(StoreError::Backend("disk full".into()))
    }
}

#[tokio::test]
async fn a_grant_the_store_refuses_is_reported_and_the_approval_stands() {
    let agent = Agent::builder(asking_driver())
        .thread_store(Arc::new(NoPolicyWrites(MemoryStore::new())))
        .build()
        .unwrap();
    let thread = agent.thread("t-full");
    let events = turn(&thread, |req| req.approve_always().unwrap()).await;
    let resolved = notices(&events, notice_kind::APPROVAL_RESOLVED);
    let grant = &resolved[0].data.as_ref().unwrap()["thread_grant"];
    assert_eq!(grant["granted"], false, "{grant}");
    assert!(
        grant["error"].as_str().unwrap().contains("disk full"),
        "{grant}"
    );
    assert!(thread.always_allowed().await.unwrap().is_empty());
}
