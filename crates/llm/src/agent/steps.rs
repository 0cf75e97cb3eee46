//! The loop of one run: restore the conversation, connect the MCP servers,
//! then model turn → tool calls → results → next model turn until an
//! answer without tool calls, the step limit, a failure or the run's
//! cancellation; checkpoint the conversation of a finished run.

use std::collections::{BTreeMap, HashSet};

use agent_adaptor_driver::{
    Checkpoint, DriverError, EventSink, FailureCode, OperationalEvent, Request, Response,
    RunContext, RunEvent, RunFailure, TranscriptItem,
};
use futures::StreamExt;
use futures::future::join_all;

use super::exec::Tools;
use super::mcp::{self, Connection};
use super::tools::Catalog;
use super::translate::{Step, Translator};
use super::{LlmDriver, STEP_LIMIT_CODE, session};
use crate::message::{LlmCallConfig, Message, MessageRole, ToolCall};

/// A lifecycle notice (`metadata.event = event`).
async fn notice(sink: &dyn EventSink, event: &str, text: String) -> Result<(), DriverError> {
    let mut notice = OperationalEvent::text(text);
    notice.metadata = BTreeMap::from([("event".to_owned(), event.to_owned())]);
    sink.emit(RunEvent::Lifecycle(notice)).await?;
    Ok(())
}

/// Runs `req` on `driver` with the resolved `config`.
pub(super) async fn run(
    driver: &LlmDriver,
    mut config: LlmCallConfig,
    ctx: &RunContext,
    req: &Request,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let provider = driver.provider();
    let mut invocation = OperationalEvent::text(format!(
        "{} {} ({})",
        provider.name(),
        config.model,
        provider.protocol().id()
    ));
    invocation.metadata = BTreeMap::from([
        ("provider".to_owned(), provider.name().to_owned()),
        ("protocol".to_owned(), provider.protocol().id().to_owned()),
        ("model".to_owned(), config.model.clone()),
        ("base_url".to_owned(), provider.endpoint().display_url()),
    ]);
    sink.emit(RunEvent::Invocation(invocation)).await?;
    let (history, resume_id) = session::restore(req)?;

    let mut catalog = Catalog::with_host_tools(req.host_tools.specs());
    let connected = join_all(
        req.mcp_servers
            .iter()
            .map(|server| mcp::connect(server, &ctx.cancel)),
    )
    .await;
    let mut connections: Vec<Connection> = Vec::new();
    let mut unavailable = None;
    for (server, outcome) in req.mcp_servers.iter().zip(connected) {
        match outcome {
            Ok(connection) => {
                let index = connections.len();
                for tool in &connection.tools {
                    if !server.tools.offers(&tool.name) {
                        continue;
                    }
                    catalog.add_mcp(
                        index,
                        &server.name,
                        &tool.name,
                        tool.description.as_deref().unwrap_or_default(),
                        serde_json::Value::Object((*tool.input_schema).clone()),
                        server.tools.auto_approve.contains(tool.name.as_ref()),
                    );
                }
                connections.push(connection);
            }
            Err(reason) => {
                let text = format!("MCP server {} is unavailable: {reason}", server.name);
                if server.required && unavailable.is_none() {
                    unavailable = Some(text.clone());
                }
                notice(sink, "mcp.server_unavailable", text).await?;
            }
        }
    }
    let outcome = async {
        for why in &catalog.skipped {
            notice(sink, "llm.tool_skipped", why.clone()).await?;
        }
        if ctx.cancel.is_cancelled() {
            return Err(DriverError::Cancelled);
        }
        config.tools.extend(catalog.definitions().iter().cloned());
        let mut translator = Translator::new(
            &req.run_id,
            req.streaming,
            &config.model,
            req.new_transcript(),
            catalog.scopes(),
        );
        translator.start(sink).await?;
        if let Some(text) = unavailable {
            translator
                .fail(sink, RunFailure::new(FailureCode::AgentError, text))
                .await?;
            return Ok(translator.into_response(provider.name(), String::new()));
        }
        let tools = Tools {
            catalog: &catalog,
            connections: &connections,
            req,
            sink,
            cancel: &ctx.cancel,
            payloads: translator.payloads(),
        };
        let looped = Loop {
            driver,
            config: &config,
            ctx,
            req,
            sink,
            history,
            translator,
        };
        looped.run(&tools, &resume_id).await
    }
    .await;
    for connection in connections {
        connection.close().await;
    }
    outcome
}

/// The state of the step loop.
struct Loop<'a> {
    driver: &'a LlmDriver,
    config: &'a LlmCallConfig,
    ctx: &'a RunContext,
    req: &'a Request,
    sink: &'a dyn EventSink,
    history: Vec<Message>,
    translator: Translator,
}

