//! When `agent-adaptor run` dies, nothing of its run outlives it.
//!
//! The stand-in `claude` (support/tree.rs) starts a tool in its process
//! group and a double-forked `setsid` daemon, then streams its answer
//! slowly. Everything is checked through `/proc` by PID and start time,
//! process group, session and an inherited environment tag — never by
//! name. Each test points `AGENT_ADAPTOR_STATE_DIR` (the process and run
//! records) at a directory of its own.
//!
//! * SIGKILL at 50 random moments (seeded; the seed is printed, and
//!   `HOST_DEATH_SEED` replays it), half of the start and half of the
//!   stream: the stand-in dies with its host (parent
//!   death signal) within a bounded wait, and once the next `run` has
//!   started (its sweep), nothing of the killed run is left.
//! * SIGHUP mid-stream: `run` cancels like Ctrl-C, exits 129, and nothing
//!   is left at once.
//! * A SIGKILLed `run --thread t`: the next command frees the thread and
//!   `threads show t` names the interrupted run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rand::{Rng, SeedableRng};
use support::tree::{self, PASS_ENV, TreeStandIn, new_tag, runs, tagged, wait_gone};

/// Answer lines of a slow run and the pause before each: ~2 s of stream.
const PIECES: usize = 40;
const DELAY_MS: &str = "50";

/// One test's world: a home, the stand-in and a state directory.
struct World {
    home: tempfile::TempDir,
    cli: TreeStandIn,
}

impl World {
    fn new() -> World {
        World {
            home: tempfile::tempdir().unwrap(),
            cli: tree::stand_in(PIECES),
        }
    }

    fn state(&self) -> std::path::PathBuf {
        self.home.path().join("state")
    }

    /// `agent-adaptor run --driver claude --json [extra] PROMPT` with the
    /// stand-in, writing its PIDs to `pids` and tagged `tag`.
    fn run_cmd(&self, pids: &Path, tag: &str, quick: bool, extra: &[&str]) -> Command {
        let mut cmd = support::command(self.home.path());
        cmd.env("PATH", self.cli.path_var())
            .env("AGENT_ADAPTOR_STATE_DIR", self.state())
            .env("AA_TEST_PIDS_DIR", pids)
            .env("AA_TEST_TAG", tag)
            .env("AA_TEST_DELAY_MS", if quick { "0" } else { DELAY_MS })
            .args(["run", "--driver", "claude", "--json"])
            .args(PASS_ENV)
            .args(extra)
            .arg("count slowly");
        if quick {
            cmd.env("AA_TEST_QUICK", "1");
        }
        cmd
    }

