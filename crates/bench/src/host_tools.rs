//! The per-call overhead of a host tool over each channel
//! (`agent-adaptor-bench host-tools [--calls N]`).
//!
//! One no-op tool (`{"n": u32}` in, the same out), defined with
//! `Tool::define`, is called `calls` times over each channel, after a
//! warm-up, all in one process and one run, so every figure shares the
//! machine's state of the moment:
//!
//! * **direct**: the handler closure awaited directly (the baseline);
//! * **toolbox**: `HostTools::call`, core's pipeline every channel ends in
//!   (input schema check, the approval gate of a trusted tool, deadline and
//!   panic guard, output schema check);
//! * **channels**: each channel's own path on our side, from the agent's
//!   request bytes to the reply bytes (see [`CHANNELS`]).
//!
//! The summary (median and p99 per call, µs, and the ratio of each median to
//! the direct call's) is a Markdown table on stdout; the samples' summary is
//! JSON on stderr.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_adaptor_core::driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, HostToolCall, HostToolChannel,
    HostTools, Request, Response, RunContext, StreamCapability, async_trait,
};
use agent_adaptor_core::{Agent, Runner, Tool, ToolContext, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The tool's input and output.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
struct Echo {
    n: u32,
}

async fn noop(input: Echo, _ctx: ToolContext) -> Result<Echo, ToolError> {
    Ok(input)
}

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Measured calls per channel.
    pub calls: usize,
    /// Unmeasured calls per channel before them.
    pub warmup: usize,
}

/// One channel's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    /// The channel.
    pub channel: &'static str,
    /// Calls measured.
    pub calls: usize,
    /// Median per call, µs.
    pub median_us: f64,
    /// 99th percentile per call, µs.
    pub p99_us: f64,
    /// Median over the direct call's median.
    pub median_ratio: f64,
}

fn figures(channel: &'static str, mut samples: Vec<Duration>) -> Figures {
    samples.sort_unstable();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e6
    };
    Figures {
        channel,
        calls: samples.len(),
        median_us: at(0.5),
        p99_us: at(0.99),
        median_ratio: 0.0,
    }
}

/// The measured paths.
type Samples = Vec<(&'static str, Vec<Duration>)>;

/// A driver that measures the channels inside its run (it holds the run's
/// sink and toolbox, as a real driver does).
#[derive(Clone)]
struct Bench {
    plan: Plan,
    samples: Arc<Mutex<Samples>>,
}

/// Time `plan.calls` calls of `f` after `plan.warmup` unmeasured ones; the
/// first failure ends the measurement.
async fn time_n<F, Fut>(plan: Plan, mut f: F) -> Result<Vec<Duration>, DriverError>
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    for i in 0..plan.warmup {
        f(i as u32).await.map_err(DriverError::Protocol)?;
    }
    let mut out = Vec::with_capacity(plan.calls);
    for i in 0..plan.calls {
        let start = Instant::now();
        f(i as u32).await.map_err(DriverError::Protocol)?;
        out.push(start.elapsed());
    }
    Ok(out)
}

/// A failed call as a measurement error.
fn checked(result: &agent_adaptor_core::driver::HostToolResult) -> Result<(), String> {
    if result.is_error() {
        Err(format!("the call failed: {}", result.content))
    } else {
        Ok(())
    }
}

fn call(i: u32) -> HostToolCall {
    HostToolCall::new(format!("c{i}"), "echo", json!({"n": i}))
}

