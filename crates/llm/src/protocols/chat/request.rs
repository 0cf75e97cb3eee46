//! The Chat Completions request body.

use serde_json::{Map, Value, json};

use super::Dialect;
use crate::message::{LlmCallConfig, Message, MessageRole, ToolCall, ToolDefinition};

/// The JSON body for `messages` under `config`.
pub(super) fn body(
    dialect: Dialect,
    base_url: &str,
    messages: &[Message],
    config: &LlmCallConfig,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(config.model.as_str()));
    body.insert(
        "messages".into(),
        Value::Array(messages.iter().map(message).collect()),
    );
    body.insert("stream".into(), Value::Bool(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if dialect == Dialect::OpenRouter {
        body.insert("usage".into(), json!({"include": true}));
    }
    if !config.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(config.tools.iter().map(tool).collect()),
        );
        // OpenAI rejects `parallel_tool_calls` without `tools`.
        if let Some(parallel) = config.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), Value::Bool(parallel));
        }
    }
    if let Some(temperature) = config.temperature {
        body.insert("temperature".into(), number(temperature));
    }
    if let Some(max_tokens) = config.max_tokens {
        let field = if dialect == Dialect::OpenAi && is_openai_host(base_url) {
            // OpenAI's reasoning models reject `max_tokens`.
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(field.into(), Value::from(max_tokens));
    }
    if let Some(effort) = config.reasoning {
        match dialect {
            Dialect::OpenAi => {
                body.insert("reasoning_effort".into(), Value::from(effort.as_str()));
            }
            Dialect::OpenRouter => {
                body.insert("reasoning".into(), json!({"effort": effort.as_str()}));
            }
        }
    }
    if let Some(format) = &config.response_format {
        body.insert(
            "response_format".into(),
            json!({
                "type": "json_schema",
                "json_schema": {
                    "name": format.name,
                    "schema": format.schema,
                    "strict": format.strict,
                },
            }),
        );
    }
    Value::Object(body)
}

/// One message. System messages stay in place (the protocol has no separate
/// field); reasoning is not replayed (no input field for it).
fn message(message: &Message) -> Value {
    match message.role {
        MessageRole::System => json!({"role": "system", "content": message.content}),
        MessageRole::User => json!({"role": "user", "content": message.content}),
        MessageRole::Assistant if message.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": message.content})
        }
        MessageRole::Assistant => {
            // A tool-call-only answer has `content: null`.
            let content = if message.content.is_empty() {
                Value::Null
            } else {
                Value::from(message.content.as_str())
            };
            json!({
                "role": "assistant",
                "content": content,
                "tool_calls": message.tool_calls.iter().map(tool_call).collect::<Vec<_>>(),
            })
        }
        MessageRole::Tool => {
            let mut out = json!({"role": "tool", "content": message.content});
            if let Some(id) = &message.tool_call_id {
                out["tool_call_id"] = Value::from(id.as_str());
            }
            out
        }
    }
}

fn tool_call(call: &ToolCall) -> Value {
    json!({
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments.to_string()},
    })
}

fn tool(tool: &ToolDefinition) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    })
}

/// An `f32` as the decimal it was written as (`0.2`, not
/// `0.20000000298023224`).
fn number(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// True for OpenAI's own API hosts (`api.openai.com`, regional
/// `*.api.openai.com`).
fn is_openai_host(base_url: &str) -> bool {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = host_port
        .split(':')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    host == "api.openai.com" || host.ends_with(".api.openai.com")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::message::{ReasoningEffort, ResponseFormat};
    use crate::reasoning::{ReasoningContentPart, ReasoningText};

    #[test]
    fn openai_body_maps_every_message_kind_and_setting() {
        let messages = vec![
            Message::system("Be brief."),
            Message::user("Weather?"),
            Message::assistant("")
                .with_tool_calls(vec![ToolCall::new(
                    "call_1",
                    "weather",
                    json!({"city": "Paris"}),
                )])
                .with_reasoning(vec![
                    ReasoningContentPart::opaque("openai-protocol").with_text(
                        ReasoningText::Plain {
                            text: "think".into(),
                        },
                    ),
                ]),
            Message::tool_result("call_1", "sunny"),
            Message::assistant("It is sunny."),
        ];
        let mut config = LlmCallConfig::new("gpt-5")
            .with_temperature(0.2)
            .with_max_tokens(100)
            .with_reasoning(ReasoningEffort::Low)
            .with_response_format(ResponseFormat::json_schema(
                "answer",
                json!({"type": "object"}),
            ))
            .with_tools(vec![ToolDefinition::function(
                "weather",
                "Looks up the weather.",
                json!({"type": "object"}),
            )]);
        config.parallel_tool_calls = Some(false);
        let body = body(
            Dialect::OpenAi,
            "https://api.openai.com/v1",
            &messages,
            &config,
        );
        assert_eq!(
            body,
            json!({
                "model": "gpt-5",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Weather?"},
                    {"role": "assistant", "content": null, "tool_calls": [{
                        "id": "call_1", "type": "function",
                        "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"},
                    }]},
                    {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
                    {"role": "assistant", "content": "It is sunny."},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "tools": [{"type": "function", "function": {
                    "name": "weather", "description": "Looks up the weather.",
                    "parameters": {"type": "object"},
                }}],
                "parallel_tool_calls": false,
                "temperature": 0.2,
                "max_completion_tokens": 100,
                "reasoning_effort": "low",
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": "answer", "schema": {"type": "object"}, "strict": true,
                }},
            })
        );
    }

    #[test]
    fn other_hosts_get_max_tokens_and_no_parallel_flag_without_tools() {
        let mut config = LlmCallConfig::new("m").with_max_tokens(7);
        config.parallel_tool_calls = Some(true);
        let body = body(
            Dialect::OpenAi,
            "http://localhost:8000/v1",
            &[Message::user("hi")],
            &config,
        );
        assert_eq!(body["max_tokens"], 7);
        assert!(body.get("max_completion_tokens").is_none());
        assert!(body.get("parallel_tool_calls").is_none());
        assert!(body.get("tools").is_none());
        assert!(body.get("temperature").is_none());
    }

    #[test]
    fn openrouter_dialect() {
        let config = LlmCallConfig::new("openai/gpt-5")
            .with_max_tokens(5)
            .with_reasoning(ReasoningEffort::High);
        let body = body(
            Dialect::OpenRouter,
            "https://openrouter.ai/api/v1",
            &[Message::user("hi")],
            &config,
        );
        assert_eq!(body["reasoning"], json!({"effort": "high"}));
        assert_eq!(body["usage"], json!({"include": true}));
        assert_eq!(body["max_tokens"], 5);
        assert!(body.get("reasoning_effort").is_none());
    }

    #[test]
    fn openai_hosts() {
        assert!(is_openai_host("https://api.openai.com/v1"));
        assert!(is_openai_host("https://us.api.openai.com:443/v1"));
        assert!(is_openai_host("HTTPS://API.OPENAI.COM"));
        assert!(!is_openai_host("https://api.openai.com.evil.example/v1"));
        assert!(!is_openai_host("http://127.0.0.1:8080/v1"));
        assert!(!is_openai_host(
            "https://my-proxy.example/api.openai.com/v1"
        ));
    }
}
