//! The process-tree stand-in and `/proc` checks of the testkit
//! ([`agent_adaptor_testkit::proc_tree`]), plus bounded waits.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use agent_adaptor_testkit::proc_tree::*;

/// How long anything may take to be gone ("gone within a bounded wait").
pub const GONE_BOUND: Duration = Duration::from_secs(5);

/// The stand-in with `pieces` answer lines, over the testkit's fake CLI.
pub fn stand_in(pieces: usize) -> TreeStandIn {
    let fake = agent_adaptor_testkit::replay::fake_cli_binary().expect("the fake CLI builds");
    TreeStandIn::new(&fake, pieces).unwrap()
}

/// Poll `left` until it is empty or [`GONE_BOUND`] passed; what is left
/// then.
pub fn wait_gone<T>(mut left: impl FnMut() -> Vec<T>) -> Vec<T> {
    let deadline = Instant::now() + GONE_BOUND;
    loop {
        let now = left();
        if now.is_empty() || Instant::now() >= deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Poll `ready` until it holds or `bound` passed; whether it held.
pub fn wait_for(bound: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        if ready() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Where a test keeps its pid files: `<dir>/pids-<n>`, created.
pub fn pids_dir(base: &Path, n: usize) -> PathBuf {
    let dir = base.join(format!("pids-{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
