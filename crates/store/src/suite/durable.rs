//! Cases for the rows several hosts share (see
//! [`durable`](agent_adaptor_core::thread::durable)): approvals answered
//! once, deadlines, approvals expired with their holder's lease, and
//! notifications.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::thread::durable::{
    AnswerRefused, ApprovalRow, ApprovalState, NewApproval, Notification, TOPIC_APPROVAL,
};
use agent_adaptor_core::thread::{StoreError, ThreadStore};
use chrono::{DateTime, Utc};
use serde_json::json;

use super::{Outcome, ensure, must, unique_key};

const LONG: Duration = Duration::from_secs(60);

/// A unique id with `prefix`.
pub(crate) fn unique_id(prefix: &str) -> String {
    format!("{prefix}-{:016x}", rand::random::<u64>())
}

fn approval(key: &str, holder: &str, deadline: Option<DateTime<Utc>>) -> NewApproval {
    NewApproval {
        id: unique_id("appr"),
        key: key.to_owned(),
        run_id: "run-1".into(),
        holder: holder.to_owned(),
        principal: "alice".into(),
        request: json!({"tool": "Bash", "input": {"command": "ls"}}),
        deadline,
    }
}

async fn state_of(store: &Arc<dyn ThreadStore>, id: &str) -> Result<ApprovalState, String> {
    let row = must(store.approval(id).await, "read approval")?;
    row.map(|r| r.state)
        .ok_or_else(|| format!("approval {id} vanished"))
}

