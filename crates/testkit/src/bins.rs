//! Finding this crate's binaries (`fake-cli`, `mock-mcp-server`,
//! `fake-acp-agent`) from tests in other crates, where
//! `CARGO_BIN_EXE_<name>` is not set.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The path of the testkit binary `name` in this workspace's target
/// directory, building it first when it is missing or older than the running
/// test binary (tests of other crates get no `CARGO_BIN_EXE_*` for it, and
/// cargo does not rebuild a dependency's binaries with them). The
/// environment variable `override_env`, when set, overrides the path.
pub(crate) fn testkit_binary(name: &str, override_env: &str) -> std::io::Result<PathBuf> {
    if let Some(p) = std::env::var_os(override_env) {
        return Ok(PathBuf::from(p));
    }
    // A test binary lives in <target>/<profile>/deps/.
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .ok_or_else(|| std::io::Error::other("cannot locate the target directory"))?;
    let bin = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    // A test binary rebuilt after the binary may expect flags the old one lacks.
    let stale = match (modified(&bin), modified(&exe)) {
        (Some(binary), Some(test)) => binary < test,
        _ => true,
    };
    if stale {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "agent-adaptor-testkit", "--bin", name]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status()?;
        if !status.success() || !bin.exists() {
            return Err(std::io::Error::other(format!(
                "could not build {name} (cargo exited with {status})"
            )));
        }
        // An up-to-date build leaves the file alone: mark it checked, so
        // the next test does not build again (best effort; a read-only
        // handle, since other tests may be running the binary).
        if let Ok(file) = std::fs::File::open(&bin) {
            let _ = file.set_modified(std::time::SystemTime::now());
        }
    }
    Ok(bin)
}
