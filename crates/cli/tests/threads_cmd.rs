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
