//! Recording AG-UI runs into their thread's event log, and reading the
//! conversation back from it.
//!
//! A run's records, in order: a run notice ([`RUN_NOTICE`], carrying the
//! prompt and [`RunMeta`]: owner, AG-UI ids, the snapshot sent), the core
//! events the run's mapper read (process output excluded: AG-UI maps it to
//! nothing), and a terminal notice ([`TERMINAL_NOTICE`]) holding the frames
//! that ended the AG-UI run verbatim (they depend on the run's outcome, or
//! on the time an interrupt was sent, which the core events do not carry).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use agent_adaptor_core::driver::Role;
use agent_adaptor_core::event::{EventMeta, Notice};
use agent_adaptor_core::thread::event_log::{EventQuery, NewEvent, RecordedEvent, Retention};
use agent_adaptor_core::thread::store::StoreError;
use agent_adaptor_core::{Event, Phase, ThreadStore};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::run::FrameId;
use super::wire::{FunctionCall, Message, MessageToolCall};

/// The notice kind of a run's first record.
pub(crate) const RUN_NOTICE: &str = "agui.run";
/// The notice kind of a run's terminal frames.
pub(crate) const TERMINAL_NOTICE: &str = "agui.terminal";

/// What a replay needs to know about a recorded AG-UI run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunMeta {
    /// Who started it: its principal's
    /// [`digest`](crate::Principal::digest).
    pub(crate) owner: String,
    /// The AG-UI thread id.
    pub(crate) thread_id: String,
    /// The AG-UI run id.
    pub(crate) run_id: String,
    /// The client's id of the prompt message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) user_message_id: Option<String>,
    /// The `MESSAGES_SNAPSHOT` sent after `RUN_STARTED`, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) snapshot: Option<Vec<Message>>,
    /// Set when this AG-UI run resumes an interrupted core run: the
    /// timestamp (ms) of its `RUN_STARTED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resumed_at: Option<i64>,
}

/// One frame of a terminal notice.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TerminalFrame {
    /// The SSE id.
    pub(crate) id: String,
    /// The frame's JSON.
    pub(crate) json: String,
}

/// The conversation of thread `key` as its event log holds it (see
/// [`history`]).
pub async fn thread_history(
    store: &dyn ThreadStore,
    key: &str,
) -> Result<Vec<Message>, StoreError> {
    Ok(history(&read_all(store, key).await?))
}

/// Whether a store error means "this store keeps no event log".
pub(crate) fn unsupported(e: &StoreError) -> bool {
    matches!(e, StoreError::Unsupported(_))
}

/// The notice kind a host records in a thread's log when it recovered a
/// run whose host died (see [`record_interruption`]).
pub const INTERRUPTION_NOTICE: &str = "thread.run_interrupted";

/// Record in `run`'s thread log that the run was interrupted (its host
/// died and another recovered its lease): a notice under its own run id
/// (`<run id>/interrupted`), so that every replay following the run ends it
/// at once as interrupted instead of after the idle limit, and a history
/// shows where it stopped.
pub async fn record_interruption(
    store: &dyn ThreadStore,
    run: &agent_adaptor_core::thread::InterruptedRun,
) -> Result<(), StoreError> {
    let run_id = format!("{}/interrupted", run.run_id);
    let mut ev = notice(
        &run_id,
        &run.key,
        0,
        INTERRUPTION_NOTICE,
        serde_json::json!({
            "runId": run.run_id,
            "startedAt": run.started_at,
            "interruptedAt": run.interrupted_at,
        }),
    );
    if let Event::Notice(n) = &mut ev {
        n.text = "the server running this turn stopped; the thread can be continued".into();
    }
    store
        .append_events(&run.key, &run_id, &[NewEvent::now(ev)])
        .await
        .map(|_| ())
}

