//! The SPI value a run is handed.
// TODO use agent_adaptor_driver::SkillRef (the lead's "equip: SPI" commit)
// and delete this file.

use std::path::PathBuf;

/// A skill already loaded and checked on the host side, as a driver sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRef {
    /// The front matter's `name`.
    pub name: String,
    /// The front matter's `description`.
    pub description: String,
    /// The tree's root, holding `SKILL.md` and the skill's files.
    pub dir: PathBuf,
    /// `sha256:<hex>` of the tree (paths, contents, executable bits).
    pub fingerprint: String,
}
