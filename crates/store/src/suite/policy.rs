//! Cases for the thread policy: the tools always allowed per key.

use std::sync::Arc;

use agent_adaptor_core::thread::{StoreError, ThreadStore};

use super::{Outcome, ensure, must, unique_key};

/// Grants are per key, sorted, idempotent, revocable; an empty tool name
/// is `Invalid`; granting needs no record; `delete` drops the key's grants
/// (and only its).
pub async fn thread_policy_grant_revoke_delete(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("policy");
    let other = unique_key("policy-other");
    let empty = must(store.thread_policy(&key).await, "policy of a new key")?;
    ensure!(
        empty.always_allowed.is_empty(),
        "a new key grants nothing: {empty:?}"
    );
    ensure!(
        must(
            store.set_tool_allowed(&key, "Bash", true).await,
            "grant Bash"
        )?,
        "a first grant changes the policy"
    );
    ensure!(
        !must(
            store.set_tool_allowed(&key, "Bash", true).await,
            "grant Bash again"
        )?,
        "a repeated grant changes nothing"
    );
    must(
        store.set_tool_allowed(&key, "Edit", true).await,
        "grant Edit",
    )?;
    must(
        store.set_tool_allowed(&other, "Bash", true).await,
        "grant other",
    )?;
    let policy = must(store.thread_policy(&key).await, "policy")?;
    ensure!(
        policy.always_allowed == ["Bash", "Edit"],
        "sorted grants expected: {policy:?}"
    );
    ensure!(
        policy.allows("Edit") && !policy.allows("Write"),
        "allows: {policy:?}"
    );
    ensure!(
        matches!(
            store.set_tool_allowed(&key, " ", true).await,
            Err(StoreError::Invalid(_))
        ),
        "an empty tool name is Invalid"
    );
    ensure!(
        must(
            store.set_tool_allowed(&key, "Edit", false).await,
            "revoke Edit"
        )?,
        "a revocation changes the policy"
    );
    ensure!(
        !must(
            store.set_tool_allowed(&key, "Edit", false).await,
            "revoke Edit again"
        )?,
        "revoking what is not granted changes nothing"
    );
    let policy = must(store.thread_policy(&key).await, "policy after revoke")?;
    ensure!(
        policy.always_allowed == ["Bash"],
        "after revoke: {policy:?}"
    );
    must(store.delete(&key).await, "delete")?;
    let gone = must(store.thread_policy(&key).await, "policy after delete")?;
    ensure!(
        gone.always_allowed.is_empty(),
        "delete drops the grants: {gone:?}"
    );
    let kept = must(store.thread_policy(&other).await, "other policy")?;
    ensure!(
        kept.always_allowed == ["Bash"],
        "another key keeps its grants: {kept:?}"
    );
    Ok(())
}
