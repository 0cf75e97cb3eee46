//! The Codex driver equipping a run, proven against the real pinned `codex`
//! offline (the testkit mock model server), on both transports: developer
//! instructions (a short text and a 200 KB one), an MCP server the model
//! is offered, calls and hears back from, and a dedicated profile that
//! leaves the user's Codex home untouched.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod codex_support;
mod host_tool_common;

use std::collections::BTreeMap;
use std::path::Path;

use agent_adaptor_conformance::{Trace, record_run};
use agent_adaptor_core::{Agent, RunOptions, Runner};
use agent_adaptor_driver::{
    Driver, FailureCode, HostToolChannel, McpServer, McpToolPolicy, Profile, Request, Response,
    StreamKind, ToolScope, TranscriptKind,
};
use agent_adaptor_driver_kit::host_mcp::loopback::TOKEN_ENV;
use agent_adaptor_drivers::codex::{self, Transport};
use agent_adaptor_testkit::mcp::McpTestServer;
use agent_adaptor_testkit::mock::{RecordedRequest, Reply, Script};
use codex_support::harness::{Harness, RUN_TIMEOUT};
use futures::StreamExt;
use serde_json::json;

/// Both transports, as (name, streaming request).
const BOTH: [(&str, bool); 2] = [("app-server", true), ("exec", false)];

fn request(prompt: &str, streaming: bool) -> Request {
    let mut r = Request::new("run_0000000000000000", prompt);
    r.streaming = streaming;
    r
}

async fn run(driver: &impl Driver, req: Request) -> (Trace, Response) {
    let trace = record_run(driver, req, RUN_TIMEOUT).await;
    assert!(!trace.timed_out, "the run ended within {RUN_TIMEOUT:?}");
    let resp = trace.response().cloned().expect("a response");
    (trace, resp)
}

/// The texts of the developer messages a model request carries.
fn developer_texts(r: &RecordedRequest) -> Vec<String> {
    let body = r.json().unwrap();
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["role"] == "developer")
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect()
}

