//! The SSE handler at the HTTP level: bad input is refused with a 4xx JSON
//! error before anything starts; auth; CORS; raw mode; thread binding;
//! keep-alive; SSE ids and `Last-Event-ID` reconnects; interrupt errors;
//! the per-write deadline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/agui_server.rs"]
mod agui_server;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_bridges::agui::{
    FrameId, RUN_ID_HEADER, SseHandler, SseOptions, SseServer, agui_thread_key, raw_thread_key,
};
use agent_adaptor_core::driver::DecisionKind;
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::{Agent, FailureReason, MemoryStore};
use agui_server::{PATH, SseParser, TestServer, post_sse, reason, run_input, serve, types};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

/// POST raw bytes with headers; status, JSON body.
async fn post(url: &str, body: impl Into<reqwest::Body>, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = http().post(url).body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    let json = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("error body is not JSON ({e}): {text:?}"));
    (status, json)
}

const JSON: (&str, &str) = ("content-type", "application/json");

/// Asserts status, error code, and that nothing was started.
fn refused(t: &TestServer, got: (u16, Value), status: u16, code: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_eq!(got.1["error"]["code"], code, "{}", got.1);
    assert!(
        got.1["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{}",
        got.1
    );
    assert_eq!(t.runs.count(), 0, "no run may start");
    assert!(
        t.driver.recorded_requests().is_empty(),
        "the driver must not be called"
    );
    assert_eq!(t.handler.runs(), 0);
}

#[tokio::test]
async fn bad_input_is_refused_with_a_json_error_and_nothing_starts() {
    let t = serve(agui_server::text_script(), SseOptions::agui()).await;
    let u = &t.url;
    let valid = run_input("t", "r", "hi").to_string();

    refused(
        &t,
        post(u, "{\"threadId\": ", &[JSON]).await,
        400,
        "invalid_json",
    );
    refused(
        &t,
        post(u, "not json at all", &[JSON]).await,
        400,
        "invalid_json",
    );
    refused(
        &t,
        post(
            u,
            json!({"threadId": 1, "runId": "r", "messages": []}).to_string(),
            &[JSON],
        )
        .await,
        422,
        "invalid_input",
    );
    refused(
        &t,
        post(
            u,
            json!({"threadId": "t", "runId": "r"}).to_string(),
            &[JSON],
        )
        .await,
        422,
        "invalid_input",
    );
    // No user message at all, only an assistant one, only blank user text.
    for messages in [
        json!([]),
        json!([{"id": "1", "role": "assistant", "content": "hi"}]),
        json!([{"id": "1", "role": "user", "content": "   "}]),
        json!([{"id": "1", "role": "user", "content": [{"type": "image", "source": {"type": "url", "value": "http://x"}}]}]),
    ] {
        let body = json!({"threadId": "t", "runId": "r", "messages": messages}).to_string();
        refused(
            &t,
            post(u, body, &[JSON]).await,
            422,
            "missing_user_message",
        );
    }
    refused(
        &t,
        post(u, valid.clone(), &[("content-type", "text/plain")]).await,
        415,
        "unsupported_media_type",
    );
    refused(
        &t,
        post(u, valid.clone(), &[]).await,
        415,
        "unsupported_media_type",
    );
    refused(
        &t,
        post(u, valid.clone(), &[JSON, ("accept", "application/json")]).await,
        406,
        "not_acceptable",
    );
    refused(
        &t,
        post(u, valid.clone(), &[JSON, ("last-event-id", "abc")]).await,
        400,
        "invalid_last_event_id",
    );
    // Oversized: the documented limit is 1 MiB, declared or streamed.
    let big = format!(
        "{{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{{\"id\":\"1\",\"role\":\"user\",\"content\":\"{}\"}}]}}",
        "x".repeat(1024 * 1024)
    );
    refused(
        &t,
        post(u, big.clone(), &[JSON]).await,
        413,
        "payload_too_large",
    );
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = big
        .into_bytes()
        .chunks(64 * 1024)
        .map(|c| Ok(c.to_vec()))
        .collect();
    let streamed = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
    refused(
        &t,
        post(u, streamed, &[JSON]).await,
        413,
        "payload_too_large",
    );
    // GET is not served.
    let resp = http().get(u).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    assert_eq!(resp.headers()["allow"], "POST");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed");
    // Resume of an interrupt nobody waits on; a reconnect to no run.
    let mut resume = run_input("t", "r2", "hi");
    resume["resume"] =
        json!([{"interruptId": "apr_nope", "status": "resolved", "payload": {"approved": true}}]);
    refused(
        &t,
        post(u, resume.to_string(), &[JSON]).await,
        404,
        "interrupt_not_found",
    );
    resume["resume"] = json!([
        {"interruptId": "a", "status": "cancelled"},
        {"interruptId": "b", "status": "cancelled"}
    ]);
    refused(
        &t,
        post(u, resume.to_string(), &[JSON]).await,
        422,
        "invalid_resume",
    );
    refused(
        &t,
        post(u, valid.clone(), &[JSON, ("last-event-id", "3")]).await,
        404,
        "run_not_found",
    );
    // And a valid request does start a run.
    let (status, _, events, _) = post_sse(&http(), u, &run_input("t", "r", "hi"), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(
        types(&events).last().map(String::as_str),
        Some("RUN_FINISHED")
    );
    assert_eq!(t.runs.count(), 1);
}

#[tokio::test]
async fn a_body_that_never_completes_times_out_with_408() {
    let t = serve(
        agui_server::text_script(),
        SseOptions::agui().write_timeout(Duration::from_millis(200)),
    )
    .await;
    let addr = t.server.local_addr();
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Announce 100 bytes, send 10, then wait.
    let req = format!(
        "POST {PATH} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"threadId\""
    );
    sock.write_all(req.as_bytes()).await.unwrap();
    let mut resp = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&resp).contains("body_timeout") {
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        assert!(
            n > 0,
            "closed without an answer: {:?}",
            String::from_utf8_lossy(&resp)
        );
        resp.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&resp).starts_with("HTTP/1.1 408"));
    assert_eq!(t.runs.count(), 0);
}

