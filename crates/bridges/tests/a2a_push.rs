//! A2A push notifications end to end: webhook receivers on 127.0.0.1
//! (allowlisted as IP literals) get every status change once, in order,
//! signed and with the config's token; a 503 is retried under the same
//! delivery id; refused URLs (host not allowlisted, a name resolving to
//! loopback, a name that does not resolve, credentials, other schemes) are
//! refused at registration, and a name rebound to loopback afterwards
//! before each delivery; redirects are not followed; another principal
//! cannot see or touch a task's configs; shutdown delivers the final
//! status; failures are logged without the URL's secrets; the official JS
//! client drives the config RPCs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/a2a_agents.rs"]
mod a2a_agents;
#[path = "support/a2a_peers.rs"]
mod a2a_peers;
#[path = "support/push.rs"]
mod push;

use std::sync::Arc;
use std::time::Duration;

use a2a_agents::{Scenarios, builder};
use agent_adaptor_bridges::a2a::A2aServerBuilder;
use agent_adaptor_bridges::a2a::push::{
    DELIVERY_HEADER, PushSettings, PushSetupError, SIGNATURE_HEADER, TOKEN_HEADER, verify_signature,
};
use agent_adaptor_core::MemoryStore;
use agent_adaptor_core::thread::ThreadStore;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use push::{FixedNames, Rebinding, Receiver, Served, refusal, user_message};
use serde_json::{Value, json};

const SECRET: &str = "push-secret-for-the-tests-0123456789";

/// The tests' push settings: `allow` allowlisted, quick retries,
/// `hooks.test` resolving to 127.0.0.1.
fn settings(allow: &[&str]) -> PushSettings {
    let mut settings = PushSettings::new(SECRET)
        .unwrap()
        .retries(6, Duration::from_millis(20))
        .resolver(FixedNames(vec![(
            "hooks.test",
            "127.0.0.1".parse().unwrap(),
        )]));
    for a in allow {
        settings = settings.allow_host(a).unwrap();
    }
    settings
}

/// The scenarios with push on as `settings` say, tasks (and their configs)
/// in `store`.
fn with_settings(
    scenarios: &Arc<Scenarios>,
    store: Arc<MemoryStore>,
    settings: PushSettings,
) -> A2aServerBuilder {
    builder(scenarios)
        .task_store(store)
        .push_notifications(settings)
        .unwrap()
}

/// The scenarios with push on: `allow` allowlisted, quick retries.
fn with_push(scenarios: &Arc<Scenarios>, allow: &[&str]) -> A2aServerBuilder {
    with_settings(scenarios, Arc::new(MemoryStore::new()), settings(allow))
}

/// `SendMessage` as `principal` with `config` as its push config.
async fn send_with_push(served: &Served, principal: &str, text: &str, config: Value) -> Value {
    served
        .rpc(
            principal,
            "SendMessage",
            json!({
                "message": user_message(text),
                "configuration": {"taskPushNotificationConfig": config},
            }),
        )
        .await
}

fn verified(hit: &push::Hit) {
    let now = chrono::Utc::now().timestamp();
    verify_signature(
        SECRET.as_bytes(),
        hit.header(SIGNATURE_HEADER),
        &hit.body,
        now,
        Duration::from_secs(300),
    )
    .unwrap_or_else(|e| panic!("{e}: {:?}", hit.headers));
}

