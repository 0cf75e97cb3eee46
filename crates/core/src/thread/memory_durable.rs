//! The [`MemoryStore`](super::MemoryStore)'s durable rows (see
//! [`durable`](super::durable)): approvals, tasks with their update logs
//! and push configurations, and lease recovery that expires approvals.
//! Times are the process clock truncated to microseconds, like the SQL
//! stores keep them.

use std::collections::HashMap;

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::Value;

use super::durable::{
    AnswerRefused, ApprovalRow, ApprovalState, NewApproval, NewTask, PushConfigRow, TaskChange,
    TaskPage, TaskQuery, TaskRow, TaskUpdate, listed_after, page_token_after,
};
use super::store::{InterruptedRun, MemoryInner, StoreError};

/// The store's clock: now, in microseconds.
pub(super) fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

/// Approvals and tasks in memory.
#[derive(Default)]
pub(super) struct Durable {
    approvals: HashMap<String, ApprovalRow>,
    tasks: HashMap<String, MemoryTask>,
}

/// A task with its log and webhooks.
struct MemoryTask {
    row: TaskRow,
    updates: Vec<TaskUpdate>,
    push: Vec<PushConfigRow>,
}

fn expire(row: &mut ApprovalRow, at: DateTime<Utc>) {
    row.state = ApprovalState::Expired;
    row.decided_at = Some(at);
}

impl MemoryInner {
    /// Remove every lease `stale` picks (by target and lease), oldest run
    /// first, recording those on thread keys as interrupted runs and
    /// expiring the pending approvals their owners held.
    pub(super) fn recover_where(
        &mut self,
        stale: impl Fn(&str, &super::store::Held) -> bool,
    ) -> Vec<InterruptedRun> {
        let at = now();
        let mut targets: Vec<String> = self
            .leases
            .iter()
            .filter(|(target, held)| stale(target, held))
            .map(|(target, _)| target.clone())
            .collect();
        targets.sort_by_key(|target| self.leases.get(target).map(|held| held.started_at));
        let mut runs = Vec::new();
        for target in targets {
            let Some(held) = self.leases.remove(&target) else {
                continue;
            };
            self.durable.expire_held_by(&held.lease.owner, at);
            runs.extend(InterruptedRun::from_lease(
                &target,
                &held.lease.owner,
                held.prompt,
                held.started_at,
                at,
            ));
        }
        self.interrupted.extend(runs.iter().cloned());
        runs
    }

    /// [`ThreadStore::recover_expired`](super::ThreadStore::recover_expired).
    pub(super) fn recover_expired(&mut self) -> Vec<InterruptedRun> {
        let at = Utc::now();
        self.recover_where(|target, held| target.starts_with("key:") && held.lease.expires_at <= at)
    }
}

impl Durable {
    fn expire_held_by(&mut self, holder: &str, at: DateTime<Utc>) {
        for row in self.approvals.values_mut() {
            if row.state == ApprovalState::Pending && row.holder == holder {
                expire(row, at);
            }
        }
    }

    pub(super) fn put_approval(&mut self, new: NewApproval) -> Result<ApprovalRow, StoreError> {
        if self.approvals.contains_key(&new.id) {
            return Err(StoreError::AlreadyExists { key: new.id });
        }
        let row = ApprovalRow {
            id: new.id,
            key: new.key,
            run_id: new.run_id,
            holder: new.holder,
            principal: new.principal,
            request: new.request,
            created_at: now(),
            deadline: new.deadline,
            state: ApprovalState::Pending,
            answer: None,
            decided_at: None,
        };
        self.approvals.insert(row.id.clone(), row.clone());
        Ok(row)
    }

    pub(super) fn approval(&self, id: &str) -> Option<ApprovalRow> {
        self.approvals.get(id).cloned()
    }

    pub(super) fn pending_approvals(&mut self, key: &str) -> Vec<ApprovalRow> {
        let at = now();
        let mut pending = Vec::new();
        for row in self.approvals.values_mut().filter(|row| row.key == key) {
            if row.overdue(at) {
                expire(row, at);
            } else if row.state == ApprovalState::Pending {
                pending.push(row.clone());
            }
        }
        pending.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        pending
    }

    pub(super) fn answer_approval(
        &mut self,
        id: &str,
        principal: &str,
        answer: Value,
    ) -> Result<ApprovalRow, AnswerRefused> {
        let at = now();
        let row = self.approvals.get_mut(id).ok_or(AnswerRefused::NotFound)?;
        if row.principal != principal {
            return Err(AnswerRefused::Forbidden);
        }
        if row.overdue(at) {
            expire(row, at);
        }
        match row.state {
            ApprovalState::Answered => Err(AnswerRefused::AlreadyAnswered),
            ApprovalState::Expired => Err(AnswerRefused::Expired),
            ApprovalState::Pending => {
                row.state = ApprovalState::Answered;
                row.answer = Some(answer);
                row.decided_at = Some(at);
                Ok(row.clone())
            }
        }
    }

    pub(super) fn expire_approval(&mut self, id: &str) -> bool {
        match self.approvals.get_mut(id) {
            Some(row) if row.state == ApprovalState::Pending => {
                expire(row, now());
                true
            }
            _ => false,
        }
    }

    pub(super) fn expire_overdue_approval(&mut self, id: &str) -> bool {
        let at = now();
        match self.approvals.get_mut(id) {
            Some(row) if row.overdue(at) => {
                expire(row, at);
                true
            }
            _ => false,
        }
    }

