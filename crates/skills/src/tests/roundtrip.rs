//! Skills that load: from each source, the same tree, the same fingerprint.

use std::fs;

use super::*;

const SCRIPT: &[u8] = b"#!/bin/sh\necho hi\n";
const DOC: &[u8] = b"# Reference\n";

/// The demo tree as archive entries.
fn demo_entries() -> Vec<E> {
    vec![
        skill_md(),
        E::Dir("scripts/"),
        E::File("scripts/run.sh", SCRIPT.to_vec(), true),
        file("docs/ref.md", DOC),
    ]
}

/// The demo tree written under `dir`.
fn write_demo(dir: &Path) {
    fs::create_dir_all(dir.join("scripts")).unwrap();
    fs::create_dir_all(dir.join("docs")).unwrap();
    fs::write(dir.join("SKILL.md"), GOOD_MD).unwrap();
    fs::write(dir.join("scripts/run.sh"), SCRIPT).unwrap();
    fs::write(dir.join("docs/ref.md"), DOC).unwrap();
    set_exec(&dir.join("scripts/run.sh"), true);
}

fn set_exec(path: &Path, exec: bool) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if exec { 0o755 } else { 0o644 };
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = (path, exec);
}

fn demo_dir() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_demo(dir.path());
    dir
}

fn expected_files() -> Vec<(String, Vec<u8>)> {
    vec![
        ("SKILL.md".to_owned(), GOOD_MD.as_bytes().to_vec()),
        ("docs/ref.md".to_owned(), DOC.to_vec()),
        ("scripts/run.sh".to_owned(), SCRIPT.to_vec()),
    ]
}

#[test]
fn a_directory_is_used_in_place() {
    let dir = demo_dir();
    let skill = Skill::from_dir(dir.path()).unwrap();
    let r = skill.reference();
    assert_eq!(
        (r.name.as_str(), r.description.as_str()),
        ("demo", "A demo skill.")
    );
    assert_eq!(r.dir, fs::canonicalize(dir.path()).unwrap());
    assert!(r.fingerprint.starts_with("sha256:") && r.fingerprint.len() == 7 + 64);
    drop(skill);
    assert!(
        dir.path().join("SKILL.md").is_file(),
        "a directory source is never removed"
    );
}

#[test]
fn every_archive_format_gives_the_directory_fingerprint() {
    let from_dir = Skill::from_dir(demo_dir().path())
        .unwrap()
        .reference()
        .fingerprint
        .clone();
    let tar = tar_of(&demo_entries());
    for (format, bytes) in [
        ("zip", zip_of(&demo_entries())),
        ("tar", tar.clone()),
        ("tar.gz", gz(&tar)),
    ] {
        let sandbox = Sandbox::new();
        let skill = sandbox.load(&bytes, ExtractLimits::default()).unwrap();
        let r = skill.reference();
        assert_eq!(r.name, "demo", "{format}");
        assert_eq!(files_under(&r.dir), expected_files(), "{format}");
        assert_eq!(r.fingerprint, from_dir, "{format}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &str| fs::metadata(r.dir.join(p)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode("scripts/run.sh"), 0o700, "{format}");
            assert_eq!(mode("SKILL.md"), 0o600, "{format}");
            assert_eq!(mode("scripts"), 0o700, "{format}");
        }
        let clone = skill.clone();
        drop(skill);
        assert!(
            clone.reference().dir.is_dir(),
            "a clone keeps the directory"
        );
        drop(clone);
        assert!(
            names(&sandbox.temps()).is_empty(),
            "{format}: the last drop removes it"
        );
    }
}

#[test]
fn a_single_top_level_directory_is_the_root() {
    let entries = [
        E::Dir("demo/"),
        file("demo/SKILL.md", GOOD_MD),
        file("demo/notes.txt", "n"),
        file("__MACOSX/demo/._SKILL.md", "junk"),
    ];
    let sandbox = Sandbox::new();
    let skill = sandbox
        .load(&zip_of(&entries), ExtractLimits::default())
        .unwrap();
    assert!(skill.reference().dir.ends_with("demo"));
    let files: Vec<String> = files_under(&skill.reference().dir)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(files, ["SKILL.md", "notes.txt"]);
}

#[test]
fn inline_text_is_a_skill_of_one_file() {
    let skill = Skill::inline(GOOD_MD).unwrap();
    let dir = skill.reference().dir.clone();
    assert_eq!(
        files_under(&dir),
        [("SKILL.md".to_owned(), GOOD_MD.as_bytes().to_vec())]
    );
    let archived = Sandbox::new()
        .load(&tar_of(&[skill_md()]), ExtractLimits::default())
        .unwrap();
    assert_eq!(
        skill.reference().fingerprint,
        archived.reference().fingerprint
    );
    drop(skill);
    assert!(!dir.exists());
    assert!(matches!(
        Skill::inline("no front matter"),
        Err(SkillError::FrontMatter { .. })
    ));
}

#[test]
fn load_picks_the_source_by_what_the_path_is() {
    let dir = demo_dir();
    let fingerprint = Skill::from_dir(dir.path())
        .unwrap()
        .reference()
        .fingerprint
        .clone();
    assert_eq!(
        Skill::load(dir.path()).unwrap().reference().fingerprint,
        fingerprint
    );
    let md = Skill::load(dir.path().join("SKILL.md")).unwrap();
    assert_eq!(md.reference().dir, fs::canonicalize(dir.path()).unwrap());
    // A tar.gz named .zip: told by its bytes.
    let other = tempfile::tempdir().unwrap();
    let archive = other.path().join("skill.zip");
    fs::write(&archive, gz(&tar_of(&demo_entries()))).unwrap();
    let loaded = Skill::load(&archive).unwrap();
    assert_eq!(loaded.reference().fingerprint, fingerprint);
    assert!(!loaded.reference().dir.starts_with(other.path()));
    assert!(matches!(
        Skill::load(other.path().join("absent")),
        Err(SkillError::Io { .. })
    ));
}

