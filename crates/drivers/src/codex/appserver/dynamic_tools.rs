//! Host tools as the app-server's *dynamic tools* (protocols.md §1.6): the
//! one channel by which `codex app-server` offers the model functions its
//! client runs.
//!
//! * `thread/start.dynamicTools` declares them (`{type: "function", name,
//!   description, inputSchema}`). The field is experimental on 0.171: the
//!   server refuses it ("thread/start.dynamicTools requires experimentalApi
//!   capability") unless `initialize` opted in with
//!   `capabilities.experimentalApi: true`, which the client sends exactly
//!   when the run has host tools.
//! * The model's call arrives as the server request `item/tool/call`
//!   (`{threadId, turnId, callId, tool, arguments}`), bracketed by the
//!   `dynamicToolCall` item's `item/started` / `item/completed`; it is
//!   answered `{contentItems: [{type: "inputText", text}], success}` and the
//!   text is the model's `function_call_output`. Codex asks no approval for
//!   a dynamic tool: the run's toolbox asks the host per the run policy.
//! * A thread keeps the dynamic tools it started with: `thread/resume` has
//!   no such field (one sent is ignored) and a resumed thread offers the
//!   model the tools of its start (observed on 0.171). A checkpoint
//!   therefore carries the fingerprint of the declared tools (`MARK_KEY`),
//!   and a resumed run whose tools differ is refused before launch
//!   (`check_resumed`) rather than run with tools the model cannot see, or
//!   with tools the host no longer serves.

use agent_adaptor_driver::{
    FailureCode, HostToolCall, HostToolResult, HostToolSpec, Request, RunFailure,
    canonical_session_config_fingerprint,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// The server request of a dynamic tool call.
pub const TOOL_CALL: &str = "item/tool/call";

/// The checkpoint data key of the fingerprint of a thread's dynamic tools.
pub(crate) const MARK_KEY: &str = "dynamic_tools";

/// One entry of `thread/start.dynamicTools` (a `FunctionDynamicToolSpec`).
pub fn spec_json(spec: &HostToolSpec) -> Value {
    json!({
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.input_schema,
    })
}

/// The `dynamicTools` of a run: one entry per host tool, in the host's
/// order (empty without host tools).
pub fn declared(req: &Request) -> Vec<Value> {
    req.host_tools.specs().iter().map(spec_json).collect()
}

/// `item/tool/call` params (`DynamicToolCallParams`), as far as the driver
/// reads them.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallParams {
    call_id: String,
    tool: String,
    #[serde(default)]
    arguments: Value,
}

/// The host tool call an `item/tool/call` request asks for; `None` when
/// the params do not name a call and a tool.
pub fn call_of(params: &Value) -> Option<HostToolCall> {
    let p = CallParams::deserialize(params).ok()?;
    Some(HostToolCall::new(p.call_id, p.tool, p.arguments))
}

/// The answer to an `item/tool/call` request (`DynamicToolCallResponse`):
/// the text the model reads, and whether the call succeeded.
pub fn response(result: &HostToolResult) -> Value {
    json!({
        "contentItems": [{ "type": "inputText", "text": result.content }],
        "success": !result.is_error(),
    })
}

/// The fingerprint of the dynamic tools `declared` (none without).
pub(crate) fn mark(declared: &[Value]) -> Option<String> {
    if declared.is_empty() {
        return None;
    }
    canonical_session_config_fingerprint("codex/dynamic-tools/v1", declared).ok()
}

