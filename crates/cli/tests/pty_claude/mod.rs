//! The real Claude Code at the terminal (offline, against the testkit mock
//! model, which scripts a `Bash` call): the approval prompt shows the exact
//! command before the answer; a denial renders ✗ and its reason reaches
//! the model; `a` in a `--thread` run always allows the tool in that
//! thread (the next turn runs it without asking, `threads show` lists the
//! grant, `threads revoke` removes it and the turn after asks again); a
//! thread the llm driver wrote is refused until `--new-session`;
//! `--approve none` is a policy denial (✗); `--json=result --no-raw` is one
//! line; a mistyped driver gets the closest name.
//!
//! Compiled only with `--features agent-adaptor-cli/real-clis`; the binary
//! comes from `scripts/install-clis` (`tests/clis/bin-paths.env`).

use std::path::Path;

use agent_adaptor_testkit::clis::CLAUDE;
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use serde_json::json;

use super::Term;
use super::support;

/// The prompt keyword the mock's script answers.
const KEYWORD: &str = "TERMTOOL";
/// The command the model asks to run; its output is not in its text.
const COMMAND: &str = "touch made-by-tool.txt && printf '%s-%s\\n' hi from-tool";
/// What the command prints.
const OUTPUT: &str = "hi-from-tool";
/// The file the command creates.
const TOUCHED: &str = "made-by-tool.txt";

