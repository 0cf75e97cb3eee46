//! Cases for what goes with a thread: `delete` drops the key's approvals
//! and tasks (with their updates and push configurations) in the same
//! step as its records.

use std::sync::Arc;

use agent_adaptor_core::thread::ThreadStore;
use agent_adaptor_core::thread::durable::{NewApproval, NewTask, TaskChange};
use serde_json::json;

use super::durable::unique_id;
use super::{Outcome, ensure, must, unique_key};

/// A pending and an answered approval, and a task with an update and a
/// push configuration, all of `key`; their ids (approvals, task).
async fn shared_rows(
    store: &Arc<dyn ThreadStore>,
    key: &str,
) -> Result<([String; 2], String), String> {
    let approval = |id: String| NewApproval {
        id,
        key: key.to_owned(),
        run_id: "run-1".into(),
        holder: "inst@e/run-1".into(),
        principal: "alice".into(),
        request: json!({"tool": "Bash"}),
        deadline: None,
    };
    let approvals = [unique_id("appr"), unique_id("appr")];
    for id in &approvals {
        must(
            store.put_approval(approval(id.clone())).await,
            "put approval",
        )?;
    }
    let answered = must(
        store
            .answer_approval(&approvals[1], "alice", json!("allow"))
            .await,
        "answer",
    )?;
    ensure!(answered.is_ok(), "answer refused: {answered:?}");
    let task = unique_id("task");
    must(
        store
            .create_task(NewTask {
                id: task.clone(),
                context_id: "ctx".into(),
                key: key.to_owned(),
                principal: "alice".into(),
                state: "working".into(),
                holder: None,
                snapshot: json!({}),
            })
            .await,
        "create task",
    )?;
    let change = TaskChange {
        state: "working".into(),
        terminal: false,
        holder: None,
        snapshot: json!({"n": 1}),
        update: Some(json!("u1")),
    };
    must(store.update_task(&task, change).await, "update task")?;
    must(
        store
            .put_push_config(&task, "p1", json!({"url": "https://a.example/"}))
            .await,
        "put push config",
    )?;
    Ok((approvals, task))
}

/// Whether any of `approvals` or `task` (or its updates or push
/// configurations) is still kept.
async fn any_kept(
    store: &Arc<dyn ThreadStore>,
    approvals: &[String],
    task: &str,
) -> Result<Vec<String>, String> {
    let mut kept = Vec::new();
    for id in approvals {
        if must(store.approval(id).await, "read approval")?.is_some() {
            kept.push(format!("approval {id}"));
        }
    }
    if must(store.task(task).await, "read task")?.is_some() {
        kept.push("the task".into());
    }
    if !must(store.task_updates(task, 0, 10).await, "read updates")?.is_empty() {
        kept.push("the task's updates".into());
    }
    if !must(store.push_configs(task).await, "read push configs")?.is_empty() {
        kept.push("the task's push configurations".into());
    }
    Ok(kept)
}

/// `delete` drops the key's approvals (pending and decided) and tasks with
/// their updates and push configurations; another key's stay.
pub async fn delete_drops_approvals_and_tasks(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("delete-shared");
    let other = unique_key("delete-shared-other");
    let (approvals, task) = shared_rows(&store, &key).await?;
    let (other_approvals, other_task) = shared_rows(&store, &other).await?;
    must(store.delete(&key).await, "delete")?;
    let kept = any_kept(&store, &approvals, &task).await?;
    ensure!(kept.is_empty(), "delete kept {kept:?}");
    let kept = any_kept(&store, &other_approvals, &other_task).await?;
    ensure!(
        kept.len() == 5,
        "another key's rows went with it; kept only {kept:?}"
    );
    Ok(())
}
