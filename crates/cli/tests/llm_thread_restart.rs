//! The library's LLM agent on a durable thread across a process restart,
//! on each of the four HTTP protocols: turn 1 (`agent-adaptor run`) calls
//! the `list_files` host tool and answers; turn 2, a new process over the
//! same store, sends the whole conversation — the first user message, the
//! tool call, its result and the answer — in its model request. SQLite
//! always; PostgreSQL with the `postgres-tests` feature (PG_TEST_URL, see
//! `scripts/with-postgres`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use serde_json::{Value, json};

use support::{run, stderr, stdout};

/// (provider flag, base path, a key only a request whose history holds the
/// tool call has).
const PROVIDERS: [(&str, &str, &str); 4] = [
    ("openai", "/v1", "\"tool_calls\""),
    ("openai-responses", "/v1", "\"type\":\"function_call\""),
    ("anthropic", "/v1", "\"tool_use\""),
    ("gemini", "/v1beta", "\"functionCall\""),
];

const FIRST: &str = "REMEMBER the marker, please";
const ANSWER: &str = "First answer: one marker file.";
const NEXT: &str = "And what now?";

/// The result line of a `run --json`.
fn result_line(out: &std::process::Output) -> Value {
    let text = stdout(out);
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Two turns of thread `key` in `store`, each in its own process, on every
/// protocol.
fn two_turns_survive_a_restart(store: &str, key: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (provider, path, call_key) in PROVIDERS {
        let mock = rt
            .block_on(MockServer::start(Script::new().on_prompt(
                "REMEMBER",
                vec![
                    Reply::ToolCall {
                        name: "list_files".into(),
                        arguments: json!({"path": "."}),
                    },
                    Reply::Text(ANSWER.into()),
                    Reply::Text("Second answer.".into()),
                ],
            )))
            .unwrap();
        let base = format!("{}{path}", mock.base_url());
        let home = tempfile::tempdir().unwrap();
        let work = home.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("marker-file.txt"), "x").unwrap();
        let work = work.to_string_lossy().into_owned();
        let thread = format!("{key}-{provider}");
        let turn = |prompt: &str| {
            run(
                home.path(),
                &[
                    "run",
                    "--driver",
                    "llm",
                    "--provider",
                    provider,
                    "--base-url",
                    &base,
                    "--json",
                    "--approve",
                    "all",
                    "--cwd",
                    &work,
                    "--thread",
                    &thread,
                    "--store",
                    store,
                    prompt,
                ],
            )
        };
        let out = turn(FIRST);
        assert_eq!(out.status.code(), Some(0), "{provider}: {}", stderr(&out));
        assert_eq!(result_line(&out)["text"], ANSWER, "{provider}");
        let out = turn(NEXT);
        assert_eq!(out.status.code(), Some(0), "{provider}: {}", stderr(&out));
        assert_eq!(result_line(&out)["text"], "Second answer.", "{provider}");

        let requests = mock.requests();
        assert_eq!(requests.len(), 3, "{provider}: two calls, then one");
        let body = String::from_utf8_lossy(&requests[2].body).into_owned();
        let conversation = requests[2].conversation().unwrap();
        assert!(
            conversation.first_user_text.contains(FIRST),
            "{provider}: {body}"
        );
        assert_eq!(conversation.assistant_turns, 2, "{provider}: {body}");
        assert!(body.contains(call_key), "{provider}: the tool call: {body}");
        assert!(
            body.contains("marker-file.txt"),
            "{provider}: the tool result: {body}"
        );
        assert!(body.contains(ANSWER), "{provider}: the answer: {body}");
        assert!(body.contains(NEXT), "{provider}: the new prompt: {body}");
        rt.block_on(mock.shutdown());
    }
}

#[test]
fn a_thread_resumes_the_whole_conversation_after_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("threads.db").display());
    two_turns_survive_a_restart(&store, "restart");
}

#[cfg(feature = "postgres-tests")]
#[test]
fn a_thread_resumes_the_whole_conversation_after_a_restart_on_postgres() {
    let url = std::env::var("PG_TEST_URL").expect(
        "PG_TEST_URL must be set with the postgres-tests feature (run under scripts/with-postgres)",
    );
    let key = format!("restart-{:016x}", rand::random::<u64>());
    two_turns_survive_a_restart(&url, &key);
}
