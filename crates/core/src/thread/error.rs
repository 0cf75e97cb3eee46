//! [`ThreadError`]: why a thread run could not proceed. A leaf (it knows
//! the store's errors only), so that [`Error`](crate::Error) holds it
//! without importing the thread machinery.

use super::store::StoreError;

/// Why a thread run could not proceed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ThreadError {
    /// `resume_only` (or a fork) found no record.
    #[error("thread {key} not found")]
    NotFound {
        /// The key.
        key: String,
    },
    /// Another run holds the key.
    #[error("thread {key} is busy")]
    Busy {
        /// The key.
        key: String,
    },
    /// The record cannot be resumed by this agent (driver, config, model,
    /// workspace or codec changed), or the driver cannot resume at all.
    #[error("thread incompatible: {reason}")]
    Incompatible {
        /// Why.
        reason: String,
        /// The stored record this agent cannot continue, when one is the
        /// cause (a strict thread, [`Thread::refuse_incompatible`](crate::Thread::refuse_incompatible),
        /// a resume or a fork).
        record: Option<Box<Mismatch>>,
    },
    /// The lease expired or was taken over during the run; nothing was saved.
    #[error("lease on thread {key} was lost")]
    LeaseLost {
        /// The key.
        key: String,
    },
    /// A fork targeted a key that already has a record.
    #[error("thread {key} already exists")]
    AlreadyExists {
        /// The key.
        key: String,
    },
    /// The run succeeded without a valid checkpoint; the thread keeps its
    /// previous state.
    #[error("the run produced no valid checkpoint; the thread keeps its previous state")]
    CheckpointMissing,
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
    /// The thread's event log could not be written: the run was stopped
    /// (its log holds a prefix of its events).
    #[error("event log: {0}")]
    EventLog(StoreError),
}

/// A stored record this agent cannot continue: which record, whose it is,
/// and what differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The thread key.
    pub key: String,
    /// The record's id.
    pub record_id: String,
    /// The driver type that wrote the record (`claude`, `llm` …).
    pub record_driver: String,
    /// This agent's driver type.
    pub driver: String,
    /// What differs: `driver`, `codec`, or `configuration` (the driver's
    /// settings, the model, the workspace or the durable equipment; the
    /// record keeps only their fingerprint, so which one is not known).
    pub differs: Vec<&'static str>,
}

impl Mismatch {
    /// One phrase: "thread t1 holds a llm session that this claude agent
    /// cannot continue (driver differs)".
    pub fn describe(&self) -> String {
        format!(
            "thread {} holds a {} session that this {} agent cannot continue ({} {})",
            self.key,
            self.record_driver,
            self.driver,
            self.differs.join(", "),
            if self.differs.len() == 1 {
                "differs"
            } else {
                "differ"
            }
        )
    }
}

impl ThreadError {
    /// `e`, a store failure on the thread `key`, as a thread error.
    pub(crate) fn from_store(e: StoreError, key: &str) -> Self {
        match e {
            StoreError::Busy { .. } => ThreadError::Busy { key: key.into() },
            StoreError::LeaseLost { .. } => ThreadError::LeaseLost { key: key.into() },
            StoreError::AlreadyExists { key } => ThreadError::AlreadyExists { key },
            other => ThreadError::Store(other),
        }
    }
}
