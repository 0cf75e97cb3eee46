//! The payload lifecycle rules of spec §5, as one checker that core's sink and
//! the conformance suite share (EVT-* clauses).

use std::fmt;

use crate::descriptor::StreamCapability;
use crate::id::LifecycleId;
use crate::stream::{Role, StreamKind, StreamPayload};

/// A broken lifecycle rule: a driver bug.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{clause}: {detail}")]
pub struct Violation {
    /// The conformance clause (`"EVT-03"` …).
    pub clause: &'static str,
    /// What happened, naming the payload kind and ids (never provider text).
    pub detail: String,
}

impl Violation {
    /// A violation of `clause`.
    pub fn new(clause: &'static str, detail: impl fmt::Display) -> Self {
        Violation {
            clause,
            detail: detail.to_string(),
        }
    }
}

/// A map keyed by ids a driver chose. Every payload looks one up, so the
/// hasher is a fast seeded one, not SipHash. Keys are the payloads' own
/// shared ids (a clone, not a copy of the string), looked up by `&str`.
type IdMap<V> = std::collections::HashMap<LifecycleId, V, foldhash::fast::RandomState>;

/// Open steps by name (as many as were started and not finished).
type StepMap = std::collections::HashMap<String, usize, foldhash::fast::RandomState>;

/// A set of ids (strings) kept as 64-bit hashes: "was this id seen before?"
/// for runs that see hundreds of thousands of them.
///
/// A long run opens many lifecycles (a 200k-line Codex stream: ~150k), and
/// each id must stay known after its lifecycle closes so a reuse is caught.
/// A set of hashes costs ~9 bytes an id instead of a `String` and its heap
/// block (~60). The hasher is seeded at random per set, so a provider
/// cannot aim ids at a collision; two of `n` distinct ids collide with
/// probability about n²/2⁶⁵ (10⁻⁸ for a million ids), and a collision can
/// only make a new id look seen, never a seen one look new.
#[derive(Debug, Clone, Default)]
pub struct SeenIds {
    ids: std::collections::HashSet<u64, foldhash::fast::RandomState>,
    hasher: foldhash::fast::RandomState,
}

impl SeenIds {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    fn hash(&self, id: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, id)
    }

    /// Record `id`; false when it was seen before (see the type's docs on
    /// collisions).
    pub fn insert(&mut self, id: &str) -> bool {
        let h = self.hash(id);
        self.ids.insert(h)
    }

    /// True when `id` was recorded (see the type's docs on collisions).
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(&self.hash(id))
    }

    /// How many distinct ids were recorded.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// The ids of one lifecycle family (text or reasoning): the open ones by
/// name, every one ever opened by hash.
#[derive(Debug, Clone, Default)]
struct Family {
    open: IdMap<()>,
    seen: SeenIds,
}

/// Checks a driver's payloads one at a time against spec §5.
///
/// [`check`](Self::check) leaves the state untouched when it rejects a
/// payload, so a rejected frame cannot corrupt the lifecycle of later ones.
#[derive(Debug, Clone, Default)]
pub struct LifecycleChecker {
    capability: StreamCapability,
    started: bool,
    terminal: bool,
    /// Text message ids.
    text: Family,
    /// Reasoning ids.
    reasoning: Family,
    /// Open tool calls; the flag records whether `start` carried complete args.
    open_tools: IdMap<bool>,
    /// Every tool call id ever opened.
    known_tools: SeenIds,
    /// Every tool call id that has its result.
    tool_results: SeenIds,
    open_steps: StepMap,
    /// Todo lists, capability invocations and subagents (OBS-*).
    observations: observe::Observations,
}

const CANONICAL: [&str; 22] = [
    "run.started",
    "run.finished",
    "run.error",
    "step.started",
    "step.finished",
    "text.start",
    "text.content",
    "text.end",
    "reasoning.start",
    "reasoning.content",
    "reasoning.end",
    "tool_call.start",
    "tool_call.args",
    "tool_call.end",
    "tool_call.result",
    "hitl.requested",
    "hitl.resolved",
    "stream.dropped",
    "todo.updated",
    "capability.invocation",
    "subagent.update",
    "image",
];

impl LifecycleChecker {
    /// A checker for a driver that declared `capability`.
    pub fn new(capability: StreamCapability) -> Self {
        LifecycleChecker {
            capability,
            ..Default::default()
        }
    }

    /// True once `run.started` was accepted.
    pub fn started(&self) -> bool {
        self.started
    }

    /// True once a terminal frame was accepted.
    pub fn terminated(&self) -> bool {
        self.terminal
    }

