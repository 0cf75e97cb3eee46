//! `agent-adaptor serve` trusts no one by default: DNS rebinding (a foreign
//! `Host`), requests without the token, cross-site posts, another client's
//! approvals and streams, raw SSE keys that name other bridges' threads,
//! and too many runs per client are all refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::server::{Server, serve_with, sse_data};

/// A browser-like session: the cookie the page gets for the token.
async fn session(server: &Server) -> String {
    let resp = server
        .anonymous()
        .post(format!("{}/api/session", server.base))
        .header(
            "authorization",
            format!("Bearer {}", server.token.as_ref().unwrap()),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let cookie = resp.headers()["set-cookie"].to_str().unwrap().to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    cookie.split(';').next().unwrap().to_owned()
}

/// POST an AG-UI input as the holder of `cookie`; the status and the events.
async fn agui_as(server: &Server, cookie: &str, input: Value) -> (StatusCode, Value, Vec<Value>) {
    let resp = server
        .anonymous()
        .post(format!("{}/agui", server.base))
        .header("cookie", cookie)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .json(&input)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    if status != StatusCode::OK {
        return (
            status,
            serde_json::from_str(&text).unwrap_or(Value::Null),
            vec![],
        );
    }
    (status, Value::Null, sse_data(&text))
}

/// Replay run `r-1` of thread `t-1` from its start as the holder of `cookie`.
async fn replay_as(server: &Server, cookie: &str, messages: &Value) -> StatusCode {
    server
        .anonymous()
        .post(format!("{}/agui", server.base))
        .header("cookie", cookie)
        .header("last-event-id", "0")
        .header("content-type", "application/json")
        .json(&json!({"threadId": "t-1", "runId": "r-1", "messages": messages}))
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_or_origin_and_a_missing_token_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let server = serve_with(home.path(), &[]);
    let base = &server.base;
    let anon = server.anonymous();
    let authed = server.client();

    // DNS rebinding: the page's own name arrives as Host; even the token
    // does not make a foreign Host acceptable.
    for client in [&anon, &authed] {
        let resp = client
            .get(format!("{base}/api/threads"))
            .header("host", "attacker.example:8787")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "host_not_allowed");
    }
    let page = anon
        .get(format!("{base}/"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::FORBIDDEN, "the page too");

    // No token: 401 everywhere but the page and the card.
    for path in [
        "/api/info",
        "/api/threads",
        "/api/threads/t1",
        "/api/threads/t1/allowed-tools",
    ] {
        let resp = anon.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(resp.headers()["www-authenticate"], "Bearer");
    }
    // Renaming and deleting a thread, and revoking a grant, need the token
    // too.
    for change in thread_changes(&anon, base) {
        let resp = change.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    }
    // The page's static files are public (it loads them before signing
    // in) and carry nothing private; the page forbids any other source.
    for path in [
        "/favicon.svg",
        "/assets/app.js",
        "/assets/app.css",
        "/assets/vendor/marked-18.3.0.js",
        "/assets/vendor/highlight-11.12.0.js",
    ] {
        let resp = anon.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
        let body = resp.text().await.unwrap();
        assert!(
            !body.contains(server.token.as_deref().unwrap()),
            "{path} carries no token"
        );
    }
    let vendored = anon
        .get(format!("{base}/assets/vendor/marked-18.3.0.js"))
        .send()
        .await
        .unwrap();
    assert!(
        vendored.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("immutable"),
        "a versioned file is cached for long"
    );
    let page = anon.get(format!("{base}/")).send().await.unwrap();
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'")
            && csp.contains("script-src 'self'")
            && csp.contains("connect-src 'self'")
            && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    let asset = anon
        .get(format!("{base}/assets/app.js"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        asset.status(),
        StatusCode::FORBIDDEN,
        "a foreign Host is refused for the files too"
    );
    for (path, body) in [
        (
            "/agui",
            json!({"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": "hi"}]}),
        ),
        ("/sse", json!({"prompt": "hi"})),
        (
            "/a2a",
            json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}),
        ),
    ] {
        let resp = anon
            .post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    let wrong = anon
        .get(format!("{base}/api/info"))
        .header("authorization", "Bearer not-the-token-at-all")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let forged = anon
        .get(format!("{base}/api/info"))
        .header(
            "cookie",
            "agent_adaptor_session=000000000000000000000000.00",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        anon.get(format!("{base}/")).send().await.unwrap().status(),
        200
    );
    let card = anon
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(card.status(), 200, "discovery stays public");

    // The token, or the cookie it buys, lets a client in.
    assert_eq!(
        authed
            .get(format!("{base}/api/info"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let cookie = session(&server).await;
    let with_cookie = anon
        .get(format!("{base}/api/info"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(with_cookie.status(), 200);

    // A cross-site post is refused even with valid credentials.
    let input = json!({"threadId": "t-x", "runId": "r-x", "messages": [{"id": "m", "role": "user", "content": "hi"}]});
    let cross = anon
        .post(format!("{base}/agui"))
        .header("cookie", &cookie)
        .header("origin", "http://attacker.example")
        .header("content-type", "application/json")
        .json(&input)
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
    let body: Value = cross.json().await.unwrap();
    assert_eq!(body["error"]["code"], "origin_not_allowed");
    // So are a cross-site rename, delete and revoke.
    for change in thread_changes(&anon, base) {
        let resp = change
            .header("cookie", &cookie)
            .header("origin", "http://attacker.example")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "origin_not_allowed");
    }
    // With the session and no foreign Origin: a tool that is not allowed
    // is a 404 naming why, and the list is empty.
    let same_site = anon
        .delete(format!("{base}/api/threads/t1/allowed-tools/Bash"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(same_site.status(), StatusCode::NOT_FOUND);
    let body: Value = same_site.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_allowed");
    let listed: Value = anon
        .get(format!("{base}/api/threads/t1/allowed-tools"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed, json!({"tools": []}));

    // Refusals are in the operator log, without the token.
    let log = server.log_text();
    assert!(log.contains("authentication failed"), "{log}");
    assert!(log.contains("host_not_allowed"), "{log}");
    assert!(
        !log.contains(server.token.as_deref().unwrap()),
        "the token never reaches the log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_client_that_started_a_run_answers_its_approval_and_replays_it() {
    let home = tempfile::tempdir().unwrap();
    let server = serve_with(home.path(), &[]);
    let alice = session(&server).await;
    let mallory = session(&server).await;
    assert_ne!(alice, mallory);
    let messages = json!([{"id": "m1", "role": "user", "content": "hi"}]);

    let (status, _, first) = agui_as(
        &server,
        &alice,
        json!({"threadId": "t-1", "runId": "r-1", "messages": messages}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let interrupt = first.last().unwrap()["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Another client posting to the busy thread learns no interrupt id.
    let (status, body, _) = agui_as(
        &server,
        &mallory,
        json!({"threadId": "t-1", "runId": "r-m", "messages": messages}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["interruptIds"], json!([]), "{body}");
    // Knowing the id anyway does not let it approve.
    let resume =
        json!([{"interruptId": interrupt, "status": "resolved", "payload": {"approved": true}}]);
    let (status, body, _) = agui_as(
        &server,
        &mallory,
        json!({"threadId": "t-1", "runId": "r-m2", "messages": messages, "resume": resume}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // Nor replay Alice's stream from the start.
    assert_eq!(
        replay_as(&server, &mallory, &messages).await,
        StatusCode::FORBIDDEN
    );

    // Alice sees her interrupt, replays her stream, and approves.
    let (status, body, _) = agui_as(
        &server,
        &alice,
        json!({"threadId": "t-1", "runId": "r-a", "messages": messages}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["interruptIds"], json!([interrupt]));
    assert_eq!(replay_as(&server, &alice, &messages).await, StatusCode::OK);
    let (status, _, resumed) = agui_as(
        &server,
        &alice,
        json!({"threadId": "t-1", "runId": "r-2", "messages": messages, "resume": resume}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resumed.last().unwrap()["outcome"]["type"], "success");
    let log = server.log_text();
    assert!(
        log.contains("refused an answer to another principal's interrupt"),
        "{log}"
    );
    assert!(log.contains("interrupt answered"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_tasks_belong_to_their_creator_and_runs_per_client_are_limited() {
    let home = tempfile::tempdir().unwrap();
    let server = serve_with(home.path(), &["--max-runs-per-client", "1"]);
    let alice = server.client();
    let mallory_cookie = session(&server).await;
    let rpc = |client: &reqwest::Client, method: &str, params: Value| {
        client
            .post(format!("{}/a2a", server.base))
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    };
    let sent: Value = rpc(
        &alice,
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
    )
    .send()
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let task = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{sent}"
    );

    // Another client cannot see, answer or cancel it.
    let mallory = server.anonymous();
    for (method, params) in [
        ("GetTask", json!({"id": task})),
        ("CancelTask", json!({"id": task})),
        (
            "SendMessage",
            json!({"message": {"messageId": "m2", "taskId": task, "role": "ROLE_USER", "parts": [{"text": "approve"}]}}),
        ),
    ] {
        let resp: Value = rpc(&mallory, method, params)
            .header("cookie", &mallory_cookie)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(resp["error"]["code"], -32001, "{method}: {resp}");
    }

    // One run at a time for Alice: a subscription holds her slot.
    let held = rpc(&alice, "SubscribeToTask", json!({"id": task}))
        .send()
        .await
        .unwrap();
    assert_eq!(held.status(), StatusCode::OK);
    let refused = rpc(&alice, "GetTask", json!({"id": task}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_runs");
    // Mallory has her own budget.
    let other = rpc(&mallory, "GetTask", json!({"id": "nope"}))
        .header("cookie", &mallory_cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::OK);
    // The slot comes back when the stream ends.
    drop(held);
    let mut freed = false;
    for _ in 0..100 {
        let resp = rpc(&alice, "GetTask", json!({"id": task}))
            .send()
            .await
            .unwrap();
        if resp.status() == StatusCode::OK {
            freed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(freed, "the slot was returned when the subscription closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_session_key_never_reaches_a_web_or_a2a_thread() {
    let home = tempfile::tempdir().unwrap();
    let server = serve_with(home.path(), &[]);
    let client = server.client();
    let raw = |key: &str| {
        client
            .post(format!("{}/sse", server.base))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .json(&json!({"prompt": "raw hello", "sessionKey": key}))
            .send()
    };
    for key in ["agui/v1/web/t1", "a2a:ctxA"] {
        let events = sse_data(&raw(key).await.unwrap().text().await.unwrap());
        let started = &events[0];
        assert_eq!(started["type"], "run_started");
        let thread = started["meta"]["thread_key"].as_str().unwrap();
        assert!(thread.starts_with("sse/v1/"), "{thread}");
        assert_ne!(thread, key);
    }
    let out = support::run(home.path(), &["threads", "list", "--json"]);
    let listed = support::stdout(&out);
    assert!(!listed.contains("\"agui/v1/web/t1\""), "{listed}");
    assert!(!listed.contains("\"a2a:ctxA\""), "{listed}");
}

#[test]
fn no_auth_is_for_loopback_only_and_weak_tokens_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let out = support::run(
        home.path(),
        &["serve", "--playground", "--addr", "0.0.0.0:0", "--no-auth"],
    );
    support::assert_one_line_failure(&out, 2, "--no-auth is only allowed on a loopback address");
    let out = support::run(
        home.path(),
        &[
            "serve",
            "--playground",
            "--addr",
            "127.0.0.1:0",
            "--token",
            "short",
        ],
    );
    support::assert_one_line_failure(&out, 2, "at least 16");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_auth_on_loopback_serves_without_a_token_and_warns() {
    let home = tempfile::tempdir().unwrap();
    let server = serve_with(home.path(), &["--no-auth"]);
    assert!(server.token.is_none(), "{}", server.start_url);
    let info = server
        .anonymous()
        .get(format!("{}/api/info", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(info.status(), 200);
    assert!(
        server.log_text().contains("WARNING: --no-auth"),
        "{}",
        server.log_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_comes_from_the_environment() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = support::command(home.path());
    cmd.env("AGENT_ADAPTOR_TOKEN", "env-token-0123456789");
    let server = support::server::serve_cmd(cmd, &["--playground"]);
    assert_eq!(server.token.as_deref(), Some("env-token-0123456789"));
    assert_eq!(
        server
            .client()
            .get(format!("{}/api/info", server.base))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

/// The requests that change thread `t1`: rename, delete, revoke a grant.
fn thread_changes(client: &reqwest::Client, base: &str) -> [reqwest::RequestBuilder; 3] {
    [
        client
            .patch(format!("{base}/api/threads/t1"))
            .json(&json!({"title": "mine now"})),
        client.delete(format!("{base}/api/threads/t1")),
        client.delete(format!("{base}/api/threads/t1/allowed-tools/Bash")),
    ]
}
