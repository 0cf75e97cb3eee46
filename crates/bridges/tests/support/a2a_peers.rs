//! The official A2A peers the tests drive: `@a2a-js/sdk` under Node and
//! PyPI `a2a-sdk` in `tests/bridges/.venv`, both installed by
//! `scripts/install-bridge-clients`. A missing piece FAILS the test with a
//! pointer to that script; nothing is skipped.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

const INSTALL_HINT: &str =
    "run `scripts/install-bridge-clients` (npm ci in tests/bridges, and the tests/bridges/.venv)";

/// `tests/bridges` of the workspace.
pub fn bridges_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/bridges")
        .canonicalize()
        .expect("tests/bridges exists in the workspace")
}

/// `tests/bridges/a2a/<name>`.
pub fn script(name: &str) -> PathBuf {
    let path = bridges_dir().join("a2a").join(name);
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// The node binary (`$NODE`, else `node` on PATH) with `@a2a-js/sdk`
/// installed; panics with the install hint otherwise.
pub fn node() -> PathBuf {
    let node = std::env::var_os("NODE").map(PathBuf::from).or_else(|| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join("node"))
            .find(|p| p.is_file())
    });
    let node = node.unwrap_or_else(|| {
        panic!("node not found on PATH (and $NODE unset): install Node >= 20, then {INSTALL_HINT}")
    });
    let manifest = bridges_dir().join("node_modules/@a2a-js/sdk/package.json");
    assert!(
        manifest.is_file(),
        "@a2a-js/sdk is not installed ({} missing): {INSTALL_HINT}",
        manifest.display()
    );
    node
}

/// The venv's python with `a2a-sdk` installed; panics with the install
/// hint otherwise.
pub fn python() -> PathBuf {
    let python = bridges_dir().join(".venv/bin/python");
    assert!(
        python.is_file(),
        "the Python venv is missing ({} not found): {INSTALL_HINT}",
        python.display()
    );
    let sdk = bridges_dir().join(".venv/lib");
    let installed = std::fs::read_dir(&sdk)
        .into_iter()
        .flatten()
        .flatten()
        .any(|d| {
            d.path()
                .join("site-packages/a2a/client/__init__.py")
                .is_file()
        });
    assert!(
        installed,
        "a2a-sdk is not installed in tests/bridges/.venv: {INSTALL_HINT}"
    );
    python
}

/// What a peer process printed.
#[derive(Debug)]
pub struct Output {
    /// Exit code (`None`: killed).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Output {
    /// Standard output as one JSON value; panics with both streams unless
    /// the process succeeded and printed JSON.
    pub fn json(&self) -> serde_json::Value {
        assert_eq!(
            self.code,
            Some(0),
            "the client failed\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "the client printed no JSON report ({e})\nstdout:\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// The environment variable the client scripts take the server token from
/// (never passed on the command line).
pub const TOKEN_VAR: &str = "BRIDGE_TEST_TOKEN";

/// Run `program args…` in tests/bridges, with [`TOKEN_VAR`] set to `token`
/// (removed when `None`); kill it after `deadline`.
pub async fn run(program: &Path, args: &[&str], token: Option<&str>, deadline: Duration) -> Output {
    let mut cmd = tokio::process::Command::new(program);
    match token {
        Some(t) => cmd.env(TOKEN_VAR, t),
        None => cmd.env_remove(TOKEN_VAR),
    };
    let mut child = cmd
        .args(args)
        .current_dir(bridges_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let work = async {
        let (mut o, mut e) = (String::new(), String::new());
        let (r1, r2, status) = tokio::join!(
            out.read_to_string(&mut o),
            err.read_to_string(&mut e),
            child.wait()
        );
        r1.unwrap();
        r2.unwrap();
        (status.unwrap().code(), o, e)
    };
    match tokio::time::timeout(deadline, work).await {
        Ok((code, stdout, stderr)) => Output {
            code,
            stdout,
            stderr,
        },
        Err(_) => panic!(
            "{} {args:?} did not finish within {deadline:?}",
            program.display()
        ),
    }
}

/// Run the JS client on `scenario` against `base_url`, with the
/// bearer `token` when given.
pub async fn js_client(scenario: &str, base_url: &str, token: Option<&str>) -> serde_json::Value {
    let node = node();
    let script = script("client.mjs");
    let out = run(
        &node,
        &[script.to_str().unwrap(), scenario, base_url],
        token,
        Duration::from_secs(90),
    )
    .await;
    out.json()
}

/// Run the Python client on `scenario` against `base_url`, with the
/// bearer `token` when given.
pub async fn py_client(scenario: &str, base_url: &str, token: Option<&str>) -> serde_json::Value {
    let python = python();
    let script = script("client.py");
    let out = run(
        &python,
        &[script.to_str().unwrap(), scenario, base_url],
        token,
        Duration::from_secs(90),
    )
    .await;
    out.json()
}

/// The `a2a-sdk` reference server (`echo_server.py`) on a free port of
/// 127.0.0.1; killed when dropped.
pub struct ReferenceServer {
    /// Its base URL.
    pub url: String,
    child: tokio::process::Child,
}

impl ReferenceServer {
    /// Start it and wait (bounded) until it prints `READY <url>`.
    pub async fn start() -> Self {
        let python = python();
        let script = script("echo_server.py");
        let mut child = tokio::process::Command::new(&python)
            .arg(&script)
            .current_dir(bridges_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix("READY ") {
                    return Some(url.trim().to_owned());
                }
            }
            None
        })
        .await;
        match ready {
            Ok(Some(url)) => {
                // Keep draining both pipes so the server never blocks on a
                // full one.
                tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                if let Some(mut e) = child.stderr.take() {
                    tokio::spawn(async move {
                        let mut sink = Vec::new();
                        let _ = e.read_to_end(&mut sink).await;
                    });
                }
                ReferenceServer { url, child }
            }
            other => {
                let _ = child.start_kill();
                let mut stderr = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(5), e.read_to_string(&mut stderr))
                            .await;
                }
                panic!("the reference server did not become ready ({other:?}):\n{stderr}")
            }
        }
    }
}

impl Drop for ReferenceServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
