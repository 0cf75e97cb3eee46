//! Run policy for the ACP family: permission requests are always routed
//! (every `session/request_permission` is a host decision), so a run's
//! decision modes need no configuration change; core answers auto modes
//! itself. ACP has no sandbox, web-search or browser switch, so none is
//! declared.

use super::Config;
use crate::policy::{Approvals, Kinds, PolicyTable};

/// The ACP driver's table.
pub fn table() -> PolicyTable<Config> {
    PolicyTable {
        approvals: Approvals {
            route: Some(|_| {}),
            routed: Kinds::PERMISSION,
            ask: true,
            native_auto_approve: None,
            native_auto_deny: None,
        },
        ..PolicyTable::NONE
    }
}
