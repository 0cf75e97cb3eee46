//! `agent-adaptor serve` (playground): the page, the thread API, AG-UI with
//! an approval interrupt and its resume, raw SSE, the A2A card — and the web
//! chat driven in headless Chromium (support/browser.rs; screenshots in
//! `target/cli-web/web-chat-*.png`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(feature = "postgres-tests")]
#[path = "../../bridges/tests/support/a2a_peers.rs"]
mod a2a_peers;
mod support;

use std::path::Path;

use serde_json::{Value, json};

use support::server::{Server, post_sse, serve_with, sse_data as sse_events};

fn serve(home: &Path) -> Server {
    serve_with(home, &[])
}

async fn agui(client: &reqwest::Client, base: &str, input: Value) -> Vec<Value> {
    sse_events(&post_sse(client, format!("{base}/agui"), &input).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_speaks_agui_raw_sse_and_a2a_and_lists_threads() {
    let home = tempfile::tempdir().unwrap();
    let server = serve(home.path());
    let base = server.base.clone();
    let client = server.client();

    let page = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("<title>agent-adaptor</title>")
    );
    let info = server.get_json("/api/info").await;
    assert_eq!(info["playground"], true);
    assert_eq!(info["driver"], "llm");
    assert_eq!(info["model"], "playground");
    let shown = info.to_string();
    assert!(
        !shown.contains('/') && !shown.contains("sqlite"),
        "the page's info names no path or store: {shown}"
    );

    // AG-UI: the tool call ends the first AG-UI run with an interrupt.
    let messages = json!([{"id": "m1", "role": "user", "content": "hi from a test"}]);
    let first = agui(
        &client,
        &base,
        json!({"threadId": "t-1", "runId": "r-1", "messages": messages}),
    )
    .await;
    let types: Vec<&str> = first.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"RUN_STARTED"));
    assert!(types.contains(&"TOOL_CALL_START"), "{types:?}");
    let finished = first.last().unwrap();
    assert_eq!(finished["outcome"]["type"], "interrupt", "{finished}");
    let interrupt = &finished["outcome"]["interrupts"][0];
    assert_eq!(interrupt["reason"], "tool_approval");
    // Not listed while the run is parked (nothing persisted yet).
    let threads = server.get_json("/api/threads").await;
    assert_eq!(threads["threads"], json!([]));

    // The resume approves; the same core run goes on.
    let resumed = agui(
        &client,
        &base,
        json!({"threadId": "t-1", "runId": "r-2", "messages": messages,
               "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": true}}]}),
    )
    .await;
    let types: Vec<&str> = resumed
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"TOOL_CALL_RESULT"), "{types:?}");
    assert!(types.contains(&"REASONING_MESSAGE_CONTENT"), "{types:?}");
    let text: String = resumed
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert!(
        text.starts_with("Hello! I am the agent-adaptor playground"),
        "{text}"
    );
    assert_eq!(resumed.last().unwrap()["outcome"]["type"], "success");

    let threads = server.get_json("/api/threads").await;
    assert_eq!(threads["threads"][0]["id"], "t-1", "{threads}");
    assert_eq!(threads["threads"][0]["title"], "hi from a test");
    let thread = server.get_json("/api/threads/t-1").await;
    assert_eq!(thread["messages"][0]["text"], "hi from a test");
    assert_eq!(thread["title"], "hi from a test");
    // The transcript is the live frames again, in order: the prompt, the
    // tool call, the interrupt, its decision, then the resumed run with
    // the tool's result and the answer with its usage.
    let transcript = thread["transcript"].as_array().unwrap();
    let steps: Vec<String> = transcript
        .iter()
        .map(|i| match i["kind"].as_str().unwrap() {
            "frame" => {
                let ev = &i["event"];
                match ev["outcome"]["type"].as_str() {
                    Some(outcome) => format!("{}:{outcome}", ev["type"].as_str().unwrap()),
                    None => ev["type"].as_str().unwrap().to_owned(),
                }
            }
            "decision" => format!("decision:{}", i["result"].as_str().unwrap()),
            other => other.to_owned(),
        })
        .filter(|s| !s.ends_with("_CONTENT") && !s.ends_with("_ARGS"))
        .collect();
    let at = |step: &str| {
        steps
            .iter()
            .position(|s| s == step)
            .unwrap_or_else(|| panic!("{step} in {steps:?}"))
    };
    assert_eq!(steps[0], "prompt", "{steps:?}");
    assert!(at("TOOL_CALL_START") < at("RUN_FINISHED:interrupt"));
    assert!(at("RUN_FINISHED:interrupt") < at("decision:approved"));
    assert!(at("decision:approved") < at("TOOL_CALL_RESULT"));
    assert!(at("TOOL_CALL_RESULT") < at("RUN_FINISHED:success"));
    let finished = transcript.last().unwrap();
    assert_eq!(
        finished["event"]["usage"][0]["inputTokens"], 160,
        "{finished}"
    );
    let live: Vec<&Value> = resumed
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .collect();
    let logged: Vec<&Value> = transcript
        .iter()
        .filter(|i| i["event"]["type"] == "TOOL_CALL_RESULT")
        .map(|i| &i["event"])
        .collect();
    assert_eq!(live, logged, "the same frames as live");

    // Rename (kept apart from the driver's record: it survives turns),
    // then delete.
    let renamed = client
        .patch(format!("{base}/api/threads/t-1"))
        .header("origin", &base)
        .json(&json!({"title": "  A better name  "}))
        .send()
        .await
        .unwrap();
    assert_eq!(renamed.status(), 200);
    let empty = client
        .patch(format!("{base}/api/threads/t-1"))
        .header("origin", &base)
        .json(&json!({"title": "   "}))
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status(), 422);
    let unknown = client
        .patch(format!("{base}/api/threads/nope"))
        .header("origin", &base)
        .json(&json!({"title": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let threads = server.get_json("/api/threads").await;
    assert_eq!(threads["threads"][0]["title"], "A better name", "{threads}");
    assert_eq!(
        server.get_json("/api/threads/t-1").await["title"],
        "A better name"
    );
    let missing = client
        .get(format!("{base}/api/threads/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let deleted = client
        .delete(format!("{base}/api/threads/t-1"))
        .header("origin", &base)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(server.get_json("/api/threads").await["threads"], json!([]));
    let gone = client
        .get(format!("{base}/api/threads/t-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404, "records and log are gone");

    // Raw SSE: our own events; nobody can answer an approval there, so it
    // is denied at once and the run finishes.
    let raw = client
        .post(format!("{base}/sse"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .json(&json!({"prompt": "raw hello", "sessionKey": "raw-1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 200);
    let raw = sse_events(&raw.text().await.unwrap());
    assert_eq!(raw.first().unwrap()["type"], "run_started");
    assert_eq!(raw.last().unwrap()["type"], "run_finished");
    assert!(
        raw.iter()
            .any(|e| e["kind"] == "approval.resolved" && e["text"] == "rejected"),
        "{raw:?}"
    );

    // A2A: the card names the JSON-RPC endpoint of this server.
    let card = server.get_json("/.well-known/agent-card.json").await;
    assert_eq!(card["name"], "agent-adaptor");
    assert_eq!(card["supportedInterfaces"][0]["url"], format!("{base}/a2a"));
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer",
        "the card declares the bearer scheme: {card}"
    );
    assert_eq!(
        card["securityRequirements"][0]["schemes"]["bearer"],
        json!({"list": []})
    );
    assert_eq!(
        card["capabilities"]["pushNotifications"], false,
        "push is off without --push-allow-host"
    );

    // The operator log says who answered the approval.
    let log = server.log_text();
    assert!(
        log.contains("approval asked")
            && log.contains("interrupt answered")
            && log.contains("answered_by=token"),
        "{log}"
    );
}

/// The web chat in headless Chromium (tests/cli/web_chat.mjs): approval
/// card with its tool input, the finished tool card below it, reasoning,
/// the streamed answer with its copy button and usage, the same cards
/// after a reload, rename and delete, the drawer at 390 px, axe-core in
/// light and dark; screenshots in `target/cli-web/web-chat-*.png`.
#[test]
fn the_web_chat_works_in_headless_chromium() {
    let home = tempfile::tempdir().unwrap();
    let server = serve(home.path());
    support::browser::clear_shots("web-chat");
    let report = support::browser::run("web_chat.mjs", &server.start_url);
    assert!(
        report["text_updates"].as_u64().unwrap() >= 3,
        "the answer streamed: {report}"
    );
    assert!(
        report["thread_item"]
            .as_str()
            .unwrap()
            .contains("hello from the browser")
    );
    assert_eq!(report["reloaded_cards"], report["live_cards"]);
    assert_eq!(report["renamed_title"], "Greeting thread");
    for shot in ["1280-light", "1280-dark", "390-light", "390-dark"] {
        let path = support::browser::shots_dir().join(format!("web-chat-{shot}.png"));
        assert!(path.is_file(), "{} is kept", path.display());
    }
    drop(server);
}

/// Two `serve` instances on one PostgreSQL store serve one thread: a turn
/// on the first asks an approval, answered on the second (the run goes on
/// on the first, the second streams it from the log), and the next turn on
/// the second continues the conversation. Needs `PG_TEST_URL`
/// (`scripts/with-postgres`).
#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_threads_through_postgres() {
    let url = std::env::var("PG_TEST_URL").expect(
        "PG_TEST_URL must be set with the postgres-tests feature (run under scripts/with-postgres)",
    );
    let home = tempfile::tempdir().unwrap();
    // One token for both: a client (and a session cookie) works on either.
    let token = "shared-token-0123456789";
    let a = serve_with(home.path(), &["--store", &url, "--token", token]);
    let b = serve_with(home.path(), &["--store", &url, "--token", token]);
    let client = a.client();
    let thread = format!("shared-{}", std::process::id());
    let messages = json!([{"id": "m1", "role": "user", "content": "first turn on A"}]);
    let first = agui(
        &client,
        &a.base,
        json!({"threadId": thread, "runId": "r1", "messages": messages}),
    )
    .await;
    let interrupt = first.last().unwrap()["outcome"]["interrupts"][0]["id"].clone();
    let resumed = agui(
        &client,
        &b.base,
        json!({"threadId": thread, "runId": "r2", "messages": messages,
               "resume": [{"interruptId": interrupt, "status": "resolved", "payload": {"approved": true}}]}),
    )
    .await;
    assert_eq!(resumed[0]["type"], "RUN_STARTED");
    assert_eq!(resumed[0]["runId"], "r2");
    assert_eq!(resumed.last().unwrap()["outcome"]["type"], "success");

    let next = agui(
        &client,
        &b.base,
        json!({"threadId": thread, "runId": "r3",
               "messages": [{"id": "m2", "role": "user", "content": "second turn on B"}]}),
    )
    .await;
    let text: String = next
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert!(
        text.starts_with("This thread continues"),
        "B continued A's conversation: {text}"
    );
    let listed = b.get_json("/api/threads").await;
    assert!(
        listed["threads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == thread.as_str()),
        "{listed}"
    );
    let key = format!("agui/v1/web/{thread}");
    let out = support::run(home.path(), &["threads", "--store", &url, "delete", &key]);
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
}

/// Two `serve` instances on one PostgreSQL store share their A2A tasks: the
/// official JS client (`@a2a-js/sdk`, `list_across`) sends two tasks to the
/// first and lists and reads them on the second. Needs `PG_TEST_URL`
/// (`scripts/with-postgres`) and `scripts/install-bridge-clients`.
#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_a2a_tasks_through_postgres() {
    let url = std::env::var("PG_TEST_URL").expect(
        "PG_TEST_URL must be set with the postgres-tests feature (run under scripts/with-postgres)",
    );
    let home = tempfile::tempdir().unwrap();
    let token = "shared-token-a2a-0123456789";
    let a = serve_with(home.path(), &["--store", &url, "--token", token]);
    let b = serve_with(home.path(), &["--store", &url, "--token", token]);
    let script = a2a_peers::script("client.mjs");
    let out = a2a_peers::run(
        &a2a_peers::node(),
        &[script.to_str().unwrap(), "list_across", &a.base, &b.base],
        Some(token),
        std::time::Duration::from_secs(120),
    )
    .await;
    let report = out.json();
    let sent = report["sent"].as_array().unwrap().clone();
    let all = &report["all"];
    let mut listed = all["ids"].as_array().unwrap().clone();
    // Other tests may share the database: only this client's tasks count.
    listed.retain(|id| sent.contains(id));
    assert_eq!(listed.len(), 2, "{report}");
    let (first, second) = (&report["first"], &report["second"]);
    assert_eq!(first["ids"].as_array().unwrap().len(), 1, "{report}");
    assert_ne!(first["nextPageToken"], "");
    assert_ne!(first["ids"], second["ids"], "the second page goes on");
    assert_eq!(report["ofContext"]["ids"], json!([sent[0].clone()]));
    assert_eq!(report["got"]["id"], sent[0]);
    assert!(
        report["statuses"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s == 200),
        "{report}"
    );
    drop((a, b));
}

/// A `serve` instance killed while its A2A task waits for input: its lease
/// expires, the other instance's sweeper recovers it and fails the task,
/// which that instance then shows. Needs `PG_TEST_URL`
/// (`scripts/with-postgres`).
#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instance_s_a2a_task_fails_on_the_other_through_postgres() {
    let url = std::env::var("PG_TEST_URL").expect(
        "PG_TEST_URL must be set with the postgres-tests feature (run under scripts/with-postgres)",
    );
    let home = tempfile::tempdir().unwrap();
    let token = "shared-token-a2a-kill-0123456789";
    let args = ["--store", &url, "--token", token, "--lease-ttl", "1"];
    let mut a = serve_with(home.path(), &args);
    let b = serve_with(home.path(), &args);
    let client = a.client();
    let rpc = |base: &str, method: &str, params: Value| {
        client
            .post(format!("{base}/a2a"))
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
    };
    let message = json!({"message": {"messageId": "m1", "role": "ROLE_USER",
        "parts": [{"text": "first turn on A"}]}});
    let sent: Value = rpc(&a.base, "SendMessage", message)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task = &sent["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{sent}"
    );
    let id = task["id"].as_str().unwrap().to_owned();

    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let failed = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let got: Value = rpc(&b.base, "GetTask", json!({"id": id}))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if got["result"]["status"]["state"] == "TASK_STATE_FAILED" {
                return got["result"].clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the other instance fails the task");
    let note = failed["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(note.contains("stopped"), "{failed}");
    assert_eq!(failed["metadata"]["agentAdaptor"]["reason"], "interrupted");
    drop(b);
}

/// `--push-allow-host` with a secret turns A2A push on: the card says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_flags_turn_push_notifications_on() {
    let home = tempfile::tempdir().unwrap();
    let secret = home.path().join("push-secret");
    std::fs::write(&secret, "a push secret of enough bytes\n").unwrap();
    let server = serve_with(
        home.path(),
        &[
            "--push-allow-host",
            "hooks.example.com",
            "--push-allow-host",
            "127.0.0.1:9999",
            "--push-secret-file",
            secret.to_str().unwrap(),
        ],
    );
    let card = server.get_json("/.well-known/agent-card.json").await;
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");
}
