//! The ACP server over an in-memory duplex against the scripted driver:
//! the handshake, updates in order, tool calls, the permission round trip
//! (allow, always allow, reject, cancelled), cancel, load with replay, the
//! refusals and errors, and the end of input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/acp_client.rs"]
mod acp_client;

use std::path::PathBuf;
use std::sync::Arc;

use acp_client::{AcpClient, kinds, message_text};
use agent_adaptor_bridges::acp::{AcpServer, HistoryEntry, HistoryReader};
use agent_adaptor_core::driver::{
    Checkpoint, DecisionChoice, DecisionKind, DecisionRequest, RawStreams, Response, SessionState,
    StandardSessionCodec, StreamPayload, TerminalPayload,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::{Agent, MemoryStore, ThreadStore};
use serde_json::{Value, json};

fn cwd() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn reply(text: &str) -> Ending {
    Ending::Respond(Box::new(Response {
        output: text.into(),
        provider: "scripted".into(),
        exit_code: Some(0),
        ..Default::default()
    }))
}

fn text_steps(id: &str, chunks: &[&str]) -> Vec<Step> {
    let mut steps = vec![Step::Stream(StreamPayload::text_start(id))];
    steps.extend(
        chunks
            .iter()
            .map(|c| Step::Stream(StreamPayload::text_content(id, *c))),
    );
    steps.push(Step::Stream(StreamPayload::text_end(id)));
    steps
}

fn asks(kind: DecisionKind, choices: Vec<DecisionChoice>) -> ScriptedDriver {
    asks_ending(kind, choices, reply("done"))
}

/// A driver that asks `kind` once per run, then ends with `ending`.
fn asks_ending(kind: DecisionKind, choices: Vec<DecisionChoice>, ending: Ending) -> ScriptedDriver {
    let mut d = DecisionRequest::new(kind, "scripted.can_use_tool");
    d.tool_call_id = "call_1".into();
    d.prompt = "Allow Bash: ls?".into();
    d.payload = Some(json!({"tool_name": "Bash", "input": {"command": "ls"}}));
    d.choices = choices;
    let mut steps = vec![Step::Stream(StreamPayload::run_started()), Step::Decide(d)];
    steps.extend(text_steps("m1", &["done"]));
    steps.push(Step::Stream(StreamPayload::run_finished(None)));
    ScriptedDriver::new(steps, ending).with_run_policy(ScriptedDriver::ROUTED_DECISIONS)
}

fn code(frame: &Value) -> i64 {
    frame["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error: {frame}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_its_updates_in_order_then_ends_the_turn() {
    let agent = Agent::new(ScriptedDriver::text_chunks(&["Hel", "lo, ", "world"]));
    let mut c = AcpClient::start(AcpServer::new(agent));
    // A client asking another version gets 1; no threads, no load.
    let id = c.send("initialize", json!({"protocolVersion": 7})).await;
    let (_, init) = c.response(id).await;
    assert_eq!(init["result"]["protocolVersion"], 1);
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], false);
    assert_eq!(
        init["result"]["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
        true
    );
    let id = c
        .send("session/new", json!({"cwd": cwd(), "mcpServers": []}))
        .await;
    let (_, new) = c.response(id).await;
    let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    let (updates, answer) = c.response(id).await;
    assert_eq!(
        message_text(&updates, "agent_message_chunk"),
        ["Hel", "lo, ", "world"]
    );
    assert!(
        updates
            .iter()
            .all(|u| u["params"]["sessionId"] == session.as_str())
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        answer["result"]["_meta"]["agentAdaptor"]["runId"]
            .as_str()
            .unwrap()
            .starts_with("run_")
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_and_reasoning_become_their_updates() {
    let mut steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Stream(StreamPayload::reasoning_start("r1")),
        Step::Stream(StreamPayload::reasoning_content("r1", "thinking")),
        Step::Stream(StreamPayload::reasoning_end("r1")),
        Step::Stream(StreamPayload::tool_call_start("t1", "Read", None)),
        Step::Stream(StreamPayload::tool_call_args("t1", "{\"file_path\":")),
        Step::Stream(StreamPayload::tool_call_args("t1", "\"/w/a.rs\"}")),
        Step::Stream(StreamPayload::tool_call_end("t1", None)),
        Step::Stream(StreamPayload::tool_call_result(
            "t1",
            Some(json!("fn main() {}")),
        )),
        Step::Stream(StreamPayload::tool_call_start(
            "t2",
            "Bash",
            Some(json!({"command": "ls"})),
        )),
        Step::Stream(StreamPayload::tool_call_end("t2", Some(json!("a.rs")))),
    ];
    steps.extend(text_steps("m1", &["ok"]));
    steps.push(Step::Stream(StreamPayload::run_finished(None)));
    let agent = Agent::new(ScriptedDriver::new(steps, reply("ok")));
    let mut c = AcpClient::start(AcpServer::new(agent));
    let session = c.new_session(&cwd()).await;
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await;
    let (updates, answer) = c.response(id).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(
        kinds(&updates),
        [
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "tool_call_update",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    let u: Vec<&Value> = updates.iter().map(|f| &f["params"]["update"]).collect();
    assert_eq!(u[0]["content"]["text"], "thinking");
    // `pending` (its arguments still stream) is the default, left out.
    assert_eq!(
        (&u[1]["toolCallId"], &u[1]["kind"], &u[1]["status"]),
        (&json!("t1"), &json!("read"), &Value::Null)
    );
    assert_eq!(u[2]["rawInput"], json!({"file_path": "/w/a.rs"}));
    assert_eq!(u[2]["locations"][0]["path"], "/w/a.rs");
    assert_eq!(u[3]["status"], "completed");
    assert_eq!(u[3]["rawOutput"], "fn main() {}");
    assert_eq!(u[3]["content"][0]["content"]["text"], "fn main() {}");
    assert_eq!(
        (&u[4]["kind"], &u[4]["status"], &u[4]["rawInput"]),
        (
            &json!("execute"),
            &json!("in_progress"),
            &json!({"command": "ls"})
        )
    );
    assert_eq!(
        (&u[5]["status"], &u[5]["rawOutput"]),
        (&json!("completed"), &json!("a.rs"))
    );
    c.close().await.unwrap();
}

/// Run one turn of a driver that asks for permission; answer the request
/// with `outcome`: the request, the prompt's answer.
async fn permission_turn(c: &mut AcpClient, session: &str, outcome: Value) -> (Value, Value) {
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "ls"}]}),
        )
        .await;
    let (_, ask) = c
        .until(|f| f["method"] == "session/request_permission")
        .await;
    c.answer(&ask["id"], json!({"outcome": outcome})).await;
    let (_, answer) = c.response(id).await;
    (ask, answer)
}

