//! The durable rows' SQL bodies, once for both backends (see
//! [`Clock`]). Writes run inside the store's transaction (SQLite:
//! `BEGIN IMMEDIATE`; PostgreSQL: every conditional write is one `UPDATE`
//! whose row lock serializes the writers of that row).

use std::marker::PhantomData;

use agent_adaptor_core::thread::StoreError;
use agent_adaptor_core::thread::durable::{
    AnswerRefused, ApprovalRow, ApprovalState, NewApproval, NewTask, PushConfigRow, TaskChange,
    TaskPage, TaskQuery, TaskRow, TaskUpdate, page_token_after,
};
use chrono::{DateTime, SubsecRound, Utc};
use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Row, Transaction, Type};

use super::Clock;
use crate::error::backend;

const APPROVAL_COLUMNS: &str = "id, key, run_id, holder, principal, request::text AS request, \
     created_at, deadline, state, answer::text AS answer, decided_at";
const TASK_COLUMNS: &str = "id, context_id, key, principal, state, terminal, holder, \
     snapshot::text AS snapshot, seq, cancel_requested_at, created_at, updated_at";
const PUSH_COLUMNS: &str = "task_id, id, config::text AS config, created_at";

/// The durable rows of backend `DB`: `Durable::<Sqlite>::put_approval(..)`.
pub(crate) struct Durable<DB>(PhantomData<DB>);

fn json_text(value: &Value) -> String {
    value.to_string()
}

