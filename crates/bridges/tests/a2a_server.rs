//! The A2A server driven by our own client: the card, send, stream, get,
//! subscribe, cancel (the process dies), approvals as input-required, the
//! thread binding, and shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/a2a_agents.rs"]
mod a2a_agents;
#[path = "support/asking_driver.rs"]
mod asking_driver;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_agents::{Scenarios, builder, serve};
use agent_adaptor_bridges::a2a::{
    A2aServer, Client, ErrorCode, GetTaskRequest, Message, Part, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskState,
};
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::{Agent, MemoryStore, RunOptions};
use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, Request, Response, RunContext,
    StreamPayload, async_trait,
};
use futures::StreamExt;
use serde_json::{Value, json};

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

fn states(items: &[StreamResponse]) -> Vec<TaskState> {
    items.iter().filter_map(StreamResponse::state).collect()
}

fn decision_of(task: &Task) -> Value {
    task.metadata.as_ref().unwrap()["agentAdaptor"]["metadata"]["decision.0"].clone()
}

#[tokio::test]
async fn the_card_names_a_streaming_jsonrpc_1_0_interface() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios).description("scripted scenarios")).await;
    let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", server.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "scenarios");
    assert_eq!(card["description"], "scripted scenarios");
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["skills"][0]["id"], "run");
    let iface = &card["supportedInterfaces"][0];
    assert_eq!(iface["protocolBinding"], "JSONRPC");
    assert_eq!(iface["protocolVersion"], "1.0");
    assert_eq!(iface["url"], format!("{}/a2a", server.url()));
    let client = Client::connect(server.url()).await.unwrap();
    assert_eq!(client.endpoint(), format!("{}/a2a", server.url()));
    assert_eq!(client.card().name, "scenarios");
}

#[tokio::test]
async fn send_waits_for_completion_and_returns_the_answer_artifact() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios)).await;
    let client = Client::connect(server.url()).await.unwrap();
    let t = task(
        within(client.send(SendMessageRequest::new(Message::user_text("hello there"))))
            .await
            .unwrap(),
    );
    assert_eq!(t.status.state, TaskState::Completed);
    assert_eq!(t.artifacts.len(), 1);
    assert_eq!(t.artifacts[0].artifact_id, "response");
    assert_eq!(t.artifact_text(), "Hello from agent-adaptor");
    assert_eq!(t.history[0].text(), "hello there");
    assert_eq!(t.history[0].task_id, t.id);
    assert!(!t.context_id.is_empty());
    let meta = &t.metadata.as_ref().unwrap()["agentAdaptor"];
    assert!(meta["runId"].as_str().unwrap().starts_with("run_"));
    assert_eq!(scenarios.calls_of("hello"), 1);
    let req = &scenarios_requests(&scenarios)[0];
    assert_eq!(req.metadata["a2a.task_id"], t.id);
    assert_eq!(req.metadata["a2a.context_id"], t.context_id);
}

fn scenarios_requests(s: &Scenarios) -> Vec<Request> {
    s.requests_of("hello")
}

#[tokio::test]
async fn stream_projects_the_run_in_order() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios)).await;
    let client = Client::connect(server.url()).await.unwrap();
    let items = within(async {
        client
            .stream(SendMessageRequest::new(Message::user_text("hello")))
            .await
            .unwrap()
            .collect_all()
            .await
            .unwrap()
    })
    .await;
    let StreamResponse::Task(first) = &items[0] else {
        panic!("the first item must be the task: {items:?}");
    };
    assert_eq!(first.status.state, TaskState::Submitted);
    assert_eq!(
        states(&items),
        [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed
        ]
    );
    let chunks: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            StreamResponse::ArtifactUpdate(a) => Some((a.artifact.text(), a.append, a.last_chunk)),
            _ => None,
        })
        .collect();
    assert_eq!(
        chunks,
        [
            ("Hello".into(), false, false),
            (" from".into(), true, false),
            (" agent-adaptor".into(), true, false),
            ("Hello from agent-adaptor".into(), false, true),
        ]
    );
    assert!(
        matches!(items.last(), Some(StreamResponse::StatusUpdate(s)) if s.status.state == TaskState::Completed)
    );
    let got = client.get_task(&first.id).await.unwrap();
    assert_eq!(got.artifact_text(), "Hello from agent-adaptor");
}

