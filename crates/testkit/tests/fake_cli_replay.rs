//! The `fake-cli` binary, run as a child process the way a driver runs a real CLI.
//!
//! No test here measures time. Reads have a generous deadline only so that a broken fake
//! fails the test instead of hanging it; the one deliberate bounded wait asserts that
//! `--wait-stdin-eof` prints nothing while stdin is open.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use agent_adaptor_testkit::fixtures::{self, Capture, Direction};
use agent_adaptor_testkit::replay::{ArgsRecord, OPTS_ENV};
use serde_json::Value;

const FAKE: &str = env!("CARGO_BIN_EXE_fake-cli");
/// Only reached when the fake is broken (it would otherwise hang the test).
const DEADLINE: Duration = Duration::from_secs(60);

fn fake(args: &[&str]) -> Command {
    let mut command = Command::new(FAKE);
    command.args(args).env_remove(OPTS_ENV);
    command
}

/// Runs to completion with `stdin` written (then closed) by a helper thread.
fn run_with_stdin(mut command: Command, stdin: Vec<u8>) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // The fake may exit before reading everything (that is what some tests check).
        let _ = input.write_all(&stdin);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

fn run_closed_stdin(mut command: Command) -> Output {
    command.stdin(Stdio::null()).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn lines_with_newlines(lines: &[&str]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect()
}

/// A running fake with its pipes read by helper threads.
struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<Vec<u8>>,
    stdout_buf: Vec<u8>,
    stdout_eof: bool,
    stderr: Receiver<Vec<u8>>,
    stderr_buf: Vec<u8>,
}

fn pump(mut source: impl Read + Send + 'static) -> Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        while let Ok(n @ 1..) = source.read(&mut chunk) {
            if tx.send(chunk[..n].to_vec()).is_err() {
                return;
            }
        }
    });
    rx
}

impl Live {
    fn spawn(mut command: Command) -> Live {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = pump(child.stdout.take().unwrap());
        let stderr = pump(child.stderr.take().unwrap());
        Live {
            child,
            stdin,
            stdout,
            stdout_buf: Vec::new(),
            stdout_eof: false,
            stderr,
            stderr_buf: Vec::new(),
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Takes the next chunk of stdout into the buffer; false at EOF.
    fn pull_stdout(&mut self) -> bool {
        if self.stdout_eof {
            return false;
        }
        match self.stdout.recv_timeout(DEADLINE) {
            Ok(chunk) => {
                self.stdout_buf.extend_from_slice(&chunk);
                true
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.stdout_eof = true;
                false
            }
            Err(RecvTimeoutError::Timeout) => {
                panic!("fake-cli wrote nothing on stdout for {DEADLINE:?}")
            }
        }
    }

    /// The next stdout line without `\n`, or `None` at EOF.
    fn next_line(&mut self) -> Option<String> {
        loop {
            if let Some(at) = self.stdout_buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.stdout_buf.drain(..=at).collect();
                return Some(text(&line[..at]));
            }
            if !self.pull_stdout() {
                assert!(
                    self.stdout_buf.is_empty(),
                    "unterminated stdout: {}",
                    text(&self.stdout_buf)
                );
                return None;
            }
        }
    }

    /// Everything left on stdout until EOF.
    fn rest_of_stdout(&mut self) -> Vec<u8> {
        while self.pull_stdout() {}
        std::mem::take(&mut self.stdout_buf)
    }

    /// The next stderr line without `\n`.
    fn next_stderr_line(&mut self) -> String {
        loop {
            if let Some(at) = self.stderr_buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.stderr_buf.drain(..=at).collect();
                return text(&line[..at]);
            }
            match self.stderr.recv_timeout(DEADLINE) {
                Ok(chunk) => self.stderr_buf.extend_from_slice(&chunk),
                Err(e) => panic!(
                    "no stderr line from fake-cli ({e:?}); so far: {}",
                    text(&self.stderr_buf)
                ),
            }
        }
    }

    /// Everything left on stderr until EOF (call after the process has ended).
    fn rest_of_stderr(&mut self) -> String {
        while let Ok(chunk) = self.stderr.recv_timeout(DEADLINE) {
            self.stderr_buf.extend_from_slice(&chunk);
        }
        text(&std::mem::take(&mut self.stderr_buf))
    }

    /// Waits for the exit, after stdout reached EOF (which a live fake never reaches).
    fn wait(&mut self) -> ExitStatus {
        let rest = self.rest_of_stdout();
        assert!(rest.is_empty(), "unexpected stdout: {}", text(&rest));
        self.child.wait().unwrap()
    }

