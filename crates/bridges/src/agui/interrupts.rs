//! Runs parked at an approval, by interrupt id, until a resuming AG-UI run
//! answers them or they expire.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_adaptor_core::RunHandle;

use super::run::Interrupted;
use crate::Principal;

struct Parked {
    thread_id: String,
    /// The [`digest`](crate::Principal::digest) of the principal that started the run.
    owner: String,
    run: Interrupted,
    reaper: tokio::task::AbortHandle,
}

/// Why a parked run could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TakeError<E> {
    /// No run waits on that interrupt (never issued, answered, or expired).
    NotFound,
    /// Another principal started the run: only it may answer.
    Forbidden,
    /// The check refused the request; the run stays parked.
    Refused(E),
}

#[derive(Default)]
struct Registry {
    parked: HashMap<String, Parked>,
    /// Set by [`InterruptRegistry::close`]: nothing is parked any more.
    closed: bool,
}

/// The parked runs of one handler.
#[derive(Clone, Default)]
pub(crate) struct InterruptRegistry {
    map: Arc<Mutex<Registry>>,
}

impl InterruptRegistry {
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Cancel every parked run (at their approval wait: core cancels the
    /// driver) and park nothing from now on. Returns the runs cancelled.
    pub(crate) fn close(&self) -> Vec<RunHandle> {
        let parked: Vec<Parked> = {
            let mut registry = self.registry();
            registry.closed = true;
            registry.parked.drain().map(|(_, p)| p).collect()
        };
        parked
            .into_iter()
            .map(|p| {
                p.reaper.abort();
                let run = p.run.handle();
                run.cancel();
                run
            })
            .collect()
    }

    /// Park `run` until it is taken or its interrupt expires (at its
    /// `expiresAt`, else after `fallback`); an expired run is cancelled.
    pub(crate) fn park(&self, run: Interrupted, fallback: Duration, owner: String) {
        if self.registry().closed {
            tracing::debug!("the handler is closed; cancelling the interrupted run");
            run.handle().cancel();
            return;
        }
        let id = run.interrupt().id.clone();
        tracing::info!(
            interrupt = %id,
            thread = run.thread_id(),
            owner = %owner,
            "agui: approval asked"
        );
        let wait = run
            .expires_at()
            .map(|t| (t - chrono::Utc::now()).to_std().unwrap_or(Duration::ZERO))
            .unwrap_or(fallback);
        let thread_id = run.thread_id().to_owned();
        let registry = self.clone();
        let key = id.clone();
        let reaper = tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let expired = registry.registry().parked.remove(&key);
            if let Some(parked) = expired {
                tracing::debug!(interrupt = %key, "interrupt expired; cancelling its run");
                parked.run.handle().cancel();
            }
        })
        .abort_handle();
        let previous = self.registry().parked.insert(
            id,
            Parked {
                thread_id,
                owner,
                run,
                reaper,
            },
        );
        if let Some(old) = previous {
            old.reaper.abort();
        }
    }

    /// Check, without taking it, that the run waiting on `interrupt_id` of
    /// `thread_id` is parked here, that `principal` started it and that
    /// `check` accepts it.
    pub(crate) fn peek<E>(
        &self,
        interrupt_id: &str,
        thread_id: &str,
        principal: &Principal,
        check: impl FnOnce(&Interrupted) -> Result<(), E>,
    ) -> Result<(), TakeError<E>> {
        let registry = self.registry();
        match registry.parked.get(interrupt_id) {
            Some(p) if p.thread_id == thread_id && p.owner != principal.digest() => {
                Err(TakeError::Forbidden)
            }
            Some(p) if p.thread_id == thread_id => check(&p.run).map_err(TakeError::Refused),
            _ => Err(TakeError::NotFound),
        }
    }

    /// Take the run waiting on `interrupt_id` whatever asks (its answer was
    /// checked and recorded in the store already); `None` when it is not
    /// parked here (any more).
    pub(crate) fn take_answered(&self, interrupt_id: &str) -> Option<Interrupted> {
        let parked = self.registry().parked.remove(interrupt_id)?;
        parked.reaper.abort();
        Some(parked.run)
    }

    /// The interrupts parked for `thread_id`: `None` when there are none,
    /// else the ids of those `principal` may answer (another principal's
    /// interrupt ids are never disclosed).
    pub(crate) fn pending_for(
        &self,
        thread_id: &str,
        principal: &Principal,
    ) -> Option<Vec<String>> {
        let digest = principal.digest();
        let registry = self.registry();
        let pending: Vec<(&String, &Parked)> = registry
            .parked
            .iter()
            .filter(|(_, p)| p.thread_id == thread_id)
            .collect();
        if pending.is_empty() {
            return None;
        }
        let mut ids: Vec<String> = pending
            .into_iter()
            .filter(|(_, p)| p.owner == digest)
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        Some(ids)
    }

    /// How many runs are parked.
    pub(crate) fn len(&self) -> usize {
        self.registry().parked.len()
    }
}
