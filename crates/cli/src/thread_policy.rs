//! A thread's policy at the command line: `threads show KEY` lists the
//! tools always allowed in it, `threads revoke KEY TOOL` stops allowing
//! one (its next request asks again).

use serde_json::json;

use crate::error::CliError;
use crate::store::OpenedStore;

/// The tools always allowed in `key`, sorted.
pub async fn always_allowed(opened: &OpenedStore, key: &str) -> Result<Vec<String>, CliError> {
    let policy = opened
        .store
        .thread_policy(key)
        .await
        .map_err(|e| CliError::failure(format!("cannot read the thread's policy: {e}")))?;
    Ok(policy.always_allowed)
}

/// The `threads show` line of the grants.
pub fn show_line(tools: &[String]) -> String {
    if tools.is_empty() {
        "always allowed: (none)".into()
    } else {
        format!("always allowed: {}", tools.join(", "))
    }
}

/// `threads revoke KEY TOOL`: a tool that was not allowed is an error (so
/// a typo is seen).
pub async fn revoke(
    opened: &OpenedStore,
    key: &str,
    tool: &str,
    json_out: bool,
) -> Result<(), CliError> {
    let revoked = opened
        .store
        .set_tool_allowed(key, tool, false)
        .await
        .map_err(|e| CliError::failure(format!("cannot revoke {tool:?}: {e}")))?;
    if !revoked {
        return Err(CliError::failure(format!(
            "{tool:?} is not always allowed in thread {key:?}"
        )));
    }
    if json_out {
        println!("{}", json!({"key": key, "revoked": tool}));
    } else {
        println!("{tool} is no longer always allowed in {key:?}");
    }
    Ok(())
}
