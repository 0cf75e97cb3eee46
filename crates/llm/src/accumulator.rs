//! Tool-call assembly from streamed fragments.
//!
//! Fragments are appended (amortized linear) and parsed once when the calls
//! are taken. A call the provider explicitly finished whose arguments are not
//! valid JSON degrades to `{}`; an unfinished one with bad JSON is dropped and
//! counted. Either logs a `tracing` warning with the argument length only,
//! never the text (model output may carry user data).

use serde_json::{Map, Value};

use crate::event::ToolCallDelta;
use crate::message::ToolCall;

#[derive(Debug)]
struct Partial {
    key: String,
    id: Option<String>,
    name: Option<String>,
    arguments: String,
    complete: Option<Value>,
    finished: bool,
}

/// Collects tool calls of one answer in first-seen order.
#[derive(Debug, Default)]
pub struct ToolCallAccumulator {
    pending: Vec<Partial>,
    emitted: Vec<ToolCall>,
    seen: u32,
    dropped: u32,
}

impl ToolCallAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        ToolCallAccumulator::default()
    }

    fn slot(&mut self, key: &str) -> (u32, &mut Partial) {
        let position = match self.pending.iter().position(|p| p.key == key) {
            Some(position) => position,
            None => {
                self.pending.push(Partial {
                    key: key.to_owned(),
                    id: None,
                    name: None,
                    arguments: String::new(),
                    complete: None,
                    finished: false,
                });
                self.seen += 1;
                self.pending.len() - 1
            }
        };
        let index = self.seen - (self.pending.len() - position) as u32;
        (index, &mut self.pending[position])
    }

    /// A fragment of the call known by `key` (an index, item id or block
    /// index); returns the live delta to show.
    pub fn delta(
        &mut self,
        key: &str,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) -> ToolCallDelta {
        let (index, call) = self.slot(key);
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            call.id = Some(id.to_owned());
        }
        if let Some(name) = name.filter(|name| !name.is_empty()) {
            call.name = Some(name.to_owned());
        }
        call.arguments.push_str(arguments);
        ToolCallDelta::new(index, call.id.clone(), call.name.clone(), arguments)
    }

    /// Replaces the argument text of `key` with the provider's final text
    /// (Responses `function_call_arguments.done` / `output_item.done`) and
    /// marks the call finished.
    pub fn complete_arguments(
        &mut self,
        key: &str,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) {
        let (_, call) = self.slot(key);
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            call.id = Some(id.to_owned());
        }
        if let Some(name) = name.filter(|name| !name.is_empty()) {
            call.name = Some(name.to_owned());
        }
        call.arguments.clear();
        call.arguments.push_str(arguments);
        call.finished = true;
    }

    /// A call that arrived whole (Gemini `functionCall`), finished.
    pub fn push_complete(&mut self, key: &str, id: Option<&str>, name: &str, arguments: Value) {
        let (_, call) = self.slot(key);
        call.id = id.map(str::to_owned).or(call.id.take());
        call.name = Some(name.to_owned());
        call.complete = Some(arguments);
        call.finished = true;
    }

    /// The provider finished the call known by `key` (its block closed).
    pub fn finish(&mut self, key: &str) {
        if let Some(call) = self.pending.iter_mut().find(|p| p.key == key) {
            call.finished = true;
        }
    }

    /// The provider finished every pending call (`finish_reason: tool_calls`).
    pub fn finish_all(&mut self) {
        for call in &mut self.pending {
            call.finished = true;
        }
    }

    /// True when calls are waiting to be taken.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Converts every pending call and returns the full set so far when any
    /// call was added (`None` otherwise).
    pub fn take(&mut self) -> Option<Vec<ToolCall>> {
        if self.pending.is_empty() {
            return None;
        }
        let before = self.emitted.len();
        let first_index = self.seen - self.pending.len() as u32;
        for (offset, call) in std::mem::take(&mut self.pending).into_iter().enumerate() {
            let index = first_index + offset as u32;
            if let Some(call) = self.convert(index, call) {
                self.emitted.push(call);
            }
        }
        (self.emitted.len() > before).then(|| self.emitted.clone())
    }

    /// Drops every pending call (the answer ended for a reason that makes
    /// them untrustworthy: `length`, `content_filter`, an error) and counts
    /// them.
    pub fn discard_pending(&mut self) -> u32 {
        let count = self.pending.len() as u32;
        if count > 0 {
            tracing::warn!(
                count,
                "tool calls discarded: the answer did not finish them"
            );
        }
        self.pending.clear();
        self.dropped += count;
        count
    }

    /// Calls dropped so far.
    pub fn dropped(&self) -> u32 {
        self.dropped
    }

    /// Calls emitted so far.
    pub fn emitted(&self) -> &[ToolCall] {
        &self.emitted
    }

    fn convert(&mut self, index: u32, call: Partial) -> Option<ToolCall> {
        let Some(name) = call.name else {
            tracing::warn!(index, "tool call dropped: the provider never named it");
            self.dropped += 1;
            return None;
        };
        let id = call.id.unwrap_or_else(|| format!("call_{index}"));
        if let Some(arguments) = call.complete {
            return Some(ToolCall::new(id, name, arguments));
        }
        let text = call.arguments.trim();
        let parsed = if text.is_empty() {
            Ok(Value::Object(Map::new()))
        } else {
            serde_json::from_str::<Value>(text)
        };
        match parsed {
            Ok(arguments) => Some(ToolCall::new(id, name, arguments)),
            Err(_) if call.finished => {
                tracing::warn!(
                    tool = %name,
                    bytes = call.arguments.len(),
                    "finished tool call had invalid JSON arguments; using {{}}"
                );
                Some(ToolCall::new(id, name, Value::Object(Map::new())))
            }
            Err(_) => {
                tracing::warn!(
                    tool = %name,
                    bytes = call.arguments.len(),
                    "unfinished tool call with invalid JSON arguments dropped"
                );
                self.dropped += 1;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn interleaved_fragments_assemble_in_first_seen_order() {
        let mut acc = ToolCallAccumulator::new();
        let d = acc.delta("1", Some("b"), Some("second"), "");
        assert_eq!(d.index, 0);
        acc.delta("0", Some("a"), Some("first"), "{\"x\":");
        acc.delta("1", None, None, "{}");
        let d = acc.delta("0", None, None, "1}");
        assert_eq!((d.index, d.id.as_deref()), (1, Some("a")));
        acc.finish_all();
        let calls = acc.take().unwrap();
        assert_eq!(
            calls,
            vec![
                ToolCall::new("b", "second", json!({})),
                ToolCall::new("a", "first", json!({"x": 1}))
            ]
        );
        assert_eq!(acc.take(), None);
    }

    #[test]
    fn finished_bad_json_degrades_unfinished_is_dropped() {
        let mut acc = ToolCallAccumulator::new();
        acc.delta("0", Some("a"), Some("t"), "{\"x\":");
        acc.finish("0");
        acc.delta("1", Some("b"), Some("u"), "{\"y\":");
        let calls = acc.take().unwrap();
        assert_eq!(calls, vec![ToolCall::new("a", "t", json!({}))]);
        assert_eq!(acc.dropped(), 1);
    }

    #[test]
    fn full_set_grows_and_discard_counts() {
        let mut acc = ToolCallAccumulator::new();
        acc.push_complete("0", None, "t", json!({"a": 1}));
        assert_eq!(acc.take().unwrap().len(), 1);
        acc.push_complete("1", Some("id"), "u", json!({}));
        let all = acc.take().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].id, "call_0");
        acc.delta("2", Some("c"), Some("v"), "{");
        assert_eq!(acc.discard_pending(), 1);
        assert_eq!(acc.dropped(), 1);
        acc.delta("3", Some("d"), None, "{}");
        assert_eq!(acc.take(), None);
        assert_eq!(acc.dropped(), 2);
    }
}
