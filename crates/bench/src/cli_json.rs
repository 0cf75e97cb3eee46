//! [`Contender::AaCliJson`](crate::child::Contender::AaCliJson): the
//! `agent-adaptor` binary, `run --driver claude --json`, against the fake
//! CLI replaying the Claude workload, its stdout drained line by line.
//!
//! This is what a host written in another language does. The fake CLI is
//! reached as `claude` on `PATH` (a symbolic link in a directory of this
//! process's own, first on `PATH`), with the same replay options as every
//! other contender, passed through the CLI's environment allowlist with
//! `--env`. The report's usage is that of the CLI **and** the fake CLI it
//! reaped (no portable call gives a grandchild's usage apart); its wall
//! time, the figure the target is about, is measured as for the others.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agent_adaptor_testkit::replay::OPTS_ENV;
use serde_json::Value;

use crate::child::{ChildReport, PROMPT, Setup, fake_opts};
use crate::usage;
use crate::workload::Kind;

/// A directory holding `claude` → the fake CLI, removed on drop.
struct ShimDir(PathBuf);

impl ShimDir {
    fn new(fake: &Path) -> Result<ShimDir, String> {
        let dir =
            std::env::temp_dir().join(format!("agent-adaptor-bench-cli-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let shim = ShimDir(dir);
        let fake = std::path::absolute(fake).map_err(|e| e.to_string())?;
        std::os::unix::fs::symlink(&fake, shim.0.join("claude"))
            .map_err(|e| format!("link claude -> {}: {e}", fake.display()))?;
        Ok(shim)
    }
}

impl Drop for ShimDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the contender: spawn the CLI, drain its stdout, check the last line
/// is a successful result.
pub fn run(setup: &Setup) -> Result<ChildReport, String> {
    if setup.kind != Kind::Claude {
        return Err("aa-cli-json runs the Claude workload only".into());
    }
    let cli = setup
        .cli
        .as_ref()
        .ok_or("aa-cli-json needs --cli PATH (the agent-adaptor binary)")?;
    let shim = ShimDir::new(&setup.fake)?;
    let path = match std::env::var_os("PATH") {
        Some(rest) => {
            let mut dirs = vec![shim.0.clone()];
            dirs.extend(std::env::split_paths(&rest));
            std::env::join_paths(dirs).map_err(|e| e.to_string())?
        }
        None => shim.0.clone().into_os_string(),
    };
    let mut child = Command::new(cli)
        .args([
            "run", "--driver", "claude", "--json", "--env", OPTS_ENV, PROMPT,
        ])
        .env("PATH", path)
        .env(OPTS_ENV, fake_opts(&setup.workload, setup.delay_ms))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", cli.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::with_capacity(64 * 1024);
    let mut last = Vec::new();
    let mut lines = 0u64;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        lines += 1;
        std::mem::swap(&mut last, &mut line);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let mut report = ChildReport {
        // The result line is not an event.
        events: Some(lines.saturating_sub(1)),
        lines: Some(lines),
        ..ChildReport::default()
    };
    let result: Value = serde_json::from_slice(&last).unwrap_or(Value::Null);
    if status.success() && result["type"] == "result" && result["ok"] == true {
        report.ok = true;
        report.raw_stdout_bytes = result["raw"]["stdout_bytes"].as_u64();
    } else {
        report.error = Some(format!(
            "agent-adaptor exited with {status}; last line: {}",
            String::from_utf8_lossy(&last)
                .chars()
                .take(300)
                .collect::<String>()
        ));
    }
    report.usage = usage::reaped_children();
    Ok(report)
}
