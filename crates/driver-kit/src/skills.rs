//! Skills a run carries, copied where a CLI finds them.
//!
//! [`materialize`] copies each [`SkillRef`]'s tree to `<root>/<name>/`:
//! directories 0700, files 0600 (0700 when the source is executable: a
//! skill's scripts stay runnable, by the owner only), never following a
//! link — a link or special file in a tree is an error, not copied. Each
//! skill is written to a fresh sibling first and renamed into place, so a
//! CLI never sees half a skill; an existing `<name>` is replaced.
//!
//! ```
//! use agent_adaptor_driver::SkillRef;
//! use agent_adaptor_driver_kit::skills::materialize;
//!
//! let source = tempfile::tempdir()?;
//! std::fs::write(source.path().join("SKILL.md"), "---\nname: notes\ndescription: d\n---\n")?;
//! let skill = SkillRef {
//!     name: "notes".into(),
//!     description: "d".into(),
//!     dir: source.path().to_path_buf(),
//!     fingerprint: "sha256:…".into(),
//! };
//! let home = tempfile::tempdir()?;
//! let root = home.path().join("skills");
//! materialize(&[skill], &root)?;
//! assert!(root.join("notes/SKILL.md").is_file());
//! # Ok::<(), std::io::Error>(())
//! ```

use std::collections::HashSet;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::Path;

use agent_adaptor_driver::SkillRef;

/// Mode of a directory written (Unix).
const DIR_MODE: u32 = 0o700;
/// Mode of a file written (Unix); `| 0o100` when the source is executable.
const FILE_MODE: u32 = 0o600;

/// Copies each skill's tree to `root/<name>/`, creating `root` (0700) when
/// it is absent and replacing a `<name>` already there.
///
/// Errors (`InvalidInput`): a name that is not one plain path component
/// (empty, `.`, `..`, a separator, a leading dot), two skills of one name.
/// Errors (`InvalidData`): a link or special file in a tree, or a tree root
/// that is not a directory. On an error the skill being copied is not
/// installed and nothing is left beside it; skills installed before it stay.
pub fn materialize(skills: &[SkillRef], root: &Path) -> io::Result<()> {
    let mut seen = HashSet::new();
    for skill in skills {
        check_name(&skill.name)?;
        if !seen.insert(skill.name.as_str()) {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("two skills are named {:?}", skill.name),
            ));
        }
    }
    create_dirs(root)?;
    for skill in skills {
        install(skill, root)?;
    }
    Ok(())
}

/// A name is one plain path component that cannot clash with the staging
/// siblings (which start with a dot).
fn check_name(name: &str) -> io::Result<()> {
    let plain =
        !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', '\0', ':']);
    if plain {
        Ok(())
    } else {
        Err(io::Error::new(
            ErrorKind::InvalidInput,
            format!("skill name {name:?} is not a plain directory name"),
        ))
    }
}

/// Copies one skill next to its destination, then renames it into place.
fn install(skill: &SkillRef, root: &Path) -> io::Result<()> {
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{}.new-", skill.name))
        .tempdir_in(root)?;
    let tree = staging.path().join("tree");
    copy_tree(&skill.dir, &tree)?;
    let dest = root.join(&skill.name);
    match fs::symlink_metadata(&dest) {
        Err(e) if e.kind() == ErrorKind::NotFound => fs::rename(&tree, &dest),
        Err(e) => Err(e),
        Ok(meta) if !meta.is_dir() => {
            // A file or link where the skill goes: ours to replace (the
            // link itself is removed, never what it points to).
            fs::remove_file(&dest)?;
            fs::rename(&tree, &dest)
        }
        Ok(_) => {
            // Move the old tree into the staging directory (removed with
            // it), then the new one into place; undo on failure.
            let old = staging.path().join("old");
            fs::rename(&dest, &old)?;
            fs::rename(&tree, &dest).inspect_err(|_| {
                let _ = fs::rename(&old, &dest);
            })
        }
    }
}

/// Copies the tree at `src` to the new directory `dst`, never following a
/// link.
fn copy_tree(src: &Path, dst: &Path) -> io::Result<()> {
    if !fs::symlink_metadata(src)?.is_dir() {
        return Err(invalid(src, "is not a directory"));
    }
    new_dir(dst)?;
    let mut pending = vec![(src.to_path_buf(), dst.to_path_buf())];
    while let Some((from_dir, to_dir)) = pending.pop() {
        for entry in fs::read_dir(&from_dir)? {
            let entry = entry?;
            let from = entry.path();
            let to = to_dir.join(entry.file_name());
            // `DirEntry::metadata` does not follow a link.
            let meta = entry.metadata()?;
            if meta.is_dir() {
                new_dir(&to)?;
                pending.push((from, to));
            } else if meta.is_file() {
                copy_file(&from, &meta, &to)?;
            } else {
                return Err(invalid(&from, "is a link or a special file"));
            }
        }
    }
    Ok(())
}

/// Copies a regular file, checking that what was opened is the file that
/// was listed (not a link swapped in since).
fn copy_file(from: &Path, listed: &fs::Metadata, to: &Path) -> io::Result<()> {
    let mut source = fs::File::open(from)?;
    let opened = source.metadata()?;
    if !opened.is_file() || !same_file(listed, &opened) {
        return Err(invalid(from, "changed while it was copied"));
    }
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let executable = listed.permissions().mode() & 0o111 != 0;
        options.mode(if executable {
            FILE_MODE | 0o100
        } else {
            FILE_MODE
        });
    }
    let mut target = options.open(to)?;
    io::copy(&mut source, &mut target)?;
    Ok(())
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &fs::Metadata, _: &fs::Metadata) -> bool {
    true
}

fn invalid(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        ErrorKind::InvalidData,
        format!("skill tree entry {} {what}", path.display()),
    )
}

fn new_dir(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(path)
}

/// `path` and any missing parent, each new one 0700.
fn create_dirs(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(path)
}

#[cfg(test)]
mod tests;
