//! Finds Node and the pinned official clients in `tests/bridges` (installed by
//! `scripts/install-bridge-clients`), and runs Node scripts. Missing pieces
//! FAIL the test with a pointer to the install script; nothing is skipped.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// `tests/bridges` of the workspace.
pub fn bridges_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/bridges")
        .canonicalize()
        .expect("tests/bridges exists in the workspace")
}

const INSTALL_HINT: &str = "run `scripts/install-bridge-clients` (it `npm ci`s tests/bridges)";

/// The node binary: `$NODE`, else `node` on PATH. Panics with a clear
/// message when there is none.
pub fn node_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("NODE") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("node"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "node not found on PATH (and $NODE unset): install Node >= 20, then {INSTALL_HINT}"
            )
        })
}

/// Panics unless the npm package `name` is installed in tests/bridges.
pub fn require_node_package(name: &str) {
    let manifest = bridges_dir()
        .join("node_modules")
        .join(name)
        .join("package.json");
    assert!(
        manifest.is_file(),
        "the npm package {name} is not installed in tests/bridges ({} missing): {INSTALL_HINT}",
        manifest.display()
    );
}

/// What a Node script printed.
#[derive(Debug)]
pub struct NodeOutput {
    /// Exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl NodeOutput {
    /// Standard output parsed as one JSON value (panics with both streams
    /// when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "node printed no JSON report ({e}); exit {:?}\nstdout:\n{}\nstderr:\n{}",
                self.code, self.stdout, self.stderr
            )
        })
    }
}

/// Run `node <script> <args…>` in tests/bridges, killing it after `timeout`.
pub async fn run_node(script: &Path, args: &[String], timeout: Duration) -> NodeOutput {
    let mut cmd = tokio::process::Command::new(node_binary());
    cmd.arg(script)
        .args(args)
        .current_dir(bridges_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("could not start node ({e}): {INSTALL_HINT}"));
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "node {} {args:?} did not finish within {timeout:?}",
                script.display()
            )
        })
        .expect("waiting for node");
    NodeOutput {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
