//! Two `agent-adaptor serve` instances (playground) over one thread store:
//! the AG-UI runs of the first are replayed by the second from the event
//! log after a `Last-Event-ID` — exactly the frames after the cursor, same
//! ids and bytes — for the run that ends at an approval interrupt and for
//! the run that answers it. Another client (no token) is refused, and the
//! thread API of the second instance shows the history. On SQLite always;
//! on PostgreSQL with the `postgres-tests` feature (PG_TEST_URL, see
//! `scripts/with-postgres`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};

use support::server::{Server, serve_with};

/// One SSE frame: its id and its data line, as sent.
#[derive(Debug, Clone, PartialEq)]
struct Frame {
    id: String,
    data: String,
}

fn frames(body: &str) -> Vec<Frame> {
    body.split("\n\n")
        .filter_map(|block| {
            let id = block.lines().find_map(|l| l.strip_prefix("id: "))?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some(Frame {
                id: id.to_owned(),
                data: data.to_owned(),
            })
        })
        .collect()
}

fn kind(f: &Frame) -> String {
    let v: Value = serde_json::from_str(&f.data).unwrap();
    v["type"].as_str().unwrap().to_owned()
}

async fn post(server: &Server, input: &Value, last_event_id: Option<&str>) -> (u16, String) {
    let mut req = server
        .client()
        .post(format!("{}/agui", server.base))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .json(input);
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

async fn two_instances_replay(store: &str, thread: &str) {
    let home_a = tempfile::tempdir().unwrap();
    let home_b = tempfile::tempdir().unwrap();
    let a = serve_with(home_a.path(), &["--store", store]);
    let b = serve_with(home_b.path(), &["--store", store]);
    let messages = json!([{"id": "u-1", "role": "user", "content": "hi from a test"}]);

    // Run 1 on A: it ends at the playground's tool approval.
    let input = json!({"threadId": thread, "runId": "r-1", "messages": messages});
    let (status, body) = post(&a, &input, None).await;
    assert_eq!(status, 200, "{body}");
    let first = frames(&body);
    assert_eq!(kind(&first[0]), "RUN_STARTED");
    assert_eq!(kind(&first[1]), "MESSAGES_SNAPSHOT");
    let end: Value = serde_json::from_str(&first.last().unwrap().data).unwrap();
    assert_eq!(end["outcome"]["type"], "interrupt", "{end}");

    // B replays what followed any cursor, frame for frame.
    for k in [0, 1, first.len() / 2] {
        let (status, body) = post(&b, &input, Some(&first[k].id)).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            frames(&body),
            first[k + 1..].to_vec(),
            "after {}",
            first[k].id
        );
    }

    // Run 2 on A answers the interrupt; B replays it too.
    let resume = json!({"threadId": thread, "runId": "r-2", "messages": messages,
        "resume": [{"interruptId": end["outcome"]["interrupts"][0]["id"], "status": "resolved",
                    "payload": {"approved": true}}]});
    let (status, body) = post(&a, &resume, None).await;
    assert_eq!(status, 200, "{body}");
    let second = frames(&body);
    assert_eq!(kind(second.last().unwrap()), "RUN_FINISHED");
    let cut = &second[second.len() / 2].id;
    let (status, body) = post(&b, &resume, Some(cut)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(frames(&body), second[second.len() / 2 + 1..].to_vec());

    // A client without the token gets nothing.
    let resp = b
        .anonymous()
        .post(format!("{}/agui", b.base))
        .header("content-type", "application/json")
        .header("last-event-id", first[0].id.as_str())
        .json(&input)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);

    // B's thread API shows the conversation from the log.
    let thread_json = b.get_json(&format!("/api/threads/{thread}")).await;
    let roles: Vec<&str> = thread_json["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("{thread_json}"))
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.first(), Some(&"user"), "{thread_json}");
    assert!(roles.contains(&"tool_call"), "{thread_json}");
    assert_eq!(roles.last(), Some(&"assistant"), "{thread_json}");
    let events = b
        .get_json(&format!("/api/threads/{thread}/events?since=0"))
        .await;
    let logged = events["events"].as_array().unwrap();
    assert!(logged.len() > 5, "{events}");
    assert_eq!(logged[0]["prompt"], "hi from a test");
    // Cursors only grow.
    let cursors: Vec<u64> = logged
        .iter()
        .map(|e| e["cursor"].as_u64().unwrap())
        .collect();
    assert!(cursors.windows(2).all(|w| w[0] < w[1]), "{cursors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_instance_replays_the_missed_frames_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("threads.db").display());
    two_instances_replay(&store, "t-replay").await;
}

#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_instance_replays_the_missed_frames_on_postgres() {
    let url = std::env::var("PG_TEST_URL").expect(
        "PG_TEST_URL must be set with the postgres-tests feature (run under scripts/with-postgres)",
    );
    let thread = format!("replay-{:016x}", rand::random::<u64>());
    two_instances_replay(&url, &thread).await;
}
