//! `fake-acp-agent` driven by a minimal scripted ACP client over its
//! stdio: each scenario's frames, the session state across processes and
//! the log of what the client sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use agent_adaptor_testkit::acp_agent::{
    APPROVED, DENIED, ERROR_CODE, ERROR_MESSAGE, EXIT_STATUS, FakeAcpAgent, MALFORMED_TEXT,
    NOT_JSON_LINE, PERMISSION_CALL_ID, TEXT_CHUNKS, THOUGHT, USAGE_SIZE, USAGE_USED, WRITTEN,
};
use agent_adaptor_testkit::proc_tree;
use serde_json::{Value, json};

/// A bound on waiting for a line, so a broken agent fails the test
/// instead of hanging it (never reached by a working one).
const LINE_BOUND: Duration = Duration::from_secs(60);

struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    log: PathBuf,
    dir: PathBuf,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("fake-acp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).unwrap();
    TempDir(dir)
}

impl Client {
    /// Starts the agent with `args`, its log and state in `dir`
    /// (`log-<name>.jsonl`, `state/`).
    fn start(dir: &TempDir, name: &str, args: &[&str]) -> Client {
        let log = dir.0.join(format!("log-{name}.jsonl"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_fake-acp-agent"))
            .args(args)
            .arg("--log")
            .arg(&log)
            .arg("--state")
            .arg(dir.0.join("state"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Client {
            stdin: child.stdin.take(),
            child,
            lines,
            log,
            dir: dir.0.clone(),
        }
    }

    fn cwd(&self) -> PathBuf {
        self.dir.join("work")
    }

    fn send(&mut self, frame: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{frame}").unwrap();
        stdin.flush().unwrap();
    }

    fn line(&self) -> Option<String> {
        self.lines.recv_timeout(LINE_BOUND).ok()
    }

    fn frame(&self) -> Value {
        let line = self.line().expect("the agent sent a line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a request and returns every frame up to and including its
    /// answer.
    fn ask(&mut self, id: u64, method: &str, params: Value) -> Vec<Value> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.until_answer(id)
    }

    fn until_answer(&self, id: u64) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            let frame = self.frame();
            assert_eq!(frame["jsonrpc"], "2.0", "{frame}");
            let done = frame["id"] == id && frame.get("method").is_none();
            frames.push(frame);
            if done {
                return frames;
            }
        }
    }

    fn answer(&mut self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    }

    fn answer_error(&mut self, request: &Value, code: i32, message: &str) {
        let error = json!({"code": code, "message": message});
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "error": error}));
    }

    fn init(&mut self) -> Value {
        let frames = self.ask(0, "initialize", json!({"protocolVersion": 1}));
        assert_eq!(frames.len(), 1);
        frames[0]["result"].clone()
    }