fn decision(answer: &Value) -> &Value {
    &answer["result"]["_meta"]["agentAdaptor"]["metadata"]["decision.0"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_round_trip_allows_rejects_and_cancels() {
    let agent = Agent::new(asks(DecisionKind::Permission, Vec::new()));
    let mut c = AcpClient::start(AcpServer::new(agent));
    let session = c.new_session(&cwd()).await;

    let selected = |o: &str| json!({"outcome": "selected", "optionId": o});
    let (ask, answer) = permission_turn(&mut c, &session, selected("allow_once")).await;
    let p = &ask["params"];
    assert_eq!(p["sessionId"], session.as_str());
    assert_eq!(p["toolCall"]["toolCallId"], "call_1");
    assert_eq!(p["toolCall"]["title"], "Allow Bash: ls?");
    assert_eq!(p["toolCall"]["kind"], "execute");
    assert_eq!(p["toolCall"]["rawInput"], json!({"command": "ls"}));
    let offered: Vec<(&str, &str)> = p["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["optionId"].as_str().unwrap(), o["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        offered,
        [
            ("allow_once", "allow_once"),
            ("allow_always", "allow_always"),
            ("reject_once", "reject_once")
        ]
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(decision(&answer), "approved");

    let (_, answer) = permission_turn(&mut c, &session, selected("reject_once")).await;
    assert_eq!(decision(&answer), "rejected", "{answer}");
    let (_, answer) = permission_turn(&mut c, &session, json!({"outcome": "cancelled"})).await;
    assert_eq!(decision(&answer), "rejected", "{answer}");
    // An option that was not offered is no approval.
    let (_, answer) = permission_turn(&mut c, &session, selected("yes_please")).await;
    assert_eq!(decision(&answer), "rejected", "{answer}");

    // "Always allow": approved, and the next request for the tool is not asked.
    let (_, answer) = permission_turn(&mut c, &session, selected("allow_always")).await;
    assert_eq!(decision(&answer), "approved");
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "ls"}]}),
        )
        .await;
    let (frames, answer) = c.response(id).await;
    assert!(
        frames
            .iter()
            .all(|f| f["method"] != "session/request_permission")
    );
    assert_eq!(decision(&answer), "approved");
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_offers_its_choices() {
    let choices = vec![
        DecisionChoice {
            key: "red".into(),
            label: "Red".into(),
            description: String::new(),
        },
        DecisionChoice {
            key: "blue".into(),
            label: "Blue".into(),
            description: String::new(),
        },
    ];
    let agent = Agent::new(asks(DecisionKind::Question, choices));
    let mut c = AcpClient::start(AcpServer::new(agent));
    let session = c.new_session(&cwd()).await;
    let (ask, answer) = permission_turn(
        &mut c,
        &session,
        json!({"outcome": "selected", "optionId": "choice:blue"}),
    )
    .await;
    let ids: Vec<&str> = ask["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["choice:red", "choice:blue", "reject_once"]);
    assert_eq!(decision(&answer), "answered", "{answer}");
    c.close().await.unwrap();
}

fn waits_for_cancel() -> ScriptedDriver {
    let mut steps = vec![Step::Stream(StreamPayload::run_started())];
    steps.extend(text_steps("m1", &["working"]));
    steps.push(Step::WaitForCancel);
    ScriptedDriver::new(steps, reply("never"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_the_turn_as_cancelled_and_the_session_goes_on() {
    let agent = Agent::new(waits_for_cancel());
    let mut c = AcpClient::start(AcpServer::new(agent));
    let session = c.new_session(&cwd()).await;
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]});
    let id = c.send("session/prompt", prompt.clone()).await;
    c.until(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .await;
    // A second prompt while one runs is refused.
    let busy = c.send("session/prompt", prompt.clone()).await;
    let (_, refused) = c.response(busy).await;
    assert_eq!(code(&refused), -32600);
    c.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let (_, answer) = c.response(id).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    // Cancelled right after it was sent (no update awaited): still cancelled.
    let id = c.send("session/prompt", prompt).await;
    c.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let (_, answer) = c.response(id).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_denies_an_open_permission_request() {
    let mut d = DecisionRequest::new(DecisionKind::Permission, "scripted.can_use_tool");
    d.prompt = "Allow?".into();
    let steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Decide(d),
        Step::WaitForCancel,
    ];
    let driver =
        ScriptedDriver::new(steps, reply("x")).with_run_policy(ScriptedDriver::ROUTED_DECISIONS);
    let mut c = AcpClient::start(AcpServer::new(Agent::new(driver)));
    let session = c.new_session(&cwd()).await;
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "x"}]}),
        )
        .await;
    c.until(|f| f["method"] == "session/request_permission")
        .await;
    // The client cancels and never answers the permission request.
    c.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let (_, answer) = c.response(id).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_cancels_the_runs_and_ends_the_server() {
    let agent = Agent::new(waits_for_cancel());
    let mut c = AcpClient::start(AcpServer::new(agent));
    let session = c.new_session(&cwd()).await;
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}),
        )
        .await;
    c.until(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .await;
    c.close().await.unwrap();
    // The turn was answered (cancelled) before the output closed.
    let (_, answer) = c.response(id).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    assert!(c.next().await.is_none());
}