#[tokio::test]
async fn every_status_change_is_pushed_once_in_order_signed_with_the_token() {
    let receiver = Receiver::ok().await;
    let scenarios = Scenarios::new();
    let served = Served::start(with_push(&scenarios, &[&receiver.authority])).await;
    assert_eq!(
        served.card().await["capabilities"]["pushNotifications"],
        true
    );

    let config = json!({"url": receiver.url(), "token": "tok-123"});
    let asked = send_with_push(&served, "alice", "approve a listing", config).await;
    let task = &asked["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    let task_id = task["id"].as_str().unwrap();
    let mut answer = user_message("approve");
    answer["taskId"] = json!(task_id);
    let done = served
        .rpc("alice", "SendMessage", json!({"message": answer}))
        .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );

    let hits = receiver.wait_for(4).await;
    let states: Vec<String> = hits.iter().map(push::Hit::state).collect();
    assert_eq!(
        states,
        [
            "TASK_STATE_WORKING",
            "TASK_STATE_INPUT_REQUIRED",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED"
        ]
    );
    for (i, hit) in hits.iter().enumerate() {
        verified(hit);
        assert_eq!(hit.header(TOKEN_HEADER), "tok-123");
        assert_eq!(hit.header(DELIVERY_HEADER), format!("{task_id}:{}", i + 1));
        assert_eq!(
            hit.header(header::CONTENT_TYPE.as_str()),
            "application/a2a+json"
        );
        assert_eq!(hit.json()["statusUpdate"]["taskId"], task_id);
    }
    // A signature does not verify under another secret or for another body.
    let now = chrono::Utc::now().timestamp();
    let sig = hits[0].header(SIGNATURE_HEADER);
    let tolerance = Duration::from_secs(300);
    assert!(
        verify_signature(
            b"another-secret-entirely",
            sig,
            &hits[0].body,
            now,
            tolerance
        )
        .is_err()
    );
    assert!(verify_signature(SECRET.as_bytes(), sig, &hits[1].body, now, tolerance).is_err());
    // The input-required push carries the question.
    let question = &hits[1].json()["statusUpdate"]["status"]["message"];
    assert!(question["parts"].as_array().is_some_and(|p| !p.is_empty()));
    assert_eq!(receiver.hits().len(), 4, "{:?}", receiver.hits());
}