#[async_trait]
impl Driver for Bench {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new("bench", "host-tool channels");
        d.host_tools = HostToolChannel::Native;
        d
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        None
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let plan = self.plan;
        let tools: &HostTools = &req.host_tools;
        let cancel = &ctx.cancel;
        let mut samples: Samples = Vec::new();
        let direct = time_n(plan, |i| async move {
            let ctx = ToolContext {
                run_id: String::new(),
                call_id: String::new(),
                cancel: Default::default(),
            };
            let out = noop(Echo { n: i }, ctx).await;
            std::hint::black_box(out.ok());
            Ok(())
        })
        .await?;
        samples.push(("direct", direct));
        let toolbox = time_n(plan, |i| async move {
            checked(&tools.call(call(i), sink, cancel).await)
        })
        .await?;
        samples.push(("toolbox", toolbox));
        for (name, channel) in CHANNELS {
            samples.push((name, channel(plan, tools, sink, cancel).await?));
        }
        *self.samples.lock().unwrap_or_else(|p| p.into_inner()) = samples;
        Ok(Response::default())
    }
}

/// One channel's measurement: `calls` timed round trips on our side.
type Channel = for<'a> fn(
    Plan,
    &'a HostTools,
    &'a dyn EventSink,
    &'a agent_adaptor_core::driver::CancellationToken,
) -> futures::future::BoxFuture<'a, Result<Vec<Duration>, DriverError>>;

/// The channels, by name.
const CHANNELS: [(&str, Channel); 3] = [
    ("dynamic_tools", dynamic_tools),
    ("loopback_mcp", loopback_mcp),
    ("sdk_mcp", sdk_mcp),
];

/// Claude Code / CodeBuddy Code SDK MCP: the `mcp_message` control request
/// line decoded, the JSON-RPC `tools/call` dispatched and run, the
/// `mcp_response` control response encoded.
fn sdk_mcp<'a>(
    plan: Plan,
    tools: &'a HostTools,
    sink: &'a dyn EventSink,
    cancel: &'a agent_adaptor_core::driver::CancellationToken,
) -> futures::future::BoxFuture<'a, Result<Vec<Duration>, DriverError>> {
    use agent_adaptor_driver_kit::host_mcp::inproc::{self, Dispatch};
    use agent_adaptor_drivers::streamjson::control;
    Box::pin(async move {
        let lines: Vec<String> = (0..(plan.warmup + plan.calls) as u32)
            .map(|i| {
                json!({"type": "control_request", "request_id": format!("r{i}"), "request": {
                    "subtype": "mcp_message", "server_name": "agent-adaptor", "message": {
                        "jsonrpc": "2.0", "id": i, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"n": i}}}}})
                .to_string()
            })
            .collect();
        let samples = time_n(plan, |i| {
            let line = &lines[i as usize];
            async move {
                let request: serde_json::Value =
                    serde_json::from_str(line).map_err(|e| e.to_string())?;
                let message = &request["request"]["message"];
                let Dispatch::Call { id, call } = inproc::dispatch(tools, message) else {
                    return Err("not a call".into());
                };
                let result = tools.call(call, sink, cancel).await;
                checked(&result)?;
                let reply = inproc::call_reply(id, &result);
                let request_id = request["request_id"].as_str().unwrap_or_default();
                let frame = control::success_frame(request_id, json!({"mcp_response": reply}));
                std::hint::black_box(frame);
                Ok(())
            }
        })
        .await?;
        Ok(samples)
    })
}

/// Codex app-server dynamic tools: the server request line
/// (`item/tool/call`) decoded, the call, the answer frame encoded.
fn dynamic_tools<'a>(
    plan: Plan,
    tools: &'a HostTools,
    sink: &'a dyn EventSink,
    cancel: &'a agent_adaptor_core::driver::CancellationToken,
) -> futures::future::BoxFuture<'a, Result<Vec<Duration>, DriverError>> {
    use agent_adaptor_drivers::codex::appserver::dynamic_tools as dt;
    Box::pin(async move {
        let lines: Vec<String> = (0..(plan.warmup + plan.calls) as u32)
            .map(|i| {
                json!({"id": i, "method": dt::TOOL_CALL, "params": {
                    "threadId": "t", "turnId": "u", "callId": format!("call_{i}"),
                    "tool": "echo", "arguments": {"n": i}}})
                .to_string()
            })
            .collect();
        let samples = time_n(plan, |i| {
            let line = &lines[i as usize];
            async move {
                let request: serde_json::Value =
                    serde_json::from_str(line).map_err(|e| e.to_string())?;
                let call = dt::call_of(&request["params"]).ok_or("not a call")?;
                let result = tools.call(call, sink, cancel).await;
                checked(&result)?;
                let frame = json!({"id": request["id"], "result": dt::response(&result)});
                std::hint::black_box(frame.to_string());
                Ok(())
            }
        })
        .await?;
        Ok(samples)
    })
}

