//! Two A2A servers over one task store, as two `agent-adaptor serve`
//! instances over one database: a task started on one is read, followed,
//! cancelled and listed on the other; when the first one dies, the
//! interrupted run fails its task and the other server's follower sees
//! the end. The official JS client (`@a2a-js/sdk`, `list_across` in
//! tests/bridges/a2a/client.mjs) lists on one server the tasks it sent to
//! the other. (`agent-adaptor serve` instances over PostgreSQL: the cli
//! tests.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/a2a_agents.rs"]
mod a2a_agents;
#[path = "support/a2a_peers.rs"]
mod a2a_peers;

use std::sync::Arc;
use std::time::Duration;

use a2a_agents::{Scenarios, builder};
use agent_adaptor_bridges::a2a::{
    A2aServer, Client, ErrorCode, GetTaskRequest, INTERRUPTED_TEXT, ListTasksRequest, Message,
    RunningServer, SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskState,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::thread::store::InterruptedRun;
use agent_adaptor_core::{Agent, MemoryStore, RunOptions, ThreadStore};
use agent_adaptor_driver::StreamPayload;
use futures::StreamExt;

const DEADLINE: Duration = Duration::from_secs(30);

async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, fut)
        .await
        .expect("finished within the deadline")
}

/// A server over `store`, polling often (the test store notifies anyway).
fn server(scenarios: &Arc<Scenarios>, store: &Arc<dyn ThreadStore>) -> A2aServer {
    builder(scenarios)
        .task_store(store.clone())
        .task_poll_interval(Duration::from_millis(50))
        .cancel_wait(Duration::from_secs(20))
        .build()
}

async fn serve(server: &A2aServer) -> (RunningServer, Client) {
    let running = server.clone().serve_local().await.unwrap();
    let client = Client::connect(running.url()).await.unwrap();
    (running, client)
}

/// Two servers over one store, served, with a client each.
struct Pair {
    a: A2aServer,
    b: A2aServer,
    ra: RunningServer,
    rb: RunningServer,
    on_a: Client,
    on_b: Client,
}

impl Pair {
    /// Serve `a` and `b`.
    async fn of(a: A2aServer, b: A2aServer) -> Self {
        let ((ra, on_a), (rb, on_b)) = (serve(&a).await, serve(&b).await);
        Pair {
            a,
            b,
            ra,
            rb,
            on_a,
            on_b,
        }
    }

    /// Stop both.
    async fn shutdown(self) {
        self.ra.shutdown().await.unwrap();
        self.rb.shutdown().await.unwrap();
    }
}

/// Two [`server`]s over `store`, served.
async fn pair(scenarios: &Arc<Scenarios>, store: &Arc<dyn ThreadStore>) -> Pair {
    Pair::of(server(scenarios, store), server(scenarios, store)).await
}

/// Run `run_id` of context `context_id`'s thread, interrupted now.
fn interrupted(context_id: &str, run_id: &str, prompt: Option<&str>) -> InterruptedRun {
    InterruptedRun {
        key: format!("a2a:{context_id}"),
        run_id: run_id.into(),
        prompt: prompt.map(Into::into),
        started_at: chrono::Utc::now(),
        interrupted_at: chrono::Utc::now(),
    }
}