    fn new_session(&mut self) -> String {
        let cwd = self.cwd();
        let frames = self.ask(1, "session/new", json!({"cwd": cwd, "mcpServers": []}));
        frames[0]["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn prompt(&mut self, session: &str, text: &str) {
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        self.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": params}));
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    fn wait(mut self) -> ExitStatus {
        self.close_stdin();
        self.child.wait().unwrap()
    }

    fn log(&self) -> Vec<Value> {
        FakeAcpAgent::read_log(&self.log).unwrap()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn updates(frames: &[Value]) -> Vec<Value> {
    frames
        .iter()
        .filter(|f| f["method"] == "session/update")
        .map(|f| f["params"]["update"].clone())
        .collect()
}

fn texts(frames: &[Value], kind: &str) -> String {
    updates(frames)
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn text_turn_streams_thought_deltas_usage_plan_and_ends_the_turn() {
    let dir = temp_dir("text");
    let mut c = Client::start(&dir, "text", &[]);
    let init = c.init();
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    let session = c.new_session();
    c.prompt(&session, "hi");
    let frames = c.until_answer(2);
    let kinds: Vec<Value> = updates(&frames)
        .iter()
        .map(|u| u["sessionUpdate"].clone())
        .collect();
    assert_eq!(
        kinds,
        json!([
            "agent_thought_chunk",
            "agent_message_chunk",
            "agent_message_chunk",
            "agent_message_chunk",
            "usage_update",
            "plan"
        ])
        .as_array()
        .unwrap()
        .clone()
    );
    assert_eq!(texts(&frames, "agent_thought_chunk"), THOUGHT);
    assert_eq!(texts(&frames, "agent_message_chunk"), TEXT_CHUNKS.concat());
    let usage = &updates(&frames)[4];
    assert_eq!(
        (usage["used"].as_u64(), usage["size"].as_u64()),
        (Some(USAGE_USED), Some(USAGE_SIZE))
    );
    assert_eq!(updates(&frames)[5]["entries"][1]["status"], "in_progress");
    let result = &frames.last().unwrap()["result"];
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(result["_meta"]["quota"]["token_count"]["output_tokens"], 20);
    // The log holds what the client sent, cwd included.
    let log = c.log();
    let methods: Vec<&str> = log.iter().map(|f| f["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["initialize", "session/new", "session/prompt"]);
    assert_eq!(log[1]["params"]["cwd"], json!(c.cwd()));
    assert!(c.wait().success());
}

#[test]
fn a_second_process_loads_the_session_and_replays_its_turns() {
    let dir = temp_dir("load");
    let mut first = Client::start(&dir, "first", &[]);
    first.init();
    let session = first.new_session();
    first.prompt(&session, "remember me");
    first.until_answer(2);
    assert!(first.wait().success());
    let mut c = Client::start(&dir, "second", &[]);
    assert_eq!(c.init()["agentCapabilities"]["loadSession"], true);
    let cwd = c.cwd();
    let params = json!({"sessionId": session, "cwd": cwd, "mcpServers": []});
    let frames = c.ask(5, "session/load", params);
    assert_eq!(texts(&frames, "user_message_chunk"), "remember me");
    assert_eq!(texts(&frames, "agent_message_chunk"), TEXT_CHUNKS.concat());
    assert_eq!(frames.last().unwrap()["result"], json!({}));
    let params = json!({"sessionId": "nope", "cwd": cwd, "mcpServers": []});
    let unknown = c.ask(6, "session/load", params);
    assert_eq!(unknown[0]["error"]["code"], -32002);
    // A turn on the loaded session is recorded after the first one.
    c.prompt(&session, "again");
    c.until_answer(2);
    assert!(c.wait().success());
    let mut third = Client::start(&dir, "third", &[]);
    third.init();
    let params = json!({"sessionId": session, "cwd": cwd, "mcpServers": []});
    let frames = third.ask(5, "session/load", params);
    assert_eq!(texts(&frames, "user_message_chunk"), "remember meagain");
}

/// Runs the `permission` scenario up to its request; returns the client
/// and the request.
fn permission_request(dir: &TempDir, name: &str) -> (Client, String, Value) {
    let mut c = Client::start(dir, name, &["--scenario", "permission"]);
    c.init();
    let session = c.new_session();
    c.prompt(&session, "run it");
    let call = c.frame();
    assert_eq!(call["params"]["update"]["sessionUpdate"], "tool_call");
    assert_eq!(call["params"]["update"]["toolCallId"], PERMISSION_CALL_ID);
    assert_eq!(call["params"]["update"]["kind"], "execute");
    // `pending` is the schema's default status, so the wire leaves it out.
    assert_eq!(call["params"]["update"].get("status"), None);
    let ask = c.frame();
    assert_eq!(ask["method"], "session/request_permission");
    assert_eq!(ask["params"]["toolCall"]["status"], "pending");
    let options: Vec<&str> = ask["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    (c, session, ask)
}

fn selected(option: &str) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": option}})
}

#[test]
fn permission_allowed_completes_the_call_and_says_approved() {
    let dir = temp_dir("perm-allow");
    for option in ["allow_once", "allow_always"] {
        let (mut c, _, ask) = permission_request(&dir, option);
        c.answer(&ask, selected(option));
        let frames = c.until_answer(2);
        assert_eq!(updates(&frames)[0]["status"], "completed");
        assert_eq!(texts(&frames, "agent_message_chunk"), APPROVED);
        assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
        // Exactly one answer to the permission request reached the agent.
        let answers = c
            .log()
            .iter()
            .filter(|f| f["id"] == ask["id"] && f.get("result").is_some())
            .count();
        assert_eq!(answers, 1);
    }
}

#[test]
fn permission_rejected_fails_the_call_and_says_denied() {
    let dir = temp_dir("perm-reject");
    for option in ["reject_once", "reject_always"] {
        let (mut c, _, ask) = permission_request(&dir, option);
        c.answer(&ask, selected(option));
        let frames = c.until_answer(2);
        assert_eq!(updates(&frames)[0]["status"], "failed");
        assert_eq!(texts(&frames, "agent_message_chunk"), DENIED);
        assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
    }
}

#[test]
fn permission_cancelled_ends_the_turn_cancelled() {
    let dir = temp_dir("perm-cancel");
    let (mut c, session, ask) = permission_request(&dir, "cancel");
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}));
    c.answer(&ask, json!({"outcome": {"outcome": "cancelled"}}));
    let frames = c.until_answer(2);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["result"]["stopReason"], "cancelled");
    let log = c.log();
    assert_eq!(
        log.iter()
            .filter(|f| f["method"] == "session/cancel")
            .count(),
        1
    );
}

#[test]
fn permission_answers_that_are_not_offered_or_errors_fail_the_prompt() {
    let dir = temp_dir("perm-bad");
    let (mut c, _, ask) = permission_request(&dir, "unknown");
    c.answer(&ask, selected("allow_forever"));
    let frames = c.until_answer(2);
    assert_eq!(frames[0]["error"]["code"], -32602);
    let (mut c, _, ask) = permission_request(&dir, "error");
    c.answer_error(&ask, -32000, "no host");
    let frames = c.until_answer(2);
    assert_eq!(frames[0]["error"]["code"], -32603);
    assert!(
        frames[0]["error"]["data"]
            .as_str()
            .unwrap()
            .contains("no host")
    );
}

#[test]
fn bad_version_answers_initialize_with_version_999() {
    let dir = temp_dir("bad-version");
    let mut c = Client::start(&dir, "bad", &["--scenario", "bad-version"]);
    assert_eq!(c.init()["protocolVersion"], 999);
}

#[test]
fn malformed_prints_garbage_after_session_new_then_goes_on() {
    let dir = temp_dir("malformed");
    let mut c = Client::start(&dir, "malformed", &["--scenario", "malformed"]);
    c.init();
    let session = c.new_session();
    assert_eq!(c.line().unwrap(), NOT_JSON_LINE);
    let frame = c.frame();
    assert!(frame.get("jsonrpc").is_none(), "{frame}");
    assert_eq!(frame["params"]["update"]["content"]["text"], MALFORMED_TEXT);
    c.prompt(&session, "hi");
    let frames = c.until_answer(2);
    assert_eq!(texts(&frames, "agent_message_chunk"), TEXT_CHUNKS.concat());
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
}

#[test]
fn silent_never_answers_the_prompt_and_outlives_its_stdin() {
    let dir = temp_dir("silent");
    let mut c = Client::start(&dir, "silent", &["--scenario", "silent"]);
    c.init();
    let session = c.new_session();
    c.prompt(&session, "hi");
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}));
    // The agent reads in order: answering a later request first proves
    // the prompt was passed over, not late.
    let frames = c.ask(9, "fake/ping", json!({}));
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["error"]["code"], -32601);
    c.close_stdin();
    // Still running after the end of its input: only a signal ends it.
    c.child.kill().unwrap();
    let status = c.child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
}

