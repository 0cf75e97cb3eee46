//! Interrupts shared by every host over one store (see
//! [`Desk`](crate::desk::Desk)).
//!
//! When a run parks at an interrupt, its host keeps the interrupt as a
//! pending approval row and waits on it. A resume may reach any host:
//!
//! * the run's own host checks the answer, records it in the row (so no
//!   other host can answer too) and continues the run as before;
//! * another host checks the answer against the row (owner, interrupt id,
//!   payload), records it, and streams the resumed run from the event log
//!   while the run's host — woken by the row's notification — continues the
//!   run under the AG-UI run id the client chose.
//!
//! A row whose deadline passes is expired (the run is cancelled, as a
//! local expiry does); a host that shuts down expires its rows; a host that
//! dies has them expired with its leases. An expired row is never answered.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::driver::DecisionKind;
use agent_adaptor_core::thread::durable::{AnswerRefused, ApprovalRow, ApprovalState, NewApproval};
use agent_adaptor_core::thread::store::StoreError;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::SseHandler;
use super::error::RequestError;
use super::hub::{Hub, hub_key};
use super::interrupts::TakeError;
use super::record::RunMeta;
use super::replay::{find, follow, interrupted_frames, store_error};
use super::run::{Interrupted, ResumeError, decide};
use super::source::{Recording, Share, Source};
use super::sse::frame;
use super::thread_key::agui_thread_key;
use super::wire::{Interrupt, ResumeEntry, RunAgentInput};
use crate::Principal;
use crate::desk::{NotAnswered, Settled, Ticket};

/// How long another host's resume waits for the run's host to start the
/// resumed run before it ends the stream as interrupted.
const RESUME_WAIT: Duration = Duration::from_secs(30);

/// What an interrupt's row keeps as its request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Asked {
    thread_id: String,
    interrupt: Interrupt,
    kind: DecisionKind,
    /// Its tool can be always allowed.
    grantable: bool,
}

/// What an answered row keeps.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    /// The handler that took the answer: it continues the run itself when
    /// it holds it.
    by: String,
    entry: ResumeEntry,
    thread_id: String,
    /// The AG-UI run that resumes.
    run_id: String,
    /// Its `RUN_STARTED` timestamp (ms).
    resumed_at: i64,
}

/// Where an answered interrupt's run continues.
pub(crate) enum Answered {
    /// Here: the parked run, taken.
    Here(Box<Interrupted>),
    /// On the host that runs it: stream it from the log.
    Elsewhere {
        /// The core run id.
        core_run_id: String,
    },
}

/// What a parked run's waiter needs.
struct Parked {
    id: String,
    key: String,
    core_run_id: String,
    holder: String,
    owner: String,
    asked: Asked,
    deadline: chrono::DateTime<chrono::Utc>,
}

/// Whether `row` was answered by the resume `input` itself, with the same
/// answer (a retry after a broken connection).
fn same_resume(row: &ApprovalRow, input: &RunAgentInput, entry: &ResumeEntry) -> bool {
    let Some(answer) = row.answer.clone() else {
        return false;
    };
    row.state == ApprovalState::Answered
        && serde_json::from_value::<Answer>(answer).is_ok_and(|a| {
            a.thread_id == input.thread_id
                && a.run_id == input.run_id
                && serde_json::to_value(&a.entry).ok() == serde_json::to_value(entry).ok()
        })
}

fn refused(id: &str, why: AnswerRefused) -> RequestError {
    match why {
        AnswerRefused::NotFound => RequestError::InterruptNotFound(id.to_owned()),
        AnswerRefused::Forbidden => {
            RequestError::Forbidden("this interrupt belongs to a run another client started")
        }
        _ => RequestError::InterruptExpired(id.to_owned()),
    }
}

fn resume_error(id: &str, e: ResumeError) -> RequestError {
    match e {
        ResumeError::NotGrantable => RequestError::NotGrantable(id.to_owned()),
        e => RequestError::InvalidResume(e.to_string()),
    }
}

