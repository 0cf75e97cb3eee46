//! Host tools as an MCP server: the JSON every channel that speaks MCP to
//! the agent (the in-process SDK MCP server of the stream-json family, the
//! loopback Streamable-HTTP server) gives for `tools/list` and `tools/call`.
//! One mapping, so every channel shows the same tools and the same results.

pub mod inproc;
pub mod loopback;

use agent_adaptor_driver::{HostToolResult, HostToolSpec, HostToolStatus};
use serde_json::{Map, Value, json};

/// The MCP protocol version the host-tool servers answer `initialize` with
/// when the client asks for none they know.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// One tool of `tools/list` (`name`, `description`, `inputSchema`, and
/// `outputSchema` when the tool declares an object output).
pub fn tool_json(spec: &HostToolSpec) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), spec.name.clone().into());
    tool.insert("description".into(), spec.description.clone().into());
    tool.insert("inputSchema".into(), spec.input_schema.clone());
    // MCP allows only object output schemas.
    if let Some(output) = spec
        .output_schema
        .as_ref()
        .filter(|s| s.get("type").and_then(Value::as_str) == Some("object"))
    {
        tool.insert("outputSchema".into(), output.clone());
    }
    Value::Object(tool)
}

/// The `tools/list` result of `specs`.
pub fn tools_list_result(specs: &[HostToolSpec]) -> Value {
    json!({ "tools": specs.iter().map(tool_json).collect::<Vec<_>>() })
}

/// The `tools/call` result (`CallToolResult`) of one call: the content text,
/// `isError`, and `structuredContent` for an object output.
pub fn call_result(result: &HostToolResult) -> Value {
    let mut out = json!({
        "content": [{"type": "text", "text": result.content}],
        "isError": result.status != HostToolStatus::Ok,
    });
    if let Some(output) = result.output.as_ref().filter(|o| o.is_object()) {
        out["structuredContent"] = output.clone();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(output: Option<Value>) -> HostToolSpec {
        HostToolSpec {
            name: "lookup".into(),
            description: "Look up.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: output,
            trusted: false,
        }
    }

    #[test]
    fn only_object_output_schemas_are_listed() {
        let object = tool_json(&spec(Some(json!({"type": "object"}))));
        assert_eq!(object["outputSchema"], json!({"type": "object"}));
        let string = tool_json(&spec(Some(json!({"type": "string"}))));
        assert!(string.get("outputSchema").is_none());
        assert_eq!(
            tools_list_result(&[spec(None)])["tools"][0]["name"],
            "lookup"
        );
    }

    #[test]
    fn results_carry_text_error_flag_and_structured_content() {
        let ok = call_result(&HostToolResult::ok(json!({"n": 3})));
        assert_eq!(ok["isError"], false);
        assert_eq!(ok["content"][0]["text"], "{\"n\":3}");
        assert_eq!(ok["structuredContent"], json!({"n": 3}));
        let text = call_result(&HostToolResult::ok(json!("plain")));
        assert_eq!(text["content"][0]["text"], "plain");
        assert!(text.get("structuredContent").is_none());
        let err = call_result(&HostToolResult::error(HostToolStatus::Rejected, "no"));
        assert_eq!(err["isError"], true);
        assert_eq!(err["content"][0]["text"], "no");
    }
}
