//! `agent-adaptor run` without a terminal: `--json` lines, approvals by
//! policy, threads, structured output, and driver selection (playground
//! when nothing is usable; never a silent fallback).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use support::{assert_one_line_failure, run, stderr, stdout};

/// Parse every stdout line as JSON (panics on a line that does not parse).
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn of_type<'a>(lines: &'a [Value], ty: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == ty).collect()
}

#[test]
fn json_lines_parse_and_sequences_increase() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["run", "--playground", "--json", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    assert!(lines.len() > 10, "{} lines", lines.len());
    assert_eq!(lines[0]["type"], "run.started");
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["ok"], true);
    assert!(
        last["text"]
            .as_str()
            .unwrap()
            .starts_with("Hello! I am the agent-adaptor playground")
    );
    assert_eq!(last["failure"], Value::Null);
    assert!(
        last["usage"]["input_tokens"].as_u64().unwrap() > 0,
        "{last}"
    );
    assert_eq!(last["raw"]["terminal"], "done");
    assert!(last["raw"]["stdout_bytes"].is_u64());

    let events = &lines[..lines.len() - 1];
    let run_id = events[0]["run_id"].as_str().unwrap();
    let mut previous = 0;
    for e in events {
        assert_eq!(e["run_id"], run_id, "{e}");
        let seq = e["sequence"].as_u64().unwrap();
        assert!(seq > previous, "sequence {seq} after {previous}");
        previous = seq;
    }
    assert_eq!(events.last().unwrap()["type"], "run.finished");

    // stdin is not a terminal: the approval is denied by policy, visibly.
    let starts = of_type(events, "tool_call.start");
    assert_eq!(starts.len(), 1);
    assert_eq!(starts[0]["name"], "list_files");
    let resolved = of_type(events, "notice.approval.resolved");
    assert_eq!(resolved.len(), 1, "{events:?}");
    assert_eq!(resolved[0]["data"]["result"], "rejected");
    let result = of_type(events, "tool_result");
    assert!(
        result[0]["result"]
            .as_str()
            .unwrap()
            .contains("did not allow")
    );
    assert!(!of_type(events, "thinking.content").is_empty());
    assert!(
        of_type(events, "text.content").len() > 3,
        "the answer streams"
    );
}

#[test]
fn approve_all_runs_the_tool_in_the_working_directory() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(work.join("Cargo.toml"), "").unwrap();
    let work_arg = work.to_string_lossy().into_owned();
    let out = run(
        home.path(),
        &[
            "run",
            "--playground",
            "--json",
            "--approve",
            "all",
            "--cwd",
            &work_arg,
            "hi",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    let result = of_type(&lines, "tool_result");
    assert_eq!(result[0]["result"], "Cargo.toml\nsrc/");
    assert_eq!(
        of_type(&lines, "notice.approval.resolved")[0]["data"]["result"],
        "approved"
    );
}

#[test]
fn a_thread_continues_across_runs() {
    let home = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", home.path().join("t.db").display());
    let args = |prompt: &'static str| {
        vec![
            "run".to_owned(),
            "--playground".into(),
            "--json".into(),
            "--thread".into(),
            "tenant/1".into(),
            "--store".into(),
            store.clone(),
            prompt.into(),
        ]
    };
    let first: Vec<String> = args("first");
    let out = run(
        home.path(),
        &first.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    assert_eq!(lines[0]["thread_key"], "tenant/1");
    let session = lines.last().unwrap()["session"]
        .as_str()
        .unwrap()
        .to_owned();

    let second: Vec<String> = args("second");
    let out = run(
        home.path(),
        &second.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    let last = lines.last().unwrap();
    assert!(
        last["text"]
            .as_str()
            .unwrap()
            .starts_with("This thread continues"),
        "the model saw the earlier turn: {last}"
    );
    assert_eq!(last["session"], session.as_str());
    // The follow-up turn made no tool call.
    assert!(of_type(&lines, "tool_call.start").is_empty());
}

#[test]
fn a_schema_file_requests_structured_output() {
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
        &[
            "run",
            "--playground",
            "--json",
            "--schema",
            &schema_arg,
            "rate this",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    let last = lines.last().unwrap();
    assert_eq!(last["structured_output"]["valid"], true, "{last}");
    assert_eq!(
        last["structured_output"]["value"],
        serde_json::json!({"answer": "playground", "score": 1})
    );
}

#[test]
fn with_no_driver_and_nothing_usable_the_playground_runs_and_says_so() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["run", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("playground: llm driver against the built-in scripted model server")
    );
    assert!(stdout(&out).starts_with("Hello! I am the agent-adaptor playground"));
    assert!(
        stderr(&out).contains("tokens in"),
        "a usage line: {}",
        stderr(&out)
    );
}

#[test]
fn an_explicit_driver_never_falls_back_to_the_playground() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["run", "--driver", "claude", "hello"]);
    assert_one_line_failure(&out, 1, "`claude` was not found on PATH");
    let out = run(
        home.path(),
        &["run", "--driver", "llm", "--provider", "openai", "hello"],
    );
    assert_one_line_failure(&out, 1, "OPENAI_API_KEY is not set");
    assert!(stdout(&out).is_empty());
}

#[test]
fn the_llm_driver_talks_to_any_openai_compatible_server() {
    // `mock-model` is the same scripted server; --base-url points the llm
    // driver at it, with no key needed.
    let home = tempfile::tempdir().unwrap();
    let port = support::free_port();
    let mut server = support::command(home.path())
        .args(["mock-model", "--addr", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    {
        use std::io::BufRead;
        let stdout = server.stdout.as_mut().unwrap();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
    }
    assert!(
        line.starts_with("mock model server: http://127.0.0.1:"),
        "{line}"
    );
    let base = format!("http://127.0.0.1:{port}/v1");
    let out = run(
        home.path(),
        &[
            "run",
            "--driver",
            "llm",
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--json",
            "--approve",
            "all",
            "hi",
        ],
    );
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    assert_eq!(lines.last().unwrap()["provider"], "openai");
    assert_eq!(of_type(&lines, "tool_call.start").len(), 1);
}
