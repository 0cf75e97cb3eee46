//! Equipping a real Gemini CLI run (offline, against the testkit mock
//! model server and the testkit MCP server): instructions appended to the
//! system instruction, the run's MCP servers offered and called, a
//! dedicated profile that leaves the native home untouched, skills offered.
//!
//! Compiled only with `--features agent-adaptor-drivers/real-clis`.
#![cfg(feature = "real-clis")]
#![cfg(feature = "gemini")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

#[allow(dead_code)]
mod jsonl_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_adaptor_core::{Agent, Event, Phase, RunOptions, Runner};
use agent_adaptor_driver::{McpServer, McpToolPolicy, McpTransport, Profile, SkillRef, ToolScope};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::gemini::{self, ApprovalMode};
use agent_adaptor_testkit::clis::{GEMINI, ScratchDir};
use agent_adaptor_testkit::mcp::McpTestServer;
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Reply, Script};
use futures::StreamExt;
use jsonl_common::Run;
use serde_json::{Value, json};

const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The recipe's settings (auth selection) plus one attempt per request.
const SETTINGS: &str = r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true,"maxAttempts":1}}"#;

struct Harness {
    server: MockServer,
    home: ScratchDir,
    binary: PathBuf,
    env: Vec<(String, String)>,
}

impl Harness {
    async fn start(script: Script) -> Harness {
        let server = MockServer::start(script).await.expect("start the mock");
        let home = ScratchDir::new("gemini-equip").expect("a scratch home");
        let binary = GEMINI.binary().unwrap_or_else(|e| panic!("{e}"));
        let env = GEMINI
            .prepare(&server.base_url(), home.path())
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(home.path().join(".gemini/settings.json"), SETTINGS).unwrap();
        Harness {
            server,
            home,
            binary,
            env,
        }
    }

    /// The native `~/.gemini` of the runs.
    fn native(&self) -> PathBuf {
        self.home.path().join(".gemini")
    }

    fn config(&self) -> gemini::Config {
        gemini::Config {
            command: self.binary.clone(),
            model: Some(GEMINI.model.into()),
            env: self.env.iter().cloned().collect(),
            env_policy: EnvPolicy::only(["PATH", "USER"]),
            cwd: Some(self.home.path().join("work")),
            ..Default::default()
        }
    }

    fn model_requests(&self, keyword: &str) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path == GEMINI.request_path)
            .filter(|r| {
                r.conversation()
                    .is_some_and(|c| c.first_user_text.contains(keyword))
            })
            .collect()
    }
}

async fn drain(cfg: gemini::Config, prompt: &str, options: RunOptions) -> Run {
    let agent = Agent::new(gemini::driver(cfg));
    let mut stream = agent.stream_with(prompt, options.timeout(RUN_TIMEOUT));
    let collect = async {
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event);
        }
        let outcome = stream.result().await;
        Run { events, outcome }
    };
    tokio::time::timeout(RUN_TIMEOUT + Duration::from_secs(30), collect)
        .await
        .expect("the run ended")
}

fn ok(run: &Run) -> &agent_adaptor_core::RunResult {
    match &run.outcome {
        Ok(r) => r,
        Err(e) => {
            let stderr = e
                .as_run_error()
                .and_then(|r| r.result.as_ref())
                .map(|r| r.raw().stderr.to_string_lossy().unwrap_or_default())
                .unwrap_or_default();
            panic!("the run failed: {e}\n--- stderr ---\n{stderr}")
        }
    }
}

