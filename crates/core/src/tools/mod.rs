//! Host tools: functions of the host that the agent can call.
//!
//! [`Tool::define`] turns a typed async function into a tool: the input and
//! output JSON Schemas come from `schemars`, the input is checked before the
//! handler runs and the output after. A handler answers `Ok(output)`, a
//! model-visible refusal ([`ToolError::Reject`]) or a host failure
//! ([`ToolError::Failed`]); it runs under a deadline, is cancelled with the
//! run, and a panic in it becomes a tool error, never a crashed run.
//!
//! Tools attach to an agent ([`AgentBuilder::tool`](crate::AgentBuilder::tool)),
//! a thread ([`Thread::tool`](crate::Thread::tool)) or one run
//! ([`RunOptions::tool`](crate::RunOptions::tool)); the narrower scope wins by
//! name. Every call is gated by the run's approval policy like any other
//! tool: under [`ApprovalMode::Ask`](agent_adaptor_driver::ApprovalMode::Ask)
//! (or the default) the host is asked first, unless the tool is
//! [`trusted`](Tool::trusted).
//!
//! ```
//! use agent_adaptor_core::{Tool, ToolError};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Lookup { order: String }
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Order { status: String }
//!
//! let tool = Tool::define("lookup_order", "The status of an order.", |input: Lookup, _ctx| async move {
//!     if input.order.is_empty() {
//!         return Err(ToolError::Reject("give an order number".into()));
//!     }
//!     Ok(Order { status: "shipped".into() })
//! });
//! assert_eq!(tool.name(), "lookup_order");
//! assert!(tool.check().is_ok());
//! ```

mod toolbox;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_driver::{CancellationToken, HostToolSpec};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use toolbox::APPROVAL_SOURCE;
pub(crate) use toolbox::Toolbox;

/// How long a handler may run when the tool sets no deadline.
pub const DEFAULT_TOOL_DEADLINE: Duration = Duration::from_secs(60);

/// How a handler ends a call without an output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// A refusal the model reads (wrong arguments, not allowed, nothing
    /// found …). Not a host failure.
    #[error("{0}")]
    Reject(String),
    /// The host failed (a database down …): the model reads a generic
    /// error and the run gets a lifecycle notice with the message.
    #[error("{0}")]
    Failed(String),
}

/// What a handler knows of its call.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The run.
    pub run_id: String,
    /// The agent's id of the call.
    pub call_id: String,
    /// Cancelled when the run is cancelled or the deadline passes; a
    /// handler that does slow work should watch it (the future is dropped
    /// at that moment anyway).
    pub cancel: CancellationToken,
}

/// Why a tool definition is unusable (a run carrying it is refused before it
/// starts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("host tool {name:?}: {reason}")]
pub struct ToolDefinitionError {
    /// The tool's name.
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

type Handler =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;

/// A host tool (see the [module docs](self)). Cheap to clone.
#[derive(Clone)]
pub struct Tool {
    inner: Arc<Inner>,
}

struct Inner {
    spec: HostToolSpec,
    handler: Arc<Handler>,
    deadline: Duration,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.inner.spec.name)
            .field("trusted", &self.inner.spec.trusted)
            .field("deadline", &self.inner.deadline)
            .finish_non_exhaustive()
    }
}

fn schema_of<T: JsonSchema>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    schema.as_value().clone()
}

impl Tool {
    /// A tool named `name` that runs `handler` on a decoded `In` and answers
    /// with an `Out`. Both schemas are derived from the types.
    pub fn define<In, Out, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Tool
    where
        In: DeserializeOwned + JsonSchema + Send + 'static,
        Out: Serialize + JsonSchema + 'static,
        F: Fn(In, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased = move |input: Value, ctx: ToolContext| -> BoxFuture<'static, _> {
            let handler = handler.clone();
            Box::pin(async move {
                // The input was checked against In's schema; a value the
                // schema admits but serde refuses is still the model's.
                let input: In = serde_json::from_value(input)
                    .map_err(|e| ToolError::Reject(format!("the input does not decode: {e}")))?;
                let output = handler(input, ctx).await?;
                serde_json::to_value(output)
                    .map_err(|e| ToolError::Failed(format!("the output does not encode: {e}")))
            })
        };
        Tool::from_parts(
            HostToolSpec {
                name: name.into(),
                description: description.into(),
                input_schema: schema_of::<In>(),
                output_schema: Some(schema_of::<Out>()),
                trusted: false,
            },
            Arc::new(erased),
        )
    }

    /// A tool over raw JSON: `input_schema` is checked before `handler`
    /// runs; the output is not checked.
    pub fn from_json<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Tool
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased = move |input: Value, ctx: ToolContext| -> BoxFuture<'static, _> {
            Box::pin(handler(input, ctx))
        };
        Tool::from_parts(
            HostToolSpec {
                name: name.into(),
                description: description.into(),
                input_schema,
                output_schema: None,
                trusted: false,
            },
            Arc::new(erased),
        )
    }

    fn from_parts(spec: HostToolSpec, handler: Arc<Handler>) -> Tool {
        Tool {
            inner: Arc::new(Inner {
                spec,
                handler,
                deadline: DEFAULT_TOOL_DEADLINE,
            }),
        }
    }

    fn edit(self, f: impl FnOnce(&mut Inner)) -> Tool {
        let mut inner = Inner {
            spec: self.inner.spec.clone(),
            handler: self.inner.handler.clone(),
            deadline: self.inner.deadline,
        };
        f(&mut inner);
        Tool {
            inner: Arc::new(inner),
        }
    }

    /// The handler's deadline per call (default [`DEFAULT_TOOL_DEADLINE`]);
    /// past it the call is cancelled and the model reads a timeout error.
    #[must_use]
    pub fn deadline(self, deadline: Duration) -> Tool {
        self.edit(|i| i.deadline = deadline)
    }

    /// Run without asking the host, whatever the run's approval policy.
    #[must_use]
    pub fn trusted(self) -> Tool {
        self.edit(|i| i.spec.trusted = true)
    }

    /// Do not check the output (keep only the input schema).
    #[must_use]
    pub fn unchecked_output(self) -> Tool {
        self.edit(|i| i.spec.output_schema = None)
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.inner.spec.name
    }

    /// What the model sees of the tool.
    pub fn spec(&self) -> &HostToolSpec {
        &self.inner.spec
    }

    /// The per-call deadline.
    pub fn deadline_of(&self) -> Duration {
        self.inner.deadline
    }

    /// Check the definition: the name's characters, an object input schema,
    /// schemas that compile, a non-zero deadline. A run carrying a tool
    /// that fails this is refused before it starts.
    pub fn check(&self) -> Result<(), ToolDefinitionError> {
        toolbox::compile(self).map(|_| ())
    }

    pub(crate) fn handler(&self) -> &Arc<Handler> {
        &self.inner.handler
    }
}

/// Merge `narrow` over `wide` by name (the narrower scope's tool wins).
pub(crate) fn merge(narrow: &[Tool], wide: &[Tool]) -> Vec<Tool> {
    let mut tools: Vec<Tool> = wide
        .iter()
        .filter(|w| !narrow.iter().any(|n| n.name() == w.name()))
        .cloned()
        .collect();
    tools.extend(narrow.iter().cloned());
    tools
}
