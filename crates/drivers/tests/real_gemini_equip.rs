//! Equipping a real Gemini CLI run (offline, against the testkit mock
//! model server and the testkit MCP server): instructions appended to the
//! system instruction, the run's MCP servers offered and called, a
//! dedicated profile that leaves the native home untouched, skills offered.
//!
//! Compiled only with `--features agent-adaptor-drivers/real-clis`.
#![cfg(feature = "real-clis")]
#![cfg(feature = "gemini")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod gemini_support;
mod host_tool_common;
#[allow(dead_code)]
mod jsonl_common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agent_adaptor_conformance::record_run;
use agent_adaptor_core::{Event, RunOptions};
use agent_adaptor_driver::{
    HOST_TOOL_SERVER, McpServer, McpToolPolicy, McpTransport, Profile, SkillRef, ToolScope,
};
use agent_adaptor_drivers::gemini;
use agent_adaptor_testkit::mcp::McpTestServer;
use agent_adaptor_testkit::mock::{Reply, Script};
use gemini_support::{
    Harness, RUN_TIMEOUT, answers, body_contains, calls_then_answers, contents_text,
    declared_tools, ok, resume_request, session_state, snapshot, started_tool_call, system_text,
};
use jsonl_common::Run;
use serde_json::json;

fn stdio_server(name: &str, log: &Path) -> McpServer {
    let (command, args) = McpTestServer::stdio_command(name, log).unwrap();
    McpServer {
        name: name.into(),
        transport: McpTransport::Stdio {
            command,
            args,
            env: BTreeMap::new(),
        },
        required: false,
        tools: McpToolPolicy::default(),
    }
}

/// Configure the user's own MCP server `usersrv` (logging its calls to the
/// returned `user.log`) in the native settings: a run must not load it.
fn add_user_server(h: &Harness) -> PathBuf {
    let user_log = h.home.path().join("user.log");
    let (command, args) = McpTestServer::stdio_command("usersrv", &user_log).unwrap();
    let mut settings = h.settings.clone();
    settings["mcpServers"] = json!({"usersrv": {"command": command, "args": args}});
    std::fs::write(h.native().join("settings.json"), settings.to_string()).unwrap();
    user_log
}

/// The user's `usersrv` was neither offered in `tools` nor called.
fn assert_user_server_unused(tools: &[String], user_log: &Path) {
    assert!(!tools.iter().any(|t| t.contains("usersrv")), "{tools:?}");
    assert!(McpTestServer::read_log(user_log).unwrap().is_empty());
}

/// A harness whose model, asked with `keyword`, calls the MCP server
/// `server`'s `lookup` of `key`, then answers `text`; and the log path for
/// that server's calls.
async fn start_lookup(keyword: &str, server: &str, key: &str, text: &str) -> (Harness, PathBuf) {
    let script = calls_then_answers(
        keyword,
        &format!("mcp_{server}_lookup"),
        json!({ "key": key }),
        text,
    );
    let h = Harness::start(script).await;
    let log = h.home.path().join(format!("{server}.log"));
    (h, log)
}

/// The conversation of `keyword` offered `tool`, the MCP server logging
/// to `log` got exactly one `lookup` of `key`, and its value went back to
/// the model. Returns the tools the first request declared.
fn assert_looked_up(h: &Harness, keyword: &str, tool: &str, log: &Path, key: &str) -> Vec<String> {
    let requests = h.model_requests(keyword);
    let tools = declared_tools(&requests[0]);
    assert!(tools.contains(&tool.to_owned()), "{tools:?}");
    assert_eq!(
        McpTestServer::read_log(log).unwrap(),
        [json!({"tool": "lookup", "arguments": {"key": key}})]
    );
    assert!(body_contains(&requests[1], &format!("value-of-{key}")));
    tools
}

