//! `TASK_STATE_INPUT_REQUIRED` answered on any server sharing the task
//! store, through the [`Desk`]: the server running the task keeps its
//! approval as a store row; another server reads the row, checks the
//! client's answer as the owner would, and records it; the owner applies
//! it to the live request, and the task goes on (followers anywhere see
//! it).

use std::sync::Arc;

use agent_adaptor_core::thread::durable::{AnswerRefused, NewApproval, TOPIC_TASK};
use agent_adaptor_core::thread::store::StoreError;
use agent_adaptor_core::{ApprovalKind, ApprovalRequest};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::durable::{read_error, row_task};
use super::execute::{self, Decision};
use super::rpc::{ErrorCode, RpcError};
use super::store::TaskSlot;
use super::types::{Message, TaskState};
use crate::Principal;
use crate::desk::{Desk, NotAnswered, Settled};

/// How long an answer from another server waits for the task store to show
/// the task waiting for input (its writes trail the owner's stream).
const INPUT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What an approval row of a task holds (its `request`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Asked {
    task_id: String,
    kind: ApprovalKind,
    /// Whether "always" can be granted.
    grantable: bool,
}

/// What an answer row holds: the client's reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Answer {
    message: Message,
}

/// Where a task's approvals are shared.
#[derive(Clone)]
pub(crate) struct Sharing {
    pub(crate) desk: Desk,
    /// The task's thread key.
    pub(crate) key: String,
}

/// Owner side: keep `req` (the task waits on it) as a row, and apply an
/// answer another server records; expire the row once the task no longer
/// waits on it (answered here, timed out, ended).
pub(crate) async fn offer(sharing: Sharing, slot: Arc<TaskSlot>, req: ApprovalRequest) {
    let asked = Asked {
        task_id: slot.id.clone(),
        kind: req.kind,
        grantable: req.always_allow_tool().is_some(),
    };
    let Ok(request) = serde_json::to_value(&asked) else {
        return;
    };
    let row = NewApproval {
        id: req.id.clone(),
        key: sharing.key.clone(),
        run_id: req.meta.run_id.to_string(),
        holder: slot.holder().unwrap_or_default(),
        principal: slot.owner.digest(),
        request,
        deadline: req.deadline,
    };
    let mut ticket = match sharing.desk.ask(row).await {
        Ok(t) => t,
        Err(StoreError::Unsupported(_)) => return,
        Err(e) => {
            tracing::warn!(task = %slot.id, error = %e, "a2a: an approval could not be shared; only this server can answer it");
            return;
        }
    };
    let settled = tokio::select! {
        s = ticket.settled() => s,
        () = slot.input_settled(&req.id) => {
            ticket.expire().await;
            return;
        }
    };
    let Settled::Answered(row) = settled else {
        return;
    };
    let Some(Ok(answer)) = row.answer.map(serde_json::from_value::<Answer>) else {
        tracing::warn!(task = %slot.id, "a2a: an answer row does not decode; ignored");
        return;
    };
    let reply = answer.message;
    let applied = slot.answer(reply.clone(), |pending| {
        if pending.id != req.id {
            return Err(RpcError::new(
                ErrorCode::UnsupportedOperation,
                "another approval is pending",
            ));
        }
        let decision = execute::decision(pending.kind, &reply)?;
        execute::apply(pending, &decision)
    });
    match applied {
        Ok(_) => tracing::info!(task = %slot.id, "a2a: approval answered on another server"),
        Err(e) => {
            tracing::warn!(task = %slot.id, error = %e.message, "a2a: an answer from another server could not be applied")
        }
    }
}

/// Answering side: record `reply` (a message to task `task_id`, which
/// another server runs) as the answer to the approval the task waits on.
/// `Ok(false)`: the caller has no such task in the store.
pub(crate) async fn answer(
    desk: &Desk,
    principal: &Principal,
    task_id: &str,
    reply: &Message,
) -> Result<bool, RpcError> {
    let store = desk.store();
    // The client saw the task wait on its stream from the server running
    // it; the task store may lag behind by a write: wait for it, bounded.
    let mut wake = desk.wake(TOPIC_TASK, task_id).await;
    let started = tokio::time::Instant::now();
    let (row, mut reply, approval, asked) = loop {
        let row = match store.task(task_id).await {
            Ok(Some(row)) if row.principal == principal.digest() => row,
            Ok(_) | Err(StoreError::Unsupported(_)) => return Ok(false),
            Err(e) => return Err(read_error(&e)),
        };
        if !reply.context_id.is_empty() && reply.context_id != row.context_id {
            return Err(RpcError::invalid_params(format!(
                "message.contextId {:?} does not match the task's context {:?}",
                reply.context_id, row.context_id
            )));
        }
        let task = row_task(&row, Some(0))?;
        let refuse = |why: &str| {
            RpcError::new(
                ErrorCode::UnsupportedOperation,
                format!(
                    "task {task_id:?} is {} and {why}",
                    task.status.state.as_str()
                ),
            )
            .with_meta("taskId", task_id)
        };
        if row.terminal {
            return Err(refuse("accepts no further messages"));
        }
        let waiting = started.elapsed() < INPUT_WAIT;
        if task.status.state != TaskState::InputRequired {
            if waiting {
                wake.next().await;
                continue;
            }
            return Err(refuse(
                "is not waiting for input; send a new message (without taskId) to start another task",
            ));
        }
        let pending = store
            .pending_approvals(&row.key)
            .await
            .map_err(|e| read_error(&e))?;
        let found = pending.into_iter().find_map(|a| {
            let asked: Asked = serde_json::from_value(a.request.clone()).ok()?;
            (asked.task_id == task_id).then_some((a, asked))
        });
        match found {
            Some((approval, asked)) => break (row, reply.clone(), approval, asked),
            None if waiting => {
                wake.next().await;
            }
            None => return Err(refuse("its approval can no longer be answered here")),
        }
    };
    reply.context_id = row.context_id.clone();
    let checked = desk
        .answer_checked(&approval.id, &principal.digest(), &row.key, |_| {
            let decision = execute::decision(asked.kind, &reply)?;
            if decision == Decision::ApproveAlways && !asked.grantable {
                return Err(execute::not_grantable());
            }
            Ok(json!(Answer { message: reply }))
        })
        .await;
    let refused = |why: AnswerRefused| {
        RpcError::new(
            ErrorCode::UnsupportedOperation,
            format!("task {task_id:?}: its approval can no longer be answered ({why})"),
        )
        .with_meta("taskId", task_id)
    };
    match checked {
        Ok(_) => Ok(true),
        Err(NotAnswered::Forbidden) => Ok(false),
        Err(NotAnswered::Invalid(e)) => Err(e),
        Err(NotAnswered::NotFound) => Err(refused(AnswerRefused::NotFound)),
        Err(NotAnswered::Refused { why, .. }) => Err(refused(why)),
        Err(NotAnswered::Store(e)) => Err(read_error(&e)),
    }
}
