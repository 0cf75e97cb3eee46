//! Event sinks for processes that are not agent runs (git, services): the
//! process helper reports every output chunk to a sink; these keep only what
//! the manager needs.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use agent_adaptor_driver::{Emit, EventSink, OutputStream, RunEvent, StreamPayload};

/// Accepts and forgets everything (the full capture is in `Finished`).
pub(crate) struct Discard;

impl EventSink for Discard {
    fn emit(&self, _event: RunEvent) -> Emit<'_> {
        Emit::ready(Ok(()))
    }
    fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
        Emit::ready(Ok(()))
    }
}

/// Keeps the last `cap` bytes of stderr, shared with whoever reports a
/// service failure.
#[derive(Clone)]
pub(crate) struct StderrTail {
    buf: Arc<Mutex<VecDeque<u8>>>,
    cap: usize,
}

impl StderrTail {
    /// A tail of at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> Self {
        StderrTail {
            buf: Arc::new(Mutex::new(VecDeque::with_capacity(cap))),
            cap,
        }
    }

    /// The tail as (lossy) text.
    pub(crate) fn text(&self) -> String {
        let buf = match self.buf.lock() {
            Ok(b) => b,
            Err(poisoned) => poisoned.into_inner(),
        };
        let bytes: Vec<u8> = buf.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn push(&self, bytes: &[u8]) {
        let mut buf = match self.buf.lock() {
            Ok(b) => b,
            Err(poisoned) => poisoned.into_inner(),
        };
        buf.extend(bytes.iter().copied());
        while buf.len() > self.cap {
            buf.pop_front();
        }
    }
}

impl EventSink for StderrTail {
    fn emit(&self, event: RunEvent) -> Emit<'_> {
        if let RunEvent::Chunk {
            stream: OutputStream::Stderr,
            bytes,
        } = &event
        {
            self.push(bytes);
        }
        Emit::ready(Ok(()))
    }
    fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
        Emit::ready(Ok(()))
    }
}