impl SseHandler {
    /// The hook that shares each parked run of a thread-bound handler with
    /// an event log (none otherwise).
    pub(super) fn share_hook(&self) -> Option<Share> {
        self.shared.options.desk.as_ref()?;
        let handler = self.clone();
        Some(Arc::new(move |run: &Interrupted, owner: &str| {
            let o = &handler.shared.options;
            let interrupt = run.interrupt().clone();
            let deadline = run.expires_at().unwrap_or_else(|| {
                chrono::Utc::now()
                    + chrono::Duration::from_std(o.interrupt_timeout)
                        .unwrap_or(chrono::Duration::MAX)
            });
            let parked = Parked {
                id: interrupt.id.clone(),
                key: agui_thread_key(&o.thread_namespace, run.thread_id()),
                core_run_id: run.handle().run_id().to_owned(),
                holder: run.handle().lease_holder().unwrap_or_default().to_owned(),
                owner: owner.to_owned(),
                asked: Asked {
                    thread_id: run.thread_id().to_owned(),
                    kind: run.request().kind,
                    grantable: run.request().always_allow_tool().is_some(),
                    interrupt,
                },
                deadline,
            };
            let handler = handler.clone();
            Box::pin(async move {
                if let Some(ticket) = handler.ask(&parked).await {
                    tokio::spawn(handler.wait_answer(parked.id, ticket));
                }
            })
        }))
    }

