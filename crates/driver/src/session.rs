//! Sessions, checkpoints and their codecs (spec §9).
//!
//! `Checkpoint::valid = true` is only a driver's *claim*. Core trusts it only
//! when every condition of spec §9 holds (clean exit, an explicit successful
//! terminal event, a non-empty resume id, a codec that round-trips the state
//! losslessly and yields a deterministic guard fingerprint); otherwise it
//! treats the checkpoint as invalid, whatever the driver said.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Resumable provider session state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    /// The provider's explicit resume identifier (must be non-empty to be valid).
    pub resume_id: String,
    /// A display id for humans (defaults to the resume id).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_id: String,
    /// Compatibility data (`cwd`, `workspace_id`, `profile_fingerprint` …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
}

#[doc = include_str!("../contract/checkpoint.md")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The state to resume from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SessionState>,
    /// The driver's claim that the state is resumable.
    pub valid: bool,
}

impl Checkpoint {
    /// A checkpoint the driver claims valid.
    pub fn valid(state: SessionState) -> Self {
        Checkpoint {
            state: Some(state),
            valid: true,
        }
    }
}

/// The portable form of a session state, as stored by thread stores.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionParams {
    /// The resume id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resume_id: String,
    /// The display id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_id: String,
    /// The values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
}

impl SessionParams {
    /// True for the zero value (the image of "no state").
    pub fn is_zero(&self) -> bool {
        self.resume_id.is_empty() && self.display_id.is_empty() && self.values.is_empty()
    }
}

/// Maps a driver's session state to and from portable params (SES-* clauses).
///
/// Laws: `to_params(None)` is zero; `from_params(zero)` is `None`;
/// `from_params(to_params(s))` round-trips losslessly; `guard_fingerprint` is
/// non-empty and deterministic for a resumable state.
#[allow(clippy::wrong_self_convention)] // the spec's names: ToParams / FromParams
pub trait SessionCodec: Send + Sync {
    /// A stable, non-empty name (the built-ins use their driver type).
    fn name(&self) -> &str;
    /// State → params.
    fn to_params(&self, state: Option<&SessionState>) -> SessionParams;
    /// Params → state.
    fn from_params(&self, params: &SessionParams) -> Option<SessionState>;
    /// The compatibility guard: resuming is only allowed when it matches.
    fn guard_fingerprint(&self, params: &SessionParams) -> String;
}

/// The guard keys [`StandardSessionCodec`] hashes.
pub const GUARD_KEYS: [&str; 3] = ["cwd", "workspace_id", "profile_fingerprint"];

/// The codec the built-in drivers share: a direct mapping, guarded by the
/// SHA-256 of `cwd`, `workspace_id` and `profile_fingerprint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandardSessionCodec {
    name: String,
}

impl StandardSessionCodec {
    /// A codec named after the driver type.
    pub fn new(driver_type: impl Into<String>) -> Self {
        StandardSessionCodec {
            name: driver_type.into(),
        }
    }
}

impl SessionCodec for StandardSessionCodec {
    fn name(&self) -> &str {
        &self.name
    }

    fn to_params(&self, state: Option<&SessionState>) -> SessionParams {
        match state {
            None => SessionParams::default(),
            Some(s) => SessionParams {
                resume_id: s.resume_id.clone(),
                display_id: if s.display_id.is_empty() {
                    s.resume_id.clone()
                } else {
                    s.display_id.clone()
                },
                values: s.data.clone(),
            },
        }
    }

    fn from_params(&self, params: &SessionParams) -> Option<SessionState> {
        if params.is_zero() {
            return None;
        }
        Some(SessionState {
            resume_id: params.resume_id.clone(),
            display_id: params.display_id.clone(),
            data: params.values.clone(),
        })
    }

    fn guard_fingerprint(&self, params: &SessionParams) -> String {
        let mut h = Sha256::new();
        for (i, key) in GUARD_KEYS.iter().enumerate() {
            if i > 0 {
                h.update([0u8]);
            }
            h.update(key.as_bytes());
            h.update(b"=");
            if let Some(v) = params.values.get(*key) {
                h.update(v.as_bytes());
            }
        }
        hex(&h.finalize())
    }
}

