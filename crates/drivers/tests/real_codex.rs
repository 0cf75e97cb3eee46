//! The Codex driver running the real, pinned `codex` binary (installed by
//! `scripts/install-clis`) offline against the testkit mock model server
//! (OpenAI Responses), over both transports: `codex app-server` (streaming
//! requests) and `codex exec --json` (batch requests, or forced).
//!
//! Covered: token-level text, reasoning, a tool call that really runs
//! `echo` (its output reaches the mock's next request), an approval accepted
//! and one cancelled, output schema, resume of the same thread with per-turn
//! usage, `response.failed` and an HTTP 400 as run errors with the
//! provider's message, cancel mid-turn (app-server: `turn/interrupt` then
//! process exit; exec: the process group killed), and the conformance suite
//! with a live case. Every app-server message of these runs, both
//! directions, is validated against the binary's own schema.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod codex_support;
mod group_watch;

use std::path::Path;
use std::time::{Duration, Instant};

use agent_adaptor_conformance::{
    Expect, LiveRun, Options, RunCase, Trace, record_run, test_driver,
};
use agent_adaptor_core::{
    Agent, Error, Event, FailureReason, Phase, ProcessKind, RunResult, Runner,
};
use agent_adaptor_driver::{
    DecisionKind, FailureCode, OnInvalid, OutputSchema, Request, Response, SessionContext,
    StreamKind, TranscriptKind,
};
use agent_adaptor_drivers::codex::{self, CodexDriver, Config, Transport};
use agent_adaptor_testkit::mock::{MOCK_INPUT_TOKENS, MOCK_OUTPUT_TOKENS, Reply, Script};
use codex_support::harness::{Harness, RUN_TIMEOUT, check_schema, make_executable};
use futures::StreamExt;
use group_watch::GroupWatch;
use serde_json::{Value, json};

fn request(prompt: &str, streaming: bool) -> Request {
    let mut r = Request::new("run_0000000000000000", prompt);
    r.streaming = streaming;
    r
}

async fn run(driver: &CodexDriver, req: Request) -> (Trace, Response) {
    let trace = record_run(driver, req, RUN_TIMEOUT).await;
    assert!(!trace.timed_out, "the run ended within {RUN_TIMEOUT:?}");
    let resp = trace.response().cloned().expect("a response");
    (trace, resp)
}

fn stdout(resp: &Response) -> String {
    String::from_utf8(resp.raw.stdout.to_vec().unwrap()).unwrap()
}

fn text_deltas(trace: &Trace) -> Vec<String> {
    trace
        .payloads()
        .filter_map(|p| match &p.kind {
            StreamKind::TextContent { delta, .. } => Some(delta.clone()),
            _ => None,
        })
        .collect()
}