/// The text of a request's system instruction.
fn system_text(request: &RecordedRequest) -> String {
    let body = request.json().unwrap_or_default();
    body["systemInstruction"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

/// The JSON of a request's `contents` (the conversation).
fn contents_text(request: &RecordedRequest) -> String {
    request.json().unwrap_or_default()["contents"].to_string()
}

/// The function names a request declares.
fn declared_tools(request: &RecordedRequest) -> Vec<String> {
    let body = request.json().unwrap_or_default();
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
        .filter_map(|f| f["name"].as_str().map(str::to_owned))
        .collect()
}

/// Every file under `dir` (relative path → content).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    out
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_are_appended_to_the_system_instruction() {
    const KEYWORD: &str = "INSTRUCT";
    const BIG: &str = "LARGETEXT";
    const INSTRUCTIONS: &str = "Answer like a ship's log: instr-7731.";
    const USER_CONTEXT: &str = "user-global-context-4410";
    let script = Script::new()
        .on_prompt(KEYWORD, vec![Reply::Text("ok".into())])
        .on_prompt(BIG, vec![Reply::Text("big ok".into())]);
    let h = Harness::start(script).await;
    std::fs::write(h.native().join("GEMINI.md"), USER_CONTEXT).unwrap();

    let run = drain(
        h.config(),
        &format!("{KEYWORD}: go"),
        RunOptions::new().instructions(INSTRUCTIONS),
    )
    .await;
    assert_eq!(ok(&run).text, "ok");
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
    let run = drain(
        h.config(),
        &format!("{BIG}: go"),
        RunOptions::new().instructions(big),
    )
    .await;
    assert_eq!(ok(&run).text, "big ok");
    assert!(system_text(&h.model_requests(BIG)[0]).contains("big-instructions-end-9931"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_is_offered_called_and_answered() {
    const KEYWORD: &str = "MCPCALL";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::ToolCall {
                name: "mcp_kv_lookup".into(),
                arguments: json!({"key": "k1"}),
            },
            Reply::Text("Looked up.".into()),
        ],
    );
    let h = Harness::start(script).await;
    let (log, user_log) = (h.home.path().join("kv.log"), h.home.path().join("user.log"));
    // The user's own server, which a strict run must not load.
    let (command, args) = McpTestServer::stdio_command("usersrv", &user_log).unwrap();
    let mut settings: Value = serde_json::from_str(SETTINGS).unwrap();
    settings["mcpServers"] = json!({"usersrv": {"command": command, "args": args}});
    std::fs::write(h.native().join("settings.json"), settings.to_string()).unwrap();

    let mut kv = stdio_server("kv", &log);
    // A 200 KB configuration (travels as a file); `add` is not allowed,
    // `fail` is denied.
    let mut allow: std::collections::BTreeSet<String> =
        (0..12_000).map(|i| format!("unused-tool-{i:05}")).collect();
    allow.insert("lookup".to_owned());
    kv.tools.allow = Some(allow);
    kv.tools.deny = ["fail".to_owned()].into();
    let cfg = gemini::Config {
        approval_mode: ApprovalMode::Yolo,
        ..h.config()
    };
    let run = drain(
        cfg,
        &format!("{KEYWORD} please"),
        RunOptions::new().mcp_server(kv).mcp_strict(true),
    )
    .await;
    assert_eq!(ok(&run).text, "Looked up.");

    let requests = h.model_requests(KEYWORD);
    assert_eq!(requests.len(), 2, "the call, then the follow-up");
    let tools = declared_tools(&requests[0]);
    assert!(tools.contains(&"mcp_kv_lookup".to_owned()), "{tools:?}");
    assert!(
        !tools
            .iter()
            .any(|t| t.contains("fail") || t.contains("add")),
        "{tools:?}"
    );
    assert!(
        !tools.iter().any(|t| t.contains("usersrv")),
        "strict: {tools:?}"
    );
    assert_eq!(
        McpTestServer::read_log(&log).unwrap(),
        [json!({"tool": "lookup", "arguments": {"key": "k1"}})]
    );
    assert!(McpTestServer::read_log(&user_log).unwrap().is_empty());
    assert!(String::from_utf8_lossy(&requests[1].body).contains("value-of-k1"));
    let id = run
        .events
        .iter()
        .find_map(|e| match e {
            Event::ToolCall(c) if c.phase == Phase::Start => {
                assert_eq!(
                    c.scope,
                    ToolScope::Mcp {
                        server: "kv".into(),
                        tool: "lookup".into()
                    }
                );
                Some(c.id.clone())
            }
            _ => None,
        })
        .expect("an MCP ToolCall");
    assert!(run.events.iter().any(|e| matches!(e,
        Event::ToolResult(r) if r.id == id && r.result.as_ref().is_some_and(|v| v.to_string().contains("value-of-k1")))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dedicated_profile_leaves_the_native_home_unchanged() {
    const KEYWORD: &str = "DEDICATED";
    const NATIVE_CONTEXT: &str = "native-context-3318";
    let h = Harness::start(Script::new().on_prompt(KEYWORD, vec![Reply::Text("ok".into())])).await;
    let user_log = h.home.path().join("user.log");
    let (command, args) = McpTestServer::stdio_command("usersrv", &user_log).unwrap();
    let mut settings: Value = serde_json::from_str(SETTINGS).unwrap();
    settings["mcpServers"] = json!({"usersrv": {"command": command, "args": args}});
    std::fs::write(h.native().join("settings.json"), settings.to_string()).unwrap();
    std::fs::write(h.native().join("GEMINI.md"), NATIVE_CONTEXT).unwrap();
    // The product's own home: its auth selection, nothing of the user's.
    let root = h.home.path().join("profiles");
    std::fs::create_dir_all(root.join("gemini/.gemini")).unwrap();
    std::fs::write(root.join("gemini/.gemini/settings.json"), SETTINGS).unwrap();
    let before = snapshot(&h.native());

    let cfg = gemini::Config {
        approval_mode: ApprovalMode::Yolo,
        ..h.config()
    };
    let run = drain(
        cfg,
        &format!("{KEYWORD}: go"),
        RunOptions::new()
            .profile(Profile::Dedicated { root: root.clone() })
            .instructions("dedicated-instructions-2207"),
    )
    .await;
    assert_eq!(ok(&run).text, "ok");
    assert_eq!(
        snapshot(&h.native()),
        before,
        "the native home is unchanged"
    );
    let request = &h.model_requests(KEYWORD)[0];
    let tools = declared_tools(request);
    assert!(!tools.iter().any(|t| t.contains("usersrv")), "{tools:?}");
    assert!(McpTestServer::read_log(&user_log).unwrap().is_empty());
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
    let h = Harness::start(Script::new().on_prompt(KEYWORD, vec![Reply::Text("ok".into())])).await;
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
    let run = drain(
        h.config(),
        &format!("{KEYWORD}: go"),
        RunOptions::new().skill(skill),
    )
    .await;
    assert_eq!(ok(&run).text, "ok");
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
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::ToolCall {
                name: "mcp_web_lookup".into(),
                arguments: json!({"key": "k2"}),
            },
            Reply::Text("Fetched.".into()),
        ],
    );
    let h = Harness::start(script).await;
    let log = h.home.path().join("web.log");
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
    let cfg = gemini::Config {
        approval_mode: ApprovalMode::Yolo,
        ..h.config()
    };
    let run = drain(
        cfg,
        &format!("{KEYWORD} please"),
        RunOptions::new().mcp_server(web),
    )
    .await;
    assert_eq!(ok(&run).text, "Fetched.");
    let requests = h.model_requests(KEYWORD);
    let tools = declared_tools(&requests[0]);
    assert!(tools.contains(&"mcp_web_lookup".to_owned()), "{tools:?}");
    assert_eq!(
        McpTestServer::read_log(&log).unwrap(),
        [json!({"tool": "lookup", "arguments": {"key": "k2"}})]
    );
    assert!(String::from_utf8_lossy(&requests[1].body).contains("value-of-k2"));
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
    let first = drain(
        h.config(),
        &format!("{KEYWORD} remember lark-42"),
        RunOptions::new().instructions(INSTRUCTIONS),
    )
    .await;
    let state = ok(&first).checkpoint().unwrap().state.clone().unwrap();

    let driver = gemini::driver(h.config());
    let mut request = agent_adaptor_driver::Request::new("run_00000000000000r2", "and now?");
    request.instructions = Some(INSTRUCTIONS.into());
    request.session = Some(agent_adaptor_driver::SessionContext {
        state: Some(state.clone()),
        ..Default::default()
    });
    let trace = agent_adaptor_conformance::record_run(&driver, request, RUN_TIMEOUT).await;
    let response = trace.response().expect("run 2 returned");
    assert_eq!(response.output, "second-answer");
    let requests = h.model_requests(KEYWORD);
    let last = requests.last().unwrap();
    assert!(
        String::from_utf8_lossy(&last.body).contains("lark-42"),
        "the session resumed"
    );
    assert!(system_text(last).contains(INSTRUCTIONS));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clone_profile_starts_from_the_users_settings_and_credentials() {
    const KEYWORD: &str = "CLONED";
    let h = Harness::start(Script::new().on_prompt(KEYWORD, vec![Reply::Text("ok".into())])).await;
    std::fs::write(
        h.native().join("oauth_creds.json"),
        r#"{"fake":"credential"}"#,
    )
    .unwrap();
    std::fs::write(h.native().join("GEMINI.md"), "native-only-context").unwrap();
    let before = snapshot(&h.native());
    let root = h.home.path().join("clones");
    // No settings in the clone but the user's: their auth selection works.
    let run = drain(
        h.config(),
        &format!("{KEYWORD}: go"),
        RunOptions::new().profile(Profile::Clone { root: root.clone() }),
    )
    .await;
    assert_eq!(ok(&run).text, "ok");
    assert_eq!(
        snapshot(&h.native()),
        before,
        "the native home is unchanged"
    );
    let home = root.join("gemini/.gemini");
    // The user's settings were copied (Gemini then migrates its copy:
    // `disableAutoUpdate` becomes `enableAutoUpdate`).
    let cloned: Value =
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
