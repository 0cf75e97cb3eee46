//! `agent-adaptor run`: one prompt, rendered live or as JSON lines.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_adaptor_core::{
    Agent, Error, Event, FailureReason, Phase, ProcessKind, RunOptions, RunResult, RunStream,
    Runner, approve_all, deny_all,
};
use futures::{FutureExt, StreamExt};
use serde_json::Value;

use crate::approve;
use crate::args::{ApproveMode, JsonLines, RunArgs};
use crate::error::{CliError, EXIT_FAILURE, EXIT_OUTPUT};
use crate::host_record::{HostRecord, recover_dead_runs, sweep_dead_hosts};
use crate::json_out;
use crate::render::Renderer;
use crate::select::{Selected, env_policy, select_with_env};
use crate::signals::{self, Signals};
use crate::store::StoreSpec;

/// How long a driver may take to stop after Ctrl-C before core drops it
/// (which kills its process group).
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Read and check a `--schema` file: it must be one JSON object.
pub fn read_schema(path: &Path) -> Result<(Vec<u8>, Value), CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::usage(format!("cannot read schema file {}: {e}", path.display())))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| CliError::usage(format!("schema file {} is not JSON: {e}", path.display())))?;
    if !value.is_object() {
        return Err(CliError::usage(format!(
            "schema file {} must hold one JSON object (a JSON Schema)",
            path.display()
        )));
    }
    Ok((bytes, value))
}

/// Ask for structured output matching `schema` (the file's bytes).
pub fn with_schema(options: RunOptions, schema: &[u8]) -> RunOptions {
    options.with_schema_json(schema)
}

/// The approval mode in effect: the flag, else `ask` when stdin is a
/// terminal and `none` otherwise.
pub fn approve_mode(flag: Option<ApproveMode>) -> ApproveMode {
    flag.unwrap_or(if std::io::stdin().is_terminal() {
        ApproveMode::Ask
    } else {
        ApproveMode::None
    })
}

/// Run `agent-adaptor run`. With `--json`, the last stdout line is the
/// result line also when the run fails before it starts.
pub async fn run(args: RunArgs) -> Result<(), CliError> {
    let result_line = args.json.is_some_and(JsonLines::result);
    match run_inner(args).await {
        Err(Stop::NotStarted(reason, error)) => {
            if result_line {
                let line = json_out::not_started_line(reason, &error.message);
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}").and_then(|()| out.flush());
            }
            Err(error)
        }
        Err(Stop::Run(error)) => Err(error),
        Ok(()) => Ok(()),
    }
}