    /// Check one payload; on success, advance the lifecycle.
    pub fn check(&mut self, p: &StreamPayload) -> Result<(), Violation> {
        let name = p.kind.name();
        if p.role != Role::Assistant {
            return Err(Violation::new(
                "EVT-09",
                format_args!("{name} claims role user; drivers only speak as the assistant"),
            ));
        }
        if self.terminal {
            return Err(Violation::new(
                "EVT-02",
                format_args!("{name} after the terminal frame"),
            ));
        }
        match &p.kind {
            StreamKind::RunStarted => {
                if self.started {
                    return Err(Violation::new("EVT-01", "second run.started"));
                }
                self.started = true;
                return Ok(());
            }
            _ if !self.started => {
                return Err(Violation::new(
                    "EVT-01",
                    format_args!("{name} before run.started"),
                ));
            }
            _ => {}
        }
        match &p.kind {
            StreamKind::RunStarted => Ok(()),
            StreamKind::RunFinished { .. } => self.terminate(name),
            StreamKind::RunError { error } => {
                if error.message.trim().is_empty() {
                    return Err(Violation::new("EVT-02", "run.error with an empty error"));
                }
                self.terminate(name)
            }
            StreamKind::StepStarted { name: step } => {
                require("EVT-07", name, "name", step)?;
                *self.open_steps.entry(step.clone()).or_default() += 1;
                Ok(())
            }
            StreamKind::StepFinished { name: step } => {
                require("EVT-07", name, "name", step)?;
                match self.open_steps.get_mut(step) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        if *n == 0 {
                            self.open_steps.remove(step);
                        }
                        Ok(())
                    }
                    _ => Err(Violation::new(
                        "EVT-07",
                        format_args!("step.finished {step:?} was never started"),
                    )),
                }
            }
            StreamKind::TextStart { message_id } => {
                open("EVT-03", name, message_id, &mut self.text)
            }
            StreamKind::TextContent { message_id, delta } => {
                content("EVT-03", "EVT-04", name, message_id, delta, &self.text)
            }
            StreamKind::TextEnd { message_id } => close("EVT-03", name, message_id, &mut self.text),
            StreamKind::ReasoningStart { message_id } => {
                self.reasoning_allowed(name)?;
                open("EVT-06", name, message_id, &mut self.reasoning)
            }
            StreamKind::ReasoningContent { message_id, delta } => {
                self.reasoning_allowed(name)?;
                content("EVT-06", "EVT-06", name, message_id, delta, &self.reasoning)
            }
            StreamKind::ReasoningEnd { message_id } => {
                self.reasoning_allowed(name)?;
                close("EVT-06", name, message_id, &mut self.reasoning)
            }
            StreamKind::ToolCallStart {
                tool_call_id,
                name: tool,
                args,
                ..
            } => {
                require("EVT-05", name, "tool_call_id", tool_call_id)?;
                require("EVT-05", name, "name", tool)?;
                if !self.known_tools.insert(tool_call_id) {
                    return Err(Violation::new(
                        "EVT-05",
                        format_args!("tool call {tool_call_id:?} opened twice"),
                    ));
                }
                self.open_tools.insert(tool_call_id.clone(), args.is_some());
                Ok(())
            }
            StreamKind::ToolCallArgs {
                tool_call_id,
                delta,
            } => {
                if !self.capability.tool_call_args {
                    return Err(Violation::new(
                        "EVT-12",
                        "tool_call.args from a driver that declared tool_call_args = false",
                    ));
                }
                match self.open_tools.get(tool_call_id) {
                    None => Err(Violation::new(
                        "EVT-05",
                        format_args!("tool_call.args for {tool_call_id:?}, which is not open"),
                    )),
                    Some(true) => Err(Violation::new(
                        "EVT-14",
                        format_args!("tool_call.args for {tool_call_id:?} after complete args"),
                    )),
                    Some(false) if delta.is_empty() => Err(Violation::new(
                        "EVT-05",
                        format_args!("tool_call.args for {tool_call_id:?} with an empty delta"),
                    )),
                    Some(false) => Ok(()),
                }
            }
            StreamKind::ToolCallEnd {
                tool_call_id,
                result,
            } => {
                if !self.open_tools.contains_key(tool_call_id) {
                    return Err(Violation::new(
                        "EVT-05",
                        format_args!("tool_call.end for {tool_call_id:?}, which is not open"),
                    ));
                }
                if result.is_some() && self.tool_results.contains(tool_call_id) {
                    return Err(Violation::new(
                        "EVT-14",
                        format_args!("second result for tool call {tool_call_id:?}"),
                    ));
                }
                self.open_tools.remove(tool_call_id);
                if result.is_some() {
                    self.tool_results.insert(tool_call_id);
                }
                Ok(())
            }
            StreamKind::ToolCallResult { tool_call_id, .. } => {
                if !self.known_tools.contains(tool_call_id) {
                    return Err(Violation::new(
                        "EVT-05",
                        format_args!("tool_call.result for unknown {tool_call_id:?}"),
                    ));
                }
                if !self.tool_results.insert(tool_call_id) {
                    return Err(Violation::new(
                        "EVT-14",
                        format_args!("second result for tool call {tool_call_id:?}"),
                    ));
                }
                Ok(())
            }
            StreamKind::HitlRequested(req) => {
                self.hitl_allowed(name)?;
                require("EVT-08", name, "source", &req.request.source)
            }
            StreamKind::HitlResolved(res) => {
                self.hitl_allowed(name)?;
                require("EVT-08", name, "request_id", &res.request_id)
            }
            StreamKind::Dropped(_) => Ok(()),
            StreamKind::TodoUpdated(_)
            | StreamKind::Capability(_)
            | StreamKind::Subagent(_)
            | StreamKind::Image(_) => {
                self.observations
                    .check(self.capability.observation, &p.kind, p.raw.is_some())
            }
            StreamKind::Custom { name: custom, .. } => {
                if custom.trim().is_empty() || CANONICAL.contains(&custom.as_str()) {
                    return Err(Violation::new(
                        "EVT-15",
                        format_args!(
                            "custom kind needs its own non-canonical name, got {custom:?}"
                        ),
                    ));
                }
                Ok(())
            }
        }
    }

    /// Check the end of the run: an opened run lifecycle must have been
    /// closed by a terminal frame; with `streaming` a run lifecycle is required.
    pub fn finish(&self, streaming: bool) -> Result<(), Violation> {
        if (streaming || self.started) && !self.terminal {
            let what = if self.started {
                "run ended without run.finished or run.error"
            } else {
                "streaming run emitted no run.started and no terminal frame"
            };
            return Err(Violation::new("EVT-02", what));
        }
        Ok(())
    }

    fn terminate(&mut self, name: &str) -> Result<(), Violation> {
        let mut open: Vec<String> = Vec::new();
        open.extend(self.text.open.keys().map(|id| format!("text {id:?}")));
        open.extend(
            self.reasoning
                .open
                .keys()
                .map(|id| format!("reasoning {id:?}")),
        );
        open.extend(self.open_tools.keys().map(|id| format!("tool call {id:?}")));
        open.extend(self.open_steps.keys().map(|s| format!("step {s:?}")));
        if !open.is_empty() {
            open.sort();
            return Err(Violation::new(
                "EVT-11",
                format_args!("{name} while still open: {}", open.join(", ")),
            ));
        }
        let observed = self.observations.open();
        if let Some((clause, _)) = observed.first() {
            let list: Vec<&str> = observed.iter().map(|(_, what)| what.as_str()).collect();
            return Err(Violation::new(
                clause,
                format_args!("{name} while still open: {}", list.join(", ")),
            ));
        }
        self.terminal = true;
        Ok(())
    }

    fn reasoning_allowed(&self, name: &str) -> Result<(), Violation> {
        if self.capability.reasoning {
            Ok(())
        } else {
            Err(Violation::new(
                "EVT-12",
                format_args!("{name} from a driver that declared reasoning = false"),
            ))
        }
    }

    fn hitl_allowed(&self, name: &str) -> Result<(), Violation> {
        if self.capability.hitl {
            Ok(())
        } else {
            Err(Violation::new(
                "EVT-12",
                format_args!("{name} from a driver that declared hitl = false"),
            ))
        }
    }
}

