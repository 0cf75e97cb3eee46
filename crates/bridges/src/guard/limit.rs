//! Concurrent runs per principal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::Principal;

/// Counts each principal's requests in flight on the run endpoints.
#[derive(Debug, Default)]
pub(crate) struct RunLimits {
    max: usize,
    active: Mutex<HashMap<Principal, usize>>,
}

/// One counted request; dropping it (when the response body ends) frees
/// the slot.
#[derive(Debug)]
pub(crate) struct Permit {
    limits: Arc<RunLimits>,
    principal: Principal,
}

impl RunLimits {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(RunLimits {
            max: max.max(1),
            active: Mutex::new(HashMap::new()),
        })
    }

    /// A permit for `principal`, or `None` at the limit.
    pub(crate) fn acquire(self: &Arc<Self>, principal: &Principal) -> Option<Permit> {
        let mut active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        let n = active.entry(principal.clone()).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(Permit {
            limits: self.clone(),
            principal: principal.clone(),
        })
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut active = self.limits.active.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = active.get_mut(&self.principal) {
            *n -= 1;
            if *n == 0 {
                active.remove(&self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_principal_has_its_own_budget_and_permits_return_it() {
        let limits = RunLimits::new(2);
        let (a, b) = (Principal::new("a"), Principal::new("b"));
        let first = limits.acquire(&a);
        let second = limits.acquire(&a);
        assert!(first.is_some() && second.is_some());
        assert!(limits.acquire(&a).is_none());
        assert!(
            limits.acquire(&b).is_some(),
            "another principal is not limited by a"
        );
        drop(first);
        assert!(limits.acquire(&a).is_some());
    }
}
