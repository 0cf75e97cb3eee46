//! A small, real MCP server for tests (`mock-mcp-server`, built on `rmcp`),
//! and the helpers that start it.
//!
//! The server offers three tools:
//!
//! | tool | input | answer |
//! |---|---|---|
//! | `lookup` | `{"key": string}` | text `value-of-<key>` (deterministic, so a scripted model can check the answer reached its next request) |
//! | `add` | `{"a": number, "b": number}` | text of the sum (`1` + `2` → `3`, `0.5` + `1` → `1.5`) |
//! | `fail` | `{}` | a tool error (`isError: true`) with text [`FAIL_TEXT`] |
//!
//! ```text
//! mock-mcp-server [--name NAME] [--log FILE] [--http 127.0.0.1:PORT [--bearer-token-env VAR]]
//! ```
//!
//! * stdio (the default): MCP over stdin/stdout; exits when stdin closes.
//! * `--http 127.0.0.1:0`: Streamable HTTP at `/mcp` instead; the first
//!   stdout line is `listening on http://127.0.0.1:PORT/mcp`. Only loopback
//!   addresses are accepted. With `--bearer-token-env VAR`, every request
//!   must carry `Authorization: Bearer <value of $VAR>` or gets 401.
//! * `--name`: the `serverInfo.name` of `initialize` (default `aa-test`).
//! * `--log FILE`: appends one JSON line per `tools/call` received,
//!   `{"tool": name, "arguments": object}` (read it with
//!   [`McpTestServer::read_log`]), so a test proves the CLI really called it.
//!
//! A real CLI names the tools after the server's key in its MCP config, not
//! after `serverInfo.name`: Claude Code offers `mcp__<key>__lookup`.
//!
//! The round trip with the [mock model server](crate::mock): script
//! [`Reply::ToolCall`](crate::mock::Reply::ToolCall) with the CLI's name for
//! the tool (names pass through every protocol unchanged), then find
//! `value-of-<key>` in the next recorded request
//! ([`MockServer::requests`](crate::mock::MockServer::requests); the
//! conversation summary leaves tool results out) and the call in the log.

mod http;
pub mod server;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub use http::{HttpServer, serve_http};
pub use server::{DEFAULT_NAME, FAIL_TEXT, ServeError, TestTools, serve_stdio};

/// The environment variable that overrides the path of `mock-mcp-server`.
pub const BINARY_ENV: &str = "AGENT_ADAPTOR_MOCK_MCP_SERVER";

/// The prefix of the first stdout line in HTTP mode (the URL follows).
pub const LISTENING_PREFIX: &str = "listening on ";

/// How long [`McpTestServer::start_http`] waits for the listening line.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Starting `mock-mcp-server` from tests.
#[derive(Debug, Clone, Copy)]
pub struct McpTestServer;

impl McpTestServer {
    /// The path of the `mock-mcp-server` binary, built first when missing
    /// or stale (see [`fake_cli_binary`](crate::replay::fake_cli_binary),
    /// found the same way). [`BINARY_ENV`] overrides it.
    pub fn binary() -> std::io::Result<PathBuf> {
        crate::bins::testkit_binary("mock-mcp-server", BINARY_ENV)
    }

    /// The command and arguments of a stdio server named `name` that logs
    /// its calls to `log_path`: what goes into an MCP config's `command` and
    /// `args`.
    pub fn stdio_command(name: &str, log_path: &Path) -> std::io::Result<(String, Vec<String>)> {
        let command = utf8(Self::binary()?)?;
        let log = utf8(log_path.to_path_buf())?;
        Ok((
            command,
            vec!["--name".into(), name.into(), "--log".into(), log],
        ))
    }

    /// Starts a Streamable HTTP server named `name` on 127.0.0.1 (a free
    /// port), logging its calls to `log_path`. With `bearer = Some((var,
    /// token))` the child gets `var=token` in its environment and is started
    /// with `--bearer-token-env var`: requests without `Authorization:
    /// Bearer <token>` get 401. The child is killed when the handle drops.
    pub async fn start_http(
        name: &str,
        log_path: &Path,
        bearer: Option<(&str, &str)>,
    ) -> std::io::Result<McpHttpHandle> {
        let mut command = Command::new(Self::binary()?);
        command
            .args(["--name", name, "--http", "127.0.0.1:0", "--log"])
            .arg(log_path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        if let Some((var, token)) = bearer {
            command.env(var, token).args(["--bearer-token-env", var]);
        }
        let mut child = command.spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("mock-mcp-server: no stdout pipe"))?;
        let mut line = String::new();
        let mut stdout = BufReader::new(stdout);
        match tokio::time::timeout(START_TIMEOUT, stdout.read_line(&mut line)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "mock-mcp-server did not print its address",
                ));
            }
        }
        let url = line
            .trim_end()
            .strip_prefix(LISTENING_PREFIX)
            .ok_or_else(|| {
                std::io::Error::other(format!("mock-mcp-server: unexpected first line {line:?}"))
            })?
            .to_owned();
        Ok(McpHttpHandle { url, child })
    }

    /// The calls logged at `path`, one JSON value per line, oldest first;
    /// no file yet is no calls.
    pub fn read_log(path: &Path) -> std::io::Result<Vec<serde_json::Value>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        text.lines()
            .map(|line| {
                serde_json::from_str(line)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
            })
            .collect()
    }
}

/// A running HTTP `mock-mcp-server`; killed when dropped.
#[derive(Debug)]
pub struct McpHttpHandle {
    /// The server's MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    child: Child,
}

impl McpHttpHandle {
    /// The server's process id (`None` once it has been reaped).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

fn utf8(path: PathBuf) -> std::io::Result<String> {
    path.into_os_string().into_string().map_err(|path| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a UTF-8 path: {}", Path::new(&path).display()),
        )
    })
}
