//! Who this server is in the thread store's leases, and what a previous
//! process of the same server left behind when it died.

use std::net::SocketAddr;

use agent_adaptor_core::thread::{InterruptedRun, StoreError, ThreadStore};

use crate::args::ServeArgs;
use crate::error::CliError;
use crate::host_record::recover_dead_runs;
use crate::store::OpenedStore;

/// This process's lease identity: a stable instance name and an epoch that
/// changes on every start.
pub struct Identity {
    /// `--instance-id`, else `<hostname>:<port>`.
    pub instance: String,
    /// The start time in milliseconds and the pid.
    pub epoch: String,
}

impl Identity {
    /// From the command line and the bound address.
    pub fn new(args: &ServeArgs, local: SocketAddr) -> Result<Self, CliError> {
        let instance = match &args.instance_id {
            Some(id) => id.clone(),
            None => format!("{}:{}", hostname(), local.port()),
        };
        if instance.is_empty() || instance.contains(['@', '/']) {
            return Err(CliError::usage(format!(
                "--instance-id {instance:?}: must be non-empty, without '@' or '/'"
            )));
        }
        let epoch = format!(
            "{}-{}",
            chrono::Utc::now().timestamp_millis(),
            std::process::id()
        );
        Ok(Identity { instance, epoch })
    }

    /// Free the leases an earlier process of this instance held when it
    /// died, and those of dead `agent-adaptor run` processes on this
    /// machine ([`recover_dead_runs`]), recording their runs as
    /// interrupted; log each one and return them.
    pub async fn recover(&self, store: &OpenedStore) -> Result<Vec<InterruptedRun>, CliError> {
        let mut runs = store
            .store
            .recover_instance(&self.instance, &self.epoch)
            .await
            .map_err(|e| CliError::failure(format!("thread store: cannot recover leases: {e}")))?;
        runs.extend(recover_dead_runs(store).await);
        log_interrupted(
            store.store.as_ref(),
            &runs,
            "a run of a dead process was interrupted; its thread is free again",
        )
        .await;
        Ok(runs)
    }
}

/// Log each recovered run (a warning: a run was cut short) with `what`
/// happened, and record it in its thread's event log, so that a client
/// following the run from another instance sees it end as interrupted at
/// once (a store without an event log records nothing).
pub(crate) async fn log_interrupted(store: &dyn ThreadStore, runs: &[InterruptedRun], what: &str) {
    for run in runs {
        tracing::warn!(
            thread = %run.key,
            run_id = %run.run_id,
            started_at = %run.started_at,
            "{what}"
        );
        match agent_adaptor_bridges::agui::record_interruption(store, run).await {
            Ok(()) | Err(StoreError::Unsupported(_)) => {}
            Err(e) => tracing::warn!(
                thread = %run.key,
                error = %e,
                "the interruption could not be recorded in the thread's event log"
            ),
        }
    }
}

/// The host's name (the kernel's), or `localhost`. Separators are replaced.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().replace(['@', '/'], "_"))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}
