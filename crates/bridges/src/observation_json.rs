//! The JSON both web bridges show for an observation, so AG-UI activity
//! content and A2A data parts name the same fields the same way.

use agent_adaptor_core::driver::CapabilityInvocation;
use serde_json::{Map, Value, json};

/// A capability invocation's fields in camelCase: `capability`, `name`,
/// `server`?, `operation`, `phase`, `toolCallId`?, `durationMs`?, `error`?,
/// `scopeId`? (optional ones only when set).
pub(crate) fn capability(i: &CapabilityInvocation) -> Map<String, Value> {
    let mut d = Map::new();
    d.insert("capability".into(), json!(i.kind));
    d.insert("name".into(), json!(i.name));
    if let Some(s) = &i.server {
        d.insert("server".into(), json!(s));
    }
    d.insert("operation".into(), json!(i.operation));
    d.insert("phase".into(), json!(i.phase));
    if let Some(id) = &i.tool_call_id {
        d.insert("toolCallId".into(), json!(id.to_string()));
    }
    if let Some(ms) = i.duration_ms {
        d.insert("durationMs".into(), json!(ms));
    }
    if let Some(e) = &i.error {
        d.insert("error".into(), json!(e));
    }
    if let Some(s) = &i.scope_id {
        d.insert("scopeId".into(), json!(s));
    }
    d
}
