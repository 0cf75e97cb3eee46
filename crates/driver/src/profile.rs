//! Which configuration home a CLI runs with.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The configuration home of a run's CLI (its settings, history, sessions,
/// MCP servers and skills).
///
/// A driver declares which kinds it supports
/// ([`ProfileSupport`](crate::ProfileSupport)); core refuses the others
/// before launch. The profile is part of a thread's compatibility
/// fingerprint: a thread resumed under another profile is incompatible.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Profile {
    /// The user's own home (`~/.claude`, `~/.codex`, `~/.gemini` or what
    /// the environment points at): the CLI behaves as when run by hand.
    #[default]
    Native,
    /// A home of the product's own under `root` (`<root>/<driver type>`),
    /// created empty on first use and kept across runs: no user settings,
    /// history or MCP servers are read, and nothing of the user's is
    /// written.
    Dedicated {
        /// The directory that holds one home per driver type.
        root: PathBuf,
    },
    /// Like [`Dedicated`](Self::Dedicated), seeded once from the user's
    /// home: settings copied, credentials linked (never copied).
    Clone {
        /// The directory that holds one home per driver type.
        root: PathBuf,
    },
}

impl Profile {
    /// The home a driver of `driver_type` uses under this profile: `None`
    /// for [`Native`](Self::Native) (the CLI's own default applies).
    pub fn home(&self, driver_type: &str) -> Option<PathBuf> {
        match self {
            Profile::Native => None,
            Profile::Dedicated { root } | Profile::Clone { root } => Some(root.join(driver_type)),
        }
    }

    /// The profile root, when the profile is not native.
    pub fn root(&self) -> Option<&Path> {
        match self {
            Profile::Native => None,
            Profile::Dedicated { root } | Profile::Clone { root } => Some(root),
        }
    }

    /// `"native"`, `"dedicated"` or `"clone"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Profile::Native => "native",
            Profile::Dedicated { .. } => "dedicated",
            Profile::Clone { .. } => "clone",
        }
    }

    /// True for [`Native`](Self::Native).
    pub fn is_native(&self) -> bool {
        matches!(self, Profile::Native)
    }
}