#[tokio::test]
async fn structured_output_becomes_a_data_part_and_failures_fail_the_task() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios)).await;
    let client = Client::connect(server.url()).await.unwrap();
    let t = task(
        client
            .send(SendMessageRequest::new(Message::user_text("structured")))
            .await
            .unwrap(),
    );
    assert_eq!(t.status.state, TaskState::Completed);
    let parts = &t.artifacts[0].parts;
    assert_eq!(parts[0].as_text(), Some("{\"answer\": 42}"));
    assert_eq!(parts[1].as_data(), Some(&json!({"answer": 42})));
    assert_eq!(parts[1].media_type, "application/json");

    let t = task(
        client
            .send(SendMessageRequest::new(Message::user_text("fail now")))
            .await
            .unwrap(),
    );
    assert_eq!(t.status.state, TaskState::Failed);
    let message = t.status.message.as_ref().unwrap();
    assert!(message.text().contains("boom"), "{message:?}");
    assert_eq!(
        message.parts[1].as_data().unwrap()["reason"],
        "infrastructure_error"
    );
    assert!(t.artifacts.is_empty());
}

/// Subscribe to a task parked on an approval (so it cannot finish before
/// the subscription), answer it from the same client when the
/// subscription shows input-required, and read the subscription to the end.
async fn subscribe_and_answer(client: &Client, task: &Task) -> (Vec<StreamResponse>, Task) {
    let mut stream = client.subscribe(&task.id).await.unwrap();
    let mut items = Vec::new();
    let mut answer = None;
    while let Some(item) = within(stream.next()).await {
        let item = item.unwrap();
        if answer.is_none() && item.state() == Some(TaskState::InputRequired) {
            let reply = Message::user_text("approve").for_task(task.id.clone(), String::new());
            answer = Some(self::task(
                within(client.send(SendMessageRequest::new(reply)))
                    .await
                    .unwrap(),
            ));
        }
        items.push(item);
    }
    (
        items,
        answer.expect("the subscription showed input-required"),
    )
}

#[tokio::test]
async fn return_immediately_then_subscribe_and_get_follow_the_task() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios)).await;
    let client = Client::connect(server.url()).await.unwrap();
    let started = task(
        client
            .send(SendMessageRequest::new(Message::user_text("approve later")).return_immediately())
            .await
            .unwrap(),
    );
    assert!(!started.status.state.is_terminal(), "{:?}", started.status);
    let (items, answered) = subscribe_and_answer(&client, &started).await;
    assert!(matches!(&items[0], StreamResponse::Task(t) if t.id == started.id));
    let seen = states(&items);
    let waiting = seen
        .iter()
        .position(|s| *s == TaskState::InputRequired)
        .unwrap();
    // The subscription spans the interrupt: it stays open until the end.
    assert_eq!(
        &seen[waiting + 1..],
        [TaskState::Working, TaskState::Completed]
    );
    assert_eq!(answered.status.state, TaskState::Completed);
    let text: String = items
        .iter()
        .filter_map(|i| match i {
            StreamResponse::ArtifactUpdate(a) if a.last_chunk => Some(a.artifact.text()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "listed 3 files");

    let err = client.subscribe(&started.id).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::UnsupportedOperation));
    let got = client
        .get_task_with(GetTaskRequest {
            id: started.id.clone(),
            history_length: Some(0),
            ..GetTaskRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(got.status.state, TaskState::Completed);
    assert!(got.history.is_empty());
    let got = client.get_task(&started.id).await.unwrap();
    assert_eq!(got.history.len(), 3, "prompt, question, answer");
    let err = client.get_task("nope").await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::TaskNotFound));
}

/// A driver that runs `sleep 300` as a real child process and records its
/// pid; on cancellation it kills and reaps the child (as the process
/// helper does for real drivers).
#[derive(Clone, Default)]
struct SleepDriver {
    pid: Arc<Mutex<Option<u32>>>,
}

#[async_trait]
impl Driver for SleepDriver {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new("sleep", "sleep 300")
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    async fn run(
        &self,
        ctx: RunContext,
        _req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let mut child = tokio::process::Command::new("sleep")
            .arg("300")
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| DriverError::Other(Box::new(e)))?;
        *self.pid.lock().unwrap() = child.id();
        sink.emit_stream(StreamPayload::run_started()).await?;
        tokio::select! {
            _ = child.wait() => Err(DriverError::Other("sleep ended early".into())),
            () = ctx.cancel.cancelled() => {
                let _ = child.kill().await;
                Err(DriverError::Cancelled)
            }
        }
    }
}