    /// Kills the process (SIGKILL) and reaps it.
    fn kill(&mut self) -> ExitStatus {
        self.child.kill().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn jsonl(name: &str) -> Vec<String> {
    match fixtures::load(name).unwrap() {
        Capture::Lines(lines) => lines,
        Capture::Transcript(_) => panic!("{name} is a transcript"),
    }
}

#[test]
fn every_jsonl_capture_is_replayed_byte_exact() {
    let captures: Vec<_> = fixtures::try_all()
        .unwrap()
        .into_iter()
        .filter(|(_, c)| !c.is_transcript())
        .collect();
    assert!(
        captures.len() >= 25,
        "expected the .jsonl captures, found {}",
        captures.len()
    );
    for (name, capture) in captures {
        let output = run_closed_stdin(fake(&["--fixture", &name]));
        assert_eq!(
            output.status.code(),
            Some(0),
            "{name}: {}",
            text(&output.stderr)
        );
        assert!(
            output.stdout == capture.stdout_bytes(),
            "{name}: stdout differs from the capture"
        );
        assert!(output.stderr.is_empty(), "{name}: {}", text(&output.stderr));
    }
}

#[test]
fn every_transcript_replays_its_cli_frames_when_fed_the_recorded_host_frames() {
    for (name, capture) in fixtures::try_all()
        .unwrap()
        .into_iter()
        .filter(|(_, c)| c.is_transcript())
    {
        let output = run_with_stdin(
            fake(&["--fixture", &name, "--stdin-check", "exact-json"]),
            lines_with_newlines(&capture.stdin_lines()),
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{name}: {}",
            text(&output.stderr)
        );
        assert!(
            output.stdout == capture.stdout_bytes(),
            "{name}: stdout differs from the capture"
        );
    }
}

#[test]
fn an_absolute_fixture_path_and_the_fixtures_env_override_work() {
    let absolute = fixtures::path("codex/exec-basic.jsonl");
    let output = run_closed_stdin(fake(&["--fixture", absolute.to_str().unwrap()]));
    assert_eq!(
        output.stdout,
        fixtures::load("codex/exec-basic.jsonl")
            .unwrap()
            .stdout_bytes()
    );

    let root = scratch("own-captures");
    std::fs::create_dir_all(root.join("mine")).unwrap();
    std::fs::write(root.join("mine/one.jsonl"), "{\"own\":true}\n").unwrap();
    let mut command = fake(&["--fixture", "mine/one.jsonl"]);
    command.env(fixtures::FIXTURES_ENV, &root);
    let output = run_closed_stdin(command);
    assert_eq!(
        text(&output.stdout),
        "{\"own\":true}\n",
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn the_exit_code_is_honoured() {
    for code in [1, 42] {
        let output = run_closed_stdin(fake(&[
            "--fixture",
            "codex/exec-http400.jsonl",
            "--exit-code",
            &code.to_string(),
        ]));
        assert_eq!(output.status.code(), Some(code));
        assert_eq!(
            output.stdout,
            fixtures::load("codex/exec-http400.jsonl")
                .unwrap()
                .stdout_bytes()
        );
    }
}

#[test]
fn stderr_banners_come_first_and_noise_follows_every_nth_line() {
    let output = run_closed_stdin(fake(&[
        "--fixture",
        "claude/print-basic.jsonl",
        "--stderr",
        "WARNING: proceeding, even though we could not update PATH",
        "--stderr=second banner",
        "--stderr-every",
        "2",
    ]));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        output.stdout,
        fixtures::load("claude/print-basic.jsonl")
            .unwrap()
            .stdout_bytes()
    );
    assert_eq!(
        text(&output.stderr).lines().collect::<Vec<_>>(),
        [
            "WARNING: proceeding, even though we could not update PATH",
            "second banner",
            "fake-cli: stderr noise after stdout line 2",
            "fake-cli: stderr noise after stdout line 4",
        ]
    );
}

#[test]
fn a_delay_keeps_the_output_exact() {
    let output = run_closed_stdin(fake(&[
        "--fixture",
        "codex/exec-basic.jsonl",
        "--delay-ms",
        "2",
    ]));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        output.stdout,
        fixtures::load("codex/exec-basic.jsonl")
            .unwrap()
            .stdout_bytes()
    );
}

/// The delay comes before the first stdout line: with a very long one, the banner is out
/// and stdout is still empty when the process is killed. (The exact order of sleeps,
/// lines and noise is pinned by the engine's unit tests.)
#[test]
fn a_delay_holds_back_the_first_line() {
    let mut live = Live::spawn(fake(&[
        "--fixture",
        "codex/exec-basic.jsonl",
        "--delay-ms",
        "600000",
        "--stderr",
        "started",
    ]));
    assert_eq!(live.next_stderr_line(), "started");
    live.kill();
    assert!(live.rest_of_stdout().is_empty());
}

#[test]
fn truncation_drops_the_tail_and_exits_with_the_given_code() {
    let lines = jsonl("claude/print-basic.jsonl");
    let output = run_closed_stdin(fake(&[
        "--fixture",
        "claude/print-basic.jsonl",
        "--truncate-after",
        "2",
        "--exit-code",
        "9",
    ]));
    assert_eq!(output.status.code(), Some(9));
    assert_eq!(output.stdout, lines_with_newlines(&[&lines[0], &lines[1]]));
    assert!(!text(&output.stdout).contains("\"type\":\"result\""));
    assert!(lines.last().unwrap().contains("\"type\":\"result\""));
}

#[test]
fn transcript_truncation_exits_without_waiting_for_stdin() {
    let capture = fixtures::load("claude/control-can-use-tool-allow.transcript").unwrap();
    let mut live = Live::spawn(fake(&[
        "--fixture",
        "claude/control-can-use-tool-allow.transcript",
        "--truncate-after",
        "1",
        "--exit-code",
        "1",
    ]));
    for line in &capture.stdin_lines()[..2] {
        live.send(line);
    }
    assert_eq!(live.next_line().as_deref(), Some(capture.stdout_lines()[0]));
    // Stdin is still open: the fake ends by itself.
    assert_eq!(live.wait().code(), Some(1));
}

#[test]
fn wait_stdin_eof_with_stdin_closed_prints_everything() {
    let output = run_closed_stdin(fake(&[
        "--fixture",
        "codex/exec-basic.jsonl",
        "--wait-stdin-eof",
    ]));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        output.stdout,
        fixtures::load("codex/exec-basic.jsonl")
            .unwrap()
            .stdout_bytes()
    );
}

#[test]
fn wait_stdin_eof_prints_nothing_until_stdin_is_closed() {
    let record = scratch("wait-eof-stdin.txt");
    let mut live = Live::spawn(fake(&[
        "--fixture",
        "codex/exec-basic.jsonl",
        "--wait-stdin-eof",
        "--record-stdin",
        record.to_str().unwrap(),
    ]));
    live.send("extra context from stdin");
    // The one bounded wait of this suite: it asserts absence.
    match live.stdout.recv_timeout(Duration::from_millis(300)) {
        Err(RecvTimeoutError::Timeout) => {}
        other => panic!("fake-cli wrote on stdout while stdin was open: {other:?}"),
    }
    live.close_stdin();
    assert_eq!(
        live.rest_of_stdout(),
        fixtures::load("codex/exec-basic.jsonl")
            .unwrap()
            .stdout_bytes()
    );
    assert_eq!(live.child.wait().unwrap().code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&record).unwrap(),
        "extra context from stdin\n"
    );
}