#[test]
fn hang_on_cancel_child_leaves_a_sleep_in_its_process_group() {
    let dir = temp_dir("hang");
    let mut c = Client::start(&dir, "hang", &["--scenario", "hang-on-cancel-child"]);
    c.init();
    let agent = c.child.id();
    let group = proc_tree::members(|s| s.pgrp == agent);
    assert_eq!(group.len(), 2, "the agent and its sleep: {group:?}");
    let sleeper = proc_tree::children(agent);
    assert_eq!(sleeper.len(), 1);
    let session = c.new_session();
    c.prompt(&session, "hi");
    let frames = c.ask(9, "fake/ping", json!({}));
    assert_eq!(frames.len(), 1, "the prompt stays unanswered: {frames:?}");
    // Killing only the agent leaves the sleep behind (what a driver must
    // not do); killing the group ends it.
    c.child.kill().unwrap();
    c.child.wait().unwrap();
    assert!(sleeper[0].alive());
    let killed = Command::new("kill")
        .args(["-KILL", "--", &format!("-{agent}")])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_until(|| !sleeper[0].alive());
}

/// Waits (bounded) for `done`: a killed process takes a moment to go.
fn wait_until(done: impl Fn() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("condition not met within the bound");
}

#[test]
fn error_answers_the_prompt_with_a_jsonrpc_error() {
    let dir = temp_dir("error");
    let mut c = Client::start(&dir, "error", &["--scenario", "error"]);
    c.init();
    let session = c.new_session();
    c.prompt(&session, "hi");
    let frames = c.until_answer(2);
    assert_eq!(frames.len(), 1);
    assert_eq!(
        frames[0]["error"],
        json!({"code": ERROR_CODE, "message": ERROR_MESSAGE})
    );
}

