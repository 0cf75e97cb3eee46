//! A durable thread: two turns under one host key in a SQLite file, the
//! second resuming the provider session the first stored; then a second
//! agent over the same file (a restarted host) finds the thread.
//!
//! The driver is the scripted one so the program runs anywhere; with a real
//! one (`agent_adaptor::drivers::claude::driver(…)`) the code is the same.
//!
//! `cargo run -p agent-adaptor --no-default-features --features sqlite --example durable_thread`

use std::sync::Arc;

use agent_adaptor::scripted::ScriptedDriver;
use agent_adaptor::{Agent, Runner, SqliteStore};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("threads.db");
    let key = "tenant-7/ticket-42";

    let agent = Agent::builder(ScriptedDriver::resumable_reply("noted", "session-1"))
        .thread_store(Arc::new(SqliteStore::open(&path).await?))
        .build()?;
    let thread = agent.thread(key);
    for prompt in ["Remember the number 7", "Which number was it?"] {
        let result = thread.run(prompt).await?;
        println!("{key}: {prompt:?} -> {:?}", result.text);
    }
    // Release the provider processes a driver may keep between turns.
    agent.close().await;

    // A restarted host: a new agent over the same file resumes the thread.
    let agent = Agent::builder(ScriptedDriver::resumable_reply("noted", "session-1"))
        .thread_store(Arc::new(SqliteStore::open(&path).await?))
        .build()?;
    let state = agent.thread(key).checkpoint().await?;
    let resume_id = state
        .map(|s| s.resume_id)
        .ok_or("the thread was not stored")?;
    println!(
        "{key}: stored in {}, resumes session {resume_id}",
        path.display()
    );
    agent.close().await;
    Ok(())
}
