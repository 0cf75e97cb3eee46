//! AG-UI mounted in the host's own axum router: the host keeps its routes
//! (`/health` here) and merges the bridge's router at `/agui`. A browser
//! AG-UI client (`@ag-ui/client`'s `HttpAgent`) then POSTs a
//! `RunAgentInput` to `/agui` and reads the SSE stream of AG-UI events.
//!
//! `cargo run -p agent-adaptor --features bridges --example agui_axum` serves
//! on 127.0.0.1:3000 (`AGUI_ADDR` to change it) until interrupted;
//! `-- --self-test` serves on a free port, makes one AG-UI run over raw
//! HTTP/1.1 and exits 0 when it ended with `RUN_FINISHED`.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor::bridges::agui::{SseHandler, SseOptions};
use agent_adaptor::scripted::ScriptedDriver;
use agent_adaptor::{Agent, Runner};
use axum::Router;
use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The host's application: its own routes plus AG-UI at `/agui`.
fn app() -> Router {
    // Any agent: a CLI driver (`agent_adaptor::drivers::claude`), an LLM
    // (`agent_adaptor::llm`); the scripted one runs anywhere.
    let agent = Agent::new(ScriptedDriver::text_reply("Hello from the host's router"));
    let runner: Arc<dyn Runner> = Arc::new(agent);
    let agui = SseHandler::new(runner, SseOptions::agui());
    Router::new()
        .route("/health", get(|| async { "ok" }))
        .merge(agui.router("/agui"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--self-test") {
        return self_test().await;
    }
    let addr = std::env::var("AGUI_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());
    let listener = TcpListener::bind(&addr).await?;
    println!("AG-UI at http://{addr}/agui, health at http://{addr}/health");
    axum::serve(listener, app()).await?;
    Ok(())
}

/// Serve on a free port, run once over raw HTTP/1.1, expect `RUN_FINISHED`.
async fn self_test() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move { axum::serve(listener, app()).await });

    let body = r#"{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"Say hello"}],"state":{},"tools":[],"context":[],"forwardedProps":{}}"#;
    let request = format!(
        "POST /agui HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut conn = TcpStream::connect(addr).await?;
    conn.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), conn.read_to_end(&mut response))
        .await
        .map_err(|_| "no complete response within 30 s")??;
    server.abort();

    let response = String::from_utf8_lossy(&response);
    for line in response.lines().filter(|l| l.starts_with("data: ")) {
        println!("{line}");
    }
    if !response.starts_with("HTTP/1.1 200") || !response.contains("\"type\":\"RUN_FINISHED\"") {
        return Err("the AG-UI run did not end with RUN_FINISHED".into());
    }
    println!("\nself-test: ok");
    Ok(())
}