fn json_value(what: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

fn seq_of(what: &str, seq: i64) -> Result<u64, StoreError> {
    u64::try_from(seq).map_err(|_| StoreError::Corrupt(format!("{what}: sequence {seq}")))
}

fn sql_count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl<DB> Durable<DB>
where
    DB: Clock,
    DB::Time: Copy,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> bool: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> DB::Time: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB> + ColumnIndex<DB::Row>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB> + Decode<'q, DB>,
    for<'q> Option<DB::Time>: Encode<'q, DB> + Decode<'q, DB>,
    usize: ColumnIndex<DB::Row>,
{
    fn err(op: &'static str) -> impl Fn(sqlx::Error) -> StoreError {
        move |e| backend(&format!("{} {op}", DB::LABEL), &e)
    }

    /// The store's clock, inside `tx`.
    pub(crate) async fn now(tx: &mut Transaction<'static, DB>) -> Result<DB::Time, StoreError> {
        match DB::NOW {
            Some(sql) => sqlx::query_scalar(sql)
                .fetch_one(&mut **tx)
                .await
                .map_err(Self::err("clock")),
            None => Ok(DB::time(Utc::now().trunc_subsecs(6))),
        }
    }

    fn decode_approval(row: &DB::Row) -> Result<ApprovalRow, StoreError> {
        let err = |e: sqlx::Error| StoreError::Corrupt(format!("{} approval row: {e}", DB::LABEL));
        let id: String = row.try_get("id").map_err(err)?;
        let time = |t: DB::Time| DB::from_time(&id, t);
        let state: String = row.try_get("state").map_err(err)?;
        let answer: Option<String> = row.try_get("answer").map_err(err)?;
        let request: String = row.try_get("request").map_err(err)?;
        Ok(ApprovalRow {
            key: row.try_get("key").map_err(err)?,
            run_id: row.try_get("run_id").map_err(err)?,
            holder: row.try_get("holder").map_err(err)?,
            principal: row.try_get("principal").map_err(err)?,
            request: json_value(&id, &request)?,
            created_at: time(row.try_get("created_at").map_err(err)?)?,
            deadline: row
                .try_get::<Option<DB::Time>, _>("deadline")
                .map_err(err)?
                .map(time)
                .transpose()?,
            state: ApprovalState::parse(&state)
                .ok_or_else(|| StoreError::Corrupt(format!("{id}: approval state {state:?}")))?,
            answer: answer.map(|a| json_value(&id, &a)).transpose()?,
            decided_at: row
                .try_get::<Option<DB::Time>, _>("decided_at")
                .map_err(err)?
                .map(time)
                .transpose()?,
            id: id.clone(),
        })
    }

    fn decode_task(row: &DB::Row) -> Result<TaskRow, StoreError> {
        let err = |e: sqlx::Error| StoreError::Corrupt(format!("{} task row: {e}", DB::LABEL));
        let id: String = row.try_get("id").map_err(err)?;
        let time = |t: DB::Time| DB::from_time(&id, t);
        let snapshot: String = row.try_get("snapshot").map_err(err)?;
        Ok(TaskRow {
            context_id: row.try_get("context_id").map_err(err)?,
            key: row.try_get("key").map_err(err)?,
            principal: row.try_get("principal").map_err(err)?,
            state: row.try_get("state").map_err(err)?,
            terminal: row.try_get("terminal").map_err(err)?,
            holder: row.try_get("holder").map_err(err)?,
            snapshot: json_value(&id, &snapshot)?,
            seq: seq_of(&id, row.try_get("seq").map_err(err)?)?,
            cancel_requested_at: row
                .try_get::<Option<DB::Time>, _>("cancel_requested_at")
                .map_err(err)?
                .map(time)
                .transpose()?,
            created_at: time(row.try_get("created_at").map_err(err)?)?,
            updated_at: time(row.try_get("updated_at").map_err(err)?)?,
            id: id.clone(),
        })
    }

    fn decode_push(row: &DB::Row) -> Result<PushConfigRow, StoreError> {
        let err = |e: sqlx::Error| StoreError::Corrupt(format!("{} push row: {e}", DB::LABEL));
        let id: String = row.try_get("id").map_err(err)?;
        let config: String = row.try_get("config").map_err(err)?;
        Ok(PushConfigRow {
            task_id: row.try_get("task_id").map_err(err)?,
            config: json_value(&id, &config)?,
            created_at: DB::from_time(&id, row.try_get("created_at").map_err(err)?)?,
            id,
        })
    }

    /// `put_approval`.
    pub(crate) async fn put_approval(
        tx: &mut Transaction<'static, DB>,
        new: NewApproval,
    ) -> Result<ApprovalRow, StoreError> {
        let err = Self::err("put_approval");
        let now = Self::now(tx).await?;
        let sql = DB::durable_sql(&format!(
            "INSERT INTO agent_adaptor_approvals (id, key, run_id, holder, principal, request, \
             created_at, deadline, state) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, 'pending') \
             ON CONFLICT (id) DO NOTHING RETURNING {APPROVAL_COLUMNS}"
        ));
        let row = sqlx::query(&sql)
            .bind(new.id.as_str())
            .bind(new.key.as_str())
            .bind(new.run_id.as_str())
            .bind(new.holder.as_str())
            .bind(new.principal.as_str())
            .bind(json_text(&new.request))
            .bind(now)
            .bind(new.deadline.map(DB::time))
            .fetch_optional(&mut **tx)
            .await
            .map_err(err)?;
        match row {
            Some(row) => Self::decode_approval(&row),
            None => Err(StoreError::AlreadyExists { key: new.id }),
        }
    }

    /// `approval`.
    pub(crate) async fn approval(
        pool: &Pool<DB>,
        id: &str,
    ) -> Result<Option<ApprovalRow>, StoreError> {
        let sql = DB::durable_sql(&format!(
            "SELECT {APPROVAL_COLUMNS} FROM agent_adaptor_approvals WHERE id = $1"
        ));
        let row = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await
            .map_err(Self::err("approval"))?;
        row.as_ref().map(Self::decode_approval).transpose()
    }

    /// Expire the pending rows of `key` (or approval `id`) whose deadline
    /// passed at `now`; how many.
    async fn expire_overdue(
        tx: &mut Transaction<'static, DB>,
        column: &str,
        value: &str,
        now: DB::Time,
    ) -> Result<u64, StoreError> {
        let sql = DB::durable_sql(&format!(
            "UPDATE agent_adaptor_approvals SET state = 'expired', decided_at = $2 \
             WHERE {column} = $1 AND state = 'pending' AND deadline <= $2"
        ));
        let done = sqlx::query(&sql)
            .bind(value)
            .bind(now)
            .execute(&mut **tx)
            .await
            .map_err(Self::err("expire approvals"))?;
        Ok(DB::rows_affected(&done))
    }

    /// `expire_overdue_approval`: on the store's clock.
    pub(crate) async fn expire_overdue_approval(
        tx: &mut Transaction<'static, DB>,
        id: &str,
    ) -> Result<bool, StoreError> {
        let now = Self::now(tx).await?;
        Ok(Self::expire_overdue(tx, "id", id, now).await? > 0)
    }

    /// `pending_approvals` (expires the overdue first).
    pub(crate) async fn pending_approvals(
        tx: &mut Transaction<'static, DB>,
        key: &str,
    ) -> Result<Vec<ApprovalRow>, StoreError> {
        let now = Self::now(tx).await?;
        Self::expire_overdue(tx, "key", key, now).await?;
        let sql = DB::durable_sql(&format!(
            "SELECT {APPROVAL_COLUMNS} FROM agent_adaptor_approvals \
             WHERE key = $1 AND state = 'pending' ORDER BY created_at, id"
        ));
        let rows = sqlx::query(&sql)
            .bind(key)
            .fetch_all(&mut **tx)
            .await
            .map_err(Self::err("pending_approvals"))?;
        rows.iter().map(Self::decode_approval).collect()
    }

    /// `answer_approval`: one conditional update; when it matches nothing,
    /// the row says why.
    pub(crate) async fn answer_approval(
        tx: &mut Transaction<'static, DB>,
        id: &str,
        principal: &str,
        answer: &Value,
    ) -> Result<Result<ApprovalRow, AnswerRefused>, StoreError> {
        let err = Self::err("answer_approval");
        let now = Self::now(tx).await?;
        let sql = DB::durable_sql(&format!(
            "UPDATE agent_adaptor_approvals \
             SET state = 'answered', answer = $3::jsonb, decided_at = $4 \
             WHERE id = $1 AND principal = $2 AND state = 'pending' \
               AND (deadline IS NULL OR deadline > $4) \
             RETURNING {APPROVAL_COLUMNS}"
        ));
        let row = sqlx::query(&sql)
            .bind(id)
            .bind(principal)
            .bind(json_text(answer))
            .bind(now)
            .fetch_optional(&mut **tx)
            .await
            .map_err(&err)?;
        if let Some(row) = row {
            return Self::decode_approval(&row).map(Ok);
        }
        Self::expire_overdue(tx, "id", id, now).await?;
        let sql = DB::durable_sql(&format!(
            "SELECT {APPROVAL_COLUMNS} FROM agent_adaptor_approvals WHERE id = $1"
        ));
        let row = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&mut **tx)
            .await
            .map_err(&err)?;
        let Some(row) = row else {
            return Ok(Err(AnswerRefused::NotFound));
        };
        let row = Self::decode_approval(&row)?;
        Ok(Err(if row.principal != principal {
            AnswerRefused::Forbidden
        } else if row.state == ApprovalState::Answered {
            AnswerRefused::AlreadyAnswered
        } else {
            AnswerRefused::Expired
        }))
    }

    /// `expire_approval`.
    pub(crate) async fn expire_approval(
        tx: &mut Transaction<'static, DB>,
        id: &str,
    ) -> Result<bool, StoreError> {
        let now = Self::now(tx).await?;
        let sql = DB::durable_sql(
            "UPDATE agent_adaptor_approvals SET state = 'expired', decided_at = $2 \
             WHERE id = $1 AND state = 'pending'",
        );
        let done = sqlx::query(&sql)
            .bind(id)
            .bind(now)
            .execute(&mut **tx)
            .await
            .map_err(Self::err("expire_approval"))?;
        Ok(DB::rows_affected(&done) > 0)
    }

    /// Expire the pending approvals held by each of `holders` (the owners
    /// of recovered leases), at `now`.
    pub(crate) async fn expire_held_by(
        tx: &mut Transaction<'static, DB>,
        holders: &[String],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let sql = DB::durable_sql(
            "UPDATE agent_adaptor_approvals SET state = 'expired', decided_at = $2 \
             WHERE holder = $1 AND state = 'pending'",
        );
        for holder in holders {
            sqlx::query(&sql)
                .bind(holder.as_str())
                .bind(DB::time(now))
                .execute(&mut **tx)
                .await
                .map_err(Self::err("expire held approvals"))?;
        }
        Ok(())
    }

    /// `create_task`.
    pub(crate) async fn create_task(
        tx: &mut Transaction<'static, DB>,
        new: NewTask,
    ) -> Result<TaskRow, StoreError> {
        let now = Self::now(tx).await?;
        let sql = DB::durable_sql(&format!(
            "INSERT INTO agent_adaptor_tasks (id, context_id, key, principal, state, terminal, \
             holder, snapshot, seq, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, 0, $9, $9) \
             ON CONFLICT (id) DO NOTHING RETURNING {TASK_COLUMNS}"
        ));
        let row = sqlx::query(&sql)
            .bind(new.id.as_str())
            .bind(new.context_id.as_str())
            .bind(new.key.as_str())
            .bind(new.principal.as_str())
            .bind(new.state.as_str())
            .bind(false)
            .bind(new.holder.as_deref())
            .bind(json_text(&new.snapshot))
            .bind(now)
            .fetch_optional(&mut **tx)
            .await
            .map_err(Self::err("create_task"))?;
        match row {
            Some(row) => Self::decode_task(&row),
            None => Err(StoreError::AlreadyExists { key: new.id }),
        }
    }

    /// `update_task`: one conditional update (not terminal), then the
    /// update appended under the new sequence.
    pub(crate) async fn update_task(
        tx: &mut Transaction<'static, DB>,
        id: &str,
        change: TaskChange,
    ) -> Result<TaskRow, StoreError> {
        let err = Self::err("update_task");
        let now = Self::now(tx).await?;
        let step = i64::from(change.update.is_some());
        let sql = DB::durable_sql(&format!(
            "UPDATE agent_adaptor_tasks SET state = $2, terminal = $3, holder = $4, \
             snapshot = $5::jsonb, seq = seq + $6, updated_at = $7 \
             WHERE id = $1 AND NOT terminal RETURNING {TASK_COLUMNS}"
        ));
        let row = sqlx::query(&sql)
            .bind(id)
            .bind(change.state.as_str())
            .bind(change.terminal)
            .bind(change.holder.as_deref())
            .bind(json_text(&change.snapshot))
            .bind(step)
            .bind(now)
            .fetch_optional(&mut **tx)
            .await
            .map_err(&err)?;
        let Some(row) = row else {
            let known = Self::task_in(tx, id).await?.is_some();
            return Err(StoreError::Invalid(if known {
                format!("task {id:?} is terminal")
            } else {
                format!("no task {id:?}")
            }));
        };
        let task = Self::decode_task(&row)?;
        if let Some(body) = change.update {
            let sql = DB::durable_sql(
                "INSERT INTO agent_adaptor_task_updates (task_id, seq, body, at) \
                 VALUES ($1, $2, $3::jsonb, $4)",
            );
            sqlx::query(&sql)
                .bind(id)
                .bind(i64::try_from(task.seq).unwrap_or(i64::MAX))
                .bind(json_text(&body))
                .bind(now)
                .execute(&mut **tx)
                .await
                .map_err(&err)?;
        }
        Ok(task)
    }

    async fn task_in(
        tx: &mut Transaction<'static, DB>,
        id: &str,
    ) -> Result<Option<TaskRow>, StoreError> {
        let sql = DB::durable_sql(&format!(
            "SELECT {TASK_COLUMNS} FROM agent_adaptor_tasks WHERE id = $1"
        ));
        let row = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&mut **tx)
            .await
            .map_err(Self::err("task"))?;
        row.as_ref().map(Self::decode_task).transpose()
    }

    /// `task`.
    pub(crate) async fn task(pool: &Pool<DB>, id: &str) -> Result<Option<TaskRow>, StoreError> {
        let sql = DB::durable_sql(&format!(
            "SELECT {TASK_COLUMNS} FROM agent_adaptor_tasks WHERE id = $1"
        ));
        let row = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await
            .map_err(Self::err("task"))?;
        row.as_ref().map(Self::decode_task).transpose()
    }

    /// `task_updates`.
    pub(crate) async fn task_updates(
        pool: &Pool<DB>,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<TaskUpdate>, StoreError> {
        let err = Self::err("task_updates");
        let sql = DB::durable_sql(
            "SELECT seq, body::text AS body, at FROM agent_adaptor_task_updates \
             WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        );
        let rows = sqlx::query(&sql)
            .bind(id)
            .bind(i64::try_from(after).unwrap_or(i64::MAX))
            .bind(sql_count(limit))
            .fetch_all(pool)
            .await
            .map_err(&err)?;
        rows.iter()
            .map(|row| {
                let seq = seq_of(id, row.try_get("seq").map_err(&err)?)?;
                let body: String = row.try_get("body").map_err(&err)?;
                Ok(TaskUpdate {
                    seq,
                    body: json_value(id, &body)?,
                    at: DB::from_time(id, row.try_get("at").map_err(&err)?)?,
                })
            })
            .collect()
    }

    /// `list_tasks`: the count of every match, then one keyset page.
    pub(crate) async fn list_tasks(
        pool: &Pool<DB>,
        query: &TaskQuery,
    ) -> Result<TaskPage, StoreError> {
        let err = Self::err("list_tasks");
        let after = query.after()?;
        let mut filters = Vec::new();
        let mut texts: Vec<&str> = Vec::new();
        for (column, value) in [
            ("principal", &query.principal),
            ("context_id", &query.context_id),
            ("state", &query.state),
        ] {
            if let Some(value) = value {
                texts.push(value);
                filters.push(format!("{column} = ${}", texts.len()));
            }
        }
        let mut next = texts.len();
        if query.updated_since.is_some() {
            next += 1;
            filters.push(format!("updated_at >= ${next}"));
        }
        let matching = if filters.is_empty() {
            "TRUE".to_owned()
        } else {
            filters.join(" AND ")
        };
        let count_sql = DB::durable_sql(&format!(
            "SELECT COUNT(*) FROM agent_adaptor_tasks WHERE {matching}"
        ));
        let keyset = match after {
            Some(_) => format!(
                " AND (updated_at < ${a} OR (updated_at = ${a} AND id > ${b}))",
                a = next + 1,
                b = next + 2
            ),
            None => String::new(),
        };
        let page_sql = DB::durable_sql(&format!(
            "SELECT {TASK_COLUMNS} FROM agent_adaptor_tasks WHERE {matching}{keyset} \
             ORDER BY updated_at DESC, id LIMIT {}",
            query.limit() + 1
        ));
        let mut count = sqlx::query_scalar::<DB, i64>(&count_sql);
        let mut page = sqlx::query(&page_sql);
        for text in &texts {
            count = count.bind(*text);
            page = page.bind(*text);
        }
        if let Some(since) = query.updated_since {
            count = count.bind(DB::time(since));
            page = page.bind(DB::time(since));
        }
        if let Some((at, id)) = &after {
            page = page.bind(DB::time(*at)).bind(id.as_str());
        }
        let total = count.fetch_one(pool).await.map_err(&err)?;
        let rows = page.fetch_all(pool).await.map_err(&err)?;
        let mut tasks = rows
            .iter()
            .map(Self::decode_task)
            .collect::<Result<Vec<_>, _>>()?;
        let more = tasks.len() > query.limit();
        tasks.truncate(query.limit());
        let next_page_token = match (more, tasks.last()) {
            (true, Some(last)) => Some(page_token_after(last)),
            _ => None,
        };
        Ok(TaskPage {
            tasks,
            next_page_token,
            total: u64::try_from(total).unwrap_or(0),
        })
    }

    /// `active_tasks`.
    pub(crate) async fn active_tasks(
        pool: &Pool<DB>,
        key: &str,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let sql = DB::durable_sql(&format!(
            "SELECT {TASK_COLUMNS} FROM agent_adaptor_tasks WHERE key = $1 AND NOT terminal \
             ORDER BY created_at, id"
        ));
        let rows = sqlx::query(&sql)
            .bind(key)
            .fetch_all(pool)
            .await
            .map_err(Self::err("active_tasks"))?;
        rows.iter().map(Self::decode_task).collect()
    }

    /// `request_task_cancel` (noted on a live task, once).
    pub(crate) async fn request_task_cancel(
        tx: &mut Transaction<'static, DB>,
        id: &str,
    ) -> Result<Option<TaskRow>, StoreError> {
        let now = Self::now(tx).await?;
        let sql = DB::durable_sql(
            "UPDATE agent_adaptor_tasks SET cancel_requested_at = $2 \
             WHERE id = $1 AND NOT terminal AND cancel_requested_at IS NULL",
        );
        sqlx::query(&sql)
            .bind(id)
            .bind(now)
            .execute(&mut **tx)
            .await
            .map_err(Self::err("request_task_cancel"))?;
        Self::task_in(tx, id).await
    }

    /// Delete the tasks `filter` (on `agent_adaptor_tasks`, binding `$1`
    /// to `value`) picks, their updates and configurations first; how many
    /// tasks.
    async fn delete_tasks_where<T>(
        tx: &mut Transaction<'static, DB>,
        filter: &str,
        value: T,
    ) -> Result<u64, StoreError>
    where
        T: for<'q> Encode<'q, DB> + Type<DB> + Clone + Send + Sync + 'static,
    {
        let err = Self::err("delete tasks");
        let picked = format!("SELECT id FROM agent_adaptor_tasks WHERE {filter}");
        for table in [
            "agent_adaptor_task_updates",
            "agent_adaptor_task_push_configs",
        ] {
            let sql = DB::durable_sql(&format!("DELETE FROM {table} WHERE task_id IN ({picked})"));
            sqlx::query(&sql)
                .bind(value.clone())
                .execute(&mut **tx)
                .await
                .map_err(&err)?;
        }
        let sql = DB::durable_sql(&format!("DELETE FROM agent_adaptor_tasks WHERE {filter}"));
        let done = sqlx::query(&sql)
            .bind(value)
            .execute(&mut **tx)
            .await
            .map_err(&err)?;
        Ok(DB::rows_affected(&done))
    }

    /// `prune_tasks`: the approvals decided before `before` on the threads
    /// of the old terminal tasks, then those tasks.
    pub(crate) async fn prune_tasks(
        tx: &mut Transaction<'static, DB>,
        before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let before = DB::time(before);
        let sql = DB::durable_sql(
            "DELETE FROM agent_adaptor_approvals WHERE state <> 'pending' AND decided_at < $1 \
             AND key IN (SELECT key FROM agent_adaptor_tasks WHERE terminal AND updated_at < $1)",
        );
        sqlx::query(&sql)
            .bind(before)
            .execute(&mut **tx)
            .await
            .map_err(Self::err("prune approvals"))?;
        Self::delete_tasks_where(tx, "terminal AND updated_at < $1", before).await
    }

    /// Drop `key`'s approvals and tasks (with their updates and
    /// configurations): part of the store's `delete`.
    pub(crate) async fn delete_key(
        tx: &mut Transaction<'static, DB>,
        key: &str,
    ) -> Result<(), StoreError> {
        Self::delete_tasks_where(tx, "key = $1", key.to_owned()).await?;
        let sql = DB::durable_sql("DELETE FROM agent_adaptor_approvals WHERE key = $1");
        sqlx::query(&sql)
            .bind(key)
            .execute(&mut **tx)
            .await
            .map_err(Self::err("delete approvals"))?;
        Ok(())
    }

    /// `put_push_config` (a replacement keeps the first registration time).
    pub(crate) async fn put_push_config(
        tx: &mut Transaction<'static, DB>,
        task_id: &str,
        id: &str,
        config: &Value,
    ) -> Result<PushConfigRow, StoreError> {
        let err = Self::err("put_push_config");
        if Self::task_in(tx, task_id).await?.is_none() {
            return Err(StoreError::Invalid(format!("no task {task_id:?}")));
        }
        let now = Self::now(tx).await?;
        let sql = DB::durable_sql(&format!(
            "INSERT INTO agent_adaptor_task_push_configs (task_id, id, config, created_at) \
             VALUES ($1, $2, $3::jsonb, $4) \
             ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config \
             RETURNING {PUSH_COLUMNS}"
        ));
        let row = sqlx::query(&sql)
            .bind(task_id)
            .bind(id)
            .bind(json_text(config))
            .bind(now)
            .fetch_one(&mut **tx)
            .await
            .map_err(&err)?;
        Self::decode_push(&row)
    }

    /// `push_configs`.
    pub(crate) async fn push_configs(
        pool: &Pool<DB>,
        task_id: &str,
    ) -> Result<Vec<PushConfigRow>, StoreError> {
        let sql = DB::durable_sql(&format!(
            "SELECT {PUSH_COLUMNS} FROM agent_adaptor_task_push_configs WHERE task_id = $1 \
             ORDER BY created_at, id"
        ));
        let rows = sqlx::query(&sql)
            .bind(task_id)
            .fetch_all(pool)
            .await
            .map_err(Self::err("push_configs"))?;
        rows.iter().map(Self::decode_push).collect()
    }

    /// `delete_push_config`.
    pub(crate) async fn delete_push_config(
        tx: &mut Transaction<'static, DB>,
        task_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let sql = DB::durable_sql(
            "DELETE FROM agent_adaptor_task_push_configs WHERE task_id = $1 AND id = $2",
        );
        let done = sqlx::query(&sql)
            .bind(task_id)
            .bind(id)
            .execute(&mut **tx)
            .await
            .map_err(Self::err("delete_push_config"))?;
        Ok(DB::rows_affected(&done) > 0)
    }
}
