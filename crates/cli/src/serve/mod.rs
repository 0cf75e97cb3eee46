//! `agent-adaptor serve`: one HTTP server with
//!
//! | path | what |
//! |---|---|
//! | `GET /` | the web chat ([`INDEX_HTML`]; its script, style, favicon and vendored libraries under `/assets/…` and `/favicon.svg`, [`assets`]) |
//! | `POST /agui` | AG-UI 1.0 over SSE; `threadId` → thread `agui/v1/web/<threadId>` |
//! | `POST /sse` | raw SSE (our own events); `sessionKey` → thread `sse/v1//<sessionKey>` |
//! | `GET /.well-known/agent-card.json`, `POST /a2a` | A2A 1.0 (contexts are threads `a2a:<contextId>`; push notifications with `--push-allow-host`, [`push`]) |
//! | `GET /api/info` | what runs: driver, model, playground or not (never a path or a secret) |
//! | `GET /api/threads` | the web chat's threads, newest first |
//! | `GET /api/threads/{id}` | one of them: record, title, the conversation (from the event log; for llm threads without one, from the record) and the AG-UI transcript the page replays |
//! | `PATCH /api/threads/{id}` | rename it (`{"title"}`) |
//! | `DELETE /api/threads/{id}` | delete it: records, event log, name |
//! | `GET /api/threads/{id}/events?since=N` | the thread's event log after cursor `N`, one page |
//! | `POST /api/threads/{id}/runs/{runId}/cancel` | stop a run this server streams (the page's Stop; a dropped stream is otherwise given a reconnect grace) |
//! | `GET /api/threads/{id}/allowed-tools` | the tools always allowed in it (`{"tools"}`) |
//! | `DELETE /api/threads/{id}/allowed-tools/{tool}` | stop always allowing one (404 `not_allowed` if it was not) |
//! | `POST /api/session` | the page trades the token for a session cookie |
//!
//! Nobody is trusted by default ([`access`]): every request needs the token
//! (`Authorization: Bearer`) or the session cookie the page gets from the
//! printed URL, a `Host` naming this server, and, for a state-changing
//! request from a browser, this server's own `Origin`. Only the client that
//! started a run answers its approvals and replays its stream.
//!
//! Every AG-UI run is recorded in its thread's event log: a reconnect
//! (`Last-Event-ID`) to any instance over the same store replays it, and
//! the page shows a thread's history after a reload.
//!
//! A2A push notifications are off unless `--push-allow-host HOST[:PORT]`
//! (repeatable) names the webhook hosts and `--push-secret-file` (or
//! `AGENT_ADAPTOR_PUSH_SECRET`) gives the secret deliveries are signed
//! with ([`push`]; what is refused, delivered and signed:
//! `agent_adaptor_bridges::a2a::push`).
//!
//! Threads live in the SQLite file printed at start, or in the PostgreSQL
//! server given with `--store postgres://…` (several `serve` instances on
//! several hosts may share it: a thread is served by whichever instance
//! gets the request, one run at a time per thread).

pub mod access;
mod api;
pub mod assets;
mod grants;
pub mod log;
pub mod push;
pub mod recover;
pub mod sweep;
mod titles;

use std::time::Duration;

use agent_adaptor_bridges::a2a::A2aServer;
use agent_adaptor_bridges::agui::{SseHandler, SseOptions};
use agent_adaptor_bridges::http::{HttpServer, ServerLimits};
use agent_adaptor_core::thread::Retention;
use agent_adaptor_core::{Agent, RunOptions};
use serde_json::json;

use crate::args::ServeArgs;
use crate::error::CliError;
use crate::select::select;
use crate::signals::wait_for_shutdown;
use crate::store::StoreSpec;

pub use access::{Access, RUN_PATHS, TOKEN_ENV};
pub use api::conversation;

pub use assets::INDEX_HTML;

/// The AG-UI thread namespace of the web chat.
pub const WEB_NAMESPACE: &str = "web";

