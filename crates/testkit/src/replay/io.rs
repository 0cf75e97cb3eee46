//! The replay engine's side effects: the real process streams, or an in-memory script.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// Everything the replay engine ([`replay`](super::replay)) does to the outside world.
pub trait ReplayIo {
    /// Writes `line` and a `\n` on stdout, and flushes.
    fn stdout_line(&mut self, line: &str) -> io::Result<()>;
    /// Writes `text` and a `\n` on stderr.
    fn stderr_line(&mut self, text: &str) -> io::Result<()>;
    /// Waits for `duration`.
    fn sleep(&mut self, duration: Duration);
    /// The next line from stdin without its `\n`, or `None` at EOF. Blocks until a whole
    /// line (or EOF) arrives.
    fn stdin_line(&mut self) -> io::Result<Option<String>>;
}

/// One thing the engine did, as recorded by [`MemoryIo`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoEvent {
    /// A line written on stdout (without `\n`).
    Stdout(String),
    /// A line written on stderr (without `\n`).
    Stderr(String),
    /// A sleep.
    Sleep(Duration),
    /// A line read from stdin.
    StdinLine(String),
    /// Stdin reached EOF.
    StdinEof,
}

/// A [`ReplayIo`] for unit tests of the engine: stdin is a fixed list of lines followed
/// by EOF, sleeps take no time, and every action is logged in order.
#[derive(Clone, Debug, Default)]
pub struct MemoryIo {
    stdin: VecDeque<String>,
    events: Vec<IoEvent>,
}

impl MemoryIo {
    /// A `MemoryIo` whose stdin yields `stdin_lines` and then EOF.
    pub fn new<I, S>(stdin_lines: I) -> MemoryIo
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        MemoryIo {
            stdin: stdin_lines.into_iter().map(Into::into).collect(),
            events: Vec::new(),
        }
    }

    /// Everything done so far, in order.
    pub fn events(&self) -> &[IoEvent] {
        &self.events
    }

    /// The bytes written on stdout (each line followed by `\n`).
    pub fn stdout_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for event in &self.events {
            if let IoEvent::Stdout(line) = event {
                out.extend_from_slice(line.as_bytes());
                out.push(b'\n');
            }
        }
        out
    }

    /// The lines written on stderr.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                IoEvent::Stderr(line) => Some(line.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The stdin lines not read yet.
    pub fn unread_stdin(&self) -> usize {
        self.stdin.len()
    }
}

impl ReplayIo for MemoryIo {
    fn stdout_line(&mut self, line: &str) -> io::Result<()> {
        self.events.push(IoEvent::Stdout(line.to_owned()));
        Ok(())
    }

    fn stderr_line(&mut self, text: &str) -> io::Result<()> {
        self.events.push(IoEvent::Stderr(text.to_owned()));
        Ok(())
    }

    fn sleep(&mut self, duration: Duration) {
        self.events.push(IoEvent::Sleep(duration));
    }

    fn stdin_line(&mut self) -> io::Result<Option<String>> {
        let line = self.stdin.pop_front();
        self.events.push(match &line {
            Some(line) => IoEvent::StdinLine(line.clone()),
            None => IoEvent::StdinEof,
        });
        Ok(line)
    }
}

type StdinMessage = io::Result<Option<String>>;

/// The real process streams, used by the `fake-cli` binary.
///
/// When started with stdin reading on, a background thread reads stdin line by line,
/// appends each line to the record file (if any) as soon as it arrives — whether or not
/// the engine ever asks for it — and queues it for [`ReplayIo::stdin_line`]. With stdin
/// reading off, stdin is left untouched and [`ReplayIo::stdin_line`] reports EOF.
#[derive(Debug)]
pub struct ProcessIo {
    stdin: Option<mpsc::Receiver<StdinMessage>>,
}

impl ProcessIo {
    /// Starts the process I/O. `read_stdin` turns the stdin reader thread on; it is
    /// forced on when `record_stdin` is given. Fails when the record file cannot be
    /// opened for appending.
    pub fn start(read_stdin: bool, record_stdin: Option<&Path>) -> io::Result<ProcessIo> {
        let record = match record_stdin {
            Some(path) => Some(OpenOptions::new().create(true).append(true).open(path)?),
            None => None,
        };
        if !read_stdin && record.is_none() {
            return Ok(ProcessIo { stdin: None });
        }
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("fake-cli-stdin".to_owned())
            .spawn(move || read_stdin_lines(record, &tx))?;
        Ok(ProcessIo { stdin: Some(rx) })
    }
}

fn read_stdin_lines(mut record: Option<File>, tx: &mpsc::Sender<StdinMessage>) {
    let mut input = io::stdin().lock();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => {
                let _ = tx.send(Ok(None));
                return;
            }
            Ok(_) => {
                let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
                if let Some(file) = record.as_mut() {
                    let mut entry = line.to_vec();
                    entry.push(b'\n');
                    if let Err(e) = file.write_all(&entry) {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
                // The receiver may be gone (the engine stopped reading); keep recording.
                let _ = tx.send(Ok(Some(String::from_utf8_lossy(line).into_owned())));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

impl ReplayIo for ProcessIo {
    fn stdout_line(&mut self, line: &str) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let mut out = io::stdout().lock();
        out.write_all(&bytes)?;
        out.flush()
    }

    fn stderr_line(&mut self, text: &str) -> io::Result<()> {
        let mut err = io::stderr().lock();
        err.write_all(text.as_bytes())?;
        err.write_all(b"\n")?;
        err.flush()
    }

    fn sleep(&mut self, duration: Duration) {
        std::thread::sleep(duration);
    }

    fn stdin_line(&mut self) -> io::Result<Option<String>> {
        match &self.stdin {
            // A closed channel means the reader thread is gone: treat as EOF.
            Some(rx) => rx.recv().unwrap_or(Ok(None)),
            None => Ok(None),
        }
    }
}
