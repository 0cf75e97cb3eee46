//! A memory budget shared by every raw capture of this process.
//!
//! Each capture keeps its stream in memory up to its own spill threshold
//! ([`Command::spill_threshold`](crate::Command::spill_threshold), 4 MiB by
//! default). Alone, that bounds one run; a host with hundreds of runs at
//! once would still hold hundreds of those buffers. The process-wide budget
//! bounds their sum: once the captures of all live processes hold
//! [`limit`](MemoryBudget::limit) bytes, a capture that grows spills to its
//! file instead, whatever its own threshold says. Bytes handed over (a
//! finished capture's raw stream, a turn's head) leave the budget: they are
//! the host's from then on.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The process-wide budget's default limit: 64 MiB, sixteen captures at the
/// default spill threshold.
pub const DEFAULT_CAPTURE_MEMORY_BUDGET: usize = 64 * 1024 * 1024;

static PROCESS_BUDGET: MemoryBudget = MemoryBudget::new(DEFAULT_CAPTURE_MEMORY_BUDGET);

/// The budget every capture of this process draws on (see the module docs).
///
/// ```
/// use agent_adaptor_process::capture_memory_budget;
///
/// let budget = capture_memory_budget();
/// assert!(budget.limit() > 0);
/// // A host with many concurrent runs and little memory:
/// budget.set_limit(16 * 1024 * 1024);
/// # budget.set_limit(agent_adaptor_process::DEFAULT_CAPTURE_MEMORY_BUDGET);
/// ```
pub fn capture_memory_budget() -> &'static MemoryBudget {
    &PROCESS_BUDGET
}

/// Bytes held in memory against a limit, shared by many holders.
#[derive(Debug)]
pub struct MemoryBudget {
    limit: AtomicUsize,
    held: AtomicUsize,
}

impl MemoryBudget {
    /// A budget of `limit` bytes, none held.
    pub const fn new(limit: usize) -> Self {
        MemoryBudget {
            limit: AtomicUsize::new(limit),
            held: AtomicUsize::new(0),
        }
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Change the limit. Bytes already held stay held (a lower limit only
    /// stops further growth); 0 sends every capture to its file.
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    /// Bytes held now, by every holder.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Take `bytes` if they fit under the limit; false (and nothing taken)
    /// when they do not.
    pub(crate) fn try_take(&self, bytes: usize) -> bool {
        if bytes == 0 {
            return true;
        }
        let limit = self.limit();
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_add(bytes).filter(|total| *total <= limit)
            })
            .is_ok()
    }

    /// Give back `bytes` taken earlier.
    pub(crate) fn give_back(&self, bytes: usize) {
        if bytes > 0 {
            // Never below zero, whatever a caller gives back.
            let _ = self
                .held
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                    Some(held.saturating_sub(bytes))
                });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_up_to_the_limit_and_no_further() {
        let b = MemoryBudget::new(10);
        assert!(b.try_take(6));
        assert!(!b.try_take(5), "6 + 5 is over 10");
        assert_eq!(b.held(), 6, "a refused take takes nothing");
        assert!(b.try_take(4));
        assert!(!b.try_take(1));
        b.give_back(7);
        assert_eq!(b.held(), 3);
        assert!(b.try_take(7));
        b.give_back(100);
        assert_eq!(b.held(), 0, "never below zero");
    }

    #[test]
    fn a_lower_limit_stops_growth_but_keeps_what_is_held() {
        let b = MemoryBudget::new(100);
        assert!(b.try_take(80));
        b.set_limit(50);
        assert_eq!(b.held(), 80);
        assert!(!b.try_take(1));
        b.give_back(40);
        assert!(b.try_take(10));
        b.set_limit(0);
        assert!(!b.try_take(1));
        assert!(b.try_take(0), "nothing always fits");
    }
}
