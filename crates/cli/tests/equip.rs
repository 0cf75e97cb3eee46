//! The equipment flags of `run` and `serve` (`--instructions`,
//! `--instructions-file`, `--mcp-config`, `--skill`, `--profile`,
//! `--profile-root`) reach the driver, and bad input is a clear error
//! before anything is spawned.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};

use agent_adaptor_testkit::mock::{MockServer, Script};
use support::stand_in::StandIn;
use support::{assert_one_line_failure, command, stderr, stdout};

/// The Cursor fixture the stand-in `agent` replays.
fn cursor_fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../drivers/tests/fixtures/cursor/success.jsonl")
        .display()
        .to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn instructions_and_the_instructions_file_reach_the_llm_system_message() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockServer::start(Script::new())).unwrap();
    let base = format!("{}/v1", mock.base_url());
    let home = tempfile::tempdir().unwrap();
    let file = write(home.path(), "bundle.md", "Always answer in French.");
    let out = command(home.path())
        .args([
            "run",
            "--driver",
            "llm",
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--instructions-file",
            file.to_str().unwrap(),
            "--instructions",
            "Sign every answer with -- bot.",
            "hello",
        ])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = mock.requests();
    let body: serde_json::Value = serde_json::from_slice(&requests[0].body).unwrap();
    let system = &body["messages"][0];
    assert_eq!(system["role"], "system", "{body}");
    assert_eq!(
        system["content"],
        "Always answer in French.\n\nSign every answer with -- bot."
    );
    rt.block_on(mock.shutdown());
}

#[test]
fn bad_equipment_files_are_usage_errors_before_anything_is_spawned() {
    let home = tempfile::tempdir().unwrap();
    let cli = StandIn::new("agent", &cursor_fixture());
    let bad = write(home.path(), "bad.json", r#"{"mcpServers": {"x": {}}}"#);
    let not_json = write(home.path(), "not.json", "mcpServers:");
    let no_skill = home.path().join("no-skill");
    std::fs::create_dir(&no_skill).unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--mcp-config", bad.to_str().unwrap()],
            "server \"x\": a stdio server needs a command",
        ),
        (
            &["--mcp-config", not_json.to_str().unwrap()],
            "not an mcpServers JSON document",
        ),
        (&["--mcp-config", "/nonexistent/mcp.json"], "--mcp-config"),
        (
            &["--instructions-file", "/nonexistent/i.md"],
            "--instructions-file /nonexistent/i.md",
        ),
        (&["--skill", no_skill.to_str().unwrap()], "--skill"),
    ];
    for (flags, needle) in cases {
        let out = command(home.path())
            .env("PATH", cli.path_var())
            .args(["run", "--driver", "cursor"])
            .args(flags)
            .arg("hello")
            .output()
            .unwrap();
        assert_one_line_failure(&out, 2, needle);
        assert!(!cli.ran(), "{flags:?}: nothing was spawned");
    }
}

#[test]
fn what_the_driver_cannot_carry_is_refused_with_cores_message() {
    let home = tempfile::tempdir().unwrap();
    let cli = StandIn::new("agent", &cursor_fixture());
    let skill = home.path().join("review");
    std::fs::create_dir(&skill).unwrap();
    write(
        &skill,
        "SKILL.md",
        "---\nname: review\ndescription: Reviews a change.\n---\nLook for bugs.\n",
    );
    let config = write(
        home.path(),
        "mcp.json",
        r#"{"mcpServers": {"probe": {"command": "srv"}}}"#,
    );
    let cases: [(&[&str], &str); 3] = [
        (&["--instructions", "be nice"], "instructions"),
        (&["--skill", skill.to_str().unwrap()], "skills"),
        (
            &["--mcp-config", config.to_str().unwrap(), "--mcp-strict"],
            "mcp.strict",
        ),
    ];
    for (flags, capability) in cases {
        let out = command(home.path())
            .env("PATH", cli.path_var())
            .args(["run", "--driver", "cursor"])
            .args(flags)
            .arg("hi")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let want = format!("driver cursor cannot carry {capability}");
        assert!(stderr(&out).contains(&want), "{}", stderr(&out));
        assert!(!cli.ran(), "{flags:?}: nothing was spawned");
    }
}

#[test]
fn a_dedicated_profile_gives_the_cli_its_home_with_the_mcp_servers() {
    let home = tempfile::tempdir().unwrap();
    let cli = StandIn::new("agent", &cursor_fixture());
    let config = write(
        home.path(),
        "mcp.json",
        r#"{"mcpServers": {"probe": {"command": "mock-mcp-server", "args": ["--log", "x"]}}}"#,
    );
    let root = home.path().join("profiles");
    let out = command(home.path())
        .env("PATH", cli.path_var())
        .args([
            "run",
            "--driver",
            "cursor",
            "--json",
            "--profile",
            "dedicated",
            "--profile-root",
            root.to_str().unwrap(),
            "--mcp-config",
            config.to_str().unwrap(),
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("Hello from Cursor."));
    let env = cli.recorded_env();
    let cursor_home = root.join("cursor");
    assert_eq!(env["HOME"], cursor_home.display().to_string());
    let written: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(cursor_home.join(".cursor/mcp.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        written["mcpServers"]["probe"]["command"], "mock-mcp-server",
        "{written}"
    );

    // Without --profile-root: under the user's data directory.
    cli.reset();
    let out = command(home.path())
        .env("PATH", cli.path_var())
        .args(["run", "--driver", "cursor", "--profile", "clone", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let default_home = home
        .path()
        .join(".local/share/agent-adaptor/profiles/cursor");
    assert_eq!(
        cli.recorded_env()["HOME"],
        default_home.display().to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_gives_every_run_the_flags_equipment() {
    let home = tempfile::tempdir().unwrap();
    let cli = StandIn::new("agent", &cursor_fixture());
    let config = write(
        home.path(),
        "mcp.json",
        r#"{"mcpServers": {"docs": {"url": "http://127.0.0.1:9/mcp"}}}"#,
    );
    let root = home.path().join("profiles");
    let mut cmd = command(home.path());
    cmd.env("PATH", cli.path_var());
    let server = support::server::serve_cmd(
        cmd,
        &[
            "--driver",
            "cursor",
            "--profile",
            "dedicated",
            "--profile-root",
            root.to_str().unwrap(),
            "--mcp-config",
            config.to_str().unwrap(),
        ],
    );
    let client = server.client();
    for key in ["equip-1", "equip-2"] {
        cli.reset();
        let body = support::server::post_sse(
            &client,
            format!("{}/sse", server.base),
            &serde_json::json!({"prompt": "hi", "sessionKey": key}),
        )
        .await;
        assert!(body.contains("run_finished"), "{body}");
        let cursor_home = root.join("cursor");
        assert_eq!(
            cli.recorded_env()["HOME"],
            cursor_home.display().to_string()
        );
        let written = std::fs::read_to_string(cursor_home.join(".cursor/mcp.json")).unwrap();
        assert!(written.contains("http://127.0.0.1:9/mcp"), "{written}");
    }
}
