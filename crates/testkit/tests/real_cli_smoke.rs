//! Smoke test of the real provider CLIs (tier 3 in ARCHITECTURE.md "Tests:
//! three tiers"): each pinned CLI (installed by `scripts/install-clis`) runs
//! once, offline, against the in-process mock model server, with the recipe
//! from [`agent_adaptor_testkit::clis`]. Each test checks that the CLI
//!
//! * exits 0,
//! * prints the mock's scripted answer in its terminal/result event, and
//! * really talked to the mock: at least one recorded request on the CLI's
//!   protocol path, carrying the dummy API key of the recipe.
//!
//! Compiled only with `--features agent-adaptor-testkit/real-clis`. A missing
//! binary fails the test with a message to run `scripts/install-clis`.
#![cfg(feature = "real-clis")]

use std::process::ExitStatus;
use std::time::Duration;

use agent_adaptor_testkit::clis::{self, CliRecipe, DUMMY_API_KEY, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Reply, Script};
use serde_json::Value;

/// Generous: a cold start takes 1–5 s (Gemini and CodeBuddy load large node
/// bundles), but CI machines are small and run tests in parallel.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The keyword the mock's rule matches; it is in every prompt.
const KEYWORD: &str = "SMOKE";

/// What one CLI run left behind.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    requests: Vec<RecordedRequest>,
}

impl Run {
    /// The stdout lines that parse as JSON objects (the CLIs print only
    /// NDJSON on stdout, but protocols.md §0.2 says to tolerate noise).
    fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter(|line| line.trim_start().starts_with('{'))
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// A readable account of the run, for assertion messages.
    fn report(&self) -> String {
        let paths: Vec<String> = self
            .requests
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        format!(
            "exit status: {}\nrequests seen by the mock: {paths:?}\n--- stdout ---\n{}\n--- stderr (last 4000 bytes) ---\n{}",
            self.status,
            self.stdout,
            tail(&self.stderr, 4000)
        )
    }
}

fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Starts the mock with one rule (`KEYWORD` → `answer`), runs the CLI once
/// with a fresh scratch home, and returns what happened. Panics (the test
/// fails) when the CLI is not installed, cannot start, or outlives
/// [`TIMEOUT`] (then its whole process group is killed).
async fn run_once(recipe: &CliRecipe, answer: &str) -> Run {
    let script = Script::new().on_prompt(KEYWORD, vec![Reply::Text(answer.to_owned())]);
    let server = match MockServer::start(script).await {
        Ok(server) => server,
        Err(e) => panic!("starting the mock server: {e}"),
    };
    let home = match ScratchDir::new(recipe.name) {
        Ok(home) => home,
        Err(e) => panic!("creating a scratch home: {e}"),
    };
    let prompt = format!("{KEYWORD}: reply with the scripted smoke answer.");
    let mut command = match recipe.command(&server.base_url(), home.path(), &prompt) {
        Ok(command) => command,
        // The error says: run scripts/install-clis (or set CLAUDE_BIN etc.).
        Err(e) => panic!("{e}"),
    };
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => panic!("{}: spawning {:?}: {e}", recipe.name, command.as_std()),
    };
    // The recipe puts the child in a process group of its own (pgid = pid).
    let pgid = child.id();
    let waited = tokio::time::timeout(TIMEOUT, child.wait_with_output()).await;
    // Whatever happened, leave no process of this run behind (Gemini
    // relaunches itself as a child node; CLIs spawn helpers).
    clis::kill_process_group(pgid);
    let output = match waited {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => panic!("{}: waiting for the CLI: {e}", recipe.name),
        Err(_) => panic!(
            "{}: not finished (exit and end of stdout/stderr) within {TIMEOUT:?}; killed its process group. Requests seen by the mock: {:?}",
            recipe.name,
            server
                .requests()
                .iter()
                .map(|r| r.path.clone())
                .collect::<Vec<_>>()
        ),
    };
    Run {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        requests: server.requests(),
    }
}

