//! The observation rules (OBS-01–08): what the checker keeps about todo
//! lists, capability invocations, subagents and images, and how it judges
//! each payload.

use std::collections::{HashMap, HashSet};

use super::Violation;
use crate::observation::{
    CapabilityInvocation, CapabilityKind, CapabilityPhase, ImagePayload, MAX_TODO_ITEMS,
    ObservationSource, ObservationSupport, SubagentPhase, SubagentReport, TodoSnapshot, valid_name,
};
use crate::stream::StreamKind;

/// What identifies an invocation across its phases (OBS-04).
type Identity = (
    CapabilityKind,
    String,
    Option<String>,
    Option<crate::LifecycleId>,
);

/// The observation state of one run.
#[derive(Debug, Clone, Default)]
pub(super) struct Observations {
    /// Per scope: the last revision and its items.
    todos: HashMap<Option<String>, (u64, Vec<crate::observation::TodoItem>)>,
    /// Open invocations by (scope, id), with their identity.
    open_capabilities: HashMap<(Option<String>, String), Identity>,
    /// Every (scope, id) ever started.
    started_capabilities: HashSet<(Option<String>, String)>,
    /// Open subagent scopes.
    open_subagents: HashSet<String>,
    /// Every subagent scope ever started.
    started_subagents: HashSet<String>,
}

impl Observations {
    /// Judge one observation payload (`kind` must be one); on success,
    /// advance the state. `raw` says whether the payload carried raw
    /// provider fields (a second payload: OBS-02).
    pub(super) fn check(
        &mut self,
        support: ObservationSupport,
        kind: &StreamKind,
        raw: bool,
    ) -> Result<(), Violation> {
        let name = kind.name();
        let declared = match kind {
            StreamKind::TodoUpdated(_) => support.todos,
            StreamKind::Capability(_) => support.capabilities,
            StreamKind::Subagent(_) => support.subagents,
            StreamKind::Image(_) => support.images,
            _ => return Ok(()),
        };
        if !declared {
            return Err(Violation::new(
                "OBS-01",
                format_args!("{name} from a transport that does not declare it"),
            ));
        }
        if raw {
            return Err(Violation::new(
                "OBS-02",
                format_args!("{name} carries raw provider fields besides its observation"),
            ));
        }
        match kind {
            StreamKind::TodoUpdated(t) => self.todo(t),
            StreamKind::Capability(c) => self.capability(c),
            StreamKind::Subagent(s) => self.subagent(s),
            StreamKind::Image(i) => image(i),
            _ => Ok(()),
        }
    }