#[tokio::test]
async fn raw_mode_refuses_bad_input_and_streams_our_events_with_sequence_ids() {
    let t = serve(agui_server::text_script(), SseOptions::raw()).await;
    refused(&t, post(&t.url, "{", &[JSON]).await, 400, "invalid_json");
    refused(
        &t,
        post(&t.url, "{}", &[JSON]).await,
        422,
        "missing_user_message",
    );
    refused(
        &t,
        post(&t.url, json!({"prompt": ""}).to_string(), &[JSON]).await,
        422,
        "missing_user_message",
    );
    refused(
        &t,
        post(&t.url, json!({"prompt": 5}).to_string(), &[JSON]).await,
        422,
        "invalid_input",
    );
    let (status, headers, events, _) =
        post_sse(&http(), &t.url, &json!({"prompt": "Say hello"}), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/event-stream");
    let run_id = headers[RUN_ID_HEADER].to_str().unwrap().to_owned();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| e.json()["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("run_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("run_finished"));
    let text: String = events
        .iter()
        .map(|e| e.json())
        .filter(|e| e["type"] == "text_delta" && e["phase"] == "content")
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "Hello, world");
    // The SSE id is EventMeta.sequence: 1, 2, 3 … and the run id is ours.
    for (i, e) in events.iter().enumerate() {
        let ev = e.json();
        assert_eq!(e.id.as_deref(), Some((i + 1).to_string().as_str()));
        assert_eq!(ev["meta"]["sequence"], json!(i + 1));
        assert_eq!(ev["meta"]["run_id"], run_id.as_str());
    }
    assert_eq!(t.runs.prompts(), ["Say hello"]);
}

#[tokio::test]
async fn a_run_refused_by_the_agent_still_gets_run_started_then_run_error() {
    let driver = agui_server::text_script().with_invalid_config("no model configured");
    let t = serve(driver, SseOptions::agui()).await;
    let (status, _, events, _) = post_sse(&http(), &t.url, &run_input("t", "r", "hi"), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(types(&events), ["RUN_STARTED", "RUN_ERROR"]);
    let err = events[1].json();
    assert_eq!(err["code"], "invalid_driver_config");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("no model configured")
    );
    assert_eq!(events[0].id.as_deref(), Some("0"));
    assert_eq!(events[1].id.as_deref(), Some("0.1"));
    // Raw mode: one error event.
    let driver = agui_server::text_script().with_invalid_config("no model configured");
    let t = serve(driver, SseOptions::raw()).await;
    let (_, _, events, _) = post_sse(&http(), &t.url, &json!({"prompt": "hi"}), &[]).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].json()["type"], "error");
    assert_eq!(events[0].json()["code"], "invalid_driver_config");
}

