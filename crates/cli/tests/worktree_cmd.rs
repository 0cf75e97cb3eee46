//! `run --worktree`: the run works in a git worktree of the `--cwd`
//! repository; the result line's `workspace` section names the lease and
//! the changes; `threads show` prints the thread's worktree and branch;
//! `threads delete` removes the worktree only when that loses no work.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{assert_one_line_failure, run, stderr, stdout};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn result_line(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    serde_json::from_str(stdout(out).lines().last().unwrap()).unwrap()
}

#[test]
fn thread_worktree_is_reported_shown_and_deleted_safely() {
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# demo\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    let repo_s = repo.to_str().unwrap();
    let head = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();

    let args = [
        "run",
        "--playground",
        "--json",
        "--worktree",
        "--thread",
        "alpha",
        "--cwd",
        repo_s,
    ];
    let first = result_line(&run(home.path(), &[&args[..], &["hello"]].concat()));
    let ws = &first["workspace"];
    assert_eq!(ws["strategy"], "git_worktree", "{first}");
    assert_eq!(ws["branch"], "agent/alpha");
    assert_eq!(ws["base_commit"], head.as_str());
    assert_eq!(ws["changes"]["files"], serde_json::json!([]));
    let path = ws["path"].as_str().unwrap().to_owned();
    assert!(Path::new(&path).join("README.md").is_file());

    // The second turn runs in the same worktree.
    let second = result_line(&run(home.path(), &[&args[..], &["more"]].concat()));
    assert_eq!(second["workspace"]["path"], path.as_str());

    let show = run(home.path(), &["threads", "show", "alpha", "--cwd", repo_s]);
    assert!(
        stdout(&show).contains(&format!("worktree: {path}")),
        "{}",
        stdout(&show)
    );
    assert!(
        stdout(&show).contains("branch:   agent/alpha"),
        "{}",
        stdout(&show)
    );

    // Uncommitted work: the delete is refused and nothing is removed.
    std::fs::write(Path::new(&path).join("wip.txt"), "work\n").unwrap();
    let out = run(
        home.path(),
        &["threads", "delete", "alpha", "--cwd", repo_s],
    );
    assert_one_line_failure(&out, 1, "uncommitted changes");
    assert!(Path::new(&path).join("wip.txt").is_file());
    let show = run(
        home.path(),
        &["threads", "--json", "show", "alpha", "--cwd", repo_s],
    );
    assert_eq!(
        show.status.code(),
        Some(0),
        "the thread is kept: {}",
        stderr(&show)
    );

    std::fs::remove_file(Path::new(&path).join("wip.txt")).unwrap();
    let out = run(
        home.path(),
        &["threads", "delete", "alpha", "--cwd", repo_s],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!Path::new(&path).exists());
    assert!(
        git(&repo, &["branch", "--list", "agent/alpha"])
            .trim()
            .is_empty()
    );
    assert!(git(&repo, &["status", "--porcelain"]).is_empty());
}

#[test]
fn worktree_outside_a_repository_fails_before_the_agent() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        home.path(),
        &[
            "run",
            "--playground",
            "--json",
            "--worktree",
            "--cwd",
            dir.path().to_str().unwrap(),
            "hi",
        ],
    );
    let last: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(last["ok"], false, "{last}");
    assert!(
        last["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("not inside a git repository"),
        "{last}"
    );
    assert_eq!(last["raw"], Value::Null, "no agent ran: {last}");
}
