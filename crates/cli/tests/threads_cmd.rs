//! `agent-adaptor threads list|show|fork|delete` on a SQLite store, and
//! the web chat's thread API over the same store.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use support::{assert_one_line_failure, run, stderr, stdout};

fn json(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    serde_json::from_str(stdout(out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

#[test]
fn threads_are_listed_shown_forked_and_deleted() {
    let home = tempfile::tempdir().unwrap();
    // The default store ($AGENT_ADAPTOR_HOME/threads.db), as `run` uses it.
    let out = run(
        home.path(),
        &["run", "--playground", "--thread", "alpha", "hello"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("threads: sqlite "),
        "{}",
        stderr(&out)
    );

    let list = json(&run(home.path(), &["threads", "--json", "list"]));
    let threads = list["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{list}");
    assert_eq!(threads[0]["key"], "alpha");
    assert_eq!(threads[0]["driver"], "llm");

    let show = json(&run(home.path(), &["threads", "show", "alpha", "--json"]));
    let messages = show["messages"].as_array().unwrap();
    assert_eq!(
        messages[0],
        serde_json::json!({"role": "user", "text": "hello"})
    );
    assert!(messages.iter().any(|m| m["role"] == "assistant"));

    let text = run(home.path(), &["threads", "show", "alpha"]);
    assert!(stdout(&text).contains("driver:   llm"), "{}", stdout(&text));

    json(&run(
        home.path(),
        &["threads", "--json", "fork", "alpha", "beta"],
    ));
    let out = run(home.path(), &["threads", "fork", "alpha", "beta"]);
    assert_one_line_failure(&out, 1, "already exists");
    // The fork continues from alpha's conversation.
    let out = run(
        home.path(),
        &["run", "--playground", "--json", "--thread", "beta", "more"],
    );
    let last: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert!(
        last["text"]
            .as_str()
            .unwrap()
            .starts_with("This thread continues"),
        "{last}"
    );

    let list = json(&run(home.path(), &["threads", "--json", "list"]));
    let keys: Vec<&str> = list["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["beta", "alpha"], "newest first");

    let deleted = json(&run(home.path(), &["threads", "--json", "delete", "alpha"]));
    assert!(deleted["deleted_records"].as_u64().unwrap() >= 1);
    let out = run(home.path(), &["threads", "show", "alpha"]);
    assert_one_line_failure(&out, 1, "no thread \"alpha\"");
    let out = run(home.path(), &["threads", "delete", "alpha"]);
    assert_one_line_failure(&out, 1, "no thread \"alpha\"");
    let list = json(&run(home.path(), &["threads", "--json", "list"]));
    assert_eq!(list["threads"].as_array().unwrap().len(), 1);
}

/// Parse every line of `out` (exit 0) as JSON.
fn json_lines(out: &std::process::Output) -> Vec<Value> {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn run_records_its_events_and_threads_show_replays_them() {
    let home = tempfile::tempdir().unwrap();
    let first = json_lines(&run(
        home.path(),
        &["run", "--playground", "--json", "--thread", "t", "hello"],
    ));
    let second = json_lines(&run(
        home.path(),
        &["run", "--playground", "--json", "--thread", "t", "again"],
    ));
    // `run --json` ends with its result line, which is no event.
    let (first, second) = (&first[..first.len() - 1], &second[..second.len() - 1]);

    let all = json_lines(&run(
        home.path(),
        &["threads", "show", "t", "--events", "--json"],
    ));
    assert_eq!(all.len(), first.len() + second.len());
    for (i, line) in all.iter().enumerate() {
        assert_eq!(line["cursor"].as_u64(), Some(i as u64 + 1), "{line}");
    }
    assert_eq!(all[0]["prompt"], "hello");
    assert_eq!(all[first.len()]["prompt"], "again");
    // The same lines as `run --json`, each with its cursor (and a run's
    // first with its prompt).
    let bare: Vec<Value> = all
        .iter()
        .map(|line| {
            let mut line = line.clone();
            let fields = line.as_object_mut().unwrap();
            fields.remove("cursor");
            fields.remove("prompt");
            line
        })
        .collect();
    let streamed: Vec<Value> = first.iter().chain(second).cloned().collect();
    assert_eq!(bare, streamed);

    let since = first.len() as u64;
    let suffix = json_lines(&run(
        home.path(),
        &[
            "threads",
            "show",
            "t",
            "--events",
            "--json",
            "--since",
            &since.to_string(),
        ],
    ));
    assert_eq!(suffix, all[first.len()..]);
    let tail = json_lines(&run(
        home.path(),
        &["threads", "show", "t", "--events", "--json", "--tail", "3"],
    ));
    assert_eq!(tail, all[all.len() - 3..]);
    let text = run(home.path(), &["threads", "show", "t", "--events"]);
    assert!(stdout(&text).contains("user: again"), "{}", stdout(&text));
    assert!(stdout(&text).contains("run.finished"), "{}", stdout(&text));
}

#[test]
fn keep_events_bounds_the_log_and_zero_records_nothing() {
    let home = tempfile::tempdir().unwrap();
    for prompt in ["one", "two"] {
        let out = run(
            home.path(),
            &[
                "run",
                "--playground",
                "--thread",
                "kept",
                "--keep-events",
                "4",
                prompt,
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let kept = json_lines(&run(
        home.path(),
        &["threads", "show", "kept", "--events", "--json"],
    ));
    assert_eq!(kept.len(), 4);
    assert_eq!(kept.last().unwrap()["type"], "run.finished");
    assert!(
        kept[0]["cursor"].as_u64().unwrap() > 4,
        "cursors keep growing"
    );

    let out = run(
        home.path(),
        &[
            "run",
            "--playground",
            "--thread",
            "off",
            "--keep-events",
            "0",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let none = run(
        home.path(),
        &["threads", "show", "off", "--events", "--json"],
    );
    assert!(json_lines(&none).is_empty());
    let out = run(home.path(), &["threads", "show", "off", "--since", "3"]);
    assert_ne!(out.status.code(), Some(0), "--since needs --events");
}

#[test]
fn revoking_a_tool_that_is_not_allowed_says_so() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["threads", "revoke", "nobody", "Bash"]);
    assert_one_line_failure(
        &out,
        1,
        "\"Bash\" is not always allowed in thread \"nobody\"",
    );
    // A thread with neither a record nor grants is unknown to `show`.
    let out = run(home.path(), &["threads", "show", "nobody"]);
    assert_one_line_failure(&out, 1, "no thread \"nobody\"");
}
