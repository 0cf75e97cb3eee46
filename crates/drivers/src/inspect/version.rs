//! `<program> --version` through the process helper (its own process
//! group, stdin at end-of-file, a time budget, the child's allowlisted
//! environment), the version it prints, and how it compares with the one
//! the project verified.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::OnceCell;

use agent_adaptor_driver::{Emit, EventSink, RawBytes, RunEvent, StreamPayload};
use agent_adaptor_process::{Command, Process};

use super::ChildEnv;
use super::report::VersionReport;

/// The most of a `--version` answer that is read.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// A sink for the `--version` child's output chunks: the answer is read
/// from the capture, nothing is a run's event.
struct Discard;

impl EventSink for Discard {
    fn emit(&self, _event: RunEvent) -> Emit<'_> {
        Emit::ready(Ok(()))
    }

    fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
        Emit::ready(Ok(()))
    }
}

/// The versions asked for during one inspection, by program path: a
/// program several drivers start (`gemini` for `gemini` and `acp:gemini`)
/// is asked once. A version does not depend on the environment the
/// drivers' allowlists differ in.
#[derive(Debug, Default)]
pub(crate) struct Versions(Mutex<HashMap<PathBuf, Arc<OnceCell<VersionReport>>>>);

impl Versions {
    /// The version of `program`, asked with `env` unless already known.
    pub(crate) async fn of(
        &self,
        program: &Path,
        env: &ChildEnv,
        timeout: Duration,
    ) -> VersionReport {
        let cell = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(program.to_path_buf())
            .or_default()
            .clone();
        cell.get_or_init(|| probe(program, env, timeout))
            .await
            .clone()
    }
}

/// Run `program --version` with exactly `env`, for at most `timeout`, and
/// read the version it prints (stdout first, then stderr). The output
/// itself is never reported, only the version or why there is none.
pub(crate) async fn probe(program: &Path, env: &ChildEnv, timeout: Duration) -> VersionReport {
    let unknown = |reason: String| VersionReport::Unknown { reason };
    let mut cmd = Command::new(program);
    cmd.arg("--version").env_clear().timeout(Some(timeout));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let process = match Process::spawn(&cmd) {
        Ok(p) => p,
        Err(e) => return unknown(format!("`--version` could not start: {e}")),
    };
    let finished = match process.finish(&Discard).await {
        Ok(f) => f,
        Err(e) => return unknown(format!("`--version` failed: {e}")),
    };
    if finished.exit.timed_out {
        return unknown(format!("`--version` gave no answer within {timeout:?}"));
    }
    if finished.exit.code != Some(0) {
        let how = match (&finished.exit.code, &finished.exit.signal) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(signal)) => format!("ended by {signal}"),
            (None, None) => "ended abnormally".into(),
        };
        return unknown(format!("`--version` {how}"));
    }
    let found = [&finished.stdout, &finished.stderr]
        .into_iter()
        .find_map(|raw| parse(&text(raw)));
    match found {
        Some(version) => VersionReport::Known { version },
        None => unknown("`--version` printed no version".into()),
    }
}

fn text(raw: &RawBytes) -> String {
    let mut bytes = Vec::new();
    if let Some(mem) = raw.as_memory() {
        bytes.extend_from_slice(&mem[..mem.len().min(MAX_ANSWER_BYTES as usize)]);
    } else if let Ok(reader) = raw.open() {
        // A spill file: read the head only; an unreadable one has no version.
        let _ = reader.take(MAX_ANSWER_BYTES).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The first version number in `text`: a word (after a leading `v`,
/// without trailing punctuation) of two or three dot-separated numbers,
/// with an optional `-`/`+` suffix (`2.1.332`, `v0.61.0`, `1.0.102.`).
pub(crate) fn parse(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | '"' | '\''))
        .map(|w| w.trim_end_matches(['.', ':', ';']))
        .map(|w| w.strip_prefix('v').unwrap_or(w))
        .find(|w| is_version(w))
        .map(str::to_owned)
}

fn is_version(word: &str) -> bool {
    let (core, suffix) = match word.find(['-', '+']) {
        Some(at) => (&word[..at], Some(&word[at + 1..])),
        None => (word, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && suffix.is_none_or(|s| !s.is_empty())
}

/// The numeric release of a version (`2.1.332-beta` → `[2, 1, 332]`).
fn release(version: &str) -> Option<[u64; 3]> {
    let core = version.split(['-', '+']).next()?;
    let mut out = [0u64; 3];
    for (i, part) in core.split('.').enumerate() {
        *out.get_mut(i)? = part.parse().ok()?;
    }
    Some(out)
}

/// How `version` compares with `verified` by release number; `None` when
/// either is not a version.
pub(crate) fn compare(version: &str, verified: &str) -> Option<Ordering> {
    Some(release(version)?.cmp(&release(verified)?))
}
