//! The Responses request body.

use serde_json::{Map, Value, json};

use crate::message::{LlmCallConfig, Message, MessageRole, ToolDefinition, fold_system_messages};

/// The reasoning provider whose items this API accepts back.
pub(super) const REASONING_PROVIDER: &str = "openai";

/// The JSON body of `POST /responses` (stateless: `store: false`).
pub(super) fn body(messages: &[Message], config: &LlmCallConfig) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    if let Some(instructions) = fold_system_messages(messages) {
        body.insert("instructions".into(), json!(instructions));
    }
    body.insert("input".into(), Value::Array(input(messages)));
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(false));
    if let Some(effort) = config.reasoning {
        body.insert(
            "reasoning".into(),
            json!({"effort": effort.as_str(), "summary": "auto"}),
        );
        // Stateless: the reasoning comes back encrypted so it can be replayed.
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if !config.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(config.tools.iter().map(tool).collect()),
        );
    }
    if let Some(parallel) = config.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), json!(parallel));
    }
    if let Some(temperature) = config.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = config.max_tokens {
        body.insert("max_output_tokens".into(), json!(max_tokens));
    }
    if let Some(format) = &config.response_format {
        body.insert(
            "text".into(),
            json!({"format": {
                "type": "json_schema",
                "name": format.name,
                "schema": format.schema,
                "strict": format.strict,
            }}),
        );
    }
    Value::Object(body)
}

/// The conversation as input items. System messages go to `instructions`.
fn input(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::new();
    for message in messages {
        match message.role {
            MessageRole::System => {}
            MessageRole::User => items.push(json!({
                "type": "message",
                "role": "user",
                "content": message.content,
            })),
            MessageRole::Assistant => {
                for part in &message.reasoning {
                    if part.provider != REASONING_PROVIDER {
                        continue;
                    }
                    match (&part.item_id, &part.encrypted) {
                        (Some(id), Some(encrypted)) => items.push(json!({
                            "type": "reasoning",
                            "id": id,
                            "encrypted_content": encrypted,
                            // Required by the API even when empty.
                            "summary": [],
                        })),
                        _ => tracing::debug!(
                            "reasoning item without id or encrypted content not replayed (store is off)"
                        ),
                    }
                }
                if !message.content.is_empty() {
                    items.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": message.content,
                    }));
                }
                for call in &message.tool_calls {
                    items.push(json!({
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments.to_string(),
                    }));
                }
            }
            MessageRole::Tool => match &message.tool_call_id {
                Some(call_id) => items.push(json!({
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": message.content,
                })),
                None => {
                    tracing::warn!(
                        "tool result without tool_call_id not sent: Responses needs the call id"
                    );
                }
            },
        }
    }
    items
}

/// A function tool. `strict` is always sent because the Responses API
/// defaults it to `true`, which rejects schemas that are not
/// strict-compatible; it is `true` only when the schema already is.
fn tool(tool: &ToolDefinition) -> Value {
    json!({
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": is_strict_compatible(&tool.parameters),
    })
}

/// True when every object schema in `schema` lists all its properties as
/// required and forbids additional ones (what strict mode demands).
fn is_strict_compatible(schema: &Value) -> bool {
    let Some(object) = schema.as_object() else {
        return false;
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return false;
    }
    strict_node(schema)
}

