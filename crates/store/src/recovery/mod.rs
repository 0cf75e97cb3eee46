//! Lease recovery for the SQL stores: the leases of a dead incarnation of
//! a server (`recover_instance`), or every expired lease on a thread key
//! (`recover_expired`), are released and recorded as interrupted runs, and
//! the pending approvals their owners held are expired, in one
//! transaction. What both backends share is here; their SQL is in
//! `sqlite.rs` and `postgres.rs`.

use agent_adaptor_core::thread::store::InterruptedRun;
use chrono::{DateTime, Utc};

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "postgres")]
pub(crate) use postgres::{pg_interrupted_runs, pg_recover_in};
#[cfg(feature = "sqlite")]
pub(crate) use sqlite::{sqlite_interrupted_runs, sqlite_recover_in};

/// Which leases to recover.
#[derive(Clone, Copy)]
pub(crate) enum Stale<'a> {
    /// A dead incarnation's: owner starts with `.0` but not with `.1`
    /// (see `recovery_prefixes`).
    Instance(&'a (String, String)),
    /// Every expired lease on a `key:` target.
    Expired,
    /// The lease on this target, if it has expired (a takeover).
    Target(&'a str),
}

/// The owners of `leases` (whose pending approvals expire with them).
pub(super) fn owners(leases: &[Recovered]) -> Vec<String> {
    let mut owners: Vec<String> = leases.iter().map(|l| l.1.clone()).collect();
    owners.sort();
    owners.dedup();
    owners
}

/// A recovered lease: (target, owner, prompt, started_at).
pub(super) type Recovered = (String, String, Option<String>, DateTime<Utc>);

/// The recovered leases on thread keys as interrupted runs, oldest first.
pub(super) fn interrupted(mut leases: Vec<Recovered>, at: DateTime<Utc>) -> Vec<InterruptedRun> {
    leases.sort_by(|a, b| (a.3, &a.0).cmp(&(b.3, &b.0)));
    leases
        .into_iter()
        .filter_map(|(target, owner, prompt, started_at)| {
            InterruptedRun::from_lease(&target, &owner, prompt, started_at, at)
        })
        .collect()
}
