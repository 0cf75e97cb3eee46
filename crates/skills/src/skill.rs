//! [`Skill`]: a loaded, checked skill and the directory that holds it.

use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tempfile::TempDir;

use crate::error::{SkillError, io_at};
use crate::{ExtractLimits, SKILL_MD, SkillHandle, SkillRef, archive, front_matter, tree, writer};

/// A skill ready to hand to a run: a checked tree holding `SKILL.md`, its
/// front matter read and the tree fingerprinted.
///
/// Cheap to clone (an `Arc` inside). A skill from inline text or an
/// archive lives in a private temporary directory that this value owns: the
/// directory is removed when the last clone is dropped, so keep the `Skill`
/// alive while a run uses its [`reference`](Self::reference).
#[derive(Clone)]
pub struct Skill {
    inner: Arc<Inner>,
}

struct Inner {
    reference: SkillRef,
    /// Owns the extracted or written tree (`None` for a directory source).
    _temp: Option<TempDir>,
}

impl fmt::Debug for Skill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Skill")
            .field("reference", &self.inner.reference)
            .field("owns_dir", &self.inner._temp.is_some())
            .finish()
    }
}

impl Skill {
    /// The skill in the directory `path`, referenced in place (not copied):
    /// `SKILL.md` at its root, no link anywhere in it (every link is
    /// refused, even one that stays inside), no special file, and the
    /// default [`ExtractLimits`]. The directory is fingerprinted now; a
    /// change to it afterwards is not seen until it is loaded again.
    pub fn from_dir(path: impl AsRef<Path>) -> Result<Self, SkillError> {
        Self::from_dir_with(path, ExtractLimits::default())
    }

    /// [`from_dir`](Self::from_dir) with other limits.
    pub fn from_dir_with(
        path: impl AsRef<Path>,
        limits: ExtractLimits,
    ) -> Result<Self, SkillError> {
        let path = path.as_ref();
        let root = fs::canonicalize(path).map_err(io_at(path))?;
        if !root.is_dir() {
            return Err(SkillError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a directory"),
            });
        }
        Self::from_tree(root, None, limits)
    }

    /// A skill that is only its `SKILL.md` text, written into a private
    /// temporary directory this value owns.
    pub fn inline(skill_md: &str) -> Result<Self, SkillError> {
        Self::inline_in(skill_md, &std::env::temp_dir())
    }

    pub(crate) fn inline_in(skill_md: &str, parent: &Path) -> Result<Self, SkillError> {
        let limits = ExtractLimits::default();
        front_matter::parse(skill_md)?;
        if skill_md.len() as u64 > limits.max_entry_bytes {
            return Err(SkillError::EntryTooLarge {
                path: SKILL_MD.to_owned(),
                limit: limits.max_entry_bytes,
            });
        }
        let temp = private_temp(parent)?;
        let path = temp.path().join(SKILL_MD);
        let mut file = writer::new_file(&path, false).map_err(io_at(&path))?;
        file.write_all(skill_md.as_bytes()).map_err(io_at(&path))?;
        drop(file);
        let root = temp.path().to_path_buf();
        Self::from_tree(root, Some(temp), limits)
    }

    /// The skill in the zip, tar or gzip-compressed tar archive at `path`
    /// (the format is told by the file's first bytes, not its name), with
    /// the default [`ExtractLimits`]. See [`from_archive_with`](Self::from_archive_with).
    pub fn from_archive(path: impl AsRef<Path>) -> Result<Self, SkillError> {
        Self::from_archive_with(path, ExtractLimits::default())
    }

    /// The skill in an archive, extracted safely into a private temporary
    /// directory this value owns. The skill root is the archive's root when
    /// it holds `SKILL.md`, else the single top-level directory that does.
    ///
    /// Refused, each with its [`SkillError`] variant: a path with `..` or an
    /// absolute path; every link entry (symbolic or hard, wherever it
    /// points); devices, FIFOs and other special entries; more than
    /// `max_files` files and directories; a file over `max_entry_bytes` or
    /// a tree over `max_total_bytes`, counted on the bytes actually read (a
    /// header's claim over a cap is refused before reading, and an entry
    /// that inflates past its claim is stopped after at most `cap + 1`
    /// bytes); duplicate entries; no `SKILL.md`; bad front matter; a file
    /// that is no such archive or is damaged. Nothing is written outside
    /// the temporary directory, and it is removed on any error.
    pub fn from_archive_with(
        path: impl AsRef<Path>,
        limits: ExtractLimits,
    ) -> Result<Self, SkillError> {
        Self::from_archive_in(path.as_ref(), limits, &std::env::temp_dir())
    }

    /// [`from_archive_with`](Self::from_archive_with), the temporary
    /// directory made in `parent`.
    pub(crate) fn from_archive_in(
        path: &Path,
        limits: ExtractLimits,
        parent: &Path,
    ) -> Result<Self, SkillError> {
        let temp = private_temp(parent)?;
        archive::extract(path, temp.path(), limits)?;
        let root = archive::skill_root(temp.path())?;
        Self::from_tree(root, Some(temp), limits)
    }

    /// The skill at `path`, whatever it is: a directory
    /// ([`from_dir`](Self::from_dir)), a file named `SKILL.md` (its
    /// directory), or an archive ([`from_archive`](Self::from_archive)).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, SkillError> {
        Self::load_with(path, ExtractLimits::default())
    }

    /// [`load`](Self::load) with other limits.
    pub fn load_with(path: impl AsRef<Path>, limits: ExtractLimits) -> Result<Self, SkillError> {
        let path = path.as_ref();
        let meta = fs::metadata(path).map_err(io_at(path))?;
        if meta.is_dir() {
            return Self::from_dir_with(path, limits);
        }
        if path.file_name().is_some_and(|n| n == SKILL_MD) {
            let dir = match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            return Self::from_dir_with(dir, limits);
        }
        Self::from_archive_with(path, limits)
    }

    fn from_tree(
        root: PathBuf,
        temp: Option<TempDir>,
        limits: ExtractLimits,
    ) -> Result<Self, SkillError> {
        let scan = tree::scan(&root, limits)?;
        let front = front_matter::parse(&scan.skill_md)?;
        Ok(Self {
            inner: Arc::new(Inner {
                reference: SkillRef {
                    name: front.name,
                    description: front.description,
                    dir: root,
                    fingerprint: scan.fingerprint,
                },
                _temp: temp,
            }),
        })
    }

    /// What a run is handed: name, description, directory, fingerprint.
    pub fn reference(&self) -> &SkillRef {
        &self.inner.reference
    }

    /// The front matter's `name`.
    pub fn name(&self) -> &str {
        &self.inner.reference.name
    }
}

/// A run holds the `Skill` (and so its directory) until it ends.
impl SkillHandle for Skill {
    fn reference(&self) -> &SkillRef {
        &self.inner.reference
    }
}

/// A new private (0700) temporary directory in `parent`.
fn private_temp(parent: &Path) -> Result<TempDir, SkillError> {
    tempfile::Builder::new()
        .prefix(".aa-skill-")
        .tempdir_in(parent)
        .map_err(io_at(parent))
}
