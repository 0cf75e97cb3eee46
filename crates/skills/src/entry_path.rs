//! An archive entry's name, checked and turned into a relative path.

use std::path::PathBuf;

use crate::error::{SkillError, shown};

/// A checked relative path: one or more plain components, none of them
/// `.`, `..` or empty, joined with `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RelPath {
    parts: Vec<String>,
}

impl RelPath {
    /// The path's components.
    pub fn parts(&self) -> &[String] {
        &self.parts
    }

    /// The path under `root`.
    pub fn under(&self, root: &std::path::Path) -> PathBuf {
        let mut path = root.to_path_buf();
        path.extend(&self.parts);
        path
    }

    /// The `/`-joined form (what errors and fingerprints show).
    pub fn display(&self) -> String {
        self.parts.join("/")
    }
}

/// Checks an entry name as an archive spells it. Both `/` and `\` separate
/// components (a `..\evil` entry is refused, not stored as a file named so).
/// `Ok(None)`: the name is the root itself (empty, `.`, `./`).
pub(crate) fn check(raw: &[u8]) -> Result<Option<RelPath>, SkillError> {
    let Ok(name) = std::str::from_utf8(raw) else {
        return Err(SkillError::InvalidPath {
            path: shown(&String::from_utf8_lossy(raw)),
            reason: "not UTF-8",
        });
    };
    let invalid = |reason| SkillError::InvalidPath {
        path: shown(name),
        reason,
    };
    if name.contains('\0') {
        return Err(invalid("NUL byte"));
    }
    if name.starts_with(['/', '\\']) || has_drive_prefix(name) {
        return Err(SkillError::AbsolutePath { path: shown(name) });
    }
    let mut parts = Vec::new();
    for part in name.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => return Err(SkillError::PathTraversal { path: shown(name) }),
            part if part.contains(':') => return Err(invalid("`:` in a component")),
            part => parts.push(part.to_owned()),
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    Ok(Some(RelPath { parts }))
}

/// `C:`, `c:foo`: a Windows drive, absolute or drive-relative.
fn has_drive_prefix(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str) -> Option<String> {
        check(raw.as_bytes()).unwrap().map(|p| p.display())
    }

    #[test]
    fn plain_paths_are_kept_and_normalized() {
        assert_eq!(ok("SKILL.md").as_deref(), Some("SKILL.md"));
        assert_eq!(ok("./a//b/./c.txt").as_deref(), Some("a/b/c.txt"));
        assert_eq!(ok("dir/").as_deref(), Some("dir"));
        assert_eq!(ok("a\\b").as_deref(), Some("a/b"));
        assert_eq!(ok("./"), None);
        assert_eq!(ok(""), None);
    }

    #[test]
    fn escapes_are_refused() {
        for raw in [
            "../evil",
            "a/../../evil",
            "a/..",
            "..\\evil",
            "a\\..\\..\\b",
        ] {
            assert!(
                matches!(check(raw.as_bytes()), Err(SkillError::PathTraversal { .. })),
                "{raw}"
            );
        }
        for raw in ["/etc/x", "\\x", "C:\\x", "c:x", "//server/share"] {
            assert!(
                matches!(check(raw.as_bytes()), Err(SkillError::AbsolutePath { .. })),
                "{raw}"
            );
        }
        for raw in [&b"a\0b"[..], b"\xff\xfe", b"a/b:stream"] {
            assert!(
                matches!(check(raw), Err(SkillError::InvalidPath { .. })),
                "{raw:?}"
            );
        }
    }
}