#[tokio::test]
async fn bearer_auth_guards_every_request() {
    let t = serve(
        agui_server::text_script(),
        SseOptions::agui().bearer_token("s3cret"),
    )
    .await;
    let body = run_input("t", "r", "hi").to_string();
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Bearer s3cre"),
        Some("s3cret"),
    ] {
        let mut h = vec![JSON];
        if let Some(a) = auth {
            h.push(("authorization", a));
        }
        let resp = {
            let mut req = http().post(&t.url).body(body.clone());
            for (k, v) in &h {
                req = req.header(*k, *v);
            }
            req.send().await.unwrap()
        };
        assert_eq!(resp.status().as_u16(), 401, "{auth:?}");
        assert_eq!(resp.headers()["www-authenticate"], "Bearer");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["code"], "unauthorized");
    }
    assert_eq!(t.runs.count(), 0);
    let (status, _, events, _) = post_sse(
        &http(),
        &t.url,
        &run_input("t", "r", "hi"),
        &[("authorization", "Bearer s3cret")],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        types(&events).last().map(String::as_str),
        Some("RUN_FINISHED")
    );
}

#[tokio::test]
async fn cors_headers_only_when_configured() {
    let t = serve(agui_server::text_script(), SseOptions::agui()).await;
    let (_, headers, _, _) = post_sse(&http(), &t.url, &run_input("t", "r", "hi"), &[]).await;
    assert!(headers.get("access-control-allow-origin").is_none());
    let pre = http()
        .request(reqwest::Method::OPTIONS, &t.url)
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status().as_u16(), 405);
    assert!(pre.headers().get("access-control-allow-origin").is_none());

    let t = serve(
        agui_server::text_script(),
        SseOptions::agui().cors_allowed_origin("https://app.example"),
    )
    .await;
    let (_, headers, _, _) = post_sse(&http(), &t.url, &run_input("t", "r", "hi"), &[]).await;
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(headers["access-control-expose-headers"], RUN_ID_HEADER);
    let pre = http()
        .request(reqwest::Method::OPTIONS, &t.url)
        .header("origin", "https://app.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status().as_u16(), 204);
    assert_eq!(
        pre.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    assert!(
        pre.headers()["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("last-event-id")
    );
    // Errors carry the header too, so a browser can read them.
    let resp = http()
        .post(&t.url)
        .body("{")
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert_eq!(
        resp.headers()["access-control-allow-origin"],
        "https://app.example"
    );
}

#[tokio::test]
async fn agui_frame_ids_increase_and_a_reconnect_replays_after_last_event_id() {
    let t = serve(agui_server::tool_script(), SseOptions::agui()).await;
    let input = run_input("t-replay", "r-replay", "hi");
    let (_, _, events, _) = post_sse(&http(), &t.url, &input, &[]).await;
    let ids: Vec<FrameId> = events
        .iter()
        .map(|e| e.id.as_deref().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    // Reconnect after the 5th frame: exactly the rest, byte for byte.
    let cursor = events[4].id.clone().unwrap();
    let (status, _, rest, _) =
        post_sse(&http(), &t.url, &input, &[("last-event-id", &cursor)]).await;
    assert_eq!(status, 200);
    assert_eq!(rest, events[5..].to_vec());
    // A reconnect is not a new run.
    assert_eq!(t.runs.count(), 1);
    // The same runId without Last-Event-ID is a conflict.
    let (code, body) = post(&t.url, input.to_string(), &[JSON]).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (409, Some("run_exists"))
    );
}

#[tokio::test]
async fn a_reconnect_to_a_running_run_keeps_it_alive_after_the_first_client_leaves() {
    let t = serve(
        agui_server::chunked_script(20, 16, Duration::from_millis(30)),
        SseOptions::raw(),
    )
    .await;
    let resp = http()
        .post(&t.url)
        .header("content-type", "application/json")
        .body(json!({"prompt": "go"}).to_string())
        .send()
        .await
        .unwrap();
    let run_id = resp.headers()[RUN_ID_HEADER].to_str().unwrap().to_owned();
    let mut first = resp.bytes_stream();
    let mut parser = SseParser::default();
    let mut seen = Vec::new();
    while seen.len() < 5 {
        seen.extend(parser.push(&first.next().await.unwrap().unwrap()));
    }
    let cursor = seen[4].id.clone().unwrap();
    // A second client attaches from the 5th frame; once it has received a
    // frame it is certainly attached, and the first leaves.
    let (attached_tx, attached_rx) = tokio::sync::oneshot::channel();
    let second = tokio::spawn({
        let url = t.url.clone();
        let run_id = run_id.clone();
        let cursor = cursor.clone();
        async move {
            let resp = http()
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .header("last-event-id", cursor)
                .body(json!({"runId": run_id}).to_string())
                .send()
                .await
                .unwrap();
            let status = resp.status();
            let mut body = resp.bytes_stream();
            let mut parser = SseParser::default();
            let mut rest = Vec::new();
            let mut attached = Some(attached_tx);
            while let Some(chunk) = body.next().await {
                rest.extend(parser.push(&chunk.unwrap()));
                if !rest.is_empty()
                    && let Some(tx) = attached.take()
                {
                    let _ = tx.send(());
                }
            }
            (status, rest)
        }
    });
    tokio::time::timeout(Duration::from_secs(30), attached_rx)
        .await
        .expect("the second client receives a frame within 30 s")
        .expect("the second client is alive");
    drop(first);
    let (status, rest) = second.await.unwrap();
    assert_eq!(status, 200);
    let ids: Vec<u64> = rest
        .iter()
        .map(|e| e.id.as_deref().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids.first(), Some(&6), "resumes right after the cursor");
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    assert_eq!(rest.last().unwrap().json()["type"], "run_finished");
    let (outcome, _) = t.runs.outcome(0, Duration::from_secs(10)).await;
    assert!(outcome.is_ok(), "the run completed: {:?}", reason(&outcome));
}

#[tokio::test]
async fn keep_alive_comments_fill_silence() {
    let driver = agui_server::chunked_script(2, 8, Duration::from_millis(400));
    let t = serve(
        driver,
        SseOptions::agui().keep_alive(Some(Duration::from_millis(50))),
    )
    .await;
    let resp = http()
        .post(&t.url)
        .header("content-type", "application/json")
        .body(run_input("t", "r", "hi").to_string())
        .send()
        .await
        .unwrap();
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        events.extend(parser.push(&chunk.unwrap()));
    }
    assert!(
        parser.comments >= 4,
        "{} keep-alive comments",
        parser.comments
    );
    assert_eq!(
        types(&events).last().map(String::as_str),
        Some("RUN_FINISHED")
    );
}

#[tokio::test]
async fn thread_binding_uses_the_collision_free_keys_of_both_modes() {
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::builder(ScriptedDriver::resumable_reply("noted", "sess-1"))
        .thread_store(store)
        .build()
        .unwrap();
    let agui = SseHandler::with_threads(
        agent.clone(),
        SseOptions::agui().thread_namespace("tenant-7"),
    );
    let raw = SseHandler::with_threads(agent.clone(), SseOptions::raw());
    let agui_srv = SseServer::bind_local(agui.router(PATH)).await.unwrap();
    let raw_srv = SseServer::bind_local(raw.router(PATH)).await.unwrap();

    let thread_id = "conv/42%";
    let (_, _, events, _) = post_sse(
        &http(),
        &agui_srv.url(PATH),
        &run_input(thread_id, "r1", "hi"),
        &[],
    )
    .await;
    assert_eq!(
        types(&events).last().map(String::as_str),
        Some("RUN_FINISHED")
    );
    let key = agui_thread_key("tenant-7", thread_id);
    assert_eq!(key, "agui/v1/tenant-7/conv%2F42%25");
    let saved = agent.thread(key.as_str()).checkpoint().await.unwrap();
    assert_eq!(saved.unwrap().resume_id, "sess-1");
    // The raw threadId itself was not used as a key.
    assert!(
        agent
            .thread(thread_id)
            .checkpoint()
            .await
            .unwrap()
            .is_none()
    );

    let (_, _, events, _) = post_sse(
        &http(),
        &raw_srv.url(PATH),
        &json!({"prompt": "hi", "sessionKey": "conv/42%"}),
        &[],
    )
    .await;
    let last = events.last().unwrap().json();
    assert_eq!(last["type"], "run_finished");
    let raw_key = raw_thread_key("", "conv/42%");
    assert_eq!(raw_key, "sse/v1//conv%2F42%25");
    assert_eq!(last["meta"]["thread_key"], raw_key.as_str());
    assert!(
        agent
            .thread(raw_key.as_str())
            .checkpoint()
            .await
            .unwrap()
            .is_some()
    );
    // The session key itself was not used as a key: a raw client cannot
    // name another bridge's thread.
    assert!(
        agent
            .thread("conv/42%")
            .checkpoint()
            .await
            .unwrap()
            .is_none()
    );
    // Without a session key the raw mode runs the agent itself.
    let (_, _, events, _) =
        post_sse(&http(), &raw_srv.url(PATH), &json!({"prompt": "hi"}), &[]).await;
    assert!(
        events.last().unwrap().json()["meta"]
            .get("thread_key")
            .is_none()
    );
}

#[tokio::test]
async fn interrupt_errors_leave_the_parked_run_answerable() {
    let t = serve(
        agui_server::approval_script(DecisionKind::Permission),
        SseOptions::agui(),
    )
    .await;
    let (_, _, events, _) = post_sse(&http(), &t.url, &run_input("t-i", "r1", "hi"), &[]).await;
    let last = events.last().unwrap().json();
    assert_eq!(last["outcome"]["type"], "interrupt");
    let id = last["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(t.handler.pending_interrupts(), 1);

    // A new run on the thread is refused while it waits.
    let (code, body) = post(&t.url, run_input("t-i", "r2", "again").to_string(), &[JSON]).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (409, Some("pending_interrupt"))
    );
    assert_eq!(body["error"]["interruptIds"], json!([id]));
    // A payload that does not match the schema; another thread's resume.
    let mut resume = run_input("t-i", "r2", "");
    resume["resume"] =
        json!([{"interruptId": id, "status": "resolved", "payload": {"approved": "yes"}}]);
    let (code, body) = post(&t.url, resume.to_string(), &[JSON]).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (422, Some("invalid_resume"))
    );
    let mut other = resume.clone();
    other["threadId"] = json!("t-other");
    other["resume"][0]["payload"] = json!({"approved": true});
    let (code, body) = post(&t.url, other.to_string(), &[JSON]).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (404, Some("interrupt_not_found"))
    );
    // "Always allow" on a run that cannot grant (no thread here): a
    // typed refusal, never a silent "once".
    assert!(last["outcome"]["interrupts"][0]["metadata"]["alwaysAllowTool"].is_null());
    let mut always = resume.clone();
    always["resume"][0]["payload"] = json!({"approved": true, "always": true});
    let (code, body) = post(&t.url, always.to_string(), &[JSON]).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (422, Some("not_grantable"))
    );
    assert_eq!(t.handler.pending_interrupts(), 1, "still parked");
    assert_eq!(t.runs.count(), 1);

    // The proper answer continues the run.
    resume["resume"][0]["payload"] = json!({"approved": true});
    let (status, _, events, _) = post_sse(&http(), &t.url, &resume, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(
        types(&events).first().map(String::as_str),
        Some("RUN_STARTED")
    );
    assert_eq!(events.last().unwrap().json()["outcome"]["type"], "success");
    let (outcome, _) = t.runs.outcome(0, Duration::from_secs(10)).await;
    assert_eq!(outcome.unwrap().metadata["decision.0"], "approved");
    // Answering twice finds nothing.
    let mut again = resume.clone();
    again["runId"] = json!("r3");
    let (code, _) = post(&t.url, again.to_string(), &[JSON]).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn an_unanswered_interrupt_expires_and_its_run_is_cancelled() {
    let t = serve(
        agui_server::approval_script(DecisionKind::Permission),
        SseOptions::agui().interrupt_timeout(Duration::from_millis(300)),
    )
    .await;
    let (_, _, events, _) = post_sse(&http(), &t.url, &run_input("t-x", "r1", "hi"), &[]).await;
    let interrupt = events.last().unwrap().json()["outcome"]["interrupts"][0].clone();
    let expires =
        chrono::DateTime::parse_from_rfc3339(interrupt["expiresAt"].as_str().unwrap()).unwrap();
    assert!(expires <= chrono::Utc::now() + chrono::Duration::milliseconds(400));
    let (outcome, _) = t.runs.outcome(0, Duration::from_secs(10)).await;
    assert_eq!(reason(&outcome), Some(FailureReason::Cancelled));
    assert_eq!(t.handler.pending_interrupts(), 0);
    let mut resume = run_input("t-x", "r2", "");
    resume["resume"] = json!([{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": true}}]);
    let (code, body) = post(&t.url, resume.to_string(), &[JSON]).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (404, Some("interrupt_not_found"))
    );
}

#[tokio::test]
async fn a_client_that_stops_reading_is_dropped_at_the_write_deadline_and_its_run_cancelled() {
    // 100 chunks of 256 KiB, then the run waits until cancelled: a client
    // that reads nothing fills the socket buffers and the deadline passes.
    let t = serve(
        agui_server::flood_script(100, 256 * 1024),
        SseOptions::raw().write_timeout(Duration::from_millis(300)),
    )
    .await;
    let addr = t.server.local_addr();
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = json!({"prompt": "flood"}).to_string();
    let req = format!(
        "POST {PATH} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(req.as_bytes()).await.unwrap();
    // Read only the first bytes (the headers), then stop reading.
    let mut head = [0u8; 64];
    let n = sock.read(&mut head).await.unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));
    let (outcome, _) = t.runs.outcome(0, Duration::from_secs(30)).await;
    assert_eq!(reason(&outcome), Some(FailureReason::Cancelled));
    drop(sock);
}