/// Common checks: exit 0, and the mock saw a request on the recipe's path
/// carrying the dummy key in `key_header` (so the CLI talked to the mock, with
/// the recipe's configuration, not to anything else).
fn assert_ran_against_mock(recipe: &CliRecipe, run: &Run, key_header: &str, key_value: &str) {
    assert!(
        run.status.success(),
        "{}: non-zero exit\n{}",
        recipe.name,
        run.report()
    );
    let hits: Vec<&RecordedRequest> = run
        .requests
        .iter()
        .filter(|r| r.method == "POST" && r.path == recipe.request_path)
        .collect();
    assert!(
        !hits.is_empty(),
        "{}: the mock recorded no POST {}\n{}",
        recipe.name,
        recipe.request_path,
        run.report()
    );
    assert!(
        hits.iter().all(|r| r.header(key_header) == Some(key_value)),
        "{}: expected header {key_header}: {key_value} on every model request\n{}",
        recipe.name,
        run.report()
    );
}

/// Claude and CodeBuddy: the terminal `result` line (protocols.md §2.3, §4).
fn claude_like_result(run: &Run) -> Option<Value> {
    run.events().into_iter().rfind(|e| e["type"] == "result")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_answers_from_the_mock() {
    let answer = "smoke-ok-claude";
    let run = run_once(&clis::CLAUDE, answer).await;
    assert_ran_against_mock(&clis::CLAUDE, &run, "x-api-key", DUMMY_API_KEY);
    let result = claude_like_result(&run);
    let ok = result.as_ref().is_some_and(|r| {
        r["subtype"] == "success" && r["is_error"] == false && r["result"] == answer
    });
    assert!(
        ok,
        "claude: no successful result {answer:?}: {result:?}\n{}",
        run.report()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_answers_from_the_mock() {
    let answer = "smoke-ok-codex";
    let run = run_once(&clis::CODEX, answer).await;
    let bearer = format!("Bearer {DUMMY_API_KEY}");
    assert_ran_against_mock(&clis::CODEX, &run, "authorization", &bearer);
    let events = run.events();
    // protocols.md §1.3: the answer is an agent_message item; the turn ends
    // with turn.completed (turn.failed on error).
    let said = events.iter().any(|e| {
        e["type"] == "item.completed"
            && e["item"]["type"] == "agent_message"
            && e["item"]["text"] == answer
    });
    let completed = events.last().is_some_and(|e| e["type"] == "turn.completed");
    assert!(
        said && completed,
        "codex: expected item.completed agent_message {answer:?} and a final turn.completed\n{}",
        run.report()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_answers_from_the_mock() {
    let answer = "smoke-ok-gemini";
    let run = run_once(&clis::GEMINI, answer).await;
    assert_ran_against_mock(&clis::GEMINI, &run, "x-goog-api-key", DUMMY_API_KEY);
    let events = run.events();
    // protocols.md §5: assistant text arrives as `message` deltas; the last
    // line is `result{status:"success"}`.
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "message" && e["role"] == "assistant")
        .filter_map(|e| e["content"].as_str())
        .collect();
    let success = events
        .last()
        .is_some_and(|e| e["type"] == "result" && e["status"] == "success");
    assert!(
        text == answer && success,
        "gemini: expected assistant text {answer:?} (got {text:?}) and a final result{{status:success}}\n{}",
        run.report()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codebuddy_answers_from_the_mock() {
    let answer = "smoke-ok-codebuddy";
    let run = run_once(&clis::CODEBUDDY, answer).await;
    let bearer = format!("Bearer {DUMMY_API_KEY}");
    assert_ran_against_mock(&clis::CODEBUDDY, &run, "authorization", &bearer);
    // CodeBuddy exits 0 even on an API error (protocols.md §0.3), so the
    // result's subtype is what tells success.
    let result = claude_like_result(&run);
    let ok = result.as_ref().is_some_and(|r| {
        r["subtype"] == "success" && r["is_error"] == false && r["result"] == answer
    });
    assert!(
        ok,
        "codebuddy: no successful result {answer:?}: {result:?}\n{}",
        run.report()
    );
}
