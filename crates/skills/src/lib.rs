//! # agent-adaptor-skills — loading skills on the host side
//!
//! A skill is a directory holding `SKILL.md` (front matter with `name` and
//! `description`, then instructions) and any files it refers to. A
//! [`Skill`] is one loaded and checked, ready to hand to a run; its
//! [`reference`](Skill::reference) is the [`SkillRef`] a driver sees, which
//! it copies into its CLI's skills directory. A `Skill` is a
//! [`SkillHandle`]: give it to a run (`RunOptions::skill`) and the run keeps
//! its directory alive until it ends.
//!
//! - [`Skill::from_dir`]: a directory, used in place;
//! - [`Skill::inline`]: just the `SKILL.md` text;
//! - [`Skill::from_archive`]: a zip, tar or tar.gz, extracted safely into a
//!   private temporary directory the `Skill` owns;
//! - [`Skill::load`]: whichever of these a path is.
//!
//! Archives are untrusted input. Every entry is checked before anything is
//! written, by this crate (the archive crates only read): no `..`, no
//! absolute path, **no link entry at all** (symbolic or hard, wherever it
//! points — a skill is a plain tree, and refusing every link is simpler and
//! safer than judging where one leads), no device or FIFO, and caps
//! ([`ExtractLimits`]) on the number of files, each file's size and the
//! total, counted on the bytes actually read, not on what headers claim.
//! Each refusal is a [`SkillError`] variant.
//!
//! ```
//! use agent_adaptor_skills::{Skill, SkillError};
//!
//! let text = "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\n\
//!             Run `git log --oneline` and group the commits by kind.\n";
//! let skill = Skill::inline(text)?;
//! let reference = skill.reference();
//! assert_eq!(reference.name, "release-notes");
//! assert_eq!(reference.description, "Write release notes from the git log.");
//! assert!(reference.dir.join("SKILL.md").is_file());
//! assert!(reference.fingerprint.starts_with("sha256:"));
//!
//! // The same text is the same fingerprint.
//! assert_eq!(Skill::inline(text)?.reference().fingerprint, reference.fingerprint);
//!
//! // Names follow the rule: lowercase letters, digits, single hyphens.
//! let bad = Skill::inline("---\nname: Release_Notes\ndescription: d\n---\n");
//! assert!(matches!(bad, Err(SkillError::InvalidName { .. })));
//! # Ok::<(), SkillError>(())
//! ```
#![forbid(unsafe_code)]

mod archive;
mod entry_path;
mod error;
mod front_matter;
mod limits;
mod skill;
mod tree;
mod writer;

#[cfg(test)]
mod tests;

/// What a host hands a run (`agent_adaptor_driver::SkillHandle`); [`Skill`] is one.
pub use agent_adaptor_driver::SkillHandle;
/// The SPI value a run carries (`agent_adaptor_driver::SkillRef`).
pub use agent_adaptor_driver::SkillRef;
pub use error::{SHOWN_PATH_CHARS, SkillError};
pub use front_matter::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, validate_name};
pub use limits::ExtractLimits;
pub use skill::Skill;

/// The file that makes a directory a skill.
pub const SKILL_MD: &str = "SKILL.md";
