//! Each refusal of the safe extraction, with a malicious archive built here.
//! [`Sandbox::load`] checks every time that nothing was left behind.

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

use super::*;
use crate::archive;
use crate::writer::TreeWriter;

fn defaults() -> ExtractLimits {
    ExtractLimits::default()
}

fn load(bytes: &[u8]) -> Result<Skill, SkillError> {
    Sandbox::new().load(bytes, defaults())
}

#[test]
fn zip_slip_is_refused() {
    let zip = zip_of(&[skill_md(), file("../evil", "x")]);
    assert!(matches!(load(&zip), Err(SkillError::PathTraversal { path }) if path == "../evil"));
    let zip = zip_of(&[skill_md(), file("a/../../evil", "x")]);
    assert!(matches!(load(&zip), Err(SkillError::PathTraversal { .. })));
}

#[test]
fn tar_slip_is_refused() {
    for bytes in [
        tar_of(&[skill_md(), file("../evil", "x")]),
        gz(&tar_of(&[skill_md(), file("../evil", "x")])),
        tar_of(&[skill_md(), E::Dir("../up/")]),
    ] {
        assert!(matches!(
            load(&bytes),
            Err(SkillError::PathTraversal { .. })
        ));
    }
}

#[test]
fn absolute_paths_are_refused() {
    let zip = zip_of(&[skill_md(), file("/etc/x", "x")]);
    assert!(matches!(load(&zip), Err(SkillError::AbsolutePath { path }) if path == "/etc/x"));
    let tar = tar_of(&[skill_md(), file("/etc/x", "x")]);
    assert!(matches!(load(&tar), Err(SkillError::AbsolutePath { .. })));
}

#[test]
fn every_link_is_refused() {
    for bytes in [
        zip_of(&[skill_md(), E::Symlink("passwd", "/etc/passwd")]),
        zip_of(&[skill_md(), E::Symlink("up", "../../x")]),
        zip_of(&[skill_md(), E::Symlink("inside", "SKILL.md")]),
        tar_of(&[skill_md(), E::Symlink("passwd", "/etc/passwd")]),
        tar_of(&[skill_md(), E::Symlink("up", "../../x")]),
        tar_of(&[skill_md(), E::Symlink("inside", "SKILL.md")]),
        tar_of(&[skill_md(), E::HardLink("hard", "/etc/passwd")]),
        tar_of(&[skill_md(), E::HardLink("hard", "SKILL.md")]),
    ] {
        assert!(matches!(load(&bytes), Err(SkillError::Link { .. })));
    }
}

#[test]
fn special_entries_are_refused() {
    use tar::EntryType as T;
    let tar = tar_of(&[skill_md(), E::Fifo("pipe")]);
    assert!(matches!(
        load(&tar),
        Err(SkillError::SpecialFile { kind: "FIFO", .. })
    ));
    for (kind, name) in [(T::Char, "character device"), (T::Block, "block device")] {
        let mut bytes = tar_of(&[skill_md()]);
        bytes.truncate(bytes.len() - 1024);
        bytes.extend_from_slice(tar_header("dev", kind, 0, 0o644).as_bytes());
        bytes.extend_from_slice(&[0; 1024]);
        assert!(
            matches!(load(&bytes), Err(SkillError::SpecialFile { kind, .. }) if kind == name),
            "{name}"
        );
    }
}

/// A reader that counts what is read through it.
struct Counting<R> {
    inner: R,
    read: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// The bytes of all files under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    files_under(dir)
        .iter()
        .map(|(_, data)| data.len() as u64)
        .sum()
}

#[test]
fn a_tar_entry_claiming_10_gb_is_refused_without_reading_it() {
    const CAP: u64 = 1 << 20;
    let limits = defaults().with_max_entry_bytes(CAP);
    // The header claims 10 GiB; 3 MiB of data follow, then the stream ends.
    let mut bytes = tar_of(&[skill_md()]);
    bytes.truncate(bytes.len() - 1024);
    let data_start = bytes.len() + 512;
    bytes.extend_from_slice(
        tar_header("huge.bin", tar::EntryType::Regular, 10 << 30, 0o644).as_bytes(),
    );
    bytes.resize(bytes.len() + 3 * CAP as usize, b'z');

    let err = Sandbox::new().load(&bytes, limits).unwrap_err();
    assert!(
        matches!(err, SkillError::EntryTooLarge { ref path, limit: CAP } if path == "huge.bin"),
        "{err}"
    );

    // What was read from the stream and written to the target, directly.
    let target = tempfile::tempdir().unwrap();
    let read = Rc::new(Cell::new(0));
    let source = Counting {
        inner: bytes.as_slice(),
        read: Rc::clone(&read),
    };
    let mut writer = TreeWriter::new(target.path(), limits);
    let err = archive::extract_tar(source, &mut writer, limits).unwrap_err();
    assert!(matches!(err, SkillError::EntryTooLarge { .. }));
    assert!(
        read.get() <= data_start as u64 + CAP + 1,
        "read {} bytes of the stream, the cap is {CAP}",
        read.get()
    );
    assert!(bytes_under(target.path()) <= CAP);
}

