//! `agent-adaptor serve` keeps secrets where they are: an agent CLI it
//! starts gets an allowlisted environment (never the server's, which holds
//! the server's own token and whatever else the host set), and credentials
//! in `--base-url` reach neither `/api/info`, the A2A card, nor any event.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::streamjson::CLAUDE;
use serde_json::json;
use support::mock::MockModel;
use support::server::{post_sse, serve_cmd};
use support::stand_in::StandIn;

const SECRETS: [(&str, &str); 3] = [
    ("AWS_SECRET_ACCESS_KEY", "aws-very-secret"),
    ("GITHUB_TOKEN", "ghp_very_secret"),
    ("AGENT_ADAPTOR_TOKEN", "server-token-0123456789"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_started_by_serve_gets_only_the_allowlist() {
    let home = tempfile::tempdir().unwrap();
    let cli = StandIn::new("claude", "claude/print-basic.jsonl");
    let mut cmd = support::command(home.path());
    cmd.env("PATH", cli.path_var()).envs(SECRETS);
    let server = serve_cmd(cmd, &["--driver", "claude"]);
    let client = server.client();
    cli.reset();
    let body = post_sse(
        &client,
        format!("{}/sse", server.base),
        &json!({"prompt": "hi", "sessionKey": "env-1"}),
    )
    .await;
    assert!(body.contains("run_finished"), "{body}");
    let env = cli.recorded_env();
    assert!(env.contains_key("PATH"), "the stand-in ran: {env:?}");
    let outside: Vec<&String> = env
        .keys()
        .filter(|k| !EnvPolicy::default().allows(CLAUDE.env_allowlist, k))
        .collect();
    assert!(outside.is_empty(), "not allowlisted: {outside:?}");
    for (name, value) in SECRETS {
        assert!(!env.contains_key(name), "{name} reached the CLI");
        assert!(
            !env.values().any(|v| v == value),
            "{name}'s value reached the CLI"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credentialed_base_url_is_redacted_in_info_card_and_events() {
    let home = tempfile::tempdir().unwrap();
    let mock = MockModel::start(home.path());
    let url = format!(
        "http://user:pw-very-secret@127.0.0.1:{}/v1?api-key=K-very-secret",
        mock.port
    );
    let server = serve_cmd(
        support::command(home.path()),
        &[
            "--driver",
            "llm",
            "--provider",
            "openai",
            "--base-url",
            &url,
        ],
    );
    let client = server.client();
    let mut shown = String::new();
    for path in ["/api/info", "/.well-known/agent-card.json"] {
        let text = client
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        // The card describes the endpoint (redacted); the page's info
        // names driver and model only.
        assert_eq!(
            text.contains("127.0.0.1"),
            path.ends_with("agent-card.json"),
            "{path}: {text}"
        );
        shown.push_str(&text);
    }
    shown.push_str(
        &post_sse(
            &client,
            format!("{}/sse", server.base),
            &json!({"prompt": "hello", "sessionKey": "url-1"}),
        )
        .await,
    );
    shown.push_str(
        &post_sse(
            &client,
            format!("{}/agui", server.base),
            &json!({"threadId": "u", "runId": "r1",
                   "messages": [{"id": "m", "role": "user", "content": "hello"}]}),
        )
        .await,
    );
    assert!(shown.contains("run_started"), "the raw run ran: {shown}");
    shown.push_str(&server.log_text());
    for secret in ["pw-very-secret", "K-very-secret"] {
        assert!(!shown.contains(secret), "{secret} was shown: {shown}");
    }
}
