//! A one-shot CLI: it reads the prompt on stdin, prints one JSON object per
//! line and exits at the end of the turn (Gemini CLI, Cursor Agent). What
//! its drivers share: the run itself ([`run_one_shot`], on the
//! [`pump`](crate::pump)), the parser's conventions ([`Emitter`]), how a run
//! that never printed its terminal line fails ([`missing_terminal`]), what
//! the process told about its end ([`Exit`]), and the command it is started
//! with ([`one_shot_command`]).
//!
//! Protocol semantics stay in each driver's parser; nothing here looks
//! inside a provider's JSON.

use std::path::Path;
use std::time::Duration;

use agent_adaptor_driver::{
    Checkpoint, DriverError, EventSink, RawStreams, Request, Response, RunContext, RunFailure,
    Transcript, describe_exit,
};
use agent_adaptor_process::{Command, Finished, StdinMode};
use bytes::Bytes;

use crate::child_env::{EnvPolicy, EnvVars};
pub use crate::emitter::Emitter;
use crate::exit::{CliName, ExitFacts};
use crate::pump::Out;

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

/// How a one-shot CLI run is started, as configured; the request adds the
/// prompt (written to stdin, which is then closed), its workspace and its
/// model override.
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
    /// The working directory when the request names no workspace.
    pub cwd: Option<&'a Path>,
    /// The model when the request overrides none and the CLI names none.
    pub model: Option<&'a str>,
    /// On cancel: the wait after stdin closed, and twice that after SIGTERM.
    pub cancel_grace: Duration,
}

impl<'a> OneShot<'a> {
    /// The working directory of a run of `req`: its workspace, else the
    /// configured one.
    pub fn cwd_for(&self, req: &'a Request) -> Option<&'a Path> {
        req.workspace.as_deref().or(self.cwd)
    }
}

/// The command of a one-shot CLI run of `req`.
pub fn one_shot_command(spec: &OneShot<'_>, req: &Request) -> Command {
    let mut cmd = Command::new(spec.program);
    cmd.args(spec.args);
    spec.env_policy
        .apply(&mut cmd, spec.env_allowlist, &[], spec.env);
    if let Some(dir) = spec.cwd_for(req) {
        cmd.cwd(dir);
    }
    cmd.stdin(StdinMode::Bytes(Bytes::from(req.prompt.clone())))
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

/// Who runs: the names a one-shot CLI is known by.
#[derive(Debug, Clone, Copy)]
pub struct OneShotCli<'a> {
    /// Shown in the spawn notice (e.g. "Gemini CLI").
    pub display_name: &'a str,
    /// The name of the protocol's terminal line (e.g. `"result"`), for the
    /// notice when the CLI had to be stopped after it.
    pub terminal: &'a str,
    /// `Response::provider`.
    pub provider: &'a str,
}

/// Run one one-shot CLI on `req` to its end and form the response: the one
/// loop the JSONL drivers share. Cancellation (`ctx.cancel`) stops the CLI's
/// process group — stdin closed, SIGTERM after the cancel grace, SIGKILL
/// after twice that — and returns [`DriverError::Cancelled`].
///
/// # Errors
///
/// The CLI could not be started ([`DriverError::Spawn`]) or read, the run
/// was cancelled, or the sink refused an event (the run is over).
pub async fn run_one_shot(
    cli: OneShotCli<'_>,
    spec: OneShot<'_>,
    req: &Request,
    ctx: &RunContext,
    sink: &dyn EventSink,
    parser: &mut dyn OneShotParser,
) -> Result<Response, DriverError> {
    let cmd = one_shot_command(&spec, req);
    let name = CliName {
        name: cli.display_name,
        terminal: cli.terminal,
    };
    let finished = crate::pump::run(name, &cmd, ctx, sink, parser, None, &[]).await?;
    let exit = Exit::of(&finished, parser.terminated());
    let (tail, parsed) = parser.finish(&exit);
    for out in tail {
        crate::pump::deliver(out, sink, &mut None, &mut None).await?;
    }
    let model = req.model_override.as_deref().or(spec.model);
    let mut resp = Response {
        output: parsed.output,
        raw: RawStreams {
            stdout: finished.stdout.clone(),
            stderr: finished.stderr.clone(),
            terminal: parsed.terminal,
        },
        transcript: parsed.transcript,
        usage: parsed.usage,
        checkpoint: with_cwd(parsed.checkpoint, spec.cwd_for(req)),
        failure: parsed.failure,
        provider: cli.provider.to_owned(),
        model: parsed
            .model
            .or_else(|| model.map(str::to_owned))
            .unwrap_or_default(),
        ..Default::default()
    };
    finished.exit.apply_to(&mut resp);
    Ok(resp)
}
