//! The host tool calls of one run that are in flight while the pump goes on
//! reading the agent's output.
//!
//! A handler may be slow (a database, an approval the host takes its time
//! to give), and the agent may go on writing meanwhile (other tool calls,
//! progress notifications). So a [`Controller`](crate::pump::Controller)
//! does not await a call in [`control`](crate::pump::Controller::control):
//! it [`start`](HostCalls::start)s it here, and the pump polls the set
//! between lines ([`Controller::poll_work`](crate::pump::Controller::poll_work)):
//! a finished call is [`take`](HostCalls::take)n and answered in
//! [`Controller::finish_work`](crate::pump::Controller::finish_work). The
//! calls borrow the run's sink (approvals and host-failure notices go
//! through it), so they live in the run's own task — no detached task, and
//! dropping the set (the run ended, was cancelled or lost its agent) drops
//! every call in flight.

use std::fmt;
use std::task::{Context, Poll};

use agent_adaptor_driver::{CancellationToken, EventSink, HostToolCall, HostToolResult, HostTools};
use futures::StreamExt as _;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;

/// The in-flight host tool calls of one run, each tagged with the agent's
/// `K` (the request id to answer).
pub struct HostCalls<'s, K> {
    tools: HostTools,
    sink: &'s dyn EventSink,
    cancel: CancellationToken,
    running: FuturesUnordered<BoxFuture<'s, (K, HostToolResult)>>,
    done: Vec<(K, HostToolResult)>,
}

impl<'s, K: Send + 's> HostCalls<'s, K> {
    /// No call yet: `tools` are the run's host tools, `sink` the run's sink
    /// and `cancel` its cancellation.
    pub fn new(tools: HostTools, sink: &'s dyn EventSink, cancel: CancellationToken) -> Self {
        HostCalls {
            tools,
            sink,
            cancel,
            running: FuturesUnordered::new(),
            done: Vec::new(),
        }
    }

    /// Start `call`, to be answered as `key`. It makes progress while the
    /// set is polled ([`poll_ready`](Self::poll_ready)).
    pub fn start(&mut self, key: K, call: HostToolCall) {
        let tools = self.tools.clone();
        let sink = self.sink;
        let cancel = self.cancel.clone();
        self.running.push(Box::pin(async move {
            let result = tools.call(call, sink, &cancel).await;
            (key, result)
        }));
    }

    /// Drive the calls: `Ready` once some finished (take them with
    /// [`take`](Self::take)); `Pending` while none did, also when none is
    /// in flight. Cancel safe: a finished call is kept until taken.
    pub fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while let Poll::Ready(Some(finished)) = self.running.poll_next_unpin(cx) {
            self.done.push(finished);
        }
        if self.done.is_empty() {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }

    /// The calls finished so far, in the order they finished.
    pub fn take(&mut self) -> Vec<(K, HostToolResult)> {
        std::mem::take(&mut self.done)
    }

    /// How many calls are in flight or finished but not taken.
    pub fn len(&self) -> usize {
        self.running.len() + self.done.len()
    }

    /// True when no call is in flight and none waits to be taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K> fmt::Debug for HostCalls<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostCalls")
            .field("tools", &self.tools)
            .field("running", &self.running.len())
            .field("done", &self.done.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use agent_adaptor_driver::{
        Emit, HostToolSpec, HostToolStatus, HostToolbox, RunEvent, StreamPayload, async_trait,
    };
    use serde_json::{Value, json};
    use tokio::sync::Notify;

    use super::*;

    struct Quiet;

    impl EventSink for Quiet {
        fn emit(&self, _event: RunEvent) -> Emit<'_> {
            Emit::ready(Ok(()))
        }
        fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
            Emit::ready(Ok(()))
        }
    }

    /// `slow` waits for `release`; `fast` answers at once; both count
    /// their runs.
    struct Gate {
        specs: Vec<HostToolSpec>,
        release: Notify,
        runs: AtomicUsize,
    }

    #[async_trait]
    impl HostToolbox for Gate {
        fn specs(&self) -> &[HostToolSpec] {
            &self.specs
        }
        async fn call(
            &self,
            call: HostToolCall,
            _sink: &dyn EventSink,
            cancel: &CancellationToken,
        ) -> HostToolResult {
            self.runs.fetch_add(1, Ordering::SeqCst);
            if call.tool == "slow" {
                tokio::select! {
                    () = self.release.notified() => {}
                    () = cancel.cancelled() => {
                        return HostToolResult::error(HostToolStatus::Cancelled, "cancelled");
                    }
                }
            }
            HostToolResult::ok(json!({ "tool": call.tool, "input": call.input }))
        }
    }

    fn gate() -> Arc<Gate> {
        let spec = |name: &str| HostToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            trusted: false,
        };
        Arc::new(Gate {
            specs: vec![spec("slow"), spec("fast")],
            release: Notify::new(),
            runs: AtomicUsize::new(0),
        })
    }

    async fn ready<'a, K: Send + 'a>(calls: &mut HostCalls<'a, K>) {
        std::future::poll_fn(|cx| calls.poll_ready(cx)).await;
    }

    fn poll_once<'a, K: Send + 'a>(calls: &mut HostCalls<'a, K>) -> Poll<()> {
        calls.poll_ready(&mut Context::from_waker(std::task::Waker::noop()))
    }

    #[tokio::test]
    async fn a_slow_call_does_not_hold_up_a_fast_one() {
        let gate = gate();
        let sink = Quiet;
        let mut calls = HostCalls::new(
            HostTools::new(gate.clone()),
            &sink,
            CancellationToken::new(),
        );
        assert_eq!(poll_once(&mut calls), Poll::Pending, "nothing in flight");
        calls.start(1, HostToolCall::new("c1", "slow", json!({})));
        calls.start(2, HostToolCall::new("c2", "fast", json!({"n": 2})));
        ready(&mut calls).await;
        let done = calls.take();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].0, 2);
        assert_eq!(
            done[0].1.output,
            Some(json!({"tool": "fast", "input": {"n": 2}}))
        );
        assert_eq!(calls.len(), 1, "the slow one is still running");
        assert_eq!(poll_once(&mut calls), Poll::Pending);
        gate.release.notify_one();
        ready(&mut calls).await;
        let done = calls.take();
        assert_eq!(done[0].0, 1);
        assert!(calls.is_empty());
        assert_eq!(gate.runs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn the_runs_cancellation_reaches_a_call_in_flight() {
        let gate = gate();
        let sink = Quiet;
        let cancel = CancellationToken::new();
        let mut calls = HostCalls::new(HostTools::new(gate.clone()), &sink, cancel.clone());
        calls.start("a", HostToolCall::new("c1", "slow", Value::Null));
        assert_eq!(poll_once(&mut calls), Poll::Pending);
        cancel.cancel();
        ready(&mut calls).await;
        let done = calls.take();
        assert_eq!(done[0].1.status, HostToolStatus::Cancelled);
    }

    #[tokio::test]
    async fn without_tools_a_call_is_answered_unknown() {
        let sink = Quiet;
        let mut calls = HostCalls::new(HostTools::default(), &sink, CancellationToken::new());
        calls.start((), HostToolCall::new("c1", "lookup", json!({})));
        ready(&mut calls).await;
        assert_eq!(calls.take()[0].1.status, HostToolStatus::UnknownTool);
    }
}