fn notice(run_id: &str, key: &str, sequence: u64, kind: &'static str, data: Value) -> Event {
    Event::Notice(Notice {
        meta: EventMeta {
            run_id: Arc::from(run_id),
            thread_key: Some(Arc::from(key)),
            sequence,
            time: chrono::Utc::now(),
            source: None,
        },
        kind: Cow::Borrowed(kind),
        text: String::new(),
        item: None,
        metadata: BTreeMap::new(),
        data: Some(data),
    })
}

/// Appends one run's records. A failing append is logged (without the
/// store's words, which may name its server) and stops the recording: a
/// replay of the run then ends with `RUN_ERROR` `interrupted`.
pub(crate) struct Recorder {
    store: Arc<dyn ThreadStore>,
    key: String,
    run_id: String,
    retention: Retention,
    last_sequence: u64,
    broken: bool,
}

impl Recorder {
    /// Record the start of core run `run_id` on thread `key`.
    pub(crate) async fn start(recording: super::source::Recording, run_id: String) -> Recorder {
        let super::source::Recording {
            store,
            key,
            meta,
            prompt,
            retention,
        } = recording;
        let mut rec = Recorder {
            store,
            key,
            run_id,
            retention,
            last_sequence: 0,
            broken: false,
        };
        let data = serde_json::to_value(&meta).unwrap_or(Value::Null);
        let mut first = NewEvent::now(notice(&rec.run_id, &rec.key, 0, RUN_NOTICE, data));
        if let Some(prompt) = prompt {
            first = first.with_prompt(prompt);
        }
        rec.append(vec![first]).await;
        rec
    }

    async fn append(&mut self, events: Vec<NewEvent>) {
        if self.broken || events.is_empty() {
            return;
        }
        if let Err(e) = self
            .store
            .append_events(&self.key, &self.run_id, &events)
            .await
        {
            self.broken = true;
            tracing::warn!(
                run_id = %self.run_id,
                unsupported = unsupported(&e),
                "agui: recording the run into the event log failed; its replay will end as interrupted"
            );
        }
    }

    /// Record the core events the mapper read.
    pub(crate) async fn events(&mut self, events: Vec<Event>) {
        let batch: Vec<NewEvent> = events
            .into_iter()
            .filter(|e| !matches!(e, Event::ProcessInfo(_)))
            .inspect(|e| self.last_sequence = self.last_sequence.max(e.meta().sequence))
            .map(NewEvent::now)
            .collect();
        self.append(batch).await;
    }

    /// Record the frames that ended the AG-UI run.
    pub(crate) async fn terminal(&mut self, frames: &[(FrameId, String)]) {
        let frames: Vec<TerminalFrame> = frames
            .iter()
            .map(|(id, json)| TerminalFrame {
                id: id.to_string(),
                json: json.clone(),
            })
            .collect();
        let data = serde_json::to_value(frames).unwrap_or(Value::Null);
        let ev = notice(
            &self.run_id,
            &self.key,
            self.last_sequence,
            TERMINAL_NOTICE,
            data,
        );
        self.append(vec![NewEvent::now(ev)]).await;
        if self.retention != Retention::keep_all()
            && let Err(e) = self.store.prune_events(&self.key, &self.retention).await
        {
            tracing::warn!(
                run_id = %self.run_id,
                unsupported = unsupported(&e),
                "agui: pruning the event log after the run failed"
            );
        }
    }
}

/// Every record of `key`'s log, oldest first (paged).
pub(crate) async fn read_all(
    store: &dyn ThreadStore,
    key: &str,
) -> Result<Vec<RecordedEvent>, StoreError> {
    read_since(store, key, 0).await
}

/// Every record of `key`'s log after cursor `after`, oldest first.
pub(crate) async fn read_since(
    store: &dyn ThreadStore,
    key: &str,
    after: u64,
) -> Result<Vec<RecordedEvent>, StoreError> {
    let mut out = Vec::new();
    let mut query = Some(EventQuery::since(after));
    while let Some(q) = query {
        let page = store.events(key, &q).await?;
        out.extend(page.events);
        query = page.next;
    }
    Ok(out)
}

