//! The host tools as an *in-process* MCP server: the agent's MCP client sends
//! one JSON-RPC message at a time over its own channel (Claude Code's and
//! CodeBuddy Code's `mcp_message` control requests), and [`respond`] gives
//! the JSON-RPC reply. No port, no process.
//!
//! | message | reply |
//! |---|---|
//! | `initialize` | the client's `protocolVersion` echoed (else [`PROTOCOL_VERSION`]), `capabilities: {tools: {}}`, `serverInfo.name` = [`HOST_TOOL_SERVER`] |
//! | `ping` | `{}` |
//! | `tools/list` | [`tools_list_result`] |
//! | `tools/call` | [`HostTools::call`] → [`call_result`] |
//! | a notification (no `id`) | none |
//! | any other method | JSON-RPC error `-32601` |
//!
//! A call reaches the toolbox with `approved: false`: the agent's own
//! permission prompt never covers a host tool (the driver allows host tools
//! without asking), so the toolbox applies the run's approval policy for
//! host tools, once, after the input's schema check — the same request on
//! every channel.
//!
//! Sans-IO: [`dispatch`] answers everything but a tool call at once and
//! hands a call back ([`Dispatch::Call`]); the transport runs it while it
//! keeps reading the agent's output ([`HostCalls`](crate::host_calls::HostCalls))
//! and answers with [`call_reply`]. [`respond`] does both in one await.

use agent_adaptor_driver::{
    CancellationToken, EventSink, HOST_TOOL_SERVER, HostToolCall, HostToolResult, HostTools,
};
use serde_json::{Value, json};

use super::{PROTOCOL_VERSION, call_result, tools_list_result};

/// JSON-RPC: the message is not a request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: the parameters do not fit the method.
pub const INVALID_PARAMS: i64 = -32602;

/// The key of `params._meta` under which Claude Code names the `tool_use`
/// a `tools/call` serves (observed with 2.1.332).
const CLAUDE_TOOL_USE_ID: &str = "claudecode/toolUseId";

/// What [`dispatch`] makes of one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Dispatch {
    /// The reply, at once; `None` for a notification (and for a response
    /// the client sent, which this server never asked for).
    Reply(Option<Value>),
    /// A `tools/call`: run `call` through the toolbox, then answer request
    /// `id` with [`call_reply`].
    Call {
        /// The JSON-RPC id to answer.
        id: Value,
        /// The call.
        call: HostToolCall,
    },
}

/// What the MCP server of `tools` makes of `message`: the reply, or the
/// tool call to run.
pub fn dispatch(tools: &HostTools, message: &Value) -> Dispatch {
    let id = message.get("id").filter(|id| !id.is_null()).cloned();
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        // A response, or something that is not JSON-RPC at all.
        return Dispatch::Reply(
            id.filter(|_| message.get("result").is_none() && message.get("error").is_none())
                .map(|id| error(id, INVALID_REQUEST, "not a JSON-RPC request")),
        );
    };
    // A notification (`notifications/initialized`, `notifications/cancelled`
    // …) gets no reply.
    let Some(id) = id else {
        return Dispatch::Reply(None);
    };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let result = match method {
        "initialize" => json!({
            "protocolVersion": params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or(PROTOCOL_VERSION),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": HOST_TOOL_SERVER, "version": env!("CARGO_PKG_VERSION")},
        }),
        "ping" => json!({}),
        "tools/list" => tools_list_result(tools.specs()),
        "tools/call" => {
            return match tool_call(&params) {
                Some(call) => Dispatch::Call { id, call },
                None => Dispatch::Reply(Some(error(
                    id,
                    INVALID_PARAMS,
                    "tools/call needs a tool name",
                ))),
            };
        }
        other => {
            return Dispatch::Reply(Some(error(
                id,
                METHOD_NOT_FOUND,
                &format!("method not found: {other}"),
            )));
        }
    };
    Dispatch::Reply(Some(success(id, result)))
}

/// The reply to the `tools/call` request `id` that ended with `result`.
pub fn call_reply(id: Value, result: &HostToolResult) -> Value {
    success(id, call_result(result))
}

/// The JSON-RPC reply to `message` from the MCP server of `tools`, a tool
/// call run to its end through the toolbox (`sink` and `cancel` are the
/// run's): [`dispatch`] and the call in one await.
pub async fn respond(
    tools: &HostTools,
    message: &Value,
    sink: &dyn EventSink,
    cancel: &CancellationToken,
) -> Option<Value> {
    match dispatch(tools, message) {
        Dispatch::Reply(reply) => reply,
        Dispatch::Call { id, call } => Some(call_reply(id, &tools.call(call, sink, cancel).await)),
    }
}

fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The call a `tools/call`'s `params` asks for: `name`, `arguments`
/// (an empty object when absent), and the agent's id of the call when it
/// gives one (Claude Code's `_meta["claudecode/toolUseId"]`, its
/// `tool_use` id; else the toolbox makes one up).
fn tool_call(params: &Value) -> Option<HostToolCall> {
    let name = params.get("name").and_then(Value::as_str)?;
    let input = params
        .get("arguments")
        .filter(|a| !a.is_null())
        .cloned()
        .unwrap_or_else(|| json!({}));
    let call_id = params
        .pointer("/_meta")
        .and_then(|m| m.get(CLAUDE_TOOL_USE_ID))
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some(HostToolCall::new(call_id, name, input))
}

