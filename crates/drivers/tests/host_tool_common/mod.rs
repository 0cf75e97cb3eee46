//! A host tool for the driver tests of the loopback MCP channel: `lookup`,
//! defined with `Tool::define`, records the decoded inputs it ran with and
//! answers `host-value-of-<key>`; and what the events must show of its call.

use std::sync::{Arc, Mutex};

use agent_adaptor_core::{Event, Tool};
use agent_adaptor_driver::ToolScope;
use serde_json::{Value, json};

/// The tool's input.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct LookupIn {
    /// The key to look up.
    pub key: String,
}

/// The tool's output.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct LookupOut {
    /// `host-value-of-<key>`.
    pub value: String,
}

/// The answer to `key`.
pub fn value_of(key: &str) -> String {
    format!("host-value-of-{key}")
}

/// The `lookup` tool, trusted (the host's approval is the toolbox's,
/// proven in core), and the keys it was called with.
pub fn lookup_tool() -> (Tool, Arc<Mutex<Vec<String>>>) {
    let (tool, seen) = asking_lookup_tool();
    (tool.trusted(), seen)
}

/// The `lookup` tool as defined (the run's policy asks the host before each
/// call), and the keys it was called with.
pub fn asking_lookup_tool() -> (Tool, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keys = seen.clone();
    let tool = Tool::define(
        "lookup",
        "Looks a key up in the host's table.",
        move |input: LookupIn, _ctx| {
            let keys = keys.clone();
            async move {
                keys.lock().unwrap().push(input.key.clone());
                Ok(LookupOut {
                    value: value_of(&input.key),
                })
            }
        },
    );
    (tool, seen)
}

/// The events show one call of the host tool `lookup` with `{"key": key}`
/// and its output.
pub fn assert_host_call(events: &[Event], key: &str) {
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall(c) if c.scope == ToolScope::Host && !c.name.is_empty() => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "one host tool call: {calls:?}");
    assert_eq!(calls[0].name, "lookup");
    assert_eq!(calls[0].args, Some(json!({ "key": key })));
    let id = &calls[0].id;
    let result = events.iter().find_map(|e| match e {
        Event::ToolResult(r) if r.id == *id => r.result.clone(),
        Event::ToolCall(c) if c.id == *id && c.result.is_some() => c.result.clone(),
        _ => None,
    });
    let text = result.map(|v: Value| v.to_string()).unwrap_or_default();
    assert!(text.contains(&value_of(key)), "the output: {text}");
}
