//! Run policy for Cursor Agent (`agent -p`; flags from Cursor's CLI
//! reference, protocols.md §3 — the CLI is not installed here):
//!
//! | policy | flag |
//! |---|---|
//! | permission `auto_approve` | `--force` (every tool runs without asking) |
//!
//! Nothing else is declared: print mode has no host channel (so no `ask`),
//! a tool the allow rules of `cli-config.json` permit runs even without
//! `--force` (so no honest `auto_deny`), and the reference documents no
//! sandbox, web-search or browser flag.

use super::Config;
use crate::policy::{Approvals, PolicyTable};

/// Cursor's table.
pub fn table() -> PolicyTable<Config> {
    PolicyTable {
        approvals: Approvals {
            native_auto_approve: Some(|c| c.force = true),
            ..Approvals::NONE
        },
        ..PolicyTable::NONE
    }
}