/// A zip whose only big entry claims `claim` bytes but inflates to `real`.
fn lying_zip(real: usize, claim: u32) -> Vec<u8> {
    let mut zip = zip_of(&[skill_md(), file("bomb.bin", vec![0u8; real])]);
    let real = u32::try_from(real).unwrap().to_le_bytes();
    // The uncompressed size sits at offset 22 of a local header, 24 of a
    // central directory header: patch the entry's both.
    let mut patched = 0;
    for (sig, at) in [(b"PK\x03\x04", 22), (b"PK\x01\x02", 24)] {
        let mut i = 0;
        while let Some(pos) = zip[i..].windows(4).position(|w| w == sig) {
            let field = i + pos + at;
            if zip[field..field + 4] == real {
                zip[field..field + 4].copy_from_slice(&claim.to_le_bytes());
                patched += 1;
            }
            i += pos + 4;
        }
    }
    assert_eq!(patched, 2);
    zip
}

#[test]
fn a_zip_bomb_is_refused() {
    const CAP: u64 = 1 << 20;
    let limits = defaults().with_max_entry_bytes(CAP);
    // 20 MiB of zeros deflate to ~20 KiB; the header says 20 MiB.
    let zip = zip_of(&[skill_md(), file("bomb.bin", vec![0u8; 20 << 20])]);
    assert!(zip.len() < 100 << 10);
    let err = Sandbox::new().load(&zip, limits).unwrap_err();
    assert!(
        matches!(err, SkillError::EntryTooLarge { limit: CAP, .. }),
        "{err}"
    );

    // The same bomb claiming 1 KiB: stopped after reading past the cap.
    let zip = lying_zip(20 << 20, 1024);
    let err = Sandbox::new().load(&zip, limits).unwrap_err();
    assert!(
        matches!(
            err,
            SkillError::EntryTooLarge { limit: CAP, .. } | SkillError::CorruptArchive { .. }
        ),
        "{err}"
    );
    let target = tempfile::tempdir().unwrap();
    let mut writer = TreeWriter::new(target.path(), limits);
    let _ = archive::extract_zip(io::Cursor::new(zip), &mut writer, limits);
    assert!(bytes_under(target.path()) <= CAP);
}

#[test]
fn content_past_its_claim_is_stopped_after_cap_plus_one_bytes() {
    // Whatever an archive reader lets through: an entry of 4 × cap bytes
    // that claims 10 is read for at most cap + 1 bytes, and at most cap
    // written.
    const CAP: u64 = 100 << 10;
    let rel = crate::entry_path::check(b"endless").unwrap().unwrap();
    for limits in [
        defaults().with_max_entry_bytes(CAP),
        defaults().with_max_total_bytes(CAP),
    ] {
        let target = tempfile::tempdir().unwrap();
        let read = Rc::new(Cell::new(0));
        let mut source = Counting {
            inner: io::repeat(7).take(4 * CAP),
            read: Rc::clone(&read),
        };
        let mut writer = TreeWriter::new(target.path(), limits);
        let err = writer
            .file(&rel, false, 10, &mut source, &|e| {
                SkillError::CorruptArchive {
                    reason: e.to_string(),
                }
            })
            .unwrap_err();
        assert!(
            matches!(
                err,
                SkillError::EntryTooLarge { .. } | SkillError::TotalTooLarge { .. }
            ),
            "{err}"
        );
        assert!(
            read.get() <= CAP + 1,
            "read {} bytes, the cap is {CAP}",
            read.get()
        );
        assert!(bytes_under(target.path()) <= CAP);
    }
    // An entry shorter than its claim is a damaged archive, not a short file.
    let target = tempfile::tempdir().unwrap();
    let mut writer = TreeWriter::new(target.path(), defaults());
    let err = writer
        .file(&rel, false, 10, &mut &b"short"[..], &|e| {
            SkillError::CorruptArchive {
                reason: e.to_string(),
            }
        })
        .unwrap_err();
    assert!(matches!(err, SkillError::CorruptArchive { .. }), "{err}");
}

