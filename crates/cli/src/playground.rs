//! The playground: the `llm` driver against the testkit's scripted mock
//! model server, started in-process on 127.0.0.1, so that a fresh machine
//! with no agent CLI and no API key still sees a whole run.
//!
//! The script answers every conversation the same way, so each run shows
//! everything a run can carry:
//!
//! 1. the model calls the read-only `list_files` tool, which needs an
//!    approval (the terminal asks, the web page shows buttons);
//! 2. after the tool result (or the denial) it reasons, then streams a
//!    greeting;
//! 3. later turns of a thread get a short reasoned answer that says what
//!    the playground is.
//!
//! With `--schema`, the answer is instead a JSON value made up to match the
//! schema ([`example_for_schema`]), so structured output can be tried
//! offline too.

use agent_adaptor_llm::{OpenAiChat, Provider};
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use serde_json::{Map, Value, json};

use agent_adaptor_llm::agent::LlmDriver;

use crate::tools::LIST_FILES;

/// The model name the playground reports.
pub const PLAYGROUND_MODEL: &str = "playground";

/// The greeting of the first turn.
pub const GREETING: &str = "Hello! I am the agent-adaptor playground: a scripted model served \
offline on 127.0.0.1. Everything you just saw (a tool call that asked for approval, reasoning, \
and this streamed answer) went through the same pipeline a real agent uses. Run with \
--driver claude|codex|gemini|cursor|codebuddy, or --driver llm with an API key, for the real thing.";

/// The answer to later turns of a thread.
pub const FOLLOW_UP: &str = "This thread continues: the playground keeps the whole conversation \
in the thread store, as the llm driver does for real APIs. Its answers are scripted, so they \
will not change; a real driver answers what you ask.";

/// The playground's script: see the [module docs](self). With `schema`, the
/// answer is a JSON value shaped by it.
pub fn script(schema: Option<&Value>) -> Script {
    let replies = match schema {
        Some(schema) => vec![Reply::Json(example_for_schema(schema))],
        None => vec![
            Reply::ToolCall {
                name: LIST_FILES.into(),
                arguments: json!({"path": "."}),
            },
            Reply::ReasoningThenText {
                reasoning: "The user said hello. I looked at the workspace (if I was allowed \
                            to); now I greet them and explain what this is."
                    .into(),
                text: GREETING.into(),
            },
            Reply::ReasoningThenText {
                reasoning: "A follow-up in the same thread: say what the playground is.".into(),
                text: FOLLOW_UP.into(),
            },
        ],
    };
    // The empty keyword matches every conversation.
    Script::new().on_prompt("", replies)
}

/// The running playground: the mock server and a driver pointed at it.
pub struct Playground {
    /// The mock model server (kept alive as long as the playground).
    pub server: MockServer,
    /// The `llm` driver calling it (Chat Completions).
    pub driver: LlmDriver,
}

impl Playground {
    /// Start the mock model server on 127.0.0.1 (a free port) with the
    /// playground's script.
    pub async fn start(schema: Option<&Value>) -> std::io::Result<Playground> {
        let server = MockServer::start(script(schema)).await?;
        let provider = Provider::new("playground", OpenAiChat::new())
            .base_url(format!("{}/v1", server.base_url()))
            .api_key("playground");
        Ok(Playground {
            driver: LlmDriver::new(provider, PLAYGROUND_MODEL).with_endpoint_id("playground"),
            server,
        })
    }

    /// One line saying what this is, for the output.
    pub fn label(&self) -> String {
        format!(
            "playground: llm driver against the built-in scripted model server at {} (offline; \
             no agent CLI or API key was found — pick one with --driver)",
            self.server.base_url()
        )
    }
}

/// A JSON value that satisfies simple schemas: objects get every property
/// (required or not) filled in, arrays one item, strings `"playground"`,
/// numbers 0 (or the minimum), booleans true; `const`, `enum`, `default`
/// and `examples` win. Good enough for the playground; real models are
/// validated by core the same way.
pub fn example_for_schema(schema: &Value) -> Value {
    example(schema, 0)
}

fn example(schema: &Value, depth: usize) -> Value {
    let Some(obj) = schema.as_object() else {
        return Value::Null;
    };
    if depth > 8 {
        return Value::Null;
    }
    if let Some(v) = obj.get("const") {
        return v.clone();
    }
    if let Some(v) = obj
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return v.clone();
    }
    if let Some(v) = obj.get("default") {
        return v.clone();
    }
    if let Some(v) = obj
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return v.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = obj
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return example(first, depth + 1);
        }
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if obj.contains_key("properties") => "object",
        _ if obj.contains_key("items") => "array",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                for (name, sub) in props {
                    out.insert(name.clone(), example(sub, depth + 1));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let item = obj.get("items").map(|i| example(i, depth + 1));
            let min = obj
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .max(1);
            match item {
                Some(item) => Value::Array(vec![item; usize::try_from(min).unwrap_or(1)]),
                None => Value::Array(Vec::new()),
            }
        }
        "integer" => json!(obj.get("minimum").and_then(Value::as_i64).unwrap_or(0)),
        "number" => json!(obj.get("minimum").and_then(Value::as_f64).unwrap_or(0.0)),
        "boolean" => Value::Bool(true),
        "null" => Value::Null,
        _ => Value::String("playground".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_follow_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "count": {"type": "integer", "minimum": 2},
                "tags": {"type": "array", "items": {"type": "string"}},
                "kind": {"enum": ["a", "b"]},
                "ok": {"type": ["boolean", "null"]}
            },
            "required": ["name"]
        });
        assert_eq!(
            example_for_schema(&schema),
            json!({"name": "playground", "count": 2, "tags": ["playground"], "kind": "a", "ok": true})
        );
    }

    #[test]
    fn the_script_serializes_for_the_mock_binary() {
        let text = serde_json::to_string(&script(None)).unwrap_or_default();
        assert!(text.contains(LIST_FILES), "{text}");
    }
}
