//! `Thread::delete`: the agent's run resources release what the thread
//! holds first; their refusal keeps the thread; a running thread is `Busy`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::thread::ThreadStore;
use agent_adaptor_core::{
    Agent, Error, MemoryStore, Prepared, ResourceError, ResourceRun, ResourceThread, RunResources,
    Runner, ThreadError, WorkspaceReport,
};
use futures::FutureExt;
use futures::future::BoxFuture;

/// Records the threads it was asked to release; refuses while `refuse`.
#[derive(Default)]
struct Holder {
    released: Mutex<Vec<(String, Option<std::path::PathBuf>)>>,
    refuse: Mutex<bool>,
}

#[derive(Debug, thiserror::Error)]
#[error("the worktree holds work")]
struct HoldsWork;

impl RunResources for Holder {
    fn prepare<'a>(
        &'a self,
        _run: &'a ResourceRun,
    ) -> BoxFuture<'a, Result<Prepared, ResourceError>> {
        async { Ok(Prepared::default()) }.boxed()
    }

    fn finish<'a>(
        &'a self,
        _run: &'a ResourceRun,
        _prepared: &'a Prepared,
        _succeeded: bool,
    ) -> BoxFuture<'a, Result<Option<WorkspaceReport>, ResourceError>> {
        async { Ok(None) }.boxed()
    }

    fn release_thread<'a>(
        &'a self,
        thread: &'a ResourceThread,
    ) -> BoxFuture<'a, Result<(), ResourceError>> {
        async move {
            if *self.refuse.lock().unwrap() {
                return Err(Arc::new(HoldsWork) as ResourceError);
            }
            self.released
                .lock()
                .unwrap()
                .push((thread.key.clone(), thread.base_dir.clone()));
            Ok(())
        }
        .boxed()
    }
}

fn agent(holder: Arc<Holder>, driver: ScriptedDriver) -> Agent {
    Agent::builder(driver)
        .thread_store(Arc::new(MemoryStore::new()))
        .resources(holder)
        .defaults(agent_adaptor_core::RunOptions::new().workspace("/srv/project"))
        .build()
        .unwrap()
}

#[tokio::test]
async fn delete_releases_the_threads_resources_then_its_records() {
    let holder = Arc::new(Holder::default());
    let agent = agent(holder.clone(), ScriptedDriver::resumable_reply("hi", "s1"));
    let thread = agent.thread("t1");
    thread.run("one").await.unwrap();
    thread.run("two").await.unwrap();
    assert_eq!(thread.delete().await.unwrap(), 2, "active + archived");
    assert_eq!(
        *holder.released.lock().unwrap(),
        [("t1".to_owned(), Some("/srv/project".into()))]
    );
    assert!(thread.checkpoint().await.unwrap().is_none());
}

#[tokio::test]
async fn a_refusal_keeps_the_thread() {
    let holder = Arc::new(Holder::default());
    *holder.refuse.lock().unwrap() = true;
    let agent = agent(holder.clone(), ScriptedDriver::resumable_reply("hi", "s1"));
    let thread = agent.thread("t1");
    thread.run("one").await.unwrap();
    let err = thread.delete().await.unwrap_err();
    let Error::Resources(cause) = &err else {
        panic!("unexpected {err:?}")
    };
    assert!(cause.downcast_ref::<HoldsWork>().is_some(), "{cause:?}");
    assert!(thread.checkpoint().await.unwrap().is_some(), "kept");
    // The delete's lease was released: the thread still runs.
    thread.run("two").await.unwrap();
}

#[tokio::test]
async fn a_held_thread_is_busy_and_untouched() {
    let holder = Arc::new(Holder::default());
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::builder(ScriptedDriver::resumable_reply("hi", "s1"))
        .thread_store(store.clone())
        .resources(holder.clone())
        .build()
        .unwrap();
    let thread = agent.thread("t1");
    thread.run("one").await.unwrap();
    // A run in progress (elsewhere) holds the thread's lease.
    let lease = store
        .acquire_lease("key:t1", "other-host/run_1", Duration::from_secs(60))
        .await
        .unwrap();
    let err = thread.delete().await.unwrap_err();
    assert!(
        matches!(err, Error::Thread(ThreadError::Busy { .. })),
        "{err:?}"
    );
    assert!(holder.released.lock().unwrap().is_empty());
    assert!(thread.checkpoint().await.unwrap().is_some());
    store.release_lease(&lease).await.unwrap();
    assert_eq!(thread.delete().await.unwrap(), 1);
}

#[tokio::test]
async fn delete_without_a_store_is_refused() {
    let agent = Agent::builder(ScriptedDriver::text_reply("hi"))
        .build()
        .unwrap();
    assert!(matches!(
        agent.thread("t").delete().await,
        Err(Error::ThreadStoreRequired)
    ));
}
