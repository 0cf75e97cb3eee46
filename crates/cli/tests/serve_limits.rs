//! `agent-adaptor serve` under connection pressure and at SIGTERM: idle
//! sockets cannot starve it, and SIGTERM ends it within the grace period
//! with no child left behind, whatever is still open.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::server::serve_cmd;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_idle_sockets_do_not_starve_a_server_with_256_descriptors() {
    let home = tempfile::tempdir().unwrap();
    let cmd = support::command_via(
        home.path(),
        &["sh", "-c", "ulimit -n 256 && exec \"$0\" \"$@\""],
    );
    let server = serve_cmd(cmd, &["--playground"]);
    let addr = server.base.trim_start_matches("http://").to_owned();
    let idle: Vec<TcpStream> = (0..300)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    assert!(
        idle.len() >= 250,
        "the idle sockets connected: {}",
        idle.len()
    );
    let info = server
        .client()
        .get(format!("{}/api/info", server.base))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("a legitimate request is answered while 300 sockets idle");
    assert_eq!(info.status(), 200);
    let reply: Value = info.json().await.unwrap();
    assert_eq!(reply["playground"], true);
    drop(idle);
}

/// A stand-in `claude` that records its pid and then runs until killed.
struct HangingClaude {
    bin: PathBuf,
    pidfile: PathBuf,
}

