//! [`Desk::answer_checked`]: the checks every bridge makes before it
//! records an answer to an approval another host waits on.

use agent_adaptor_core::thread::durable::{AnswerRefused, ApprovalRow};
use agent_adaptor_core::thread::store::StoreError;
use serde_json::Value;

use super::Desk;

/// Why [`Desk::answer_checked`] recorded no answer.
#[derive(Debug)]
pub enum NotAnswered<E> {
    /// No such approval in that thread (or a store that keeps none).
    NotFound,
    /// Another principal's approval.
    Forbidden,
    /// The bridge's check refused the answer.
    Invalid(E),
    /// The store refused the answer (already answered, expired, gone).
    Refused {
        /// Why.
        why: AnswerRefused,
        /// The row as it was read before the answer.
        row: Box<ApprovalRow>,
    },
    /// The store failed.
    Store(StoreError),
}

impl Desk {
    /// Answer approval `id` of thread `key` as `principal` (the digest the
    /// row keeps), checked first: the row exists in `key`, `principal`
    /// owns it, and `check` (the bridge's own, given the row's request)
    /// accepts the answer and returns what to record. Then recorded and
    /// notified as [`answer`](Self::answer) does; the answered row.
    pub async fn answer_checked<E>(
        &self,
        id: &str,
        principal: &str,
        key: &str,
        check: impl FnOnce(&Value) -> Result<Value, E>,
    ) -> Result<ApprovalRow, NotAnswered<E>> {
        let row = match self.approval(id).await {
            Ok(Some(row)) if row.key == key => row,
            Ok(_) | Err(StoreError::Unsupported(_)) => return Err(NotAnswered::NotFound),
            Err(e) => return Err(NotAnswered::Store(e)),
        };
        if row.principal != principal {
            return Err(NotAnswered::Forbidden);
        }
        let answer = check(&row.request).map_err(NotAnswered::Invalid)?;
        match self.answer(id, principal, answer).await {
            Ok(Ok(answered)) => Ok(answered),
            Ok(Err(why)) => Err(NotAnswered::Refused {
                why,
                row: Box::new(row),
            }),
            Err(e) => Err(NotAnswered::Store(e)),
        }
    }
}
