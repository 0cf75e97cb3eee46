//! A 100 MB stdout line is held once: the peak RSS of `agent-adaptor run`
//! stays under 1.5× the line (its own test binary, so the children's peak
//! RSS is this run's alone).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::os::unix::fs::PermissionsExt;

use agent_adaptor_testkit::fixtures;
use nix::sys::resource::{UsageWho, getrusage};
use support::stand_in::SYSTEM_PATH;
use support::{command, stderr};

const LINE: u64 = 100_000_000;

#[test]
fn a_100_mb_line_is_held_once() {
    let home = tempfile::tempdir().unwrap();
    let fixture = fixtures::path("claude/print-basic.jsonl");
    // The answer to the control transport's `initialize` (the first stdin
    // line), the init line, one 100 MB line that is not protocol, the
    // result line.
    let script = format!(
        "#!/bin/sh\n\
         IFS= read -r req\n\
         id=$(printf '%s' \"$req\" | sed -n 's/.*\"request_id\":\"\\([^\"]*\\)\".*/\\1/p')\n\
         printf '{{\"type\":\"control_response\",\"response\":{{\"subtype\":\"success\",\"request_id\":\"%s\",\"response\":{{}}}}}}\\n' \"$id\"\n\
         head -n 1 '{f}'\nhead -c {LINE} /dev/zero | tr '\\0' x\necho\ntail -n 1 '{f}'\n",
        f = fixture.display()
    );
    let bin = home.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let claude = bin.join("claude");
    std::fs::write(&claude, script).unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = command(home.path())
        .env("PATH", format!("{}:{SYSTEM_PATH}", bin.display()))
        .args(["run", "--driver", "claude", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The largest waited-for child (and its own children): the CLI.
    let peak_bytes =
        u64::try_from(getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss()).unwrap() * 1024;
    let ratio = peak_bytes as f64 / LINE as f64;
    eprintln!(
        "peak RSS {} MiB for a {LINE}-byte line: {ratio:.2}x",
        peak_bytes >> 20
    );
    assert!(ratio < 1.5, "peak RSS is {ratio:.2}x the line");
}