/// A resumed run must declare the dynamic tools its thread started with
/// (see the module docs): `declared` are the run's.
pub(crate) fn check_resumed(req: &Request, declared: &[Value]) -> Option<RunFailure> {
    let state = req.session.as_ref()?.state.as_ref()?;
    if state.resume_id.is_empty() {
        return None;
    }
    let started = state.data.get(MARK_KEY).cloned();
    (started != mark(declared)).then(|| {
        let mut f = RunFailure::new(
            FailureCode::PolicyError,
            "codex keeps the dynamic tools a thread started with: a resumed thread cannot \
             take other host tools (give every turn of the thread the same tools, or start a \
             new thread)",
        );
        f.metadata
            .insert("reason".into(), "host_tools_changed".into());
        f
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use agent_adaptor_driver::{
        CancellationToken, EventSink, HostToolStatus, HostToolbox, HostTools, SessionContext,
        SessionState, async_trait,
    };

    use super::*;

    struct Specs(Vec<HostToolSpec>);

    #[async_trait]
    impl HostToolbox for Specs {
        fn specs(&self) -> &[HostToolSpec] {
            &self.0
        }
        async fn call(
            &self,
            _call: HostToolCall,
            _sink: &dyn EventSink,
            _cancel: &CancellationToken,
        ) -> HostToolResult {
            HostToolResult::ok(Value::Null)
        }
    }

    fn spec(name: &str, description: &str) -> HostToolSpec {
        HostToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": {"order": {"type": "string"}}}),
            output_schema: Some(json!({"type": "object"})),
            trusted: true,
        }
    }

    fn request(specs: Vec<HostToolSpec>, resumed: Option<Option<String>>) -> Request {
        let mut req = Request::new("r", "p");
        if !specs.is_empty() {
            req.host_tools = HostTools::new(Arc::new(Specs(specs)));
        }
        if let Some(started) = resumed {
            let mut state = SessionState {
                resume_id: "thread-1".into(),
                ..Default::default()
            };
            if let Some(m) = started {
                state.data.insert(MARK_KEY.into(), m);
            }
            req.session = Some(SessionContext {
                state: Some(state),
                ..Default::default()
            });
        }
        req
    }

    #[test]
    fn a_spec_is_a_function_dynamic_tool() {
        let req = request(vec![spec("lookup", "Look up.")], None);
        assert_eq!(
            declared(&req),
            vec![json!({
                "type": "function",
                "name": "lookup",
                "description": "Look up.",
                "inputSchema": {"type": "object", "properties": {"order": {"type": "string"}}},
            })]
        );
        assert!(declared(&request(vec![], None)).is_empty());
    }

    #[test]
    fn calls_and_answers_have_the_protocol_shape() {
        let call = call_of(&json!({
            "threadId": "t", "turnId": "u", "callId": "call_1",
            "namespace": null, "tool": "lookup", "arguments": {"order": "A-17"}
        }))
        .unwrap();
        assert_eq!(call.call_id, "call_1");
        assert_eq!(call.tool, "lookup");
        assert_eq!(call.input, json!({"order": "A-17"}));
        assert!(!call.approved, "Codex asks nobody: the toolbox does");
        assert!(call_of(&json!({"tool": "lookup"})).is_none());
        assert!(call_of(&json!("no")).is_none());

        let ok = response(&HostToolResult::ok(json!({"status": "shipped"})));
        assert_eq!(
            ok,
            json!({"contentItems": [{"type": "inputText", "text": "{\"status\":\"shipped\"}"}], "success": true})
        );
        let denied = response(&HostToolResult::error(HostToolStatus::Denied, "denied"));
        assert_eq!(denied["success"], false);
        assert_eq!(denied["contentItems"][0]["text"], "denied");
    }

    #[test]
    fn a_resumed_thread_keeps_the_tools_it_started_with() {
        let tools = || vec![spec("lookup", "Look up.")];
        let started = mark(&declared(&request(tools(), None)));
        assert!(started.is_some());
        assert_eq!(mark(&[]), None);
        // A new thread declares whatever it likes.
        assert!(
            check_resumed(&request(tools(), None), &declared(&request(tools(), None))).is_none()
        );
        // The same tools again: fine (the handlers are this run's).
        let same = request(tools(), Some(started.clone()));
        assert!(check_resumed(&same, &declared(&same)).is_none());
        // Without tools on a thread without tools: fine.
        let none = request(vec![], Some(None));
        assert!(check_resumed(&none, &declared(&none)).is_none());
        // Another description, a tool added, or the tools dropped: refused.
        for (specs, was) in [
            (vec![spec("lookup", "Look an order up.")], started.clone()),
            (
                vec![spec("lookup", "Look up."), spec("ship", "Ship.")],
                started.clone(),
            ),
            (vec![], started.clone()),
            (tools(), None),
        ] {
            let req = request(specs, Some(was));
            let f = check_resumed(&req, &declared(&req)).expect("refused");
            assert_eq!(f.code, FailureCode::PolicyError);
            assert_eq!(f.metadata["reason"], "host_tools_changed");
        }
        // What the model does not see (trust, the output schema) may change.
        let mut relaxed = spec("lookup", "Look up.");
        relaxed.trusted = false;
        relaxed.output_schema = None;
        let req = request(vec![relaxed], Some(started));
        assert!(check_resumed(&req, &declared(&req)).is_none());
    }
}