#[tokio::test]
async fn a_503_is_retried_under_the_same_delivery_id() {
    let receiver = Receiver::start(|n| {
        if n == 0 {
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        } else {
            StatusCode::OK.into_response()
        }
    })
    .await;
    let scenarios = Scenarios::new();
    let served = Served::start(with_push(&scenarios, &[&receiver.authority])).await;
    let sent = send_with_push(&served, "alice", "hello", json!({"url": receiver.url()})).await;
    let task_id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        sent["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    let hits = receiver.wait_for(3).await;
    let ids: Vec<&str> = hits.iter().map(|h| h.header(DELIVERY_HEADER)).collect();
    assert_eq!(
        ids,
        [
            format!("{task_id}:1"),
            format!("{task_id}:1"),
            format!("{task_id}:2")
        ]
    );
    assert_eq!(hits[0].body, hits[1].body, "a retry sends the same body");
    assert_eq!(hits[1].state(), "TASK_STATE_WORKING");
    assert_eq!(hits[2].state(), "TASK_STATE_COMPLETED");
    for hit in &hits {
        verified(hit);
        assert_eq!(hit.header(TOKEN_HEADER), "", "no token configured");
    }
}

#[tokio::test]
async fn a_4xx_is_not_retried_and_redirects_are_not_followed() {
    let target = Receiver::ok().await;
    let location = target.url();
    let redirecting = Receiver::start(move |_| {
        (StatusCode::FOUND, [(header::LOCATION, location.clone())]).into_response()
    })
    .await;
    let refusing = Receiver::start(|_| StatusCode::BAD_REQUEST.into_response()).await;
    let scenarios = Scenarios::new();
    let allow = [
        redirecting.authority.as_str(),
        target.authority.as_str(),
        refusing.authority.as_str(),
    ];
    let served = Served::start(with_push(&scenarios, &allow)).await;
    for receiver in [&redirecting, &refusing] {
        let sent = send_with_push(&served, "alice", "hello", json!({"url": receiver.url()})).await;
        assert_eq!(
            sent["result"]["task"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
        let hits = receiver.wait_for(2).await;
        let states: Vec<String> = hits.iter().map(push::Hit::state).collect();
        assert_eq!(
            states,
            ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"],
            "once each"
        );
    }
    assert!(target.hits().is_empty(), "the redirect was not followed");
}

#[tokio::test]
async fn refused_urls_are_refused_at_registration() {
    let receiver = Receiver::ok().await;
    let port = receiver.authority.rsplit_once(':').unwrap().1.to_owned();
    let scenarios = Scenarios::new();
    let allow = [
        receiver.authority.clone(),
        "example.invalid".to_owned(),
        "hooks.test".to_owned(),
    ];
    let allow: Vec<&str> = allow.iter().map(String::as_str).collect();
    let served = Served::start(with_push(&scenarios, &allow)).await;
    // A task waiting for input (so it outlives the checks).
    let started = served
        .rpc(
            "alice",
            "SendMessage",
            json!({"message": user_message("approve a listing")}),
        )
        .await;
    let task_id = started["result"]["task"]["id"].as_str().unwrap().to_owned();
    let cases = [
        (format!("http://127.0.0.2:{port}/hook"), "host_not_allowed"),
        (format!("http://localhost:{port}/hook"), "host_not_allowed"),
        (
            "https://other.example.com/hook".to_owned(),
            "host_not_allowed",
        ),
        (
            format!("http://127.0.0.1:{}/hook", port.parse::<u16>().unwrap() ^ 1),
            "host_not_allowed",
        ),
        ("http://example.invalid/hook".to_owned(), "unresolvable"),
        (
            format!("http://hooks.test:{port}/hook"),
            "forbidden_address",
        ),
        (format!("ftp://127.0.0.1:{port}/hook"), "scheme"),
        (
            format!("http://user:pw@127.0.0.1:{port}/hook"),
            "credentials",
        ),
    ];
    for (url, kind) in &cases {
        let params = json!({"taskId": task_id, "url": url});
        let r = served
            .rpc("alice", "CreateTaskPushNotificationConfig", params)
            .await;
        assert_eq!(r["error"]["code"], -32602, "{url}: {r}");
        assert_eq!(refusal(&r), *kind, "{url}: {r}");
    }
    let bad_token = json!({"taskId": task_id, "url": receiver.url(), "token": "a\nb"});
    let r = served
        .rpc("alice", "CreateTaskPushNotificationConfig", bad_token)
        .await;
    assert_eq!(refusal(&r), "bad_header", "{r}");
    let listed = served
        .rpc(
            "alice",
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task_id}),
        )
        .await;
    assert_eq!(listed["result"]["configs"], json!([]), "{listed}");

    // In SendMessage: refused, and nothing runs.
    let before = scenarios.calls();
    let refused = send_with_push(
        &served,
        "alice",
        "hello",
        json!({"url": "http://hooks.test/"}),
    )
    .await;
    assert_eq!(refusal(&refused), "forbidden_address", "{refused}");
    assert_eq!(scenarios.calls(), before, "nothing ran");
    assert!(receiver.hits().is_empty());
}

#[tokio::test]
async fn only_the_tasks_owner_manages_its_configs() {
    let receiver = Receiver::ok().await;
    let scenarios = Scenarios::new();
    let served = Served::start(with_push(&scenarios, &[&receiver.authority])).await;
    let started = served
        .rpc(
            "alice",
            "SendMessage",
            json!({"message": user_message("approve a listing")}),
        )
        .await;
    let task_id = started["result"]["task"]["id"].as_str().unwrap().to_owned();
    let create = json!({"taskId": task_id, "id": "hook-1", "url": receiver.url(), "token": "t"});
    let created = served
        .rpc("alice", "CreateTaskPushNotificationConfig", create.clone())
        .await;
    assert_eq!(created["result"]["id"], "hook-1", "{created}");
    assert_eq!(created["result"]["taskId"], task_id);
    let one = json!({"taskId": task_id, "id": "hook-1"});
    for (method, params) in [
        ("GetTaskPushNotificationConfig", one.clone()),
        (
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task_id}),
        ),
        ("DeleteTaskPushNotificationConfig", one.clone()),
        ("CreateTaskPushNotificationConfig", create.clone()),
    ] {
        let r = served.rpc("mallory", method, params).await;
        assert_eq!(r["error"]["code"], -32001, "{method}: {r}");
    }
    let listed = served
        .rpc(
            "alice",
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task_id}),
        )
        .await;
    let configs = listed["result"]["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 1, "{listed}");
    assert_eq!(configs[0]["url"], receiver.url());
    let got = served
        .rpc("alice", "GetTaskPushNotificationConfig", one.clone())
        .await;
    assert_eq!(got["result"]["token"], "t", "{got}");
    let deleted = served
        .rpc("alice", "DeleteTaskPushNotificationConfig", one.clone())
        .await;
    assert_eq!(deleted["result"], json!({}), "{deleted}");
    for method in [
        "GetTaskPushNotificationConfig",
        "DeleteTaskPushNotificationConfig",
    ] {
        let r = served.rpc("alice", method, one.clone()).await;
        assert_eq!(r["error"]["code"], -32001, "{method} after delete: {r}");
    }
}

