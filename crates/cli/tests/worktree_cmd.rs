//! `run --worktree`: the run works in a git worktree of the `--cwd`
//! repository; the result line's `workspace` section names the lease and
//! the changes; `threads show` prints the thread's worktree and branch;
//! `threads delete` removes the worktree only when that loses no work.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::stand_in::StandIn;
use support::{assert_one_line_failure, command, run, stderr, stdout};

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

/// `agent-adaptor ARGS` with a stand-in `claude` (a CLI driver: it works
/// in the run's workspace) on `PATH`.
fn run_claude(home: &Path, cli: &StandIn, args: &[&str]) -> std::process::Output {
    command(home)
        .env("PATH", cli.path_var())
        .args(args)
        .output()
        .unwrap()
}

fn result_line(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    serde_json::from_str(stdout(out).lines().last().unwrap()).unwrap()
}

#[test]
fn thread_worktree_is_reported_shown_and_deleted_safely() {
    let home = tempfile::tempdir().unwrap();
    let (_tmp, repo) = temp_repo();
    let repo_s = repo.to_str().unwrap();
    let head = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();

    let cli = StandIn::new("claude", "claude/print-basic.jsonl");
    let args = [
        "run",
        "--driver",
        "claude",
        "--json",
        "--worktree",
        "--thread",
        "alpha",
        "--cwd",
        repo_s,
    ];
    let first = result_line(&run_claude(
        home.path(),
        &cli,
        &[&args[..], &["hello"]].concat(),
    ));
    let ws = &first["workspace"];
    assert_eq!(ws["strategy"], "git_worktree", "{first}");
    assert_eq!(ws["branch"], "agent/alpha");
    assert_eq!(ws["base_commit"], head.as_str());
    assert_eq!(ws["changes"]["files"], serde_json::json!([]));
    let path = ws["path"].as_str().unwrap().to_owned();
    assert!(Path::new(&path).join("README.md").is_file());

    // The second turn runs in the same worktree.
    let second = result_line(&run_claude(
        home.path(),
        &cli,
        &[&args[..], &["more"]].concat(),
    ));
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
    let cli = StandIn::new("claude", "claude/print-basic.jsonl");
    let out = run_claude(
        home.path(),
        &cli,
        &[
            "run",
            "--driver",
            "claude",
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
    assert!(!cli.ran(), "the agent CLI was never started");
}

#[test]
fn worktree_for_a_driver_that_ignores_the_workspace_is_refused() {
    // The playground is the `llm` driver: the model has no file access of
    // its own, so a worktree would be silently dropped.
    let home = tempfile::tempdir().unwrap();
    let (tmp, repo) = temp_repo();
    let out = run(
        home.path(),
        &[
            "run",
            "--playground",
            "--json",
            "--worktree",
            "--cwd",
            repo.to_str().unwrap(),
            "hi",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let last: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(last["ok"], false, "{last}");
    assert!(
        last["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot carry a workspace directory"),
        "{last}"
    );
    assert_eq!(last["raw"], Value::Null, "no agent ran: {last}");
    assert!(
        !tmp.path().join("repo.worktrees").exists(),
        "no worktree was created"
    );
}

/// A temp dir holding `repo/` with one commit.
fn temp_repo() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# demo\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    (tmp, repo)
}

#[test]
fn a_runs_kept_worktree_is_listed_and_removed_only_when_clean() {
    let home = tempfile::tempdir().unwrap();
    let (_tmp, repo) = temp_repo();
    let repo_s = repo.to_str().unwrap();
    let cli = StandIn::new("claude", "claude/print-basic.jsonl");
    let args = [
        "run",
        "--driver",
        "claude",
        "--json",
        "--worktree",
        "--cwd",
        repo_s,
        "hi",
    ];
    let first = result_line(&run_claude(home.path(), &cli, &args));
    let branch = first["workspace"]["branch"].as_str().unwrap().to_owned();
    let path = first["workspace"]["path"].as_str().unwrap().to_owned();
    assert!(branch.starts_with("agent/run_"), "{first}");
    assert!(Path::new(&path).is_dir(), "kept after the run");

    let list = run(
        home.path(),
        &["worktrees", "--json", "list", "--cwd", repo_s],
    );
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let listed: Value = serde_json::from_str(stdout(&list).trim()).unwrap();
    let rows = listed["worktrees"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!(rows[0]["branch"], branch.as_str());
    assert_eq!(rows[0]["holder"], "kept (run ended)");
    let text = run(home.path(), &["worktrees", "list", "--cwd", repo_s]);
    assert!(stdout(&text).contains(&branch), "{}", stdout(&text));

    // Work in it: the remove is refused, the worktree stays.
    std::fs::write(Path::new(&path).join("wip.txt"), "work\n").unwrap();
    let out = run(
        home.path(),
        &["worktrees", "remove", &branch, "--cwd", repo_s],
    );
    assert_one_line_failure(&out, 1, "uncommitted changes");
    assert!(Path::new(&path).join("wip.txt").is_file());

    std::fs::remove_file(Path::new(&path).join("wip.txt")).unwrap();
    let out = run(
        home.path(),
        &["worktrees", "remove", &branch, "--cwd", repo_s],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("removed"), "{}", stdout(&out));
    assert!(!Path::new(&path).exists());
    assert!(git(&repo, &["branch", "--list", &branch]).trim().is_empty());
    let list = run(home.path(), &["worktrees", "list", "--cwd", repo_s]);
    assert!(
        stdout(&list).contains("no agent worktrees"),
        "{}",
        stdout(&list)
    );

    let out = run(
        home.path(),
        &["worktrees", "remove", &branch, "--cwd", repo_s],
    );
    assert_one_line_failure(&out, 1, "no agent worktree");
}

#[test]
fn diff_prints_the_runs_changes() {
    let home = tempfile::tempdir().unwrap();
    let (_tmp, repo) = temp_repo();
    let repo_s = repo.to_str().unwrap();
    let cli = StandIn::new("claude", "claude/print-basic.jsonl");
    let args = [
        "run",
        "--driver",
        "claude",
        "--worktree",
        "--thread",
        "d",
        "--cwd",
        repo_s,
    ];
    let first = result_line(&run_claude(
        home.path(),
        &cli,
        &[&args[..], &["--json", "hi"]].concat(),
    ));
    let path = first["workspace"]["path"].as_str().unwrap().to_owned();
    assert!(
        first["workspace"]["changes"].get("diff").is_none(),
        "no diff unasked"
    );
    // What an agent turn left in the thread's worktree.
    std::fs::write(Path::new(&path).join("notes.txt"), "agent notes\n").unwrap();

    let json = result_line(&run_claude(
        home.path(),
        &cli,
        &[&args[..], &["--json", "--diff", "again"]].concat(),
    ));
    let diff = json["workspace"]["changes"]["diff"].as_str().unwrap();
    assert!(diff.contains("+agent notes"), "{json}");

    let text = run_claude(
        home.path(),
        &cli,
        &[&args[..], &["--diff", "more"]].concat(),
    );
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    assert!(stdout(&text).contains("+agent notes"), "{}", stdout(&text));
    assert!(
        stderr(&text).contains("1 file(s) changed, +1 -0"),
        "{}",
        stderr(&text)
    );

    let out = run(home.path(), &["run", "--playground", "--diff", "hi"]);
    assert_eq!(out.status.code(), Some(2), "--diff needs --worktree");
}
