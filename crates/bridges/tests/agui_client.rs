//! The official `@ag-ui/client` 1.0 (`HttpAgent`; schema enforcement and its
//! event verifier on every event; any console warning is a failure) consumes
//! our AG-UI SSE: text, reasoning, tool call + result, approval interrupt +
//! resume, run error, client abort. Each test starts our server on
//! 127.0.0.1:0, runs `node tests/bridges/agui/agui-client.mjs <url>
//! <scenario>`, and asserts on its JSON report and on the server side.
//!
//! Auth is on, as in `agent-adaptor serve`: the handler sits behind a
//! bearer-token [`Guard`](agent_adaptor_bridges::guard::Guard), and the
//! client sends `Authorization: Bearer <token>` through `HttpAgent`'s
//! `headers`. Without it the client is refused (401) and nothing runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/agui_node.rs"]
mod agui_node;
#[path = "support/agui_server.rs"]
mod agui_server;
#[path = "support/auth.rs"]
mod auth;
#[path = "support/observations.rs"]
mod observations;

use std::sync::LazyLock;
use std::time::Duration;

use agent_adaptor_bridges::agui::SseOptions;
use agent_adaptor_bridges::guard::Token;
use agent_adaptor_core::FailureReason;
use agent_adaptor_core::driver::DecisionKind;
use agui_server::{TestServer, reason, serve_guarded};
use serde_json::{Value, json};

/// The token of every server here.
static TOKEN: LazyLock<Token> = LazyLock::new(auth::token);

/// Run the client on `scenario` with `options`, as given (no token added);
/// its report, whatever it says.
async fn report_of(url: &str, scenario: &str, options: &Value) -> (Value, String) {
    agui_node::require_node_package("@ag-ui/client");
    let script = agui_node::bridges_dir().join("agui/agui-client.mjs");
    let out = agui_node::run_node(
        &script,
        &[url.to_owned(), scenario.to_owned(), options.to_string()],
        Duration::from_secs(60),
    )
    .await;
    (out.json(), out.stderr)
}

/// Run the client with the token (`HttpAgent` `headers`); its report,
/// which must be free of problems.
async fn client(url: &str, scenario: &str, mut options: Value) -> Value {
    options["headers"] = json!({"Authorization": auth::bearer(&TOKEN)});
    let (report, stderr) = report_of(url, scenario, &options).await;
    assert!(
        report["ok"] == json!(true),
        "@ag-ui/client reported problems: {}\nstderr: {}",
        serde_json::to_string_pretty(&report["problems"]).unwrap(),
        stderr
    );
    report
}

fn types(run: &Value) -> Vec<&str> {
    run["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect()
}

fn events_of<'a>(run: &'a Value, ty: &str) -> Vec<&'a Value> {
    run["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == ty)
        .collect()
}

/// The client's reconstructed messages of `role`.
fn messages<'a>(report: &'a Value, role: &str) -> Vec<&'a Value> {
    report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .collect()
}