#[test]
fn too_many_files_are_refused() {
    let limits = defaults().with_max_files(10);
    let names: Vec<&'static str> = (0..10)
        .map(|i| &*Box::leak(format!("f{i}").into_boxed_str()))
        .collect();
    let mut entries = vec![skill_md()];
    entries.extend(names.iter().map(|n| file(n, "x")));
    for bytes in [zip_of(&entries), tar_of(&entries)] {
        let err = Sandbox::new().load(&bytes, limits).unwrap_err();
        assert!(
            matches!(err, SkillError::TooManyFiles { limit: 10 }),
            "{err}"
        );
    }
    // Directories count, also the ones a deep path creates on its own.
    let deep = tar_of(&[skill_md(), file("a/b/c/d/e/f/g/h/i/j/k", "x")]);
    let err = Sandbox::new().load(&deep, limits).unwrap_err();
    assert!(
        matches!(err, SkillError::TooManyFiles { limit: 10 }),
        "{err}"
    );
    // Nine files and SKILL.md: at the cap, accepted.
    entries.pop();
    assert!(Sandbox::new().load(&tar_of(&entries), limits).is_ok());
}

#[test]
fn the_total_size_is_capped() {
    let limits = defaults().with_max_total_bytes(1 << 20);
    let part = || vec![b'x'; 400 << 10];
    let entries = [
        skill_md(),
        file("a", part()),
        file("b", part()),
        file("c", part()),
    ];
    for bytes in [zip_of(&entries), tar_of(&entries), gz(&tar_of(&entries))] {
        let err = Sandbox::new().load(&bytes, limits).unwrap_err();
        assert!(
            matches!(err, SkillError::TotalTooLarge { limit } if limit == 1 << 20),
            "{err}"
        );
    }
}

#[test]
fn tar_metadata_records_are_capped_too() {
    // A PAX record of 2 MiB (the tar reader keeps it in memory) in an
    // archive allowed 64 KiB of content and one file.
    let limits = defaults().with_max_files(1).with_max_total_bytes(64 << 10);
    let mut bytes = tar_header("pax", tar::EntryType::XHeader, 2 << 20, 0o644)
        .as_bytes()
        .to_vec();
    bytes.resize(512 + (2 << 20), b'a');
    bytes.extend_from_slice(&tar_of(&[skill_md()]));
    let err = Sandbox::new().load(&gz(&bytes), limits).unwrap_err();
    assert!(matches!(err, SkillError::TotalTooLarge { .. }), "{err}");
}

#[test]
fn missing_skill_md_is_refused() {
    for entries in [
        vec![file("README.md", "no skill here")],
        vec![
            file("docs/SKILL.md", GOOD_MD),
            file("other/SKILL.md", GOOD_MD),
        ],
        vec![file("top/SKILL.md", GOOD_MD), file("stray.txt", "x")],
        vec![file("skill.md", GOOD_MD)],
    ] {
        let err = load(&zip_of(&entries)).unwrap_err();
        assert!(matches!(err, SkillError::MissingSkillMd), "{err}");
    }
}

#[test]
fn bad_front_matter_and_names_are_refused() {
    let zip = zip_of(&[file(
        "SKILL.md",
        "---\nname: Demo Skill\ndescription: d\n---\n",
    )]);
    assert!(matches!(load(&zip), Err(SkillError::InvalidName { .. })));
    let tar = tar_of(&[file("SKILL.md", "no front matter")]);
    assert!(matches!(load(&tar), Err(SkillError::FrontMatter { .. })));
    let tar = tar_of(&[file("SKILL.md", vec![0xff, 0xfe])]);
    assert!(matches!(load(&tar), Err(SkillError::FrontMatter { .. })));
}

#[test]
fn duplicate_entries_are_refused() {
    for entries in [
        vec![skill_md(), skill_md()],
        vec![skill_md(), file("a", "x"), file("a/b", "y")],
        vec![skill_md(), E::Dir("a/"), file("a", "x")],
    ] {
        let err = load(&tar_of(&entries)).unwrap_err();
        assert!(matches!(err, SkillError::DuplicateEntry { .. }), "{err}");
    }
}

#[test]
fn garbage_is_not_an_archive() {
    let unsupported =
        |bytes: &[u8]| matches!(load(bytes), Err(SkillError::UnsupportedArchive { .. }));
    assert!(unsupported(b""));
    assert!(unsupported(b"just some text, named .zip perhaps"));
    assert!(unsupported(&gz(b"a gzip of no tar")));
    // A v7 tar has no magic.
    let mut v7 = tar_of(&[skill_md()]);
    v7[257..265].fill(0);
    assert!(unsupported(&v7));

    let corrupt = |bytes: &[u8]| matches!(load(bytes), Err(SkillError::CorruptArchive { .. }));
    assert!(corrupt(b"PK\x03\x04 and then nothing of a zip"));
    let mut bad_sum = tar_of(&[skill_md()]);
    bad_sum[0] ^= 1;
    assert!(corrupt(&bad_sum));
    let mut truncated_gz = gz(&tar_of(&[skill_md(), file("x", vec![7u8; 4096])]));
    truncated_gz.truncate(truncated_gz.len() / 2);
    assert!(corrupt(&truncated_gz));
}
