//! Cases for bridge tasks: updates and their log, terminal states,
//! listings with filters and page tokens, cancel requests, pruning and
//! push configurations.

use std::sync::Arc;

use agent_adaptor_core::thread::durable::{NewApproval, NewTask, TaskChange, TaskQuery, TaskRow};
use agent_adaptor_core::thread::{StoreError, ThreadStore};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::durable::unique_id;
use super::{Outcome, ensure, must, unique_key};

fn new_task(key: &str, principal: &str, context: &str, state: &str) -> NewTask {
    NewTask {
        id: unique_id("task"),
        context_id: context.to_owned(),
        key: key.to_owned(),
        principal: principal.to_owned(),
        state: state.to_owned(),
        holder: Some("inst@e/run-1".into()),
        snapshot: json!({"status": state}),
    }
}

fn change(state: &str, terminal: bool, update: Option<Value>) -> TaskChange {
    TaskChange {
        state: state.to_owned(),
        terminal,
        holder: (!terminal).then(|| "inst@e/run-1".to_owned()),
        snapshot: json!({"status": state, "update": update}),
        update,
    }
}

fn is_invalid<T: std::fmt::Debug>(r: &Result<T, StoreError>) -> bool {
    matches!(r, Err(StoreError::Invalid(_)))
}

/// Updates number 1, 2, 3 … (a snapshot-only change appends none) and are
/// read back in order, after a sequence and up to a limit; a terminal task
/// takes no more changes (nor does an unknown one); `active_tasks` lists
/// the key's non-terminal tasks; cancel requests keep the first time; push
/// configurations are registered, replaced, listed and deleted; pruning
/// drops old terminal tasks with their updates and configurations, and
/// the approvals decided (answered, expired) before it on those tasks' threads, never a pending
/// one.
pub async fn tasks_updates_terminal_and_prune(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("tasks");
    let principal = unique_id("p");
    let first = new_task(&key, &principal, "ctx", "submitted");
    let created = must(store.create_task(first.clone()).await, "create")?;
    ensure!(
        created.seq == 0
            && !created.terminal
            && created.snapshot == first.snapshot
            && created.holder == first.holder
            && created.cancel_requested_at.is_none()
            && created.created_at == created.updated_at,
        "created {created:?}"
    );
    let taken = store.create_task(first.clone()).await;
    ensure!(
        matches!(taken, Err(StoreError::AlreadyExists { .. })),
        "a taken id: {taken:?}"
    );
    let one = must(
        store
            .update_task(&first.id, change("working", false, Some(json!("u1"))))
            .await,
        "update 1",
    )?;
    ensure!(
        one.seq == 1 && one.state == "working" && one.updated_at >= created.updated_at,
        "after update 1: {one:?}"
    );
    let quiet = must(
        store
            .update_task(&first.id, change("working-2", false, None))
            .await,
        "snapshot only",
    )?;
    ensure!(
        quiet.seq == 1 && quiet.state == "working-2",
        "a snapshot-only change: {quiet:?}"
    );
    must(
        store
            .update_task(&first.id, change("working", false, Some(json!("u2"))))
            .await,
        "update 2",
    )?;
    let log = must(store.task_updates(&first.id, 0, 10).await, "updates")?;
    let seen: Vec<(u64, Value)> = log.iter().map(|u| (u.seq, u.body.clone())).collect();
    ensure!(seen == [(1, json!("u1")), (2, json!("u2"))], "log {seen:?}");
    let after = must(store.task_updates(&first.id, 1, 10).await, "after 1")?;
    ensure!(after.len() == 1 && after[0].seq == 2, "after 1: {after:?}");
    let limited = must(store.task_updates(&first.id, 0, 1).await, "limit 1")?;
    ensure!(
        limited.len() == 1 && limited[0].seq == 1,
        "limit 1: {limited:?}"
    );

    let second = new_task(&key, &principal, "ctx", "working");
    must(store.create_task(second.clone()).await, "create second")?;
    let done = must(
        store
            .update_task(&first.id, change("completed", true, Some(json!("u3"))))
            .await,
        "terminal update",
    )?;
    ensure!(
        done.terminal && done.seq == 3 && done.holder.is_none(),
        "terminal {done:?}"
    );
    let refused = store
        .update_task(&first.id, change("working", false, Some(json!("late"))))
        .await;
    ensure!(is_invalid(&refused), "a terminal task changed: {refused:?}");
    let unknown = store
        .update_task(&unique_id("nope"), change("working", false, None))
        .await;
    ensure!(is_invalid(&unknown), "an unknown task changed: {unknown:?}");
    let read = must(store.task(&first.id).await, "read")?;
    ensure!(read.as_ref() == Some(&done), "read back {read:?}");
    let active: Vec<String> = must(store.active_tasks(&key).await, "active")?
        .into_iter()
        .map(|t| t.id)
        .collect();
    ensure!(active == [second.id.clone()], "active {active:?}");

    let cancel = must(store.request_task_cancel(&second.id).await, "cancel")?;
    let asked = cancel.and_then(|t| t.cancel_requested_at);
    ensure!(asked.is_some(), "the cancel request was noted");
    let again = must(store.request_task_cancel(&second.id).await, "cancel again")?;
    ensure!(
        again.and_then(|t| t.cancel_requested_at) == asked,
        "the first request's time is kept"
    );
    let nobody = must(
        store.request_task_cancel(&unique_id("nope")).await,
        "cancel unknown",
    )?;
    ensure!(nobody.is_none(), "cancel of an unknown task: {nobody:?}");

    push_configs(&store, &first.id).await?;
    let (decided, decided_at, pending) = approvals_to_prune(&store, &key).await?;

    let before = done.updated_at.max(decided_at) + chrono::Duration::microseconds(1);
    let pruned = must(store.prune_tasks(before).await, "prune")?;
    for id in &decided {
        let row = must(store.approval(id).await, "read pruned approval")?;
        ensure!(row.is_none(), "a decided approval stays: {row:?}");
    }
    let row = must(store.approval(&pending).await, "read pending approval")?;
    ensure!(row.is_some(), "a pending approval was pruned");
    ensure!(pruned >= 1, "pruned {pruned}");
    let gone = must(store.task(&first.id).await, "read pruned")?;
    ensure!(gone.is_none(), "the terminal task stays: {gone:?}");
    let log = must(store.task_updates(&first.id, 0, 10).await, "pruned log")?;
    ensure!(log.is_empty(), "its updates stay: {log:?}");
    let configs = must(store.push_configs(&first.id).await, "pruned configs")?;
    ensure!(configs.is_empty(), "its configurations stay: {configs:?}");
    let kept = must(store.task(&second.id).await, "read active")?;
    ensure!(kept.is_some(), "an active task was pruned");
    Ok(())
}