    /// Drop `key`'s approvals and tasks (with their logs and webhooks).
    pub(super) fn delete_key(&mut self, key: &str) {
        self.approvals.retain(|_, row| row.key != key);
        self.tasks.retain(|_, task| task.row.key != key);
    }

    pub(super) fn create_task(&mut self, new: NewTask) -> Result<TaskRow, StoreError> {
        if self.tasks.contains_key(&new.id) {
            return Err(StoreError::AlreadyExists { key: new.id });
        }
        let at = now();
        let row = TaskRow {
            id: new.id,
            context_id: new.context_id,
            key: new.key,
            principal: new.principal,
            state: new.state,
            terminal: false,
            holder: new.holder,
            snapshot: new.snapshot,
            seq: 0,
            cancel_requested_at: None,
            created_at: at,
            updated_at: at,
        };
        let task = MemoryTask {
            row: row.clone(),
            updates: Vec::new(),
            push: Vec::new(),
        };
        self.tasks.insert(row.id.clone(), task);
        Ok(row)
    }

    pub(super) fn update_task(
        &mut self,
        id: &str,
        change: TaskChange,
    ) -> Result<TaskRow, StoreError> {
        let task = self
            .tasks
            .get_mut(id)
            .ok_or_else(|| StoreError::Invalid(format!("no task {id:?}")))?;
        if task.row.terminal {
            return Err(StoreError::Invalid(format!("task {id:?} is terminal")));
        }
        let at = now();
        if let Some(body) = change.update {
            task.row.seq += 1;
            task.updates.push(TaskUpdate {
                seq: task.row.seq,
                body,
                at,
            });
        }
        task.row.state = change.state;
        task.row.terminal = change.terminal;
        task.row.holder = change.holder;
        task.row.snapshot = change.snapshot;
        task.row.updated_at = at;
        Ok(task.row.clone())
    }

    pub(super) fn task(&self, id: &str) -> Option<TaskRow> {
        self.tasks.get(id).map(|task| task.row.clone())
    }

    pub(super) fn task_updates(&self, id: &str, after: u64, limit: usize) -> Vec<TaskUpdate> {
        self.tasks.get(id).map_or_else(Vec::new, |task| {
            task.updates
                .iter()
                .filter(|u| u.seq > after)
                .take(limit)
                .cloned()
                .collect()
        })
    }

    pub(super) fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let after = query.after()?;
        let mut matching: Vec<&TaskRow> = self
            .tasks
            .values()
            .map(|task| &task.row)
            .filter(|row| query.matches(row))
            .collect();
        let total = matching.len() as u64;
        matching.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        let limit = query.limit();
        let mut rest = matching.into_iter().filter(|row| {
            after
                .as_ref()
                .is_none_or(|(at, id)| listed_after(row.updated_at, &row.id, *at, id))
        });
        let tasks: Vec<TaskRow> = rest.by_ref().take(limit).cloned().collect();
        let next_page_token = match (rest.next(), tasks.last()) {
            (Some(_), Some(last)) => Some(page_token_after(last)),
            _ => None,
        };
        Ok(TaskPage {
            tasks,
            next_page_token,
            total,
        })
    }

    pub(super) fn active_tasks(&self, key: &str) -> Vec<TaskRow> {
        let mut active: Vec<TaskRow> = self
            .tasks
            .values()
            .filter(|task| task.row.key == key && !task.row.terminal)
            .map(|task| task.row.clone())
            .collect();
        active.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        active
    }

    pub(super) fn request_task_cancel(&mut self, id: &str) -> Option<TaskRow> {
        let task = self.tasks.get_mut(id)?;
        if !task.row.terminal && task.row.cancel_requested_at.is_none() {
            task.row.cancel_requested_at = Some(now());
        }
        Some(task.row.clone())
    }

    pub(super) fn prune_tasks(&mut self, before: DateTime<Utc>) -> u64 {
        let old = |task: &TaskRow| task.terminal && task.updated_at < before;
        let keys: std::collections::HashSet<String> = self
            .tasks
            .values()
            .filter(|task| old(&task.row))
            .map(|task| task.row.key.clone())
            .collect();
        self.approvals.retain(|_, row| {
            row.state == ApprovalState::Pending
                || row.decided_at.is_none_or(|at| at >= before)
                || !keys.contains(&row.key)
        });
        let count = self.tasks.len();
        self.tasks.retain(|_, task| !old(&task.row));
        (count - self.tasks.len()) as u64
    }

    pub(super) fn put_push_config(
        &mut self,
        task_id: &str,
        id: &str,
        config: Value,
    ) -> Result<PushConfigRow, StoreError> {
        let task = self
            .tasks
            .get_mut(task_id)
            .ok_or_else(|| StoreError::Invalid(format!("no task {task_id:?}")))?;
        if let Some(existing) = task.push.iter_mut().find(|p| p.id == id) {
            existing.config = config;
            return Ok(existing.clone());
        }
        let row = PushConfigRow {
            task_id: task_id.to_owned(),
            id: id.to_owned(),
            config,
            created_at: now(),
        };
        task.push.push(row.clone());
        Ok(row)
    }

    pub(super) fn push_configs(&self, task_id: &str) -> Vec<PushConfigRow> {
        self.tasks
            .get(task_id)
            .map_or_else(Vec::new, |task| task.push.clone())
    }

    pub(super) fn delete_push_config(&mut self, task_id: &str, id: &str) -> bool {
        let Some(task) = self.tasks.get_mut(task_id) else {
            return false;
        };
        let before = task.push.len();
        task.push.retain(|p| p.id != id);
        task.push.len() != before
    }
}
