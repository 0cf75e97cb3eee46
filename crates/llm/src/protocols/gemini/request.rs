//! The `GenerateContentRequest` body (camelCase).
//!
//! * `contents`: user turns as `user`, assistant turns as `model` (text,
//!   then `functionCall` parts carrying a bound thought signature; unbound
//!   Gemini reasoning with a signature goes first as a `thought: true`
//!   part), tool results as `user` turns of `functionResponse` parts
//!   (consecutive results share one turn, as Gemini expects the answers to
//!   parallel calls together; the name comes from the earlier call).
//! * `systemInstruction`: every system message, folded.
//! * `tools[0].functionDeclarations`: schemas without `additionalProperties`
//!   and `$schema` (Gemini rejects them), and no `parameters` at all for an
//!   object schema without properties (Gemini rejects an empty `OBJECT`).
//! * `generationConfig`: `temperature`, `maxOutputTokens`, `thinkingConfig`
//!   (budget + `includeThoughts`) when reasoning is requested, and
//!   `responseMimeType: application/json` + `responseSchema` for a response
//!   format.
//!
//! Streaming is chosen by the method (`:streamGenerateContent?alt=sse`) and
//! the model by the path: the body has neither `stream` nor `model` (Google
//! rejects unknown fields).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::PROVIDER;
use crate::http::WireRequest;
use crate::message::{
    LlmCallConfig, Message, MessageRole, ToolCall, ToolDefinition, fold_system_messages,
};
use crate::reasoning::ReasoningContentPart;