fn history() -> HistoryReader {
    Arc::new(|state| {
        Some(vec![
            HistoryEntry::User(format!("earlier, in {}", state.resume_id)),
            HistoryEntry::ToolCall {
                id: "c1".into(),
                name: "Read".into(),
                input: Some(json!({"path": "/w/a.rs"})),
            },
            HistoryEntry::ToolResult {
                id: "c1".into(),
                output: json!("text"),
                is_error: false,
            },
            HistoryEntry::Agent("an answer".into()),
        ])
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_replays_the_stored_thread_before_answering_then_continues_it() {
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::builder(ScriptedDriver::resumable_reply("hello", "provider-s1"))
        .thread_store(store.clone())
        .build()
        .unwrap();
    let server = AcpServer::with_threads(agent).history(history());
    let mut c = AcpClient::start(server.clone());
    let session = c.new_session(&cwd()).await;
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    let (_, answer) = c.response(id).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    c.close().await.unwrap();

    // A new connection (the editor restarted) loads the session.
    let mut c = AcpClient::start(server);
    let id = c.send("initialize", json!({"protocolVersion": 1})).await;
    let (_, init) = c.response(id).await;
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
    let id = c
        .send(
            "session/load",
            json!({"sessionId": session, "cwd": cwd(), "mcpServers": []}),
        )
        .await;
    let (replayed, loaded) = c.response(id).await;
    assert!(loaded["result"].is_object(), "{loaded}");
    assert_eq!(
        kinds(&replayed),
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    assert_eq!(
        message_text(&replayed, "user_message_chunk"),
        ["earlier, in provider-s1"]
    );
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "again"}]}),
        )
        .await;
    let (_, answer) = c.response(id).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        store.records().len(),
        2,
        "the thread went on (one archived)"
    );

    // An unknown session is not found.
    let id = c
        .send(
            "session/load",
            json!({"sessionId": "acp-nope", "cwd": cwd(), "mcpServers": []}),
        )
        .await;
    let (_, missing) = c.response(id).await;
    assert_eq!(code(&missing), -32002, "{missing}");
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_the_json_rpc_error_it_deserves() {
    let agent = Agent::new(ScriptedDriver::text_reply("x"));
    let mut c = AcpClient::start(AcpServer::new(agent));
    c.send_line("{this is not json").await;
    let frame = c.next().await.unwrap();
    assert_eq!((code(&frame), &frame["id"]), (-32700, &Value::Null));
    c.send_line(r#"{"id":1,"method":"initialize"}"#).await;
    assert_eq!(code(&c.next().await.unwrap()), -32600);
    let id = c.send("session/set_mode", json!({})).await;
    assert_eq!(code(&c.response(id).await.1), -32601);
    // session/load is not offered without threads.
    let id = c
        .send(
            "session/load",
            json!({"sessionId": "s", "cwd": cwd(), "mcpServers": []}),
        )
        .await;
    assert_eq!(code(&c.response(id).await.1), -32601);
    let id = c
        .send(
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
        )
        .await;
    assert_eq!(code(&c.response(id).await.1), -32602);
    let id = c
        .send(
            "session/new",
            json!({"cwd": "/no/such/dir/anywhere", "mcpServers": []}),
        )
        .await;
    assert_eq!(code(&c.response(id).await.1), -32602);
    let id = c.send("session/new", json!({"mcpServers": []})).await;
    assert_eq!(code(&c.response(id).await.1), -32602);
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": "acp-unknown", "prompt": [{"type": "text", "text": "x"}]}),
        )
        .await;
    assert_eq!(code(&c.response(id).await.1), -32002);
    let session = c.new_session(&cwd()).await;
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
        )
        .await;
    assert_eq!(code(&c.response(id).await.1), -32602);
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": []}),
        )
        .await;
    assert_eq!(code(&c.response(id).await.1), -32602);
    // Embedded text resources and links are prompt text.
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "resource_link", "name": "a.rs", "uri": "file:///w/a.rs"},
                {"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}}
            ]}),
        )
        .await;
    assert_eq!(c.response(id).await.1["result"]["stopReason"], "end_turn");
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_the_driver_cannot_carry_is_refused_at_session_new() {
    // The scripted driver declares no MCP transport.
    let agent = Agent::new(ScriptedDriver::text_reply("x"));
    let mut c = AcpClient::start(AcpServer::new(agent));
    let id = c.send("initialize", json!({"protocolVersion": 1})).await;
    let (_, init) = c.response(id).await;
    let mcp = &init["result"]["agentCapabilities"]["mcpCapabilities"];
    assert_eq!((&mcp["http"], &mcp["sse"]), (&json!(false), &json!(false)));
    let servers = [
        (
            json!({"type": "http", "name": "docs", "url": "http://127.0.0.1:9/mcp", "headers": []}),
            "mcp.http",
        ),
        (
            json!({"name": "files", "command": "/bin/true", "args": [], "env": []}),
            "mcp.stdio",
        ),
    ];
    for (server, capability) in servers {
        let id = c
            .send("session/new", json!({"cwd": cwd(), "mcpServers": [server]}))
            .await;
        let (_, refused) = c.response(id).await;
        assert_eq!(code(&refused), -32602, "{refused}");
        assert_eq!(refused["error"]["data"]["reason"], "capability_unsupported");
        let message = refused["error"]["data"]["message"].as_str().unwrap();
        assert!(message.contains(capability), "{message}");
    }
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_is_a_json_rpc_error_with_its_typed_reason() {
    let steps = vec![Step::Stream(StreamPayload::run_started())];
    let agent = Agent::new(ScriptedDriver::new(
        steps,
        Ending::Fail("model HTTP 500".into()),
    ));
    let mut c = AcpClient::start(AcpServer::new(agent));
    let session = c.new_session(&cwd()).await;
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "x"}]}),
        )
        .await;
    let (_, failed) = c.response(id).await;
    assert_eq!(code(&failed), -32603, "{failed}");
    let data = &failed["error"]["data"];
    assert!(
        data["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{failed}"
    );
    assert!(
        data["message"].as_str().unwrap().contains("model HTTP 500"),
        "{failed}"
    );
    assert!(data["runId"].as_str().unwrap().starts_with("run_"));
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_s_mcp_servers_and_cwd_reach_every_run() {
    let mut descriptor = agent_adaptor_core::driver::Descriptor::new("scripted", "Scripted");
    descriptor.mcp.stdio = true;
    descriptor.mcp.http = true;
    descriptor.mcp.headers = true;
    let driver = ScriptedDriver::text_reply("ok").with_descriptor(descriptor);
    let mut c = AcpClient::start(AcpServer::new(Agent::new(driver.clone())));
    let id = c.send("initialize", json!({"protocolVersion": 1})).await;
    let (_, init) = c.response(id).await;
    let mcp = &init["result"]["agentCapabilities"]["mcpCapabilities"];
    assert_eq!((&mcp["http"], &mcp["sse"]), (&json!(true), &json!(false)));
    let servers = json!([
        {"type": "http", "name": "docs", "url": "http://127.0.0.1:9/mcp",
         "headers": [{"name": "X-Team", "value": "core"}]},
        {"name": "files", "command": "/bin/true", "args": ["-x"], "env": [{"name": "K", "value": "v"}]},
    ]);
    let id = c
        .send("session/new", json!({"cwd": cwd(), "mcpServers": servers}))
        .await;
    let (_, new) = c.response(id).await;
    let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "x"}]}),
        )
        .await;
    assert_eq!(c.response(id).await.1["result"]["stopReason"], "end_turn");
    let requests = driver.recorded_requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        request.workspace.as_deref(),
        Some(std::fs::canonicalize(cwd()).unwrap().as_path())
    );
    let got = serde_json::to_value(&request.mcp_servers).unwrap();
    assert_eq!(
        got,
        json!([
            {"name": "docs", "transport": {"type": "http", "url": "http://127.0.0.1:9/mcp",
             "headers": {"X-Team": "core"}}},
            {"name": "files", "transport": {"type": "stdio", "command": "/bin/true", "args": ["-x"],
             "env": {"K": "v"}}},
        ])
    );
    // An SSE server is not carried by this driver.
    let id = c
        .send(
            "session/new",
            json!({"cwd": cwd(), "mcpServers": [{"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}]}),
        )
        .await;
    let (_, refused) = c.response(id).await;
    assert!(
        refused["error"]["data"]["message"]
            .as_str()
            .unwrap()
            .contains("mcp.sse"),
        "{refused}"
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_answered_with_an_error_or_garbage_is_a_denial() {
    let agent = Agent::new(asks(DecisionKind::Permission, Vec::new()));
    let mut c = AcpClient::start(AcpServer::new(agent));
    let session = c.new_session(&cwd()).await;
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "ls"}]});

    let id = c.send("session/prompt", prompt.clone()).await;
    let (_, ask) = c
        .until(|f| f["method"] == "session/request_permission")
        .await;
    // An answer to a request the server never sent is ignored.
    c.answer(
        &json!(987_654),
        json!({"outcome": {"outcome": "cancelled"}}),
    )
    .await;
    let error = json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -32603, "message": "UI crashed"}});
    c.send_line(&error.to_string()).await;
    let (_, answer) = c.response(id).await;
    assert_eq!(decision(&answer), "rejected", "{answer}");

    let id = c.send("session/prompt", prompt).await;
    let (_, ask) = c
        .until(|f| f["method"] == "session/request_permission")
        .await;
    c.answer(&ask["id"], json!({"outcome": "not an outcome"}))
        .await;
    let (_, answer) = c.response(id).await;
    assert_eq!(decision(&answer), "rejected", "{answer}");
    c.close().await.unwrap();
}

