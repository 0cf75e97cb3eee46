//! What the one-shot JSONL CLI drivers (Gemini CLI, Cursor Agent) share: the
//! run-lifecycle and transcript bookkeeping of their parsers ([`Emitter`]),
//! how a run that never printed its terminal line fails
//! ([`missing_terminal`]), what the process told about its end ([`Exit`]),
//! and the command they are started with ([`one_shot_command`]).
//!
//! Protocol semantics stay in each driver's parser; nothing here looks
//! inside a provider's JSON.

use std::path::Path;
use std::time::Duration;

use agent_adaptor_driver::{
    Checkpoint, OperationalEvent, ProviderCoords, RunEvent, RunFailure, StreamPayload, Transcript,
    TranscriptItem, TranscriptKind, describe_exit,
};
use agent_adaptor_process::{Command, Finished, StdinMode};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::child_env::{EnvPolicy, EnvVars};
use crate::exit::{CliName, ExitFacts};
use crate::pump::Out;

/// Longest stdout line kept in a notice (the whole line is in the raw capture).
const NOTICE_PREVIEW_BYTES: usize = 2048;

/// The bookkeeping every JSONL parser does around its protocol: `run.started`
/// exactly once and first, live payloads only when the request streams, the
/// transcript kept item by item as it is emitted (the mirror the response
/// returns), and the shapes of notices and custom payloads.
#[derive(Debug, Clone)]
pub struct Emitter {
    driver: &'static str,
    payloads: bool,
    started: bool,
    items: Transcript,
}

impl Emitter {
    /// An emitter for `driver` (the prefix of notices and custom kinds);
    /// `payloads` turns live payloads on.
    pub fn new(driver: &'static str, payloads: bool) -> Self {
        Emitter {
            driver,
            payloads,
            started: false,
            items: Transcript::new(),
        }
    }

    /// True when live payloads are emitted.
    pub fn payloads(&self) -> bool {
        self.payloads
    }

    /// Emit `run.started` with the provider's coordinates, unless it was
    /// emitted already (or payloads are off).
    pub fn start(&mut self, out: &mut Vec<Out>, source: ProviderCoords) {
        if self.payloads && !self.started {
            self.started = true;
            out.push(Out::Stream(
                StreamPayload::run_started().with_source(source),
            ));
        }
    }

    /// Emit a live payload (after `run.started`), when payloads are on.
    pub fn stream(&mut self, out: &mut Vec<Out>, payload: StreamPayload) {
        if self.payloads {
            self.start(out, ProviderCoords::default());
            out.push(Out::Stream(payload));
        }
    }

    /// Emit a transcript item and keep it for the response.
    pub fn item(&mut self, out: &mut Vec<Out>, item: TranscriptItem) {
        out.push(Out::Event(RunEvent::Item(self.items.share(item))));
    }

    /// The transcript so far, in emission order.
    pub fn transcript(&self) -> &Transcript {
        &self.items
    }

    /// Record the transcript into `transcript` (empty, made with the
    /// request's budget by [`Request::new_transcript`](agent_adaptor_driver::Request::new_transcript))
    /// instead of one with the default budget.
    pub fn set_transcript(&mut self, transcript: Transcript) {
        self.items = transcript;
    }

    /// Hand the transcript over to the response (no copy), leaving an
    /// empty one.
    pub fn take_transcript(&mut self) -> Transcript {
        std::mem::take(&mut self.items)
    }

    /// An operational notice `"<driver>: <what>"` about one stdout line, with
    /// a bounded preview of the line.
    pub fn notice(&self, out: &mut Vec<Out>, what: &str, raw: &[u8]) {
        let mut ev = OperationalEvent::text(format!("{}: {what}", self.driver));
        ev.metadata.insert("bytes".into(), raw.len().to_string());
        let preview = String::from_utf8_lossy(&raw[..raw.len().min(NOTICE_PREVIEW_BYTES)]);
        ev.data = Some(json!({ "line": preview }));
        out.push(Out::Event(RunEvent::Lifecycle(ev)));
    }

    /// A stdout line that is not a protocol frame: a notice saying whether it
    /// looked like JSON (malformed) or was plain text.
    pub fn not_protocol(&self, out: &mut Vec<Out>, raw: &[u8], error: &serde_json::Error) {
        let what = if raw.first() == Some(&b'{') {
            format!("malformed protocol line ({error})")
        } else {
            "non-JSON stdout line".to_owned()
        };
        self.notice(out, &what, raw);
    }