/// Both transports, as (name, transport, streaming request).
const BOTH: [(&str, Transport, bool); 2] = [
    ("app-server", Transport::Auto, true),
    ("exec", Transport::Auto, false),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_streams_at_token_level_on_the_app_server() {
    const TEXT: &str = "Token-level streaming from the mock, eight characters a delta.";
    let h =
        Harness::start(Script::new().on_prompt("STREAMTEXT", vec![Reply::Text(TEXT.into())])).await;
    for (name, transport, streaming) in BOTH {
        let cfg = h.config(transport);
        let started = Instant::now();
        let (trace, resp) = run(
            &codex::driver(cfg.clone()),
            request("STREAMTEXT say it", streaming),
        )
        .await;
        eprintln!("{name}: text run took {:?}", started.elapsed());
        assert!(resp.failure.is_none(), "{name}: {:?}", resp.failure);
        assert_eq!(resp.output, TEXT, "{name}");
        assert_eq!(resp.exit_code, Some(0));
        let deltas = text_deltas(&trace);
        if streaming {
            assert!(deltas.len() > 1, "token level: {deltas:?}");
            assert_eq!(deltas.concat(), TEXT);
            assert_eq!(resp.raw.terminal.as_ref().unwrap().event, "turn/completed");
            check_schema(&cfg, &stdout(&resp));
        } else {
            assert!(deltas.is_empty(), "batch runs carry no payloads");
            assert_eq!(resp.raw.terminal.as_ref().unwrap().event, "turn.completed");
        }
        let state = resp.checkpoint.as_ref().unwrap().state.as_ref().unwrap();
        assert!(!state.resume_id.is_empty());
        let u = resp.usage.as_ref().unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens),
            (Some(MOCK_INPUT_TOKENS), Some(MOCK_OUTPUT_TOKENS))
        );
    }
    // Through core: Agent::stream picks the streaming transport.
    let agent = Agent::new(h.driver(Transport::Auto));
    let result = agent.run("STREAMTEXT via core").await.unwrap();
    assert_eq!(result.text, TEXT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_is_a_reasoning_lifecycle() {
    let h = Harness::start(Script::new().on_prompt(
        "THINK",
        vec![Reply::ReasoningThenText {
            reasoning: "Let me think about it carefully.".into(),
            text: "Done thinking.".into(),
        }],
    ))
    .await;
    for (name, transport, streaming) in BOTH {
        let cfg = h.config(transport);
        let (trace, resp) = run(
            &codex::driver(cfg.clone()),
            request("THINK hard", streaming),
        )
        .await;
        assert_eq!(resp.output, "Done thinking.", "{name}");
        let thinking = resp
            .transcript
            .as_slice()
            .unwrap()
            .iter()
            .find(|i| i.kind == TranscriptKind::Thinking)
            .unwrap();
        assert_eq!(thinking.text, "Let me think about it carefully.", "{name}");
        if streaming {
            let pieces: Vec<String> = trace
                .payloads()
                .filter_map(|p| match &p.kind {
                    StreamKind::ReasoningContent { delta, .. } => Some(delta.clone()),
                    _ => None,
                })
                .collect();
            assert!(pieces.len() > 1, "reasoning deltas: {pieces:?}");
            assert_eq!(pieces.concat(), thinking.text);
            check_schema(&cfg, &stdout(&resp));
        }
        assert_eq!(
            resp.usage.as_ref().unwrap().reasoning_tokens,
            Some(3),
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_really_runs_echo() {
    let h = Harness::start(Script::new().on_prompt(
        "RUNTOOL",
        vec![
            Reply::ToolCall {
                name: "exec_command".into(),
                arguments: json!({"cmd": "echo hi-from-$((40+2))"}),
            },
            Reply::Text("Tool said hi.".into()),
        ],
    ))
    .await;
    for (i, (name, transport, streaming)) in BOTH.into_iter().enumerate() {
        let mut cfg = h.config(transport);
        cfg.approval_policy = Some("never".into());
        cfg.sandbox = Some("workspace-write".into());
        let (trace, resp) = run(
            &codex::driver(cfg.clone()),
            request("RUNTOOL now", streaming),
        )
        .await;
        assert!(resp.failure.is_none(), "{name}: {:?}", resp.failure);
        assert_eq!(resp.output, "Tool said hi.");
        let result = resp
            .transcript
            .as_slice()
            .unwrap()
            .iter()
            .find(|t| t.kind == TranscriptKind::ToolResult)
            .unwrap();
        assert_eq!(result.text.trim(), "hi-from-42", "{name}: the shell ran it");
        // The output went back to the model in the next request.
        let next = &h.requests("RUNTOOL")[2 * i + 1];
        let body = next.json().unwrap();
        let output = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["type"] == "function_call_output")
            .unwrap();
        assert!(
            output["output"].to_string().contains("hi-from-42"),
            "{name}: {output}"
        );
        if streaming {
            assert!(trace.payloads().any(|p| matches!(&p.kind,
                StreamKind::ToolCallStart { name, .. } if name == "command_execution")));
            assert!(
                trace
                    .payloads()
                    .any(|p| matches!(&p.kind, StreamKind::ToolCallResult { .. }))
            );
            check_schema(&cfg, &stdout(&resp));
        }
    }
}

/// A command that needs approval under `untrusted`.
const TOUCH: &str = "touch made-by-tool.txt && echo touched";

async fn approve_or_deny(
    h: &Harness,
    approve: bool,
) -> (Config, Vec<Event>, Result<RunResult, Error>) {
    let mut cfg = h.config(Transport::AppServer);
    cfg.approval_policy = Some("untrusted".into());
    cfg.sandbox = Some("workspace-write".into());
    let agent = Agent::new(codex::driver(cfg.clone()));
    let mut stream = agent.stream("TOUCH please");
    let mut events = Vec::new();
    let drained = tokio::time::timeout(RUN_TIMEOUT, async {
        while let Some(ev) = stream.next().await {
            if let Event::ApprovalRequest(req) = &ev {
                if approve {
                    req.approve().unwrap();
                } else {
                    req.deny("not on my machine").unwrap();
                }
            }
            events.push(ev);
        }
    })
    .await;
    assert!(drained.is_ok(), "the run ended in time");
    (cfg, events, stream.result().await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_accepted_runs_and_one_denied_cancels() {
    let h = Harness::start(Script::new().on_prompt(
        "TOUCH",
        vec![
            Reply::ToolCall {
                name: "exec_command".into(),
                arguments: json!({"cmd": TOUCH}),
            },
            Reply::Text("Touched.".into()),
        ],
    ))
    .await;
    let file = h.work().join("made-by-tool.txt");

    // Denied first: only `cancel` is offered besides accepting, so the turn
    // is cancelled and the file never appears.
    let (cfg, events, outcome) = approve_or_deny(&h, false).await;
    let asked = events
        .iter()
        .filter(|e| matches!(e, Event::ApprovalRequest(r) if r.kind == DecisionKind::Permission))
        .count();
    assert_eq!(asked, 1);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::ApprovalDenied, "{}", run.message);
    assert!(!file.exists(), "the command did not run");
    let sent = Harness::stdin_log(&cfg);
    let answer: Value = sent
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|f| f.get("result").is_some())
        .unwrap();
    assert_eq!(answer["result"]["decision"], "cancel");
    check_schema(&cfg, &stdout_of(run.result.as_ref().unwrap()));

    // Approved: the command runs.
    let (cfg, events, outcome) = approve_or_deny(&h, true).await;
    let request = events
        .iter()
        .find_map(|e| match e {
            Event::ApprovalRequest(r) => Some(r),
            _ => None,
        })
        .unwrap();
    assert!(
        request.details.as_ref().unwrap()["command"]
            .as_str()
            .unwrap()
            .contains("touch made-by-tool.txt")
    );
    let result = outcome.unwrap();
    assert_eq!(result.text, "Touched.");
    assert!(file.exists(), "the approved command ran");
    let sent = Harness::stdin_log(&cfg);
    assert!(sent.contains(r#"{"decision":"accept"}"#), "{sent}");
    check_schema(&cfg, &stdout_of(&result));
}

fn stdout_of(result: &RunResult) -> String {
    String::from_utf8(result.raw().stdout.to_vec().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_schema_makes_the_final_message_the_json() {
    let h = Harness::start(
        Script::new().on_prompt("JSONPLEASE", vec![Reply::Json(json!({"answer": "ok"}))]),
    )
    .await;
    let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"], "additionalProperties": false});
    for (i, (name, transport, streaming)) in BOTH.into_iter().enumerate() {
        let cfg = h.config(transport);
        let mut req = request("JSONPLEASE answer", streaming);
        req.output_schema = Some(OutputSchema {
            format: "json_schema".into(),
            schema_json: schema.to_string(),
            name: String::new(),
            description: String::new(),
            on_invalid: OnInvalid::FailRun,
        });
        let (_, resp) = run(&codex::driver(cfg.clone()), req).await;
        let so = resp.structured_output.as_ref().unwrap();
        assert!(so.valid, "{name}: {so:?}");
        assert_eq!(so.value, Some(json!({"answer": "ok"})), "{name}");
        let sent = h.requests("JSONPLEASE")[i].json().unwrap();
        assert_eq!(sent["text"]["format"]["type"], "json_schema", "{name}");
        assert_eq!(
            sent["text"]["format"]["schema"]["required"],
            json!(["answer"]),
            "{name}"
        );
        if streaming {
            check_schema(&cfg, &stdout(&resp));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_continues_the_thread_with_per_turn_usage() {
    let h = Harness::start(Script::new().on_prompt(
        "REMEMBER",
        vec![
            Reply::Text("First answer.".into()),
            Reply::Text("Second answer.".into()),
        ],
    ))
    .await;
    for (name, transport, streaming) in BOTH {
        let cfg = h.config(transport);
        let driver = codex::driver(cfg.clone());
        let (_, first) = run(&driver, request(&format!("REMEMBER {name}"), streaming)).await;
        let checkpoint = first
            .checkpoint
            .clone()
            .expect("a healthy turn is resumable");
        let thread = checkpoint.state.as_ref().unwrap().resume_id.clone();

        let mut again = request("and again", streaming);
        again.session = Some(SessionContext {
            state: checkpoint.state.clone(),
            ..Default::default()
        });
        let cfg2 = h.config(transport);
        let (_, second) = run(&codex::driver(cfg2.clone()), again).await;
        assert!(second.failure.is_none(), "{name}: {:?}", second.failure);
        assert_eq!(
            second.output, "Second answer.",
            "{name}: the model saw the first turn"
        );
        let state = second.checkpoint.as_ref().unwrap().state.as_ref().unwrap();
        assert_eq!(state.resume_id, thread, "{name}: the same thread");
        let u = second.usage.as_ref().unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens),
            (Some(MOCK_INPUT_TOKENS), Some(MOCK_OUTPUT_TOKENS)),
            "{name}: one response's worth, not the thread's"
        );
        assert_eq!(
            state.data["usage.input_tokens"],
            (2 * MOCK_INPUT_TOKENS).to_string()
        );
        if streaming {
            check_schema(&cfg2, &stdout(&second));
        }
    }
    // An unknown thread is a typed rejection (app-server).
    let mut req = request("lost", true);
    req.session = Some(SessionContext {
        state: Some(agent_adaptor_driver::SessionState {
            resume_id: "01a2292b-0000-7242-8d5c-7e4f22e95d15".into(),
            ..Default::default()
        }),
        ..Default::default()
    });
    let (_, resp) = run(&h.driver(Transport::Auto), req).await;
    let f = resp.failure.unwrap();
    assert_eq!(
        f.code,
        FailureCode::Other(codex::appserver::RESUME_REJECTED.into())
    );
    assert!(f.message.contains("no rollout found"), "{}", f.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_failures_are_run_errors_with_the_providers_message() {
    let h = Harness::start(
        Script::new()
            .on_prompt(
                "FAILSSE",
                vec![Reply::StreamError {
                    message: "mock sse failure".into(),
                }],
            )
            .on_prompt(
                "FAILHTTP",
                vec![Reply::HttpError {
                    status: 400,
                    body: Value::Null,
                    retry_after: None,
                }],
            ),
    )
    .await;
    for (name, transport, streaming) in BOTH {
        for (prompt, want) in [
            (
                "FAILSSE",
                "stream disconnected before completion: mock sse failure",
            ),
            ("FAILHTTP", "mock http error 400: Bad Request"),
        ] {
            let cfg = h.config(transport);
            let (trace, resp) = run(&codex::driver(cfg.clone()), request(prompt, streaming)).await;
            let f = resp
                .failure
                .as_ref()
                .unwrap_or_else(|| panic!("{name} {prompt}: no failure"));
            assert_eq!(f.message, want, "{name} {prompt}");
            assert_eq!(f.code, FailureCode::AgentError);
            assert!(resp.checkpoint.is_none());
            if streaming {
                assert!(matches!(
                    trace.payloads().last().unwrap().kind,
                    StreamKind::RunError { .. }
                ));
                check_schema(&cfg, &stdout(&resp));
            }
        }
    }
    // Through core: a RunError carrying the message.
    let agent = Agent::new(h.driver(Transport::Auto));
    let err = agent.run("FAILHTTP via core").await.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::AgentError);
    assert_eq!(run.message, "mock http error 400: Bad Request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_turn_stops_codex_quickly() {
    let h = Harness::start(Script::new().on_prompt(
        "SLOW",
        vec![Reply::Slow {
            text: "slow ".repeat(40),
            chunk_delay: Duration::from_millis(300),
        }],
    ))
    .await;
    for transport in [Transport::AppServer, Transport::Exec] {
        let cfg = h.config(transport);
        let agent = Agent::new(codex::driver(cfg.clone()));
        let mut stream = agent.stream("SLOW please");
        let mut pid = None;
        let mut cancelled_at = None;
        let mut watch = None;
        let before = h.server.requests().len();
        let drained = tokio::time::timeout(RUN_TIMEOUT, async {
            while let Some(ev) = stream.next().await {
                pid = pid.or_else(|| group_watch::spawned_pid(&ev));
                let mid_turn = match transport {
                    // The first token arrived: the turn is under way.
                    Transport::AppServer => {
                        matches!(&ev, Event::TextDelta(d) if d.phase == Phase::Content)
                    }
                    // exec streams nothing before the answer: the model was asked.
                    _ => {
                        pid.is_some() && cancelled_at.is_none() && {
                            let _ = tokio::time::timeout(
                                Duration::from_secs(60),
                                h.server.wait_for_requests(before + 1),
                            )
                            .await;
                            true
                        }
                    }
                };
                if mid_turn && cancelled_at.is_none() {
                    // Codex and whatever it started run in its group now.
                    watch = Some(GroupWatch::of(pid.expect("the spawn event came first")));
                    cancelled_at = Some(Instant::now());
                    stream.cancel();
                }
            }
        })
        .await;
        assert!(drained.is_ok(), "{transport:?}: the stream ended");
        let took = cancelled_at.expect("cancelled mid-turn").elapsed();
        let err = stream.result().await.unwrap_err();
        assert_eq!(err.as_run_error().unwrap().reason, FailureReason::Cancelled);
        // A figure, not a bound (timing assertions flake on 2 CPUs): what
        // is checked is that the run ended (above) and Codex is gone (below).
        eprintln!("{transport:?}: cancel → result in {took:?}");
        watch
            .expect("codex was watched at the cancel")
            .assert_gone(&format!("{transport:?}"))
            .await;
        if transport == Transport::AppServer {
            let sent = Harness::stdin_log(&cfg);
            assert!(sent.contains("\"turn/interrupt\""), "{sent}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_with_a_live_run() {
    let h = Harness::start(Script::new()).await;
    // One config for every instance: the fingerprint must be stable (CAP-01).
    let cfg = h.config(Transport::Auto);
    let report = test_driver(
        || codex::driver(cfg.clone()),
        Options::new()
            .run(RunCase::new(
                "streaming (app-server)",
                "hello",
                true,
                Expect::Success,
            ))
            .run(RunCase::new(
                "batch (exec)",
                "hello",
                false,
                Expect::Success,
            ))
            .live(LiveRun {
                timeout: RUN_TIMEOUT,
                ..LiveRun::default()
            })
            .run_timeout(RUN_TIMEOUT),
    )
    .await;
    report.assert_passed();
    assert!(report.passed("LIV-01"), "{report}");
}

/// Start `prompt` on `runner` with `options` (bounded) and drain it.
async fn drain_runner(
    runner: &impl Runner,
    prompt: &str,
    options: agent_adaptor_core::RunOptions,
) -> (Vec<Event>, Result<RunResult, Error>) {
    let mut stream = runner.stream_with(prompt, options.timeout(RUN_TIMEOUT));
    let mut events = Vec::new();
    while let Some(ev) = stream.next().await {
        events.push(ev);
    }
    let outcome = stream.result().await;
    (events, outcome)
}

fn spawned(events: &[Event]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ProcessInfo(p) if p.kind == ProcessKind::Spawn => {
                p.metadata.get("pid")?.parse().ok()
            }
            _ => None,
        })
        .collect()
}

fn reused(events: &[Event]) -> Option<u32> {
    events.iter().find_map(|e| match e {
        Event::Notice(n) if n.metadata.get("resident").map(String::as_str) == Some("reused") => {
            n.metadata.get("pid")?.parse().ok()
        }
        _ => None,
    })
}

/// A thread of three turns through the SQLite store on one resident
/// `codex app-server`: every turn continues the same Codex thread (the
/// checkpoints, and the conversation the mock receives), one process serves
/// all three, turns 2 and 3 are a bare `turn/start`, and every message both
/// ways validates against the binary's schema. A fourth turn with
/// `with_spawn` runs on a server of its own (the resident one is stopped
/// first: Codex allows one writer per thread), for the latency figure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_runs_on_one_resident_app_server() {
    const KEYWORD: &str = "CODEXTHREAD";
    const REPLIES: [&str; 4] = [
        "codex-reply-one",
        "codex-reply-two",
        "codex-reply-three",
        "codex-reply-four",
    ];
    let h = Harness::start(Script::new().on_prompt(
        KEYWORD,
        REPLIES.iter().map(|r| Reply::Text((*r).into())).collect(),
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = agent_adaptor_store::SqliteStore::open(dir.path().join("threads.db"))
        .await
        .unwrap();
    let cfg = h.config(Transport::Auto);
    let driver = codex::driver(cfg.clone());
    let agent = Agent::builder(driver.clone())
        .thread_store(std::sync::Arc::new(store))
        .build()
        .unwrap();
    let thread = agent.thread("real/codex-thread");
    let prompts = [
        format!("{KEYWORD}: remember the word basalt-2291"),
        "And the second turn?".to_owned(),
        "And the third turn?".to_owned(),
    ];
    let mut pids = Vec::new();
    let mut threads = Vec::new();
    let mut took = Vec::new();
    let mut stdout_all = String::new();
    for (n, prompt) in prompts.iter().enumerate() {
        let started = Instant::now();
        let (events, outcome) =
            drain_runner(&thread, prompt, agent_adaptor_core::RunOptions::new()).await;
        took.push(started.elapsed());
        let result = outcome.unwrap_or_else(|e| panic!("turn {}: {e}", n + 1));
        assert_eq!(result.text, REPLIES[n], "turn {}", n + 1);
        let id = result
            .checkpoint()
            .unwrap()
            .state
            .as_ref()
            .unwrap()
            .resume_id
            .clone();
        let stored = thread.checkpoint().await.unwrap().unwrap();
        assert_eq!(stored.resume_id, id, "the SQLite record is the turn's");
        threads.push(id);
        if n > 0 {
            assert_eq!(
                reused(&events),
                Some(pids[0]),
                "turn {} reused the server",
                n + 1
            );
        }
        pids.extend(spawned(&events));
        stdout_all.push_str(&String::from_utf8(result.raw().stdout.to_vec().unwrap()).unwrap());
    }
    assert_eq!(pids.len(), 1, "three turns, one process");
    assert!(threads.iter().all(|t| *t == threads[0]), "{threads:?}");
    let log = Harness::stdin_log(&cfg);
    let methods: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|v| v["method"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "initialized",
            "thread/start",
            "turn/start",
            "turn/start",
            "turn/start"
        ],
        "one handshake, then a turn/start per turn"
    );
    // The turns' bytes, end to end, are the server's whole conversation.
    check_schema(&cfg, &stdout_all);
    let requests = h.requests(KEYWORD);
    assert_eq!(requests.len(), 3);
    let third = String::from_utf8_lossy(&requests[2].body).into_owned();
    for earlier in [
        "basalt-2291",
        REPLIES[0],
        REPLIES[1],
        "And the second turn?",
    ] {
        assert!(
            third.contains(earlier),
            "turn 3's request holds {earlier:?}"
        );
    }

    let started = Instant::now();
    let (events, outcome) = drain_runner(
        &thread,
        "And the fourth turn?",
        agent_adaptor_core::RunOptions::new().with_spawn(),
    )
    .await;
    let fresh_took = started.elapsed();
    let result = outcome.unwrap();
    assert_eq!(result.text, REPLIES[3]);
    assert_eq!(spawned(&events).len(), 1);
    assert_eq!(reused(&events), None);
    assert_eq!(
        result
            .checkpoint()
            .unwrap()
            .state
            .as_ref()
            .unwrap()
            .resume_id,
        threads[0]
    );
    eprintln!(
        "codex app-server: turn 1 (spawn) {:?}, turn 2 (resident) {:?}, turn 3 (resident) {:?}, turn 4 (with_spawn, thread/resume) {fresh_took:?}",
        took[0], took[1], took[2]
    );
    // Codex allows one writer per thread: the fresh server could resume the
    // thread only because the resident one was stopped first.
    assert!(
        events.iter().any(|e| matches!(e, Event::Notice(n)
            if n.metadata.get("resident").map(String::as_str) == Some("retired"))),
        "the resident server was retired"
    );
    assert!(
        !Path::new(&format!("/proc/{}", pids[0])).exists(),
        "and reaped"
    );
    assert_eq!(driver.idle_processes(), 0);
    agent.close().await;
}

/// The run policy reaches the real Codex: a `read_only` sandbox and denied
/// web search become `-s read-only -c web_search="disabled"` in exec's argv
/// (recorded by a wrapper around the real binary) and `sandbox:
/// "read-only"` in the app-server's `thread/start`; both runs succeed, and
/// Codex tells the model its sandbox is read-only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_policy_reaches_codex() {
    use agent_adaptor_core::RunOptions;
    use agent_adaptor_core::policy::{FeatureLevel, Policy};
    let h = Harness::start(
        Script::new().on_prompt("SANDBOXED", vec![Reply::Text("Sandboxed.".into())]),
    )
    .await;
    let policy = Policy::READ_ONLY.web_search(FeatureLevel::Deny);
    let opts = || RunOptions::new().policy(policy).timeout(RUN_TIMEOUT);

    // exec, through a wrapper that records the argv it is given.
    let mut cfg = h.config(Transport::Exec);
    let args_log = h.home.path().join("exec-args.txt");
    let wrapper = h.home.path().join("codex-args");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$AA_ARGS_LOG\"\nexec \"$AA_CODEX\" \"$@\"\n",
    )
    .unwrap();
    make_executable(&wrapper);
    cfg.env.insert(
        "AA_ARGS_LOG".into(),
        args_log.to_string_lossy().into_owned(),
    );
    cfg.env.insert(
        "AA_CODEX".into(),
        cfg.command.to_string_lossy().into_owned(),
    );
    cfg.command = wrapper;
    let agent = Agent::new(codex::driver(cfg));
    let result = agent
        .run_with("SANDBOXED exec", opts())
        .await
        .unwrap_or_else(|e| panic!("exec: {e}"));
    assert_eq!(result.text, "Sandboxed.");
    let argv: Vec<String> = std::fs::read_to_string(&args_log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(
        argv.windows(2).any(|w| w == ["-s", "read-only"]),
        "{argv:?}"
    );
    assert!(
        argv.windows(2)
            .any(|w| w == ["-c", "web_search=\"disabled\""]),
        "{argv:?}"
    );

    // The app-server: the sandbox travels in thread/start.
    let cfg = h.config(Transport::Auto);
    let agent = Agent::new(codex::driver(cfg.clone()));
    let result = agent
        .run_with("SANDBOXED app-server", opts())
        .await
        .unwrap_or_else(|e| panic!("app-server: {e}"));
    assert_eq!(result.text, "Sandboxed.");
    let start: Value = Harness::stdin_log(&cfg)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|f| f["method"] == "thread/start")
        .unwrap();
    assert_eq!(start["params"]["sandbox"], "read-only", "{start}");

    // Codex applied it: the model is told its sandbox is read-only.
    for keyword in ["SANDBOXED exec", "SANDBOXED app-server"] {
        let requests = h.requests(keyword);
        let body = String::from_utf8_lossy(&requests[0].body).into_owned();
        assert!(
            body.contains("`sandbox_mode` is `read-only`"),
            "{keyword}: {body}"
        );
    }
}
