//! `agent-adaptor mock-model` as a child of the test, on a free port.

use std::path::Path;
use std::process::{Child, Stdio};

/// A running `agent-adaptor mock-model`; killed when dropped.
pub struct MockModel {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl MockModel {
    /// Start it in the isolated environment of `home` and wait until it
    /// listens (its first stdout line).
    pub fn start(home: &Path) -> MockModel {
        Self::start_with(home, &[])
    }

    /// Like [`start`](Self::start), with `extra` arguments (e.g.
    /// `--script FILE`).
    pub fn start_with(home: &Path, extra: &[&str]) -> MockModel {
        use std::io::BufRead;
        let port = super::free_port();
        let mut child = super::command(home)
            .args(["mock-model", "--addr", &format!("127.0.0.1:{port}")])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let stdout = child.stdout.as_mut().unwrap();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with("mock model server: http://127.0.0.1:"),
            "{line}"
        );
        MockModel { child, port }
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
