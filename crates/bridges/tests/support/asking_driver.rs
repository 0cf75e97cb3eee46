//! A resumable scripted driver that asks for Bash once per run, the
//! thread run "always allow" needs.

use std::sync::Arc;

use agent_adaptor_core::driver::{
    Checkpoint, DecisionKind, DecisionRequest, RawStreams, Response, SessionState,
    StandardSessionCodec, StreamPayload, TerminalPayload,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use serde_json::json;

/// Asks "Allow Bash?" (tool call `t1`, command `ls`), then ends with
/// "done" and a valid checkpoint, so a thread can continue.
pub fn asking_driver() -> ScriptedDriver {
    let mut ask = DecisionRequest::new(DecisionKind::Permission, "claude.can_use_tool");
    ask.prompt = "Allow Bash?".into();
    ask.tool_call_id = "t1".into();
    ask.payload = Some(json!({"tool_name": "Bash", "input": {"command": "ls"}}));
    let steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Decide(ask),
        Step::Stream(StreamPayload::run_finished(None)),
    ];
    let terminal = json!({"type": "result", "result": "done"}).to_string();
    let resp = Response {
        output: "done".into(),
        raw: RawStreams {
            stdout: format!("{terminal}\n").into(),
            stderr: Default::default(),
            terminal: TerminalPayload::new("result", &terminal).ok(),
        },
        exit_code: Some(0),
        provider: "scripted".into(),
        checkpoint: Some(Checkpoint::valid(SessionState {
            resume_id: "s1".into(),
            display_id: "s1".into(),
            data: Default::default(),
        })),
        ..Default::default()
    };
    ScriptedDriver::new(steps, Ending::Respond(Box::new(resp))).with_resume(
        Arc::new(StandardSessionCodec::new("scripted")),
        "scripted-config-v1",
    )
}
