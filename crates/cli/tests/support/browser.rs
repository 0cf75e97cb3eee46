//! The web chat's browser tests: Debian's headless Chromium driven by a
//! Playwright script of tests/cli (playwright-core and axe-core from
//! `scripts/install-cli-test-deps`; a missing piece fails with a pointer
//! to that script). Screenshots go to `target/cli-web/`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// What to run when something is missing.
const HINT: &str = "run scripts/install-cli-test-deps (Debian chromium + npm ci in tests/cli)";

/// tests/cli.
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/cli")
}

/// Where the screenshots are kept.
pub fn shots_dir() -> PathBuf {
    super::target_dir().join("cli-web")
}

/// Fail unless Chromium, node and the pinned packages are there, and the
/// vendored web libraries are the pinned packages' bytes
/// (`scripts/vendor-web`).
pub fn require_deps() {
    let chromium = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        chromium.is_file(),
        "{} is missing: {HINT}",
        chromium.display()
    );
    for package in ["playwright-core", "axe-core"] {
        assert!(
            scripts_dir()
                .join(format!("node_modules/{package}/package.json"))
                .is_file(),
            "{package} is not installed in tests/cli: {HINT}"
        );
    }
    let check = Command::new("bash")
        .arg(scripts_dir().join("../../scripts/vendor-web"))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "scripts/vendor-web: {}",
        String::from_utf8_lossy(&check.stderr)
    );
}

/// Remove the screenshots named `<prefix>-*.png` (so that a test sees
/// only what its own run kept).
pub fn clear_shots(prefix: &str) {
    let Ok(dir) = std::fs::read_dir(shots_dir()) else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&format!("{prefix}-")) && name.ends_with(".png") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// `node tests/cli/<script> <url> <shots dir>`, stdin and stdout piped.
pub fn spawn(script: &str, url: &str) -> Child {
    require_deps();
    let node = std::env::var_os("NODE").unwrap_or_else(|| "node".into());
    Command::new(node)
        .arg(scripts_dir().join(script))
        .arg(url)
        .arg(shots_dir())
        .current_dir(scripts_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("node: {e}: {HINT}"))
}

/// The script's report (its last stdout line), asserted `ok`.
pub fn report(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or("{}"))
        .unwrap_or_else(|e| panic!("no report ({e}):\n{stdout}\n{stderr}"));
    assert!(
        out.status.success() && report["ok"] == true,
        "the browser test failed:\n{report:#}\n{stderr}"
    );
    report
}

/// Run `script` against `url` to its end; its report.
pub fn run(script: &str, url: &str) -> Value {
    let child = spawn(script, url);
    report(&child.wait_with_output().unwrap())
}
