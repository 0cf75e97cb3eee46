//! The reference driver's stalling provider, for the cancellation clause
//! (RUN-05): a prompt of exactly [`STALL_PROMPT`] makes the simulated
//! provider go quiet after its first line, as a hanging CLI would. A real
//! process stands in for it — `sleep`, in a process group of its own — so
//! the clause's process check has something to look at.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agent_adaptor_driver::{DriverError, EventSink, OperationalEvent, RunContext, RunEvent};

use super::Fault;

/// The prompt that makes the reference provider stall.
pub const STALL_PROMPT: &str = "wait";

/// How long the provider stalls when nobody cancels.
const STALL: Duration = Duration::from_secs(60);

/// The provider process; dropping it stops it (kill, then reap).
struct Provider(Option<Child>);

impl Provider {
    fn spawn() -> Result<Self, DriverError> {
        let mut cmd = Command::new("sleep");
        cmd.arg(STALL.as_secs().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().map_err(|source| DriverError::Spawn {
            program: "sleep".into(),
            source,
        })?;
        Ok(Provider(Some(child)))
    }

    fn pid(&self) -> Option<u32> {
        self.0.as_ref().map(Child::id)
    }

    /// `LeavesProcessBehind`: let go of the process without stopping it.
    fn abandon(mut self) {
        drop(self.0.take());
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Run the stalling provider: report its spawn, then wait for it — and,
/// unless the fault says otherwise, for the cancellation.
pub(super) async fn stall(
    ctx: &RunContext,
    sink: &dyn EventSink,
    fault: Option<Fault>,
) -> Result<(), DriverError> {
    let provider = Provider::spawn()?;
    let mut spawn = OperationalEvent::text("reference provider started");
    if let Some(pid) = provider.pid() {
        spawn.metadata.insert("pid".into(), pid.to_string());
    }
    spawn.metadata.insert("program".into(), "sleep".into());
    sink.emit(RunEvent::Spawn(spawn)).await?;
    sink.emit(RunEvent::stdout(r#"{"type":"init"}"#.to_owned() + "\n"))
        .await?;
    let cancelled = if fault == Some(Fault::IgnoresCancel) {
        tokio::time::sleep(STALL).await;
        false
    } else {
        tokio::select! {
            _ = ctx.cancel.cancelled() => true,
            _ = tokio::time::sleep(STALL) => false,
        }
    };
    if !cancelled {
        return Err(DriverError::Protocol(format!(
            "the provider said nothing for {STALL:?}"
        )));
    }
    if fault == Some(Fault::LeavesProcessBehind) {
        provider.abandon();
    }
    Err(DriverError::Cancelled)
}