impl HangingClaude {
    fn new(home: &Path) -> Self {
        let bin = home.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let pidfile = home.join("claude.pid");
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in --version) echo '2.0.0 (Claude Code)'; exit 0;; esac\n\
             echo $$ > '{}'\nexec sleep 600\n",
            pidfile.display()
        );
        let path = bin.join("claude");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        HangingClaude { bin, pidfile }
    }

    /// The CLI's command with the stand-in first on `PATH` and a key set.
    fn command(&self, home: &Path) -> std::process::Command {
        let mut cmd = support::command(home);
        cmd.env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display()),
        )
        .env("ANTHROPIC_API_KEY", "sk-test-not-a-key");
        cmd
    }

    /// The pid of the running stand-in, once it started (bounded wait).
    async fn pid(&self) -> i32 {
        for _ in 0..200 {
            if let Some(p) = std::fs::read_to_string(&self.pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                return p;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the stand-in CLI did not start");
    }
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // A zombie has ended; it only waits to be reaped by its parent.
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_a_half_sent_header_and_an_a2a_subscription_exits_within_the_grace_period() {
    let home = tempfile::tempdir().unwrap();
    let cli = HangingClaude::new(home.path());
    let cmd = cli.command(home.path());
    let mut server = serve_cmd(cmd, &["--driver", "claude", "--shutdown-grace", "2"]);
    let client = server.client();
    let rpc = |method: &str, params: Value| {
        client
            .post(format!("{}/a2a", server.base))
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    };
    let sent: Value = rpc(
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
               "configuration": {"returnImmediately": true}}),
    )
    .send()
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let task = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let mut subscription = rpc("SubscribeToTask", json!({"id": task}))
        .send()
        .await
        .unwrap();
    assert_eq!(subscription.status(), 200);
    // The CLI is running.
    let pid = cli.pid().await;
    assert!(alive(pid));
    // A request whose header never ends.
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();

    let sent_at = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut exited = None;
    while sent_at.elapsed() < Duration::from_secs(30) {
        if let Some(status) = server.child.try_wait().unwrap() {
            exited = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = exited.expect("serve exited after SIGTERM");
    assert!(status.success(), "{status:?}");
    assert!(!alive(pid), "the CLI process {pid} was left running");
    // The subscription saw the task end, and the half-sent request was
    // closed by the server.
    let mut tail = String::new();
    while let Ok(Some(chunk)) = subscription.chunk().await {
        tail.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(tail.contains("TASK_STATE_CANCELED"), "{tail}");
    half.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 64];
    assert!(matches!(half.read(&mut buf), Ok(0) | Err(_)));
    assert!(
        server.log_text().contains("runs cancelled at shutdown"),
        "{}",
        server.log_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_a_restart_frees_the_thread_at_once_and_shows_the_interrupted_run() {
    let home = tempfile::tempdir().unwrap();
    let cli = HangingClaude::new(home.path());
    let cmd = cli.command(home.path());
    let identity = ["--instance-id", "crash-test"];
    let mut first = serve_cmd(cmd, &["--driver", "claude", identity[0], identity[1]]);
    let prompt = "please survive a crash";
    let input = json!({"threadId": "t-crash", "runId": "r-1",
                       "messages": [{"id": "m1", "role": "user", "content": prompt}]});
    let client = first.client();
    let url = format!("{}/agui", first.base);
    let running = tokio::spawn(async move {
        client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .json(&input)
            .send()
            .await
            .map(|r| r.status())
    });
    // The run's CLI started, so its lease is held.
    let pid = cli.pid().await;
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    let _ = running.await;

    // The same instance, restarted on the same store.
    let second = serve_cmd(
        support::command(home.path()),
        &["--playground", identity[0], identity[1]],
    );
    let client = second.client();
    let thread = second.get_json("/api/threads/t-crash").await;
    let interrupted = thread["interrupted"].as_array().expect("interrupted runs");
    assert_eq!(interrupted.len(), 1, "{thread}");
    assert_eq!(interrupted[0]["prompt"], prompt);
    // Usable at once: the next run takes the lease (the playground asks
    // for its tool's approval), instead of "busy" for the lease's TTL.
    let body = client
        .post(format!("{}/agui", second.base))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .json(&json!({"threadId": "t-crash", "runId": "r-2",
                      "messages": [{"id": "m2", "role": "user", "content": "again"}]}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!body.contains("thread_busy"), "{body}");
    assert!(
        body.contains("\"interrupt\""),
        "the run went ahead to its approval: {body}"
    );
    assert!(
        second.log_text().contains("was interrupted"),
        "{}",
        second.log_text()
    );
}

/// Another host on the same store takes a SIGKILLed host's thread over once
/// its lease expired: its sweeper (every third of `--lease-ttl`) records
/// the interrupted run and frees the thread, no restart of the dead
/// instance needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_another_instance_sweeps_the_expired_lease() {
    let home = tempfile::tempdir().unwrap();
    let cli = HangingClaude::new(home.path());
    let cmd = cli.command(home.path());
    let mut first = serve_cmd(
        cmd,
        &[
            "--driver",
            "claude",
            "--instance-id",
            "host-a",
            "--lease-ttl",
            "2",
        ],
    );
    let prompt = "please survive a crash";
    let input = json!({"threadId": "t-sweep", "runId": "r-1",
                       "messages": [{"id": "m1", "role": "user", "content": prompt}]});
    let client = first.client();
    let url = format!("{}/agui", first.base);
    let running = tokio::spawn(async move {
        client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .json(&input)
            .send()
            .await
            .map(|r| r.status())
    });
    let pid = cli.pid().await;
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    let _ = running.await;

    let second = serve_cmd(
        support::command(home.path()),
        &[
            "--playground",
            "--instance-id",
            "host-b",
            "--lease-ttl",
            "1",
        ],
    );
    // Bounded: the lease expires 2 s after its last renewal, the sweeper
    // runs every ~333 ms.
    let mut thread = serde_json::Value::Null;
    for _ in 0..300 {
        thread = second.get_json("/api/threads/t-sweep").await;
        if thread["interrupted"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let interrupted = thread["interrupted"].as_array().expect("interrupted runs");
    assert_eq!(interrupted.len(), 1, "{thread}");
    assert_eq!(interrupted[0]["prompt"], prompt);
    assert!(
        second
            .log_text()
            .contains("stopped renewing its lease was interrupted"),
        "{}",
        second.log_text()
    );
}

#[test]
fn a_lease_ttl_under_one_second_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    let out = support::command(home.path())
        .args([
            "serve",
            "--playground",
            "--lease-ttl",
            "0",
            "--addr",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--lease-ttl"), "{stderr}");
}