    /// A slow run, started.
    fn start(&self, pids: &Path, tag: &str, extra: &[&str]) -> Child {
        self.run_cmd(pids, tag, false, extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// The next start of `run`: a quick run to its end (no children).
    fn next_start(&self, n: usize) {
        let pids = tree::pids_dir(self.home.path(), 10_000 + n);
        let out = self.run_cmd(&pids, &new_tag(), true, &[]).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "the next run: {}",
            support::stderr(&out)
        );
    }
}

/// The one run recorded in `pids` (none when the host died before its CLI
/// started).
fn the_run(pids: &Path) -> Option<tree::RunPids> {
    let all = runs(pids);
    assert!(all.len() <= 1, "one run per host: {all:?}");
    all.into_values().next()
}

#[test]
fn sigkill_at_random_moments_leaves_nothing_once_the_next_run_started() {
    let seed = std::env::var("HOST_DEATH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    println!("HOST_DEATH_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let world = World::new();
    let mut mid_stream = 0;
    for n in 0..50 {
        let pids = tree::pids_dir(world.home.path(), n);
        let tag = new_tag();
        let mut host = world.start(&pids, &tag, &[]);
        // Even kills: a moment of the start, the CLI not yet running or
        // just spawned. Odd kills: a moment of the stream (~2 s), from the
        // CLI's first line on, however slow the start was.
        let moment = if n % 2 == 0 {
            Duration::from_millis(rng.random_range(0..400))
        } else {
            assert!(
                tree::wait_for(Duration::from_secs(30), || the_run(&pids)
                    .is_some_and(|r| r.leader.is_some())),
                "seed {seed}, run {n}: the stand-in started"
            );
            Duration::from_millis(rng.random_range(0..1500))
        };
        std::thread::sleep(moment);
        host.kill().unwrap();
        host.wait().unwrap();
        let run = the_run(&pids);
        if let Some(leader) = run.as_ref().and_then(|r| r.leader) {
            let left = wait_gone(|| Some(leader).filter(tree::Proc::alive).into_iter().collect());
            assert!(
                left.is_empty(),
                "seed {seed}, kill {n} at {moment:?}: the CLI {leader:?} outlived its host"
            );
            if run.as_ref().is_some_and(|r| r.daemon.is_some()) {
                mid_stream += 1;
            }
        }
        world.next_start(n);
        let left = run.map(|r| r.left()).unwrap_or_default();
        assert!(
            left.is_empty(),
            "seed {seed}, kill {n} at {moment:?}: left after the next start: {left:?}"
        );
        let tagged = tagged(&tag);
        assert!(
            tagged.is_empty(),
            "seed {seed}, kill {n} at {moment:?}: processes of the killed run left: {tagged:?}"
        );
    }
    // The moments cover the stream, not only the start.
    assert!(
        mid_stream >= 10,
        "seed {seed}: only {mid_stream} of 50 kills hit a CLI with its children"
    );
}

#[test]
fn sighup_cancels_the_run_and_leaves_nothing() {
    let world = World::new();
    let pids = tree::pids_dir(world.home.path(), 0);
    let tag = new_tag();
    let mut host = world
        .run_cmd(&pids, &tag, false, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Mid-stream: the CLI and both children run.
    assert!(
        tree::wait_for(Duration::from_secs(30), || the_run(&pids)
            .is_some_and(|r| r.daemon.is_some())),
        "the stand-in started its children"
    );
    std::thread::sleep(Duration::from_millis(300));
    let run = the_run(&pids).unwrap();
    assert!(run.all().iter().all(tree::Proc::alive), "{run:?}");

    kill(Pid::from_raw(host.id() as i32), Signal::SIGHUP).unwrap();
    let exited = tree::wait_for(tree::GONE_BOUND, || host.try_wait().unwrap().is_some());
    assert!(exited, "run exits after SIGHUP");
    let out = host.wait_with_output().unwrap();
    let err = support::stderr(&out);
    assert_eq!(out.status.code(), Some(129), "exit 128 + SIGHUP: {err}");
    assert!(err.contains("run cancelled (SIGHUP)"), "{err}");
    // Nothing is left at once: no next start needed.
    let left = run.left();
    assert!(left.is_empty(), "left after SIGHUP: {left:?}");
    let tagged = tagged(&tag);
    assert!(tagged.is_empty(), "tagged processes left: {tagged:?}");
}

#[test]
fn a_thread_run_whose_host_was_killed_shows_as_interrupted() {
    let world = World::new();
    let pids = tree::pids_dir(world.home.path(), 0);
    let tag = new_tag();
    let mut host = world.start(&pids, &tag, &["--thread", "t"]);
    assert!(
        tree::wait_for(Duration::from_secs(30), || the_run(&pids)
            .is_some_and(|r| r.daemon.is_some())),
        "the stand-in started"
    );
    host.kill().unwrap();
    host.wait().unwrap();

    let show = |world: &World| {
        let out = support::command(world.home.path())
            .env("AGENT_ADAPTOR_STATE_DIR", world.state())
            .args(["threads", "show", "t", "--json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let shown = show(&world);
    let interrupted = shown["interrupted"].as_array().unwrap();
    assert_eq!(interrupted.len(), 1, "{shown}");
    assert_eq!(interrupted[0]["prompt"], "count slowly", "{shown}");
    assert!(
        interrupted[0]["run_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{shown}"
    );

    // The thread is free at once (not after the lease's TTL): the next
    // run on it succeeds, and the interrupted run stays on record.
    let pids = tree::pids_dir(world.home.path(), 1);
    let out = world
        .run_cmd(&pids, &new_tag(), true, &["--thread", "t"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        support::stderr(&out),
        support::stdout(&out)
    );
    let shown = show(&world);
    assert_eq!(shown["interrupted"].as_array().unwrap().len(), 1, "{shown}");
    assert!(shown["record"].is_object(), "{shown}");

    // The text form names it too.
    let out = support::command(world.home.path())
        .env("AGENT_ADAPTOR_STATE_DIR", world.state())
        .args(["threads", "show", "t"])
        .output()
        .unwrap();
    let text = support::stdout(&out);
    assert!(text.contains("interrupted: run "), "{text}");
    assert!(text.contains("count slowly"), "{text}");
}
