//! A `serve` instance SIGKILLed during 20 concurrent runs: each run's CLI
//! dies with the server (parent death signal) within a bounded wait, and
//! once the next `serve` has started (its sweep), nothing of those runs is
//! left — checked through `/proc` by PID and start time, process group,
//! session and an inherited environment tag (support/tree.rs), never by
//! name. The restarted instance logs what it stopped and shows each run as
//! interrupted in its thread.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::json;
use support::server::{Server, serve_cmd};
use support::tree::{self, PASS_ENV, new_tag, runs, tagged, wait_gone};

/// Concurrent runs.
const RUNS: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_serve_leaves_nothing_of_its_runs_once_the_next_serve_started() {
    let home = tempfile::tempdir().unwrap();
    // 400 lines 50 ms apart: the runs stream for 20 s unless stopped.
    let cli = tree::stand_in(400);
    let pids = tree::pids_dir(home.path(), 0);
    let tag = new_tag();
    let serve = || {
        let mut cmd = support::command(home.path());
        cmd.env("PATH", cli.path_var())
            .env("AGENT_ADAPTOR_STATE_DIR", home.path().join("state"))
            .env("AA_TEST_PIDS_DIR", &pids)
            .env("AA_TEST_TAG", &tag)
            .env("AA_TEST_DELAY_MS", "50");
        let mut args = vec![
            "--driver",
            "claude",
            "--instance-id",
            "host-death",
            "--max-runs-per-client",
            "64",
        ];
        args.extend(PASS_ENV);
        serve_cmd(cmd, &args)
    };
    let mut first: Server = serve();
    let client = first.client();
    for i in 0..RUNS {
        let client = client.clone();
        let url = format!("{}/agui", first.base);
        let input = json!({"threadId": format!("t{i}"), "runId": format!("r{i}"),
                           "messages": [{"id": "m1", "role": "user", "content": format!("count {i}")}]});
        // Ends with an error when the server dies; only the processes matter.
        tokio::spawn(async move {
            let _ = client
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .json(&input)
                .send()
                .await;
        });
    }
    let all_started = || {
        let r = runs(&pids);
        r.len() == RUNS && r.values().all(|r| r.daemon.is_some())
    };
    assert!(
        tree::wait_for(Duration::from_secs(120), all_started),
        "{RUNS} CLIs started their children: {:?}",
        runs(&pids)
    );
    let started = runs(&pids);

    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let leaders: Vec<tree::Proc> = started.values().filter_map(|r| r.leader).collect();
    let left = wait_gone(|| leaders.iter().copied().filter(tree::Proc::alive).collect());
    assert!(left.is_empty(), "CLIs outlived their server: {left:?}");

    let second = serve();
    let left: Vec<String> = started.values().flat_map(tree::RunPids::left).collect();
    assert!(left.is_empty(), "left after the next start: {left:?}");
    let server_pid = second.child.id();
    let tagged: Vec<u32> = tagged(&tag)
        .into_iter()
        .filter(|p| *p != server_pid)
        .collect();
    assert!(
        tagged.is_empty(),
        "processes of the killed runs: {tagged:?}"
    );
    let log = second.log_text();
    assert!(
        log.contains("stopped processes that a dead agent-adaptor left running"),
        "{log}"
    );
    for i in 0..RUNS {
        let thread = second.get_json(&format!("/api/threads/t{i}")).await;
        let interrupted = thread["interrupted"].as_array();
        assert_eq!(interrupted.map(Vec::len), Some(1), "{thread}");
        assert_eq!(thread["interrupted"][0]["prompt"], format!("count {i}"));
    }
}