/// The request for `messages` under `config`.
pub(super) fn build(messages: &[Message], config: &LlmCallConfig) -> WireRequest {
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents(messages)));
    if let Some(system) = fold_system_messages(messages).filter(|text| !text.trim().is_empty()) {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    if !config.tools.is_empty() {
        let declarations: Vec<Value> = config.tools.iter().map(declaration).collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    let generation = generation_config(config);
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    WireRequest {
        path: format!(
            "{}:streamGenerateContent?alt=sse",
            model_path(&config.model)
        ),
        body: Value::Object(body),
        headers: Vec::new(),
    }
}

/// `models/{model}`, or the name as given when it already has a collection
/// (`models/…`, `tunedModels/…`).
fn model_path(model: &str) -> String {
    let model = model.trim_start_matches('/');
    if model.contains('/') {
        model.to_owned()
    } else {
        format!("models/{model}")
    }
}

/// True for an id this protocol made up (`call_{n}`): it is not sent back,
/// since Gemini never issued it.
fn is_synthetic_id(id: &str) -> bool {
    id.strip_prefix("call_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn contents(messages: &[Message]) -> Vec<Value> {
    let names: HashMap<&str, &str> = messages
        .iter()
        .flat_map(|message| &message.tool_calls)
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect();
    let mut contents: Vec<Value> = Vec::new();
    // The last content is a turn of tool results (more may join it).
    let mut in_results = false;
    for message in messages {
        match message.role {
            MessageRole::System => {}
            MessageRole::User => {
                in_results = false;
                if !message.content.is_empty() {
                    contents.push(json!({"role": "user", "parts": [{"text": message.content}]}));
                }
            }
            MessageRole::Assistant => {
                in_results = false;
                let parts = assistant_parts(message);
                if !parts.is_empty() {
                    contents.push(json!({"role": "model", "parts": parts}));
                }
            }
            MessageRole::Tool => {
                let part = function_response(message, &names);
                match contents.last_mut().and_then(|last| last.get_mut("parts")) {
                    Some(Value::Array(parts)) if in_results => parts.push(part),
                    _ => contents.push(json!({"role": "user", "parts": [part]})),
                }
                in_results = true;
            }
        }
    }
    contents
}

fn assistant_parts(message: &Message) -> Vec<Value> {
    let bound = |item: &ReasoningContentPart| {
        item.bound_tool_call_id
            .as_deref()
            .is_some_and(|id| message.tool_calls.iter().any(|call| call.id == id))
    };
    let mut parts = Vec::new();
    // Unbound Gemini reasoning (and a signature bound to a call that is not
    // in this message) goes first, as the thought part it came from. Without
    // a signature there is nothing Gemini uses: thoughts are not read back.
    for item in &message.reasoning {
        if item.provider != PROVIDER || bound(item) {
            continue;
        }
        if let Some(signature) = &item.signature {
            parts.push(json!({
                "text": item.display_text().unwrap_or_default(),
                "thought": true,
                "thoughtSignature": signature,
            }));
        }
    }
    if !message.content.is_empty() {
        parts.push(json!({"text": message.content}));
    }
    for call in &message.tool_calls {
        let signature = message
            .reasoning
            .iter()
            .filter(|item| item.provider == PROVIDER)
            .find(|item| item.bound_tool_call_id.as_deref() == Some(call.id.as_str()))
            .and_then(|item| item.signature.as_deref());
        parts.push(function_call(call, signature));
    }
    parts
}

fn function_call(call: &ToolCall, signature: Option<&str>) -> Value {
    let args = match &call.arguments {
        Value::Null => Value::Object(Map::new()),
        other => other.clone(),
    };
    let mut function = json!({"name": call.name, "args": args});
    if !is_synthetic_id(&call.id) {
        function["id"] = Value::from(call.id.as_str());
    }
    let mut part = json!({"functionCall": function});
    if let Some(signature) = signature {
        part["thoughtSignature"] = Value::from(signature);
    }
    part
}

fn function_response(message: &Message, names: &HashMap<&str, &str>) -> Value {
    let id = message.tool_call_id.as_deref().unwrap_or_default();
    let name = names.get(id).copied().unwrap_or_else(|| {
        tracing::warn!(
            tool_call_id = id,
            "tool result for an unknown call; naming it by its id"
        );
        id
    });
    let mut function = json!({"name": name, "response": tool_response(&message.content)});
    if !id.is_empty() && !is_synthetic_id(id) {
        function["id"] = Value::from(id);
    }
    json!({"functionResponse": function})
}

/// A tool's output as the object Gemini requires: a JSON object as it is,
/// anything else wrapped as `{"result": …}`.
fn tool_response(output: &str) -> Value {
    match serde_json::from_str::<Value>(output) {
        Ok(Value::Object(object)) => Value::Object(object),
        Ok(other) => json!({"result": other}),
        Err(_) => json!({"result": output}),
    }
}

fn declaration(tool: &ToolDefinition) -> Value {
    let mut declaration = json!({"name": tool.name});
    if !tool.description.is_empty() {
        declaration["description"] = Value::from(tool.description.as_str());
    }
    let parameters = clean_schema(&tool.parameters);
    if !is_empty_object_schema(&parameters) {
        declaration["parameters"] = parameters;
    }
    declaration
}

/// `null`, `{}` or an object schema without properties: Gemini rejects an
/// `OBJECT` with no properties, so no `parameters` are sent.
fn is_empty_object_schema(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return schema.is_null();
    };
    let object_type = map.get("type").is_none_or(|kind| {
        kind.as_str()
            .is_some_and(|kind| kind.eq_ignore_ascii_case("object"))
    });
    let no_properties = map
        .get("properties")
        .is_none_or(|properties| properties.as_object().is_none_or(Map::is_empty));
    let composite = ["anyOf", "oneOf", "allOf", "$ref", "enum"]
        .iter()
        .any(|key| map.contains_key(*key));
    object_type && no_properties && !composite
}

/// Keys whose value is a schema or a list of schemas.
const SCHEMA_KEYS: &[&str] = &[
    "items",
    "additionalItems",
    "prefixItems",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "contains",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Keys whose value maps names to schemas.
const SCHEMA_MAP_KEYS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// `schema` without `additionalProperties` and `$schema`, removed only at
/// schema positions (a property named `additionalProperties` stays).
fn clean_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let key = key.as_str();
                if matches!(key, "additionalProperties" | "$schema") {
                    continue;
                }
                let value = if SCHEMA_KEYS.contains(&key) {
                    clean_schema(value)
                } else if SCHEMA_MAP_KEYS.contains(&key) {
                    match value {
                        Value::Object(children) => Value::Object(
                            children
                                .iter()
                                .map(|(name, child)| (name.clone(), clean_schema(child)))
                                .collect(),
                        ),
                        other => other.clone(),
                    }
                } else {
                    value.clone()
                };
                out.insert(key.to_owned(), value);
            }
            Value::Object(out)
        }
        // A list of schemas (`anyOf`, tuple `items`).
        Value::Array(items) => Value::Array(items.iter().map(clean_schema).collect()),
        other => other.clone(),
    }
}

fn generation_config(config: &LlmCallConfig) -> Map<String, Value> {
    let mut generation = Map::new();
    if let Some(temperature) = config.temperature {
        generation.insert("temperature".into(), float(temperature));
    }
    if let Some(max_tokens) = config.max_tokens {
        generation.insert("maxOutputTokens".into(), Value::from(max_tokens));
    }
    if let Some(effort) = config.reasoning {
        generation.insert(
            "thinkingConfig".into(),
            json!({"thinkingBudget": effort.budget_tokens(), "includeThoughts": true}),
        );
    }
    if let Some(format) = &config.response_format {
        generation.insert("responseMimeType".into(), Value::from("application/json"));
        generation.insert("responseSchema".into(), clean_schema(&format.schema));
    }
    generation
}

