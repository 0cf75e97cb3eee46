//! Our A2A client against the PyPI `a2a-sdk` 1.3.0 reference server
//! (tests/bridges/a2a/echo_server.py, an echo agent on 127.0.0.1): card,
//! send, stream, get, cancel, subscribe, and its typed errors.
//!
//! Needs `scripts/install-bridge-clients`; without it these tests fail
//! with that hint.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/a2a_peers.rs"]
mod a2a_peers;

use std::time::Duration;

use a2a_peers::ReferenceServer;
use agent_adaptor_bridges::a2a::{
    Client, ClientError, ErrorCode, GetTaskRequest, Message, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskState,
};
use futures::StreamExt;

const DEADLINE: Duration = Duration::from_secs(30);

async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, fut)
        .await
        .expect("finished within the deadline")
}

fn task(reply: SendMessageResponse) -> Task {
    match reply {
        SendMessageResponse::Task(t) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

#[tokio::test]
async fn our_client_talks_to_the_reference_server() {
    let server = ReferenceServer::start().await;
    let client = within(Client::connect(&server.url)).await.unwrap();

    // Card.
    assert_eq!(client.card().name, "reference-echo");
    assert_eq!(client.card().capabilities.streaming, Some(true));
    assert_eq!(client.card().skills[0].id, "echo");
    assert_eq!(client.endpoint(), format!("{}/rpc", server.url));

    // Send (blocking).
    let sent = task(
        within(client.send(SendMessageRequest::new(Message::user_text("hi there"))))
            .await
            .unwrap(),
    );
    assert_eq!(sent.status.state, TaskState::Completed);
    assert_eq!(sent.artifact_text(), "echo: hi there");
    assert_eq!(sent.history[0].text(), "hi there");

    // Get, with historyLength.
    let got = within(client.get_task_with(GetTaskRequest {
        id: sent.id.clone(),
        history_length: Some(0),
        ..GetTaskRequest::default()
    }))
    .await
    .unwrap();
    assert_eq!(got.id, sent.id);
    assert_eq!(got.status.state, TaskState::Completed);
    assert_eq!(got.artifact_text(), "echo: hi there");
    assert!(got.history.is_empty());

    // Stream.
    let items = within(async {
        client
            .stream(SendMessageRequest::new(Message::user_text("streamed")))
            .await
            .unwrap()
            .collect_all()
            .await
            .unwrap()
    })
    .await;
    assert!(
        matches!(&items[0], StreamResponse::Task(t) if t.status.state == TaskState::Submitted),
        "{items:?}"
    );
    let states: Vec<_> = items.iter().filter_map(StreamResponse::state).collect();
    assert_eq!(states.last(), Some(&TaskState::Completed), "{items:?}");
    let artifact = items.iter().find_map(|i| match i {
        StreamResponse::ArtifactUpdate(a) => Some(a.artifact.text()),
        _ => None,
    });
    assert_eq!(artifact.as_deref(), Some("echo: streamed"));

    // Typed errors.
    let missing = within(client.get_task("no-such-task")).await.unwrap_err();
    assert_eq!(missing.code(), Some(ErrorCode::TaskNotFound), "{missing}");
    let again = within(client.cancel_task(&sent.id)).await.unwrap_err();
    assert_eq!(again.code(), Some(ErrorCode::TaskNotCancelable), "{again}");
    let terminal = within(client.subscribe(&sent.id)).await;
    let terminal = match terminal {
        Err(e) => e,
        // A server may also refuse inside the stream.
        Ok(s) => s.collect_all().await.unwrap_err(),
    };
    assert_eq!(
        terminal.code(),
        Some(ErrorCode::UnsupportedOperation),
        "{terminal}"
    );
}

#[tokio::test]
async fn our_client_subscribes_to_and_cancels_a_reference_task() {
    let server = ReferenceServer::start().await;
    let client = within(Client::connect(&server.url)).await.unwrap();
    let started = task(
        within(
            client
                .send(SendMessageRequest::new(Message::user_text("slow job")).return_immediately()),
        )
        .await
        .unwrap(),
    );
    assert!(!started.status.state.is_terminal(), "{:?}", started.status);

    let mut updates = within(client.subscribe(&started.id)).await.unwrap();
    let first = within(updates.next()).await.unwrap().unwrap();
    assert!(
        matches!(&first, StreamResponse::Task(t) if t.id == started.id),
        "{first:?}"
    );

    let canceled = within(client.cancel_task(&started.id)).await.unwrap();
    assert_eq!(canceled.id, started.id);
    assert_eq!(canceled.status.state, TaskState::Canceled);

    // The subscription reports the cancellation, then ends.
    let rest: Vec<Result<StreamResponse, ClientError>> = within(updates.collect()).await;
    let states: Vec<_> = rest
        .iter()
        .filter_map(|r| r.as_ref().ok().and_then(StreamResponse::state))
        .collect();
    assert_eq!(states.last(), Some(&TaskState::Canceled), "{rest:?}");
    let got = within(client.get_task(&started.id)).await.unwrap();
    assert_eq!(got.status.state, TaskState::Canceled);
}

#[tokio::test]
async fn a_card_without_a_1_0_jsonrpc_interface_is_refused() {
    let server = ReferenceServer::start().await;
    let mut card = within(Client::connect(&server.url))
        .await
        .unwrap()
        .card()
        .clone();
    card.supported_interfaces[0].protocol_version = "0.3".into();
    let err = Client::builder().from_card(card).unwrap_err();
    assert!(
        matches!(err, ClientError::NoJsonRpcInterface { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("JSONRPC@0.3"), "{err}");
    let err = within(Client::connect("http://127.0.0.1:9/not-here"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Http(_)), "{err}");
}
