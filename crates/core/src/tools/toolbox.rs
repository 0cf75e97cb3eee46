//! The run's [`HostToolbox`]: one call from the agent to its end — schema
//! checks, approval, the handler under its deadline and the run's
//! cancellation, panic safety, the output check, and a lifecycle notice for
//! every host failure.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;

use agent_adaptor_driver::async_trait;
use agent_adaptor_driver::{
    CancellationToken, DecisionKind, DecisionRequest, DecisionResult, EventSink, HostToolCall,
    HostToolResult, HostToolSpec, HostToolStatus, HostToolbox, OperationalEvent, RunEvent,
};
use futures::FutureExt;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolDefinitionError, ToolError};

/// The decision source of a host tool's approval request.
pub const APPROVAL_SOURCE: &str = "host_tool";

/// The most schema errors one message lists.
const MAX_ERRORS: usize = 5;

pub(crate) struct Compiled {
    tool: Tool,
    input: jsonschema::Validator,
    output: Option<jsonschema::Validator>,
}

fn validator(
    tool: &Tool,
    which: &str,
    schema: &Value,
) -> Result<jsonschema::Validator, ToolDefinitionError> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|e| ToolDefinitionError {
            name: tool.name().to_owned(),
            reason: format!("the {which} schema does not compile: {e}"),
        })
}

/// Check one definition and compile its schemas.
pub(crate) fn compile(tool: &Tool) -> Result<Compiled, ToolDefinitionError> {
    let bad = |reason: String| ToolDefinitionError {
        name: tool.name().to_owned(),
        reason,
    };
    let name = tool.name();
    if name.is_empty() || name.len() > 64 {
        return Err(bad("a name is 1 to 64 bytes".into()));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(bad(
            "a name has only ASCII letters, digits, '_' and '-'".into()
        ));
    }
    let spec = tool.spec();
    if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(bad(
            "the input schema must be an object schema (\"type\": \"object\")".into(),
        ));
    }
    if tool.deadline_of().is_zero() {
        return Err(bad("the deadline must be more than zero".into()));
    }
    Ok(Compiled {
        tool: tool.clone(),
        input: validator(tool, "input", &spec.input_schema)?,
        output: spec
            .output_schema
            .as_ref()
            .map(|s| validator(tool, "output", s))
            .transpose()?,
    })
}

fn errors(validator: &jsonschema::Validator, value: &Value) -> Option<String> {
    let found: Vec<String> = validator
        .iter_errors(value)
        .take(MAX_ERRORS)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    (!found.is_empty()).then(|| found.join("; "))
}

/// The host tools of one admitted run.
pub(crate) struct Toolbox {
    run_id: String,
    tools: Vec<Compiled>,
    specs: Vec<HostToolSpec>,
}

impl Toolbox {
    /// The toolbox of `tools` for run `run_id`; the first unusable
    /// definition (or a repeated name) refuses the run.
    pub(crate) fn new(run_id: &str, tools: &[Tool]) -> Result<Toolbox, ToolDefinitionError> {
        let mut compiled: Vec<Compiled> = Vec::with_capacity(tools.len());
        for tool in tools {
            if compiled.iter().any(|c| c.tool.name() == tool.name()) {
                return Err(ToolDefinitionError {
                    name: tool.name().to_owned(),
                    reason: "two tools of the run have this name".into(),
                });
            }
            compiled.push(compile(tool)?);
        }
        Ok(Toolbox {
            run_id: run_id.to_owned(),
            specs: compiled.iter().map(|c| c.tool.spec().clone()).collect(),
            tools: compiled,
        })
    }

    async fn approve(
        &self,
        spec: &HostToolSpec,
        call: &HostToolCall,
        sink: &dyn EventSink,
    ) -> Result<(), HostToolResult> {
        if spec.trusted || call.approved {
            return Ok(());
        }
        let denied =
            |why: String| HostToolResult::error(HostToolStatus::Denied, format!("denied: {why}"));
        let Some(decisions) = sink.decisions() else {
            return Err(denied("the run cannot ask the host".into()));
        };
        let mut req = DecisionRequest::new(DecisionKind::Permission, APPROVAL_SOURCE);
        req.tool_call_id = call.call_id.clone();
        req.prompt = format!("Allow {} {}?", spec.name, shown_input(&call.input));
        req.payload = Some(json!({"tool_name": spec.name, "input": call.input, "scope": "host"}));
        match decisions.request_decision(req).await {
            Ok(answer) if answer.result == DecisionResult::Approved => Ok(()),
            Ok(answer) => Err(denied(if answer.text.is_empty() {
                format!("the host answered {}", answer.result.as_str())
            } else {
                answer.text
            })),
            Err(e) => Err(denied(e.to_string())),
        }
    }