#[tokio::test]
async fn push_is_off_without_an_allowed_host() {
    let scenarios = Scenarios::new();
    let served = Served::start(with_push(&scenarios, &[])).await;
    assert_eq!(
        served.card().await["capabilities"]["pushNotifications"],
        false
    );
    let started = served
        .rpc(
            "alice",
            "SendMessage",
            json!({"message": user_message("hello")}),
        )
        .await;
    let task_id = started["result"]["task"]["id"].as_str().unwrap();
    let r = served
        .rpc(
            "alice",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_id, "url": "https://hooks.example.com/"}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32003, "{r}");
    let before = scenarios.calls();
    let r = send_with_push(
        &served,
        "alice",
        "hello",
        json!({"url": "https://hooks.example.com/"}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32003, "{r}");
    assert_eq!(scenarios.calls(), before);
}

/// The official JS client (`@a2a-js/sdk`) creates two configs on a task
/// waiting for input, gets and lists them, deletes one, is refused a host
/// not allowlisted, answers the task; the receiver gets the pushes of the
/// config left.
#[tokio::test]
async fn the_official_js_client_manages_configs() {
    let receiver = Receiver::ok().await;
    let scenarios = Scenarios::new();
    let served = Served::start(with_push(&scenarios, &[&receiver.authority])).await;
    let script = a2a_peers::script("client.mjs");
    let out = a2a_peers::run(
        &a2a_peers::node(),
        &[
            script.to_str().unwrap(),
            "push",
            &served.url,
            &receiver.url(),
            "http://not-allowed.example.com/hook",
        ],
        None,
        Duration::from_secs(90),
    )
    .await;
    let r = out.json();
    assert_eq!(r["created"]["id"], "hook-1", "{r}");
    assert_eq!(r["created"]["url"], receiver.url());
    assert_eq!(r["got"]["token"], "tok-js", "{r}");
    assert_eq!(r["listed"], json!(["hook-1", "hook-2"]), "{r}");
    assert_eq!(r["listedAfterDelete"], json!(["hook-1"]), "{r}");
    assert_eq!(r["refused"]["code"], -32602, "{r}");
    assert_eq!(r["final"], "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(r["afterDelete"]["code"], -32001, "{r}");
    let hits = receiver.wait_for(2).await;
    let states: Vec<String> = hits.iter().map(push::Hit::state).collect();
    // Registered while the task waited: the answer's WORKING, then COMPLETED.
    assert_eq!(states, ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]);
    assert!(hits.iter().all(|h| h.header(TOKEN_HEADER) == "tok-js"));
}

/// Shutdown cancels a task waiting for input and waits (bounded) for the
/// pushes: the receiver has the final CANCELED when `shutdown` returns.
#[tokio::test]
async fn shutdown_delivers_the_final_status_before_it_returns() {
    let receiver = Receiver::ok().await;
    let scenarios = Scenarios::new();
    let served = Served::start(with_push(&scenarios, &[&receiver.authority])).await;
    let config = json!({"url": receiver.url()});
    let response = send_with_push(&served, "alice", "approve a listing", config).await;
    assert_eq!(
        response["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{response}"
    );
    served.server().shutdown(Duration::from_secs(20)).await;
    let states: Vec<String> = receiver.hits().iter().map(push::Hit::state).collect();
    assert_eq!(
        states,
        [
            "TASK_STATE_WORKING",
            "TASK_STATE_INPUT_REQUIRED",
            "TASK_STATE_CANCELED"
        ]
    );
}

/// Configs are rows of their task in the server's task store (core's
/// `MemoryStore` here), and the deliveries follow them.
#[tokio::test]
async fn configs_live_in_the_task_stores_task_rows() {
    let receiver = Receiver::ok().await;
    let store = Arc::new(MemoryStore::new());
    let scenarios = Scenarios::new();
    let builder = with_settings(&scenarios, store.clone(), settings(&[&receiver.authority]));
    let served = Served::start(builder).await;
    let asked = served
        .rpc(
            "alice",
            "SendMessage",
            json!({"message": user_message("approve a listing")}),
        )
        .await;
    let task_id = asked["result"]["task"]["id"].as_str().unwrap().to_owned();
    let create = json!({"taskId": task_id, "id": "hook-1", "url": receiver.url(), "token": "t"});
    let r = served
        .rpc("alice", "CreateTaskPushNotificationConfig", create)
        .await;
    assert_eq!(r["result"]["id"], "hook-1", "{r}");
    let rows = store.push_configs(&task_id).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].config["url"], receiver.url());
    let mut answer = user_message("approve");
    answer["taskId"] = json!(task_id);
    served
        .rpc("alice", "SendMessage", json!({"message": answer}))
        .await;
    let hits = receiver.wait_for(2).await;
    let states: Vec<String> = hits.iter().map(push::Hit::state).collect();
    assert_eq!(states, ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]);
    assert!(hits.iter().all(|h| h.header(TOKEN_HEADER) == "t"));
}

