//! The JSON-RPC endpoint: transport checks, dispatch, and the methods.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::{Shared, json};
use crate::Principal;
use crate::a2a::durable::{row_task, write_through};
use crate::a2a::execute;
use crate::a2a::new_id;
use crate::a2a::remote;
use crate::a2a::rpc::{self, ErrorCode, RpcError};
use crate::a2a::shared_input::{self, Sharing};
use crate::a2a::store::TaskSlot;
use crate::a2a::types::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, PROTOCOL_VERSION, Role,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskState, VERSION_HEADER, major_minor,
};

/// Methods of A2A 0.3, answered with `VersionNotSupported`.
const V03_METHODS: &[&str] = &[
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/list",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
];

/// Handle one POST on the RPC path.
pub(crate) async fn rpc(
    shared: Arc<Shared>,
    query: Option<String>,
    headers: HeaderMap,
    principal: Principal,
    body: Body,
) -> Response {
    let null = Value::Null;
    if let Some(auth) = &shared.auth
        && let Err(rejection) = auth.authorize(&headers)
    {
        let status = if rejection.status.is_client_error() {
            rejection.status
        } else {
            StatusCode::UNAUTHORIZED
        };
        let error = RpcError::new(ErrorCode::Unauthorized, rejection.message);
        let mut response = json(status, rpc::failure(&null, &error));
        if let Some(c) = rejection
            .challenge
            .and_then(|c| HeaderValue::from_str(&c).ok())
        {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, c);
        }
        return response;
    }
    if shared.shutdown.is_cancelled() {
        let error = RpcError::new(ErrorCode::Internal, "the A2A server is shutting down");
        return json(StatusCode::SERVICE_UNAVAILABLE, rpc::failure(&null, &error));
    }
    if !json_content_type(&headers) {
        let error = RpcError::new(
            ErrorCode::InvalidRequest,
            "Content-Type must be application/json (or application/a2a+json)",
        );
        return json(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            rpc::failure(&null, &error),
        );
    }
    let too_large = || {
        let error = RpcError::new(
            ErrorCode::InvalidRequest,
            format!("the request body exceeds {} bytes", shared.max_body),
        )
        .with_meta("limitBytes", shared.max_body.to_string());
        json(StatusCode::PAYLOAD_TOO_LARGE, rpc::failure(&null, &error))
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > shared.max_body) {
        return too_large();
    }
    let bytes = match axum::body::to_bytes(body, shared.max_body).await {
        Ok(b) => b,
        Err(_) => return too_large(),
    };
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            let error = RpcError::new(ErrorCode::ParseError, format!("the body is not JSON: {e}"));
            return json(StatusCode::BAD_REQUEST, rpc::failure(&null, &error));
        }
    };
    let env = match rpc::envelope(value) {
        Ok(env) => env,
        Err((id, error)) => return json(StatusCode::BAD_REQUEST, rpc::failure(&id, &error)),
    };
    let id = env.id;
    let call = Call {
        id: &id,
        query: query.as_deref(),
        headers: &headers,
        principal: &principal,
    };
    match dispatch(&shared, &call, &env.method, env.params).await {
        Ok(Reply::Json(result)) => json(StatusCode::OK, rpc::success(&id, result)),
        Ok(Reply::Stream(response)) => response,
        Err(error) => {
            tracing::debug!(code = error.code, message = %error.message, "a2a: request refused");
            json(StatusCode::OK, rpc::failure(&id, &error))
        }
    }
}

enum Reply {
    Json(Value),
    Stream(Response),
}

/// One JSON-RPC call's envelope: its id, the transport's parameters, and
/// who sent it.
struct Call<'a> {
    id: &'a Value,
    query: Option<&'a str>,
    headers: &'a HeaderMap,
    principal: &'a Principal,
}

