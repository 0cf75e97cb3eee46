//! Preparing the configuration home of a [`Profile`]: a dedicated home is
//! created empty; a clone is seeded once from the user's native home
//! (settings copied, credentials linked, never copied).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use agent_adaptor_driver::Profile;

use crate::scratch::create_private_dir_all;

/// What a clone takes from the user's native home, by relative path. A
/// missing source entry is skipped.
#[derive(Debug, Clone, Copy, Default)]
pub struct CloneSeed<'a> {
    /// Copied (settings, configuration).
    pub copy: &'a [&'a str],
    /// Hard-linked, or symlinked where a hard link is impossible
    /// (credentials: one copy on disk, refreshed tokens seen by both).
    pub link: &'a [&'a str],
}

/// The marker a seeded clone home carries (seeding happens once).
pub const SEED_MARKER: &str = ".agent-adaptor-seeded";

/// Create the home `profile` gives a driver of `driver_type`
/// (`<root>/<driver_type>`, mode `0700`) and return it; `None` for
/// [`Profile::Native`]. A clone home is seeded from `native_home` once.
pub fn prepare_home(
    profile: &Profile,
    driver_type: &str,
    native_home: &Path,
    seed: &CloneSeed<'_>,
) -> io::Result<Option<PathBuf>> {
    let Some(home) = profile.home(driver_type) else {
        return Ok(None);
    };
    create_private_dir_all(&home)?;
    if matches!(profile, Profile::Clone { .. }) && !home.join(SEED_MARKER).exists() {
        seed_clone(&home, native_home, seed)?;
        crate::scratch::write_private(&home.join(SEED_MARKER), b"")?;
    }
    Ok(Some(home))
}

fn seed_clone(home: &Path, native: &Path, seed: &CloneSeed<'_>) -> io::Result<()> {
    for rel in seed.copy {
        let (src, dst) = (native.join(rel), home.join(rel));
        if src.is_file() {
            if let Some(parent) = dst.parent() {
                create_private_dir_all(parent)?;
            }
            fs::copy(&src, &dst)?;
        }
    }
    for rel in seed.link {
        let (src, dst) = (native.join(rel), home.join(rel));
        if src.is_file() && fs::symlink_metadata(&dst).is_err() {
            if let Some(parent) = dst.parent() {
                create_private_dir_all(parent)?;
            }
            if fs::hard_link(&src, &dst).is_err() {
                link(&src, &dst)?;
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
fn link(src: &Path, dst: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(src, dst)
}

#[cfg(not(unix))]
fn link(_src: &Path, _dst: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "credentials can only be hard-linked here",
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn dedicated_is_empty_clone_is_seeded_once_and_native_is_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let native = tmp.path().join("native");
        fs::create_dir_all(&native).unwrap();
        fs::write(native.join("settings.json"), "{\"model\":\"m\"}").unwrap();
        fs::write(native.join("auth.json"), "secret").unwrap();
        fs::write(native.join("history.jsonl"), "old").unwrap();
        let seed = CloneSeed {
            copy: &["settings.json", "absent.json"],
            link: &["auth.json"],
        };
        let root = tmp.path().join("profiles");
        assert_eq!(
            prepare_home(&Profile::Native, "codex", &native, &seed).unwrap(),
            None
        );
        let dedicated = Profile::Dedicated { root: root.clone() };
        let home = prepare_home(&dedicated, "codex", &native, &seed)
            .unwrap()
            .unwrap();
        assert_eq!(home, root.join("codex"));
        assert_eq!(
            fs::read_dir(&home).unwrap().count(),
            0,
            "dedicated is empty"
        );

        let clone = Profile::Clone {
            root: tmp.path().join("clones"),
        };
        let home = prepare_home(&clone, "codex", &native, &seed)
            .unwrap()
            .unwrap();
        assert_eq!(
            fs::read_to_string(home.join("settings.json")).unwrap(),
            "{\"model\":\"m\"}"
        );
        assert!(!home.join("history.jsonl").exists());
        // The credential is the same file, not a copy.
        fs::write(native.join("auth.json"), "refreshed").unwrap();
        assert_eq!(
            fs::read_to_string(home.join("auth.json")).unwrap(),
            "refreshed"
        );
        // Seeded once: a later edit of the clone's settings survives.
        fs::write(home.join("settings.json"), "{}").unwrap();
        prepare_home(&clone, "codex", &native, &seed).unwrap();
        assert_eq!(
            fs::read_to_string(home.join("settings.json")).unwrap(),
            "{}"
        );
    }
}
