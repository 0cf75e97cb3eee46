//! An LLM agent: a model behind an OpenAI-protocol endpoint, run through the
//! same `Agent` / `RunStream` / `RunResult` as the CLI drivers, with one host
//! tool the model may call: the agent runs it (after the host approves) and
//! sends the result back to the model, until the model answers.
//!
//! Reads `OPENAI_BASE_URL` (default `https://api.openai.com/v1`),
//! `OPENAI_API_KEY` and `OPENAI_MODEL` (default `gpt-4o-mini`); any
//! Chat Completions server works, the testkit's `mock-model-server` too:
//!
//! `OPENAI_API_KEY=sk-… cargo run -p agent-adaptor --features llm --example llm_agent -- "Weather in Paris?"`

use agent_adaptor::llm::agent::LlmDriver;
use agent_adaptor::llm::{OpenAiChat, Provider};
use agent_adaptor::{Agent, Event, Phase, Runner, Tool};
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
    // A host tool: the loop calls it with the model's input (checked
    // against the schema) and sends its output back.
    let weather = Tool::from_json(
        "get_weather",
        "The current weather in a city.",
        json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }),
        |input, _ctx| async move {
            let city = input["city"].as_str().unwrap_or("somewhere").to_owned();
            Ok(json!({"city": city, "sky": "clear", "celsius": 21}))
        },
    )
    .trusted();
    let model = env_or("OPENAI_MODEL", "gpt-4o-mini");
    let agent = Agent::builder(LlmDriver::new(provider, model))
        .tool(weather)
        .build()?;

    let mut stream = agent.stream(&prompt);
    while let Some(event) = stream.next().await {
        match &event {
            Event::TextDelta(d) if d.phase == Phase::Content => print!("{}", d.text),
            Event::ToolCall(call) if call.phase == Phase::Start => {
                println!("\n[tool call] {}", call.name);
            }
            Event::ToolResult(result) => {
                println!(
                    "[tool result] {}",
                    result.result.clone().unwrap_or_default()
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