/// [`asks`] for a permission, resumable: a session served as a thread.
fn thread_asks() -> ScriptedDriver {
    let terminal = json!({"type": "result", "result": "done"}).to_string();
    let ending = Ending::Respond(Box::new(Response {
        output: "done".into(),
        raw: RawStreams {
            stdout: format!("{terminal}\n").into(),
            stderr: Default::default(),
            terminal: TerminalPayload::new("result", &terminal).ok(),
        },
        provider: "scripted".into(),
        exit_code: Some(0),
        checkpoint: Some(Checkpoint::valid(SessionState {
            resume_id: "s1".into(),
            display_id: "s1".into(),
            data: Default::default(),
        })),
        ..Default::default()
    }));
    asks_ending(DecisionKind::Permission, Vec::new(), ending).with_resume(
        Arc::new(StandardSessionCodec::new("scripted")),
        "scripted-config-v1",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_allow_in_a_thread_session_is_the_threads_grant() {
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::builder(thread_asks())
        .thread_store(store.clone())
        .build()
        .unwrap();
    let mut c = AcpClient::start(AcpServer::with_threads(agent));
    let session = c.new_session(&cwd()).await;
    let selected = json!({"outcome": "selected", "optionId": "allow_always"});
    let (ask, answer) = permission_turn(&mut c, &session, selected).await;
    let always = &ask["params"]["options"][1];
    assert_eq!(
        (&always["kind"], &always["name"]),
        (
            &json!("allow_always"),
            &json!("Always allow Bash in this thread")
        )
    );
    assert_eq!(decision(&answer), "approved", "{answer}");
    // The grant is the thread's, in its store.
    let policy = store.thread_policy(&session).await.unwrap();
    assert_eq!(policy.always_allowed, ["Bash"]);

    // The next turn is not asked: core's policy approves it.
    let id = c
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "ls"}]}),
        )
        .await;
    let (frames, answer) = c.response(id).await;
    assert!(
        frames
            .iter()
            .all(|f| f["method"] != "session/request_permission")
    );
    assert_eq!(decision(&answer), "approved", "{answer}");
    c.close().await.unwrap();
}
