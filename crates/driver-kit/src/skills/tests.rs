use std::path::PathBuf;

use super::*;

fn skill_ref(name: &str, dir: &Path) -> SkillRef {
    SkillRef {
        name: name.to_owned(),
        description: "d".to_owned(),
        dir: dir.to_path_buf(),
        fingerprint: "sha256:test".to_owned(),
    }
}

/// A skill tree: `SKILL.md` (`tag` in it) and `scripts/run.sh`, executable.
fn tree(tag: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("SKILL.md"),
        format!("---\nname: x\n---\n{tag}"),
    )
    .unwrap();
    fs::create_dir(dir.path().join("scripts")).unwrap();
    fs::write(dir.path().join("scripts/run.sh"), "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let run = dir.path().join("scripts/run.sh");
        fs::set_permissions(run, fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn home() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("claude/skills");
    (home, root)
}

#[test]
fn skills_are_copied_under_their_names_privately() {
    let (a, b) = (tree("a"), tree("b"));
    let (home, root) = home();
    materialize(
        &[skill_ref("alpha", a.path()), skill_ref("beta", b.path())],
        &root,
    )
    .unwrap();
    assert_eq!(names(&root), ["alpha", "beta"]);
    assert!(
        fs::read_to_string(root.join("alpha/SKILL.md"))
            .unwrap()
            .ends_with('a')
    );
    assert!(
        fs::read_to_string(root.join("beta/SKILL.md"))
            .unwrap()
            .ends_with('b')
    );
    assert_eq!(
        fs::read(root.join("beta/scripts/run.sh")).unwrap(),
        b"#!/bin/sh\n"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&home.path().join("claude")), 0o700);
        assert_eq!(mode(&root.join("alpha")), 0o700);
        assert_eq!(mode(&root.join("alpha/scripts")), 0o700);
        assert_eq!(mode(&root.join("alpha/SKILL.md")), 0o600);
        assert_eq!(mode(&root.join("alpha/scripts/run.sh")), 0o700);
    }
    // The sources are untouched.
    assert_eq!(names(a.path()), ["SKILL.md", "scripts"]);
}

#[test]
fn an_existing_skill_is_replaced_whole() {
    let (old, new) = (tree("old"), tree("new"));
    fs::write(old.path().join("stale.txt"), "x").unwrap();
    let (_home, root) = home();
    materialize(&[skill_ref("alpha", old.path())], &root).unwrap();
    assert!(root.join("alpha/stale.txt").is_file());
    materialize(&[skill_ref("alpha", new.path())], &root).unwrap();
    assert!(
        fs::read_to_string(root.join("alpha/SKILL.md"))
            .unwrap()
            .ends_with("new")
    );
    assert!(
        !root.join("alpha/stale.txt").exists(),
        "the old tree is gone, not merged"
    );
    assert_eq!(names(&root), ["alpha"], "no staging directory is left");
    // A file or link where the skill goes is replaced, not followed.
    #[cfg(unix)]
    {
        let elsewhere = tempfile::tempdir().unwrap();
        fs::remove_dir_all(root.join("alpha")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.join("alpha")).unwrap();
        materialize(&[skill_ref("alpha", new.path())], &root).unwrap();
        assert!(fs::symlink_metadata(root.join("alpha")).unwrap().is_dir());
        assert!(
            names(elsewhere.path()).is_empty(),
            "nothing written through the link"
        );
    }
}

#[cfg(unix)]
#[test]
fn links_in_a_tree_are_refused_and_nothing_is_installed() {
    let (_home, root) = home();
    for target in ["/etc/passwd", "SKILL.md"] {
        let src = tree("linked");
        std::os::unix::fs::symlink(target, src.path().join("scripts/link")).unwrap();
        let err = materialize(&[skill_ref("alpha", src.path())], &root).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidData, "{target}: {err}");
        assert!(names(&root).is_empty(), "{target}: {:?}", names(&root));
    }
    // A tree root that is a link is refused too.
    let real = tree("real");
    let holder = tempfile::tempdir().unwrap();
    let link = holder.path().join("skill");
    std::os::unix::fs::symlink(real.path(), &link).unwrap();
    let err = materialize(&[skill_ref("alpha", &link)], &root).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    assert!(names(&root).is_empty());
}

#[test]
fn bad_or_duplicate_names_are_refused_before_anything_is_written() {
    let src = tree("x");
    let (home, root) = home();
    for name in ["", ".", "..", "../up", "a/b", "a\\b", ".hidden", "c:x"] {
        let err = materialize(&[skill_ref(name, src.path())], &root).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{name:?}");
    }
    let twice = [
        skill_ref("alpha", src.path()),
        skill_ref("alpha", src.path()),
    ];
    assert_eq!(
        materialize(&twice, &root).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        names(home.path()),
        Vec::<String>::new(),
        "not even the root was created"
    );
}