fn task(reply: SendMessageResponse) -> Task {
    match reply {
        SendMessageResponse::Task(t) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Start `prompt` without waiting; its task.
async fn start(client: &Client, prompt: &str) -> Task {
    let request = SendMessageRequest::new(Message::user_text(prompt)).return_immediately();
    task(client.send(request).await.unwrap())
}

/// Read task `id` through `client` until `done` holds (bounded).
async fn wait_for(client: &Client, id: &str, done: impl Fn(&Task) -> bool) -> Task {
    within(async {
        loop {
            if let Ok(t) = client.get_task(id).await
                && done(&t)
            {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

fn states(items: &[StreamResponse]) -> Vec<TaskState> {
    items.iter().filter_map(StreamResponse::state).collect()
}

#[tokio::test]
async fn a_task_is_read_followed_cancelled_and_listed_on_another_server() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let scenarios = Scenarios::new();
    let servers = pair(&scenarios, &store).await;
    let (a, b, on_a, on_b) = (&servers.a, &servers.b, &servers.on_a, &servers.on_b);

    // A finished task: the other server reads it, history trimmed on ask.
    let hello = task(
        on_a.send(SendMessageRequest::new(Message::user_text("hello")))
            .await
            .unwrap(),
    );
    assert_eq!(hello.status.state, TaskState::Completed);
    let read = wait_for(on_b, &hello.id, |t| t.status.state.is_terminal()).await;
    assert_eq!(read.artifact_text(), "Hello from agent-adaptor");
    assert_eq!(read.context_id, hello.context_id);
    assert_eq!(read.history[0].text(), "hello");
    let trimmed = on_b
        .get_task_with(GetTaskRequest {
            id: hello.id.clone(),
            history_length: Some(0),
            ..GetTaskRequest::default()
        })
        .await
        .unwrap();
    assert!(trimmed.history.is_empty());
    let err = on_b.subscribe(&hello.id).await.err().unwrap();
    assert_eq!(err.code(), Some(ErrorCode::UnsupportedOperation));
    let err = on_b.cancel_task(&hello.id).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::TaskNotCancelable));

    // A task in progress on A: B follows it and cancels it; A's run stops.
    let hang = start(on_a, "hang").await;
    wait_for(on_b, &hang.id, |t| {
        t.status.state == TaskState::Working && t.artifact_text() == "working"
    })
    .await;
    let mut follower = on_b.subscribe(&hang.id).await.unwrap();
    let first = within(follower.next()).await.unwrap().unwrap();
    let StreamResponse::Task(snapshot) = first else {
        panic!("the first item is the task: {first:?}")
    };
    assert_eq!(snapshot.status.state, TaskState::Working);
    let cancelled = within(on_b.cancel_task(&hang.id)).await.unwrap();
    assert_eq!(cancelled.status.state, TaskState::Canceled);
    let rest = within(follower.collect_all()).await.unwrap();
    assert_eq!(states(&rest), [TaskState::Canceled], "{rest:?}");
    let on_owner = on_a.get_task(&hang.id).await.unwrap();
    assert_eq!(on_owner.status.state, TaskState::Canceled);

    // B lists both, newest change first, without artifacts unless asked.
    let all = on_b.list_tasks(ListTasksRequest::default()).await.unwrap();
    let ids: Vec<_> = all.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, [hang.id.as_str(), hello.id.as_str()]);
    assert_eq!(all.total_size, 2);
    assert!(all.next_page_token.is_empty());
    assert!(all.tasks.iter().all(|t| t.artifacts.is_empty()));
    let with_artifacts = ListTasksRequest {
        include_artifacts: Some(true),
        status: Some(TaskState::Completed),
        ..ListTasksRequest::default()
    };
    let completed = on_b.list_tasks(with_artifacts).await.unwrap();
    assert_eq!(completed.tasks.len(), 1);
    assert_eq!(
        completed.tasks[0].artifact_text(),
        "Hello from agent-adaptor"
    );
    let first_page = on_b
        .list_tasks(ListTasksRequest {
            page_size: Some(1),
            ..ListTasksRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(first_page.tasks[0].id, hang.id);
    assert_eq!(first_page.total_size, 2);
    let second_page = on_b
        .list_tasks(ListTasksRequest {
            page_size: Some(1),
            page_token: first_page.next_page_token.clone(),
            ..ListTasksRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(second_page.tasks[0].id, hello.id);
    assert!(second_page.next_page_token.is_empty());
    let of_context = on_b
        .list_tasks(ListTasksRequest {
            context_id: hello.context_id.clone(),
            ..ListTasksRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(of_context.tasks.len(), 1);
    let err = on_b
        .list_tasks(ListTasksRequest {
            page_size: Some(101),
            ..ListTasksRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidParams));

    assert_eq!(a.store_failures() + b.store_failures(), 0);

    // Pruning: the finished tasks leave the store, and A forgets nothing
    // it still holds in memory.
    assert_eq!(b.prune_stored_tasks(Duration::from_secs(3600)).await, Ok(0));
    assert_eq!(b.prune_stored_tasks(Duration::ZERO).await, Ok(2));
    let err = on_b.get_task(&hello.id).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::TaskNotFound));
    assert_eq!(on_a.get_task(&hello.id).await.unwrap().id, hello.id);
    let none = on_b.list_tasks(ListTasksRequest::default()).await.unwrap();
    assert_eq!(none.total_size, 0);
    servers.shutdown().await;
}

/// A server over `store` in a runtime of its own, so that it can die
/// without a word (its runtime dropped: no cancel, no final write).
struct Doomed {
    url: String,
    kill: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

fn doomed(store: Arc<dyn ThreadStore>) -> Doomed {
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (kill, killed) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let scenarios = Scenarios::new();
        let running = rt
            .block_on(server(&scenarios, &store).serve_local())
            .unwrap();
        url_tx.send(running.url().to_owned()).unwrap();
        let _ = killed.recv();
        // Dropping the server would cancel its runs: it must vanish instead.
        std::mem::forget(running);
        rt.shutdown_background();
    });
    Doomed {
        url: url_rx.recv().unwrap(),
        kill,
        thread,
    }
}

#[tokio::test]
async fn a_dead_owner_s_task_fails_and_its_follower_sees_the_end() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let owner = doomed(store.clone());
    let on_owner = Client::connect(&owner.url).await.unwrap();
    let scenarios = Scenarios::new();
    let b = server(&scenarios, &store);
    let (rb, on_b) = serve(&b).await;

    let hang = start(&on_owner, "hang").await;
    wait_for(&on_b, &hang.id, |t| t.artifact_text() == "working").await;
    let mut follower = on_b.subscribe(&hang.id).await.unwrap();
    let first = within(follower.next()).await.unwrap().unwrap();
    assert!(matches!(first, StreamResponse::Task(_)), "{first:?}");

    owner.kill.send(()).unwrap();
    owner.thread.join().unwrap();
    let run = interrupted(&hang.context_id, "run-of-the-dead", Some("hang"));
    assert_eq!(b.runs_interrupted(std::slice::from_ref(&run)).await, Ok(1));

    let rest = within(follower.collect_all()).await.unwrap();
    assert_eq!(states(&rest), [TaskState::Failed], "{rest:?}");
    let failed = on_b.get_task(&hang.id).await.unwrap();
    assert_eq!(failed.status.state, TaskState::Failed);
    let note = failed.status.message.as_ref().unwrap().text();
    assert_eq!(note, INTERRUPTED_TEXT);
    assert_eq!(
        failed.metadata.as_ref().unwrap()["agentAdaptor"]["reason"],
        "interrupted"
    );
    // Once failed, the task is not failed again.
    assert_eq!(b.runs_interrupted(&[run]).await, Ok(0));
    rb.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_official_js_client_lists_on_one_server_the_tasks_sent_to_another() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let scenarios = Scenarios::new();
    let servers = pair(&scenarios, &store).await;
    let (ra, rb) = (&servers.ra, &servers.rb);
    let script = a2a_peers::script("client.mjs");
    let out = a2a_peers::run(
        &a2a_peers::node(),
        &[script.to_str().unwrap(), "list_across", ra.url(), rb.url()],
        None,
        Duration::from_secs(90),
    )
    .await;
    let report = out.json();
    let sent = &report["sent"];
    let (hello, structured) = (sent[0].clone(), sent[1].clone());
    let all = &report["all"];
    // Newest change first: the second task finished last.
    assert_eq!(
        all["ids"],
        serde_json::json!([structured, hello]),
        "{report}"
    );
    assert_eq!(all["totalSize"], 2);
    assert_eq!(all["pageSize"], 50);
    assert_eq!(all["nextPageToken"], "");
    assert_eq!(
        all["states"],
        serde_json::json!(["TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"])
    );
    assert_eq!(
        all["artifactText"],
        serde_json::json!(["{\"answer\": 42}", "Hello from agent-adaptor"])
    );
    assert_eq!(all["historyLengths"], serde_json::json!([0, 0]));
    let (first, second) = (&report["first"], &report["second"]);
    assert_eq!(first["ids"], serde_json::json!([structured]));
    assert_ne!(first["nextPageToken"], "");
    assert_eq!(
        first["artifactText"],
        serde_json::json!([""]),
        "no artifacts unless asked"
    );
    assert_eq!(second["ids"], serde_json::json!([hello]));
    assert_eq!(second["nextPageToken"], "");
    assert_eq!(report["ofContext"]["ids"], serde_json::json!([hello]));
    assert_eq!(report["completed"]["totalSize"], 2);
    assert_eq!(report["got"]["id"], hello);
    assert_eq!(report["got"]["artifactText"], "Hello from agent-adaptor");
    let statuses = report["statuses"].as_array().unwrap();
    assert!(statuses.iter().all(|s| s == 200), "{report}");
    servers.shutdown().await;
}

#[tokio::test]
async fn a_thread_task_names_its_run_s_lease_holder_and_only_that_run_fails_it() {
    let memory = Arc::new(MemoryStore::new());
    let store: Arc<dyn ThreadStore> = memory.clone();
    let driver = ScriptedDriver::new(
        vec![
            Step::Stream(StreamPayload::run_started()),
            Step::WaitForCancel,
        ],
        Ending::Fail("unreachable".into()),
    )
    .with_resume(
        Arc::new(agent_adaptor_driver::StandardSessionCodec::new("scripted")),
        "scripted-config-v1",
    );
    let agent = Agent::builder(driver)
        .thread_store(memory)
        .lease_owner("host-a", "epoch-1")
        .build()
        .unwrap();
    let owner = A2aServer::with_threads(agent)
        .task_store(store.clone())
        .build();
    let scenarios = Scenarios::new();
    let servers = Pair::of(owner, server(&scenarios, &store)).await;
    let (owner, other) = (&servers.a, &servers.b);
    let (on_owner, on_b) = (&servers.on_a, &servers.on_b);

    let started = start(on_owner, "wait").await;
    let holder = within(async {
        loop {
            let row = store.task(&started.id).await.unwrap().unwrap();
            if let Some(h) = row.holder {
                return h;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let (prefix, run_id) = holder.split_once('/').unwrap();
    assert_eq!(prefix, "host-a@epoch-1");
    let run = |run_id: &str| interrupted(&started.context_id, run_id, None);
    // Another run of the thread: the task is not its.
    assert_eq!(other.runs_interrupted(&[run("another-run")]).await, Ok(0));
    // The owner runs it: its own server never fails it.
    assert_eq!(owner.runs_interrupted(&[run(run_id)]).await, Ok(0));
    assert_eq!(other.runs_interrupted(&[run(run_id)]).await, Ok(1));
    let failed = on_b.get_task(&started.id).await.unwrap();
    assert_eq!(failed.status.state, TaskState::Failed);
    let row = store.task(&started.id).await.unwrap().unwrap();
    assert_eq!(row.holder, None);
    servers.shutdown().await;
}

#[tokio::test]
async fn input_required_is_answered_on_another_server() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let scenarios = Scenarios::new();
    let servers = pair(&scenarios, &store).await;
    let (on_a, on_b) = (&servers.on_a, &servers.on_b);

    let asked = task(
        on_a.send(SendMessageRequest::new(Message::user_text("approve it")))
            .await
            .unwrap(),
    );
    assert_eq!(asked.status.state, TaskState::InputRequired);
    wait_for(on_b, &asked.id, |t| {
        t.status.state == TaskState::InputRequired
    })
    .await;
    let reply = |text: &str| {
        let mut m = Message::user_text(text);
        m.task_id = asked.id.clone();
        SendMessageRequest::new(m)
    };
    // Checked as the owner would: the task still waits.
    let err = on_b.send(reply("maybe")).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidParams));
    let err = on_b.send(reply("always")).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidParams), "not grantable");
    assert_eq!(
        on_a.get_task(&asked.id).await.unwrap().status.state,
        TaskState::InputRequired
    );

    let done = task(within(on_b.send(reply("approve"))).await.unwrap());
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(done.artifact_text(), "listed 3 files");
    let on_owner = on_a.get_task(&asked.id).await.unwrap();
    assert_eq!(on_owner.status.state, TaskState::Completed);
    assert!(on_owner.history.iter().any(|m| m.text() == "approve"));
    // Finished: a further answer is refused.
    let err = on_b.send(reply("approve")).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::UnsupportedOperation));
    servers.shutdown().await;
}

/// An answer from another server whose owner applies it and asks again
/// at once (both changes may land in one write): the answering call sees
/// the second question instead of waiting for a state other than
/// input-required (its wait is far longer than the deadline).
#[tokio::test]
async fn an_answer_followed_at_once_by_another_question_does_not_stall() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let mut second = a2a_agents::permission();
    second.tool_call_id = "call-2".into();
    let mut steps = vec![Step::Decide(a2a_agents::permission()), Step::Decide(second)];
    steps.extend(a2a_agents::text_steps(&["listed twice"]));
    let agent = Arc::new(Agent::new(a2a_agents::scripted(
        steps,
        "listed twice",
        None,
    )));
    let server = || {
        A2aServer::builder(agent.clone())
            .run_options(RunOptions::new().approval_timeout(None))
            .task_store(store.clone())
            .task_poll_interval(Duration::from_millis(50))
            .cancel_wait(Duration::from_secs(600))
            .build()
    };
    let servers = Pair::of(server(), server()).await;
    let (on_a, on_b) = (&servers.on_a, &servers.on_b);
    let asked = task(
        on_a.send(SendMessageRequest::new(Message::user_text("approve twice")))
            .await
            .unwrap(),
    );
    assert_eq!(asked.status.state, TaskState::InputRequired);
    wait_for(on_b, &asked.id, |t| {
        t.status.state == TaskState::InputRequired
    })
    .await;
    let reply = || {
        let mut m = Message::user_text("approve");
        m.task_id = asked.id.clone();
        SendMessageRequest::new(m)
    };
    let again = task(within(on_b.send(reply())).await.unwrap());
    assert_eq!(again.status.state, TaskState::InputRequired, "{again:?}");
    let done = task(within(on_b.send(reply())).await.unwrap());
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(done.artifact_text(), "listed twice");
    servers.shutdown().await;
}

#[tokio::test]
async fn shutdown_waits_until_the_cancelled_state_is_in_the_store() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let scenarios = Scenarios::new();
    let a = server(&scenarios, &store);
    let (ra, on_a) = serve(&a).await;
    let hang = start(&on_a, "hang").await;
    wait_for(&on_a, &hang.id, |t| t.artifact_text() == "working").await;
    let report = a.shutdown(DEADLINE).await;
    assert_eq!((report.cancelled, report.unfinished), (1, 0), "{report:?}");
    // No polling: the final state was written before shutdown returned.
    let row = store.task(&hang.id).await.unwrap().unwrap();
    assert_eq!(row.state, "TASK_STATE_CANCELED");
    assert!(row.terminal);
    ra.shutdown().await.unwrap();
}