/// The loopback MCP server: one `tools/call` over HTTP/1 on 127.0.0.1 as
/// the agent's MCP client sends it (Streamable HTTP, the bearer token, the
/// session), through rmcp and the forward to the run, the call, and the
/// SSE answer read back: the whole round trip, the client's side included.
fn loopback_mcp<'a>(
    plan: Plan,
    tools: &'a HostTools,
    sink: &'a dyn EventSink,
    cancel: &'a agent_adaptor_core::driver::CancellationToken,
) -> futures::future::BoxFuture<'a, Result<Vec<Duration>, DriverError>> {
    use agent_adaptor_driver_kit::host_mcp::loopback::{self, LoopbackServer};
    Box::pin(async move {
        let (server, calls) = LoopbackServer::start(tools.specs()).await?;
        let http = reqwest::Client::new();
        let post = |body: serde_json::Value, session: Option<&str>| {
            let mut r = http
                .post(server.url())
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .bearer_auth(server.token())
                .body(body.to_string());
            if let Some(id) = session {
                r = r.header("mcp-session-id", id);
            }
            r
        };
        let failed = |e: reqwest::Error| e.to_string();
        let client = async {
            let init = post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"}}}),
                None,
            )
            .send()
            .await
            .map_err(failed)?;
            let session = init
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
                .ok_or("no MCP session")?;
            init.text().await.map_err(failed)?;
            post(
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                Some(&session),
            )
            .send()
            .await
            .map_err(failed)?;
            let session = &session;
            time_n(plan, |i| {
                let request = post(
                    json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                           "params": {"name": "echo", "arguments": {"n": i}}}),
                    Some(session),
                );
                async move {
                    let text = request
                        .send()
                        .await
                        .map_err(failed)?
                        .text()
                        .await
                        .map_err(failed)?;
                    if text.contains(r#""isError":false"#) {
                        Ok(())
                    } else {
                        Err(format!("the call failed: {text}"))
                    }
                }
            })
            .await
            .map_err(|e| e.to_string())
        };
        loopback::serving(Some(calls), tools, sink, cancel, client)
            .await
            .map_err(DriverError::Protocol)
    })
}

/// Runs the plan; the figures, direct first.
pub fn run(plan: &Plan) -> Result<Vec<Figures>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let bench = Bench {
        plan: *plan,
        samples: Arc::default(),
    };
    let agent = Agent::builder(bench.clone())
        .tool(Tool::define("echo", "Echo the number.", noop).trusted())
        .build()
        .map_err(|e| e.to_string())?;
    runtime
        .block_on(async { agent.run("bench").await })
        .map_err(|e| e.to_string())?;
    let samples = std::mem::take(&mut *bench.samples.lock().unwrap_or_else(|p| p.into_inner()));
    let mut out: Vec<Figures> = samples
        .into_iter()
        .map(|(name, s)| figures(name, s))
        .collect();
    let base = out.first().map_or(1.0, |f| f.median_us.max(1e-9));
    for f in &mut out {
        f.median_ratio = f.median_us / base;
    }
    Ok(out)
}

/// The Markdown table.
pub fn markdown(figures: &[Figures]) -> String {
    let mut out = String::from(
        "| channel | calls | median µs | p99 µs | median / direct |\n|---|---|---|---|---|\n",
    );
    for f in figures {
        out.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} | {:.1}× |\n",
            f.channel, f.calls, f.median_us, f.p99_us, f.median_ratio
        ));
    }
    out
}