/// Approvals of `key`: one answered and one expired (their ids and the
/// later decision time), and one left pending (its id).
async fn approvals_to_prune(
    store: &Arc<dyn ThreadStore>,
    key: &str,
) -> Result<(Vec<String>, DateTime<Utc>, String), String> {
    let ids = [unique_id("appr"), unique_id("appr"), unique_id("appr")];
    for id in &ids {
        let new = NewApproval {
            id: id.clone(),
            key: key.to_owned(),
            run_id: "run-1".into(),
            holder: "inst@e/run-1".into(),
            principal: "alice".into(),
            request: json!({}),
            deadline: None,
        };
        must(store.put_approval(new).await, "put approval")?;
    }
    let answered = must(
        store
            .answer_approval(&ids[0], "alice", json!("allow"))
            .await,
        "answer",
    )?;
    ensure!(answered.is_ok(), "answer refused: {answered:?}");
    ensure!(
        must(store.expire_approval(&ids[1]).await, "expire")?,
        "a pending approval expires"
    );
    let mut latest = DateTime::<Utc>::MIN_UTC;
    for id in &ids[..2] {
        let row = must(store.approval(id).await, "read decided")?;
        let at = row.and_then(|r| r.decided_at);
        latest = latest.max(at.ok_or_else(|| format!("approval {id} has no decision time"))?);
    }
    let [answered, expired, pending] = ids;
    Ok((vec![answered, expired], latest, pending))
}

async fn push_configs(store: &Arc<dyn ThreadStore>, task: &str) -> Outcome {
    must(
        store
            .put_push_config(task, "p1", json!({"url": "https://a.example/1"}))
            .await,
        "put p1",
    )?;
    must(
        store
            .put_push_config(task, "p2", json!({"url": "https://a.example/2"}))
            .await,
        "put p2",
    )?;
    let replaced = must(
        store
            .put_push_config(task, "p1", json!({"url": "https://b.example/1"}))
            .await,
        "replace p1",
    )?;
    ensure!(
        replaced.config == json!({"url": "https://b.example/1"}),
        "replaced {replaced:?}"
    );
    let listed: Vec<(String, Value)> = must(store.push_configs(task).await, "configs")?
        .into_iter()
        .map(|c| (c.id, c.config))
        .collect();
    ensure!(
        listed
            == [
                ("p1".to_owned(), json!({"url": "https://b.example/1"})),
                ("p2".to_owned(), json!({"url": "https://a.example/2"}))
            ],
        "configs {listed:?}"
    );
    ensure!(
        must(store.delete_push_config(task, "p2").await, "delete")?,
        "p2 existed"
    );
    ensure!(
        !must(store.delete_push_config(task, "p2").await, "delete again")?,
        "p2 is gone"
    );
    let unknown = store
        .put_push_config(&unique_id("nope"), "p", json!({}))
        .await;
    ensure!(
        is_invalid(&unknown),
        "a config for an unknown task: {unknown:?}"
    );
    Ok(())
}