/// An `f32` as the JSON number it was written as (`0.2`, not
/// `0.20000000298023224`).
fn float(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::message::{ReasoningEffort, ResponseFormat};
    use crate::reasoning::ReasoningText;

    #[test]
    fn conversation_maps_to_contents() {
        let signed = ReasoningContentPart::opaque("google")
            .with_text(ReasoningText::Plain {
                text: "plan".into(),
            })
            .with_signature("sig-a");
        let bound = ReasoningContentPart::opaque("google")
            .with_signature("sig-b")
            .with_bound_tool_call_id("call_0");
        let foreign = ReasoningContentPart::opaque("anthropic").with_signature("x");
        let messages = vec![
            Message::system("Be brief."),
            Message::user("hi"),
            Message::assistant("Checking.")
                .with_tool_calls(vec![
                    ToolCall::new("call_0", "get_weather", json!({"city": "Paris"})),
                    ToolCall::new("fc-7", "get_time", json!({})),
                ])
                .with_reasoning(vec![signed, bound, foreign]),
            Message::tool_result("call_0", "sunny"),
            Message::tool_result("fc-7", "{\"time\":\"noon\"}"),
            Message::user("thanks"),
        ];
        let request = build(&messages, &LlmCallConfig::new("gemini-2.5-flash"));
        assert_eq!(
            request.path,
            "models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            request.body,
            json!({
                "contents": [
                    {"role": "user", "parts": [{"text": "hi"}]},
                    {"role": "model", "parts": [
                        {"text": "plan", "thought": true, "thoughtSignature": "sig-a"},
                        {"text": "Checking."},
                        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "sig-b"},
                        {"functionCall": {"name": "get_time", "args": {}, "id": "fc-7"}},
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}},
                        {"functionResponse": {"name": "get_time", "response": {"time": "noon"}, "id": "fc-7"}},
                    ]},
                    {"role": "user", "parts": [{"text": "thanks"}]},
                ],
                "systemInstruction": {"parts": [{"text": "Be brief."}]},
            })
        );
    }

    #[test]
    fn tools_and_generation_config() {
        let tools = vec![
            ToolDefinition::function(
                "lookup",
                "Looks up.",
                json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "additionalProperties": {"type": "string"},
                        "filters": {
                            "type": "array",
                            "items": {"type": "object", "additionalProperties": false, "properties": {"k": {"type": "string"}}}
                        },
                        "mode": {"anyOf": [{"type": "string", "additionalProperties": true}, {"type": "null"}]}
                    },
                    "required": ["filters"]
                }),
            ),
            ToolDefinition::function(
                "ping",
                "",
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
            ),
        ];
        let config = LlmCallConfig::new("models/gemini-2.5-pro")
            .with_tools(tools)
            .with_temperature(0.2)
            .with_max_tokens(512)
            .with_reasoning(ReasoningEffort::Low)
            .with_response_format(ResponseFormat::json_schema(
                "answer",
                json!({"type": "object", "additionalProperties": false, "properties": {"a": {"type": "integer"}}}),
            ));
        let request = build(&[Message::user("hi")], &config);
        assert_eq!(
            request.path,
            "models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            request.body["tools"],
            json!([{"functionDeclarations": [
                {"name": "lookup", "description": "Looks up.", "parameters": {
                    "type": "object",
                    "properties": {
                        "additionalProperties": {"type": "string"},
                        "filters": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                        "mode": {"anyOf": [{"type": "string"}, {"type": "null"}]}
                    },
                    "required": ["filters"]
                }},
                {"name": "ping"},
            ]}])
        );
        assert_eq!(
            request.body["generationConfig"],
            json!({
                "temperature": 0.2,
                "maxOutputTokens": 512,
                "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": true},
                "responseMimeType": "application/json",
                "responseSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
            })
        );
        assert!(request.body.get("stream").is_none());
        assert!(request.body.get("systemInstruction").is_none());
    }

    #[test]
    fn tool_outputs_become_objects() {
        assert_eq!(tool_response("plain"), json!({"result": "plain"}));
        assert_eq!(tool_response("42"), json!({"result": 42}));
        assert_eq!(tool_response("[1]"), json!({"result": [1]}));
        assert_eq!(tool_response("{\"a\":1}"), json!({"a": 1}));
        assert!(is_synthetic_id("call_12"));
        assert!(!is_synthetic_id("call_"));
        assert!(!is_synthetic_id("call_x1"));
    }
}