/// Push keeps configs in the task store: turning it on without one is
/// refused, not silently off.
#[test]
fn push_without_a_task_store_is_refused() {
    let scenarios = Scenarios::new();
    let refused = builder(&scenarios).push_notifications(settings(&["hooks.test"]));
    assert!(matches!(refused, Err(PushSetupError::NoTaskStore)));
}

/// A name that passed at registration (a public address) and then
/// resolves to loopback is refused before every delivery: the loopback
/// receiver behind it never hears a thing.
#[tokio::test]
async fn a_name_rebound_to_loopback_after_registration_gets_nothing() {
    let receiver = Receiver::ok().await;
    let port = receiver.authority.rsplit_once(':').unwrap().1.to_owned();
    let scenarios = Scenarios::new();
    let resolver = Arc::new(Rebinding::default());
    let settings = settings(&["rebind.test"])
        .retries(3, Duration::from_millis(10))
        .resolver(resolver.clone());
    let store = Arc::new(MemoryStore::new());
    let served = Served::start(with_settings(&scenarios, store, settings)).await;
    let config = json!({"url": format!("http://rebind.test:{port}/hook")});
    let sent = send_with_push(&served, "alice", "hello", config).await;
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    // Shutdown waits until both changes were given up.
    served.server().shutdown(Duration::from_secs(20)).await;
    assert!(receiver.hits().is_empty(), "{:?}", receiver.hits());
    assert_eq!(
        resolver.0.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "registration, then one check per change (a refusal is not retried)"
    );
}

/// A webhook that keeps failing: the log says so, with the URL's origin
/// only — never its path, query, the token or the credentials.
#[tokio::test]
async fn failures_are_logged_without_the_urls_path_token_or_credentials() {
    let log = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let sink = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || LogWriter(sink.clone()))
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let text = || String::from_utf8_lossy(&log.lock().unwrap()).into_owned();

    let receiver = Receiver::start(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()).await;
    let scenarios = Scenarios::new();
    let settings = settings(&[&receiver.authority]).retries(2, Duration::from_millis(10));
    let store = Arc::new(MemoryStore::new());
    let served = Served::start(with_settings(&scenarios, store, settings)).await;
    let url = format!(
        "http://{}/hook/path-secret?q=query-secret",
        receiver.authority
    );
    let config = json!({
        "url": url,
        "token": "token-secret",
        "authentication": {"scheme": "Bearer", "credentials": "credentials-secret"},
    });
    let sent = send_with_push(&served, "alice", "hello", config).await;
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    let hits = receiver.wait_for(4).await;
    assert_eq!(hits[0].header("authorization"), "Bearer credentials-secret");
    for _ in 0..600 {
        if text().matches("no attempts left").count() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let logged = text();
    assert_eq!(logged.matches("no attempts left").count(), 2, "{logged}");
    assert!(
        logged.contains(&format!("http://{}", receiver.authority)),
        "{logged}"
    );
    assert!(logged.contains("HTTP 500"), "{logged}");
    assert!(!logged.contains("secret"), "{logged}");
}

/// A `std::io::Write` into a shared buffer (the captured log).
struct LogWriter(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
