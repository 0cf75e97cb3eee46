//! "Always allow this tool in this thread": the thread's policy as the
//! decision path and the host see it.
//!
//! A human answering a permission request with
//! [`approve_always`](crate::ApprovalRequest::approve_always) grants the
//! request's tool to the thread ([`ThreadStore::set_tool_allowed`]); the
//! thread's later permission requests for that tool are approved by the
//! policy without asking (`decided_by: policy`, `thread_grant` in the
//! `approval.resolved` notice). [`Thread::always_allowed`],
//! [`Thread::allow_tool`] and [`Thread::revoke_tool`] show and change the
//! grants outside a run.

use std::sync::Arc;

use agent_adaptor_driver::{DecisionKind, DecisionRequest};
use serde_json::Value;

use super::{Thread, ThreadError, ThreadPlan, ThreadStore};
use crate::result::Error;

/// The thread a run belongs to, as its decision path needs it.
#[derive(Clone)]
pub(crate) struct ThreadGrants {
    pub(crate) store: Arc<dyn ThreadStore>,
    pub(crate) key: Arc<str>,
}

impl ThreadGrants {
    /// Whether `tool` is always allowed in the thread. A store that cannot
    /// be read grants nothing (the human is asked).
    pub(crate) async fn allows(&self, tool: &str) -> bool {
        self.store
            .thread_policy(&self.key)
            .await
            .is_ok_and(|p| p.allows(tool))
    }

    /// Always allow `tool` in the thread.
    pub(crate) async fn grant(&self, tool: &str) -> Result<(), super::StoreError> {
        self.store.set_tool_allowed(&self.key, tool, true).await?;
        Ok(())
    }
}

impl ThreadPlan {
    /// The run's thread, for its decision path.
    pub(crate) fn grants(&self) -> ThreadGrants {
        ThreadGrants {
            store: self.store.clone(),
            key: self.key.clone(),
        }
    }
}

/// The name a grant for `req` is kept under: the tool a permission request
/// is about (`None`: not a permission request, or no tool named, so
/// "always" cannot be offered). Claude/CodeBuddy and host tools name it
/// `tool_name`; Codex MCP calls `tool`; Codex approvals by their method
/// (`commandExecution`, `fileChange`); ACP agents by the tool call's kind.
pub(crate) fn grant_name(req: &DecisionRequest) -> Option<String> {
    if req.kind != DecisionKind::Permission {
        return None;
    }
    let payload = req.payload.as_ref()?;
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    };
    text(payload.get("tool_name"))
        .or_else(|| text(payload.get("tool")))
        .or_else(|| {
            let method = text(payload.get("method"))?;
            let name = method
                .strip_prefix("item/")
                .and_then(|m| m.strip_suffix("/requestApproval"))
                .map_or(method.clone(), str::to_owned);
            Some(name)
        })
        .or_else(|| text(payload.get("tool_call").and_then(|c| c.get("kind"))))
}

impl Thread {
    fn grants_store(&self) -> Result<Arc<dyn ThreadStore>, Error> {
        self.agent.thread_store().ok_or(Error::ThreadStoreRequired)
    }

    /// The tools always allowed in this thread, sorted.
    pub async fn always_allowed(&self) -> Result<Vec<String>, Error> {
        let policy = self
            .grants_store()?
            .thread_policy(&self.key)
            .await
            .map_err(|e| Error::Thread(ThreadError::Store(e)))?;
        Ok(policy.always_allowed)
    }

    /// Always allow `tool` in this thread; `false` if it already was.
    pub async fn allow_tool(&self, tool: &str) -> Result<bool, Error> {
        self.grants_store()?
            .set_tool_allowed(&self.key, tool, true)
            .await
            .map_err(|e| Error::Thread(ThreadError::Store(e)))
    }

    /// Stop always allowing `tool` in this thread (its next request asks
    /// again); `false` if it was not allowed.
    pub async fn revoke_tool(&self, tool: &str) -> Result<bool, Error> {
        self.grants_store()?
            .set_tool_allowed(&self.key, tool, false)
            .await
            .map_err(|e| Error::Thread(ThreadError::Store(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn permission(payload: Value) -> DecisionRequest {
        let mut d = DecisionRequest::new(DecisionKind::Permission, "test");
        d.payload = Some(payload);
        d
    }

    #[test]
    fn grants_are_named_by_the_tool_each_driver_reports() {
        let name = |p| grant_name(&permission(p));
        assert_eq!(
            name(json!({"tool_name": "Bash", "input": {}})).as_deref(),
            Some("Bash")
        );
        assert_eq!(
            name(json!({"tool": "lookup", "mcp_server": "s"})).as_deref(),
            Some("lookup")
        );
        assert_eq!(
            name(json!({"method": "item/commandExecution/requestApproval"})).as_deref(),
            Some("commandExecution")
        );
        assert_eq!(
            name(json!({"tool_call": {"kind": "execute"}})).as_deref(),
            Some("execute")
        );
        assert_eq!(name(json!({"tool_name": " "})), None);
        let mut question = permission(json!({"tool_name": "AskUserQuestion"}));
        question.kind = DecisionKind::Question;
        assert_eq!(grant_name(&question), None);
    }
}