    async fn host_failure(
        &self,
        sink: &dyn EventSink,
        call: &HostToolCall,
        status: HostToolStatus,
        detail: &str,
    ) {
        let mut event = OperationalEvent::text(format!(
            "host tool {} ({}) {}: {detail}",
            call.tool,
            call.call_id,
            status.as_str()
        ));
        event.metadata = BTreeMap::from([
            ("event".to_owned(), "host_tool.error".to_owned()),
            ("tool".to_owned(), call.tool.clone()),
            ("call_id".to_owned(), call.call_id.clone()),
            ("status".to_owned(), status.as_str().to_owned()),
        ]);
        event.data = Some(json!({"detail": detail}));
        // Fails only when the run is cancelled; the call's result says it.
        let _ = sink.emit(RunEvent::Lifecycle(event)).await;
    }

    async fn run_handler(
        &self,
        compiled: &Compiled,
        call: &HostToolCall,
        cancel: &CancellationToken,
    ) -> Result<Value, (HostToolStatus, String)> {
        let token = cancel.child_token();
        let ctx = ToolContext {
            run_id: self.run_id.clone(),
            call_id: call.call_id.clone(),
            cancel: token.clone(),
        };
        let deadline = compiled.tool.deadline_of();
        let handler = (compiled.tool.handler())(call.input.clone(), ctx);
        let guarded = AssertUnwindSafe(handler).catch_unwind();
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                token.cancel();
                return Err((HostToolStatus::Cancelled, "the run was cancelled".into()));
            }
            outcome = tokio::time::timeout(deadline, guarded) => outcome,
        };
        match outcome {
            Err(_) => {
                token.cancel();
                Err((
                    HostToolStatus::TimedOut,
                    format!("no answer within {} ms", deadline.as_millis()),
                ))
            }
            Ok(Err(panic)) => Err((HostToolStatus::Panicked, panic_message(&panic))),
            Ok(Ok(Err(ToolError::Reject(why)))) => Err((HostToolStatus::Rejected, why)),
            Ok(Ok(Err(ToolError::Failed(why)))) => Err((HostToolStatus::Failed, why)),
            Ok(Ok(Ok(output))) => Ok(output),
        }
    }
}

/// The most characters of a call's input an approval prompt shows.
const PROMPT_INPUT_CHARS: usize = 200;

/// The input as compact JSON for the approval prompt, shortened.
fn shown_input(input: &Value) -> String {
    let text = input.to_string();
    if text.chars().count() <= PROMPT_INPUT_CHARS {
        return text;
    }
    let mut short: String = text.chars().take(PROMPT_INPUT_CHARS).collect();
    short.push('…');
    short
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the handler panicked".into())
}

#[async_trait]
impl HostToolbox for Toolbox {
    fn specs(&self) -> &[HostToolSpec] {
        &self.specs
    }

    async fn call(
        &self,
        mut call: HostToolCall,
        sink: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> HostToolResult {
        if call.call_id.is_empty() {
            call.call_id = crate::id::new_id("htc_");
        }
        let Some(compiled) = self.tools.iter().find(|c| c.tool.name() == call.tool) else {
            return HostToolResult::error(
                HostToolStatus::UnknownTool,
                format!("no host tool named {:?}", call.tool),
            );
        };
        if let Some(why) = errors(&compiled.input, &call.input) {
            return HostToolResult::error(
                HostToolStatus::InvalidInput,
                format!("invalid input for {}: {why}", call.tool),
            );
        }
        if let Err(denied) = self.approve(compiled.tool.spec(), &call, sink).await {
            return denied;
        }
        match self.run_handler(compiled, &call, cancel).await {
            Ok(output) => match compiled.output.as_ref().and_then(|v| errors(v, &output)) {
                None => HostToolResult::ok(output),
                Some(why) => {
                    let status = HostToolStatus::InvalidOutput;
                    self.host_failure(sink, &call, status, &why).await;
                    HostToolResult::error(
                        status,
                        format!("the host tool {} failed (invalid output)", call.tool),
                    )
                }
            },
            Err((HostToolStatus::Rejected, why)) => {
                HostToolResult::error(HostToolStatus::Rejected, why)
            }
            Err((status, why)) => {
                if status.is_host_failure() {
                    self.host_failure(sink, &call, status, &why).await;
                }
                let message = match status {
                    HostToolStatus::TimedOut => format!("the host tool {} timed out", call.tool),
                    HostToolStatus::Cancelled => "cancelled".to_owned(),
                    _ => format!("the host tool {} failed", call.tool),
                };
                HostToolResult::error(status, message)
            }
        }
    }
}
