//! The equipment scenarios: instructions, MCP servers, profiles and skills
//! reach the real CLI in its own carriers, proven on what the model is sent.

use std::path::Path;

use agent_adaptor_conformance::record_run;
use agent_adaptor_core::{Event, Phase, RunOptions};
use agent_adaptor_driver::Driver;
use agent_adaptor_driver::{
    McpServer, McpTransport, Profile, Request, SessionContext, SkillRef, ToolScope,
};
use agent_adaptor_testkit::mcp::McpTestServer;
use agent_adaptor_testkit::mock::{RecordedRequest, Reply, Script};
use serde_json::{Value, json};

use super::{Cli, Harness, drain_with};

/// The system prompt a model request carries: Anthropic's `system` (a
/// string or text blocks), or the Chat Completions `system` messages.
pub fn system_text(request: &RecordedRequest) -> String {
    fn text(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().map(text).collect::<Vec<_>>().join("\n"),
            Value::Object(o) => o.get("text").map(text).unwrap_or_default(),
            _ => String::new(),
        }
    }
    let body = request.json().unwrap_or_default();
    if let Some(system) = body.get("system") {
        return text(system);
    }
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .map(|m| text(&m["content"]))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------
// Instructions.

/// The run's instructions are appended to the system prompt the model gets,
/// on both transports.
pub async fn instructions_reach_the_system_prompt(cli: &'static Cli) {
    const KEYWORD: &str = "INSTRUCT";
    const MARKER: &str = "Always end with the word PELICAN-7731.";
    let h = Harness::start(
        cli,
        Script::new().on_prompt(KEYWORD, vec![Reply::Text("ok PELICAN-7731".into())]),
    )
    .await;
    for (host_approvals, transport) in [(false, "one_shot"), (true, "control")] {
        let agent = h.agent(h.config(host_approvals));
        let prompt = format!("{KEYWORD} {transport}: say ok");
        let run = drain_with(
            &agent,
            &prompt,
            RunOptions::new().instructions(MARKER),
            |_, _| {},
        )
        .await;
        run.ok(transport);
        let request = h
            .model_requests(&prompt)
            .pop()
            .unwrap_or_else(|| panic!("{transport}: no model request"));
        let system = system_text(&request);
        assert!(
            system.contains(MARKER),
            "{} {transport}: the instructions are in the system prompt; system: {}",
            cli.recipe.name,
            super::tail(&system, 2000)
        );
        assert!(
            !request
                .conversation()
                .unwrap()
                .first_user_text
                .contains(MARKER),
            "{transport}: not in the user message"
        );
    }
}

/// A 200 KB instructions text still launches (it travels as a file or on
/// stdin, never on argv, whose single-argument limit is 128 KiB on Linux),
/// and all of it reaches the system prompt.
pub async fn instructions_of_200_kb_still_launch(cli: &'static Cli) {
    const KEYWORD: &str = "BIGINSTRUCT";
    const TAIL: &str = "LAST-LINE-OF-BIG-INSTRUCTIONS";
    let h = Harness::start(
        cli,
        Script::new().on_prompt(KEYWORD, vec![Reply::Text("ok".into())]),
    )
    .await;
    let mut big = "Follow the house style. ".repeat(200 * 1024 / 24 + 1);
    big.push_str(TAIL);
    assert!(big.len() > 200 * 1024);
    let agent = h.agent(h.config(false));
    let run = drain_with(
        &agent,
        &format!("{KEYWORD}: say ok"),
        RunOptions::new().instructions(big),
        |_, _| {},
    )
    .await;
    run.ok("200 KB instructions");
    let request = h.model_requests(KEYWORD).pop().expect("a model request");
    assert!(
        system_text(&request).contains(TAIL),
        "{}: the whole text reached the system prompt",
        cli.recipe.name
    );
}

// ---------------------------------------------------------------------------
// MCP servers.

/// The testkit MCP server's name in the run (the CLI's config key).
const MCP_SERVER: &str = "aa-test";

