//! The Messages request body.

use serde_json::{Map, Number, Value, json};

use crate::message::{LlmCallConfig, Message, MessageRole, ToolDefinition, fold_system_messages};
use crate::reasoning::{ReasoningContentPart, ReasoningText};

/// The `anthropic-version` header value.
pub(super) const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when the call sets none (and the answer room on top of a
/// thinking budget).
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The smallest `budget_tokens` Anthropic accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

/// The provider tag of reasoning items this protocol issues and replays.
pub(super) const PROVIDER: &str = "anthropic";

/// Why a conversation cannot be sent (the caller's mistake).
pub(super) type RequestError = &'static str;

/// The JSON body for `messages` under `config`.
pub(super) fn body(messages: &[Message], config: &LlmCallConfig) -> Result<Value, RequestError> {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(config.model.as_str()));
    let (max_tokens, budget) = token_plan(config);
    body.insert("max_tokens".into(), Value::from(max_tokens));
    if let Some(system) = fold_system_messages(messages) {
        body.insert("system".into(), Value::from(system));
    }
    body.insert("messages".into(), Value::Array(wire_messages(messages)?));
    body.insert("stream".into(), Value::Bool(true));
    if !config.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(config.tools.iter().map(wire_tool).collect()),
        );
        if config.parallel_tool_calls == Some(false) {
            body.insert(
                "tool_choice".into(),
                json!({"type": "auto", "disable_parallel_tool_use": true}),
            );
        }
    }
    match budget {
        Some(budget) => {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
            if config.temperature.is_some() {
                tracing::debug!("temperature not sent: Anthropic refuses it with thinking enabled");
            }
        }
        None => {
            if let Some(temperature) = config.temperature.and_then(temperature) {
                body.insert("temperature".into(), temperature);
            }
        }
    }
    if config.response_format.is_some() {
        tracing::debug!(
            "response_format not sent: Anthropic Messages has no structured-output field"
        );
    }
    Ok(Value::Object(body))
}

/// `(max_tokens, thinking budget)`: see [`AnthropicMessages`](super::AnthropicMessages).
fn token_plan(config: &LlmCallConfig) -> (u32, Option<u32>) {
    let Some(effort) = config.reasoning else {
        return (config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS), None);
    };
    let wanted = effort.budget_tokens();
    match config.max_tokens {
        None => (wanted.saturating_add(DEFAULT_MAX_TOKENS), Some(wanted)),
        Some(max) if max > wanted => (max, Some(wanted)),
        Some(max) => {
            let budget = max.saturating_sub(1);
            if budget >= MIN_THINKING_BUDGET {
                (max, Some(budget))
            } else {
                tracing::warn!(
                    max_tokens = max,
                    "thinking left off: max_tokens leaves no room for Anthropic's minimum budget of {MIN_THINKING_BUDGET}"
                );
                (max, None)
            }
        }
    }
}

/// An `f32` as the decimal a person wrote (`0.2`, not `0.2000000029…`).
fn temperature(value: f32) -> Option<Value> {
    let decimal: f64 = value.to_string().parse().ok()?;
    Number::from_f64(decimal).map(Value::Number)
}

fn wire_tool(tool: &ToolDefinition) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), Value::from(tool.name.as_str()));
    if !tool.description.is_empty() {
        out.insert("description".into(), Value::from(tool.description.as_str()));
    }
    let schema = if tool.parameters.is_null() {
        json!({"type": "object", "properties": {}})
    } else {
        tool.parameters.clone()
    };
    out.insert("input_schema".into(), schema);
    Value::Object(out)
}

