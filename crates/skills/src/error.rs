//! [`SkillError`]: why a skill was refused.

use std::io;
use std::path::{Path, PathBuf};

/// Why a skill could not be loaded. Every refusal of the safe extraction and
/// of the tree checks is a variant of its own, so a host can match on it.
///
/// Paths inside an archive are shown as the archive spells them, cut to
/// [`SHOWN_PATH_CHARS`] characters (an archive controls their length).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// An entry path climbs out of the skill root with a `..` component.
    #[error("skill entry {path:?}: path traversal (`..`) refused")]
    PathTraversal {
        /// The entry's path.
        path: String,
    },
    /// An entry path is absolute (`/etc/x`, `C:\x`, `\\server\x`).
    #[error("skill entry {path:?}: absolute path refused")]
    AbsolutePath {
        /// The entry's path.
        path: String,
    },
    /// An entry path is not usable as a relative path: not UTF-8, a NUL
    /// byte, a component that is a Windows device or drive form.
    #[error("skill entry {path:?}: invalid path ({reason})")]
    InvalidPath {
        /// The entry's path (lossily decoded).
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A symbolic link or hard link. Every link is refused, wherever it
    /// points: a skill is a plain tree of files.
    #[error("skill entry {path:?}: links are refused")]
    Link {
        /// The link's path.
        path: String,
    },
    /// A device, FIFO, socket, sparse file or other entry that is neither a
    /// regular file nor a directory.
    #[error("skill entry {path:?}: not a regular file or directory ({kind})")]
    SpecialFile {
        /// The entry's path.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// Two entries name the same path (or a file is used as a directory).
    #[error("skill entry {path:?}: duplicate or conflicting entry")]
    DuplicateEntry {
        /// The entry's path.
        path: String,
    },
    /// More files and directories than [`ExtractLimits::max_files`](crate::ExtractLimits).
    #[error("skill has more than {limit} files and directories")]
    TooManyFiles {
        /// The cap.
        limit: usize,
    },
    /// More bytes in all than [`ExtractLimits::max_total_bytes`](crate::ExtractLimits).
    #[error("skill is larger than {limit} bytes in all")]
    TotalTooLarge {
        /// The cap.
        limit: u64,
    },
    /// One file larger than [`ExtractLimits::max_entry_bytes`](crate::ExtractLimits).
    #[error("skill entry {path:?} is larger than {limit} bytes")]
    EntryTooLarge {
        /// The entry's path.
        path: String,
        /// The cap.
        limit: u64,
    },
    /// No `SKILL.md` at the skill root (nor in a single top-level directory
    /// of an archive).
    #[error("no SKILL.md at the skill root")]
    MissingSkillMd,
    /// `SKILL.md` has no usable front matter (`---` lines around
    /// `name:` and `description:`).
    #[error("SKILL.md front matter: {reason}")]
    FrontMatter {
        /// What is missing or malformed.
        reason: String,
    },
    /// The front matter's `name` breaks the naming rule (lowercase letters,
    /// digits and single hyphens, 1 to 64 characters, no hyphen at either end).
    #[error("skill name {name:?}: {reason}")]
    InvalidName {
        /// The name (cut to [`SHOWN_PATH_CHARS`] characters).
        name: String,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// The front matter's `description` is empty or longer than 1024 characters.
    #[error("skill description: {reason}")]
    InvalidDescription {
        /// The rule it breaks.
        reason: &'static str,
    },
    /// The file is not a zip, tar or gzip-compressed tar archive (judged by
    /// its first bytes, not its name).
    #[error("{path}: not a zip, tar or tar.gz archive")]
    UnsupportedArchive {
        /// The archive's path.
        path: PathBuf,
    },
    /// The archive is damaged or uses a feature that is not read
    /// (encryption, an unsupported compression method …).
    #[error("corrupt or unsupported archive: {reason}")]
    CorruptArchive {
        /// What the archive reader reported.
        reason: String,
    },
    /// A file system operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The path the operation was on.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

/// How many characters of an entry path (or name) an error shows.
pub const SHOWN_PATH_CHARS: usize = 256;

/// `path` cut to [`SHOWN_PATH_CHARS`] characters.
pub(crate) fn shown(path: &str) -> String {
    match path.char_indices().nth(SHOWN_PATH_CHARS) {
        Some((at, _)) => format!("{}…", &path[..at]),
        None => path.to_owned(),
    }
}

/// An I/O error on `path`.
pub(crate) fn io_at(path: &Path) -> impl FnOnce(io::Error) -> SkillError + '_ {
    move |source| SkillError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_are_cut() {
        let long = "é".repeat(SHOWN_PATH_CHARS + 10);
        let cut = shown(&long);
        assert_eq!(cut.chars().count(), SHOWN_PATH_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(shown("a/b"), "a/b");
    }
}
