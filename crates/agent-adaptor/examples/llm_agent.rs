//! An LLM agent: a model behind an OpenAI-protocol endpoint, run through the
//! same `Agent` / `RunStream` / `RunResult` as the CLI drivers, with one tool
//! the model may call (a run is one model turn: the call is reported on the
//! stream and in the transcript, and the host decides what to do with it).
//!
//! Reads `OPENAI_BASE_URL` (default `https://api.openai.com/v1`),
//! `OPENAI_API_KEY` and `OPENAI_MODEL` (default `gpt-4o-mini`); any
//! Chat Completions server works, the testkit's `mock-model-server` too:
//!
//! `OPENAI_API_KEY=sk-… cargo run -p agent-adaptor --features llm --example llm_agent -- "Weather in Paris?"`

use agent_adaptor::llm::agent::LlmDriver;
use agent_adaptor::llm::{LlmCallConfig, OpenAiChat, Provider, ToolDefinition};
use agent_adaptor::{Agent, Event, Phase, Runner};
use futures::StreamExt;
use serde_json::json;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is the weather in Paris?".to_owned());
    let key = std::env::var("OPENAI_API_KEY").map_err(|_| "set OPENAI_API_KEY")?;
    let provider = Provider::new("openai", OpenAiChat::new())
        .base_url(env_or("OPENAI_BASE_URL", "https://api.openai.com/v1"))
        .api_key(&key);
    let weather = ToolDefinition::function(
        "get_weather",
        "The current weather in a city.",
        json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }),
    );
    // The call settings: the model and the tools it may call.
    let config =
        LlmCallConfig::new(env_or("OPENAI_MODEL", "gpt-4o-mini")).with_tools(vec![weather]);
    let agent = Agent::new(LlmDriver::new(provider, config.model.clone()).with_config(config));

    let mut stream = agent.stream(&prompt);
    while let Some(event) = stream.next().await {
        match &event {
            Event::TextDelta(d) if d.phase == Phase::Content => print!("{}", d.text),
            Event::ToolCall(call) if call.phase == Phase::End => {
                println!(
                    "\n[tool call] {}({})",
                    call.name,
                    call.args.clone().unwrap_or_default()
                );
            }
            _ => {}
        }
    }
    let result = stream.result().await?;
    let tokens = result.usage.as_ref().and_then(|u| u.output_tokens);
    println!("\n[done] model {}, output tokens {tokens:?}", result.model);
    Ok(())
}