fn alive(pid: u32) -> bool {
    // A zombie is dead for our purpose; `kill -0` would still see it.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
        .unwrap_or(false)
}

#[tokio::test]
async fn cancel_task_stops_the_run_and_kills_its_process() {
    let driver = SleepDriver::default();
    let server = serve(A2aServer::builder(Arc::new(Agent::new(driver.clone())))).await;
    let client = Client::connect(server.url()).await.unwrap();
    let mut stream = client
        .stream(SendMessageRequest::new(Message::user_text("sleep")))
        .await
        .unwrap();
    // Wait until the run is working: the process exists.
    let mut task_id = String::new();
    while let Some(item) = within(stream.next()).await {
        match item.unwrap() {
            StreamResponse::Task(t) => task_id = t.id,
            StreamResponse::StatusUpdate(s) if s.status.state == TaskState::Working => break,
            _ => {}
        }
    }
    let pid = driver.pid.lock().unwrap().expect("the process was spawned");
    assert!(alive(pid));
    let canceled = within(client.cancel_task(&task_id)).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(
        canceled.metadata.as_ref().unwrap()["agentAdaptor"]["reason"],
        "cancelled"
    );
    assert!(!alive(pid), "the process {pid} survived CancelTask");
    // The open stream saw the cancellation and ended.
    let rest: Vec<_> = within(stream.collect::<Vec<_>>()).await;
    assert!(
        matches!(rest.last(), Some(Ok(StreamResponse::StatusUpdate(s))) if s.status.state == TaskState::Canceled)
    );
    let again = client.cancel_task(&task_id).await.unwrap_err();
    assert_eq!(again.code(), Some(ErrorCode::TaskNotCancelable));
    let missing = client.cancel_task("nope").await.unwrap_err();
    assert_eq!(missing.code(), Some(ErrorCode::TaskNotFound));
}

async fn until_input_required(client: &Client, text: &str) -> (Vec<StreamResponse>, Task) {
    let items = within(async {
        client
            .stream(SendMessageRequest::new(Message::user_text(text)))
            .await
            .unwrap()
            .collect_all()
            .await
            .unwrap()
    })
    .await;
    assert_eq!(
        states(&items).last(),
        Some(&TaskState::InputRequired),
        "{items:?}"
    );
    let StreamResponse::Task(t) = &items[0] else {
        panic!("no task first")
    };
    let t = client.get_task(&t.id).await.unwrap();
    (items, t)
}

#[tokio::test]
async fn approvals_go_input_required_and_the_answer_resumes_the_run() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios)).await;
    let client = Client::connect(server.url()).await.unwrap();
    let (items, waiting) = until_input_required(&client, "approve the listing").await;
    let StreamResponse::StatusUpdate(asked) = items.last().unwrap() else {
        panic!()
    };
    let question = asked.status.message.as_ref().unwrap();
    assert!(question.text().contains("Allow Bash(ls)?"), "{question:?}");
    assert!(question.text().contains("\"approve\" or \"deny\""));
    let data = question.parts[1].as_data().unwrap();
    assert_eq!(data["type"], "approval_request");
    assert_eq!(data["kind"], "permission");
    assert_eq!(data["toolCallId"], "call-1");
    assert_eq!(data["details"]["input"]["command"], "ls");
    assert!(data["approvalId"].as_str().unwrap().starts_with("apr_"));
    assert_eq!(waiting.status.state, TaskState::InputRequired);

    // The answer, as a data part, on a new stream of the same task.
    let answer = Message {
        parts: vec![Part::data(json!({"decision": "approve"}))],
        ..Message::user_text("")
    }
    .for_task(waiting.id.clone(), waiting.context_id.clone());
    let items = within(async {
        client
            .stream(SendMessageRequest::new(answer))
            .await
            .unwrap()
            .collect_all()
            .await
            .unwrap()
    })
    .await;
    assert_eq!(
        states(&items),
        [TaskState::Working, TaskState::Completed],
        "{items:?}"
    );
    let done = client.get_task(&waiting.id).await.unwrap();
    assert_eq!(done.artifact_text(), "listed 3 files");
    assert_eq!(decision_of(&done), "approved");
    assert_eq!(scenarios.calls_of("approve"), 1, "one run, resumed");
    // history: the prompt, the question, the answer.
    assert_eq!(done.history.len(), 3);
}