/// The mock model and an isolated home holding a `claude` on `PATH`.
struct Claude {
    rt: tokio::runtime::Runtime,
    /// Taken at drop, to shut it down.
    mock: Option<MockServer>,
    home: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Claude {
    /// `turns` turns of: the model calls Bash with [`COMMAND`], then
    /// answers "Done.".
    fn start(turns: usize) -> Claude {
        let mut replies = Vec::new();
        for _ in 0..turns {
            replies.push(Reply::ToolCall {
                name: "Bash".into(),
                arguments: json!({"command": COMMAND, "description": "Say hi"}),
            });
            replies.push(Reply::Text("Done.".into()));
        }
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mock = rt
            .block_on(MockServer::start(Script::new().on_prompt(KEYWORD, replies)))
            .unwrap();
        let home = tempfile::tempdir().unwrap();
        let mut env = CLAUDE.prepare(&mock.base_url(), home.path()).unwrap();
        let bin = home.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(home.path().join("work")).unwrap();
        let binary = CLAUDE.binary().unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(binary, bin.join("claude")).unwrap();
        env.push((
            "PATH".into(),
            format!("{}:{}", bin.display(), support::stand_in::SYSTEM_PATH),
        ));
        env.push(("CLAUDE_CODE_MAX_RETRIES".into(), "0".into()));
        env.push((
            "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK".into(),
            "1".into(),
        ));
        Claude {
            rt,
            mock: Some(mock),
            home,
            env,
        }
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    /// The mock model's base URL.
    fn mock_url(&self) -> String {
        self.mock
            .as_ref()
            .map(MockServer::base_url)
            .unwrap_or_default()
    }

    /// How many requests the mock model has answered.
    fn requests(&self) -> usize {
        self.mock.as_ref().map_or(0, |m| m.requests().len())
    }

    /// `agent-adaptor run --driver claude … PROMPT` in a terminal, with
    /// `extra` arguments before the prompt.
    fn run(&self, extra: &[&str], prompt: &str) -> Term {
        let mut args = vec![
            "run",
            "--driver",
            "claude",
            "--model",
            CLAUDE.model,
            "--inherit-env",
            "--cwd",
            "work",
        ];
        args.extend_from_slice(extra);
        args.push(prompt);
        let env: Vec<(&str, String)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        Term::spawn(self.home(), &args, &env)
    }

    /// The text of every tool result the model was sent.
    fn tool_results(&self) -> Vec<String> {
        self.mock
            .as_ref()
            .map(MockServer::requests)
            .unwrap_or_default()
            .iter()
            .filter_map(|r| r.json())
            .flat_map(|body| {
                body["messages"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                    .filter(|c| c["type"] == "tool_result")
                    .map(|c| c["content"].to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// `agent-adaptor threads ARGS` in the same home.
    fn threads(&self, args: &[&str]) -> String {
        let mut all = vec!["threads"];
        all.extend_from_slice(args);
        let out = support::run(self.home(), &all);
        assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
        support::stdout(&out)
    }
}

impl Drop for Claude {
    fn drop(&mut self) {
        if let Some(mock) = self.mock.take() {
            self.rt.block_on(mock.shutdown());
        }
    }
}

/// Everything before the first occurrence of `needle` in `seen`.
fn before<'a>(seen: &'a str, needle: &str) -> &'a str {
    &seen[..seen
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in:\n{seen}"))]
}

#[test]
fn the_prompt_shows_the_command_and_a_denial_is_a_cross_whose_reason_reaches_the_model() {
    let claude = Claude::start(1);
    let mut term = claude.run(&[], &format!("{KEYWORD} say hi"));
    term.expect("Allow Bash");
    // The exact command is on screen before the choices, before any answer.
    term.expect("[y] allow once  [n] deny");
    let asked = before(&term.seen, "[y] allow once").to_owned();
    assert!(asked.contains(&format!("$ {COMMAND}")), "{asked}");
    assert!(
        !asked.contains("[a] always"),
        "no thread, no always: {asked}"
    );
    term.send(b"not on my machine\r");
    term.expect("approval rejected");
    term.expect("Done.");
    assert_eq!(term.wait(), 0, "{}", term.seen);
    let seen = &term.seen;
    assert!(seen.contains("\u{1b}[31m✗\u{1b}[0m"), "a red ✗: {seen}");
    assert!(!seen.contains("✓"), "no ✓ for a denied call: {seen}");
    assert!(
        !claude.home().join("work").join(TOUCHED).exists(),
        "the denied command did not run"
    );
    let results = claude.tool_results();
    assert!(
        results.iter().any(|r| r.contains("not on my machine")),
        "the reason reaches the model: {results:?}"
    );
}

#[test]
fn always_allow_in_a_thread_skips_the_prompt_until_revoked() {
    let claude = Claude::start(3);
    let thread = ["--thread", "grant-t"];

    // Turn 1: asked; `a` approves and grants.
    let mut term = claude.run(&thread, &format!("{KEYWORD} turn one"));
    term.expect("[a] always allow Bash in this thread");
    term.send(b"a\r");
    term.expect("Bash is now always allowed in this thread");
    assert_eq!(term.wait(), 0, "{}", term.seen);
    assert!(
        term.seen.contains(OUTPUT),
        "the command's output: {}",
        term.seen
    );
    assert!(claude.home().join("work").join(TOUCHED).exists());

    // Turn 2: not asked (a prompt would wait for stdin until the deadline).
    let mut term = claude.run(&thread, "turn two");
    term.expect("Bash is always allowed in this thread");
    assert_eq!(term.wait(), 0, "{}", term.seen);
    assert!(!term.seen.contains("[y] allow once"), "{}", term.seen);
    assert!(term.seen.contains("✓"), "{}", term.seen);

    // Shown, then revoked.
    let shown = claude.threads(&["show", "grant-t"]);
    assert!(shown.contains("always allowed: Bash"), "{shown}");
    claude.threads(&["revoke", "grant-t", "Bash"]);
    let shown = claude.threads(&["show", "grant-t"]);
    assert!(shown.contains("always allowed: (none)"), "{shown}");

    // Turn 3: asked again.
    let mut term = claude.run(&thread, "turn three");
    term.expect("[y] allow once");
    term.send(b"y\r");
    term.expect("approval approved");
    assert_eq!(term.wait(), 0, "{}", term.seen);
}

/// A thread the llm driver wrote, reused with `--driver claude` at the
/// terminal: refused, naming the commands that go on, before Claude Code
/// starts; with `--new-session` the run goes on and the terminal says the
/// llm session was archived.
#[test]
fn a_thread_another_driver_wrote_is_refused_at_the_terminal_until_new_session() {
    let claude = Claude::start(1);
    let llm_base = format!("{}/v1", claude.mock_url());
    let out = support::command(claude.home())
        .envs(claude.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .args([
            "run",
            "--driver",
            "llm",
            "--provider",
            "openai",
            "--base-url",
            &llm_base,
            "--approve",
            "none",
            "--thread",
            "t1",
            "first turn",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
    let asked = claude.requests();

    let mut term = claude.run(&["--thread", "t1"], "second turn");
    let code = term.wait();
    assert_eq!(code, 1, "{}", term.seen);
    assert!(
        term.seen.contains("thread t1 holds a llm session"),
        "{}",
        term.seen
    );
    assert!(
        term.seen
            .contains("agent-adaptor run --driver llm --thread t1")
            && term.seen.contains("--thread t1 --new-session"),
        "{}",
        term.seen
    );
    assert_eq!(
        claude.requests(),
        asked,
        "Claude Code never reached the model"
    );

    let mut term = claude.run(&["--thread", "t1", "--new-session"], KEYWORD);
    term.expect("the previous llm session is archived");
    term.expect("[y] allow once");
    term.send(b"y\r");
    assert_eq!(term.wait(), 0, "{}", term.seen);
    assert!(claude.home().join("work").join(TOUCHED).exists());
}

/// `--approve none` at a terminal: the request is denied by the policy
/// (said so, and ✗), never counted as a person's answer, and nothing runs.
#[test]
fn approve_none_at_the_terminal_is_a_policy_denial_shown_as_a_cross() {
    let claude = Claude::start(1);
    let mut term = claude.run(&["--approve", "none"], &format!("{KEYWORD} say hi"));
    term.expect("Done.");
    assert_eq!(term.wait(), 0, "{}", term.seen);
    let seen = &term.seen;
    assert!(
        seen.contains("approval rejected (decided by policy)"),
        "{seen}"
    );
    assert!(!seen.contains("[y] allow once"), "nobody was asked: {seen}");
    assert!(seen.contains("\u{1b}[31m✗\u{1b}[0m"), "a red ✗: {seen}");
    assert!(!claude.home().join("work").join(TOUCHED).exists());
}

/// `--json=result --no-raw` at a terminal: the terminal shows one line,
/// the result line, whatever the CLI printed on the way.
#[test]
fn json_result_at_the_terminal_is_one_line() {
    let claude = Claude::start(1);
    let mut term = claude.run(
        &["--approve", "all", "--json=result", "--no-raw"],
        &format!("{KEYWORD} say hi"),
    );
    assert_eq!(term.wait(), 0, "{}", term.seen);
    let lines: Vec<&str> = term
        .seen
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "{}", term.seen);
    let result: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["ok"], true);
    assert!(claude.home().join("work").join(TOUCHED).exists());
}

/// A mistyped driver at a terminal: refused before anything starts, with
/// the closest name.
#[test]
fn a_mistyped_driver_gets_a_suggestion() {
    let claude = Claude::start(0);
    let mut term = Term::spawn(claude.home(), &["run", "--driver", "claud", "hi"], &[]);
    assert_eq!(term.wait(), 2, "{}", term.seen);
    assert!(
        term.seen.contains("did you mean 'claude'?"),
        "{}",
        term.seen
    );
    assert_eq!(claude.requests(), 0);
}