/// The run notice's metadata, when `rec` is one.
pub(crate) fn run_meta(rec: &RecordedEvent) -> Option<RunMeta> {
    match &rec.event {
        Event::Notice(n) if n.kind == RUN_NOTICE => serde_json::from_value(n.data.clone()?).ok(),
        _ => None,
    }
}

/// The conversation a log holds, as AG-UI messages: each run's prompt (a
/// user message), the assistant's text and tool calls, and tool results.
pub fn history(records: &[RecordedEvent]) -> Vec<Message> {
    let mut h = History::default();
    for rec in records {
        h.record(rec);
    }
    h.messages
}

#[derive(Default)]
struct History {
    messages: Vec<Message>,
    /// Assistant message id → index.
    assistant: BTreeMap<String, usize>,
    /// Tool call id → (message index, call index).
    calls: BTreeMap<String, (usize, usize)>,
    results: std::collections::BTreeSet<String>,
}

impl History {
    fn record(&mut self, rec: &RecordedEvent) {
        if let Some(prompt) = &rec.prompt {
            let id = run_meta(rec)
                .and_then(|m| m.user_message_id)
                .unwrap_or_else(|| format!("{}-user", rec.run_id));
            self.messages.push(Message::User {
                id,
                content: prompt.clone(),
            });
        }
        match &rec.event {
            Event::TextDelta(t) if t.role == Role::Assistant => {
                let i = self.assistant_message(t.message_id.as_str());
                if let Message::Assistant { content, .. } = &mut self.messages[i]
                    && !t.text.is_empty()
                {
                    content.get_or_insert_with(String::new).push_str(&t.text);
                }
            }
            Event::ToolCall(c) => self.tool_call(c),
            Event::ToolResult(r) => {
                if let Some(result) = &r.result {
                    self.tool_result(r.id.as_str(), result);
                }
            }
            _ => {}
        }
    }

    fn assistant_message(&mut self, id: &str) -> usize {
        if let Some(&i) = self.assistant.get(id) {
            return i;
        }
        self.messages.push(Message::Assistant {
            id: id.to_owned(),
            content: None,
            tool_calls: None,
        });
        let i = self.messages.len() - 1;
        self.assistant.insert(id.to_owned(), i);
        i
    }

    fn tool_call(&mut self, c: &agent_adaptor_core::event::ToolCall) {
        let id = c.id.as_str();
        let (mi, ci) = match self.calls.get(id) {
            Some(&at) => at,
            None => {
                // The call joins the assistant message just before it, or
                // opens its own (as the AG-UI client does).
                let mi = match self.messages.last() {
                    Some(Message::Assistant { .. }) => self.messages.len() - 1,
                    _ => self.assistant_message(id),
                };
                let Message::Assistant { tool_calls, .. } = &mut self.messages[mi] else {
                    return;
                };
                let calls = tool_calls.get_or_insert_with(Vec::new);
                calls.push(MessageToolCall {
                    id: id.to_owned(),
                    kind: "function".into(),
                    function: FunctionCall {
                        name: c.name.clone(),
                        arguments: String::new(),
                    },
                });
                let at = (mi, calls.len() - 1);
                self.calls.insert(id.to_owned(), at);
                at
            }
        };
        if let Message::Assistant {
            tool_calls: Some(calls),
            ..
        } = &mut self.messages[mi]
            && let Some(call) = calls.get_mut(ci)
        {
            if call.function.name.is_empty() && !c.name.is_empty() {
                call.function.name = c.name.clone();
            }
            match (&c.args, c.phase) {
                (Some(args), _) => call.function.arguments = args.to_string(),
                (None, _) => call.function.arguments.push_str(&c.args_delta),
            }
        }
        if c.phase == Phase::End
            && let Some(result) = &c.result
        {
            self.tool_result(id, result);
        }
    }

    fn tool_result(&mut self, id: &str, result: &Value) {
        if !self.calls.contains_key(id) || !self.results.insert(id.to_owned()) {
            return;
        }
        let content = match result {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.messages.push(Message::Tool {
            id: format!("{id}-result"),
            content,
            tool_call_id: id.to_owned(),
        });
    }
}
