//! Any Agent Client Protocol agent as a driver: stream one run and print it.
//!
//! ```text
//! cargo run -p agent-adaptor --example acp_agent -- PROGRAM [ARGS…]
//! cargo run -p agent-adaptor --example acp_agent -- gemini --acp
//! ```
//!
//! The agent is started in the current directory, which is also the only
//! place its `fs/*` and `terminal/*` requests may reach; a permission it
//! asks for is printed and denied (a host would ask its user). The named
//! recipes (`AcpAgent::Gemini`, `Qwen`, `Copilot`, `Opencode`, `Claude`,
//! `Codex`, `CodeBuddy`, `Cursor`) know each agent's program and flags;
//! `Custom` runs anything that speaks ACP on stdio.

use agent_adaptor::drivers::acp::{self, AcpAgent};
use agent_adaptor::{Agent, Event, Phase, Runner};
use futures::StreamExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut argv = std::env::args().skip(1);
    let program = argv
        .next()
        .ok_or("usage: acp_agent PROGRAM [ARGS…] (an ACP agent on stdio)")?;
    let config = acp::Config {
        cwd: Some(std::env::current_dir()?),
        ..acp::Config::for_agent(AcpAgent::Custom {
            program: program.into(),
            args: argv.collect(),
        })
    };
    let agent = Agent::new(acp::driver(config));
    let mut run = agent.stream("Say hello in five words.");
    while let Some(event) = run.next().await {
        match event {
            Event::TextDelta(d) if d.phase == Phase::Content => print!("{}", d.text),
            Event::ToolCall(t) if t.phase == Phase::Start => println!("\n[tool] {}", t.name),
            Event::ApprovalRequest(a) => {
                println!("\n[approval] {} (denied)", a.title);
                a.deny("this example approves nothing")?;
            }
            _ => {}
        }
    }
    let result = run.result().await?;
    println!("\n[done] {} bytes of text", result.text.len());
    agent.close().await;
    Ok(())
}