/// Plays the host: writes each recorded `SDK->CLI` frame when the capture has it, and
/// checks every `CLI->SDK` frame arrives in order.
fn play_host_role(name: &str, extra: &[&str], rewrite: impl Fn(&str) -> String) {
    let capture = fixtures::load(name).unwrap();
    let Capture::Transcript(frames) = &capture else {
        panic!("{name} is not a transcript")
    };
    let record = scratch(&format!("{}-stdin.txt", name.replace('/', "-")));
    let mut args = vec![
        "--fixture",
        name,
        "--record-stdin",
        record.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut live = Live::spawn(fake(&args));
    for (index, frame) in frames.iter().enumerate() {
        match frame.dir {
            Direction::SdkToCli => live.send(&rewrite(&frame.line)),
            Direction::CliToSdk => {
                let got = live
                    .next_line()
                    .unwrap_or_else(|| panic!("{name}: stdout ended before frame {}", index + 1));
                assert!(
                    got == frame.line,
                    "{name}: frame {} differs: {got}",
                    index + 1
                );
            }
        }
    }
    live.close_stdin();
    assert_eq!(
        live.wait().code(),
        Some(0),
        "{name}: {}",
        live.rest_of_stderr()
    );
    let sent: Vec<String> = capture.stdin_lines().into_iter().map(&rewrite).collect();
    let sent: Vec<&str> = sent.iter().map(String::as_str).collect();
    assert_eq!(
        std::fs::read(&record).unwrap(),
        lines_with_newlines(&sent),
        "{name}"
    );
}

#[test]
fn claude_can_use_tool_transcript_plays_in_order() {
    play_host_role(
        "claude/control-can-use-tool-allow.transcript",
        &["--stdin-check", "type"],
        str::to_owned,
    );
}

#[test]
fn codex_app_server_transcript_plays_in_order() {
    play_host_role(
        "codex/app-server-approval.transcript",
        &["--stdin-check", "type"],
        str::to_owned,
    );
}

#[test]
fn exact_json_check_ignores_listed_keys() {
    play_host_role(
        "claude/control-can-use-tool-deny.transcript",
        &["--stdin-check", "exact-json", "--ignore-key", "request_id"],
        |line| {
            line.replace("req_1_init", "req_77")
                .replace("58684ecb-a69b-4e3e-84d3-4f9b8e513e39", "perm-1")
        },
    );
}

fn mismatch_diagnostic(stderr: &str) -> Value {
    let line = stderr
        .lines()
        .find(|l| l.contains("stdin_mismatch"))
        .unwrap_or_else(|| panic!("no diagnostic in {stderr:?}"));
    serde_json::from_str(line).unwrap()
}

#[test]
fn a_wrong_frame_type_exits_3_with_a_diagnostic() {
    let capture = fixtures::load("claude/control-can-use-tool-allow.transcript").unwrap();
    let mut live = Live::spawn(fake(&[
        "--fixture",
        "claude/control-can-use-tool-allow.transcript",
        "--stdin-check",
        "type",
    ]));
    live.send(capture.stdin_lines()[1]); // the user message where `initialize` belongs
    assert_eq!(live.wait().code(), Some(3));
    let diagnostic = mismatch_diagnostic(&live.rest_of_stderr());
    assert_eq!(diagnostic["expected"], "control_request/initialize");
    assert_eq!(diagnostic["received"], "user");
    assert_eq!(diagnostic["capture_line"], 1);

    let output = run_with_stdin(
        fake(&[
            "--fixture",
            "codex/app-server-approval.transcript",
            "--stdin-check",
            "type",
        ]),
        b"{\"id\": 1, \"method\": \"thread/start\", \"params\": {}}\n".to_vec(),
    );
    assert_eq!(output.status.code(), Some(3));
    assert!(output.stdout.is_empty());
    assert_eq!(
        mismatch_diagnostic(&text(&output.stderr))["received"],
        "jsonrpc request thread/start"
    );
}

#[test]
fn a_wrong_frame_passes_without_a_check_and_fails_exact_json() {
    let name = "claude/control-can-use-tool-allow.transcript";
    let capture = fixtures::load(name).unwrap();
    let altered: Vec<String> = capture
        .stdin_lines()
        .iter()
        .map(|l| l.replace("RUNTOOL TOUCH", "something else"))
        .collect();
    let altered: Vec<&str> = altered.iter().map(String::as_str).collect();

    let output = run_with_stdin(fake(&["--fixture", name]), lines_with_newlines(&altered));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(output.stdout, capture.stdout_bytes());

    let output = run_with_stdin(
        fake(&["--fixture", name, "--stdin-check", "exact-json"]),
        lines_with_newlines(&altered),
    );
    assert_eq!(output.status.code(), Some(3));
    let diagnostic = mismatch_diagnostic(&text(&output.stderr));
    assert_eq!(diagnostic["stdin_line"], 2);
    assert_eq!(
        diagnostic["received"]["message"]["content"],
        "something else please"
    );
    assert!(
        output.stdout.is_empty(),
        "the first CLI frame needs both host frames"
    );
}

#[test]
fn stdin_eof_mid_transcript_ends_the_run() {
    let name = "claude/control-can-use-tool-allow.transcript";
    let capture = fixtures::load(name).unwrap();
    let first = lines_with_newlines(&capture.stdin_lines()[..1]);
    let output = run_with_stdin(fake(&["--fixture", name]), first.clone());
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty());

    let output = run_with_stdin(fake(&["--fixture", name, "--exit-code", "5"]), first);
    assert_eq!(output.status.code(), Some(5));
}