async fn start(driver: agent_adaptor_core::scripted::ScriptedDriver) -> TestServer {
    serve_guarded(driver, SseOptions::agui(), auth::guard(&TOKEN)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_token_the_client_is_refused_and_nothing_runs() {
    let t = start(agui_server::text_script()).await;
    let (report, _) = report_of(&t.url, "run", &json!({"prompt": "Say hello"})).await;
    assert_eq!(report["ok"], json!(false), "{report:#}");
    let run = &report["runs"][0];
    let failure = run["failure"].as_str().unwrap();
    assert!(failure.starts_with("HTTP 401"), "{report:#}");
    assert!(failure.contains("unauthorized"), "{report:#}");
    assert_eq!(run["types"], json!([]), "no event reached the client");
    assert_eq!(t.runs.count(), 0, "nothing ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_is_accepted_and_rebuilt_into_one_assistant_message() {
    let t = start(agui_server::text_script()).await;
    let report = client(
        &t.url,
        "run",
        json!({"prompt": "Say hello", "threadId": "t-text"}),
    )
    .await;
    let run = &report["runs"][0];
    assert_eq!(
        types(run),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    let finished = events_of(run, "RUN_FINISHED")[0];
    assert_eq!(finished["outcome"], json!({"type": "success"}));
    assert_eq!(finished["result"], json!("Hello, world"));
    let assistant = messages(&report, "assistant");
    assert_eq!(assistant.len(), 1);
    assert_eq!(assistant[0]["content"], "Hello, world");
    // The prompt reached the agent: the last user message's text.
    assert_eq!(t.runs.prompts(), ["Say hello"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_uses_the_1_0_reasoning_events() {
    let t = start(agui_server::reasoning_script()).await;
    let report = client(&t.url, "run", json!({})).await;
    let run = &report["runs"][0];
    assert_eq!(
        types(run),
        [
            "RUN_STARTED",
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    assert!(
        !types(run).iter().any(|t| t.starts_with("THINKING")),
        "no THINKING_* in 1.0"
    );
    let reasoning = messages(&report, "reasoning");
    assert_eq!(reasoning.len(), 1, "{:#}", report["messages"]);
    assert_eq!(reasoning[0]["content"], "Let me think about it.");
    assert_eq!(messages(&report, "assistant")[0]["content"], "42");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_and_its_result_become_a_tool_call_and_a_tool_message() {
    let t = start(agui_server::tool_script()).await;
    let report = client(&t.url, "run", json!({})).await;
    let run = &report["runs"][0];
    assert_eq!(
        types(run),
        [
            "RUN_STARTED",
            "STEP_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "STEP_FINISHED",
            "RUN_FINISHED"
        ]
    );
    // The client rebuilt the call with its full arguments …
    let calls: Vec<&Value> = messages(&report, "assistant")
        .into_iter()
        .filter_map(|m| m["toolCalls"].as_array())
        .flatten()
        .collect();
    assert_eq!(calls.len(), 1, "{:#}", report["messages"]);
    assert_eq!(calls[0]["id"], "call-1");
    assert_eq!(calls[0]["function"]["name"], "read_file");
    assert_eq!(
        serde_json::from_str::<Value>(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap(),
        json!({"path": "a.txt"})
    );
    // … and the result as a tool message.
    let tool = messages(&report, "tool");
    assert_eq!(tool.len(), 1);
    assert_eq!(tool[0]["toolCallId"], "call-1");
    assert_eq!(tool[0]["content"], "file contents");
}

async fn interrupt_round_trip(kind: DecisionKind, scenario: &str) -> (Value, TestServer) {
    let t = start(agui_server::approval_script(kind)).await;
    let report = client(
        &t.url,
        scenario,
        json!({"threadId": format!("t-{scenario}"), "answer": "b"}),
    )
    .await;
    (report, t)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_an_interrupt_and_the_resume_run_continues_the_waiting_agent_run() {
    let (report, t) = interrupt_round_trip(DecisionKind::Permission, "interrupt-approve").await;
    let (run1, run2) = (&report["runs"][0], &report["runs"][1]);
    // Run 1 ends with the interrupt, every lifecycle closed first (the open
    // tool call gets its complete arguments, then its end).
    assert_eq!(
        types(run1),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "RUN_FINISHED"
        ]
    );
    let outcome = &events_of(run1, "RUN_FINISHED")[0]["outcome"];
    assert_eq!(outcome["type"], "interrupt");
    let interrupt = &outcome["interrupts"][0];
    assert!(interrupt["id"].as_str().unwrap().starts_with("apr_"));
    assert_eq!(interrupt["reason"], "tool_approval");
    assert_eq!(interrupt["toolCallId"], "call-1");
    assert_eq!(interrupt["message"], "Allow bash to run `ls`?");
    assert_eq!(interrupt["responseSchema"]["required"], json!(["approved"]));
    assert!(interrupt["expiresAt"].is_string());
    // Run 2 (a new runId) continues the same agent run: the tool result and
    // the final text, then success.
    assert_ne!(run1["runId"], run2["runId"]);
    assert_eq!(
        types(run2),
        [
            "RUN_STARTED",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    assert_eq!(
        events_of(run2, "RUN_FINISHED")[0]["outcome"],
        json!({"type": "success"})
    );
    assert_eq!(report["pendingInterrupts"], json!([]));
    // One agent run served both AG-UI runs, and it got the approval.
    assert_eq!(t.runs.count(), 1, "the resume must not start a new run");
    let (outcome, _) = t.runs.outcome(0, Duration::from_secs(10)).await;
    let result = outcome.unwrap();
    assert_eq!(result.text, "There are two files.");
    assert_eq!(result.metadata["decision.0"], "approved");
    assert_eq!(t.handler.pending_interrupts(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_or_cancelled_interrupt_reaches_the_agent_as_a_rejection() {
    for scenario in ["interrupt-deny", "interrupt-cancel"] {
        let (report, t) = interrupt_round_trip(DecisionKind::Permission, scenario).await;
        assert_eq!(report["runs"].as_array().unwrap().len(), 2, "{scenario}");
        let (outcome, _) = t.runs.outcome(0, Duration::from_secs(10)).await;
        assert_eq!(
            outcome.unwrap().metadata["decision.0"],
            "rejected",
            "{scenario}"
        );
        assert_eq!(t.runs.count(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_interrupt_is_answered_with_a_choice() {
    let (report, t) = interrupt_round_trip(DecisionKind::Question, "interrupt-answer").await;
    let outcome = &events_of(&report["runs"][0], "RUN_FINISHED")[0]["outcome"];
    let interrupt = &outcome["interrupts"][0];
    assert_eq!(interrupt["reason"], "question");
    assert_eq!(interrupt["metadata"]["choices"][1]["key"], "b");
    assert_eq!(interrupt["responseSchema"]["required"], json!(["answer"]));
    let (outcome, _) = t.runs.outcome(0, Duration::from_secs(10)).await;
    assert_eq!(outcome.unwrap().metadata["decision.0"], "answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_failure_ends_with_run_error_and_its_reason() {
    let t = start(agui_server::error_script()).await;
    let report = client(&t.url, "run", json!({})).await;
    let run = &report["runs"][0];
    assert_eq!(
        types(run),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_ERROR"
        ]
    );
    let err = events_of(run, "RUN_ERROR")[0];
    assert_eq!(err["code"], "agent_error");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("the model is overloaded"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_run_ends_with_run_error_after_closing_the_open_message() {
    let t = start(agui_server::crash_script()).await;
    let report = client(&t.url, "run", json!({})).await;
    let run = &report["runs"][0];
    // The driver never closed m1: the bridge does, before the terminal.
    assert_eq!(
        types(run),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_ERROR"
        ]
    );
    let err = events_of(run, "RUN_ERROR")[0];
    assert_eq!(err["code"], "infrastructure_error");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("connection to the provider reset"),
        "{err}"
    );
    // The partial text still reached the client.
    assert_eq!(messages(&report, "assistant")[0]["content"], "Partial answ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_abort_cancels_the_run_on_the_server() {
    let t = start(agui_server::hanging_script()).await;
    let report = client(&t.url, "abort", json!({"waitMs": 300})).await;
    let run = &report["runs"][0];
    assert_eq!(
        types(run)[..3],
        ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    );
    assert!(
        !types(run).contains(&"RUN_FINISHED"),
        "the client aborted before any terminal"
    );
    // The agent run, which only ends when cancelled, was cancelled.
    let (outcome, _) = t.runs.outcome(0, Duration::from_secs(5)).await;
    assert_eq!(reason(&outcome), Some(FailureReason::Cancelled));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observations_pass_the_verifier_and_become_activity_and_subagent_messages() {
    let t = start(observations::observation_script()).await;
    let report = client(&t.url, "run", json!({"threadId": "t-observations"})).await;
    let run = &report["runs"][0];
    let ty = types(run);
    for want in [
        "ACTIVITY_SNAPSHOT",
        "SUBAGENT_STARTED",
        "SUBAGENT_FINISHED",
        "CUSTOM",
    ] {
        assert!(ty.contains(&want), "{want} missing from {ty:?}");
    }
    // The client kept one activity message per id, each at its last
    // snapshot: the todo list at revision 2, each invocation at its end,
    // the subagent's progress.
    let activities = messages(&report, "activity");
    let of = |kind: &str| -> Vec<&Value> {
        activities
            .iter()
            .copied()
            .filter(|m| m["activityType"] == kind)
            .collect()
    };
    let todo = of("todo");
    assert_eq!(todo.len(), 1, "{activities:#?}");
    assert_eq!(todo[0]["content"]["revision"], 2);
    assert_eq!(
        todo[0]["content"]["items"][1],
        json!({"id": "2", "content": "report", "status": "in_progress"})
    );
    let phases: Vec<&Value> = of("capability")
        .iter()
        .map(|m| &m["content"]["phase"])
        .collect();
    assert_eq!(phases, [&json!("completed"), &json!("failed")]);
    let progress = of("subagent");
    assert_eq!(progress.len(), 1);
    assert_eq!(progress[0]["subagentRunId"], observations::SCOPE);
    // The child's tool call and its result are the subagent's; the
    // parent's Task call is the main agent's.
    let tool = messages(&report, "tool");
    let child = tool.iter().find(|m| m["toolCallId"] == "child-1").unwrap();
    assert_eq!(child["subagentRunId"], observations::SCOPE);
    let parent = tool.iter().find(|m| m["toolCallId"] == "task-1").unwrap();
    assert!(parent.get("subagentRunId").is_none(), "{parent}");
    let carrier = messages(&report, "assistant")
        .into_iter()
        .find(|m| {
            m["toolCalls"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["id"] == "child-1"))
        })
        .unwrap();
    assert_eq!(carrier["subagentRunId"], observations::SCOPE);
    // The image came as the custom event.
    let image = events_of(run, "CUSTOM")[0];
    assert_eq!(image["name"], "agent_adaptor.image");
    assert_eq!(image["value"]["data"], observations::IMAGE_DATA);
    assert_eq!(
        messages(&report, "assistant").last().unwrap()["content"],
        observations::ANSWER
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_suspends_an_open_subagent_and_the_resuming_run_continues_it() {
    let t = start(observations::subagent_approval_script()).await;
    let report = client(
        &t.url,
        "interrupt-approve",
        json!({"threadId": "t-subagent-interrupt"}),
    )
    .await;
    let (run1, run2) = (&report["runs"][0], &report["runs"][1]);
    assert_eq!(
        types(run1),
        [
            "RUN_STARTED",
            "TOOL_CALL_START",
            "SUBAGENT_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "SUBAGENT_FINISHED",
            "RUN_FINISHED"
        ]
    );
    let interrupt = &events_of(run1, "RUN_FINISHED")[0]["outcome"]["interrupts"][0];
    let suspended = events_of(run1, "SUBAGENT_FINISHED")[0];
    assert_eq!(
        suspended["outcome"],
        json!({"type": "suspended", "interruptIds": [interrupt["id"].clone()]})
    );
    assert_eq!(interrupt["toolCallId"], "child-1");
    assert_eq!(
        types(run2),
        [
            "RUN_STARTED",
            "SUBAGENT_STARTED",
            "TOOL_CALL_RESULT",
            "SUBAGENT_FINISHED",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    let restarted = events_of(run2, "SUBAGENT_STARTED")[0];
    assert_eq!(restarted["subagentRunId"], observations::SCOPE);
    assert_eq!(
        events_of(run2, "SUBAGENT_FINISHED")[0]["outcome"],
        json!({"type": "success"})
    );
    let child_result = events_of(run2, "TOOL_CALL_RESULT")[0];
    assert_eq!(child_result["toolCallId"], "child-1");
    assert_eq!(child_result["subagentRunId"], observations::SCOPE);
}

/// A reply whose message id differs from the other scripts' (ids must be
/// unique across a thread's history).
fn second_reply() -> agent_adaptor_core::scripted::ScriptedDriver {
    use agent_adaptor_core::driver::{Response, StreamPayload};
    use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
    ScriptedDriver::new(
        vec![
            Step::Stream(StreamPayload::run_started()),
            Step::Stream(StreamPayload::text_start("m9")),
            Step::Stream(StreamPayload::text_content("m9", "You're welcome")),
            Step::Stream(StreamPayload::text_end("m9")),
            Step::Stream(StreamPayload::run_finished(None)),
        ],
        Ending::Respond(Box::new(Response {
            output: "You're welcome".into(),
            exit_code: Some(0),
            provider: "scripted".into(),
            ..Default::default()
        })),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reloaded_client_gets_the_thread_history_as_a_messages_snapshot() {
    // Two servers over one event log: the reloaded page reaches the other.
    let store = std::sync::Arc::new(agent_adaptor_core::MemoryStore::new());
    let options = || SseOptions::agui().event_log(store.clone());
    let a = serve_guarded(agui_server::tool_script(), options(), auth::guard(&TOKEN)).await;
    let b = serve_guarded(second_reply(), options(), auth::guard(&TOKEN)).await;
    let report = client(
        &a.url,
        "reload",
        json!({"prompt": "read a.txt", "second": "thanks", "url2": b.url}),
    )
    .await;
    for run in report["runs"].as_array().unwrap() {
        assert_eq!(types(run)[..2], ["RUN_STARTED", "MESSAGES_SNAPSHOT"]);
    }
    let pairs = |messages: &Value| -> Vec<(String, String)> {
        messages
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let text = m["content"].as_str().unwrap_or("").to_owned();
                (m["role"].as_str().unwrap().to_owned(), text)
            })
            .collect()
    };
    let want: Vec<(String, String)> = [
        ("user", "read a.txt"),
        ("assistant", "Let me look."),
        ("tool", "file contents"),
        ("assistant", "It says: file contents"),
        ("user", "thanks"),
        ("assistant", "You're welcome"),
    ]
    .iter()
    .map(|(r, t)| ((*r).to_owned(), (*t).to_owned()))
    .collect();
    // The fresh client knew nothing; the snapshot, in thread order, gave
    // it the first run and its own prompt …
    let snapshot = events_of(&report["runs"][1], "MESSAGES_SNAPSHOT")[0];
    assert_eq!(pairs(&snapshot["messages"]), want[..5]);
    // … and the client holds the whole conversation (it keeps its own
    // prompt where it had it).
    let mut got = pairs(&report["messages"]);
    let mut all = want.clone();
    got.sort();
    all.sort();
    assert_eq!(got, all, "{:#}", report["messages"]);
    let calls = messages(&report, "assistant")[0]["toolCalls"].clone();
    assert_eq!(calls[0]["id"], "call-1");
    assert_eq!(calls[0]["function"]["name"], "read_file");
}