#[test]
fn the_fingerprint_is_deterministic() {
    let a = demo_dir();
    // The same tree written in another order, with an empty directory.
    let b = tempfile::tempdir().unwrap();
    fs::create_dir_all(b.path().join("docs")).unwrap();
    fs::write(b.path().join("docs/ref.md"), DOC).unwrap();
    fs::create_dir_all(b.path().join("empty")).unwrap();
    fs::create_dir_all(b.path().join("scripts")).unwrap();
    fs::write(b.path().join("scripts/run.sh"), SCRIPT).unwrap();
    set_exec(&b.path().join("scripts/run.sh"), true);
    fs::write(b.path().join("SKILL.md"), GOOD_MD).unwrap();
    let fp = |dir: &Path| {
        Skill::from_dir(dir)
            .unwrap()
            .reference()
            .fingerprint
            .clone()
    };
    assert_eq!(fp(a.path()), fp(b.path()));
    assert_eq!(fp(a.path()), fp(a.path()));
}

#[test]
fn the_fingerprint_sees_every_change() {
    let fp = |dir: &Path| {
        Skill::from_dir(dir)
            .unwrap()
            .reference()
            .fingerprint
            .clone()
    };
    let base = demo_dir();
    let original = fp(base.path());
    type Change = (&'static str, fn(&Path));
    let changes: [Change; 6] = [
        ("one content byte", |d| {
            fs::write(d.join("docs/ref.md"), b"# Reference!").unwrap()
        }),
        ("a rename", |d| {
            fs::rename(d.join("docs/ref.md"), d.join("docs/reg.md")).unwrap()
        }),
        ("a move to another dir", |d| {
            fs::rename(d.join("docs"), d.join("doc")).unwrap()
        }),
        ("the executable bit", |d| {
            set_exec(&d.join("scripts/run.sh"), false)
        }),
        ("a new empty file", |d| {
            fs::write(d.join("docs/empty"), b"").unwrap()
        }),
        ("content moved between files", |d| {
            fs::write(d.join("docs/ref.md"), b"# Ref").unwrap();
            fs::write(d.join("docs/rest.md"), b"erence\n").unwrap();
        }),
    ];
    for (what, change) in changes {
        if what == "the executable bit" && !cfg!(unix) {
            continue;
        }
        let dir = demo_dir();
        change(dir.path());
        assert_ne!(fp(dir.path()), original, "{what}");
    }
}

#[test]
fn a_directory_source_is_checked() {
    let dir = demo_dir();
    #[cfg(unix)]
    {
        for target in ["SKILL.md", "/etc/passwd", "../outside"] {
            let link = dir.path().join("docs/link");
            std::os::unix::fs::symlink(target, &link).unwrap();
            let err = Skill::from_dir(dir.path()).unwrap_err();
            assert!(
                matches!(err, SkillError::Link { ref path } if path == "docs/link"),
                "{target}: {err}"
            );
            fs::remove_file(&link).unwrap();
        }
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = Skill::from_dir(dir.path()).unwrap_err();
        assert!(
            matches!(err, SkillError::SpecialFile { kind: "FIFO", .. }),
            "{err}"
        );
        fs::remove_file(&fifo).unwrap();
    }
    let few = ExtractLimits::default().with_max_files(4);
    let err = Skill::from_dir_with(dir.path(), few).unwrap_err();
    assert!(
        matches!(err, SkillError::TooManyFiles { limit: 4 }),
        "{err}"
    );
    let small = ExtractLimits::default().with_max_entry_bytes(10);
    let err = Skill::from_dir_with(dir.path(), small).unwrap_err();
    assert!(matches!(err, SkillError::EntryTooLarge { .. }), "{err}");
    let total = ExtractLimits::default().with_max_total_bytes(60);
    let err = Skill::from_dir_with(dir.path(), total).unwrap_err();
    assert!(
        matches!(err, SkillError::TotalTooLarge { limit: 60 }),
        "{err}"
    );
    fs::remove_file(dir.path().join("SKILL.md")).unwrap();
    assert!(matches!(
        Skill::from_dir(dir.path()),
        Err(SkillError::MissingSkillMd)
    ));
    assert!(matches!(
        Skill::from_dir(dir.path().join("docs/ref.md")),
        Err(SkillError::Io { .. })
    ));
}

#[test]
fn skills_and_errors_cross_threads() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<Skill>();
    send_sync::<SkillError>();
    let skill = Skill::inline(GOOD_MD).unwrap();
    let name = std::thread::spawn(move || skill.name().to_owned())
        .join()
        .unwrap();
    assert_eq!(name, "demo");
}

#[test]
fn a_skill_is_a_handle_that_keeps_its_directory() {
    use crate::SkillHandle;
    let skill = Skill::inline(GOOD_MD).unwrap();
    let handle: std::sync::Arc<dyn SkillHandle> = std::sync::Arc::new(skill.clone());
    assert_eq!(handle.reference(), skill.reference());
    let dir = skill.reference().dir.clone();
    drop(skill);
    assert!(
        dir.join("SKILL.md").is_file(),
        "the handle keeps the directory"
    );
    drop(handle);
    assert!(!dir.exists());
}