fn ids(tasks: &[TaskRow]) -> Vec<String> {
    tasks.iter().map(|t| t.id.clone()).collect()
}

/// Listings filter by principal, context, state and change time, newest
/// change first (ties by id), page with opaque tokens to the end, count
/// every match in `total`, and refuse a token no store issued.
pub async fn tasks_list_filters_and_paging(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("list");
    let principal = unique_id("p");
    let (c1, c2) = (unique_id("ctx"), unique_id("ctx"));
    let mut made = Vec::new();
    for (context, state) in [
        (&c1, "working"),
        (&c1, "submitted"),
        (&c1, "working"),
        (&c2, "working"),
        (&c2, "submitted"),
    ] {
        let task = new_task(&key, &principal, context, state);
        made.push(must(store.create_task(task).await, "create")?);
    }
    // Someone else's task in the same context.
    must(
        store
            .create_task(new_task(&key, &unique_id("q"), &c1, "working"))
            .await,
        "create another's",
    )?;
    // Change the oldest again: it becomes the newest.
    let touched = must(
        store
            .update_task(&made[0].id, change("working", false, Some(json!("again"))))
            .await,
        "touch",
    )?;
    made[0] = touched;
    let mut expected = made.clone();
    expected.sort_by(|a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then_with(|| a.id.cmp(&b.id))
    });

    let mut query = TaskQuery {
        principal: Some(principal.clone()),
        page_size: 2,
        ..TaskQuery::default()
    };
    let mut pages = Vec::new();
    let mut listed = Vec::new();
    for _ in 0..10 {
        let page = must(store.list_tasks(&query).await, "list")?;
        ensure!(page.total == 5, "total {}", page.total);
        pages.push(page.tasks.len());
        listed.extend(page.tasks);
        match page.next_page_token {
            Some(token) => query.page_token = Some(token),
            None => break,
        }
    }
    ensure!(pages == [2, 2, 1], "page sizes {pages:?}");
    ensure!(
        ids(&listed) == ids(&expected),
        "listed {:?}, expected {:?}",
        ids(&listed),
        ids(&expected)
    );
    ensure!(listed == expected, "rows differ from their writes");

    let all = must(
        store
            .list_tasks(&TaskQuery {
                principal: Some(principal.clone()),
                ..TaskQuery::default()
            })
            .await,
        "default page",
    )?;
    ensure!(
        all.tasks.len() == 5 && all.next_page_token.is_none(),
        "a default page: {:?}",
        all.next_page_token
    );

    let filtered = |context: Option<&String>, state: Option<&str>| TaskQuery {
        principal: Some(principal.clone()),
        context_id: context.cloned(),
        state: state.map(str::to_owned),
        ..TaskQuery::default()
    };
    let by_context = must(store.list_tasks(&filtered(Some(&c2), None)).await, "c2")?;
    let want: Vec<String> = expected
        .iter()
        .filter(|t| t.context_id == c2)
        .map(|t| t.id.clone())
        .collect();
    ensure!(
        ids(&by_context.tasks) == want && by_context.total == 2,
        "context c2: {:?}",
        ids(&by_context.tasks)
    );
    let by_state = must(
        store
            .list_tasks(&filtered(Some(&c1), Some("working")))
            .await,
        "c1 working",
    )?;
    ensure!(
        by_state.total == 2 && by_state.tasks.iter().all(|t| t.state == "working"),
        "c1 working: {:?}",
        ids(&by_state.tasks)
    );
    let anyone = must(
        store
            .list_tasks(&TaskQuery {
                context_id: Some(c1.clone()),
                ..TaskQuery::default()
            })
            .await,
        "c1, any principal",
    )?;
    ensure!(anyone.total == 4, "c1 for operators: {}", anyone.total);
    let since = must(
        store
            .list_tasks(&TaskQuery {
                updated_since: Some(expected[1].updated_at),
                ..filtered(None, None)
            })
            .await,
        "since",
    )?;
    let want: Vec<String> = expected
        .iter()
        .filter(|t| t.updated_at >= expected[1].updated_at)
        .map(|t| t.id.clone())
        .collect();
    ensure!(
        ids(&since.tasks) == want,
        "since: {:?}, want {want:?}",
        ids(&since.tasks)
    );

    for token in ["garbage", "tp1.12.zz", "tp1.x.61", ""] {
        let foreign = store
            .list_tasks(&TaskQuery {
                page_token: Some(token.into()),
                ..filtered(None, None)
            })
            .await;
        ensure!(is_invalid(&foreign), "token {token:?}: {foreign:?}");
    }
    Ok(())
}
