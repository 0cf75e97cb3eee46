//! The control protocol of the stream-json family (`--input-format
//! stream-json`): the frames the host writes, and the mapping between a
//! `can_use_tool` request and the SPI's human decisions — with each CLI's own
//! reply shape ([`PermissionReply`]).

use agent_adaptor_driver::{
    DecisionChoice, DecisionKind, DecisionRequest, DecisionResponse, DecisionResult,
    HOST_TOOL_SERVER,
};
use serde_json::{Map, Value, json};

use super::{Family, PermissionReply};

/// `initialize`, the first frame of a control session; `host_tools`
/// declares the run's SDK MCP server ([`HOST_TOOL_SERVER`]).
pub fn initialize_frame(
    request_id: &str,
    append_system_prompt: Option<&str>,
    host_tools: bool,
) -> String {
    let mut request = json!({"subtype": "initialize", "hooks": null});
    if let Some(text) = append_system_prompt {
        // CodeBuddy appends it to its system prompt (the SDK's field).
        request["appendSystemPrompt"] = text.into();
    }
    if host_tools {
        // The in-process servers the host answers `mcp_message` for (the
        // SDKs' field; both CLIs read it).
        request["sdkMcpServers"] = json!([HOST_TOOL_SERVER]);
    }
    json!({"type": "control_request", "request_id": request_id, "request": request}).to_string()
}

/// The user's prompt.
pub fn user_frame(prompt: &str) -> String {
    json!({"type": "user", "session_id": "", "message": {"role": "user", "content": prompt}, "parent_tool_use_id": null}).to_string()
}

/// `interrupt`: stop the current turn.
pub fn interrupt_frame(request_id: &str) -> String {
    json!({"type": "control_request", "request_id": request_id, "request": {"subtype": "interrupt"}}).to_string()
}

/// The decision a `can_use_tool` request asks for: `AskUserQuestion` is a
/// question, `ExitPlanMode` a plan review, any other tool a permission.
pub fn decision_for(family: &Family, request: &Value) -> DecisionRequest {
    let tool = request
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let input = request.get("input").cloned().unwrap_or(Value::Null);
    let kind = match tool {
        "AskUserQuestion" => DecisionKind::Question,
        "ExitPlanMode" => DecisionKind::PlanReview,
        _ => DecisionKind::Permission,
    };
    let mut d = DecisionRequest::new(kind, format!("{}.can_use_tool", family.driver_type));
    d.tool_call_id = request
        .get("tool_use_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    d.prompt = match kind {
        DecisionKind::Question => {
            first_question(&input).unwrap_or_else(|| "Answer the question".into())
        }
        DecisionKind::PlanReview => "Approve this plan?".into(),
        DecisionKind::Permission => request
            .get("description")
            .and_then(Value::as_str)
            .map_or_else(
                || format!("Allow {tool}?"),
                |desc| format!("Allow {tool}: {desc}?"),
            ),
    };
    if kind == DecisionKind::Question {
        d.choices = choices(&input);
    }
    d.payload = Some(json!({"tool_name": tool, "input": input}));
    d
}