    /// Keep `parked` as a pending approval row: done before the client is
    /// sent the interrupt, so that an answer reaching any host at once
    /// finds it. `None` when the store keeps no approvals (or failed:
    /// logged), leaving the interrupt to this host.
    async fn ask(&self, parked: &Parked) -> Option<Ticket> {
        let desk = self.shared.options.desk.clone()?;
        let request = match serde_json::to_value(&parked.asked) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "agui: an interrupt could not be shared");
                return None;
            }
        };
        let asked = desk
            .ask(NewApproval {
                id: parked.id.clone(),
                key: parked.key.clone(),
                run_id: parked.core_run_id.clone(),
                holder: parked.holder.clone(),
                principal: parked.owner.clone(),
                request,
                deadline: Some(parked.deadline),
            })
            .await;
        match asked {
            Ok(t) => Some(t),
            Err(StoreError::Unsupported(_)) => None,
            Err(e) => {
                tracing::warn!(interrupt = %parked.id, error = %e, "agui: an interrupt could not be shared; only this host can answer it");
                None
            }
        }
    }

    /// Act on what becomes of the row of interrupt `id`.
    async fn wait_answer(self, id: String, mut ticket: Ticket) {
        let settled = tokio::select! {
            s = ticket.settled() => s,
            () = self.shared.hubs.closed() => {
                ticket.expire().await;
                return;
            }
        };
        match settled {
            Settled::Answered(row) => {
                let answer: Answer = match row
                    .answer
                    .clone()
                    .map(serde_json::from_value)
                    .transpose()
                {
                    Ok(Some(a)) => a,
                    _ => {
                        tracing::warn!(interrupt = %id, "agui: an answer row does not decode; cancelling the run");
                        if let Some(p) = self.shared.interrupts.take_answered(&id) {
                            p.handle().cancel();
                        }
                        return;
                    }
                };
                if answer.by != self.shared.nonce {
                    self.resume_here(answer, row.principal.clone());
                }
            }
            Settled::Expired => {
                if let Some(p) = self.shared.interrupts.take_answered(&id) {
                    tracing::debug!(interrupt = %id, "interrupt expired; cancelling its run");
                    p.handle().cancel();
                }
            }
        }
    }

    /// Continue a parked run another host answered, as the AG-UI run the
    /// client chose; its frames go to the event log (and to any reader
    /// here), the client reads them on the other host.
    fn resume_here(&self, answer: Answer, owner: String) {
        let s = &self.shared;
        let id = answer.entry.interrupt_id.clone();
        let Some(parked) = s.interrupts.take_answered(&id) else {
            // Expired or cancelled meanwhile: its stream on the other host
            // ends as interrupted.
            return;
        };
        let key = hub_key(&answer.thread_id, &answer.run_id);
        let hub = Hub::new(s.options.replay, owner.clone());
        if !s.hubs.insert(&key, &hub) {
            tracing::warn!(interrupt = %id, "agui: the resumed run's id is taken here; cancelling the run");
            parked.handle().cancel();
            return;
        }
        match parked.resume_at(
            &answer.entry,
            answer.thread_id.clone(),
            answer.run_id.clone(),
            Some(answer.resumed_at),
        ) {
            Ok(run) => {
                tracing::info!(interrupt = %id, "agui: interrupt answered on another host");
                let recording = s.options.event_log.clone().map(|store| Recording {
                    store,
                    key: agui_thread_key(&s.options.thread_namespace, &answer.thread_id),
                    meta: RunMeta {
                        owner,
                        thread_id: answer.thread_id,
                        run_id: answer.run_id,
                        user_message_id: None,
                        snapshot: None,
                        resumed_at: Some(answer.resumed_at),
                    },
                    prompt: None,
                    retention: s.options.event_log_retention,
                });
                let run_id = run.handle().run_id().to_owned();
                self.spawn_producer(hub, key, Source::Agui(Box::new(run)), &run_id, recording);
            }
            Err((e, parked)) => {
                tracing::warn!(interrupt = %id, error = %e, "agui: an answer from another host does not apply; cancelling the run");
                parked.handle().cancel();
                s.hubs.remove(&key, &hub);
            }
        }
    }

    /// Check and record the answer `entry` of a resume request: the run
    /// continues here when it is parked here, else on its host.
    pub(super) async fn answer_interrupt(
        &self,
        input: &RunAgentInput,
        entry: &ResumeEntry,
        principal: &Principal,
    ) -> Result<Answered, RequestError> {
        let s = &self.shared;
        let id = &entry.interrupt_id;
        let peeked = s.interrupts.peek(id, &input.thread_id, principal, |p| {
            p.decision(entry).map(|_| ())
        });
        match peeked {
            Ok(()) => {
                self.record_answer(input, entry, principal).await?;
                s.interrupts
                    .take_answered(id)
                    .map(|p| Answered::Here(Box::new(p)))
                    .ok_or_else(|| RequestError::InterruptExpired(id.clone()))
            }
            Err(TakeError::NotFound) if s.options.desk.is_some() => {
                self.answer_elsewhere(input, entry, principal).await
            }
            Err(TakeError::NotFound) => Err(RequestError::InterruptNotFound(id.clone())),
            Err(TakeError::Forbidden) => {
                tracing::warn!(interrupt = %id, %principal, "agui: refused an answer to another principal's interrupt");
                Err(RequestError::Forbidden(
                    "this interrupt belongs to a run another client started",
                ))
            }
            Err(TakeError::Refused(e)) => Err(resume_error(id, e)),
        }
    }

    /// What an interrupt's row keeps as the answer `entry` of `input`,
    /// taken by this handler.
    fn answer_value(
        &self,
        input: &RunAgentInput,
        entry: &ResumeEntry,
    ) -> Result<Value, RequestError> {
        let answer = Answer {
            by: self.shared.nonce.clone(),
            entry: entry.clone(),
            thread_id: input.thread_id.clone(),
            run_id: input.run_id.clone(),
            resumed_at: chrono::Utc::now().timestamp_millis(),
        };
        serde_json::to_value(&answer).map_err(|e| RequestError::InvalidResume(e.to_string()))
    }

    /// Record the answer of a run parked here in the interrupt's row, when
    /// it has one: a row this store cannot keep (or never got) leaves the
    /// answer to this host alone.
    async fn record_answer(
        &self,
        input: &RunAgentInput,
        entry: &ResumeEntry,
        principal: &Principal,
    ) -> Result<(), RequestError> {
        let Some(desk) = &self.shared.options.desk else {
            return Ok(());
        };
        let id = &entry.interrupt_id;
        let value = self.answer_value(input, entry)?;
        match desk.answer(id, &principal.digest(), value).await {
            Ok(Ok(_)) => Ok(()),
            // Parked here but never shared (the row is being written, or
            // could not be): this host alone answers it.
            Ok(Err(AnswerRefused::NotFound)) | Err(StoreError::Unsupported(_)) => Ok(()),
            Ok(Err(why)) => Err(refused(id, why)),
            Err(e) => {
                tracing::warn!(interrupt = %id, error = %e, "agui: the answer could not be recorded in the store; answering here");
                Ok(())
            }
        }
    }

    /// Whether `entry` of the resume `input` was answered by this very
    /// resume already (its owner retrying after a broken connection).
    pub(super) async fn is_retried_resume(
        &self,
        input: &RunAgentInput,
        entry: &ResumeEntry,
        principal: &Principal,
    ) -> bool {
        let Some(desk) = &self.shared.options.desk else {
            return false;
        };
        match desk.approval(&entry.interrupt_id).await {
            Ok(Some(row)) => row.principal == principal.digest() && same_resume(&row, input, entry),
            _ => false,
        }
    }

    /// Answer an interrupt parked on another host.
    async fn answer_elsewhere(
        &self,
        input: &RunAgentInput,
        entry: &ResumeEntry,
        principal: &Principal,
    ) -> Result<Answered, RequestError> {
        let s = &self.shared;
        let id = &entry.interrupt_id;
        let not_found = || RequestError::InterruptNotFound(id.clone());
        let Some(desk) = &s.options.desk else {
            return Err(not_found());
        };
        let key = agui_thread_key(&s.options.thread_namespace, &input.thread_id);
        let value = self.answer_value(input, entry)?;
        let checked = desk
            .answer_checked(id, &principal.digest(), &key, |request| {
                let asked: Asked =
                    serde_json::from_value(request.clone()).map_err(|_| not_found())?;
                decide(id, asked.kind, asked.grantable, entry).map_err(|e| resume_error(id, e))?;
                Ok(value)
            })
            .await;
        let row = match checked {
            Ok(row) => {
                tracing::info!(interrupt = %id, answered_by = %principal, "agui: interrupt answered for another host");
                row
            }
            // This very resume was answered already (its connection broke
            // before the client saw the stream): stream the run again.
            Err(NotAnswered::Refused { row, .. }) if same_resume(&row, input, entry) => *row,
            Err(NotAnswered::NotFound) => return Err(not_found()),
            Err(NotAnswered::Forbidden) => {
                tracing::warn!(interrupt = %id, %principal, "agui: refused an answer to another principal's interrupt");
                return Err(refused(id, AnswerRefused::Forbidden));
            }
            Err(NotAnswered::Invalid(e)) => return Err(e),
            Err(NotAnswered::Refused { why, .. }) => return Err(refused(id, why)),
            Err(NotAnswered::Store(e)) => return Err(store_error(&e)),
        };
        Ok(Answered::Elsewhere {
            core_run_id: row.run_id,
        })
    }

    /// Stream the AG-UI run `input.run_id`, resumed on another host, from
    /// the event log: wait (bounded) for it to start, then follow it.
    pub(super) fn follow_resumed(
        &self,
        input: &RunAgentInput,
        principal: Principal,
        core_run_id: &str,
    ) -> Response {
        let s = &self.shared;
        let hub = Hub::new(s.options.replay, principal.digest());
        let Ok(sub) = hub.attach(None) else {
            return axum::response::IntoResponse::into_response(RequestError::ReplayUnavailable(
                String::new(),
            ));
        };
        let (Some(store), follow_opts) = (s.options.event_log.clone(), self.follow()) else {
            return axum::response::IntoResponse::into_response(RequestError::EventLogUnavailable);
        };
        let key = agui_thread_key(&s.options.thread_namespace, &input.thread_id);
        let (thread_id, run_id) = (input.thread_id.clone(), input.run_id.clone());
        tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            loop {
                match find(store.as_ref(), &key, &run_id, &principal).await {
                    Ok(found) => {
                        follow(store, key, found, None, hub, follow_opts).await;
                        return;
                    }
                    Err(RequestError::RunNotFound(_)) if started.elapsed() < RESUME_WAIT => {
                        tokio::time::sleep(follow_opts.poll).await;
                    }
                    Err(_) => break,
                }
            }
            for (id, json) in interrupted_frames(thread_id, run_id) {
                if hub.push(id, frame(id, &json), true).await.is_err() {
                    break;
                }
            }
            hub.finish();
        });
        self.stream_response(sub, core_run_id)
    }
}
