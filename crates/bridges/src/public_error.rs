//! What a web client is told about a failed run: a stable code and a short
//! message. Internals (a store's SQL error, a path) stay in the server log.

use agent_adaptor_core::thread::ThreadError;
use agent_adaptor_core::{Error, RunCause};

/// What a client is told when the thread store failed.
pub(crate) const STORE_MESSAGE: &str =
    "the thread store is unavailable; the server log has the details";

/// The code and message a client gets for `e`. A thread-store failure is
/// reported as `thread_store_unavailable` with a fixed message, whatever the
/// backend said; the details are logged (at `warn`) with `run_id`.
pub(crate) fn public_error(e: &Error, run_id: &str) -> (String, String) {
    if store_failure(e) {
        tracing::warn!(run_id, error = %e, "run failed: thread store");
        return ("thread_store_unavailable".into(), STORE_MESSAGE.into());
    }
    (error_code(e), e.to_string())
}

/// Whether the failure came from the thread store's backend (its message
/// is then for the server log only).
pub(crate) fn store_failure(e: &Error) -> bool {
    let from_store =
        |t: &ThreadError| matches!(t, ThreadError::Store(_) | ThreadError::EventLog(_));
    match e {
        Error::Thread(t) => from_store(t),
        Error::Run(r) => matches!(&r.cause, Some(RunCause::Thread(t)) if from_store(t)),
        _ => false,
    }
}

/// The code of an error: the failure reason of a run error, else the
/// pre-start error's kind.
pub(crate) fn error_code(e: &Error) -> String {
    match e {
        Error::Run(r) => r.reason.as_str().to_owned(),
        Error::InvalidDriverConfig(_) => "invalid_driver_config".into(),
        Error::NoRuntime => "no_runtime".into(),
        Error::ThreadStoreRequired => "thread_store_required".into(),
        Error::Thread(ThreadError::Busy { .. }) => "thread_busy".into(),
        Error::Thread(_) => "thread_error".into(),
        Error::RuntimeShutdown => "runtime_shutdown".into(),
        Error::InvalidOption { .. } => "invalid_option".into(),
        _ => "error".into(),
    }
}

#[cfg(test)]
mod tests {
    use agent_adaptor_core::thread::StoreError;

    use super::*;

    #[test]
    fn a_store_failure_hides_the_backend_message() {
        let e = Error::Thread(ThreadError::Store(StoreError::Backend(
            "sqlite acquire_lease: database error 778".into(),
        )));
        let (code, message) = public_error(&e, "run_1");
        assert_eq!(code, "thread_store_unavailable");
        assert!(
            !message.contains("778") && !message.contains("sqlite"),
            "{message}"
        );
    }

    #[test]
    fn an_event_log_failure_hides_the_backend_message_too() {
        let e = Error::Thread(ThreadError::EventLog(StoreError::Backend(
            "postgres append_events: password=hunter2 rejected".into(),
        )));
        let (code, message) = public_error(&e, "run_1");
        assert_eq!(code, "thread_store_unavailable");
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn other_errors_keep_their_message() {
        let e = Error::Thread(ThreadError::Busy { key: "k".into() });
        let (code, message) = public_error(&e, "run_1");
        assert_eq!(code, "thread_busy");
        assert_eq!(message, e.to_string());
    }
}