#[test]
fn exit_after_replay_does_not_wait_for_stdin_eof() {
    let name = "gemini/acp.transcript";
    let capture = fixtures::load(name).unwrap();
    let mut live = Live::spawn(fake(&["--fixture", name, "--exit-after-replay"]));
    for line in capture.stdin_lines() {
        live.send(line);
    }
    for expected in capture.stdout_lines() {
        assert_eq!(live.next_line().as_deref(), Some(expected));
    }
    assert_eq!(live.wait().code(), Some(0));
}

#[test]
fn args_out_records_argv_and_selected_env() {
    let out = scratch("args-separator.jsonl");
    let args = [
        "--fixture",
        "codex/exec-basic.jsonl",
        "--args-out",
        out.to_str().unwrap(),
        "--env-out",
        "FAKE_CLI_TEST_SET",
        "--env-out",
        "FAKE_CLI_TEST_UNSET",
        "--",
        "exec",
        "--json",
        "a prompt\nover two lines",
    ];
    let mut command = fake(&args);
    command
        .env("FAKE_CLI_TEST_SET", "hello")
        .env_remove("FAKE_CLI_TEST_UNSET");
    let output = run_closed_stdin(command);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let record = ArgsRecord::load(&out).unwrap();
    assert_eq!(record.args, args);
    assert_eq!(
        record.env.get("FAKE_CLI_TEST_SET"),
        Some(&Some("hello".to_owned()))
    );
    assert_eq!(record.env.get("FAKE_CLI_TEST_UNSET"), Some(&None));
}

