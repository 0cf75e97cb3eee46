//! The client's terminals, served to the agent (`terminal/create`,
//! `terminal/output`, `terminal/wait_for_exit`, `terminal/kill`,
//! `terminal/release`).
//!
//! A terminal is a command run through `agent-adaptor-process` (its own
//! process group) in the run's workspace (a `cwd` the agent names must lie
//! inside it, see [`Workspace`]), with the run's environment recipe (the
//! agent's own allowlist and variables; the agent's `env` entries added).
//! `/bin/sh` runs it with stderr merged into stdout, so the output keeps
//! the order the command wrote it in: a command with `args` is executed as
//! is, one without is a shell command line. The output is kept up to its
//! byte limit (the oldest bytes are dropped, `truncated` says so). Killing,
//! releasing, or the end of the run stops the whole group: no terminal
//! outlives its run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_adaptor_driver::{Emit, EventSink, RunEvent, StreamPayload};
use agent_adaptor_process::{Command, Process};
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, CreateTerminalResponse, TerminalExitStatus, TerminalOutputResponse,
};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::client_fs::{RpcError, Workspace};
use super::wire::{INTERNAL_ERROR, INVALID_PARAMS};
use crate::child_env::{EnvPolicy, EnvVars};

/// How a terminal's process is set up: the run's environment recipe.
#[derive(Debug, Clone)]
pub struct TerminalEnv {
    /// The run's environment policy.
    pub policy: EnvPolicy,
    /// The agent's documented variables.
    pub allowlist: &'static [&'static str],
    /// The run's own bindings.
    pub env: EnvVars,
}

/// What a terminal printed so far, and how it ended.
#[derive(Debug, Default)]
struct Output {
    bytes: Vec<u8>,
    truncated: bool,
    exit: Option<TerminalExitStatus>,
}

impl Output {
    fn push(&mut self, data: &[u8], limit: usize) {
        self.bytes.extend_from_slice(data);
        if self.bytes.len() > limit {
            let mut cut = self.bytes.len() - limit;
            // Keep whole UTF-8 characters.
            while cut < self.bytes.len() && (self.bytes[cut] & 0xC0) == 0x80 {
                cut += 1;
            }
            self.bytes.drain(..cut);
            self.truncated = true;
        }
    }
}

/// One terminal.
#[derive(Debug)]
struct Terminal {
    output: Arc<Mutex<Output>>,
    kill: Option<oneshot::Sender<()>>,
    exited: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

/// The terminals of one run.
#[derive(Debug)]
pub struct Terminals {
    workspace: Workspace,
    env: TerminalEnv,
    default_limit: usize,
    next: u64,
    open: HashMap<String, Terminal>,
}

/// A sink for a terminal's process: its output is the terminal's, not the
/// agent's, so nothing reaches the run.
struct Discard;

impl EventSink for Discard {
    fn emit(&self, _event: RunEvent) -> Emit<'_> {
        Emit::ready(Ok(()))
    }
    fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
        Emit::ready(Ok(()))
    }
}

/// The `terminalId` of a request.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TerminalRef {
    terminal_id: String,
}

fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(INTERNAL_ERROR, e.to_string())
}

impl Terminals {
    /// No terminals yet; commands run in `workspace` with `env`, keeping
    /// `default_limit` bytes of output unless the agent names a limit.
    pub fn new(workspace: Workspace, env: TerminalEnv, default_limit: usize) -> Self {
        Terminals {
            workspace,
            env,
            default_limit,
            next: 0,
            open: HashMap::new(),
        }
    }