impl Loop<'_> {
    async fn run(mut self, tools: &Tools<'_>, resume_id: &str) -> Result<Response, DriverError> {
        self.history.push(Message::user(self.req.prompt.clone()));
        let limit = self.driver.step_limit();
        let mut finished = false;
        // The text of the last step: the output of a run that ends without
        // an answer.
        let mut partial = String::new();
        for _ in 0..limit {
            self.translator.begin_step();
            self.model_turn().await?;
            if self.translator.failed() {
                partial = self.translator.take_step().text();
                break;
            }
            let step = self.translator.take_step();
            let ids = self.history_ids(&step);
            let calls: Vec<ToolCall> = step
                .calls
                .iter()
                .zip(&ids)
                .map(|((_, call), id)| {
                    ToolCall::new(id.clone(), call.name.clone(), call.arguments.clone())
                })
                .collect();
            self.history.push(
                Message::assistant(step.text())
                    .with_tool_calls(calls)
                    .with_reasoning(step.reasoning),
            );
            if step.calls.is_empty() {
                finished = true;
                break;
            }
            let results = tools.run_all(&step.calls).await;
            if self.ctx.cancel.is_cancelled() {
                return Err(DriverError::Cancelled);
            }
            for (((lifecycle_id, _), id), result) in step.calls.iter().zip(&ids).zip(results) {
                let item = TranscriptItem::tool_result(
                    lifecycle_id.clone(),
                    result.content.clone(),
                    result.is_error,
                );
                self.translator.push_item(self.sink, item).await?;
                self.history
                    .push(Message::tool_result(id.clone(), result.content));
            }
        }
        let provider = self.driver.provider().name();
        if !finished {
            if !self.translator.failed() {
                partial = self
                    .history
                    .iter()
                    .rev()
                    .find(|m| m.role == MessageRole::Assistant)
                    .map(|m| m.content.clone())
                    .unwrap_or_default();
                let mut failure = RunFailure::new(
                    FailureCode::parse(STEP_LIMIT_CODE),
                    format!("the model was still calling tools after {limit} steps"),
                );
                failure
                    .metadata
                    .insert("max_steps".into(), limit.to_string());
                self.translator.fail(self.sink, failure).await?;
            }
            return Ok(self.translator.into_response(provider, partial));
        }
        self.translator.finish(self.sink).await?;
        let state = session::save(&self.history, resume_id)?;
        // The answer is the last message: moved out once it is saved.
        let answer = self.history.pop().map(|m| m.content).unwrap_or_default();
        let mut response = self.translator.into_response(provider, answer);
        response.checkpoint = Some(Checkpoint::valid(state));
        Ok(response)
    }

    /// The ids the step's calls get in the conversation: the provider's,
    /// unless empty or already used earlier in the conversation (a
    /// provider that numbers its calls per turn, as Gemini does), then a
    /// fresh `call_<n>`.
    fn history_ids(&self, step: &Step) -> Vec<String> {
        let used: HashSet<&str> = self
            .history
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
            .collect();
        let taken = |ids: &[String], id: &str| used.contains(id) || ids.iter().any(|i| i == id);
        let mut fresh = used.len();
        let mut ids: Vec<String> = Vec::with_capacity(step.calls.len());
        for (_, call) in &step.calls {
            let id = if !call.id.is_empty() && !taken(&ids, &call.id) {
                call.id.clone()
            } else {
                loop {
                    let candidate = format!("call_{fresh}");
                    fresh += 1;
                    if !taken(&ids, &candidate)
                        && !step.calls.iter().any(|(_, c)| c.id == candidate)
                    {
                        break candidate;
                    }
                }
            };
            ids.push(id);
        }
        ids
    }

    /// One model turn, translated live.
    async fn model_turn(&mut self) -> Result<(), DriverError> {
        let mut messages = Vec::with_capacity(self.history.len() + 1);
        if let Some(instructions) = self.req.instructions.as_ref().filter(|i| !i.is_empty()) {
            messages.push(Message::system(instructions.clone()));
        }
        messages.extend(self.history.iter().cloned());
        let provider = self.driver.provider();
        let opened = tokio::select! {
            biased;
            () = self.ctx.cancel.cancelled() => return Err(DriverError::Cancelled),
            opened = provider.chat_completion_stream(&messages, self.config) => opened,
        };
        let mut stream = match opened {
            Ok(stream) => stream,
            Err(error) => return self.translator.call_failed(self.sink, &error).await,
        };
        loop {
            let item = tokio::select! {
                biased;
                () = self.ctx.cancel.cancelled() => return Err(DriverError::Cancelled),
                item = stream.next() => item,
            };
            match item {
                Some(Ok(event)) => {
                    if self.translator.event(self.sink, event).await? {
                        return Ok(());
                    }
                }
                Some(Err(error)) => return self.translator.call_failed(self.sink, &error).await,
                None => return self.translator.ended_without_terminal(self.sink).await,
            }
        }
    }
}
