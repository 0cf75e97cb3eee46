//! Shared helpers of the CLI tests: the binary, an isolated environment,
//! free ports, a stand-in agent CLI ([`stand_in`]) and the mock model
//! server ([`mock`]).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod mock;
pub mod stand_in;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The `agent-adaptor` binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-adaptor"))
}

/// Variables that would make the CLI pick a real driver or credentials.
const CREDENTIAL_VARS: &[&str] = &[
    "AGENT_ADAPTOR_PUSH_SECRET",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "CODEX_HOME",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CURSOR_API_KEY",
    "CODEBUDDY_API_KEY",
    "CODEBUDDY_AUTH_TOKEN",
    "OPENROUTER_API_KEY",
    "CLAUDE_CONFIG_DIR",
    "XDG_DATA_HOME",
];

/// A `Command` for the binary with `home` as `$HOME` and
/// `$AGENT_ADAPTOR_HOME` (so the default thread store is there), no
/// credentials, and a `PATH` without agent CLIs.
pub fn command(home: &Path) -> Command {
    isolate(Command::new(bin()), home)
}

/// Like [`command`], but runs `wrapper` (a program and its arguments) with
/// the binary as its last argument: e.g. `sh -c 'ulimit -n 256 && exec "$0" "$@"'`.
pub fn command_via(home: &Path, wrapper: &[&str]) -> Command {
    let mut cmd = Command::new(wrapper[0]);
    cmd.args(&wrapper[1..]).arg(bin());
    isolate(cmd, home)
}

fn isolate(mut cmd: Command, home: &Path) -> Command {
    for var in CREDENTIAL_VARS {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("AGENT_ADAPTOR_HOME", home.join("agent-adaptor"))
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .current_dir(home)
        .stdin(Stdio::null());
    cmd
}

/// Run `args` in the isolated environment; the output.
pub fn run(home: &Path, args: &[&str]) -> Output {
    command(home)
        .args(args)
        .output()
        .expect("the agent-adaptor binary runs")
}

/// Stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Assert a failure that printed exactly one line on stderr, naming
/// `needle`, with exit code `code`, and no panic.
pub fn assert_one_line_failure(out: &Output, code: i32, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "exit code; stderr: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one stderr line expected, got: {err:?}");
    assert!(lines[0].starts_with("agent-adaptor: error: "), "{err}");
    assert!(lines[0].contains(needle), "{needle:?} not in {err:?}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("RUST_BACKTRACE"), "{err}");
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The workspace's target directory (for artifacts such as screenshots).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
    }
}
pub mod browser;
pub mod server;
pub mod tree;