    /// An event the parser does not know, kept whole: a custom payload
    /// `"<driver>.<kind>"` carrying the raw JSON when payloads are on, else a
    /// notice carrying it.
    pub fn unknown(&mut self, out: &mut Vec<Out>, kind: &str, raw: Value) {
        let name = format!("{}.{kind}", self.driver);
        if self.payloads {
            self.stream(
                out,
                StreamPayload::custom(name, String::new()).with_raw(raw),
            );
        } else {
            let mut ev = OperationalEvent::text(format!("{}: unknown event {kind:?}", self.driver));
            ev.metadata.insert("kind".into(), name);
            ev.data = Some(raw);
            out.push(Out::Event(RunEvent::Lifecycle(ev)));
        }
    }

    /// A warning or error the provider reported without ending the run.
    pub fn warning(&self, out: &mut Vec<Out>, message: &str, severity: &str) {
        let mut ev = OperationalEvent::text(format!("{}: {message}", self.driver));
        ev.metadata.insert("kind".into(), "warning".into());
        ev.metadata.insert("severity".into(), severity.to_owned());
        out.push(Out::Event(RunEvent::Lifecycle(ev)));
    }

    /// End the run as failed: a failure transcript item, then `run.error`.
    pub fn fail(&mut self, out: &mut Vec<Out>, failure: &RunFailure) {
        let mut item = TranscriptItem::new(TranscriptKind::Failure, failure.message.clone());
        item.metadata
            .insert("code".into(), failure.code.as_str().to_owned());
        self.item(out, item);
        self.stream(out, StreamPayload::run_error(failure.clone()));
    }
}

/// How the CLI process ended, as the parser needs to know it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exit {
    /// The process's end (code, signal, and whether that was clean).
    pub process: ExitFacts,
    /// The end of its stderr (redacted and bounded: [`agent_adaptor_driver::stderr_tail`]),
    /// kept in the failure of a run that ended without its terminal line.
    pub stderr_tail: Option<String>,
}

impl Exit {
    /// The facts of a finished process. The end of stderr is read only when
    /// the protocol never `terminated` (only that failure reports it).
    pub fn of(finished: &Finished, terminated: bool) -> Self {
        Exit {
            process: ExitFacts::of(&finished.exit),
            stderr_tail: if terminated {
                None
            } else {
                agent_adaptor_driver::stderr_tail(&finished.stderr)
            },
        }
    }

    /// A clean end: code 0 and no signal, or stopped only because the CLI
    /// did not exit after its output was over ([`ExitFacts::ended_cleanly`]).
    pub fn clean(&self) -> bool {
        self.process.ended_cleanly
    }
}

/// The failure of a run whose stdout ended without the terminal line
/// `terminal` (metadata `reason = missing_terminal`, the exit code, and the
/// end of stderr).
pub fn missing_terminal(driver: &str, terminal: &str, exit: &Exit) -> RunFailure {
    let code = describe_exit(
        exit.process.code,
        exit.process.signaled.then_some("a signal"),
    );
    let mut f =
        RunFailure::missing_terminal(format!("{driver} ended without a {terminal} line ({code})"));
    if let Some(c) = exit.process.code {
        f.metadata.insert("exit_code".into(), c.to_string());
    }
    if exit.process.signaled {
        f.metadata.insert("signaled".into(), "true".into());
    }
    if let Some(tail) = &exit.stderr_tail {
        f.metadata.insert("stderr_tail".into(), tail.clone());
    }
    f
}

/// Record the working directory in a checkpoint's state (both CLIs keep
/// their sessions per project directory, so a resume must run there again).
pub fn with_cwd(checkpoint: Option<Checkpoint>, cwd: Option<&Path>) -> Option<Checkpoint> {
    checkpoint.map(|mut cp| {
        if let (Some(state), Some(dir)) = (cp.state.as_mut(), cwd) {
            state
                .data
                .insert("cwd".into(), dir.to_string_lossy().into_owned());
        }
        cp
    })
}

/// What a one-shot CLI run is started with.
#[derive(Debug, Clone, Copy)]
pub struct OneShot<'a> {
    /// The program.
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [String],
    /// Environment bindings (they win over inherited variables).
    pub env: &'a EnvVars,
    /// Which host variables the CLI inherits.
    pub env_policy: &'a EnvPolicy,
    /// The host variables the CLI documents (names or `PREFIX_*`).
    pub env_allowlist: &'static [&'static str],
    /// The working directory.
    pub cwd: Option<&'a Path>,
    /// Written to stdin, which is then closed (never left open).
    pub prompt: &'a str,
    /// On cancel: the wait after stdin closed, and twice that after SIGTERM.
    pub cancel_grace: Duration,
}

/// The command of a one-shot CLI run.
pub fn one_shot_command(spec: OneShot<'_>) -> Command {
    let mut cmd = Command::new(spec.program);
    cmd.args(spec.args);
    spec.env_policy
        .apply(&mut cmd, spec.env_allowlist, &[], spec.env);
    if let Some(dir) = spec.cwd {
        cmd.cwd(dir);
    }
    cmd.stdin(StdinMode::Bytes(Bytes::from(spec.prompt.to_owned())))
        .close_grace(spec.cancel_grace)
        .term_grace(spec.cancel_grace * 2);
    cmd
}