async fn pending_ids(store: &Arc<dyn ThreadStore>, key: &str) -> Result<Vec<String>, String> {
    let rows: Vec<ApprovalRow> = must(store.pending_approvals(key).await, "pending")?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// An approval is kept as asked (a taken id is `AlreadyExists`), listed
/// while pending (oldest first), answered once by its principal only
/// (another's answer is `Forbidden`, a second `AlreadyAnswered`, an unknown
/// id `NotFound`), then listed no more; `expire_approval` expires a pending
/// one once, and an expired one cannot be answered.
pub async fn approval_answered_once(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("approval");
    let first = approval(&key, "inst@e/run-1", None);
    let second = approval(&key, "inst@e/run-1", None);
    let kept = must(store.put_approval(first.clone()).await, "put")?;
    ensure!(
        kept.id == first.id
            && kept.state == ApprovalState::Pending
            && kept.request == first.request
            && kept.answer.is_none()
            && kept.decided_at.is_none(),
        "kept {kept:?}"
    );
    let taken = store.put_approval(first.clone()).await;
    ensure!(
        matches!(taken, Err(StoreError::AlreadyExists { .. })),
        "a taken id: {taken:?}"
    );
    let kept2 = must(store.put_approval(second.clone()).await, "put second")?;
    let listed = pending_ids(&store, &key).await?;
    // Oldest first; the same microsecond orders by id.
    let mut expected = [&kept, &kept2];
    expected.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    ensure!(
        kept.created_at <= kept2.created_at && listed == expected.map(|r| r.id.clone()),
        "pending {listed:?}"
    );
    let read = must(store.approval(&first.id).await, "read")?;
    ensure!(read.as_ref() == Some(&kept), "read back {read:?}");

    let forbidden = must(
        store
            .answer_approval(&first.id, "mallory", json!("allow"))
            .await,
        "answer as another",
    )?;
    ensure!(
        forbidden == Err(AnswerRefused::Forbidden),
        "another principal: {forbidden:?}"
    );
    let answered = must(
        store
            .answer_approval(&first.id, "alice", json!({"allow": true}))
            .await,
        "answer",
    )?;
    let row = answered.map_err(|e| format!("answer refused: {e:?}"))?;
    ensure!(
        row.state == ApprovalState::Answered
            && row.answer == Some(json!({"allow": true}))
            && row.decided_at.is_some_and(|d| d >= row.created_at),
        "answered {row:?}"
    );
    let again = must(
        store
            .answer_approval(&first.id, "alice", json!("deny"))
            .await,
        "answer again",
    )?;
    ensure!(
        again == Err(AnswerRefused::AlreadyAnswered),
        "a second answer: {again:?}"
    );
    let unknown = must(
        store
            .answer_approval(&unique_id("nope"), "alice", json!("allow"))
            .await,
        "answer unknown",
    )?;
    ensure!(
        unknown == Err(AnswerRefused::NotFound),
        "unknown: {unknown:?}"
    );
    let stored = must(store.approval(&first.id).await, "read answered")?;
    ensure!(
        stored.as_ref().and_then(|r| r.answer.clone()) == Some(json!({"allow": true})),
        "the first answer stays: {stored:?}"
    );
    let listed = pending_ids(&store, &key).await?;
    ensure!(
        listed == [second.id.clone()],
        "pending after answer {listed:?}"
    );

    ensure!(
        must(store.expire_approval(&second.id).await, "expire")?,
        "a pending approval expires"
    );
    ensure!(
        !must(store.expire_approval(&second.id).await, "expire again")?,
        "an expired approval expires once"
    );
    ensure!(
        !must(store.expire_approval(&first.id).await, "expire answered")?,
        "an answered approval does not expire"
    );
    let late = must(
        store
            .answer_approval(&second.id, "alice", json!("allow"))
            .await,
        "answer expired",
    )?;
    ensure!(late == Err(AnswerRefused::Expired), "expired: {late:?}");
    ensure!(
        state_of(&store, &first.id).await? == ApprovalState::Answered,
        "expiring left the answered one alone"
    );
    let missing = must(store.approval(&unique_id("nope")).await, "read unknown")?;
    ensure!(missing.is_none(), "unknown approval: {missing:?}");
    ensure!(
        pending_ids(&store, &key).await?.is_empty(),
        "nothing pending"
    );
    Ok(())
}

/// A pending approval whose deadline passed (on the store's clock) is
/// expired when listed or answered, never answered; one whose deadline is
/// ahead is listed and answerable. `expire_overdue_approval` expires an
/// overdue pending one (once), never one whose deadline is ahead, one
/// without a deadline or an unknown one.
pub async fn approval_deadline_expires(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("deadline");
    let past = approval(&key, "h", Some(Utc::now() - chrono::Duration::seconds(5)));
    let past2 = approval(&key, "h", Some(Utc::now() - chrono::Duration::seconds(5)));
    let past3 = approval(&key, "h", Some(Utc::now() - chrono::Duration::seconds(5)));
    let ahead = approval(&key, "h", Some(Utc::now() + chrono::Duration::hours(1)));
    let open = approval(&key, "h", None);
    for a in [&past, &past2, &past3, &ahead, &open] {
        must(store.put_approval(a.clone()).await, "put")?;
    }
    for (a, expected, what) in [
        (&ahead, false, "a deadline ahead"),
        (&open, false, "no deadline"),
        (&past3, true, "an overdue one"),
        (&past3, false, "an expired one"),
    ] {
        let expired = must(store.expire_overdue_approval(&a.id).await, what)?;
        ensure!(
            expired == expected,
            "expire_overdue_approval of {what}: {expired}"
        );
    }
    let unknown = must(
        store.expire_overdue_approval(&unique_id("nope")).await,
        "expire unknown",
    )?;
    ensure!(!unknown, "an unknown approval expired");
    ensure!(
        state_of(&store, &past3.id).await? == ApprovalState::Expired
            && state_of(&store, &ahead.id).await? == ApprovalState::Pending
            && state_of(&store, &open.id).await? == ApprovalState::Pending,
        "only the overdue one expired"
    );
    let late = must(
        store
            .answer_approval(&past.id, "alice", json!("allow"))
            .await,
        "answer overdue",
    )?;
    ensure!(late == Err(AnswerRefused::Expired), "overdue: {late:?}");
    ensure!(
        state_of(&store, &past.id).await? == ApprovalState::Expired,
        "the overdue answer expired it"
    );
    let listed = pending_ids(&store, &key).await?;
    ensure!(
        listed.len() == 2 && listed.contains(&ahead.id) && listed.contains(&open.id),
        "pending {listed:?}"
    );
    ensure!(
        state_of(&store, &past2.id).await? == ApprovalState::Expired,
        "listing expired the overdue one"
    );
    let answered = must(
        store
            .answer_approval(&ahead.id, "alice", json!("allow"))
            .await,
        "answer in time",
    )?;
    ensure!(answered.is_ok(), "in time: {answered:?}");
    Ok(())
}

/// `recover_expired` recovers every expired lease on a thread key (any
/// owner): records the interrupted run, frees the key and expires the
/// pending approvals its owner held; an unexpired lease and its approvals
/// are untouched.
pub async fn recover_expired_expires_held_approvals(store: Arc<dyn ThreadStore>) -> Outcome {
    let dead_key = unique_key("swept");
    let live_key = unique_key("alive");
    let dead_owner = format!("{}@e1/run-dead", unique_id("host"));
    let live_owner = format!("{}@e1/run-live", unique_id("host"));
    must(
        store
            .acquire_run_lease(
                &format!("key:{dead_key}"),
                &dead_owner,
                Duration::from_millis(200),
                "the prompt",
            )
            .await,
        "acquire short",
    )?;
    must(
        store
            .acquire_lease(&format!("key:{live_key}"), &live_owner, LONG)
            .await,
        "acquire long",
    )?;
    let dead = approval(&dead_key, &dead_owner, None);
    let live = approval(&live_key, &live_owner, None);
    must(store.put_approval(dead.clone()).await, "put dead")?;
    must(store.put_approval(live.clone()).await, "put live")?;

    // Bounded: the short lease expires after 200 ms.
    let mut recovered = Vec::new();
    for _ in 0..100 {
        let runs = must(store.recover_expired().await, "recover expired")?;
        ensure!(
            runs.iter().all(|r| r.key != live_key),
            "an unexpired lease was recovered: {runs:?}"
        );
        recovered = must(store.interrupted_runs(&dead_key).await, "interrupted")?;
        if !recovered.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ensure!(
        recovered.len() == 1
            && recovered[0].run_id == "run-dead"
            && recovered[0].prompt.as_deref() == Some("the prompt"),
        "interrupted runs {recovered:?}"
    );
    ensure!(
        state_of(&store, &dead.id).await? == ApprovalState::Expired,
        "the dead holder's approval expired"
    );
    ensure!(
        state_of(&store, &live.id).await? == ApprovalState::Pending,
        "the live holder's approval stays pending"
    );
    must(
        store
            .acquire_lease(&format!("key:{dead_key}"), "next", LONG)
            .await,
        "the recovered key is free",
    )?;
    let busy = store
        .acquire_lease(&format!("key:{live_key}"), "next", LONG)
        .await;
    ensure!(
        matches!(busy, Err(StoreError::Busy { .. })),
        "the live lease stays: {busy:?}"
    );
    let live_runs = must(store.interrupted_runs(&live_key).await, "live runs")?;
    ensure!(live_runs.is_empty(), "live key interrupted: {live_runs:?}");
    Ok(())
}

/// `recover_instance` expires the pending approvals of the leases it
/// recovers, and only those.
pub async fn recover_instance_expires_approvals(store: Arc<dyn ThreadStore>) -> Outcome {
    let inst = unique_id("inst");
    let key = unique_key("recover-approvals");
    let other_key = unique_key("recover-approvals-live");
    let dead_owner = format!("{inst}@e1/run-1");
    let live_owner = format!("{inst}@e2/run-2");
    must(
        store
            .acquire_lease(&format!("key:{key}"), &dead_owner, LONG)
            .await,
        "acquire dead",
    )?;
    must(
        store
            .acquire_lease(&format!("key:{other_key}"), &live_owner, LONG)
            .await,
        "acquire live",
    )?;
    let dead = approval(&key, &dead_owner, None);
    let live = approval(&other_key, &live_owner, None);
    must(store.put_approval(dead.clone()).await, "put dead")?;
    must(store.put_approval(live.clone()).await, "put live")?;
    let runs = must(store.recover_instance(&inst, "e2").await, "recover")?;
    ensure!(runs.len() == 1 && runs[0].key == key, "recovered {runs:?}");
    ensure!(
        state_of(&store, &dead.id).await? == ApprovalState::Expired,
        "the dead incarnation's approval expired"
    );
    ensure!(
        state_of(&store, &live.id).await? == ApprovalState::Pending,
        "the live incarnation's approval stays pending"
    );
    Ok(())
}

/// A notification sent on the store reaches each of its listeners; a topic
/// holding `:` and an id over 1,000 bytes are `Invalid`.
pub async fn notify_reaches_listeners(store: Arc<dyn ThreadStore>) -> Outcome {
    let mut first = must(store.listen().await, "listen")?;
    let mut second = must(store.listen().await, "listen again")?;
    let sent = Notification::new(TOPIC_APPROVAL, unique_id("n"));
    must(store.notify(&sent).await, "notify")?;
    // Every listener gets it (`receive` fails unless it arrives).
    receive(&mut first, &sent).await?;
    receive(&mut second, &sent).await?;
    for bad in [
        Notification::new("a:b", "x"),
        Notification::new("", "x"),
        Notification::new("task", "x".repeat(1001)),
    ] {
        let refused = store.notify(&bad).await;
        ensure!(
            matches!(refused, Err(StoreError::Invalid(_))),
            "notify {:?}: {refused:?}",
            bad.topic
        );
    }
    Ok(())
}

/// Wait (bounded: 30 s) for `wanted` on `listener`, skipping others'.
pub async fn receive(
    listener: &mut agent_adaptor_core::thread::durable::Notifications,
    wanted: &Notification,
) -> Result<Notification, String> {
    use tokio::sync::broadcast::error::RecvError;
    let wait = async {
        loop {
            match listener.recv().await {
                Ok(n) if &n == wanted => return Ok(n),
                Ok(_) | Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return Err("the listener closed".to_owned()),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .map_err(|_| format!("{wanted:?} never arrived"))?
}

/// `take_run_lease` takes an expired lease over and records it in the same
/// step: the run it displaced is returned and kept as interrupted (with its
/// prompt), its holder's pending approvals expire; an unexpired lease is
/// `Busy`; racing takers and a sweep record the takeover exactly once; a
/// plain `acquire_run_lease` records its takeover too.
pub async fn take_run_lease_records_the_takeover(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("takeover");
    let target = format!("key:{key}");
    let dead_owner = format!("{}@e1/run-dead", unique_id("host"));
    must(
        store
            .acquire_run_lease(&target, &dead_owner, Duration::from_millis(200), "old")
            .await,
        "acquire short",
    )?;
    let held = approval(&key, &dead_owner, None);
    must(store.put_approval(held.clone()).await, "put approval")?;
    let early = store.take_run_lease(&target, "early", LONG, "p").await;
    ensure!(
        matches!(early, Err(StoreError::Busy { .. })),
        "an unexpired lease is busy: {early:?}"
    );
    // A deliberate gap: the 200 ms lease has expired on any clock after it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (a, b, swept) = tokio::join!(
        store.take_run_lease(&target, "taker-a", LONG, "new a"),
        store.take_run_lease(&target, "taker-b", LONG, "new b"),
        store.recover_expired(),
    );
    let swept = must(swept, "sweep")?;
    let takes = [a, b];
    let won: Vec<_> = takes.iter().filter_map(|t| t.as_ref().ok()).collect();
    ensure!(
        won.len() == 1
            && takes
                .iter()
                .any(|t| matches!(t, Err(StoreError::Busy { .. }))),
        "one taker wins, the other is busy: {takes:?}"
    );
    let by_sweep = swept.iter().filter(|r| r.key == key).count();
    let by_take = usize::from(won[0].displaced.is_some());
    ensure!(
        by_sweep + by_take == 1,
        "recorded once: sweep {swept:?}, take {:?}",
        won[0]
    );
    if let Some(run) = &won[0].displaced {
        ensure!(
            run.key == key && run.run_id == "run-dead" && run.prompt.as_deref() == Some("old"),
            "the displaced run {run:?}"
        );
    }
    let recorded = must(store.interrupted_runs(&key).await, "interrupted")?;
    ensure!(
        recorded.len() == 1 && recorded[0].run_id == "run-dead",
        "kept once: {recorded:?}"
    );
    ensure!(
        state_of(&store, &held.id).await? == ApprovalState::Expired,
        "the displaced holder's approval expired"
    );
    let again = store.take_run_lease(&target, "late", LONG, "p").await;
    ensure!(
        matches!(again, Err(StoreError::Busy { .. })),
        "the winner holds the key: {again:?}"
    );

    // A plain `acquire_run_lease` records its takeover the same way.
    let key = unique_key("takeover-plain");
    let target = format!("key:{key}");
    let short = Duration::from_millis(200);
    must(
        store
            .acquire_run_lease(&target, &dead_owner, short, "older")
            .await,
        "acquire short again",
    )?;
    let held = approval(&key, &dead_owner, None);
    must(store.put_approval(held.clone()).await, "put approval again")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    must(
        store.acquire_run_lease(&target, "next", LONG, "p").await,
        "plain takeover",
    )?;
    let recorded = must(store.interrupted_runs(&key).await, "interrupted again")?;
    ensure!(
        recorded.len() == 1 && recorded[0].prompt.as_deref() == Some("older"),
        "recorded by the plain acquire: {recorded:?}"
    );
    ensure!(
        state_of(&store, &held.id).await? == ApprovalState::Expired,
        "the plain takeover expired the approval"
    );
    Ok(())
}
