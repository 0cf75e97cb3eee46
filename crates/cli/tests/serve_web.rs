//! The web chat of `agent-adaptor serve` in headless Chromium against real
//! drivers (support/browser.rs; screenshots in `target/cli-web/`):
//!
//! * `--driver llm` with the testkit mock model: answers render as
//!   markdown with highlighted code and copy buttons, model output stays
//!   inert (raw HTML, `javascript:` links, remote images), and a failed run
//!   shows one error naming its cause, then Retry succeeds;
//! * (`real-clis`) the real Claude Code: a thread is titled by its first
//!   prompt and reloads with the same cards; Stop ends a streaming run
//!   and everything it started is gone within the bound (checked through
//!   `/proc` by PID and start time, and an inherited tag); Esc stops a run
//!   too; a Bash approval card shows the command, and a denial with a
//!   reason shows again after a reload; "Always allow Bash in this
//!   thread" lets the thread's next turn run Bash without a card until it
//!   is revoked from the header's list.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use support::server::serve_cmd;

/// The markdown answer: every construct the page must render or defuse.
const MARKDOWN: &str = "# Plan\n\nHere is **bold** and `inline code`.\n\n\
```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n\
<img src=x onerror=\"window.__xss=1\"><script>window.__xss=2</script>\n\n\
[click me](javascript:window.__xss=3) and [docs](https://example.com/docs)\n\n\
![tracker](http://example.com/pixel.png)\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_render_as_safe_markdown_and_a_failed_turn_can_be_retried() {
    let script = Script::new()
        .on_prompt("MARKDOWN", vec![Reply::Text(MARKDOWN.into())])
        .on_prompt(
            "FLAKY",
            vec![Reply::Attempts(vec![
                Reply::HttpError {
                    status: 400,
                    body: serde_json::Value::Null,
                    retry_after: None,
                },
                Reply::Text("Recovered after a retry.".into()),
            ])],
        );
    let mock = MockServer::start(script).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut cmd = support::command(home.path());
    cmd.env("OPENAI_API_KEY", "sk-test");
    let base_url = format!("{}/v1", mock.base_url());
    let server = serve_cmd(
        cmd,
        &[
            "--driver",
            "llm",
            "--provider",
            "openai",
            "--base-url",
            &base_url,
            "--model",
            "mock-model",
        ],
    );
    support::browser::clear_shots("web-markdown");
    support::browser::clear_shots("web-error");
    let url = server.start_url.clone();
    let report =
        tokio::task::spawn_blocking(move || support::browser::run("web_markdown.mjs", &url))
            .await
            .unwrap();
    assert_eq!(report["errors"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["keywords"][0], "fn", "{report}");
    assert_eq!(report["raw_html_shown"], true);
    assert!(
        support::browser::shots_dir()
            .join("web-markdown-390-dark.png")
            .is_file()
    );
    drop(server);
}