fn require(clause: &'static str, kind: &str, field: &str, value: &str) -> Result<(), Violation> {
    if value.trim().is_empty() {
        Err(Violation::new(
            clause,
            format_args!("{kind} without {field}"),
        ))
    } else {
        Ok(())
    }
}

fn open(
    clause: &'static str,
    kind: &str,
    id: &LifecycleId,
    ids: &mut Family,
) -> Result<(), Violation> {
    require(clause, kind, "message_id", id)?;
    if !ids.seen.insert(id) {
        return Err(Violation::new(
            clause,
            format_args!("{kind} {id:?} opened twice"),
        ));
    }
    ids.open.insert(id.clone(), ());
    Ok(())
}

fn content(
    clause: &'static str,
    delta_clause: &'static str,
    kind: &str,
    id: &str,
    delta: &str,
    ids: &Family,
) -> Result<(), Violation> {
    if !ids.open.contains_key(id) {
        return Err(Violation::new(
            clause,
            format_args!("{kind} for {id:?}, which is not open"),
        ));
    }
    if delta.is_empty() {
        return Err(Violation::new(
            delta_clause,
            format_args!("{kind} for {id:?} with an empty delta"),
        ));
    }
    Ok(())
}

fn close(clause: &'static str, kind: &str, id: &str, ids: &mut Family) -> Result<(), Violation> {
    if ids.open.remove(id).is_some() {
        Ok(())
    } else {
        Err(Violation::new(
            clause,
            format_args!("{kind} for {id:?}, which is not open"),
        ))
    }
}

mod observe;
#[cfg(test)]
mod tests;