/// Run `prompt` with `options` on a driver configured by `cfg`, assert it
/// answered
/// `text`, and return the run.
async fn run_answering(
    h: &Harness,
    cfg: gemini::Config,
    prompt: &str,
    options: RunOptions,
    text: &str,
) -> Run {
    let run = h.run(cfg, prompt, options).await;
    assert_eq!(ok(&run).text, text);
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_are_appended_to_the_system_instruction() {
    const KEYWORD: &str = "INSTRUCT";
    const BIG: &str = "LARGETEXT";
    const INSTRUCTIONS: &str = "Answer like a ship's log: instr-7731.";
    const USER_CONTEXT: &str = "user-global-context-4410";
    let script = answers(KEYWORD, "ok").on_prompt(BIG, vec![Reply::Text("big ok".into())]);
    let h = Harness::start(script).await;
    std::fs::write(h.native().join("GEMINI.md"), USER_CONTEXT).unwrap();

    run_answering(
        &h,
        h.config(),
        &format!("{KEYWORD}: go"),
        RunOptions::new().instructions(INSTRUCTIONS),
        "ok",
    )
    .await;
    let request = &h.model_requests(KEYWORD)[0];
    let system = system_text(request);
    let (user, ours) = (
        system
            .find(USER_CONTEXT)
            .expect("the user's global context"),
        system
            .find(INSTRUCTIONS)
            .expect("the instructions in the system instruction"),
    );
    assert!(user < ours, "appended after the user's context");
    assert!(
        system.find("Core Mandates").is_some_and(|p| p < user),
        "appended to Gemini's own prompt, not replacing it"
    );
    assert!(
        !contents_text(request).contains(INSTRUCTIONS),
        "not a user message"
    );
    // The overlay the text came from is gone, the user's file unchanged.
    let from = system[..ours]
        .rsplit("--- Context from: ")
        .next()
        .and_then(|s| s.split(" ---").next())
        .unwrap();
    assert!(
        from.ends_with("GEMINI.md") && !Path::new(from).exists(),
        "{from}"
    );
    assert_eq!(
        std::fs::read_to_string(h.native().join("GEMINI.md")).unwrap(),
        USER_CONTEXT
    );

    // 200 KB travel as a file.
    let big = format!("{}big-instructions-end-9931", "x".repeat(200 * 1024));
    run_answering(
        &h,
        h.config(),
        &format!("{BIG}: go"),
        RunOptions::new().instructions(big),
        "big ok",
    )
    .await;
    assert!(system_text(&h.model_requests(BIG)[0]).contains("big-instructions-end-9931"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_is_offered_called_and_answered() {
    const KEYWORD: &str = "MCPCALL";
    let (h, log) = start_lookup(KEYWORD, "kv", "k1", "Looked up.").await;
    // The user's own server, which a strict run must not load.
    let user_log = add_user_server(&h);

    let mut kv = stdio_server("kv", &log);
    // A 200 KB configuration (travels as a file); `add` is not allowed,
    // `fail` is denied.
    let mut allow: BTreeSet<String> = (0..12_000).map(|i| format!("unused-tool-{i:05}")).collect();
    allow.insert("lookup".to_owned());
    kv.tools.allow = Some(allow);
    kv.tools.deny = ["fail".to_owned()].into();
    let run = run_answering(
        &h,
        h.yolo(),
        &format!("{KEYWORD} please"),
        RunOptions::new().mcp_server(kv).mcp_strict(true),
        "Looked up.",
    )
    .await;

    assert_eq!(
        h.model_requests(KEYWORD).len(),
        2,
        "the call, then the follow-up"
    );
    let tools = assert_looked_up(&h, KEYWORD, "mcp_kv_lookup", &log, "k1");
    assert!(
        !tools
            .iter()
            .any(|t| t.contains("fail") || t.contains("add")),
        "{tools:?}"
    );
    // Strict: the user's server is not loaded.
    assert_user_server_unused(&tools, &user_log);
    let call = started_tool_call(&run, |_| true);
    assert_eq!(
        call.scope,
        ToolScope::Mcp {
            server: "kv".into(),
            tool: "lookup".into()
        }
    );
    let id = &call.id;
    assert!(run.events.iter().any(|e| matches!(e,
        Event::ToolResult(r) if r.id == *id && r.result.as_ref().is_some_and(|v| v.to_string().contains("value-of-k1")))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dedicated_profile_leaves_the_native_home_unchanged() {
    const KEYWORD: &str = "DEDICATED";
    const NATIVE_CONTEXT: &str = "native-context-3318";
    let h = Harness::start(answers(KEYWORD, "ok")).await;
    let user_log = add_user_server(&h);
    std::fs::write(h.native().join("GEMINI.md"), NATIVE_CONTEXT).unwrap();
    // The product's own home: its auth selection, nothing of the user's.
    let root = h.home.path().join("profiles");
    std::fs::create_dir_all(root.join("gemini/.gemini")).unwrap();
    std::fs::write(
        root.join("gemini/.gemini/settings.json"),
        h.settings.to_string(),
    )
    .unwrap();
    let before = snapshot(&h.native());

    run_answering(
        &h,
        h.yolo(),
        &format!("{KEYWORD}: go"),
        RunOptions::new()
            .profile(Profile::Dedicated { root: root.clone() })
            .instructions("dedicated-instructions-2207"),
        "ok",
    )
    .await;
    assert_eq!(
        snapshot(&h.native()),
        before,
        "the native home is unchanged"
    );
    let request = &h.model_requests(KEYWORD)[0];
    assert_user_server_unused(&declared_tools(request), &user_log);
    let system = system_text(request);
    assert!(!system.contains(NATIVE_CONTEXT));
    assert!(system.contains("dedicated-instructions-2207"));
    // The session was kept in the dedicated home.
    assert!(
        root.join("gemini/.gemini/tmp")
            .read_dir()
            .unwrap()
            .next()
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_is_offered_to_the_model() {
    const KEYWORD: &str = "SKILLS";
    const DESCRIPTION: &str = "Formats release notes the house way (skill-desc-6120).";
    let h = Harness::start(answers(KEYWORD, "ok")).await;
    let dir = h.home.path().join("skill-src");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: release-notes\ndescription: {DESCRIPTION}\n---\nWrite the notes.\n"),
    )
    .unwrap();
    let skill = SkillRef {
        name: "release-notes".into(),
        description: DESCRIPTION.into(),
        dir,
        fingerprint: "sha256:test".into(),
    };
    run_answering(
        &h,
        h.config(),
        &format!("{KEYWORD}: go"),
        RunOptions::new().skill(skill),
        "ok",
    )
    .await;
    // Offered in the system instruction's list of available skills.
    let system = system_text(&h.model_requests(KEYWORD)[0]);
    assert!(
        system.contains("<name>release-notes</name>"),
        "the skill's name"
    );
    assert!(
        system.contains(&format!("<description>{DESCRIPTION}</description>")),
        "and its description"
    );
    // Copied into the run's overlay, not the user's home (which a native
    // run changes only by its session files, as without skills).
    assert!(!h.native().join("skills").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_mcp_server_gets_the_bearer_token_from_a_host_variable() {
    const KEYWORD: &str = "HTTPMCP";
    // A host variable the harness's env policy does not pass: only the
    // driver's pass-through of the named variable gets it to the CLI.
    const VAR: &str = "CARGO_PKG_NAME";
    let token = std::env::var(VAR).expect("cargo sets it for tests");
    let (h, log) = start_lookup(KEYWORD, "web", "k2", "Fetched.").await;
    let server = McpTestServer::start_http("web", &log, Some(("AA_TEST_TOKEN", &token)))
        .await
        .unwrap();
    let web = McpServer {
        name: "web".into(),
        transport: McpTransport::Http {
            url: server.url.clone(),
            headers: [("X-Test".to_owned(), "1".to_owned())].into(),
            bearer_token_env: Some(VAR.into()),
        },
        required: false,
        tools: McpToolPolicy::default(),
    };
    let run = run_answering(
        &h,
        h.yolo(),
        &format!("{KEYWORD} please"),
        RunOptions::new().mcp_server(web),
        "Fetched.",
    )
    .await;
    assert_looked_up(&h, KEYWORD, "mcp_web_lookup", &log, "k2");
    // The token is in no event.
    assert!(
        !run.events
            .iter()
            .any(|e| format!("{e:?}").contains(&format!("Bearer {token}")))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_instructions_resumes() {
    const KEYWORD: &str = "RESUMEINSTR";
    const INSTRUCTIONS: &str = "resume-instructions-5150";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::Text("first-answer".into()),
            Reply::Text("second-answer".into()),
        ],
    );
    let h = Harness::start(script).await;
    let first = h
        .run(
            h.config(),
            &format!("{KEYWORD} remember lark-42"),
            RunOptions::new().instructions(INSTRUCTIONS),
        )
        .await;

    let driver = gemini::driver(h.config());
    let mut request = resume_request("and now?", session_state(&first));
    request.instructions = Some(INSTRUCTIONS.into());
    let trace = record_run(&driver, request, RUN_TIMEOUT).await;
    let response = trace.response().expect("run 2 returned");
    assert_eq!(response.output, "second-answer");
    let requests = h.model_requests(KEYWORD);
    let last = requests.last().unwrap();
    assert!(body_contains(last, "lark-42"), "the session resumed");
    assert!(system_text(last).contains(INSTRUCTIONS));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clone_profile_starts_from_the_users_settings_and_credentials() {
    const KEYWORD: &str = "CLONED";
    let h = Harness::start(answers(KEYWORD, "ok")).await;
    std::fs::write(
        h.native().join("oauth_creds.json"),
        r#"{"fake":"credential"}"#,
    )
    .unwrap();
    std::fs::write(h.native().join("GEMINI.md"), "native-only-context").unwrap();
    let before = snapshot(&h.native());
    let root = h.home.path().join("clones");
    // No settings in the clone but the user's: their auth selection works.
    run_answering(
        &h,
        h.config(),
        &format!("{KEYWORD}: go"),
        RunOptions::new().profile(Profile::Clone { root: root.clone() }),
        "ok",
    )
    .await;
    assert_eq!(
        snapshot(&h.native()),
        before,
        "the native home is unchanged"
    );
    let home = root.join("gemini/.gemini");
    // The user's settings were copied (Gemini then migrates its copy:
    // `disableAutoUpdate` becomes `enableAutoUpdate`).
    let cloned: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(cloned["security"]["auth"]["selectedType"], "gemini-api-key");
    assert_eq!(cloned["general"]["maxAttempts"], 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        assert_eq!(
            ino(&home.join("oauth_creds.json")),
            ino(&h.native().join("oauth_creds.json")),
            "the credential is linked, not copied"
        );
    }
    assert!(
        !home.join("GEMINI.md").exists(),
        "only settings and credentials"
    );
    assert!(!system_text(&h.model_requests(KEYWORD)[0]).contains("native-only-context"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_tool_runs_on_the_loopback_server_and_its_output_reaches_the_model() {
    const KEYWORD: &str = "HOSTTOOL";
    // Gemini names the host's server's tools like any MCP server's.
    let name = format!("mcp_{HOST_TOOL_SERVER}_lookup");
    let script = calls_then_answers(KEYWORD, &name, json!({"key": "k7"}), "Host looked up.");
    let h = Harness::start(script).await;
    // The user's own server: strict leaves it out, not the host's tools.
    let user_log = add_user_server(&h);
    let (tool, seen) = host_tool_common::lookup_tool();
    // The default approval mode: the server's `trust` lets the call run
    // without Gemini's own confirmation (the toolbox asks the host).
    let run = run_answering(
        &h,
        h.config(),
        &format!("{KEYWORD} please"),
        RunOptions::new().tool(tool).mcp_strict(true),
        "Host looked up.",
    )
    .await;
    assert_eq!(*seen.lock().unwrap(), ["k7"], "the closure ran once");
    let requests = h.model_requests(KEYWORD);
    assert_eq!(requests.len(), 2, "the call, then the follow-up");
    let tools = declared_tools(&requests[0]);
    assert!(tools.contains(&name), "{tools:?}");
    assert_user_server_unused(&tools, &user_log);
    assert!(body_contains(
        &requests[1],
        &host_tool_common::value_of("k7")
    ));
    host_tool_common::assert_host_call(&run.events, "k7");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_approves_or_denies_each_call_of_a_host_tool() {
    // Gemini does not ask (the server is trusted): the toolbox asks the
    // host, through the run's events, before the closure runs.
    let name = format!("mcp_{HOST_TOOL_SERVER}_lookup");
    let mut script = Script::new();
    for (keyword, text) in [("HOSTYES", "Allowed."), ("HOSTNO", "Refused.")] {
        script = script.on_prompt(
            keyword,
            vec![
                Reply::ToolCall {
                    name: name.clone(),
                    arguments: json!({"key": "k8"}),
                },
                Reply::Text(text.into()),
            ],
        );
    }
    let h = Harness::start(script).await;
    for (keyword, approve, text) in [("HOSTYES", true, "Allowed."), ("HOSTNO", false, "Refused.")] {
        let (tool, seen) = host_tool_common::asking_lookup_tool();
        let mut asked = Vec::new();
        let run = gemini_support::drain_with(
            &h.agent(h.config()),
            &format!("{keyword} please"),
            RunOptions::new().tool(tool),
            |event, _| {
                if let Event::ApprovalRequest(req) = event {
                    asked.push(req.title.clone());
                    if approve {
                        req.approve().unwrap();
                    } else {
                        req.deny("not this key").unwrap();
                    }
                }
            },
        )
        .await;
        assert_eq!(ok(&run).text, text);
        assert_eq!(asked.len(), 1, "{keyword}: {asked:?}");
        let ran: &[&str] = if approve { &["k8"] } else { &[] };
        assert_eq!(*seen.lock().unwrap(), ran, "{keyword}");
        let requests = h.model_requests(keyword);
        assert_eq!(requests.len(), 2, "{keyword}");
        assert_eq!(
            body_contains(&requests[1], &host_tool_common::value_of("k8")),
            approve,
            "{keyword}"
        );
        if !approve {
            assert!(
                body_contains(&requests[1], "not this key"),
                "the model reads why"
            );
        }
    }
}