    /// What is still open at the run's end, as `(clause, description)`.
    pub(super) fn open(&self) -> Vec<(&'static str, String)> {
        let mut open: Vec<(&'static str, String)> = self
            .open_capabilities
            .keys()
            .map(|(_, id)| ("OBS-04", format!("capability invocation {id:?}")))
            .collect();
        open.extend(
            self.open_subagents
                .iter()
                .map(|s| ("OBS-07", format!("subagent {s:?}"))),
        );
        open.sort();
        open
    }

    fn todo(&mut self, t: &TodoSnapshot) -> Result<(), Violation> {
        source("OBS-05", "todo.updated", &t.source)?;
        if t.items.len() > MAX_TODO_ITEMS {
            return Err(Violation::new(
                "OBS-05",
                format_args!(
                    "todo.updated with {} items (at most {MAX_TODO_ITEMS})",
                    t.items.len()
                ),
            ));
        }
        let mut ids = HashSet::with_capacity(t.items.len());
        for item in &t.items {
            if !valid_name(&item.id) || !ids.insert(item.id.as_str()) {
                return Err(Violation::new(
                    "OBS-05",
                    format_args!("todo item id {:?} is blank, too long or repeated", item.id),
                ));
            }
            if item.content.trim().is_empty() {
                return Err(Violation::new(
                    "OBS-05",
                    format_args!("todo item {:?} has no content", item.id),
                ));
            }
        }
        if let Some(scope) = &t.scope_id {
            scope_name("OBS-05", scope)?;
        }
        let (last, items) = self.todos.get(&t.scope_id).cloned().unwrap_or_default();
        if t.revision != last + 1 {
            return Err(Violation::new(
                "OBS-06",
                format_args!(
                    "todo revision {} for scope {:?} after {last} (want {})",
                    t.revision,
                    t.scope_id,
                    last + 1
                ),
            ));
        }
        if last > 0 && items == t.items {
            return Err(Violation::new(
                "OBS-06",
                format_args!(
                    "todo revision {} repeats revision {last} unchanged",
                    t.revision
                ),
            ));
        }
        self.todos
            .insert(t.scope_id.clone(), (t.revision, t.items.clone()));
        Ok(())
    }

    fn capability(&mut self, c: &CapabilityInvocation) -> Result<(), Violation> {
        let what = "capability.invocation";
        source("OBS-03", what, &c.source)?;
        if !valid_name(&c.id) || !valid_name(&c.name) {
            return Err(Violation::new(
                "OBS-03",
                format_args!("{what} with a blank, overlong or unprintable id or name"),
            ));
        }
        if let Some(scope) = &c.scope_id {
            scope_name("OBS-03", scope)?;
        }
        match (c.kind, &c.server) {
            (CapabilityKind::Mcp, Some(s)) if valid_name(s) => {}
            (CapabilityKind::Mcp, _) => {
                return Err(Violation::new(
                    "OBS-03",
                    format_args!("MCP invocation {:?} without a valid server", c.id),
                ));
            }
            (_, Some(_)) => {
                return Err(Violation::new(
                    "OBS-03",
                    format_args!("{:?} invocation {:?} names a server", c.kind, c.id),
                ));
            }
            (_, None) => {}
        }
        if c.operation != c.kind.operation() {
            return Err(Violation::new(
                "OBS-03",
                format_args!(
                    "{:?} invocation {:?} with operation {:?}",
                    c.kind, c.id, c.operation
                ),
            ));
        }
        if c.tool_call_id
            .as_deref()
            .is_some_and(|t| t.trim().is_empty())
        {
            return Err(Violation::new(
                "OBS-03",
                format_args!("invocation {:?} with a blank tool_call_id", c.id),
            ));
        }
        let terminal = c.phase.is_terminal();
        if c.duration_ms.is_some() && !terminal {
            return Err(Violation::new(
                "OBS-03",
                format_args!("invocation {:?} has a duration before it ended", c.id),
            ));
        }
        let failed = c.phase == CapabilityPhase::Failed;
        let has_error = c.error.as_deref().is_some_and(|e| !e.trim().is_empty());
        if failed != has_error || (!failed && c.error.is_some()) {
            return Err(Violation::new(
                "OBS-03",
                format_args!(
                    "invocation {:?}: an error goes with phase failed, and only there",
                    c.id
                ),
            ));
        }
        let key = (c.scope_id.clone(), c.id.clone());
        let identity: Identity = (
            c.kind,
            c.name.clone(),
            c.server.clone(),
            c.tool_call_id.clone(),
        );
        if !terminal {
            if !self.started_capabilities.insert(key.clone()) {
                return Err(Violation::new(
                    "OBS-04",
                    format_args!("invocation {:?} started twice in its scope", c.id),
                ));
            }
            self.open_capabilities.insert(key, identity);
            return Ok(());
        }
        match self.open_capabilities.get(&key) {
            None => Err(Violation::new(
                "OBS-04",
                format_args!("terminal phase of invocation {:?}, which is not open", c.id),
            )),
            Some(open) if *open != identity => Err(Violation::new(
                "OBS-04",
                format_args!("invocation {:?} changed its identity", c.id),
            )),
            Some(_) => {
                self.open_capabilities.remove(&key);
                Ok(())
            }
        }
    }

    fn subagent(&mut self, s: &SubagentReport) -> Result<(), Violation> {
        source("OBS-07", "subagent.update", &s.source)?;
        scope_name("OBS-07", &s.scope_id)?;
        if !valid_name(&s.agent) {
            return Err(Violation::new(
                "OBS-07",
                format_args!("subagent {:?} with a blank or overlong name", s.scope_id),
            ));
        }
        if s.failed && s.phase != SubagentPhase::Finished {
            return Err(Violation::new(
                "OBS-07",
                format_args!("subagent {:?} marked failed before it finished", s.scope_id),
            ));
        }
        match s.phase {
            SubagentPhase::Started => {
                if !self.started_subagents.insert(s.scope_id.clone()) {
                    return Err(Violation::new(
                        "OBS-07",
                        format_args!("subagent {:?} started twice", s.scope_id),
                    ));
                }
                self.open_subagents.insert(s.scope_id.clone());
                Ok(())
            }
            SubagentPhase::Delta if self.open_subagents.contains(&s.scope_id) => Ok(()),
            SubagentPhase::Finished if self.open_subagents.remove(&s.scope_id) => Ok(()),
            phase => Err(Violation::new(
                "OBS-07",
                format_args!("subagent {phase:?} for {:?}, which is not open", s.scope_id),
            )),
        }
    }
}

fn image(i: &ImagePayload) -> Result<(), Violation> {
    source("OBS-08", "image", &i.source)?;
    let mime_ok = i
        .mime_type
        .strip_prefix("image/")
        .is_some_and(|sub| !sub.is_empty())
        && valid_name(&i.mime_type);
    if !mime_ok {
        return Err(Violation::new(
            "OBS-08",
            format_args!("image with mime type {:?}", i.mime_type),
        ));
    }
    let data = i.data.as_deref().is_some_and(|d| !d.is_empty());
    let uri = i.uri.as_deref().is_some_and(|u| !u.is_empty());
    if data == uri || (i.data.is_some() && !data) || (i.uri.is_some() && !uri) {
        return Err(Violation::new(
            "OBS-08",
            "an image carries exactly one of data and uri, not empty",
        ));
    }
    if i.uri
        .as_deref()
        .and_then(crate::redact::url_userinfo)
        .is_some()
    {
        return Err(Violation::new(
            "OBS-08",
            "an image uri carries userinfo (credentials never reach an event)",
        ));
    }
    if i.message_id.as_deref().is_some_and(|m| m.trim().is_empty()) {
        return Err(Violation::new("OBS-08", "image with a blank message_id"));
    }
    Ok(())
}

fn source(clause: &'static str, kind: &str, s: &ObservationSource) -> Result<(), Violation> {
    if valid_name(&s.provider_protocol) {
        Ok(())
    } else {
        Err(Violation::new(
            clause,
            format_args!("{kind} without a valid source.provider_protocol"),
        ))
    }
}

fn scope_name(clause: &'static str, scope: &str) -> Result<(), Violation> {
    if valid_name(scope) {
        Ok(())
    } else {
        Err(Violation::new(
            clause,
            format_args!("scope id {scope:?} is blank, overlong or unprintable"),
        ))
    }
}

#[cfg(test)]
mod tests;