    /// How many terminals are open.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// True when no terminal is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// `terminal/create`: start the command, answer its id.
    pub fn create(&mut self, params: Value) -> Result<Value, RpcError> {
        let req: CreateTerminalRequest = serde_json::from_value(params)
            .map_err(|e| RpcError::new(INVALID_PARAMS, e.to_string()))?;
        let cwd = match &req.cwd {
            Some(dir) => self.workspace.existing(dir)?,
            None => self.workspace.root().to_path_buf(),
        };
        let mut cmd = Command::new("/bin/sh");
        if req.args.is_empty() {
            cmd.args(["-c", &format!("exec 2>&1\n{}", req.command)]);
        } else {
            cmd.args(["-c", "exec 2>&1; exec \"$0\" \"$@\"", &req.command]);
            cmd.args(&req.args);
        }
        let mut env = self.env.env.clone();
        env.extend(req.env.iter().map(|v| (v.name.clone(), v.value.clone())));
        self.env
            .policy
            .apply(&mut cmd, self.env.allowlist, &[], &env);
        cmd.cwd(&cwd);
        let limit = req.output_byte_limit.map_or(self.default_limit, |l| {
            usize::try_from(l).unwrap_or(usize::MAX)
        });
        let proc = Process::spawn(&cmd).map_err(internal)?;
        self.next += 1;
        let id = format!("term-{}", self.next);
        let output = Arc::new(Mutex::new(Output::default()));
        let (kill, killed) = oneshot::channel();
        let (exited_tx, exited) = watch::channel(false);
        let task = tokio::spawn(run(proc, Arc::clone(&output), limit, killed, exited_tx));
        self.open.insert(
            id.clone(),
            Terminal {
                output,
                kill: Some(kill),
                exited,
                task,
            },
        );
        serde_json::to_value(CreateTerminalResponse::new(id)).map_err(internal)
    }

    fn get(&self, params: Value) -> Result<(String, &Terminal), RpcError> {
        let r: TerminalRef = serde_json::from_value(params)
            .map_err(|e| RpcError::new(INVALID_PARAMS, e.to_string()))?;
        match self.open.get(&r.terminal_id) {
            Some(t) => Ok((r.terminal_id, t)),
            None => Err(RpcError::new(
                INVALID_PARAMS,
                format!("no terminal {:?}", r.terminal_id),
            )),
        }
    }

    /// `terminal/output`: the output so far, and the exit once it exited.
    pub fn output(&self, params: Value) -> Result<Value, RpcError> {
        let (_, t) = self.get(params)?;
        let o = t.output.lock().map_err(internal)?;
        let text = String::from_utf8_lossy(&o.bytes).into_owned();
        let resp = TerminalOutputResponse::new(text, o.truncated).exit_status(o.exit.clone());
        serde_json::to_value(resp).map_err(internal)
    }

    /// `terminal/wait_for_exit`: a future of the exit status (the caller
    /// races it against the run's cancellation).
    pub fn wait(
        &self,
        params: Value,
    ) -> Result<impl std::future::Future<Output = Value> + Send + 'static, RpcError> {
        let (_, t) = self.get(params)?;
        let mut exited = t.exited.clone();
        let output = Arc::clone(&t.output);
        Ok(async move {
            let _ = exited.wait_for(|done| *done).await;
            let exit = output.lock().ok().and_then(|o| o.exit.clone());
            serde_json::to_value(exit.unwrap_or_default()).unwrap_or(Value::Null)
        })
    }

    /// `terminal/kill`: stop the command's group (the terminal stays, its
    /// output readable).
    pub fn kill(&mut self, params: Value) -> Result<Value, RpcError> {
        let r: TerminalRef = serde_json::from_value(params.clone())
            .map_err(|e| RpcError::new(INVALID_PARAMS, e.to_string()))?;
        self.get(params)?;
        if let Some(t) = self.open.get_mut(&r.terminal_id)
            && let Some(kill) = t.kill.take()
        {
            let _ = kill.send(());
        }
        Ok(Value::Object(Default::default()))
    }

    /// `terminal/release`: stop it if it still runs and forget it.
    pub async fn release(&mut self, params: Value) -> Result<Value, RpcError> {
        let (id, _) = self.get(params)?;
        if let Some(t) = self.open.remove(&id) {
            stop(t).await;
        }
        Ok(Value::Object(Default::default()))
    }

    /// Stop every terminal and wait until each group is gone.
    pub async fn close_all(&mut self) {
        for (_, t) in self.open.drain() {
            stop(t).await;
        }
    }
}

impl Drop for Terminals {
    fn drop(&mut self) {
        // A dropped process kills its group: aborting the task drops it.
        for t in self.open.values() {
            t.task.abort();
        }
    }
}

async fn stop(mut t: Terminal) {
    if let Some(kill) = t.kill.take() {
        let _ = kill.send(());
    }
    let _ = (&mut t.task).await;
}