/// The names of the tools a model request offers, namespaces expanded as
/// `<namespace>::<tool>`.
fn offered_tools(r: &RecordedRequest) -> Vec<String> {
    let body = r.json().unwrap();
    let mut names = Vec::new();
    for t in body["tools"].as_array().cloned().unwrap_or_default() {
        match t["type"].as_str() {
            Some("namespace") => {
                for inner in t["tools"].as_array().cloned().unwrap_or_default() {
                    names.push(format!(
                        "{}::{}",
                        t["name"].as_str().unwrap_or_default(),
                        inner["name"].as_str().unwrap_or_default()
                    ));
                }
            }
            _ => names.push(t["name"].as_str().unwrap_or_default().to_owned()),
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_reach_the_model_as_a_developer_message() {
    let h = Harness::start(Script::new().fallback(Reply::Text("Noted.".into()))).await;
    for (name, streaming) in BOTH {
        let text = format!("EQUIP-INSTR for {name}: answer in \"haiku\".\nSecond line.");
        let mut req = request(&format!("INSTRUCTED-{name} hello"), streaming);
        req.instructions = Some(text.clone());
        let (_, resp) = run(&h.driver(Transport::Auto), req).await;
        assert!(resp.failure.is_none(), "{name}: {:?}", resp.failure);
        let sent = h.requests(&format!("INSTRUCTED-{name}"));
        assert_eq!(sent.len(), 1, "{name}");
        // Codex sends developer_instructions verbatim as a text of the
        // developer message that opens the conversation (after its own
        // base instructions for a model it has no metadata for).
        assert!(developer_texts(&sent[0]).contains(&text), "{name}");
        let instructions = sent[0].json().unwrap()["instructions"].clone();
        assert!(!instructions.to_string().contains("EQUIP-INSTR"), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_kb_instructions_text_launches_on_both_transports() {
    let h = Harness::start(Script::new().fallback(Reply::Text("Long noted.".into()))).await;
    let line = "Follow these house rules carefully, each one of them. ";
    let text: String = format!(
        "BIGINSTR-START {}BIGINSTR-END",
        line.repeat(200 * 1024 / line.len() + 1)
    );
    assert!(text.len() > 200 * 1024);
    for (name, streaming) in BOTH {
        let mut req = request(&format!("BIG-{name} hello"), streaming);
        req.instructions = Some(text.clone());
        let (_, resp) = run(&h.driver(Transport::Auto), req).await;
        assert!(resp.failure.is_none(), "{name}: {:?}", resp.failure);
        assert_eq!(resp.output, "Long noted.", "{name}");
        let sent = h.requests(&format!("BIG-{name}"));
        assert!(developer_texts(&sent[0]).contains(&text), "{name}");
    }
    // Forced onto exec, a text that exec cannot carry on its command line
    // is refused before anything starts.
    let mut req = request("BIG-forced hello", false);
    req.instructions = Some(text);
    let (trace, resp) = run(&h.driver(Transport::Exec), req).await;
    let failure = resp.failure.expect("refused");
    assert_eq!(failure.code, FailureCode::PolicyError, "{failure:?}");
    assert!(
        failure.message.contains("app-server"),
        "{}",
        failure.message
    );
    assert!(
        h.requests("BIG-forced").is_empty(),
        "nothing reached the model"
    );
    assert!(trace.payloads().next().is_none());
}

/// The testkit MCP server as the run's server `aa-test`, `lookup`
/// auto-approved.
fn lookup_server(log: &Path) -> McpServer {
    let (command, args) = McpTestServer::stdio_command("aa-test", log).unwrap();
    let mut server = McpServer::stdio("aa-test", command, args);
    server.tools = McpToolPolicy {
        auto_approve: ["lookup".to_owned()].into(),
        ..Default::default()
    };
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_is_offered_called_and_its_answer_reaches_the_model() {
    // Codex offers a server's tools as the namespace `mcp__<key>` (the
    // key's `-` as `_`) and routes a call by namespace and name.
    let h = Harness::start(Script::new().on_prompt(
        "MCPRUN",
        vec![
            Reply::ToolCall {
                name: "mcp__aa_test::lookup".into(),
                arguments: json!({"key": "k1"}),
            },
            Reply::Text("Looked it up.".into()),
        ],
    ))
    .await;
    for (name, streaming) in BOTH {
        let log = h.home.path().join(format!("mcp-{name}.log"));
        let mut req = request(&format!("MCPRUN-{name} look k1 up"), streaming);
        req.mcp_servers = vec![lookup_server(&log)];
        let mut cfg = h.config(Transport::Auto);
        cfg.approval_policy = Some("never".into());
        let (trace, resp) = run(&codex::driver(cfg), req).await;
        assert!(resp.failure.is_none(), "{name}: {:?}", resp.failure);
        assert_eq!(resp.output, "Looked it up.", "{name}");
        let sent = h.requests(&format!("MCPRUN-{name}"));
        assert_eq!(sent.len(), 2, "{name}");
        let tools = offered_tools(&sent[0]);
        assert!(
            tools.iter().any(|t| t == "mcp__aa_test::lookup"),
            "{name}: {tools:?}"
        );
        let calls = McpTestServer::read_log(&log).unwrap();
        assert_eq!(calls.len(), 1, "{name}: {calls:?}");
        assert_eq!(calls[0]["tool"], "lookup");
        assert_eq!(calls[0]["arguments"], json!({"key": "k1"}));
        let next = String::from_utf8_lossy(&sent[1].body).into_owned();
        assert!(next.contains("value-of-k1"), "{name}: the answer went back");
        // The transcript names the call and holds its result.
        let transcript = resp.transcript.as_slice().unwrap();
        let call = transcript
            .iter()
            .find(|t| t.kind == TranscriptKind::ToolCall)
            .unwrap();
        assert_eq!(
            call.tool_name.as_deref(),
            Some("mcp:aa-test/lookup"),
            "{name}"
        );
        let result = transcript
            .iter()
            .find(|t| t.kind == TranscriptKind::ToolResult)
            .unwrap();
        assert!(
            result.text.contains("value-of-k1"),
            "{name}: {}",
            result.text
        );
        if streaming {
            let scopes: Vec<ToolScope> = trace
                .payloads()
                .filter_map(|p| match &p.kind {
                    StreamKind::ToolCallStart { scope, .. } => Some(scope.clone()),
                    _ => None,
                })
                .collect();
            assert_eq!(
                scopes,
                [ToolScope::Mcp {
                    server: "aa-test".into(),
                    tool: "lookup".into()
                }]
            );
            assert!(trace.payloads().any(|p| matches!(
                &p.kind,
                StreamKind::ToolCallResult { result: Some(r), .. } if r.to_string().contains("value-of-k1")
            )));
        }
    }
}

/// Every file under `dir` with the hash of its content (links as their
/// target).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let key = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if meta.is_dir() {
                out.insert(format!("{key}/"), Vec::new());
                stack.push(path);
            } else if meta.file_type().is_symlink() {
                out.insert(
                    key,
                    std::fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                );
            } else {
                out.insert(key, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dedicated_profile_leaves_the_native_home_untouched() {
    let h = Harness::start(Script::new().fallback(Reply::Text("Fine.".into()))).await;
    // The user's own home: a config.toml with an MCP server of theirs.
    let native = native_home_with_a_server(&h);
    // Proof that the test can fail: a native run sees the user's server.
    let (_, resp) = run(&h.driver(Transport::Auto), request("NATIVE-RUN hi", true)).await;
    assert!(resp.failure.is_none(), "{:?}", resp.failure);
    let tools = offered_tools(&h.requests("NATIVE-RUN")[0]);
    assert!(
        tools.iter().any(|t| t.starts_with("mcp__native_srv::")),
        "{tools:?}"
    );

    let before = tree(&native);
    let root = h.home.path().join("profiles");
    for (name, streaming) in BOTH {
        let mut req = request(&format!("DEDICATED-{name} hi"), streaming);
        req.profile = Profile::Dedicated { root: root.clone() };
        let (_, resp) = run(&h.driver(Transport::Auto), req).await;
        assert!(resp.failure.is_none(), "{name}: {:?}", resp.failure);
        assert_eq!(resp.output, "Fine.");
        let tools = offered_tools(&h.requests(&format!("DEDICATED-{name}"))[0]);
        assert!(
            !tools.iter().any(|t| t.contains("native_srv")),
            "{name}: {tools:?}"
        );
    }
    assert_eq!(
        tree(&native),
        before,
        "the native home is byte-for-byte unchanged"
    );
    let dedicated = root.join("codex");
    assert!(
        dedicated.join("sessions").is_dir(),
        "the sessions went to the dedicated home"
    );
    assert!(!dedicated.join("config.toml").exists());
}

/// The user's own Codex home (the recipe's `CODEX_HOME`), given an MCP
/// server of theirs, `native-srv`.
fn native_home_with_a_server(h: &Harness) -> std::path::PathBuf {
    let native = Path::new(&h.env.iter().find(|(k, _)| k == "CODEX_HOME").unwrap().1).to_path_buf();
    let log = h.home.path().join("native-mcp.log");
    let (command, args) = McpTestServer::stdio_command("native-srv", &log).unwrap();
    let user_config = format!(
        "[mcp_servers.native-srv]\ncommand = {}\nargs = {}\n",
        json!(command),
        json!(args)
    );
    std::fs::write(native.join("config.toml"), user_config).unwrap();
    native
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_mcp_server_gets_the_bearer_token_from_the_named_variable() {
    let h = Harness::start(Script::new().on_prompt(
        "HTTPMCP",
        vec![
            Reply::ToolCall {
                name: "mcp__aa_web::lookup".into(),
                arguments: json!({"key": "k2"}),
            },
            Reply::Text("Web looked up.".into()),
        ],
    ))
    .await;
    let log = h.home.path().join("http-mcp.log");
    let token = "tok-3c1e9f";
    let srv = McpTestServer::start_http("aa-web", &log, Some(("AA_MCP_TOKEN", token)))
        .await
        .unwrap();
    for (name, streaming) in BOTH {
        let mut server = McpServer::http("aa-web", srv.url.clone());
        if let agent_adaptor_driver::McpTransport::Http {
            bearer_token_env, ..
        } = &mut server.transport
        {
            *bearer_token_env = Some("AA_MCP_TOKEN".into());
        }
        server.tools.auto_approve = ["lookup".to_owned()].into();
        let mut req = request(&format!("HTTPMCP-{name} go"), streaming);
        req.mcp_servers = vec![server];
        let mut cfg = h.config(Transport::Auto);
        cfg.approval_policy = Some("never".into());
        // The token reaches Codex only through the variable's value.
        cfg.env.insert("AA_MCP_TOKEN".into(), token.into());
        let (_, resp) = run(&codex::driver(cfg), req).await;
        assert!(resp.failure.is_none(), "{name}: {:?}", resp.failure);
        assert_eq!(resp.output, "Web looked up.", "{name}");
        let sent = h.requests(&format!("HTTPMCP-{name}"));
        assert!(
            String::from_utf8_lossy(&sent[1].body).contains("value-of-k2"),
            "{name}"
        );
        assert!(
            !stdout_and_args_hold(&resp, token),
            "{name}: the token stays out of the output"
        );
    }
    assert_eq!(McpTestServer::read_log(&log).unwrap().len(), 2);
}

/// Whether the run's raw output mentions `needle`.
fn stdout_and_args_hold(resp: &Response, needle: &str) -> bool {
    let out = resp.raw.stdout.to_string_lossy().unwrap_or_default();
    let err = resp.raw.stderr.to_string_lossy().unwrap_or_default();
    out.contains(needle) || err.contains(needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_in_a_dedicated_home_is_offered_to_the_model() {
    let h = Harness::start(Script::new().fallback(Reply::Text("Skilled.".into()))).await;
    let source = h.home.path().join("skill-src");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("SKILL.md"),
        "---\nname: release-notes\ndescription: SKILLDESC writes release notes from the git log\n---\nSteps.\n",
    )
    .unwrap();
    let skill = agent_adaptor_driver::SkillRef {
        name: "release-notes".into(),
        description: "SKILLDESC writes release notes from the git log".into(),
        dir: source,
        fingerprint: "sha256:test".into(),
    };
    let root = h.home.path().join("profiles");
    let offered = |keyword: &str| {
        developer_texts(&h.requests(keyword)[0])
            .iter()
            .any(|t| t.contains("- release-notes: SKILLDESC writes release notes from the git log"))
    };
    for (name, streaming) in BOTH {
        let keyword = format!("SKILLED-{name}");
        let mut req = request(&format!("{keyword} hi"), streaming);
        req.profile = Profile::Dedicated { root: root.clone() };
        req.skills = vec![skill.clone()];
        let (_, resp) = run(&h.driver(Transport::Auto), req).await;
        assert!(resp.failure.is_none(), "{name}: {:?}", resp.failure);
        assert!(offered(&keyword), "{name}: the skill is offered");
        // The next run of the home without it is not offered it.
        let keyword = format!("UNSKILLED-{name}");
        let mut req = request(&format!("{keyword} hi"), streaming);
        req.profile = Profile::Dedicated { root: root.clone() };
        let (_, resp) = run(&h.driver(Transport::Auto), req).await;
        assert!(resp.failure.is_none(), "{name}: {:?}", resp.failure);
        assert!(!offered(&keyword), "{name}: a later run without it");
    }
    // The user's own home never gets skills: refused before launch.
    let mut req = request("SKILLED-native hi", true);
    req.skills = vec![skill];
    let (_, resp) = run(&h.driver(Transport::Auto), req).await;
    assert_eq!(resp.failure.unwrap().code, FailureCode::PolicyError);
    assert!(h.requests("SKILLED-native").is_empty());
}

/// Whether a run's events say a resident app-server was reused.
fn reused(trace: &Trace) -> bool {
    trace
        .events()
        .any(|e| format!("{e:?}").contains("\"reused\""))
}

/// Codex fixes a thread's developer instructions at its start (a resumed
/// thread ignores new ones): the same instructions continue the thread on
/// its resident server, other ones are refused before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_keeps_the_instructions_it_started_with() {
    let h = Harness::start(Script::new().fallback(Reply::Text("Turned.".into()))).await;
    for (name, streaming) in BOTH {
        let driver = h.driver(Transport::Auto);
        let keyword = format!("THREAD-INSTR-{name}");
        let turn = |text: Option<&str>, state: Option<agent_adaptor_driver::SessionState>| {
            let mut req = request(&format!("{keyword} hi"), streaming);
            req.instructions = text.map(str::to_owned);
            req.session = Some(agent_adaptor_driver::SessionContext {
                state,
                ..Default::default()
            });
            req
        };
        let (_, first) = run(&driver, turn(Some("THREAD-A"), None)).await;
        assert!(first.failure.is_none(), "{name}: {:?}", first.failure);
        let state = first.checkpoint.unwrap().state;
        let (trace, second) = run(&driver, turn(Some("THREAD-A"), state.clone())).await;
        assert!(second.failure.is_none(), "{name}: {:?}", second.failure);
        assert_eq!(
            reused(&trace),
            streaming,
            "{name}: the resident server serves it"
        );
        for other in [Some("THREAD-B"), None] {
            let (_, refused) = run(&driver, turn(other, state.clone())).await;
            let failure = refused.failure.expect("refused");
            assert_eq!(
                failure.code,
                FailureCode::PolicyError,
                "{name}: {failure:?}"
            );
        }
        let sent = h.requests(&keyword);
        assert_eq!(sent.len(), 2, "{name}: the refused turns sent nothing");
        assert!(
            developer_texts(&sent[1]).iter().any(|t| t == "THREAD-A"),
            "{name}"
        );
        driver.close_processes().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_server_that_cannot_start_fails_the_run() {
    let h = Harness::start(Script::new().fallback(Reply::Text("Should not.".into()))).await;
    for (name, streaming) in BOTH {
        for required in [false, true] {
            let keyword = format!("REQUIRED-{required}-{name}");
            let mut server = McpServer::stdio(
                "aa-broken",
                h.home.path().join("no-such-server").to_string_lossy(),
                Vec::<String>::new(),
            );
            server.required = required;
            let mut req = request(&format!("{keyword} hi"), streaming);
            req.mcp_servers = vec![server];
            let (_, resp) = run(&h.driver(Transport::Auto), req).await;
            assert_eq!(
                resp.failure.is_some(),
                required,
                "{keyword}: {:?}",
                resp.failure
            );
            assert_eq!(h.requests(&keyword).is_empty(), required, "{keyword}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clone_profile_starts_from_the_users_settings() {
    let h = Harness::start(Script::new().fallback(Reply::Text("Cloned.".into()))).await;
    let native = native_home_with_a_server(&h);
    std::fs::write(native.join("auth.json"), "{\"OPENAI_API_KEY\":\"sk-test\"}").unwrap();
    let root = h.home.path().join("clones");
    for (name, streaming) in BOTH {
        let keyword = format!("CLONED-{name}");
        let mut req = request(&format!("{keyword} hi"), streaming);
        req.profile = Profile::Clone { root: root.clone() };
        let (_, resp) = run(&h.driver(Transport::Auto), req).await;
        assert!(resp.failure.is_none(), "{name}: {:?}", resp.failure);
        let tools = offered_tools(&h.requests(&keyword)[0]);
        assert!(
            tools.iter().any(|t| t.starts_with("mcp__native_srv::")),
            "{name}: the copied config.toml: {tools:?}"
        );
    }
    let home = root.join("codex");
    assert_eq!(
        std::fs::read(home.join("config.toml")).unwrap(),
        std::fs::read(native.join("config.toml")).unwrap()
    );
    // The credentials are linked, not copied: one file.
    use std::os::unix::fs::MetadataExt as _;
    let (a, b) = (
        std::fs::metadata(home.join("auth.json")).unwrap(),
        std::fs::metadata(native.join("auth.json")).unwrap(),
    );
    assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()));
}

/// An MCP tool that is not auto-approved: the app-server asks (an MCP
/// elicitation of kind `mcp_tool_call`), the host answers through core.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_approves_or_denies_an_mcp_tool_call_on_the_app_server() {
    use agent_adaptor_core::{Agent, Event, RunOptions, Runner};
    use futures::StreamExt as _;
    let h = Harness::start(Script::new().on_prompt(
        "MCPASK",
        vec![
            Reply::ToolCall {
                name: "mcp__aa_test::lookup".into(),
                arguments: json!({"key": "k3"}),
            },
            Reply::Text("Asked.".into()),
        ],
    ))
    .await;
    for approve in [true, false] {
        let log = h.home.path().join(format!("ask-{approve}.log"));
        let mut server = lookup_server(&log);
        server.tools = McpToolPolicy::default();
        let mut cfg = h.config(Transport::AppServer);
        cfg.approval_policy = Some("on-request".into());
        let agent = Agent::new(codex::driver(cfg.clone()));
        let options = RunOptions::new().mcp_server(server).timeout(RUN_TIMEOUT);
        let mut stream = agent.stream_with(&format!("MCPASK-{approve} go"), options);
        let mut asked = Vec::new();
        while let Some(ev) = stream.next().await {
            if let Event::ApprovalRequest(req) = &ev {
                asked.push(req.title.clone());
                if approve {
                    req.approve().unwrap();
                } else {
                    req.deny("not this tool").unwrap();
                }
            }
        }
        let result = stream.result().await.unwrap();
        assert_eq!(asked.len(), 1, "{approve}: {asked:?}");
        assert!(asked[0].contains("lookup"), "{}", asked[0]);
        let calls = McpTestServer::read_log(&log).unwrap();
        assert_eq!(calls.len(), usize::from(approve), "{approve}: {calls:?}");
        let sent = h.requests(&format!("MCPASK-{approve}"));
        let next = String::from_utf8_lossy(&sent[1].body).into_owned();
        assert_eq!(next.contains("value-of-k3"), approve, "{approve}");
        let stdout = String::from_utf8(result.raw().stdout.to_vec().unwrap()).unwrap();
        codex_support::harness::check_schema(&cfg, &stdout);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_tool_runs_on_exec_through_the_loopback_server() {
    // Codex offers the host's server like any MCP server, as the namespace
    // `mcp__agent_adaptor`.
    let h = Harness::start(Script::new().on_prompt(
        "HOSTEXEC",
        vec![
            Reply::ToolCall {
                name: "mcp__agent_adaptor::lookup".into(),
                arguments: json!({"key": "k9"}),
            },
            Reply::Text("Host looked up.".into()),
        ],
    ))
    .await;
    // A wrapper records codex's argv and the token variable it inherits.
    let mut cfg = h.config(Transport::Exec);
    let (args_log, token_log) = (h.home.path().join("args"), h.home.path().join("token"));
    let wrapper = h.home.path().join("codex-args");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nprintf '%s' \"${TOKEN_ENV}\" > '{}'\nexec \"$AA_CODEX\" \"$@\"\n",
            args_log.display(),
            token_log.display()
        ),
    )
    .unwrap();
    codex_support::harness::make_executable(&wrapper);
    cfg.env.insert(
        "AA_CODEX".into(),
        cfg.command.to_string_lossy().into_owned(),
    );
    cfg.command = wrapper;
    assert_eq!(
        codex::driver(cfg.clone()).descriptor().host_tools,
        HostToolChannel::LoopbackMcp
    );

    let (tool, seen) = host_tool_common::lookup_tool();
    let agent = Agent::new(codex::driver(cfg));
    let mut stream = agent.stream_with(
        "HOSTEXEC look k9 up",
        RunOptions::new().tool(tool).timeout(RUN_TIMEOUT),
    );
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let result = stream.result().await.unwrap();
    assert_eq!(result.text, "Host looked up.");
    assert_eq!(*seen.lock().unwrap(), ["k9"], "the closure ran once");
    let sent = h.requests("HOSTEXEC");
    assert_eq!(sent.len(), 2);
    assert!(
        offered_tools(&sent[0])
            .iter()
            .any(|t| t == "mcp__agent_adaptor::lookup")
    );
    assert!(String::from_utf8_lossy(&sent[1].body).contains(&host_tool_common::value_of("k9")));
    host_tool_common::assert_host_call(&events, "k9");

    // The token reached codex in its environment only.
    let token = std::fs::read_to_string(&token_log).unwrap();
    assert_eq!(token.len(), 64, "a 256-bit token");
    let args = std::fs::read_to_string(&args_log).unwrap();
    assert!(args.contains("mcp_servers.agent-adaptor="), "{args}");
    assert!(!args.contains(&token), "not on argv");
    assert!(
        !events.iter().any(|e| format!("{e:?}").contains(&token)),
        "not in an event"
    );
    assert!(
        !sent
            .iter()
            .any(|r| String::from_utf8_lossy(&r.body).contains(&token)),
        "not sent to the model"
    );
}