/// The `messages` array: system messages are left out (they go to
/// `system`), consecutive tool results share one user message.
fn wire_messages(messages: &[Message]) -> Result<Vec<Value>, RequestError> {
    let mut out: Vec<Value> = Vec::new();
    for message in messages {
        match message.role {
            MessageRole::System => {}
            MessageRole::User => out.push(json!({"role": "user", "content": message.content})),
            MessageRole::Assistant => {
                let content = assistant_blocks(message);
                if content.is_empty() {
                    tracing::debug!(
                        "empty assistant message left out (Anthropic refuses empty content)"
                    );
                } else {
                    out.push(json!({"role": "assistant", "content": content}));
                }
            }
            MessageRole::Tool => {
                let block = tool_result(message)?;
                match out.last_mut() {
                    Some(last) if is_tool_results(last) => {
                        if let Some(blocks) = last.get_mut("content").and_then(Value::as_array_mut)
                        {
                            blocks.push(block);
                        }
                    }
                    _ => out.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    Ok(out)
}

/// True for a user message made only of `tool_result` blocks (another
/// result may join it; a text block must not come before a result).
fn is_tool_results(message: &Value) -> bool {
    message.get("role").and_then(Value::as_str) == Some("user")
        && message
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks
                    .iter()
                    .all(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
            })
}

fn tool_result(message: &Message) -> Result<Value, RequestError> {
    let Some(id) = message.tool_call_id.as_deref().filter(|id| !id.is_empty()) else {
        return Err(
            "a tool result message has no tool_call_id (Anthropic needs the tool_use id it answers)",
        );
    };
    let mut block = json!({"type": "tool_result", "tool_use_id": id});
    if !message.content.is_empty() {
        block["content"] = Value::from(message.content.as_str());
    }
    Ok(block)
}

/// Thinking blocks first, then the text, then `tool_use` blocks.
fn assistant_blocks(message: &Message) -> Vec<Value> {
    let mut blocks: Vec<Value> = message
        .reasoning
        .iter()
        .filter_map(thinking_block)
        .collect();
    if !message.content.is_empty() {
        blocks.push(json!({"type": "text", "text": message.content}));
    }
    for call in &message.tool_calls {
        let input = if call.arguments.is_object() {
            call.arguments.clone()
        } else {
            tracing::warn!(tool = %call.name, "tool call arguments are not an object; sending {{}}");
            json!({})
        };
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    blocks
}

/// A reasoning item as a replayable block, when it is one.
fn thinking_block(part: &ReasoningContentPart) -> Option<Value> {
    if part.provider != PROVIDER {
        tracing::debug!(provider = %part.provider, "reasoning from another provider not replayed");
        return None;
    }
    match (&part.text, &part.signature, &part.encrypted) {
        (Some(ReasoningText::Plain { text }), Some(signature), _) => {
            Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
        }
        (Some(ReasoningText::Redacted) | None, _, Some(data)) => {
            Some(json!({"type": "redacted_thinking", "data": data}))
        }
        _ => {
            tracing::warn!(
                "Anthropic reasoning item without a signature or redacted data not replayed"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::message::{ReasoningEffort, ResponseFormat, ToolCall};

    fn config() -> LlmCallConfig {
        LlmCallConfig::new("claude-test")
    }

    #[test]
    fn minimal_body() {
        let messages = [
            Message::system("A."),
            Message::system("B."),
            Message::user("hi"),
        ];
        let body = body(&messages, &config()).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "claude-test",
                "max_tokens": 8192,
                "system": "A.\n\nB.",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": true,
            })
        );
    }

    #[test]
    fn temperature_is_the_written_decimal_and_dropped_with_thinking() {
        let body_plain = body(&[Message::user("hi")], &config().with_temperature(0.2)).unwrap();
        assert_eq!(body_plain["temperature"], json!(0.2));
        let with_thinking = config()
            .with_temperature(0.2)
            .with_reasoning(ReasoningEffort::Low);
        let body_thinking = body(&[Message::user("hi")], &with_thinking).unwrap();
        assert!(body_thinking.get("temperature").is_none());
        assert_eq!(
            body_thinking["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(body_thinking["max_tokens"], json!(2048 + 8192));
    }

    #[test]
    fn max_tokens_always_exceeds_the_budget() {
        let plan = |max: Option<u32>, effort: Option<ReasoningEffort>| {
            let mut config = config();
            config.max_tokens = max;
            config.reasoning = effort;
            token_plan(&config)
        };
        assert_eq!(plan(None, None), (8192, None));
        assert_eq!(plan(Some(100), None), (100, None));
        assert_eq!(
            plan(None, Some(ReasoningEffort::High)),
            (24_576 + 8192, Some(24_576))
        );
        assert_eq!(
            plan(Some(30_000), Some(ReasoningEffort::High)),
            (30_000, Some(24_576))
        );
        assert_eq!(
            plan(Some(4096), Some(ReasoningEffort::Medium)),
            (4096, Some(4095))
        );
        assert_eq!(
            plan(Some(8192), Some(ReasoningEffort::Medium)),
            (8192, Some(8191))
        );
        assert_eq!(
            plan(Some(1025), Some(ReasoningEffort::Low)),
            (1025, Some(1024))
        );
        assert_eq!(plan(Some(1024), Some(ReasoningEffort::Low)), (1024, None));
    }

    #[test]
    fn tools_and_tool_choice() {
        let tool = ToolDefinition::function("get_weather", "Weather.", json!({"type": "object"}));
        let bare = ToolDefinition::function("noop", "", serde_json::Value::Null);
        let mut config = config().with_tools(vec![tool, bare]);
        let sent = body(&[Message::user("hi")], &config).unwrap();
        assert_eq!(
            sent["tools"],
            json!([
                {"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}},
                {"name": "noop", "input_schema": {"type": "object", "properties": {}}},
            ])
        );
        assert!(sent.get("tool_choice").is_none());
        config.parallel_tool_calls = Some(false);
        let sent = body(&[Message::user("hi")], &config).unwrap();
        assert_eq!(
            sent["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": true})
        );
        config.parallel_tool_calls = Some(true);
        assert!(
            body(&[Message::user("hi")], &config)
                .unwrap()
                .get("tool_choice")
                .is_none()
        );
    }

    #[test]
    fn response_format_is_not_sent() {
        let config = config().with_response_format(ResponseFormat::json_schema("x", json!({})));
        let sent = body(&[Message::user("hi")], &config).unwrap();
        let mut keys = sent.as_object().unwrap().keys().collect::<Vec<_>>();
        keys.sort();
        assert_eq!(keys, ["max_tokens", "messages", "model", "stream"]);
    }

    #[test]
    fn assistant_turn_replays_thinking_then_text_then_tool_use_and_merges_results() {
        let reasoning = vec![
            ReasoningContentPart::opaque("anthropic")
                .with_text(ReasoningText::Plain {
                    text: "Plan.".into(),
                })
                .with_signature("sig"),
            ReasoningContentPart::opaque("anthropic")
                .with_text(ReasoningText::Redacted)
                .with_encrypted("blob"),
            // Not replayable: unsigned, or another provider's.
            ReasoningContentPart::opaque("anthropic")
                .with_text(ReasoningText::Plain { text: "x".into() }),
            ReasoningContentPart::opaque("openai")
                .with_item_id("rs_1")
                .with_encrypted("enc"),
        ];
        let messages = [
            Message::user("weather?"),
            Message::assistant("Checking.")
                .with_reasoning(reasoning)
                .with_tool_calls(vec![
                    ToolCall::new("toolu_1", "get_weather", json!({"city": "Paris"})),
                    ToolCall::new("toolu_2", "get_time", serde_json::Value::Null),
                ]),
            Message::tool_result("toolu_1", "sunny"),
            Message::tool_result("toolu_2", ""),
            Message::user("thanks"),
            Message::assistant(""),
        ];
        let sent = body(&messages, &config()).unwrap();
        assert_eq!(
            sent["messages"],
            json!([
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Plan.", "signature": "sig"},
                    {"type": "redacted_thinking", "data": "blob"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                    {"type": "tool_result", "tool_use_id": "toolu_2"},
                ]},
                {"role": "user", "content": "thanks"},
            ])
        );
    }

    #[test]
    fn tool_result_without_id_is_refused() {
        let mut result = Message::tool_result("x", "out");
        result.tool_call_id = None;
        let error = body(&[Message::user("hi"), result], &config()).unwrap_err();
        assert!(error.contains("tool_call_id"));
    }
}