/// The tool names a model request offers (Anthropic `tools[].name`, Chat
/// Completions `tools[].function.name`).
pub fn offered_tools(request: &RecordedRequest) -> Vec<String> {
    let body = request.json().unwrap_or_default();
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t.get("name")
                .or_else(|| t.pointer("/function/name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// A stdio `mock-mcp-server` named [`MCP_SERVER`] that logs to `log`.
pub fn stdio_server(log: &Path) -> McpServer {
    let (command, args) = McpTestServer::stdio_command(MCP_SERVER, log).expect("mock-mcp-server");
    McpServer::stdio(MCP_SERVER, command, args)
}

/// The driver configuration of an MCP scenario: the CLI lists MCP tools
/// in the request's tools instead of deferring them behind its tool search.
fn mcp_config(h: &Harness, host_approvals: bool) -> agent_adaptor_drivers::streamjson::Config {
    let mut cfg = h.config(host_approvals);
    cfg.env.extend(h.cli.load_mcp_tools.iter().copied());
    cfg
}

/// The script of one MCP round trip: the model calls `lookup {key}`, then
/// answers.
fn lookup_replies(cli: &Cli, key: &str) -> Vec<Reply> {
    vec![
        Reply::ToolCall {
            name: cli.mcp_lookup.into(),
            arguments: json!({ "key": key }),
        },
        Reply::Text("looked it up".into()),
    ]
}

/// Check one MCP round trip of `prompt`: the tool was offered, the server
/// logged the call, its answer reached the model, and the run's events hold
/// the call (scope `Mcp`) and its result.
fn assert_round_trip(h: &Harness, run: &super::Run, prompt: &str, key: &str, log: &Path) {
    let name = h.cli.recipe.name;
    let lookup = h.cli.mcp_lookup;
    let requests = h.model_requests(prompt);
    let first = requests.first().expect("a model request");
    let tools = offered_tools(first);
    assert!(
        tools.iter().any(|t| t == lookup),
        "{name}: the model is offered {lookup}; tools: {tools:?}"
    );
    let calls = McpTestServer::read_log(log).expect("the server log");
    assert!(
        calls
            .iter()
            .any(|c| c["tool"] == "lookup" && c["arguments"]["key"] == key),
        "{name}: the server was called: {calls:?}\n{}",
        run.describe()
    );
    let answer = format!("value-of-{key}");
    assert!(
        requests
            .iter()
            .skip(1)
            .any(|r| String::from_utf8_lossy(&r.body).contains(&answer)),
        "{name}: the tool's answer reached the model\n{}",
        run.describe()
    );
    let call = run
        .events
        .iter()
        .find_map(|e| match e {
            Event::ToolCall(c) if c.phase == Phase::Start && c.name == lookup => Some(c),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{name}: no {lookup} ToolCall\n{}", run.describe()));
    assert_eq!(
        call.scope,
        ToolScope::Mcp {
            server: MCP_SERVER.into(),
            tool: "lookup".into()
        },
        "{name}"
    );
    let result = run.tool_result(call.id.as_str());
    assert!(
        super::result_text(result).contains(&answer),
        "{name}: the ToolResult holds the answer: {result}"
    );
}

/// A stdio MCP server of the run: the model is offered its tool, calls it,
/// and gets its answer. One-shot: the tool is auto-approved where the
/// driver declares it (CodeBuddy runs MCP tools unasked on one-shot). Host
/// approvals: the call goes to the host as an approval like any tool,
/// unless auto-approved (then nobody is asked).
pub async fn mcp_stdio_tool_round_trip(cli: &'static Cli) {
    let script = Script::new()
        .on_prompt("MCPONESHOT", lookup_replies(cli, "k1"))
        .on_prompt("MCPCONTROL", lookup_replies(cli, "k2"))
        .on_prompt("MCPAUTO", lookup_replies(cli, "k0"));
    let h = Harness::start(cli, script).await;

    // Host approvals with the tool auto-approved: the CLI's allow-list
    // runs it without asking the host (the last run below asks).
    let auto_approve = h.driver(h.config(false)).descriptor().mcp.auto_approve;
    if auto_approve {
        let log = h.home.path().join("mcp-auto.log");
        let mut server = stdio_server(&log);
        server.tools.auto_approve.insert("lookup".into());
        let mut asked = 0;
        let run = drain_with(
            &h.agent(mcp_config(&h, true)),
            "MCPAUTO: look up k0",
            RunOptions::new().mcp_server(server),
            |event, _| {
                if let Event::ApprovalRequest(req) = event {
                    asked += 1;
                    req.approve().expect("answerable once");
                }
            },
        )
        .await;
        run.ok("auto-approved MCP call with host approvals");
        assert_eq!(asked, 0, "{}: nobody was asked", cli.recipe.name);
        assert_eq!(
            McpTestServer::read_log(&log).expect("the log").len(),
            1,
            "{}: the tool ran",
            cli.recipe.name
        );
    }

    let log = h.home.path().join("mcp-one-shot.log");
    let mut server = stdio_server(&log);
    if auto_approve {
        server.tools.auto_approve.insert("lookup".into());
    }
    let prompt = "MCPONESHOT: look up k1";
    let run = drain_with(
        &h.agent(mcp_config(&h, false)),
        prompt,
        RunOptions::new().mcp_server(server),
        |_, _| {},
    )
    .await;
    run.ok("one-shot MCP round trip");
    assert_eq!(run.transport(), "one_shot");
    assert_round_trip(&h, &run, prompt, "k1", &log);

    let log = h.home.path().join("mcp-control.log");
    let prompt = "MCPCONTROL: look up k2";
    let mut asked = Vec::new();
    let run = drain_with(
        &h.agent(mcp_config(&h, true)),
        prompt,
        RunOptions::new().mcp_server(stdio_server(&log)),
        |event, _| {
            if let Event::ApprovalRequest(req) = event {
                let details = req.details.clone().unwrap_or_default();
                asked.push(details["tool_name"].as_str().unwrap_or_default().to_owned());
                req.approve().expect("answerable once");
            }
        },
    )
    .await;
    run.ok("control MCP round trip");
    assert_eq!(run.transport(), "control");
    assert_eq!(asked, [cli.mcp_lookup], "the host approved the MCP call");
    assert_round_trip(&h, &run, prompt, "k2", &log);
}

/// A Streamable HTTP MCP server that wants a bearer token: the CLI's config
/// names the variable (`Authorization: Bearer ${VAR}`), the CLI expands it
/// from its environment, and the server (401 without it) answers.
pub async fn mcp_http_bearer_token_from_env(cli: &'static Cli) {
    const VAR: &str = "AA_MCP_TOKEN";
    const TOKEN: &str = "tok-5a1e-secret";
    let h = Harness::start(
        cli,
        Script::new().on_prompt("MCPHTTP", lookup_replies(cli, "k3")),
    )
    .await;
    let log = h.home.path().join("mcp-http.log");
    let http = McpTestServer::start_http(MCP_SERVER, &log, Some((VAR, TOKEN)))
        .await
        .expect("the HTTP MCP server");
    let mut server = McpServer::http(MCP_SERVER, http.url.clone());
    if let McpTransport::Http {
        bearer_token_env, ..
    } = &mut server.transport
    {
        *bearer_token_env = Some(VAR.into());
    }
    if h.driver(h.config(false)).descriptor().mcp.auto_approve {
        server.tools.auto_approve.insert("lookup".into());
    }
    // The host's variable (a binding here: tests do not change their own
    // environment).
    let mut cfg = mcp_config(&h, false);
    cfg.env.insert(VAR.into(), TOKEN.into());
    let prompt = "MCPHTTP: look up k3";
    let run = drain_with(
        &h.agent(cfg),
        prompt,
        RunOptions::new().mcp_server(server),
        |_, _| {},
    )
    .await;
    run.ok("HTTP MCP round trip");
    assert_round_trip(&h, &run, prompt, "k3", &log);
    assert!(
        !run.describe().contains(TOKEN),
        "the token is in no event or output"
    );
}

/// A 200 KB MCP configuration (server environment) still launches: it
/// travels as a file, never on argv.
pub async fn mcp_config_of_200_kb_still_launches(cli: &'static Cli) {
    let h = Harness::start(
        cli,
        Script::new().on_prompt("MCPBIG", vec![Reply::Text("ok".into())]),
    )
    .await;
    let log = h.home.path().join("mcp-big.log");
    let mut server = stdio_server(&log);
    if let McpTransport::Stdio { env, .. } = &mut server.transport {
        // 50 variables of 4 KiB: each stays under the per-string exec limit.
        for i in 0..50 {
            env.insert(format!("AA_FILLER_{i}"), "x".repeat(4096));
        }
    }
    let run = drain_with(
        &h.agent(mcp_config(&h, false)),
        "MCPBIG: say ok",
        RunOptions::new().mcp_server(server),
        |_, _| {},
    )
    .await;
    run.ok("200 KB MCP config");
    let request = h.model_requests("MCPBIG").pop().expect("a model request");
    let tools = offered_tools(&request);
    assert!(
        tools.iter().any(|t| t == cli.mcp_lookup),
        "{}: the server started; tools: {tools:?}",
        cli.recipe.name
    );
}

/// The user's own MCP server in the CLI's configuration home (the recipe's
/// home, as if configured by hand): `aa-user`, logging to `log`.
fn configure_user_server(h: &Harness, log: &Path) {
    let (command, args) = McpTestServer::stdio_command("aa-user", log).expect("mock-mcp-server");
    let file = h.home.path().join(h.cli.user_mcp_file);
    let doc =
        json!({"mcpServers": {"aa-user": {"type": "stdio", "command": command, "args": args}}});
    std::fs::write(&file, doc.to_string()).expect("write the user's MCP config");
}

/// Whether `tools` holds a tool of the user's server `aa-user`.
fn has_user_server(tools: &[String]) -> bool {
    tools
        .iter()
        .any(|t| t.starts_with("mcp__aa-user__") || t.starts_with("mcp__aa_user__"))
}

/// `mcp_strict`: only the run's servers are loaded, not the user's own
/// (which a run without it does load).
pub async fn mcp_strict_loads_only_the_runs_servers(cli: &'static Cli) {
    let script = Script::new()
        .on_prompt("MCPLOOSE", vec![Reply::Text("ok".into())])
        .on_prompt("MCPSTRICT", vec![Reply::Text("ok".into())]);
    let h = Harness::start(cli, script).await;
    configure_user_server(&h, &h.home.path().join("user.log"));
    let log = h.home.path().join("run.log");
    for (prompt, strict) in [("MCPLOOSE: say ok", false), ("MCPSTRICT: say ok", true)] {
        let run = drain_with(
            &h.agent(mcp_config(&h, false)),
            prompt,
            RunOptions::new()
                .mcp_server(stdio_server(&log))
                .mcp_strict(strict),
            |_, _| {},
        )
        .await;
        run.ok(prompt);
        let request = h.model_requests(prompt).pop().expect("a model request");
        let tools = offered_tools(&request);
        assert!(tools.iter().any(|t| t == cli.mcp_lookup), "{tools:?}");
        assert_eq!(
            has_user_server(&tools),
            !strict,
            "{} strict={strict}: the user's server; tools: {tools:?}",
            cli.recipe.name
        );
    }
}

// ---------------------------------------------------------------------------
// Profiles.

/// Every file under `dir` with its content's hash (paths relative).
fn tree_hashes(dir: &Path) -> std::collections::BTreeMap<String, u64> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let mut hasher = DefaultHasher::new();
                std::fs::read(&path).unwrap_or_default().hash(&mut hasher);
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                out.insert(rel.to_string_lossy().into_owned(), hasher.finish());
            }
        }
    }
    out
}

/// A dedicated profile runs in a home of its own: the user's home (with its
/// settings and an MCP server) is byte-for-byte unchanged, and the model is
/// not offered the user's server. A clone is seeded with the user's
/// settings, and leaves the user's home unchanged too.
pub async fn profiles_leave_the_users_home_untouched(cli: &'static Cli) {
    let script = Script::new()
        .on_prompt("PROFDEDICATED", vec![Reply::Text("ok".into())])
        .on_prompt("PROFCLONE", vec![Reply::Text("ok".into())]);
    let h = Harness::start(cli, script).await;
    let native = h.home.path().join(
        Path::new(cli.user_mcp_file)
            .parent()
            .expect("the config home"),
    );
    std::fs::write(native.join("settings.json"), r#"{"cleanupPeriodDays": 42}"#)
        .expect("the user's settings");
    configure_user_server(&h, &h.home.path().join("user.log"));
    let before = tree_hashes(&native);
    let root = h.home.path().join("profiles");
    for (prompt, profile) in [
        (
            "PROFDEDICATED: say ok",
            Profile::Dedicated {
                root: root.join("d"),
            },
        ),
        (
            "PROFCLONE: say ok",
            Profile::Clone {
                root: root.join("c"),
            },
        ),
    ] {
        let run = drain_with(
            &h.agent(mcp_config(&h, false)),
            prompt,
            RunOptions::new().profile(profile.clone()),
            |_, _| {},
        )
        .await;
        run.ok(prompt);
        assert_eq!(
            tree_hashes(&native),
            before,
            "{} {}: the user's home is unchanged",
            cli.recipe.name,
            profile.kind()
        );
        let request = h.model_requests(prompt).pop().expect("a model request");
        let tools = offered_tools(&request);
        assert!(
            !has_user_server(&tools),
            "{} {}: not the user's MCP server; tools: {tools:?}",
            cli.recipe.name,
            profile.kind()
        );
        let home = profile.home(cli.recipe.name).expect("a home");
        assert!(
            std::fs::read_dir(&home).expect("the profile home").count() > 0,
            "{}: the CLI wrote its state in the profile home",
            profile.kind()
        );
    }
    let clone_home = root.join("c").join(cli.recipe.name);
    assert_eq!(
        std::fs::read_to_string(clone_home.join("settings.json")).expect("seeded settings"),
        r#"{"cleanupPeriodDays": 42}"#
    );
}

// ---------------------------------------------------------------------------
// Skills.

/// A skill directory under `parent`: `SKILL.md` with its front matter.
fn make_skill(parent: &Path, name: &str, description: &str) -> SkillRef {
    let dir = parent.join(format!("src-{name}"));
    std::fs::create_dir_all(&dir).expect("the skill dir");
    std::fs::write(
        dir.join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: {description}\n---\n\nReply with the word OSPREY.\n"
        ),
    )
    .expect("SKILL.md");
    SkillRef {
        name: name.into(),
        description: description.into(),
        dir,
        fingerprint: format!("test:{name}"),
    }
}

/// The run's skills are offered to the model (name and description), with
/// the native profile (a per-run directory, never the user's home) and a
/// dedicated one (its home's skills directory).
pub async fn skills_are_offered_to_the_model(cli: &'static Cli) {
    let script = Script::new()
        .on_prompt("SKILLNATIVE", vec![Reply::Text("ok".into())])
        .on_prompt("SKILLDEDICATED", vec![Reply::Text("ok".into())]);
    let h = Harness::start(cli, script).await;
    let native = h.home.path().join(
        Path::new(cli.user_mcp_file)
            .parent()
            .expect("the config home"),
    );
    let root = h.home.path().join("profiles");
    for (prompt, name, profile) in [
        ("SKILLNATIVE: say ok", "tern-notes", Profile::Native),
        (
            "SKILLDEDICATED: say ok",
            "heron-notes",
            Profile::Dedicated { root: root.clone() },
        ),
    ] {
        let description = format!("Use when the user mentions {name}-9931 reports.");
        let skill = make_skill(h.home.path(), name, &description);
        let run = drain_with(
            &h.agent(h.config(false)),
            prompt,
            RunOptions::new().skill(skill).profile(profile.clone()),
            |_, _| {},
        )
        .await;
        run.ok(prompt);
        let request = h.model_requests(prompt).pop().expect("a model request");
        let body = String::from_utf8_lossy(&request.body).into_owned();
        assert!(
            body.contains(name) && body.contains(&description),
            "{} {}: the model is offered the skill {name}",
            cli.recipe.name,
            profile.kind()
        );
    }
    // A native run writes its session state there, never a skill.
    let after = tree_hashes(&native);
    assert!(
        after.keys().all(|p| !p.contains("notes")) && !native.join("skills").exists(),
        "no skill in the user's home: {:?}",
        after.keys()
    );
    assert!(
        root.join(cli.recipe.name)
            .join("skills/heron-notes/SKILL.md")
            .is_file()
    );
}

/// A resumed session gets the instructions of its own turn, not those of
/// the turn that started it (Claude records the first system prompt of a
/// conversation and replays it on resume unless told not to).
pub async fn a_resumed_turn_gets_its_own_instructions(cli: &'static Cli) {
    const KEYWORD: &str = "REINSTRUCT";
    const FIRST: &str = "Instruction of turn one: KESTREL-1.";
    const SECOND: &str = "Instruction of turn two: PLOVER-2.";
    let h = Harness::start(
        cli,
        Script::new().on_prompt(
            KEYWORD,
            vec![Reply::Text("one".into()), Reply::Text("two".into())],
        ),
    )
    .await;
    let first = drain_with(
        &h.agent(h.config(false)),
        &format!("{KEYWORD}: turn one"),
        RunOptions::new().instructions(FIRST),
        |_, _| {},
    )
    .await;
    let state = first
        .ok("turn one")
        .checkpoint()
        .and_then(|c| c.state.clone())
        .expect("a checkpoint state");
    let mut request = Request::new("run_00000000000000c2", "turn two");
    request.streaming = true;
    request.instructions = Some(SECOND.into());
    request.session = Some(SessionContext {
        state: Some(state),
        ..Default::default()
    });
    let trace = record_run(&h.driver(h.config(false)), request, super::RUN_TIMEOUT).await;
    assert_eq!(trace.response().expect("turn two's response").output, "two");
    let system = system_text(&h.request_after(KEYWORD, 1));
    assert!(
        system.contains(SECOND) && !system.contains(FIRST),
        "{}: turn two's system prompt holds its own instructions only: {}",
        cli.recipe.name,
        super::tail(&system, 1500)
    );
}

/// A thread's resident process is reused by a turn with the same
/// instructions and replaced by one with other instructions (the signature
/// hashes the text, not the per-run file), whose model request then holds
/// the new text.
pub async fn a_thread_turn_with_other_instructions_gets_a_fresh_process(cli: &'static Cli) {
    const KEYWORD: &str = "THREADINSTRUCT";
    const SAME: &str = "Thread rule one: GANNET-3.";
    const OTHER: &str = "Thread rule two: AVOCET-4.";
    let replies = ["r1", "r2", "r3"];
    let h = Harness::start(
        cli,
        Script::new().on_prompt(
            KEYWORD,
            replies.iter().map(|r| Reply::Text((*r).into())).collect(),
        ),
    )
    .await;
    let agent = agent_adaptor_core::Agent::builder(h.driver(h.config(false)))
        .thread_store(std::sync::Arc::new(agent_adaptor_core::MemoryStore::new()))
        .build()
        .expect("an agent");
    let thread = agent.thread("real/thread-instructions");
    let turns = [
        (format!("{KEYWORD}: turn one"), SAME),
        ("turn two".to_owned(), SAME),
        ("turn three".to_owned(), OTHER),
    ];
    let mut pids = Vec::new();
    for (n, (prompt, instructions)) in turns.iter().enumerate() {
        let run = drain_with(
            &thread,
            prompt,
            RunOptions::new().instructions(*instructions),
            |_, _| {},
        )
        .await;
        assert_eq!(run.ok(prompt).text, replies[n]);
        match n {
            1 => assert_eq!(run.reused(), Some(pids[0]), "{}", run.describe()),
            _ => {
                let spawned = run.spawns();
                assert_eq!(spawned.len(), 1, "turn {}: {}", n + 1, run.describe());
                pids.push(spawned[0].0);
            }
        }
    }
    assert_ne!(pids[0], pids[1], "a fresh process for other instructions");
    let system = system_text(&h.request_after(KEYWORD, 2));
    assert!(
        system.contains(OTHER) && !system.contains(SAME),
        "{}: turn three's system prompt: {}",
        cli.recipe.name,
        super::tail(&system, 1500)
    );
}
