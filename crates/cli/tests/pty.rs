//! `agent-adaptor run` in a pseudo-terminal: live rendering with an
//! interactive approval, and Ctrl-C cancelling a run whose agent CLI hangs
//! (the CLI process is gone afterwards).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

#[cfg(feature = "real-clis")]
#[path = "pty_claude/mod.rs"]
mod real_claude;

use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agent_adaptor_testkit::mock::MockServer;
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

/// A generous deadline for anything the tests wait for.
const DEADLINE: Duration = Duration::from_secs(60);

/// A program running in a pseudo-terminal, its output collected.
struct Term {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    output: mpsc::Receiver<Vec<u8>>,
    seen: String,
    _master: Box<dyn MasterPty + Send>,
}

impl Term {
    fn spawn(home: &Path, args: &[&str], env: &[(&str, String)]) -> Term {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 50,
                cols: 200,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(support::bin());
        cmd.args(args);
        cmd.cwd(home);
        cmd.env_clear();
        cmd.env("HOME", home);
        cmd.env("AGENT_ADAPTOR_HOME", home.join("agent-adaptor"));
        cmd.env("PATH", "/usr/local/bin:/usr/bin:/bin");
        cmd.env("TERM", "xterm-256color");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Term {
            child,
            writer,
            output: rx,
            seen: String::new(),
            _master: pair.master,
        }
    }

    /// Collect output until `needle` appears (panics at the deadline).
    fn expect(&mut self, needle: &str) {
        let start = Instant::now();
        while !self.seen.contains(needle) {
            assert!(
                start.elapsed() < DEADLINE,
                "{needle:?} did not appear; the terminal shows:\n{}",
                self.seen
            );
            if let Ok(chunk) = self.output.recv_timeout(Duration::from_millis(100)) {
                self.seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    /// Wait for the exit code, collecting output meanwhile.
    fn wait(&mut self) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                while let Ok(chunk) = self.output.recv_timeout(Duration::from_millis(200)) {
                    self.seen.push_str(&String::from_utf8_lossy(&chunk));
                }
                return status.exit_code();
            }
            assert!(start.elapsed() < DEADLINE, "still running:\n{}", self.seen);
            if let Ok(chunk) = self.output.recv_timeout(Duration::from_millis(50)) {
                self.seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        }
    }
}

#[test]
fn a_terminal_shows_the_run_live_and_asks_before_a_tool_runs() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("README.md"), "hi").unwrap();
    let mut term = Term::spawn(home.path(), &["run", "--playground", "hello"], &[]);
    term.expect("playground: llm driver against the built-in scripted model server");
    // The tool call waits for the person at the terminal.
    term.expect("? Allow list_files {\"path\":\".\"}?");
    term.expect("[y] allow once  [n] deny");
    term.send(b"y\r");
    term.expect("approval approved");
    term.expect("README.md");
    term.expect("Hello! I am the agent-adaptor playground");
    term.expect("tokens in");
    let code = term.wait();
    assert_eq!(code, 0, "{}", term.seen);
    let seen = &term.seen;
    // Styled: the tool line has a check mark; reasoning is dimmed.
    assert!(seen.contains("✓"), "{seen}");
    assert!(seen.contains("list_files"), "{seen}");
    assert!(
        seen.contains("\u{1b}[2mthinking: "),
        "reasoning is dimmed: {seen}"
    );
    assert!(!seen.contains("agent-adaptor: error"), "{seen}");
}

#[test]
fn a_denial_typed_at_the_terminal_reaches_the_model() {
    // The playground's script, served by a mock the test holds, so the
    // model's side of the conversation can be read back (the terminal
    // echoes what is typed: the screen alone proves nothing).
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt
        .block_on(MockServer::start(agent_adaptor_cli::playground::script(
            None,
        )))
        .unwrap();
    let base = format!("{}/v1", mock.base_url());
    let home = tempfile::tempdir().unwrap();
    let mut term = Term::spawn(
        home.path(),
        &[
            "run",
            "--driver",
            "llm",
            "--provider",
            "openai",
            "--base-url",
            &base,
            "hello",
        ],
        &[],
    );
    term.expect("[y] allow once  [n] deny");
    term.send(b"not now\r");
    term.expect("approval rejected");
    term.expect("✗");
    term.expect("Hello! I am the agent-adaptor playground");
    assert_eq!(term.wait(), 0, "{}", term.seen);
    // The model was asked twice: the tool call, then the answer to the
    // denial, which carries the reason typed at the terminal.
    let requests = mock.requests();
    let bodies: Vec<String> = requests
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(bodies.len(), 2, "{bodies:#?}");
    assert!(!bodies[0].contains("not now"), "{}", bodies[0]);
    let after: serde_json::Value = serde_json::from_str(&bodies[1]).unwrap();
    let tool_results: Vec<&serde_json::Value> = after["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert!(
        tool_results
            .iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains("not now"))),
        "the denial's reason reaches the model as the tool's result: {tool_results:#?}"
    );
    rt.block_on(mock.shutdown());
}

/// True while `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

#[test]
fn ctrl_c_cancels_a_hung_agent_cli_and_its_process_is_gone() {
    let home = tempfile::tempdir().unwrap();
    // `gemini` on PATH is the testkit's fake CLI: it replays a capture's
    // first lines and then hangs. A wrapper records its pid (exec keeps it).
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = agent_adaptor_testkit::replay::fake_cli_binary().unwrap();
    let pid_file = home.path().join("cli.pid");
    let wrapper = bin.join("gemini");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho $$ > '{}'\nexec '{}' \"$@\"\n",
            pid_file.display(),
            fake.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let fixture = agent_adaptor_testkit::fixtures::path("gemini/stream-basic.jsonl");
    let opts = format!(
        "[\"--fixture\", \"{}\", \"--truncate-after\", \"2\", \"--hang\"]",
        fixture.display()
    );
    let mut term = Term::spawn(
        home.path(),
        // The fake reads its options from the environment: a variable the
        // allowlist does not pass on unless named.
        &[
            "run",
            "--driver",
            "gemini",
            "--approve",
            "none",
            "--env",
            "AGENT_ADAPTOR_FAKE_CLI_OPTS",
            "hello",
        ],
        &[
            (
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
            ),
            ("AGENT_ADAPTOR_FAKE_CLI_OPTS", opts),
        ],
    );
    term.expect("gemini driver: ");
    let start = Instant::now();
    let pid = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file)
            && let Ok(pid) = text.trim().parse::<u32>()
        {
            break pid;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the fake CLI never started:\n{}",
            term.seen
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Let it print and hang, then press Ctrl-C.
    std::thread::sleep(Duration::from_millis(500));
    assert!(alive(pid), "the fake CLI should still be running");
    term.send(&[0x03]);
    let code = term.wait();
    assert_eq!(code, 130, "exit code after Ctrl-C:\n{}", term.seen);
    assert!(term.seen.contains("cancelling"), "{}", term.seen);
    assert!(
        term.seen
            .contains("agent-adaptor: error: run cancelled (Ctrl-C)"),
        "{}",
        term.seen
    );
    assert!(!term.seen.contains("panicked"), "{}", term.seen);
    let gone = Instant::now();
    while alive(pid) {
        assert!(
            gone.elapsed() < DEADLINE,
            "the agent CLI (pid {pid}) outlived the run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