fn strict_node(schema: &Value) -> bool {
    let Some(object) = schema.as_object() else {
        // `true`/`false` schemas and other shapes are not accepted.
        return false;
    };
    let is_object = object.get("type").and_then(Value::as_str) == Some("object")
        || object.contains_key("properties");
    if is_object {
        if object.get("additionalProperties") != Some(&Value::Bool(false)) {
            return false;
        }
        let properties = object.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(properties) = properties {
            if !properties
                .keys()
                .all(|key| required.contains(&key.as_str()))
            {
                return false;
            }
            if !properties.values().all(strict_node) {
                return false;
            }
        }
    }
    if let Some(items) = object.get("items")
        && !strict_node(items)
    {
        return false;
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(variants) = object.get(key).and_then(Value::as_array)
            && !variants.iter().all(strict_node)
        {
            return false;
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(defs) = object.get(key).and_then(Value::as_object)
            && !defs.values().all(strict_node)
        {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::{ReasoningEffort, ResponseFormat, ToolCall};
    use crate::reasoning::{ReasoningContentPart, ReasoningText};

    #[test]
    fn full_conversation_maps_to_input_items() {
        let reasoning = vec![
            ReasoningContentPart::opaque("openai")
                .with_item_id("rs_1")
                .with_encrypted("enc")
                .with_text(ReasoningText::Summary {
                    parts: vec!["thought".into()],
                }),
            ReasoningContentPart::opaque("anthropic").with_signature("sig"),
            ReasoningContentPart::opaque("openai").with_item_id("rs_no_payload"),
        ];
        let messages = vec![
            Message::system("Be brief."),
            Message::user("Weather?"),
            Message::assistant("Checking.")
                .with_reasoning(reasoning)
                .with_tool_calls(vec![ToolCall::new(
                    "call_1",
                    "weather",
                    json!({"city": "Oslo"}),
                )]),
            Message::tool_result("call_1", "rain"),
            Message::system("Use metric."),
        ];
        let config = LlmCallConfig::new("gpt-5")
            .with_reasoning(ReasoningEffort::High)
            .with_temperature(0.5)
            .with_max_tokens(256);
        let body = body(&messages, &config);
        assert_eq!(
            body,
            json!({
                "model": "gpt-5",
                "instructions": "Be brief.\n\nUse metric.",
                "input": [
                    {"type": "message", "role": "user", "content": "Weather?"},
                    {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc", "summary": []},
                    {"type": "message", "role": "assistant", "content": "Checking."},
                    {"type": "function_call", "call_id": "call_1", "name": "weather",
                     "arguments": "{\"city\":\"Oslo\"}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "rain"},
                ],
                "stream": true,
                "store": false,
                "reasoning": {"effort": "high", "summary": "auto"},
                "include": ["reasoning.encrypted_content"],
                "temperature": 0.5,
                "max_output_tokens": 256,
            })
        );
    }

    #[test]
    fn tools_strictness_and_response_format() {
        let strict = json!({
            "type": "object",
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}},
                                 "required": ["b"], "additionalProperties": false}},
            "required": ["a"],
            "additionalProperties": false,
        });
        let loose = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let mut config = LlmCallConfig::new("gpt-5")
            .with_tools(vec![
                ToolDefinition::function("s", "strict one", strict.clone()),
                ToolDefinition::function("l", "loose one", loose.clone()),
            ])
            .with_response_format(ResponseFormat::json_schema("answer", strict.clone()));
        config.parallel_tool_calls = Some(false);
        let body = body(&[Message::user("hi")], &config);
        assert_eq!(
            body["tools"],
            json!([
                {"type": "function", "name": "s", "description": "strict one", "parameters": strict, "strict": true},
                {"type": "function", "name": "l", "description": "loose one", "parameters": loose, "strict": false},
            ])
        );
        assert_eq!(body["parallel_tool_calls"], json!(false));
        assert_eq!(
            body["text"],
            json!({"format": {"type": "json_schema", "name": "answer", "schema": strict, "strict": true}})
        );
        assert!(body.get("reasoning").is_none() && body.get("include").is_none());
        assert!(body.get("instructions").is_none());
    }

    #[test]
    fn strict_check_covers_nested_shapes() {
        assert!(!is_strict_compatible(&json!({"type": "string"})));
        let missing_required = json!({"type": "object", "properties": {"a": {"type": "string"}},
                                      "required": [], "additionalProperties": false});
        assert!(!is_strict_compatible(&missing_required));
        let loose_items = json!({"type": "object", "additionalProperties": false, "required": ["xs"],
            "properties": {"xs": {"type": "array", "items": {"type": "object", "properties": {}}}}});
        assert!(!is_strict_compatible(&loose_items));
        let empty = json!({"type": "object", "properties": {}, "additionalProperties": false});
        assert!(is_strict_compatible(&empty));
    }
}