async fn dispatch(
    shared: &Arc<Shared>,
    call: &Call<'_>,
    method: &str,
    params: Value,
) -> Result<Reply, RpcError> {
    let known = matches!(
        method,
        "SendMessage"
            | "SendStreamingMessage"
            | "GetTask"
            | "CancelTask"
            | "SubscribeToTask"
            | "ListTasks"
            | "GetExtendedAgentCard"
            | "CreateTaskPushNotificationConfig"
            | "GetTaskPushNotificationConfig"
            | "ListTaskPushNotificationConfigs"
            | "DeleteTaskPushNotificationConfig"
    );
    if !known {
        if V03_METHODS.contains(&method) {
            return Err(RpcError::new(
                ErrorCode::VersionNotSupported,
                format!(
                    "{method:?} is an A2A 0.3 method; this server speaks A2A {PROTOCOL_VERSION} \
                     only (use the PascalCase methods with {VERSION_HEADER}: {PROTOCOL_VERSION})"
                ),
            ));
        }
        return Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!("method {method:?} not found"),
        ));
    }
    check_version(call.query, call.headers)?;
    match method {
        "SendMessage" => send(shared, call, params, false).await,
        "SendStreamingMessage" => send(shared, call, params, true).await,
        "GetTask" => get_task(shared, call, params).await.map(Reply::Json),
        "CancelTask" => cancel_task(shared, call, params).await.map(Reply::Json),
        "SubscribeToTask" => subscribe(shared, call, params).await,
        "ListTasks" => list_tasks(shared, call, params).await.map(Reply::Json),
        "GetExtendedAgentCard" => Err(RpcError::new(
            ErrorCode::UnsupportedOperation,
            format!("{method} is not supported by this server"),
        )),
        _ => push_config(shared, call, method, params)
            .await
            .map(Reply::Json),
    }
}

fn push_not_supported() -> RpcError {
    RpcError::new(
        ErrorCode::PushNotificationNotSupported,
        "push notifications are not supported by this server",
    )
}

/// The push config methods, on a task the caller owns.
async fn push_config(
    shared: &Shared,
    call: &Call<'_>,
    method: &str,
    raw: Value,
) -> Result<Value, RpcError> {
    let push = shared.push.as_ref().ok_or_else(push_not_supported)?;
    let task_id = crate::a2a::push::task_id_of(&raw)?;
    // The caller's task, here or (in the task store) on another server.
    let here = local_task(shared, call, &task_id)?.is_some();
    let elsewhere = match (&shared.durable, here) {
        (Some(durable), false) => durable.load(&task_id, call.principal).await?.is_some(),
        _ => false,
    };
    if !here && !elsewhere {
        return Err(RpcError::task_not_found(&task_id));
    }
    push.call(method, raw).await
}

fn json_content_type(headers: &HeaderMap) -> bool {
    let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = ct.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.eq_ignore_ascii_case("application/a2a+json")
}

/// The `A2A-Version` service parameter (header, else query parameter)
/// must be `1.0`; a missing one means 0.3 (spec §3.6.2).
fn check_version(query: Option<&str>, headers: &HeaderMap) -> Result<(), RpcError> {
    let from_query = || {
        query?.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            k.eq_ignore_ascii_case(VERSION_HEADER).then(|| v.to_owned())
        })
    };
    let version = headers
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .or_else(from_query);
    match version {
        Some(v) if major_minor(&v) == major_minor(PROTOCOL_VERSION) => Ok(()),
        Some(v) => Err(RpcError::new(
            ErrorCode::VersionNotSupported,
            format!("A2A version {v:?} is not supported; this server speaks {PROTOCOL_VERSION}"),
        )
        .with_meta("supportedVersions", PROTOCOL_VERSION)),
        None => Err(RpcError::new(
            ErrorCode::VersionNotSupported,
            format!(
                "no {VERSION_HEADER} header: that means A2A 0.3, which this server does not \
                 speak; send {VERSION_HEADER}: {PROTOCOL_VERSION}"
            ),
        )
        .with_meta("supportedVersions", PROTOCOL_VERSION)),
    }
}

fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| RpcError::invalid_params(format!("params: {e}")))
}

fn required_id(id: &str) -> Result<(), RpcError> {
    if id.is_empty() {
        return Err(RpcError::invalid_params(
            "params.id (the task id) is required",
        ));
    }
    Ok(())
}

fn history_length(n: Option<i32>) -> Result<Option<i32>, RpcError> {
    match n {
        Some(n) if n < 0 => Err(RpcError::invalid_params(
            "historyLength must not be negative",
        )),
        other => Ok(other),
    }
}

/// The task `task_id` if this server holds it: `Ok(None)` when it does
/// not (another host may); "not found" when it is another principal's
/// (as if it did not exist: its id alone grants nothing).
fn local_task(
    shared: &Shared,
    call: &Call<'_>,
    task_id: &str,
) -> Result<Option<Arc<TaskSlot>>, RpcError> {
    let Some(slot) = shared.store.get(task_id) else {
        return Ok(None);
    };
    if slot.owner != *call.principal {
        tracing::warn!(
            task_id,
            principal = %call.principal,
            owner = %slot.owner,
            "a2a: refused access to another principal's task"
        );
        return Err(RpcError::task_not_found(task_id));
    }
    Ok(Some(slot))
}

