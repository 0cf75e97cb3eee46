//! Tests of the loader: archive builders (honest and malicious) shared by
//! the refusal, round-trip and fuzz tests.

mod fuzz;
mod refusals;
mod roundtrip;

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use tempfile::TempDir;
use zip::write::SimpleFileOptions;

use crate::{ExtractLimits, Skill, SkillError};

/// A valid `SKILL.md`.
pub(super) const GOOD_MD: &str = "---\nname: demo\ndescription: A demo skill.\n---\nUse it.\n";

/// One entry of an archive built by [`zip_of`] or [`tar_of`].
#[derive(Clone, Debug)]
pub(super) enum E {
    /// A file, `true` when executable.
    File(&'static str, Vec<u8>, bool),
    Dir(&'static str),
    Symlink(&'static str, &'static str),
    HardLink(&'static str, &'static str),
    Fifo(&'static str),
}

pub(super) fn file(name: &'static str, data: impl Into<Vec<u8>>) -> E {
    E::File(name, data.into(), false)
}

pub(super) fn skill_md() -> E {
    file("SKILL.md", GOOD_MD)
}

/// A zip of `entries`, deflated.
pub(super) fn zip_of(entries: &[E]) -> Vec<u8> {
    zip_build(entries, true)
}

/// A zip of those of `entries` the zip writer takes (it refuses a
/// duplicate name, for one).
pub(super) fn zip_of_lenient(entries: &[E]) -> Vec<u8> {
    zip_build(entries, false)
}

fn zip_build(entries: &[E], strict: bool) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let deflated =
        SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for entry in entries {
        let added = match entry {
            E::File(name, data, exec) => {
                let mode = if *exec { 0o755 } else { 0o644 };
                zip.start_file(*name, deflated.unix_permissions(mode))
                    .and_then(|()| Ok(zip.write_all(data)?))
            }
            E::Dir(name) => zip.add_directory(*name, deflated),
            E::Symlink(name, target) => zip.add_symlink(*name, *target, deflated),
            E::HardLink(..) | E::Fifo(_) => panic!("zip has no such entry"),
        };
        assert!(added.is_ok() || !strict, "{:?}", added.err());
    }
    zip.finish().unwrap().into_inner()
}

/// A ustar header for `name` (written raw: `tar::Builder` would refuse
/// the malicious names these tests need).
pub(super) fn tar_header(name: &str, kind: tar::EntryType, size: u64, mode: u32) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    let raw = &mut header.as_old_mut().name;
    raw.fill(0);
    raw[..name.len()].copy_from_slice(name.as_bytes());
    header.set_entry_type(kind);
    header.set_size(size);
    header.set_mode(mode);
    header.set_cksum();
    header
}

/// A tar of `entries`.
pub(super) fn tar_of(entries: &[E]) -> Vec<u8> {
    use tar::EntryType as T;
    let mut tar = tar::Builder::new(Vec::new());
    for entry in entries {
        let (header, data): (tar::Header, &[u8]) = match entry {
            E::File(name, data, exec) => {
                let mode = if *exec { 0o755 } else { 0o644 };
                (tar_header(name, T::Regular, data.len() as u64, mode), data)
            }
            E::Dir(name) => (tar_header(name, T::Directory, 0, 0o755), &[]),
            E::Symlink(name, target) | E::HardLink(name, target) => {
                let kind = if matches!(entry, E::Symlink(..)) {
                    T::Symlink
                } else {
                    T::Link
                };
                let mut header = tar_header(name, kind, 0, 0o777);
                header.set_link_name(target).unwrap();
                header.set_cksum();
                (header, &[])
            }
            E::Fifo(name) => (tar_header(name, T::Fifo, 0, 0o644), &[]),
        };
        tar.append(&header, data).unwrap();
    }
    tar.into_inner().unwrap()
}

/// `bytes` gzip-compressed.
pub(super) fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// A sandbox: `base/archive` (the input) and `base/temps` (where the
/// skill's temporary directory is made), so a write outside the skill's
/// own directory shows up as something new in `base` or `base/temps`.
pub(super) struct Sandbox {
    pub base: TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        std::fs::create_dir(base.path().join("temps")).unwrap();
        Self { base }
    }

    pub fn temps(&self) -> PathBuf {
        self.base.path().join("temps")
    }

    pub fn archive(&self) -> PathBuf {
        self.base.path().join("archive")
    }

    /// Loads `bytes` as an archive with `limits`, and checks the sandbox:
    /// on error nothing is left anywhere, on success only the skill's own
    /// directory (which goes when the skill is dropped).
    pub fn load(&self, bytes: &[u8], limits: ExtractLimits) -> Result<Skill, SkillError> {
        std::fs::write(self.archive(), bytes).unwrap();
        let result = Skill::from_archive_in(&self.archive(), limits, &self.temps());
        assert_eq!(
            names(self.base.path()),
            ["archive", "temps"],
            "something written beside the archive"
        );
        let temps = names(&self.temps());
        match &result {
            Err(_) => assert!(temps.is_empty(), "left behind after an error: {temps:?}"),
            Ok(skill) => {
                assert_eq!(temps.len(), 1, "{temps:?}");
                assert!(skill.reference().dir.starts_with(self.temps()));
            }
        }
        result
    }
}

/// The sorted names in `dir`.
pub(super) fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every file under `dir`: relative path and content.
pub(super) fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((at, prefix)) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            let rel = format!("{prefix}{}", entry.file_name().to_string_lossy());
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push((entry.path(), format!("{rel}/")));
            } else {
                out.push((rel, std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}