/// How long a person has to answer an approval in the web chat.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How long cancelled runs get to end at shutdown, their streams showing the
/// end: the agent's cancel grace (2 s) plus room for a loaded machine to kill
/// and reap the children and publish the final states. An upper bound: a
/// shutdown whose runs end at once does not wait for it.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// How many threads the page lists.
const THREAD_LIST_LIMIT: usize = 100;

/// Run `agent-adaptor serve` until Ctrl-C, SIGTERM or SIGHUP.
pub async fn serve(args: ServeArgs) -> Result<(), CliError> {
    log::init(args.log_format);
    // What a killed earlier `serve` (or `run`) left running is stopped
    // before anything starts; the operator log says what.
    crate::host_record::sweep_dead_hosts();
    // Listen first: a taken port is reported before anything starts.
    let listener = agent_adaptor_bridges::http::listen(args.addr)
        .map_err(|e| CliError::failure(format!("cannot listen on {}: {e}", args.addr)))?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::failure(format!("cannot listen on {}: {e}", args.addr)))?;
    let access = Access::from_args(&args, local)?;
    if let Some(dir) = &args.cwd
        && !dir.is_dir()
    {
        return Err(CliError::usage(format!(
            "--cwd {}: not a directory",
            dir.display()
        )));
    }
    let equipment = args.equip.load()?;
    let store = StoreSpec::parse(args.store.as_deref())?.open().await?;
    let push = push::settings(&args)?;
    let pushing = push.is_some();
    let selected = select(&args.driver, None).await?;

    let mut defaults = equipment.apply(RunOptions::new());
    if let Some(dir) = &args.cwd {
        defaults = defaults.workspace(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()));
    }
    if let Some(model) = &args.driver.model {
        defaults = defaults.model(model.clone());
    }
    let lease_ttl = Duration::from_secs(args.lease_ttl);
    let identity = recover::Identity::new(&args, local)?;
    let recovered = identity.recover(&store).await?;
    // The agent's defaults carry its host tools.
    let workspace = crate::tools::workspace(args.cwd.as_deref());
    for tool in crate::tools::host_tools(selected.name, &workspace) {
        defaults = defaults.tool(tool);
    }
    // Expired leases of any host sharing the store are recovered every
    // third of the TTL, and by the thread run that takes one over (so a
    // dead host's run is recorded before its thread goes on); a bridge
    // that must learn which runs were interrupted subscribes
    // (`sweeper.subscribe()`) before it is spawned.
    let sweeper = sweep::Sweeper::new(store.store.clone(), lease_ttl);
    let agent = Agent::builder_shared(selected.driver.clone())
        .thread_store(store.store.clone())
        .lease_owner(&identity.instance, &identity.epoch)
        .lease_ttl(lease_ttl)
        .on_recovered(sweeper.hook())
        .cancel_grace(Duration::from_secs(2))
        .defaults(defaults)
        .build()
        .map_err(|e| CliError::usage(e.to_string()))?;
    let run_options = RunOptions::new().approval_timeout(Some(APPROVAL_TIMEOUT));

    let mut agui_options = SseOptions::agui()
        .thread_namespace(WEB_NAMESPACE)
        .interrupt_timeout(APPROVAL_TIMEOUT)
        .run_options(run_options.clone());
    if args.keep_events > 0 {
        agui_options = agui_options
            .event_log(store.store.clone())
            .event_log_retention(Retention::keep_last(args.keep_events));
    }
    let agui = SseHandler::with_threads(agent.clone(), agui_options);
    // Raw SSE is one-way: nobody can answer an approval there, so it is
    // denied at once (visible in the events) instead of waiting.
    let raw = SseHandler::with_threads(
        agent.clone(),
        SseOptions::raw().run_options(RunOptions::new().approval_handler(
            agent_adaptor_core::deny_all("raw SSE has no answer channel (use /agui or /a2a)"),
        )),
    );
    let authenticated = access.guard.authenticates();
    let mut a2a = A2aServer::with_threads(agent.clone())
        .name("agent-adaptor")
        .description(format!("agent-adaptor serve: {}", selected.label))
        .public_url(format!("http://{local}"))
        .run_options(run_options)
        .task_store(store.store.clone())
        .card_with(|card| {
            if authenticated {
                card.declare_bearer(Some(
                    "the token `agent-adaptor serve` printed (or --token / AGENT_ADAPTOR_TOKEN)",
                ));
            }
        });
    if let Some(push) = push {
        // Configs are kept in the task store set above.
        a2a = a2a
            .push_notifications(push)
            .map_err(|e| CliError::failure(e.to_string()))?;
    }
    let a2a = a2a.build();
    // The tasks of runs a dead process of this instance left behind fail,
    // and those of every run the sweeper later finds interrupted (every
    // server sharing the store shows it).
    fail_a2a_tasks(&a2a, &recovered).await;
    let mut interrupted = sweeper.subscribe();
    let failing = a2a.clone();
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match interrupted.recv().await {
                Ok(runs) => fail_a2a_tasks(&failing, &runs).await,
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    });
    let state = api::AppState {
        store: store.store.clone(),
        agui: agui.clone(),
        // What the page's header shows: never a path, a URL or a key
        // (the label and the store description name local paths).
        info: json!({
            "driver": selected.name.as_str(),
            "model": args.driver.model.clone().or_else(|| {
                selected.playground.is_some().then(|| "playground".to_owned())
            }),
            "playground": selected.playground.is_some(),
        }),
    };
    let app = access.guard.layer(
        api::router(state)
            .merge(agui.router("/agui"))
            .merge(raw.router("/sse"))
            .merge(a2a.router()),
    );

    println!("agent-adaptor serve: {}", access.start_url(local));
    println!("  {}", selected.label);
    println!("  threads: {}", store.description);
    println!(
        "  AG-UI POST /agui · raw SSE POST /sse · A2A POST /a2a (card /.well-known/agent-card.json)"
    );
    if pushing {
        println!(
            "  A2A push notifications to: {}",
            args.push_allow_hosts.join(", ")
        );
    }

    // SIGTERM (or Ctrl-C, SIGHUP): stop accepting and let requests and streams finish for the
    // grace period; then cancel every run (their children are killed
    // within the agent's cancel grace) and close every remaining stream and
    // connection, A2A subscriptions and half-sent requests included.
    let mut limits = ServerLimits::default()
        .grace(Duration::from_secs(args.shutdown_grace))
        .close_wait(CLOSE_WAIT);
    if let Some(max) = args.max_connections {
        limits = limits.max_connections(max);
    }
    tracing::info!(
        instance = %identity.instance,
        recovered = recovered.len(),
        max_connections = limits.max_connections,
        grace_secs = args.shutdown_grace,
        "serving"
    );
    let sweeper = sweeper.spawn();
    let bridges = (agui.clone(), raw.clone(), a2a.clone());
    HttpServer::new(listener, app)
        .limits(limits)
        .on_grace_end(move || async move {
            let (agui, raw, a2a) = bridges;
            let (w, r, a) = tokio::join!(
                agui.shutdown(CLOSE_WAIT),
                raw.shutdown(CLOSE_WAIT),
                a2a.shutdown(CLOSE_WAIT)
            );
            tracing::info!(agui = ?w, raw = ?r, a2a = ?a, "runs cancelled at shutdown");
        })
        .serve(async {
            let stop = wait_for_shutdown().await;
            tracing::info!(signal = stop.name(), "shutting down");
        })
        .await;
    // Idempotent: waits again for any run still ending, then stops the
    // resident provider processes.
    let _ = tokio::join!(
        agui.shutdown(CLOSE_WAIT),
        raw.shutdown(CLOSE_WAIT),
        a2a.shutdown(CLOSE_WAIT)
    );
    sweeper.abort();
    agent.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Fail the A2A tasks of `runs` (interrupted: their hosts stopped).
async fn fail_a2a_tasks(a2a: &A2aServer, runs: &[agent_adaptor_core::thread::InterruptedRun]) {
    match a2a.runs_interrupted(runs).await {
        Ok(0) => {}
        Ok(n) => tracing::warn!(tasks = n, "A2A tasks of interrupted runs failed"),
        Err(e) => tracing::error!(error = %e, "cannot fail the A2A tasks of interrupted runs"),
    }
}
