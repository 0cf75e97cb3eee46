//! Resident provider processes as core sees them: `RunOptions::with_spawn`
//! reaches the driver as `Request::spawn`, and `Agent::close` reaps the
//! driver's processes (idempotent; the agent stays usable).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_adaptor_core::driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, Request, Response, RunContext,
    async_trait,
};
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::thread::MemoryStore;
use agent_adaptor_core::{Agent, RunOptions, Runner};

#[tokio::test]
async fn with_spawn_reaches_the_driver_and_merges_with_defaults() {
    let driver = ScriptedDriver::resumable_reply("hi", "sess-1");
    let agent = Agent::builder(driver.clone())
        .thread_store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let thread = agent.thread("k");
    thread.run("one").await.unwrap();
    thread
        .run_with("two", RunOptions::new().with_spawn())
        .await
        .unwrap();
    agent.run("three").await.unwrap();
    let spawn: Vec<bool> = driver.recorded_requests().iter().map(|r| r.spawn).collect();
    assert_eq!(spawn, [false, true, false]);

    // As an agent default, a call cannot switch it off.
    let agent = Agent::builder(driver.clone())
        .defaults(RunOptions::new().with_spawn())
        .build()
        .unwrap();
    agent.run_with("four", RunOptions::new()).await.unwrap();
    assert!(driver.recorded_requests().last().unwrap().spawn);
}

/// Counts of `close_processes` calls and runs.
#[derive(Default)]
struct Counts {
    closes: AtomicUsize,
    runs: AtomicUsize,
}

/// A driver that counts `close_processes` calls and runs.
struct Pooling(Arc<Counts>);

#[async_trait]
impl Driver for Pooling {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new("pooling", "Pooling");
        d.process.persistent = true;
        d
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        Ok(())
    }
    async fn run(
        &self,
        _ctx: RunContext,
        _req: Request,
        _sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        self.0.runs.fetch_add(1, Ordering::SeqCst);
        Ok(Response::default())
    }
    async fn close_processes(&self) {
        self.0.closes.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn close_reaches_the_driver_and_the_agent_stays_usable() {
    let counts = Arc::new(Counts::default());
    let agent = Agent::new(Pooling(counts.clone()));
    assert!(agent.descriptor().process.persistent);
    agent.close().await;
    agent.clone().close().await;
    assert_eq!(counts.closes.load(Ordering::SeqCst), 2);
    agent.run("after close").await.unwrap();
    assert_eq!(counts.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn close_is_a_no_op_for_drivers_that_keep_no_process() {
    let agent = Agent::new(ScriptedDriver::text_reply("hi"));
    assert!(!agent.descriptor().process.persistent);
    agent.close().await;
    assert_eq!(agent.run("still works").await.unwrap().text, "hi");
}