fn first_question(input: &Value) -> Option<String> {
    input
        .get("questions")
        .and_then(Value::as_array)
        .and_then(|qs| qs.first())
        .and_then(|q| q.get("question"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn choices(input: &Value) -> Vec<DecisionChoice> {
    input
        .get("questions")
        .and_then(Value::as_array)
        .and_then(|qs| qs.first())
        .and_then(|q| q.get("options"))
        .and_then(Value::as_array)
        .map(|opts| {
            opts.iter()
                .filter_map(|o| {
                    let label = o.get("label").and_then(Value::as_str)?;
                    Some(DecisionChoice {
                        key: label.to_owned(),
                        label: label.to_owned(),
                        description: o
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The reply to a `can_use_tool` request, in the family's shape.
pub fn permission_reply(
    family: &Family,
    request_id: &str,
    request: &Value,
    decision: &DecisionResponse,
) -> String {
    let input = request.get("input").cloned().unwrap_or(Value::Null);
    let tool_use_id = request.get("tool_use_id").cloned().unwrap_or(Value::Null);
    let allowed = matches!(
        decision.result,
        DecisionResult::Approved | DecisionResult::Answered
    );
    let updated = match (decision.result, &input) {
        (DecisionResult::Answered, Value::Object(map)) => {
            let mut map: Map<String, Value> = map.clone();
            let question = first_question(&input).unwrap_or_default();
            let answer = if decision.choice.is_empty() {
                decision.text.clone()
            } else {
                decision.choice.clone()
            };
            map.insert("answers".into(), json!({ question: answer }));
            Value::Object(map)
        }
        _ => input,
    };
    let reason = if decision.text.is_empty() {
        format!("denied by the host ({})", decision.result.as_str())
    } else {
        decision.text.clone()
    };
    let body = match (family.permission, allowed) {
        (PermissionReply::Behavior, true) => json!({"behavior": "allow", "updatedInput": updated}),
        (PermissionReply::Behavior, false) => json!({"behavior": "deny", "message": reason}),
        (PermissionReply::Allowed, true) => {
            json!({"allowed": true, "updatedInput": updated, "tool_use_id": tool_use_id})
        }
        (PermissionReply::Allowed, false) => {
            json!({"allowed": false, "reason": reason, "interrupt": false})
        }
    };
    success_frame(request_id, body)
}

/// A success control response.
pub fn success_frame(request_id: &str, response: Value) -> String {
    json!({"type": "control_response", "response": {"subtype": "success", "request_id": request_id, "response": response}}).to_string()
}

/// The reply to a request the driver does not support: an error, except
/// `elicitation_create`, which CodeBuddy expects to be cancelled.
pub fn unsupported_reply(request_id: &str, subtype: &str) -> String {
    if subtype == "elicitation_create" {
        return success_frame(request_id, json!({"action": "cancel"}));
    }
    error_frame(
        request_id,
        &format!("{subtype} is not supported by agent-adaptor"),
    )
}

/// An error control response.
pub fn error_frame(request_id: &str, error: &str) -> String {
    json!({"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": error}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamjson::{CLAUDE, CODEBUDDY};

    fn resp(result: DecisionResult) -> DecisionResponse {
        DecisionResponse {
            request_id: "d".into(),
            result,
            choice: String::new(),
            answer: Default::default(),
            text: String::new(),
        }
    }

    fn body(frame: &str) -> Value {
        let v: Value = serde_json::from_str(frame).unwrap();
        v["response"]["response"].clone()
    }

    #[test]
    fn claude_and_codebuddy_reply_in_their_own_shapes() {
        let req = json!({"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "t1"});
        let a = body(&permission_reply(
            &CLAUDE,
            "r1",
            &req,
            &resp(DecisionResult::Approved),
        ));
        assert_eq!(
            a,
            json!({"behavior": "allow", "updatedInput": {"command": "ls"}})
        );
        let d = body(&permission_reply(
            &CLAUDE,
            "r1",
            &req,
            &resp(DecisionResult::Rejected),
        ));
        assert_eq!(d["behavior"], "deny");
        let a = body(&permission_reply(
            &CODEBUDDY,
            "r1",
            &req,
            &resp(DecisionResult::Approved),
        ));
        assert_eq!(
            a,
            json!({"allowed": true, "updatedInput": {"command": "ls"}, "tool_use_id": "t1"})
        );
        let d = body(&permission_reply(
            &CODEBUDDY,
            "r1",
            &req,
            &resp(DecisionResult::TimedOut),
        ));
        assert_eq!(d["allowed"], false);
        assert!(d["reason"].as_str().unwrap().contains("timed_out"));
    }

    #[test]
    fn tools_map_to_decision_kinds() {
        let q = json!({"tool_name": "AskUserQuestion", "input": {"questions": [{"question": "Which DB?", "options": [{"label": "pg"}, {"label": "sqlite"}]}]}, "tool_use_id": "t2"});
        let d = decision_for(&CLAUDE, &q);
        assert_eq!(d.kind, DecisionKind::Question);
        assert_eq!(d.prompt, "Which DB?");
        assert_eq!(d.choices.len(), 2);
        let mut answer = resp(DecisionResult::Answered);
        answer.choice = "pg".into();
        let b = body(&permission_reply(&CLAUDE, "r", &q, &answer));
        assert_eq!(b["updatedInput"]["answers"]["Which DB?"], "pg");
        let p = decision_for(&CLAUDE, &json!({"tool_name": "ExitPlanMode"}));
        assert_eq!(p.kind, DecisionKind::PlanReview);
        let b = decision_for(
            &CODEBUDDY,
            &json!({"tool_name": "Bash", "tool_use_id": "x"}),
        );
        assert_eq!(
            (b.kind, b.tool_call_id.as_str(), b.source.as_str()),
            (DecisionKind::Permission, "x", "codebuddy.can_use_tool")
        );
    }

    #[test]
    fn initialize_declares_the_sdk_server_only_with_host_tools() {
        let with: Value = serde_json::from_str(&initialize_frame("i", None, true)).unwrap();
        assert_eq!(with["request"]["sdkMcpServers"], json!(["agent-adaptor"]));
        let without: Value =
            serde_json::from_str(&initialize_frame("i", Some("be brief"), false)).unwrap();
        assert!(without["request"].get("sdkMcpServers").is_none());
        assert_eq!(without["request"]["appendSystemPrompt"], "be brief");
    }

    #[test]
    fn unsupported_requests_get_an_error_or_a_cancel() {
        let e: Value = serde_json::from_str(&unsupported_reply("r", "hook_callback")).unwrap();
        assert_eq!(e["response"]["subtype"], "error");
        let c = body(&unsupported_reply("r", "elicitation_create"));
        assert_eq!(c["action"], "cancel");
    }
}