#[tokio::test]
async fn denials_and_answers_reach_the_driver_and_bad_answers_keep_it_waiting() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios)).await;
    let client = Client::connect(server.url()).await.unwrap();

    // Blocking send returns at input-required.
    let t = task(
        client
            .send(SendMessageRequest::new(Message::user_text("approve it")))
            .await
            .unwrap(),
    );
    assert_eq!(t.status.state, TaskState::InputRequired);
    let bad = client
        .send(SendMessageRequest::new(
            Message::user_text("maybe").for_task(t.id.clone(), t.context_id.clone()),
        ))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Some(ErrorCode::InvalidParams));
    assert_eq!(
        client.get_task(&t.id).await.unwrap().status.state,
        TaskState::InputRequired
    );
    // "always" outside a thread grants nothing and approves nothing: the
    // task still waits (never a silent "once").
    let data = t.status.message.as_ref().unwrap().parts[1]
        .as_data()
        .unwrap()
        .clone();
    assert!(data.get("alwaysAllowTool").is_none(), "{data}");
    let always = client
        .send(SendMessageRequest::new(
            Message::user_text("always").for_task(t.id.clone(), t.context_id.clone()),
        ))
        .await
        .unwrap_err();
    assert_eq!(always.code(), Some(ErrorCode::InvalidParams));
    assert!(
        always.to_string().contains("cannot always allow"),
        "{always}"
    );
    assert_eq!(
        client.get_task(&t.id).await.unwrap().status.state,
        TaskState::InputRequired
    );
    let denied = task(
        client
            .send(SendMessageRequest::new(
                Message::user_text("deny").for_task(t.id.clone(), String::new()),
            ))
            .await
            .unwrap(),
    );
    assert_eq!(denied.status.state, TaskState::Completed);
    assert_eq!(decision_of(&denied), "rejected");

    let q = task(
        client
            .send(SendMessageRequest::new(Message::user_text("ask me")))
            .await
            .unwrap(),
    );
    let data = q.status.message.as_ref().unwrap().parts[1]
        .as_data()
        .unwrap()
        .clone();
    assert_eq!(data["kind"], "question");
    assert_eq!(data["choices"][1]["key"], "blue");
    let answered = task(
        client
            .send(SendMessageRequest::new(
                Message::user_text("blue").for_task(q.id.clone(), q.context_id.clone()),
            ))
            .await
            .unwrap(),
    );
    assert_eq!(decision_of(&answered), "answered");
    assert_eq!(answered.artifact_text(), "noted");
}

#[tokio::test]
async fn messages_to_finished_busy_or_foreign_tasks_are_refused() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios)).await;
    let client = Client::connect(server.url()).await.unwrap();
    let done = task(
        client
            .send(SendMessageRequest::new(Message::user_text("hello")))
            .await
            .unwrap(),
    );
    let follow = |id: &str, ctx: &str| {
        SendMessageRequest::new(
            Message::user_text("approve").for_task(id.to_owned(), ctx.to_owned()),
        )
    };
    let e = client.send(follow(&done.id, "")).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::UnsupportedOperation));
    let e = client.send(follow("no-such-task", "")).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::TaskNotFound));

    let busy = task(
        client
            .send(SendMessageRequest::new(Message::user_text("hang")).return_immediately())
            .await
            .unwrap(),
    );
    let e = client.send(follow(&busy.id, "")).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::UnsupportedOperation));
    assert!(e.to_string().contains("not waiting for input"), "{e}");
    let e = client
        .send(follow(&busy.id, "another-context"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::InvalidParams));
    client.cancel_task(&busy.id).await.unwrap();
    assert_eq!(scenarios.calls(), 2, "the refused messages started nothing");
}

