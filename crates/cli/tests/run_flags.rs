//! `run`'s honest flags: a thread reused by another driver is refused
//! (with the commands that go on) or, with `--new-session`, replaced
//! visibly; `--json=events|result` and `--no-raw` print exactly what they
//! say; `--approve none` is a policy decision; `--schema` puts the answer
//! on stdout once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::stand_in::StandIn;
use support::{run, stderr, stdout};

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// `run --driver claude` with the stand-in CLI.
fn run_claude(home: &Path, cli: &StandIn, args: &[&str]) -> Output {
    support::command(home)
        .env("PATH", cli.path_var())
        .args(["run", "--driver", "claude"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_thread_of_another_driver_is_refused_then_replaced_with_new_session() {
    let home = tempfile::tempdir().unwrap();
    let cli = StandIn::new("claude", "claude/print-basic.jsonl");
    let out = run(
        home.path(),
        &["run", "--playground", "--thread", "t1", "hello"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let out = run_claude(home.path(), &cli, &["--thread", "t1", "hi"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("thread t1 holds a llm session"), "{err}");
    assert!(
        err.contains("agent-adaptor run --driver llm --thread t1 \"…\""),
        "{err}"
    );
    assert!(
        err.contains("agent-adaptor run --driver claude --thread t1 --new-session \"…\""),
        "{err}"
    );
    assert!(!cli.ran(), "the CLI was started");

    // With --json the refusal is the result line, the last stdout line.
    let out = run_claude(home.path(), &cli, &["--json", "--thread", "t1", "hi"]);
    let lines = json_lines(&stdout(&out));
    let last = lines.last().unwrap();
    assert_eq!(
        (&last["type"], &last["ok"]),
        (&"result".into(), &false.into())
    );
    assert!(!cli.ran());

    let out = run_claude(
        home.path(),
        &cli,
        &["--thread", "t1", "--new-session", "hi"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("new session on thread t1: the previous llm session is archived"),
        "{err}"
    );
    assert!(
        err.contains("`agent-adaptor threads show t1` lists it"),
        "{err}"
    );

    let show = run(home.path(), &["threads", "show", "t1", "--json"]);
    let show: Value = serde_json::from_str(stdout(&show).trim()).unwrap();
    let sessions: Vec<(&str, &str)> = show["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["status"].as_str().unwrap(), s["driver"].as_str().unwrap()))
        .collect();
    assert_eq!(sessions, [("active", "claude"), ("archived", "llm")]);
    let text = stdout(&run(home.path(), &["threads", "show", "t1"]));
    assert!(text.contains("archived llm"), "{text}");
}

#[test]
fn json_filters_print_what_they_name() {
    let home = tempfile::tempdir().unwrap();
    let all = json_lines(&stdout(&run(
        home.path(),
        &["run", "--playground", "--json", "hello"],
    )));
    assert_eq!(all.last().unwrap()["type"], "result");

    let out = run(
        home.path(),
        &["run", "--playground", "--json=result", "hello"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "result");
    assert_eq!(lines[0]["ok"], true);

    let out = run(
        home.path(),
        &["run", "--playground", "--json=events", "hello"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    assert!(lines.iter().all(|l| l["type"] != "result"), "{lines:?}");
    assert_eq!(lines.first().unwrap()["type"], "run.started");
    assert_eq!(lines.last().unwrap()["type"], "run.finished");

    // A failure before the start: the result line alone, also for =result.
    let out = run(
        home.path(),
        &["run", "--json=result", "--cwd", "/nonexistent", "x"],
    );
    let lines = json_lines(&stdout(&out));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["failure"]["reason"], "invalid_arguments");
    let out = run(
        home.path(),
        &["run", "--json=events", "--cwd", "/nonexistent", "x"],
    );
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
}

#[test]
fn no_raw_leaves_out_the_process_output_lines() {
    let home = tempfile::tempdir().unwrap();
    let cli = StandIn::new("claude", "claude/print-basic.jsonl");
    let raw = |l: &Value| l["type"] == "process.stdout" || l["type"] == "process.stderr";
    let out = run_claude(home.path(), &cli, &["--json", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let with = json_lines(&stdout(&out));
    let raw_lines = with.iter().filter(|l| raw(l)).count();
    assert!(raw_lines > 0, "the capture has raw lines");

    let out = run_claude(home.path(), &cli, &["--json", "--no-raw", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let without = json_lines(&stdout(&out));
    assert!(!without.iter().any(raw), "{without:?}");
    assert_eq!(without.len(), with.len() - raw_lines);
    assert!(without.iter().any(|l| l["type"] == "process.spawn"));
    assert_eq!(without.last().unwrap()["type"], "result");
}

#[test]
fn approve_none_is_recorded_as_a_policy_decision() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let work_arg = work.to_string_lossy().into_owned();
    let out = run(
        home.path(),
        &[
            "run",
            "--playground",
            "--json",
            "--approve",
            "none",
            "--cwd",
            &work_arg,
            "hi",
        ],
    );
    let lines = json_lines(&stdout(&out));
    let resolved: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "notice.approval.resolved")
        .collect();
    assert!(!resolved.is_empty(), "{lines:?}");
    assert!(
        resolved
            .iter()
            .all(|n| n["data"]["decided_by"] == "policy" && n["data"]["result"] == "rejected"),
        "{resolved:?}"
    );
}

#[test]
fn schema_puts_the_structured_answer_on_stdout_once() {
    let home = tempfile::tempdir().unwrap();
    let schema = home.path().join("answer.schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","properties":{"answer":{"type":"string"},"score":{"type":"integer","minimum":1}},"required":["answer","score"],"additionalProperties":false}"#,
    )
    .unwrap();
    let schema_arg = schema.to_string_lossy().into_owned();
    let out = run(
        home.path(),
        &["run", "--playground", "--schema", &schema_arg, "rate this"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // What `| jq` reads: exactly one JSON value.
    let text = stdout(&out);
    let values: Vec<Value> = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}: {text:?}"));
    assert_eq!(
        values,
        [serde_json::json!({"answer": "playground", "score": 1})]
    );
    assert!(stderr(&out).contains("structured output (valid: true)"));
}
