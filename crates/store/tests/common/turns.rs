//! Driving a `store_worker turns` process line by line.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, ExitStatus, Stdio};

/// A `store_worker turns` child: one command line in, one answer line out.
pub struct Turns {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Turns {
    /// Spawn `store_worker turns BACKEND… --owner OWNER`.
    pub fn spawn(backend: &[&str], owner: &str) -> Turns {
        let mut child = super::worker()
            .arg("turns")
            .args(backend)
            .args(["--owner", owner])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn store_worker");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        Turns {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        }
    }

    /// Send `command`; its answer, or `Err` with the exit status when the
    /// worker died instead of answering.
    pub fn ask(&mut self, command: &str) -> Result<String, ExitStatus> {
        if let Some(stdin) = self.stdin.as_mut() {
            // A dead worker shows in the missing answer below.
            let _ = writeln!(stdin, "{command}").and_then(|()| stdin.flush());
        }
        match self.lines.next() {
            Some(Ok(line)) => Ok(line),
            _ => Err(self.child.wait().expect("wait for store_worker")),
        }
    }

    /// Close its input and wait for it to exit.
    pub fn finish(mut self) -> ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("wait for store_worker")
    }

    /// SIGKILL it and reap it.
    pub fn kill(mut self) -> ExitStatus {
        self.child.kill().expect("kill store_worker");
        self.child.wait().expect("wait for store_worker")
    }
}