/// A terminal's task: collect the output until the command ends or is
/// killed, then record the exit.
async fn run(
    mut proc: Process,
    output: Arc<Mutex<Output>>,
    limit: usize,
    mut killed: oneshot::Receiver<()>,
    exited: watch::Sender<bool>,
) {
    let mut kill = false;
    loop {
        tokio::select! {
            r = &mut killed, if !kill => {
                // A dropped sender (terminal released without a kill) also stops it.
                let _ = r;
                kill = true;
                break;
            }
            line = proc.next_line(&Discard) => match line {
                Ok(Some(line)) => {
                    let bytes = line.bytes().to_vec().unwrap_or_default();
                    if let Ok(mut o) = output.lock() {
                        o.push(&bytes, limit);
                        if line.is_terminated() {
                            o.push(b"\n", limit);
                        }
                    }
                }
                _ => break,
            },
        }
    }
    let finished = if kill {
        proc.shutdown(&Discard).await
    } else {
        proc.finish(&Discard).await
    };
    let status = match finished {
        Ok(f) => TerminalExitStatus::new()
            .exit_code(f.exit.code.and_then(|c| u32::try_from(c).ok()))
            .signal(f.exit.signal),
        Err(_) => TerminalExitStatus::new(),
    };
    if let Ok(mut o) = output.lock() {
        o.exit = Some(status);
    }
    let _ = exited.send(true);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn terminals(limit: usize) -> (tempfile::TempDir, Terminals) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let env = TerminalEnv {
            policy: EnvPolicy::only(["PATH"]),
            allowlist: &[],
            env: EnvVars::new(),
        };
        (tmp, Terminals::new(ws, env, limit))
    }

    #[tokio::test]
    async fn runs_in_the_workspace_and_keeps_the_output() {
        let (tmp, mut t) = terminals(1024);
        let id = t
            .create(json!({"sessionId": "s", "command": "pwd; echo err >&2; exit 3"}))
            .unwrap()["terminalId"]
            .clone();
        let exit = t
            .wait(json!({"sessionId": "s", "terminalId": id}))
            .unwrap()
            .await;
        assert_eq!(exit["exitCode"], 3);
        let out = t
            .output(json!({"sessionId": "s", "terminalId": id}))
            .unwrap();
        let root = tmp.path().canonicalize().unwrap();
        assert_eq!(out["output"], format!("{}\nerr\n", root.display()));
        assert_eq!(out["truncated"], false);
        assert_eq!(out["exitStatus"]["exitCode"], 3);
        t.release(json!({"sessionId": "s", "terminalId": id}))
            .await
            .unwrap();
        assert!(t.is_empty());
        let e = t.output(json!({"sessionId": "s", "terminalId": id}));
        assert!(e.is_err());
    }

    #[tokio::test]
    async fn output_is_bounded_and_a_cwd_outside_is_refused() {
        let (_tmp, mut t) = terminals(4);
        let id = t
            .create(json!({"sessionId": "s", "command": "printf", "args": ["abcdefgh"]}))
            .unwrap()["terminalId"]
            .clone();
        t.wait(json!({"sessionId": "s", "terminalId": id}))
            .unwrap()
            .await;
        let out = t
            .output(json!({"sessionId": "s", "terminalId": id}))
            .unwrap();
        assert_eq!(out["output"], "efgh");
        assert_eq!(out["truncated"], true);
        let e = t
            .create(json!({"sessionId": "s", "command": "true", "cwd": "/"}))
            .unwrap_err();
        assert!(e.message.contains("outside"));
    }

    #[tokio::test]
    async fn kill_stops_a_running_command() {
        let (_tmp, mut t) = terminals(1024);
        let id = t
            .create(json!({"sessionId": "s", "command": "sleep", "args": ["600"]}))
            .unwrap()["terminalId"]
            .clone();
        let wait = t.wait(json!({"sessionId": "s", "terminalId": id})).unwrap();
        t.kill(json!({"sessionId": "s", "terminalId": id})).unwrap();
        let exit = wait.await;
        assert!(exit["signal"].is_string(), "{exit}");
        t.close_all().await;
    }
}
