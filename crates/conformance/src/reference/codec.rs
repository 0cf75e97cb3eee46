//! The reference session codec, with optional faults.

use std::sync::atomic::{AtomicU64, Ordering};

use agent_adaptor_driver::{SessionCodec, SessionParams, SessionState, StandardSessionCodec};

use super::Fault;

/// `CodecRenamesKey`: the params' key and the name the state gives it.
const RENAMED: (&str, &str) = ("cwd", "workdir");

/// The reference codec, with optional faults.
pub(super) struct RefCodec {
    pub(super) inner: StandardSessionCodec,
    pub(super) fault: Option<Fault>,
    pub(super) calls: AtomicU64,
}

impl SessionCodec for RefCodec {
    fn name(&self) -> &str {
        if self.fault == Some(Fault::CodecEmptyName) {
            ""
        } else {
            self.inner.name()
        }
    }

    fn to_params(&self, state: Option<&SessionState>) -> SessionParams {
        match (self.fault, state) {
            (Some(Fault::CodecPanicsOnEmpty), None) => panic!("to_params(None) exploded"),
            (Some(Fault::CodecNonZeroForNone), None) => SessionParams {
                resume_id: "phantom".into(),
                ..Default::default()
            },
            (Some(Fault::CodecDropsData), Some(s)) => {
                let mut p = self.inner.to_params(Some(s));
                p.values.clear();
                p
            }
            (Some(Fault::CodecRenamesKey), Some(s)) => {
                // Its state spells the key "workdir"; the params say "cwd".
                let mut s = s.clone();
                if let Some(v) = s.data.remove(RENAMED.1) {
                    s.data.insert(RENAMED.0.to_owned(), v);
                }
                self.inner.to_params(Some(&s))
            }
            _ => self.inner.to_params(state),
        }
    }

    fn from_params(&self, params: &SessionParams) -> Option<SessionState> {
        let mut s = self.inner.from_params(params)?;
        match self.fault {
            Some(Fault::CodecLossy) => s.data.clear(),
            Some(Fault::CheckpointNotRoundTripping) => {
                s.data.remove("unkept");
            }
            Some(Fault::CodecRenamesKey) => {
                if let Some(v) = s.data.remove(RENAMED.0) {
                    s.data.insert(RENAMED.1.to_owned(), v);
                }
            }
            _ => {}
        }
        Some(s)
    }

    fn guard_fingerprint(&self, params: &SessionParams) -> String {
        match self.fault {
            Some(Fault::CodecDriftingGuard) => {
                format!("guard-{}", self.calls.fetch_add(1, Ordering::Relaxed))
            }
            Some(Fault::CodecGuardIgnoresKeys) => "constant-guard".into(),
            // Every value, per-run materialization data included.
            Some(Fault::CodecGuardsEverything) => format!("guard-{:?}", params.values),
            _ => self.inner.guard_fingerprint(params),
        }
    }
}
