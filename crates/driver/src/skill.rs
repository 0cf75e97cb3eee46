//! A skill as a run carries it: already loaded, validated and fingerprinted
//! on the host side (crate `agent-adaptor-skills`), ready to be copied where
//! the CLI finds skills.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A loaded skill: a directory holding `SKILL.md` and its files.
///
/// A driver whose descriptor declares `skills` materializes it by copying the
/// tree at [`dir`](Self::dir) to `<the CLI's skills directory>/<name>/`, in
/// a location it owns (per run or per dedicated profile), never in the
/// user's own configuration home.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillRef {
    /// The `name` of the SKILL.md front matter (lowercase letters, digits
    /// and hyphens, 1..=64 characters).
    pub name: String,
    /// The `description` of the SKILL.md front matter.
    pub description: String,
    /// The skill's root directory (holds `SKILL.md`).
    pub dir: PathBuf,
    /// A deterministic fingerprint of the tree's paths and contents.
    pub fingerprint: String,
}

/// A skill the host holds for runs: its [`SkillRef`], with the directory
/// kept valid for as long as the value lives (a loader that extracted an
/// archive into a temporary directory keeps it alive here). Core holds the
/// handle until the run that uses it has ended.
pub trait SkillHandle: Send + Sync + std::fmt::Debug {
    /// The skill as a run carries it.
    fn reference(&self) -> &SkillRef;
}

impl SkillHandle for SkillRef {
    fn reference(&self) -> &SkillRef {
        self
    }
}
