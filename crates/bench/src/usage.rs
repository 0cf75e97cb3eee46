//! Resource usage of this process and of its reaped children (`getrusage`).

use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::TimeValLike;
use serde::{Deserialize, Serialize};

/// CPU time and peak RSS of a process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Peak resident set size, KiB (`ru_maxrss`).
    pub maxrss_kib: u64,
}

impl Usage {
    /// User + system CPU seconds.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }

    /// `self - earlier` for the CPU times; the peak RSS of `self`.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            user_s: self.user_s - earlier.user_s,
            sys_s: self.sys_s - earlier.sys_s,
            maxrss_kib: self.maxrss_kib,
        }
    }
}

fn read(who: UsageWho) -> Usage {
    match getrusage(who) {
        Ok(u) => Usage {
            user_s: u.user_time().num_microseconds() as f64 / 1e6,
            sys_s: u.system_time().num_microseconds() as f64 / 1e6,
            maxrss_kib: u64::try_from(u.max_rss()).unwrap_or(0),
        },
        Err(_) => Usage::default(),
    }
}

/// This process: every thread, not its children.
pub fn this_process() -> Usage {
    read(UsageWho::RUSAGE_SELF)
}

/// Every child this process has reaped, with their own reaped descendants.
/// The CPU times add up; `maxrss_kib` is the largest of them.
pub fn reaped_children() -> Usage {
    read(UsageWho::RUSAGE_CHILDREN)
}