#[test]
fn exit_leaves_mid_prompt_with_status_3() {
    let dir = temp_dir("exit");
    let mut c = Client::start(&dir, "exit", &["--scenario", "exit"]);
    c.init();
    let session = c.new_session();
    c.prompt(&session, "hi");
    let chunk = c.frame();
    assert_eq!(chunk["params"]["update"]["content"]["text"], TEXT_CHUNKS[0]);
    assert_eq!(c.line(), None, "nothing after the chunk");
    let status = c.child.wait().unwrap();
    assert_eq!(status.code(), Some(i32::from(EXIT_STATUS)));
}

fn one_request(c: &mut Client, method: &str) -> Value {
    let ask = c.frame();
    assert_eq!(ask["method"], method, "{ask}");
    assert!(ask["id"].is_number());
    ask
}

#[test]
fn fs_read_reports_the_content_or_the_error() {
    let dir = temp_dir("fs-read");
    for (name, path) in [("rel", "notes.txt"), ("up", "../secret")] {
        let mut c = Client::start(&dir, name, &["--scenario", "fs-read", path]);
        c.init();
        let session = c.new_session();
        c.prompt(&session, "read");
        let ask = one_request(&mut c, "fs/read_text_file");
        assert_eq!(ask["params"]["sessionId"], session.as_str());
        assert_eq!(ask["params"]["path"], json!(c.cwd().join(path)));
        if name == "rel" {
            c.answer(&ask, json!({"content": "line 1\n"}));
            let frames = c.until_answer(2);
            assert_eq!(texts(&frames, "agent_message_chunk"), "line 1\n");
        } else {
            c.answer_error(&ask, -32602, "outside the workspace");
            let frames = c.until_answer(2);
            assert_eq!(
                texts(&frames, "agent_message_chunk"),
                "error -32602: outside the workspace"
            );
            assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
        }
    }
}

#[test]
fn fs_write_sends_the_prompt_text_and_reports_the_answer() {
    let dir = temp_dir("fs-write");
    let mut c = Client::start(&dir, "abs", &["--scenario", "fs-write", "/etc/x"]);
    c.init();
    let session = c.new_session();
    c.prompt(&session, "new content");
    let ask = one_request(&mut c, "fs/write_text_file");
    assert_eq!(ask["params"]["path"], "/etc/x");
    assert_eq!(ask["params"]["content"], "new content");
    c.answer(&ask, Value::Null);
    let frames = c.until_answer(2);
    assert_eq!(texts(&frames, "agent_message_chunk"), WRITTEN);
    let mut c = Client::start(&dir, "denied", &["--scenario", "fs-write", "out.txt"]);
    c.init();
    let session = c.new_session();
    c.prompt(&session, "x");
    let ask = one_request(&mut c, "fs/write_text_file");
    c.answer_error(&ask, -32000, "denied by policy");
    let frames = c.until_answer(2);
    assert_eq!(
        texts(&frames, "agent_message_chunk"),
        "error -32000: denied by policy"
    );
}

