//! Deleting a thread through the library ([`Thread::delete`], or [`delete`]
//! for a host without an agent at hand, like the CLI's `threads delete`):
//! what the thread holds across turns (its worktree) is released with it.

use super::{LEASE_TTL, Thread, ThreadError, ThreadStore};
use crate::id::new_id;
use crate::resources::{ResourceThread, RunResources};
use crate::result::Error;

impl Thread {
    /// Delete every record of this thread (active and archived), its event
    /// log and its lease, and release what the agent's
    /// [`RunResources`] keep for it (a thread's git worktree and branch).
    /// Returns how many records were deleted (0: the key was unknown).
    /// See [`delete`].
    ///
    /// # Errors
    ///
    /// [`Error::ThreadStoreRequired`] without a store, else as [`delete`].
    pub async fn delete(&self) -> Result<u64, Error> {
        let store = self
            .agent
            .thread_store()
            .ok_or(Error::ThreadStoreRequired)?;
        let resources = self.agent.resources();
        let thread = ResourceThread {
            key: self.key.to_string(),
            base_dir: self.agent.default_workspace(),
        };
        let owner = self.agent.lease_owner();
        let ttl = self.agent.lease_ttl();
        delete_with_ttl(
            &*store,
            resources.as_deref(),
            &thread,
            owner.as_deref(),
            ttl,
        )
        .await
    }
}

/// Delete thread `thread.key` from `store`, releasing what `resources` keep
/// for it first. `owner` names this process in lease owners
/// (`{instance}@{epoch}`, as [`AgentBuilder::lease_owner`](crate::AgentBuilder::lease_owner)).
///
/// The thread's lease is held while the resources are released, so no run
/// starts meanwhile. When releasing them would lose work (uncommitted
/// changes, unpushed commits) the manager refuses and nothing is deleted.
///
/// # Errors
///
/// [`ThreadError::Busy`] while a run holds the thread; [`Error::Resources`]
/// (the manager's typed refusal, to downcast) when the resources could not
/// be released — the thread is kept then; a store failure.
pub async fn delete(
    store: &dyn ThreadStore,
    resources: Option<&dyn RunResources>,
    thread: &ResourceThread,
    owner: Option<&str>,
) -> Result<u64, Error> {
    delete_with_ttl(store, resources, thread, owner, LEASE_TTL).await
}

/// [`delete`], holding the thread's lease with `ttl` (an agent's
/// [`lease_ttl`](crate::AgentBuilder::lease_ttl)) while the resources are
/// released.
///
/// # Errors
///
/// As [`delete`].
pub async fn delete_with_ttl(
    store: &dyn ThreadStore,
    resources: Option<&dyn RunResources>,
    thread: &ResourceThread,
    owner: Option<&str>,
    ttl: std::time::Duration,
) -> Result<u64, Error> {
    let key = thread.key.as_str();
    let store_err = |e| Error::Thread(ThreadError::from_store(e, key));
    let run = new_id("delete_");
    let owner = match owner {
        Some(process) => format!("{process}/{run}"),
        None => run,
    };
    let lease = store
        .acquire_lease(&format!("key:{key}"), &owner, ttl)
        .await
        .map_err(store_err)?;
    let released = match resources {
        None => Ok(()),
        Some(r) => r.release_thread(thread).await.map_err(Error::Resources),
    };
    // The store deletes only a key nobody holds: the lease goes first.
    let _ = store.release_lease(&lease).await;
    released?;
    store.delete(key).await.map_err(store_err)
}