fn task_value(task: &Task) -> Result<Value, RpcError> {
    serde_json::to_value(task)
        .map_err(|e| RpcError::new(ErrorCode::Internal, format!("cannot encode the task: {e}")))
}

/// `SendMessage` / `SendStreamingMessage`.
async fn send(
    shared: &Arc<Shared>,
    call: &Call<'_>,
    raw: Value,
    streaming: bool,
) -> Result<Reply, RpcError> {
    let id = call.id;
    let req: SendMessageRequest = params(raw)?;
    let message = req
        .message
        .ok_or_else(|| RpcError::invalid_params("params.message is required"))?;
    if message.message_id.is_empty() {
        return Err(RpcError::invalid_params("message.messageId is required"));
    }
    if message.role != Role::User {
        return Err(RpcError::invalid_params("message.role must be ROLE_USER"));
    }
    if message.parts.is_empty() {
        return Err(RpcError::invalid_params(
            "message.parts must hold at least one part",
        ));
    }
    let config = req.configuration.unwrap_or_default();
    let mut push_config = match config.task_push_notification_config {
        Some(raw) => {
            let push = shared.push.as_ref().ok_or_else(push_not_supported)?;
            Some(push.prepare(raw).await?)
        }
        None => None,
    };
    let history = history_length(config.history_length)?;

    let (slot, sub) = if message.task_id.is_empty() {
        let prompt = execute::prompt(&message)?;
        let task_id = new_id("task-");
        let context_id = if message.context_id.is_empty() {
            new_id("ctx-")
        } else {
            message.context_id.clone()
        };
        let mut first = message;
        first.task_id = task_id.clone();
        first.context_id = context_id.clone();
        let durable = shared.durable.as_ref().filter(|d| d.enabled());
        let slot = TaskSlot::new(
            task_id.clone(),
            context_id.clone(),
            first,
            call.principal.clone(),
            durable.is_some(),
        );
        if let Some(push) = &shared.push {
            slot.set_push(push.attach(&task_id));
        }
        shared.store.insert(slot.clone())?;
        if let Some(durable) = durable {
            shared.listen_for_cancels().await;
            let kept = match durable.create(&slot, &shared.task_key(&context_id)).await {
                Ok(kept) => kept,
                Err(e) => {
                    // Nothing started: the slot ends as it began.
                    slot.set_status(TaskState::Rejected, None);
                    return Err(e);
                }
            };
            if kept {
                tokio::spawn(write_through(durable.clone(), slot.clone()));
            } else {
                slot.unjournal();
            }
        }
        if let (Some(push), Some(config)) = (&shared.push, push_config.take())
            && let Err(e) = push.register(&task_id, config).await
        {
            slot.set_status(TaskState::Failed, None);
            return Err(e);
        }
        let sub = slot.subscribe();
        let run = shared.start(&prompt, &task_id, &context_id);
        let sharing = durable.filter(|d| d.enabled()).map(|d| Sharing {
            desk: d.desk.clone(),
            key: shared.task_key(&context_id),
        });
        tokio::spawn(execute::drive(slot.clone(), run, sharing));
        (slot, sub)
    } else {
        let Some(slot) = local_task(shared, call, &message.task_id)? else {
            let wait = !config.return_immediately;
            return answer_elsewhere(shared, call, &message, wait, history, streaming).await;
        };
        if !message.context_id.is_empty() && message.context_id != slot.context_id {
            return Err(RpcError::invalid_params(format!(
                "message.contextId {:?} does not match the task's context {:?}",
                message.context_id, slot.context_id
            )));
        }
        if let (Some(push), Some(config)) = (&shared.push, push_config) {
            push.register(&slot.id, config).await?;
        }
        let mut reply = message.clone();
        reply.context_id = slot.context_id.clone();
        let sub = slot.answer(reply, |req| {
            let decision = execute::decision(req.kind, &message)?;
            execute::apply(req, &decision)
        })?;
        tracing::info!(
            task = %slot.id,
            answered_by = %call.principal,
            "a2a: approval answered"
        );
        (slot, sub)
    };

    if streaming {
        return Ok(Reply::Stream(sse(
            shared,
            id,
            sub.snapshot,
            live_updates(slot, sub.updates),
            Close::AtInterrupt,
        )));
    }
    if !config.return_immediately {
        let mut state = sub.state;
        tokio::select! {
            _ = state.wait_for(|s| s.is_terminal() || s.is_interrupted()) => {}
            () = shared.shutdown.cancelled() => {}
        }
    }
    let task = slot.snapshot(history);
    serde_json::to_value(SendMessageResponse::Task(task))
        .map(Reply::Json)
        .map_err(|e| RpcError::new(ErrorCode::Internal, format!("cannot encode the task: {e}")))
}