/// How `run` ended early.
enum Stop {
    /// Before the run started: the result line's `failure.reason`
    /// ([`json_out::not_started_line`]) and the error.
    NotStarted(&'static str, CliError),
    /// The run started (its result line is printed already, when stdout
    /// takes it).
    Run(CliError),
}

/// `Stop::NotStarted` with `reason`, for `map_err`.
fn not_started(reason: &'static str) -> impl FnOnce(CliError) -> Stop {
    move |e| Stop::NotStarted(reason, e)
}

async fn run_inner(args: RunArgs) -> Result<(), Stop> {
    // First: what a killed `agent-adaptor` left running is stopped.
    let swept = sweep_dead_hosts();
    let prompt = args.prompt.join(" ");
    if prompt.trim().is_empty() {
        return Err(Stop::NotStarted(
            json_out::INVALID_ARGUMENTS,
            CliError::usage("the prompt is empty"),
        ));
    }
    let schema = args
        .schema
        .as_deref()
        .map(read_schema)
        .transpose()
        .map_err(not_started(json_out::INVALID_ARGUMENTS))?;
    if let Some(dir) = &args.cwd
        && !dir.is_dir()
    {
        return Err(Stop::NotStarted(
            json_out::INVALID_ARGUMENTS,
            CliError::usage(format!("--cwd {}: not a directory", dir.display())),
        ));
    }
    let equipment = args
        .equip
        .load()
        .map_err(not_started(json_out::INVALID_ARGUMENTS))?;
    let services = args
        .resources
        .service_specs(&crate::tools::workspace(args.cwd.as_deref()))
        .map_err(not_started(json_out::INVALID_ARGUMENTS))?;
    let mode = approve_mode(args.approve);
    let store = if args.thread.is_some() || args.store.is_some() {
        let spec = StoreSpec::parse(args.store.as_deref())
            .map_err(not_started(json_out::INVALID_ARGUMENTS))?;
        Some(
            spec.open()
                .await
                .map_err(not_started(json_out::STORE_UNAVAILABLE))?,
        )
    } else {
        None
    };
    let selected = select_with_env(
        &args.driver,
        schema.as_ref().map(|(_, v)| v),
        env_policy(&args.driver, args.inherit_env),
    )
    .await
    .map_err(not_started(json_out::DRIVER_UNAVAILABLE))?;
    let json = args.json.is_some();
    let styled = !json && std::io::stderr().is_terminal();
    let mut renderer = Renderer::new(styled);
    if !json {
        if let Some(line) = &swept {
            renderer.dim_note(&format!("▸ {line}"));
        }
        let model = args
            .driver
            .model
            .as_deref()
            .map(|m| format!(" · model {m}"))
            .unwrap_or_default();
        renderer.dim_note(&format!("▸ {}{model}", selected.label));
        if let Some(store) = &store {
            renderer.dim_note(&format!("▸ threads: {}", store.description));
        }
    }

    let mut builder = Agent::builder_shared(selected.driver.clone()).cancel_grace(CANCEL_GRACE);
    let workspace = crate::tools::workspace(args.cwd.as_deref());
    for tool in crate::tools::host_tools(selected.name, &workspace) {
        builder = builder.tool(tool);
    }
    // Held until the command ends: while it lives, nobody takes this
    // process's thread leases for a dead one's.
    let mut _host = None;
    if let Some(store) = &store {
        recover_dead_runs(store).await;
        let host = HostRecord::claim(store);
        builder = builder
            .thread_store(store.store.clone())
            .lease_owner(host.instance(), host.epoch());
        _host = Some(host);
    }
    let quiet = args.json.is_some();
    if let Some(resources) = crate::run_resources::resources(
        &args.resources,
        args.worktree,
        args.thread.is_some(),
        &workspace,
        services,
        |line| {
            if !quiet {
                renderer.dim_note(line)
            }
        },
    )
    .await
    {
        builder = builder.resources(Arc::new(resources));
    }
    let agent = builder.build().map_err(|e| {
        Stop::NotStarted(json_out::INVALID_CONFIG, CliError::failure(e.to_string()))
    })?;
    let mut options = RunOptions::new();
    if let Some(limit) = args.timeout {
        options = options.timeout(limit);
    }
    if let Some(model) = &args.driver.model {
        options = options.model(model.clone());
    }
    if let Some(dir) = &args.cwd {
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        options = options.workspace(dir);
    }
    if let Some((bytes, _)) = &schema {
        options = with_schema(options, bytes);
    }
    options = equipment.apply(options);
    options = match mode {
        // A human at the terminal may take their time.
        ApproveMode::Ask => options.approval_timeout(None),
        ApproveMode::All => options.approval_handler(approve_all()),
        ApproveMode::None => options.approval_handler(deny_all(
            "denied by --approve none (a run without a terminal on stdin denies every request)",
        )),
    };
    let runner: Arc<dyn Runner> = match (&args.thread, &args.fork_from) {
        (Some(key), Some(parent)) => Arc::new(recorded(
            agent.thread(parent.clone()).fork(key.clone()),
            args.keep_events,
        )),
        (Some(key), None) => {
            let thread = agent.thread(key.clone());
            let thread = if args.new_session {
                thread.new_session()
            } else {
                thread.refuse_incompatible()
            };
            Arc::new(recorded(thread, args.keep_events))
        }
        (None, _) => Arc::new(agent.clone()),
    };
    let started = Instant::now();
    let stream = runner.stream_with(&prompt, options);
    let view = View {
        json: args.json.map(|lines| JsonFilter {
            events: lines.events(),
            raw: !args.no_raw,
        }),
        mode,
        // With `--schema` stdout gets the structured answer once, at the
        // end; the streamed text (the same JSON) is not echoed.
        text: schema.is_none(),
    };
    let outcome = drive(stream, &mut renderer, view).await;
    agent.close().await;
    let refusal = crate::thread_refusal::refusal(&outcome.result, &args, &selected);
    let result_line = args.json.map(JsonLines::result);
    report(outcome, &mut renderer, result_line, started, &selected)
        .map_err(|e| Stop::Run(refusal.filter(|_| e.code == EXIT_FAILURE).unwrap_or(e)))
}

/// What the event loop ended with.
struct Outcome {
    result: Result<RunResult, Error>,
    run_id: String,
    /// The first signal that cancelled the run, if one did.
    interrupted: Option<signals::Stop>,
}

/// How `run` shows the run.
#[derive(Debug, Clone, Copy)]
struct View {
    /// `--json`: which event lines go to stdout.
    json: Option<JsonFilter>,
    mode: ApproveMode,
    /// Render the answer's text live (not with `--schema`).
    text: bool,
}

/// Drain the stream: render or print each event, answer approvals, cancel
/// on Ctrl-C, SIGTERM or SIGHUP.
async fn drive(mut stream: RunStream, renderer: &mut Renderer, view: View) -> Outcome {
    let View { json, mode, text } = view;
    let filter = json;
    let json = json.is_some();
    let run_id = stream.run_id().to_owned();
    let handle = stream.handle();
    let mut interrupted: Option<signals::Stop> = None;
    let mut output_closed = false;
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    let mut signals = Signals::new();
    let closed = crate::render::stdout_closed();
    tokio::pin!(closed);
    // `--json`: the lines of the events ready at once, written together.
    let mut lines = Vec::new();
    loop {
        tokio::select! {
            () = &mut closed, if !output_closed => {
                renderer.fail_output(std::io::ErrorKind::BrokenPipe.into());
                output_closed = true;
                renderer.note("output closed (its reader went away): cancelling the run");
                handle.cancel();
            }
            event = stream.next() => {
                let Some(event) = event else { break };
                let (event, ended) = if let Some(filter) = filter {
                    print_ready(event, &mut stream, renderer, &mut lines, filter)
                } else {
                    if text || !matches!(&event, Event::TextDelta(d) if d.phase == Phase::Content) {
                        renderer.event(&event);
                    }
                    if let Some(line) = crate::thread_refusal::replaced_note(&event) {
                        renderer.note(&line);
                    }
                    (event, false)
                };
                if let Some(e) = renderer.output_error()
                    && !output_closed
                {
                    // Nobody reads the answer any more: stop the CLI.
                    output_closed = true;
                    renderer.note(&format!("output failed ({e}): cancelling the run"));
                    handle.cancel();
                }
                if let Event::ApprovalRequest(req) = &event
                    && mode == ApproveMode::Ask
                    && interrupted.is_none()
                    && !output_closed
                {
                    renderer.suspend();
                    eprint!("{}", renderer.approval_prompt(req));
                    let _ = std::io::stderr().flush();
                    tokio::select! {
                        line = approve::read_line() => {
                            let answer = approve::interpret(req, line.as_deref());
                            if let Err(e) = approve::deliver(req, &answer) {
                                renderer.dim_note(&format!("approval not delivered: {e}"));
                            }
                        }
                        stop = signals.recv() => {
                            // A hung-up terminal fails the write.
                            let _ = writeln!(std::io::stderr());
                            interrupted = Some(stop);
                            handle.cancel();
                            renderer.dim_note("cancelling…");
                        }
                    }
                }
                if ended {
                    break;
                }
            }
            _ = ticker.tick(), if !json => renderer.tick(),
            stop = signals.recv() => {
                if !json {
                    renderer.dim_note(if interrupted.is_some() { "still cancelling…" } else { "cancelling…" });
                }
                interrupted = interrupted.or(Some(stop));
                handle.cancel();
            }
        }
    }
    let result = stream.result().await;
    Outcome {
        result,
        run_id,
        interrupted,
    }
}

/// Events `run --json` writes with one stdout write at most.
const JSON_BATCH: usize = 256;

/// `run --json`: write the line of `event` and of the events already
/// ready after it (up to [`JSON_BATCH`], stopping after an approval
/// request, which may need a prompt) with one write and one flush, before
/// waiting for more, so no event waits for a later one. Returns the last
/// event written and whether the stream ended.
fn print_ready(
    event: Event,
    stream: &mut RunStream,
    renderer: &mut Renderer,
    lines: &mut Vec<u8>,
    filter: JsonFilter,
) -> (Event, bool) {
    lines.clear();
    let mut event = event;
    let mut ended = false;
    let mut written = 0;
    loop {
        if filter.keeps(&event) {
            json_out::write_event(lines, &event);
            lines.push(b'\n');
        }
        written += 1;
        if written == JSON_BATCH || matches!(event, Event::ApprovalRequest(_)) {
            break;
        }
        match stream.next().now_or_never() {
            Some(Some(next)) => event = next,
            Some(None) => {
                ended = true;
                break;
            }
            None => break,
        }
    }
    if !lines.is_empty() {
        renderer.out_bytes(lines);
    }
    (event, ended)
}

/// Which events `run --json` prints.
#[derive(Debug, Clone, Copy)]
struct JsonFilter {
    /// Event lines at all (not with `--json=result`).
    events: bool,
    /// Raw process output lines (not with `--no-raw`).
    raw: bool,
}

impl JsonFilter {
    fn keeps(self, event: &Event) -> bool {
        let raw = matches!(event, Event::ProcessInfo(p)
            if matches!(p.kind, ProcessKind::Stdout | ProcessKind::Stderr));
        self.events && (self.raw || !raw)
    }
}

/// Print the end of the run (`result_line`: `--json`, and whether it
/// prints the result line) and turn its outcome into the exit status.
fn report(
    outcome: Outcome,
    renderer: &mut Renderer,
    result_line: Option<bool>,
    started: Instant,
    selected: &Selected,
) -> Result<(), CliError> {
    let json = result_line.is_some();
    match result_line {
        Some(true) => {
            let line = json_out::result_line(&outcome.result, &outcome.run_id);
            renderer.out(&format!("{line}\n"));
        }
        Some(false) => {}
        None => renderer.finish(),
    }
    let what = if selected.playground.is_some() {
        "playground".to_owned()
    } else {
        selected.name.as_str().to_owned()
    };
    match outcome.result {
        Ok(result) => {
            if !json {
                if let Some(so) = result.structured_output()
                    && let Some(value) = &so.value
                {
                    renderer.dim_note(&format!("structured output (valid: {}):", so.valid));
                    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
                    renderer.out(&format!("{pretty}\n"));
                }
                crate::run_resources::render(&result, renderer);
                let what = if result.model.is_empty() || result.model == what {
                    what
                } else {
                    format!("{what} · {}", result.model)
                };
                renderer.usage(result.usage.as_ref(), started.elapsed(), &what);
            }
            output_failure(renderer).map_or(Ok(()), Err)
        }
        Err(e) => {
            Err(output_failure(renderer).unwrap_or_else(|| describe(&e, outcome.interrupted)))
        }
    }
}

/// The failure of a run whose stdout could not be written (it was
/// cancelled when that happened): exit [`EXIT_OUTPUT`].
fn output_failure(renderer: &Renderer) -> Option<CliError> {
    renderer.output_error().map(|e| CliError {
        message: format!("output failed ({e}): the run was cancelled"),
        code: EXIT_OUTPUT,
    })
}

/// One line for a failed run.
fn describe(e: &Error, interrupted: Option<signals::Stop>) -> CliError {
    match e.as_run_error() {
        Some(re) if re.reason == FailureReason::Cancelled || interrupted.is_some() => {
            let stop = interrupted.unwrap_or(signals::Stop::Interrupt);
            CliError::signalled(format!("run cancelled ({})", stop.name()), stop)
        }
        Some(re) => CliError::failure(format!("run failed ({}): {}", re.reason, re.message)),
        None => CliError::failure(format!("run refused: {e}")),
    }
}

/// `thread`, recording its events (keeping the newest `keep`; 0: not
/// recorded).
fn recorded(thread: agent_adaptor_core::Thread, keep: u64) -> agent_adaptor_core::Thread {
    match keep {
        0 => thread,
        n => thread.record_events(agent_adaptor_core::thread::Retention::keep_last(n)),
    }
}