#[test]
fn terminal_creates_waits_reads_and_releases() {
    let dir = temp_dir("terminal");
    let mut c = Client::start(&dir, "ok", &["--scenario", "terminal", "echo hi there"]);
    c.init();
    let session = c.new_session();
    c.prompt(&session, "run");
    let create = one_request(&mut c, "terminal/create");
    assert_eq!(create["params"]["command"], "echo");
    assert_eq!(create["params"]["args"], json!(["hi", "there"]));
    c.answer(&create, json!({"terminalId": "t1"}));
    let wait = one_request(&mut c, "terminal/wait_for_exit");
    assert_eq!(wait["params"]["terminalId"], "t1");
    c.answer(&wait, json!({"exitCode": 0}));
    let output = one_request(&mut c, "terminal/output");
    c.answer(&output, json!({"output": "hi there\n", "truncated": false}));
    let release = one_request(&mut c, "terminal/release");
    assert_eq!(release["params"]["terminalId"], "t1");
    c.answer(&release, json!({}));
    let frames = c.until_answer(2);
    assert_eq!(texts(&frames, "agent_message_chunk"), "hi there\n");
    // A refused create is reported; nothing is released.
    let mut c = Client::start(&dir, "refused", &["--scenario", "terminal", "rm -rf /"]);
    c.init();
    let session = c.new_session();
    c.prompt(&session, "run");
    let create = one_request(&mut c, "terminal/create");
    c.answer_error(&create, -32000, "not allowed");
    let frames = c.until_answer(2);
    assert_eq!(
        texts(&frames, "agent_message_chunk"),
        "error -32000: not allowed"
    );
    // A failed wait still releases the terminal.
    let mut c = Client::start(&dir, "wait-fails", &["--scenario", "terminal", "sleep 1"]);
    c.init();
    let session = c.new_session();
    c.prompt(&session, "run");
    let create = one_request(&mut c, "terminal/create");
    c.answer(&create, json!({"terminalId": "t2"}));
    let wait = one_request(&mut c, "terminal/wait_for_exit");
    c.answer_error(&wait, -32603, "killed");
    let release = one_request(&mut c, "terminal/release");
    c.answer(&release, json!({}));
    let frames = c.until_answer(2);
    assert_eq!(
        texts(&frames, "agent_message_chunk"),
        "error -32603: killed"
    );
}

#[test]
fn other_methods_are_not_found_and_bad_params_invalid() {
    let dir = temp_dir("other");
    let mut c = Client::start(&dir, "other", &[]);
    c.init();
    assert_eq!(
        c.ask(3, "session/resume", json!({}))[0]["error"]["code"],
        -32601
    );
    assert_eq!(
        c.ask(4, "session/new", json!({"nope": 1}))[0]["error"]["code"],
        -32602
    );
    let params = json!({"sessionId": "fake-session-9", "prompt": []});
    assert_eq!(
        c.ask(5, "session/prompt", params)[0]["error"]["code"],
        -32002
    );
}

#[test]
fn prompt_keywords_pick_the_stop_reason_and_send_a_mode_update() {
    let dir = temp_dir("keywords");
    let mut c = Client::start(&dir, "keywords", &[]);
    c.init();
    let session = c.new_session();
    for reason in ["refusal", "max_tokens", "max_turn_requests"] {
        c.prompt(&session, &format!("go [stop:{reason}] [mode:plan]"));
        let frames = c.until_answer(2);
        let first = &updates(&frames)[0];
        assert_eq!(first["sessionUpdate"], "current_mode_update");
        assert_eq!(first["currentModeId"], "plan");
        assert_eq!(frames.last().unwrap()["result"]["stopReason"], reason);
    }
    c.prompt(&session, "[stop:bored]");
    assert_eq!(c.until_answer(2)[0]["error"]["code"], -32602);
}

#[test]
fn wait_for_cancel_holds_the_turn_until_session_cancel() {
    let dir = temp_dir("wait-cancel");
    let mut c = Client::start(&dir, "wait", &[]);
    c.init();
    let session = c.new_session();
    c.prompt(&session, "[wait-for-cancel]");
    assert_eq!(
        c.frame()["params"]["update"]["sessionUpdate"],
        "agent_thought_chunk"
    );
    assert_eq!(
        c.frame()["params"]["update"]["content"]["text"],
        TEXT_CHUNKS[0]
    );
    // A cancel of another session does not end it; a request meanwhile is
    // answered once the turn is over.
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "other"}}));
    c.send(json!({"jsonrpc": "2.0", "id": 9, "method": "fake/ping", "params": {}}));
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}));
    let frames = c.until_answer(2);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["result"]["stopReason"], "cancelled");
    assert_eq!(c.until_answer(9)[0]["error"]["code"], -32601);
}

#[test]
fn other_crates_find_the_binary_in_the_target_directory() {
    let found = FakeAcpAgent::binary().unwrap();
    assert_eq!(found, PathBuf::from(env!("CARGO_BIN_EXE_fake-acp-agent")));
    assert!(
        FakeAcpAgent::read_log(&found.with_extension("no-such-log"))
            .unwrap()
            .is_empty()
    );
}