/// The real Claude Code behind the page: the thread is titled by its first
/// prompt and reloads with the same cards; Stop (the page aborts its
/// stream, the server cancels the run) leaves no process of the run
/// behind; Esc stops too; Bash's approval card shows the command.
#[cfg(feature = "real-clis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_thread_is_titled_reloads_the_same_and_stop_leaves_no_cli() {
    use std::io::{BufRead, Write};
    use std::time::Duration;

    use agent_adaptor_testkit::clis::CLAUDE;
    use support::tree::{self, Proc, new_tag, tagged, wait_gone};

    // The mock answers by the conversation's first prompt and the turns
    // so far: the first turn quickly, the second in 300 pieces 100 ms
    // apart (half a minute unless stopped).
    // A thread starting "BASHY" asks to run a command first; one starting
    // "GRANTY" runs Bash in each of its turns.
    let script = Script::new()
        .on_prompt(
            "QUICK",
            vec![
                Reply::Text("A quick **first** answer.".into()),
                Reply::Slow {
                    text: "0123456789abcdef ".repeat(300),
                    chunk_delay: Duration::from_millis(100),
                },
            ],
        )
        .on_prompt(
            "BASHY",
            vec![
                Reply::ToolCall {
                    name: "Bash".into(),
                    arguments: serde_json::json!({
                        "command": "touch web-approval.txt",
                        "description": "Create a file"
                    }),
                },
                Reply::Text("Understood, I did not run it.".into()),
            ],
        )
        .on_prompt("GRANTY", granty_replies());
    let mock = MockServer::start(script).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let env = CLAUDE.prepare(&mock.base_url(), home.path()).unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(CLAUDE.binary().unwrap(), bin.join("claude")).unwrap();
    let tag = new_tag();
    // The CLI gets the recipe's offline settings and the tag, one `--env`
    // each (serve passes nothing else of its environment).
    let mut args = vec!["--driver", "claude", "--model", CLAUDE.model];
    let names: Vec<String> = env
        .iter()
        .map(|(k, _)| k.clone())
        .chain(
            [
                "AA_TEST_TAG",
                "CLAUDE_CODE_MAX_RETRIES",
                "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK",
            ]
            .map(String::from),
        )
        .collect();
    for name in &names {
        args.extend(["--env", name.as_str()]);
    }
    let mut cmd = support::command(home.path());
    cmd.envs(env.iter().cloned())
        .env(
            "PATH",
            format!("{}:{}", bin.display(), support::stand_in::SYSTEM_PATH),
        )
        .env("AGENT_ADAPTOR_STATE_DIR", home.path().join("state"))
        .env("AA_TEST_TAG", &tag)
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        .env("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1")
        .current_dir(home.path().join("work"));
    let server = serve_cmd(cmd, &args);
    let server_pid = server.child.id();
    support::browser::clear_shots("web-stop");
    support::browser::clear_shots("web-approval");
    support::browser::clear_shots("web-always-allowed");
    let url = server.start_url.clone();
    let (report, streamed, left) = tokio::task::spawn_blocking(move || {
        let mut child = support::browser::spawn("web_stop.mjs", &url);
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let mut lines = Vec::new();
        let mut streamed = Vec::new();
        let mut left = Vec::new();
        loop {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 {
                break;
            }
            lines.push(line.clone());
            if line.contains(r#""phase":"streaming""#) {
                // Everything the streaming run started, by PID and start
                // time: the CLI under the server and whatever carries the tag.
                streamed = tree::children(server_pid);
                streamed.extend(
                    tagged(&tag)
                        .into_iter()
                        .filter(|p| *p != server_pid)
                        .filter_map(|pid| {
                            Some(Proc {
                                pid,
                                start: tree::stat(pid)?.start,
                            })
                        }),
                );
                let mut stdin = child.stdin.take().unwrap();
                stdin.write_all(b"go\n").unwrap();
                drop(stdin);
                // The page stops the run now; all of it is gone within
                // the bound.
                left = wait_gone(|| streamed.iter().copied().filter(Proc::alive).collect());
                break;
            }
        }
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        let mut out = child.wait_with_output().unwrap();
        out.stdout = format!("{}{rest}", lines.concat()).into_bytes();
        (support::browser::report(&out), streamed, left)
    })
    .await
    .unwrap();
    assert!(
        !streamed.is_empty(),
        "a Claude Code process streamed: {report}"
    );
    assert!(left.is_empty(), "Stop left the run's processes: {left:?}");
    assert_eq!(report["title"], "QUICK first prompt", "{report}");
    assert!(
        report["thread_item"]
            .as_str()
            .unwrap()
            .starts_with("QUICK first prompt"),
        "{report}"
    );
    assert!(
        !mock.requests().is_empty(),
        "Claude Code talked to the mock model"
    );
    // Every GRANTY turn's Bash really ran: the granted turn two included.
    for n in 1..=3 {
        let file = home.path().join("work").join(format!("granted-{n}.txt"));
        assert!(file.exists(), "Bash ran in GRANTY turn {n}: {report}");
    }
    drop(server);
}

/// The "GRANTY" thread: every turn runs Bash (`touch granted-N.txt`), then
/// says so.
#[cfg(feature = "real-clis")]
fn granty_replies() -> Vec<Reply> {
    (1..=3)
        .flat_map(|n| {
            [
                Reply::ToolCall {
                    name: "Bash".into(),
                    arguments: serde_json::json!({
                        "command": format!("touch granted-{n}.txt"),
                        "description": "Create a file"
                    }),
                },
                Reply::Text(format!("Ran it, turn {n}.")),
            ]
        })
        .collect()
}
