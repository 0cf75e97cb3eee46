//! `agent-adaptor serve` (playground): the page, the thread API, AG-UI with
//! an approval interrupt and its resume, raw SSE, the A2A card — and the web
//! chat driven in headless Chromium (Debian's `chromium` + `playwright-core`
//! from `scripts/install-cli-test-deps`; the test fails with a pointer to
//! that script when they are missing). The screenshot is kept at
//! `target/cli-web/web-chat.png`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;

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
    let missing = client
        .get(format!("{base}/api/threads/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

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

    // The operator log says who answered the approval.
    let log = server.log_text();
    assert!(
        log.contains("approval asked")
            && log.contains("interrupt answered")
            && log.contains("answered_by=token"),
        "{log}"
    );
}

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

#[test]
fn the_web_chat_works_in_headless_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tests = root.join("tests/cli");
    let hint = "run scripts/install-cli-test-deps (Debian chromium + npm ci in tests/cli)";
    assert!(
        chromium().is_file(),
        "{} is missing: {hint}",
        chromium().display()
    );
    assert!(
        tests
            .join("node_modules/playwright-core/package.json")
            .is_file(),
        "playwright-core is not installed in tests/cli: {hint}"
    );
    let home = tempfile::tempdir().unwrap();
    let server = serve(home.path());
    let shot = support::target_dir().join("cli-web/web-chat.png");
    let _ = std::fs::remove_file(&shot);
    let node = std::env::var_os("NODE").unwrap_or_else(|| "node".into());
    let out = std::process::Command::new(node)
        .arg(tests.join("web_chat.mjs"))
        .arg(&server.start_url)
        .arg(&shot)
        .current_dir(&tests)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("node: {e}: {hint}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the browser test failed:\n{stdout}\n{stderr}"
    );
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or("{}")).unwrap();
    assert_eq!(report["ok"], true, "{report}");
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
    assert!(
        shot.is_file(),
        "the screenshot is kept at {}",
        shot.display()
    );
    drop(server);
}

/// Two `serve` instances on one PostgreSQL store serve one thread: a turn
/// on the first (with its approval), the next turn on the second, which
/// continues the conversation. Needs `PG_TEST_URL` (`scripts/with-postgres`).
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
        &a.base,
        json!({"threadId": thread, "runId": "r2", "messages": messages,
               "resume": [{"interruptId": interrupt, "status": "resolved", "payload": {"approved": true}}]}),
    )
    .await;
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
