//! A Claude Code run whose permission requests come to the host: each
//! `ApprovalRequest` on the stream is shown and answered (approved here,
//! unless its tool is in `DENY`), and the run goes on from there.
//!
//! Runs `claude` from `PATH` (logged in, or with `ANTHROPIC_API_KEY`):
//!
//! `cargo run -p agent-adaptor --example claude_approvals -- "Create hello.txt saying hi"`

use agent_adaptor::drivers::claude;
use agent_adaptor::{Agent, ApprovalKind, ApprovalRequest, Event, Phase, Runner};
use futures::StreamExt;

/// Tools this host never lets the agent use.
const DENY: &[&str] = &["WebFetch"];

/// Answer one request: a question is declined (this host asks no human),
/// a tool in [`DENY`] is denied, anything else approved.
fn decide(request: &ApprovalRequest) -> Result<(), agent_adaptor::ApprovalError> {
    let tool = request
        .details
        .as_ref()
        .and_then(|d| d.get("tool_name"))
        .and_then(|t| t.as_str())
        .unwrap_or("");
    println!("\n[approval] {:?} {tool}: {}", request.kind, request.title);
    let verdict = if request.kind == ApprovalKind::Question {
        request.deny("no human to ask").map(|()| "declined")
    } else if DENY.contains(&tool) {
        request
            .deny(format!("{tool} is not allowed here"))
            .map(|()| "denied")
    } else {
        request.approve().map(|()| "approved")
    }?;
    println!("[approval] {verdict}");
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Create a file hello.txt that says hi".to_owned());
    let mut config = claude::config(); // `claude` from PATH, an allowlisted environment
    config.host_approvals = true; // permission requests come to the host
    let agent = Agent::new(claude::driver(config));

    let mut stream = agent.stream(&prompt);
    while let Some(event) = stream.next().await {
        match &event {
            Event::TextDelta(d) if d.phase == Phase::Content => print!("{}", d.text),
            Event::ApprovalRequest(request) => decide(request)?,
            _ => {}
        }
    }
    let result = stream.result().await?;
    println!(
        "\n[done] {} decision(s): {:?}",
        result.decisions().len(),
        result.text
    );
    Ok(())
}