#[tokio::test]
async fn an_unanswered_approval_times_out_and_the_task_resumes() {
    let scenarios = Scenarios::new();
    let server = serve(
        builder(&scenarios)
            .run_options(RunOptions::new().approval_timeout(Some(Duration::from_millis(200)))),
    )
    .await;
    let client = Client::connect(server.url()).await.unwrap();
    let t = task(
        client
            .send(SendMessageRequest::new(Message::user_text("approve")))
            .await
            .unwrap(),
    );
    let done = within(async {
        loop {
            let got = client.get_task(&t.id).await.unwrap();
            if got.status.state.is_terminal() {
                break got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(decision_of(&done), "timed_out");
    let texts: Vec<String> = done.history.iter().map(Message::text).collect();
    assert!(texts[1].contains("Allow Bash(ls)?"), "{texts:?}");
    assert!(
        texts[2].contains("ended without an answer (timed_out)"),
        "{texts:?}"
    );
}

#[tokio::test]
async fn thread_binding_continues_a_context_on_one_thread() {
    let driver = ScriptedDriver::resumable_reply("hi again", "session-1");
    let agent = Agent::builder(driver.clone())
        .thread_store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let server = serve(A2aServer::with_threads(agent.clone())).await;
    let client = Client::connect(server.url()).await.unwrap();
    let first = task(
        client
            .send(SendMessageRequest::new(Message::user_text("one")))
            .await
            .unwrap(),
    );
    assert_eq!(first.status.state, TaskState::Completed);
    let mut second = Message::user_text("two");
    second.context_id = first.context_id.clone();
    let second = task(client.send(SendMessageRequest::new(second)).await.unwrap());
    assert_eq!(second.status.state, TaskState::Completed);
    assert_eq!(second.context_id, first.context_id);
    assert_ne!(second.id, first.id);
    let requests = driver.recorded_requests();
    assert_eq!(requests.len(), 2);
    let resumed = requests[1].session.as_ref().and_then(|s| s.state.as_ref());
    assert_eq!(resumed.map(|s| s.resume_id.as_str()), Some("session-1"));
    let key = format!("a2a:{}", first.context_id);
    let state = agent.thread(key).checkpoint().await.unwrap();
    assert_eq!(state.map(|s| s.resume_id), Some("session-1".into()));
}

#[tokio::test]
async fn shutdown_ends_open_streams_and_cancels_runs() {
    let driver = SleepDriver::default();
    let server = serve(A2aServer::builder(Arc::new(Agent::new(driver.clone())))).await;
    let client = Client::connect(server.url()).await.unwrap();
    let t = task(
        client
            .send(SendMessageRequest::new(Message::user_text("sleep")).return_immediately())
            .await
            .unwrap(),
    );
    let mut stream = client.subscribe(&t.id).await.unwrap();
    while let Some(item) = within(stream.next()).await {
        if item.unwrap().state() == Some(TaskState::Working) {
            break;
        }
    }
    let pid = loop {
        if let Some(pid) = *driver.pid.lock().unwrap() {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    within(server.shutdown()).await.unwrap();
    let rest: Vec<_> = within(stream.collect::<Vec<_>>()).await;
    assert!(rest.iter().all(Result::is_ok), "{rest:?}");
    within(async {
        while alive(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn always_in_a_thread_grants_the_tool_and_the_next_task_is_not_asked() {
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::builder(asking_driver::asking_driver())
        .thread_store(store)
        .build()
        .unwrap();
    let server = serve(
        A2aServer::with_threads(agent.clone())
            .run_options(RunOptions::new().approval_timeout(None)),
    )
    .await;
    let client = Client::connect(server.url()).await.unwrap();
    let t = task(
        client
            .send(SendMessageRequest::new(Message::user_text("go")))
            .await
            .unwrap(),
    );
    assert_eq!(t.status.state, TaskState::InputRequired);
    let question = t.status.message.as_ref().unwrap();
    assert!(
        question
            .text()
            .contains("\"always\" (always allow Bash in this thread)")
    );
    assert_eq!(
        question.parts[1].as_data().unwrap()["alwaysAllowTool"],
        "Bash"
    );
    let done = task(
        client
            .send(SendMessageRequest::new(
                Message::user_text("always").for_task(t.id.clone(), t.context_id.clone()),
            ))
            .await
            .unwrap(),
    );
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(decision_of(&done), "approved");
    let thread = agent.thread(format!("a2a:{}", t.context_id));
    assert_eq!(thread.always_allowed().await.unwrap(), ["Bash"]);

    // The context's next task runs without asking.
    let mut next = Message::user_text("again");
    next.context_id = t.context_id.clone();
    let next = task(client.send(SendMessageRequest::new(next)).await.unwrap());
    assert_eq!(next.status.state, TaskState::Completed);
    assert_eq!(decision_of(&next), "approved");
}