/// A JSON-RPC error reply.
pub fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use agent_adaptor_driver::{
        Emit, HostToolResult, HostToolSpec, HostToolStatus, HostToolbox, RunEvent, StreamPayload,
        async_trait,
    };

    use super::*;

    struct Null;

    impl EventSink for Null {
        fn emit(&self, _event: RunEvent) -> Emit<'_> {
            Emit::ready(Ok(()))
        }
        fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
            Emit::ready(Ok(()))
        }
    }

    /// One tool, `lookup`, that records its calls and answers `{"n": 1}`.
    #[derive(Default)]
    struct Lookup {
        specs: Vec<HostToolSpec>,
        calls: Mutex<Vec<HostToolCall>>,
    }

    #[async_trait]
    impl HostToolbox for Lookup {
        fn specs(&self) -> &[HostToolSpec] {
            &self.specs
        }
        async fn call(
            &self,
            call: HostToolCall,
            _sink: &dyn EventSink,
            _cancel: &CancellationToken,
        ) -> HostToolResult {
            let known = call.tool == "lookup";
            self.calls.lock().unwrap().push(call);
            if known {
                HostToolResult::ok(json!({"n": 1}))
            } else {
                HostToolResult::error(HostToolStatus::UnknownTool, "no such tool")
            }
        }
    }

    fn toolbox() -> (Arc<Lookup>, HostTools) {
        let lookup = Arc::new(Lookup {
            specs: vec![HostToolSpec {
                name: "lookup".into(),
                description: "Look a key up.".into(),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                trusted: false,
            }],
            ..Lookup::default()
        });
        (lookup.clone(), HostTools::new(lookup))
    }

    async fn reply(tools: &HostTools, message: Value) -> Option<Value> {
        respond(tools, &message, &Null, &CancellationToken::new()).await
    }

    #[tokio::test]
    async fn initialize_echoes_the_clients_version_or_gives_its_own() {
        let (_, tools) = toolbox();
        let r = reply(
            &tools,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
        )
        .await
        .unwrap();
        assert_eq!(r["id"], 0);
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
        assert_eq!(r["result"]["capabilities"], json!({"tools": {}}));
        assert_eq!(r["result"]["serverInfo"]["name"], HOST_TOOL_SERVER);
        let r = reply(
            &tools,
            json!({"jsonrpc": "2.0", "id": "a", "method": "initialize"}),
        )
        .await
        .unwrap();
        assert_eq!(r["result"]["protocolVersion"], PROTOCOL_VERSION);
        assert_eq!(r["id"], "a");
    }

    #[tokio::test]
    async fn ping_and_tools_list() {
        let (_, tools) = toolbox();
        let r = reply(&tools, json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .await
            .unwrap();
        assert_eq!(r, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        let r = reply(
            &tools,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await
        .unwrap();
        assert_eq!(r["result"], tools_list_result(tools.specs()));
        assert_eq!(r["result"]["tools"][0]["name"], "lookup");
    }

    #[tokio::test]
    async fn tools_call_reaches_the_toolbox_unapproved_with_the_agents_call_id() {
        let (lookup, tools) = toolbox();
        let r = reply(
            &tools,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "lookup", "arguments": {"key": "k1"}, "_meta": {"claudecode/toolUseId": "toolu_1"}}}),
        )
        .await
        .unwrap();
        assert_eq!(r["id"], 3);
        assert_eq!(
            r["result"],
            call_result(&HostToolResult::ok(json!({"n": 1})))
        );
        // No arguments: an empty object; no id of the agent's: empty.
        let r = reply(
            &tools,
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "other"}}),
        )
        .await
        .unwrap();
        assert_eq!(r["result"]["isError"], true);
        let calls = lookup.calls.lock().unwrap().clone();
        assert_eq!(
            calls,
            [
                HostToolCall::new("toolu_1", "lookup", json!({"key": "k1"})),
                HostToolCall::new("", "other", json!({})),
            ]
        );
        assert!(calls.iter().all(|c| !c.approved));
    }

    #[tokio::test]
    async fn a_call_without_a_name_is_invalid_params_and_runs_nothing() {
        let (lookup, tools) = toolbox();
        let r = reply(
            &tools,
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"arguments": {}}}),
        )
        .await
        .unwrap();
        assert_eq!(r["error"]["code"], INVALID_PARAMS);
        assert!(lookup.calls.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn notifications_and_responses_get_no_reply() {
        let (_, tools) = toolbox();
        for message in [
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": null, "method": "notifications/cancelled"}),
            json!({"jsonrpc": "2.0", "id": 7, "result": {}}),
        ] {
            assert_eq!(reply(&tools, message.clone()).await, None, "{message}");
        }
        let r = reply(&tools, json!({"jsonrpc": "2.0", "id": 8}))
            .await
            .unwrap();
        assert_eq!(r["error"]["code"], INVALID_REQUEST);
    }

    #[tokio::test]
    async fn unknown_methods_are_method_not_found() {
        let (_, tools) = toolbox();
        let r = reply(
            &tools,
            json!({"jsonrpc": "2.0", "id": 9, "method": "resources/templates/list"}),
        )
        .await
        .unwrap();
        assert_eq!(r["id"], 9);
        assert_eq!(r["error"]["code"], METHOD_NOT_FOUND);
        assert!(r.get("result").is_none());
    }

    #[test]
    fn a_tool_call_is_handed_back_to_run() {
        let (lookup, tools) = toolbox();
        let message = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "lookup", "arguments": {"key": "k"}}});
        let Dispatch::Call { id, call } = dispatch(&tools, &message) else {
            panic!("a call");
        };
        assert_eq!(
            (id, call),
            (
                json!(6),
                HostToolCall::new("", "lookup", json!({"key": "k"}))
            )
        );
        assert!(
            lookup.calls.lock().unwrap().is_empty(),
            "not run by dispatch"
        );
        let reply = call_reply(json!(6), &HostToolResult::ok(json!({"n": 1})));
        assert_eq!(reply["id"], 6);
        assert_eq!(reply["result"]["structuredContent"], json!({"n": 1}));
    }
}