/// A message answering the approval of a task another server runs: record
/// the answer in the store, wait (bounded) until the owner applied it,
/// then answer as for a local task, from the store.
async fn answer_elsewhere(
    shared: &Arc<Shared>,
    call: &Call<'_>,
    message: &Message,
    wait: bool,
    history: Option<i32>,
    streaming: bool,
) -> Result<Reply, RpcError> {
    let id = &message.task_id;
    let not_found = || RpcError::task_not_found(id);
    let Some(durable) = shared.durable.as_ref().filter(|d| d.enabled()) else {
        return Err(not_found());
    };
    let mut wake = remote::watch(durable, id).await;
    if !shared_input::answer(&durable.desk, call.principal, id, message).await? {
        return Err(not_found());
    }
    tracing::info!(task = %id, answered_by = %call.principal, "a2a: approval answered for another server");
    let row = durable
        .load(id, call.principal)
        .await?
        .ok_or_else(not_found)?;
    let asking = TaskState::InputRequired.as_str();
    let stop = &shared.shutdown;
    // Applied once the task changes: no longer waiting, or any later write
    // (the owner may apply the answer and ask again within one poll).
    let answered_at = row.seq;
    let row = remote::wait_row(
        durable,
        &mut wake,
        row,
        Some(shared.cancel_wait),
        stop,
        |r| r.state != asking || r.seq > answered_at,
    )
    .await;
    if streaming {
        let (_, followed) = remote::follow(durable.clone(), id, call.principal, stop.clone())
            .await?
            .ok_or_else(not_found)?;
        let updates = followed.updates;
        return Ok(Reply::Stream(sse(
            shared,
            call.id,
            followed.snapshot,
            updates,
            Close::AtInterrupt,
        )));
    }
    let row = if wait {
        remote::wait_row(durable, &mut wake, row, None, stop, |r| {
            r.terminal || r.state == asking
        })
        .await
    } else {
        row
    };
    serde_json::to_value(SendMessageResponse::Task(row_task(&row, history)?))
        .map(Reply::Json)
        .map_err(|e| RpcError::new(ErrorCode::Internal, format!("cannot encode the task: {e}")))
}

/// `GetTask`: this server's task, else the store's.
async fn get_task(shared: &Shared, call: &Call<'_>, raw: Value) -> Result<Value, RpcError> {
    let req: GetTaskRequest = params(raw)?;
    required_id(&req.id)?;
    let history = history_length(req.history_length)?;
    if let Some(slot) = local_task(shared, call, &req.id)? {
        return task_value(&slot.snapshot(history));
    }
    let Some(durable) = &shared.durable else {
        return Err(RpcError::task_not_found(&req.id));
    };
    match durable.load(&req.id, call.principal).await? {
        Some(row) => task_value(&row_task(&row, history)?),
        None => Err(RpcError::task_not_found(&req.id)),
    }
}

/// `ListTasks`: the caller's tasks in the task store.
async fn list_tasks(shared: &Shared, call: &Call<'_>, raw: Value) -> Result<Value, RpcError> {
    let Some(durable) = shared.durable.as_ref().filter(|d| d.enabled()) else {
        return Err(RpcError::new(
            ErrorCode::UnsupportedOperation,
            "ListTasks needs a task store: this server keeps its tasks in memory only",
        ));
    };
    let req: ListTasksRequest = params(raw)?;
    let page = remote::list(durable, call.principal, req).await?;
    serde_json::to_value(page)
        .map_err(|e| RpcError::new(ErrorCode::Internal, format!("cannot encode the tasks: {e}")))
}

/// `CancelTask`: stop the run, wait (bounded) until the task is terminal.
/// A task another host runs is cancelled through the store.
async fn cancel_task(shared: &Shared, call: &Call<'_>, raw: Value) -> Result<Value, RpcError> {
    let req: CancelTaskRequest = params(raw)?;
    required_id(&req.id)?;
    let Some(slot) = local_task(shared, call, &req.id)? else {
        let Some(durable) = &shared.durable else {
            return Err(RpcError::task_not_found(&req.id));
        };
        let task = remote::cancel(
            durable,
            &req.id,
            call.principal,
            shared.cancel_wait,
            &shared.shutdown,
        )
        .await?
        .ok_or_else(|| RpcError::task_not_found(&req.id))?;
        return task_value(&task);
    };
    slot.request_cancel()?;
    let mut state = slot.subscribe().state;
    let _ = tokio::time::timeout(
        shared.cancel_wait,
        state.wait_for(|s: &TaskState| s.is_terminal()),
    )
    .await;
    task_value(&slot.snapshot(None))
}

