//! The credential state: which variable is set, which credentials file
//! exists and whether the token in it has expired. A value is never kept:
//! a variable is tested for being non-empty, and of a credentials file
//! only the expiry time (a number) and whether a refresh token is there
//! are read.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::ChildEnv;
use super::report::{AuthReport, AuthState};
use crate::probe_common::read_small;

/// The keys that hold a token's expiry time in the CLIs' credentials
/// files (Claude Code and CodeBuddy `expiresAt`, Gemini CLI's OAuth
/// `expiry_date`), in milliseconds or seconds since the epoch.
const EXPIRY_KEYS: &[&str] = &["expiresAt", "expires_at", "expiry_date", "expiry"];

/// The keys of a refresh token (only their presence is read).
const REFRESH_KEYS: &[&str] = &["refreshToken", "refresh_token"];

/// How deep in a credentials file the keys are looked for.
const MAX_DEPTH: usize = 4;

/// Where credentials can be.
pub(crate) struct Sources<'a> {
    /// Variables that carry a credential.
    pub vars: &'a [&'a str],
    /// Credentials files.
    pub files: Vec<PathBuf>,
    /// Whether these are all the places the program keeps credentials in
    /// (else a missing credential is `unknown`, not `absent`).
    pub complete: bool,
    /// How to log in, for the reason of a missing credential.
    pub elsewhere: &'a str,
}

/// The state of `sources` for a child with `env`, at `now`.
pub(crate) fn state(sources: &Sources<'_>, env: &ChildEnv, now: SystemTime) -> AuthReport {
    let mut looked: Vec<String> = sources.vars.iter().map(|n| format!("${n}")).collect();
    looked.extend(sources.files.iter().map(|p| p.display().to_string()));
    let report = |state, source: Option<String>, reason: String| AuthReport {
        state,
        source,
        reason,
        looked: looked.clone(),
    };
    if let Some(name) = sources.vars.iter().find(|n| {
        env.get(std::ffi::OsStr::new(n))
            .is_some_and(|v| !v.is_empty())
    }) {
        let source = format!("${name}");
        return report(
            AuthState::Present,
            Some(source.clone()),
            format!("{source} is set"),
        );
    }
    if let Some(path) = sources.files.iter().find(|p| p.is_file()) {
        let (state, reason) = file_state(path, now);
        return report(state, Some(path.display().to_string()), reason);
    }
    if sources.complete {
        report(
            AuthState::Absent,
            None,
            "no credential variable is set and no credentials file exists".into(),
        )
    } else {
        report(
            AuthState::Unknown,
            None,
            format!(
                "no credential variable is set; {}",
                if sources.elsewhere.is_empty() {
                    "a login may be kept where inspection does not look"
                } else {
                    sources.elsewhere
                }
            ),
        )
    }
}

/// The state of one credentials file.
fn file_state(path: &Path, now: SystemTime) -> (AuthState, String) {
    let shown = path.display();
    let Some(text) = read_small(path) else {
        return (
            AuthState::Unknown,
            format!("{shown} exists but cannot be read"),
        );
    };
    let Ok(json) = serde_json::from_str::<Value>(&text) else {
        return (AuthState::Unknown, format!("{shown} is not JSON"));
    };
    if !holds_a_string(&json, MAX_DEPTH) {
        return (AuthState::Absent, format!("{shown} holds no credential"));
    }
    let refresh = find(&json, REFRESH_KEYS, MAX_DEPTH)
        .is_some_and(|v| v.as_str().is_some_and(|s| !s.is_empty()));
    let Some(expiry) = find(&json, EXPIRY_KEYS, MAX_DEPTH).and_then(epoch) else {
        return (AuthState::Present, format!("{shown} holds a credential"));
    };
    match expiry.duration_since(now) {
        Ok(left) => (
            AuthState::Present,
            format!("{shown} holds a token that expires in {}", span(left)),
        ),
        Err(past) => (
            AuthState::Expired,
            format!(
                "{shown} holds a token that expired {} ago{}",
                span(past.duration()),
                if refresh {
                    " (a refresh token is there: the CLI may renew it on its next run)"
                } else {
                    ""
                }
            ),
        ),
    }
}

/// The first value under one of `keys`, depth first, at most `depth`
/// objects down.
fn find<'v>(v: &'v Value, keys: &[&str], depth: usize) -> Option<&'v Value> {
    let obj = v.as_object()?;
    if let Some(found) = keys.iter().find_map(|k| obj.get(*k)) {
        return Some(found);
    }
    if depth == 0 {
        return None;
    }
    obj.values().find_map(|v| find(v, keys, depth - 1))
}

/// Whether any value (at most `depth` down) is a non-empty string.
fn holds_a_string(v: &Value, depth: usize) -> bool {
    match v {
        Value::String(s) => !s.is_empty(),
        Value::Object(o) if depth > 0 => o.values().any(|v| holds_a_string(v, depth - 1)),
        Value::Array(a) if depth > 0 => a.iter().any(|v| holds_a_string(v, depth - 1)),
        _ => false,
    }
}

/// A time since the epoch: milliseconds when large enough to be (after
/// 1973), else seconds.
fn epoch(v: &Value) -> Option<SystemTime> {
    let n = v.as_f64().filter(|n| n.is_finite() && *n > 0.0)?;
    let secs = if n > 1e11 { n / 1000.0 } else { n };
    UNIX_EPOCH.checked_add(Duration::try_from_secs_f64(secs).ok()?)
}

/// A duration in its largest unit or two (`3 d 4 h`, `5 min`).
fn span(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}