/// How a driver test uses the fake: the flags come from the environment, and the command
/// line is whatever the driver built for the real CLI.
#[test]
fn options_from_the_environment_leave_the_whole_command_line_foreign() {
    let out = scratch("args-env.jsonl");
    let opts = serde_json::json!([
        "--fixture",
        "codex/exec-basic.jsonl",
        "--args-out",
        out,
        "--wait-stdin-eof"
    ]);
    let argv = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--fixture",
        "say hi",
    ];
    let mut command = Command::new(FAKE);
    command.args(argv).env(OPTS_ENV, opts.to_string());
    let output = run_closed_stdin(command);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        output.stdout,
        fixtures::load("codex/exec-basic.jsonl")
            .unwrap()
            .stdout_bytes()
    );
    assert_eq!(ArgsRecord::load(&out).unwrap().args, argv);
}

#[test]
fn bad_flags_and_unusable_fixtures_exit_2() {
    for (args, message) in [
        (
            &["--fixture", "codex/exec-basic.jsonl", "--bogus"][..],
            "unknown argument",
        ),
        (&["exec", "--json"], "unknown argument"),
        (
            &["--delay-ms", "x", "--fixture", "codex/exec-basic.jsonl"],
            "invalid number",
        ),
        (&["--exit-code", "1"], "missing --fixture"),
        (&["--fixture", "codex/missing.jsonl"], "capture not found"),
        (
            &[
                "--fixture",
                "claude/control-interrupt.transcript",
                "--wait-stdin-eof",
            ],
            "--wait-stdin-eof",
        ),
    ] {
        let output = run_closed_stdin(fake(args));
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(
            text(&output.stderr).contains(message),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
    let output = run_closed_stdin(fake(&["--help"]));
    assert_eq!(output.status.code(), Some(0));
    assert!(text(&output.stdout).contains("--stdin-check MODE"));
}

#[cfg(unix)]
mod unix {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    /// With `--hang` the fake outlives its output: only the kill ends it.
    #[test]
    fn hang_keeps_running_after_the_replay() {
        let lines = jsonl("codex/exec-basic.jsonl");
        let mut live = Live::spawn(fake(&["--fixture", "codex/exec-basic.jsonl", "--hang"]));
        for expected in &lines {
            assert_eq!(live.next_line().as_ref(), Some(expected));
        }
        // Had it exited by itself, the status would be exit code 0, not SIGKILL.
        assert_eq!(live.kill().signal(), Some(9));
    }

    #[test]
    fn ignore_sigterm_survives_sigterm() {
        let lines = jsonl("codex/exec-basic.jsonl");
        let mut live = Live::spawn(fake(&[
            "--fixture",
            "codex/exec-basic.jsonl",
            "--hang",
            "--ignore-sigterm",
        ]));
        for expected in &lines {
            assert_eq!(live.next_line().as_ref(), Some(expected));
        }
        let pid = live.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        // Written after the signal arrived, so the process outlived it.
        assert_eq!(live.next_stderr_line(), "fake-cli: ignoring SIGTERM");
        assert_eq!(live.kill().signal(), Some(9));
    }

    #[test]
    fn sigterm_ends_a_hanging_fake_without_the_flag() {
        let mut live = Live::spawn(fake(&["--fixture", "codex/exec-basic.jsonl", "--hang"]));
        assert!(live.next_line().is_some());
        let pid = live.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(live.child.wait().unwrap().signal(), Some(15));
    }
}
