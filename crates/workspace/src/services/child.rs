//! One running service process: owned by a task that keeps its output
//! flowing (stderr tail kept) and stops its process group on request.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_adaptor_process::{Command, Process, StdinMode};
use tokio_util::sync::CancellationToken;

use super::spec::{ServiceError, ServiceSpec};
use crate::discard::StderrTail;

/// Bytes of stderr kept for error reports.
const TAIL_BYTES: usize = 4096;

/// The host variables a service inherits.
const ALLOWED_ENV: [&str; 5] = ["PATH", "HOME", "LANG", "TMPDIR", "USER"];

/// A started service process.
pub(crate) struct Child {
    pub(crate) tail: StderrTail,
    /// Set (to a description of the exit) once the process has ended.
    pub(crate) exited: Arc<Mutex<Option<String>>>,
    stop: CancellationToken,
    /// The pump; taken by the first [`Child::stop`].
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Child {
    /// Spawn `spec`'s process with an allowlisted environment.
    pub(crate) fn spawn(spec: &ServiceSpec) -> Result<Child, ServiceError> {
        let mut cmd = Command::new(&spec.command);
        cmd.args(&spec.args)
            .env_clear()
            .inherit_env(ALLOWED_ENV)
            .stdin(StdinMode::Null)
            // A service may close stdout and keep running: never stop it for that.
            .exit_grace(Duration::from_secs(365 * 24 * 3600))
            .term_grace(Duration::from_secs(2))
            .close_grace(Duration::from_millis(100));
        if let Some(dir) = &spec.cwd {
            cmd.cwd(dir);
        }
        for (k, v) in spec.env.iter().chain(&spec.secret_env) {
            cmd.env(k, v);
        }
        let process = Process::spawn(&cmd).map_err(|source| ServiceError::Spawn {
            name: spec.name.clone(),
            source,
        })?;
        let tail = StderrTail::new(TAIL_BYTES);
        let exited = Arc::new(Mutex::new(None));
        let stop = CancellationToken::new();
        let task = tokio::spawn(pump(process, tail.clone(), exited.clone(), stop.clone()));
        Ok(Child {
            tail,
            exited,
            stop,
            task: Mutex::new(Some(task)),
        })
    }

    /// How the process ended, if it has.
    pub(crate) fn exit(&self) -> Option<String> {
        match self.exited.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Stop the process group and wait for it to be reaped (a second call
    /// returns at once).
    pub(crate) async fn stop(&self) {
        self.stop.cancel();
        let task = match self.task.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        };
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // The task stops the group when cancelled; a dropped manager must not
        // leave services running.
        self.stop.cancel();
    }
}

async fn pump(
    mut process: Process,
    tail: StderrTail,
    exited: Arc<Mutex<Option<String>>>,
    stop: CancellationToken,
) {
    let set = |what: String| match exited.lock() {
        Ok(mut g) => *g = Some(what),
        Err(p) => *p.into_inner() = Some(what),
    };
    loop {
        tokio::select! {
            line = process.next_line(&tail) => match line {
                Ok(Some(_)) => {}
                _ => break,
            },
            () = stop.cancelled() => {
                let _ = process.shutdown(&tail).await;
                set("stopped".into());
                return;
            }
        }
    }
    // Stdout is over; wait for the exit (or the stop) without killing it.
    loop {
        if process.try_wait().is_some() {
            break;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
            () = stop.cancelled() => {
                let _ = process.shutdown(&tail).await;
                set("stopped".into());
                return;
            }
        }
    }
    let what = match process.finish(&tail).await {
        Ok(f) => match (f.exit.code, f.exit.signal) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => format!("killed by {s}"),
            (None, None) => "exited".into(),
        },
        Err(e) => format!("exited ({e})"),
    };
    set(what);
}
