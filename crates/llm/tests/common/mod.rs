//! Shared by the golden tests: a mock server per test, a fast retry policy,
//! and the golden rendering of a stream (stable across runs: random ids are
//! replaced by their first-seen order).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::time::Duration;

use agent_adaptor_llm::agent::LlmDriver;
use agent_adaptor_llm::{
    AnthropicMessages, GeminiGenerateContent, LlmCallConfig, LlmError, LlmResponseStream,
    LlmRetryConfig, LlmStreamEvent, Message, OpenAiChat, OpenAiResponses, Protocol, Provider,
    ReasoningText,
};
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use futures::StreamExt;
use serde_json::{Value, json};

/// The four HTTP protocols the agent speaks.
#[derive(Clone, Copy, Debug)]
pub enum Vendor {
    /// OpenAI Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `streamGenerateContent`.
    Gemini,
}

/// Every vendor.
pub const VENDORS: [Vendor; 4] = [
    Vendor::Chat,
    Vendor::Responses,
    Vendor::Anthropic,
    Vendor::Gemini,
];

/// The agent for `vendor` at the mock `server`, with fast retries.
pub fn llm(vendor: Vendor, server: &MockServer) -> LlmDriver {
    fn provider(protocol: impl Protocol, base: String) -> Provider {
        Provider::new("mock", protocol)
            .base_url(base)
            .api_key("test-key")
    }
    let retry = fast_retry();
    let root = server.base_url();
    let provider = match vendor {
        Vendor::Chat => provider(
            OpenAiChat::new().with_retry_config(retry),
            format!("{root}/v1"),
        ),
        Vendor::Responses => provider(
            OpenAiResponses::new().with_retry_config(retry),
            format!("{root}/v1"),
        ),
        Vendor::Anthropic => provider(
            AnthropicMessages::new().with_retry_config(retry),
            format!("{root}/v1"),
        ),
        Vendor::Gemini => provider(
            GeminiGenerateContent::new().with_retry_config(retry),
            format!("{root}/v1beta"),
        ),
    };
    LlmDriver::new(provider, "mock-model")
}

/// The keyword every golden prompt carries.
pub const PROMPT: &str = "GOLDEN please";

/// A server answering [`PROMPT`] with `replies` (by assistant turn).
pub async fn server(replies: Vec<Reply>) -> MockServer {
    MockServer::start(Script::new().on_prompt("GOLDEN", replies))
        .await
        .expect("mock server starts")
}

/// Retries with millisecond backoff (the policy is what is under test, not
/// the clock).
pub fn fast_retry() -> LlmRetryConfig {
    LlmRetryConfig::default().with_initial_backoff(Duration::from_millis(5))
}

/// A provider for `protocol` at `base_url` with a test key.
pub fn provider(protocol: impl Protocol, base_url: &str) -> Provider {
    Provider::new("mock", protocol)
        .base_url(base_url)
        .api_key("test-key")
}

/// The golden prompt as a conversation.
pub fn prompt() -> Vec<Message> {
    vec![Message::system("Be brief."), Message::user(PROMPT)]
}

/// Everything a stream yields, in order.
pub async fn drain(stream: LlmResponseStream) -> Vec<Result<LlmStreamEvent, LlmError>> {
    tokio::time::timeout(Duration::from_secs(20), stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends")
}

/// Opens a stream through `provider` and drains it; a call error becomes
/// the single item.
pub async fn run(
    provider: &Provider,
    config: &LlmCallConfig,
) -> Vec<Result<LlmStreamEvent, LlmError>> {
    match provider.chat_completion_stream(&prompt(), config).await {
        Ok(stream) => drain(stream).await,
        Err(error) => vec![Err(error)],
    }
}

/// A stable JSON rendering of a stream for snapshots.
pub fn golden(items: &[Result<LlmStreamEvent, LlmError>]) -> Value {
    let mut ids = Ids::default();
    // Sorted keys: the snapshots must not follow serde_json's map type.
    agent_adaptor_driver::canonical_json(Value::Array(
        items.iter().map(|item| render(item, &mut ids)).collect(),
    ))
}

#[derive(Default)]
struct Ids(HashMap<String, usize>);

impl Ids {
    fn of(&mut self, id: &str) -> String {
        let next = self.0.len();
        format!("id#{}", self.0.entry(id.to_owned()).or_insert(next))
    }
}

fn render(item: &Result<LlmStreamEvent, LlmError>, ids: &mut Ids) -> Value {
    let event = match item {
        Err(error) => {
            return json!({
                "call_error": {
                    "kind": error.kind,
                    "status": error.status,
                    "code": error.code,
                    "retries": error.retry_metadata.as_ref().map(|m| m.attempts),
                }
            });
        }
        Ok(event) => event,
    };
    match event {
        LlmStreamEvent::TextDelta(text) => json!({"text": text}),
        LlmStreamEvent::ReasoningDelta { delta, summary } => {
            json!({"reasoning": delta, "summary": summary})
        }
        LlmStreamEvent::ReasoningItem(item) => json!({"reasoning_item": {
            "provider": item.provider,
            "text": item.text.as_ref().map(|t| match t {
                ReasoningText::Plain { text } => json!({"plain": text}),
                ReasoningText::Summary { parts } => json!({"summary": parts}),
                ReasoningText::Redacted => json!("redacted"),
                _ => json!("other"),
            }),
            "signature": item.signature.is_some(),
            "encrypted": item.encrypted.is_some(),
            "item_id": item.item_id.is_some(),
            "bound_tool_call_id": item.bound_tool_call_id.as_deref().map(|id| ids.of(id)),
        }}),
        LlmStreamEvent::ToolCallDelta(delta) => json!({"tool_call_delta": {
            "index": delta.index,
            "id": delta.id.as_deref().map(|id| ids.of(id)),
            "name": delta.name,
            "arguments": delta.arguments,
        }}),
        LlmStreamEvent::ToolCalls(calls) => json!({"tool_calls": calls.iter().map(|call| json!({
            "id": ids.of(&call.id),
            "name": call.name,
            "arguments": call.arguments,
        })).collect::<Vec<_>>()}),
        LlmStreamEvent::HostedToolCall(call) => json!({"hosted_tool_call": {
            "tool": call.tool, "status": call.status, "summary": call.summary,
        }}),
        LlmStreamEvent::Done(metadata) => {
            let mut value = serde_json::to_value(metadata.as_ref()).unwrap();
            if let Some(map) = value.as_object_mut() {
                if map.remove("response_id").is_some() {
                    map.insert("response_id".into(), json!("[present]"));
                }
                if let Some(retry) = map.remove("retry_metadata") {
                    map.insert("retries".into(), retry["attempts"].clone());
                }
            }
            json!({"done": value})
        }
        LlmStreamEvent::Error(error) => json!({"error": {
            "code": error.code, "status": error.status, "message": error.message,
        }}),
        other => json!({"other": format!("{other:?}")}),
    }
}