/// How a run relates to an existing provider session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionMode {
    /// Resume when a state exists, else start fresh.
    #[default]
    ContinueOrStart,
    /// Resume only; fail without a state.
    ContinueOnly,
    /// Start a new provider session from a copy of the state.
    Fork,
    /// No provider session at all.
    Stateless,
}

/// The session part of a resolved request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionContext {
    /// Core's own id for the engine session.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub engine_session_id: String,
    /// How to treat the state.
    pub mode: SessionMode,
    /// The state to resume, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SessionState>,
    /// The previous run's id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub previous_id: String,
}

/// A construction config that cannot be fingerprinted stably.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("session config fingerprint: {path}: {why}")]
pub struct FingerprintError {
    /// Where in the config the problem is.
    pub path: String,
    /// Why it cannot be fingerprinted.
    pub why: String,
}

/// A deterministic, cross-process fingerprint of a construction config:
/// SHA-256 over `domain`, a NUL, and the canonical JSON of `value` (object
/// keys sorted). A value serde_json cannot represent (a map with non-string
/// keys, a failing `Serialize` impl) is an error, never silently omitted.
pub fn canonical_session_config_fingerprint<T: Serialize + ?Sized>(
    domain: &str,
    value: &T,
) -> Result<String, FingerprintError> {
    let v = serde_json::to_value(value).map_err(|e| FingerprintError {
        path: "$".into(),
        why: e.to_string(),
    })?;
    // Keys are sorted here, not by serde_json's map type: a dependency may
    // turn on `preserve_order`, and a fingerprint must not change with it.
    let text = serde_json::to_string(&canonical_json(v)).map_err(|e| FingerprintError {
        path: "$".into(),
        why: e.to_string(),
    })?;
    let mut h = Sha256::new();
    h.update(domain.as_bytes());
    h.update([0u8]);
    h.update(text.as_bytes());
    Ok(hex(&h.finalize()))
}

/// `value` with every object's keys in sorted order, whatever map type
/// `serde_json` was built with: serialized, it is canonical JSON (sorted keys,
/// no whitespace), so equal values hash equally.
pub fn canonical_json(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, canonical_json(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical_json).collect()),
        other => other,
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 0xf) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> SessionState {
        SessionState {
            resume_id: "sess-1".into(),
            display_id: "sess-1".into(),
            data: BTreeMap::from([("cwd".into(), "/repo".into())]),
        }
    }

    #[test]
    fn standard_codec_obeys_the_laws() {
        let c = StandardSessionCodec::new("scripted");
        assert_eq!(c.name(), "scripted");
        assert!(c.to_params(None).is_zero());
        assert_eq!(c.from_params(&SessionParams::default()), None);
        let p = c.to_params(Some(&state()));
        assert_eq!(c.from_params(&p), Some(state()));
        let fp = c.guard_fingerprint(&p);
        assert_eq!(fp.len(), 64);
        assert_eq!(fp, c.guard_fingerprint(&p));
        let mut other = p.clone();
        other.values.insert("cwd".into(), "/elsewhere".into());
        assert_ne!(fp, c.guard_fingerprint(&other));
    }

    #[test]
    fn config_fingerprint_is_canonical_and_domain_separated() {
        #[derive(Serialize)]
        struct A {
            b: u32,
            a: &'static str,
        }
        let x = canonical_session_config_fingerprint("d/v1", &A { b: 1, a: "x" }).unwrap();
        let y =
            canonical_session_config_fingerprint("d/v1", &serde_json::json!({"a": "x", "b": 1}))
                .unwrap();
        assert_eq!(x, y);
        let z = canonical_session_config_fingerprint("d/v2", &A { b: 1, a: "x" }).unwrap();
        assert_ne!(x, z);
        let bad = std::collections::HashMap::from([((1u8, 2u8), 3u8)]);
        let err = canonical_session_config_fingerprint("d", &bad).unwrap_err();
        assert_eq!(err.path, "$");
    }
}