/// Validation shared by the drivers' configurations: a program, valid
/// environment names, and no flag the driver owns among the extra arguments.
pub fn validate_common(
    driver: &str,
    program: &Path,
    env_policy: &EnvPolicy,
    env: &EnvVars,
    extra_args: &[String],
    owned: &[&str],
) -> Result<(), agent_adaptor_driver::ConfigError> {
    let err = |reason: String| agent_adaptor_driver::ConfigError {
        driver: driver.to_owned(),
        reason,
    };
    if program.as_os_str().is_empty() {
        return Err(err("command is empty".into()));
    }
    crate::child_env::validate(driver, env_policy, env)?;
    for arg in extra_args {
        let flag = arg.split('=').next().unwrap_or(arg);
        if owned.contains(&flag) {
            return Err(err(format!(
                "extra_args must not contain {flag}: the driver sets it"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_events_are_kept_whole() {
        let mut e = Emitter::new("x", false);
        let mut out = Vec::new();
        e.unknown(&mut out, "new", json!({"type": "new", "a": 1}));
        assert!(matches!(&out[0], Out::Event(RunEvent::Lifecycle(ev))
            if ev.data == Some(json!({"type": "new", "a": 1}))));
        let mut e = Emitter::new("x", true);
        let mut out = Vec::new();
        e.unknown(&mut out, "new", json!({"type": "new"}));
        assert_eq!(out.len(), 2, "run.started, then the custom payload");
    }
}

/// Every layer a one-shot JSONL parser forms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The final assistant-facing text.
    pub output: String,
    /// The terminal line, exactly.
    pub terminal: Option<agent_adaptor_driver::TerminalPayload>,
    /// Every transcript item, in emission order.
    pub transcript: Transcript,
    /// Usage the CLI reported.
    pub usage: Option<agent_adaptor_driver::Usage>,
    /// Valid after a successful terminal line with a session id and a clean exit.
    pub checkpoint: Option<Checkpoint>,
    /// The failure, when the run failed or never ended.
    pub failure: Option<RunFailure>,
    /// The model the CLI named.
    pub model: Option<String>,
}

/// A one-shot JSONL parser: lines in, then every layer at the end.
pub trait OneShotParser: crate::pump::LineProtocol {
    /// End of stdout: end the run if the CLI never did, form every layer.
    fn finish(&mut self, exit: &Exit) -> (Vec<Out>, Parsed);
}

/// Who runs: the names and the model fallback of one one-shot run.
#[derive(Debug, Clone, Copy)]
pub struct Runner<'a> {
    /// Shown in the spawn notice (e.g. "Gemini CLI").
    pub display_name: &'a str,
    /// The name of the protocol's terminal line (e.g. `"result"`), for the
    /// notice when the CLI had to be stopped after it.
    pub terminal: &'a str,
    /// `Response::provider`.
    pub provider: &'a str,
    /// The model when the CLI names none.
    pub model: Option<&'a str>,
}

/// Run one one-shot CLI to its end and form the response: the one loop the
/// JSONL drivers share.
pub async fn run_one_shot(
    who: Runner<'_>,
    spec: OneShot<'_>,
    ctx: &agent_adaptor_driver::RunContext,
    sink: &dyn agent_adaptor_driver::EventSink,
    parser: &mut dyn OneShotParser,
) -> Result<agent_adaptor_driver::Response, agent_adaptor_driver::DriverError> {
    let cmd = one_shot_command(spec);
    let cli = CliName {
        name: who.display_name,
        terminal: who.terminal,
    };
    let finished = crate::pump::run(cli, &cmd, ctx, sink, parser, None, &[]).await?;
    let exit = Exit::of(&finished, parser.terminated());
    let (tail, parsed) = parser.finish(&exit);
    for out in tail {
        crate::pump::deliver(out, sink, &mut None, &mut None).await?;
    }
    let mut resp = agent_adaptor_driver::Response {
        output: parsed.output,
        raw: agent_adaptor_driver::RawStreams {
            stdout: finished.stdout.clone(),
            stderr: finished.stderr.clone(),
            terminal: parsed.terminal,
        },
        transcript: parsed.transcript,
        usage: parsed.usage,
        checkpoint: with_cwd(parsed.checkpoint, spec.cwd),
        failure: parsed.failure,
        provider: who.provider.to_owned(),
        model: parsed
            .model
            .or_else(|| who.model.map(str::to_owned))
            .unwrap_or_default(),
        ..Default::default()
    };
    finished.exit.apply_to(&mut resp);
    Ok(resp)
}