/// `SubscribeToTask`: this server's task live, else another host's from
/// the store.
async fn subscribe(shared: &Arc<Shared>, call: &Call<'_>, raw: Value) -> Result<Reply, RpcError> {
    let req: SubscribeToTaskRequest = params(raw)?;
    required_id(&req.id)?;
    let id = call.id;
    let ended = |state: &str| {
        RpcError::new(
            ErrorCode::UnsupportedOperation,
            format!(
                "task {:?} is {state}: there is nothing left to stream (use GetTask)",
                req.id
            ),
        )
        .with_meta("taskId", req.id.as_str())
    };
    if let Some(slot) = local_task(shared, call, &req.id)? {
        let state = slot.state();
        if state.is_terminal() {
            return Err(ended(state.as_str()));
        }
        let sub = slot.subscribe();
        return Ok(Reply::Stream(sse(
            shared,
            id,
            sub.snapshot,
            live_updates(slot, sub.updates),
            Close::AtTerminal,
        )));
    }
    let Some(durable) = &shared.durable else {
        return Err(RpcError::task_not_found(&req.id));
    };
    let followed = remote::follow(
        durable.clone(),
        &req.id,
        call.principal,
        shared.shutdown.clone(),
    )
    .await?;
    let Some((row, followed)) = followed else {
        return Err(RpcError::task_not_found(&req.id));
    };
    if row.terminal {
        return Err(ended(&row.state));
    }
    Ok(Reply::Stream(sse(
        shared,
        id,
        followed.snapshot,
        followed.updates,
        Close::AtTerminal,
    )))
}

/// A local task's updates after its snapshot; a lagging receiver gets a
/// fresh snapshot instead of the updates it missed.
fn live_updates(
    slot: Arc<TaskSlot>,
    updates: tokio::sync::broadcast::Receiver<StreamResponse>,
) -> BoxStream<'static, StreamResponse> {
    futures::stream::unfold((slot, updates), |(slot, mut updates)| async move {
        let item = match updates.recv().await {
            Ok(item) => item,
            Err(RecvError::Lagged(_)) => StreamResponse::Task(slot.snapshot(None)),
            Err(RecvError::Closed) => return None,
        };
        Some((item, (slot, updates)))
    })
    .boxed()
}

/// When a stream ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Close {
    /// After a terminal or interrupted state (`SendStreamingMessage`).
    AtInterrupt,
    /// After a terminal state (`SubscribeToTask`).
    AtTerminal,
}

impl Close {
    fn after(self, state: TaskState) -> bool {
        state.is_terminal() || (self == Close::AtInterrupt && state.is_interrupted())
    }
}

struct SseState {
    id: Value,
    first: Option<Task>,
    updates: BoxStream<'static, StreamResponse>,
    close: Close,
    done: bool,
    shutdown: tokio_util::sync::CancellationToken,
}

/// The SSE response: the task snapshot, then its updates, each as a
/// JSON-RPC response; ends per `close`, or at server shutdown.
fn sse(
    shared: &Arc<Shared>,
    id: &Value,
    first: Task,
    updates: BoxStream<'static, StreamResponse>,
    close: Close,
) -> Response {
    let state = SseState {
        id: id.clone(),
        first: Some(first),
        updates,
        close,
        done: false,
        shutdown: shared.shutdown.clone(),
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        let item = if let Some(task) = st.first.take() {
            StreamResponse::Task(task)
        } else {
            // Updates already published come first, even at shutdown: the
            // server cancels tasks and waits for their final state before
            // it closes streams, and that state must reach the subscriber.
            let received = tokio::select! {
                biased;
                r = st.updates.next() => r,
                () = st.shutdown.cancelled() => st.updates.next().now_or_never().flatten(),
            };
            received?
        };
        if item.state().is_some_and(|s| st.close.after(s)) {
            st.done = true;
        }
        let data = rpc::success(&st.id, &item).to_string();
        Some((Ok::<_, Infallible>(SseEvent::default().data(data)), st))
    })
    .boxed();
    let sse = Sse::new(stream);
    match shared.keep_alive {
        Some(interval) => sse
            .keep_alive(KeepAlive::new().interval(interval))
            .into_response(),
        None => sse.into_response(),
    }
}
