//! The child's stdin: a caller-driven pipe ([`StdinController`]) or a fixed
//! byte feed written while output is pulled.

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// The pipe shared by the [`StdinController`] and its process, so the
/// shutdown sequence can close stdin even while the caller holds the
/// controller (or is blocked writing to it).
#[derive(Debug)]
pub(crate) struct SharedStdin {
    pipe: Mutex<Option<ChildStdin>>,
    closed: CancellationToken,
}

impl SharedStdin {
    pub(crate) fn new(pipe: ChildStdin) -> Arc<Self> {
        Arc::new(SharedStdin {
            pipe: Mutex::new(Some(pipe)),
            closed: CancellationToken::new(),
        })
    }

    /// Close stdin now, or — if a write is in flight — as soon as that
    /// writer observes the close (it drops the pipe and fails).
    pub(crate) fn close(&self) {
        self.closed.cancel();
        if let Ok(mut guard) = self.pipe.try_lock() {
            guard.take();
        }
    }
}

/// Writes to the child's stdin in [`StdinMode::Pipe`](crate::StdinMode::Pipe).
///
/// Dropping the controller closes stdin (the child sees end-of-file), as does
/// [`close`](StdinController::close) and the shutdown sequence. After any of
/// these, writes fail with [`io::ErrorKind::BrokenPipe`].
///
/// Writes are not cancellation safe: a write future dropped midway may have
/// written part of the buffer (as with `tokio::io::AsyncWriteExt::write_all`).
#[derive(Debug)]
pub struct StdinController {
    shared: Arc<SharedStdin>,
}

impl StdinController {
    pub(crate) fn new(shared: Arc<SharedStdin>) -> Self {
        StdinController { shared }
    }

    /// Write every byte of `buf` and flush.
    pub async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.write_parts(&[buf]).await
    }

    /// Write `line` followed by `\n`, and flush (one frame of an NDJSON protocol).
    pub async fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.write_parts(&[line, b"\n"]).await
    }

    /// Write `line` followed by `\n` and flush, like
    /// [`write_line`](StdinController::write_line), but on failure report how
    /// many bytes the pipe had accepted before it failed. A driver that must
    /// never deliver a request twice uses this to tell "nothing reached the
    /// child" (`accepted == 0`: safe to retry elsewhere) from "the child may
    /// have read part of it".
    pub async fn write_line_counted(&mut self, line: &[u8]) -> Result<(), PartialWrite> {
        let mut frame = Vec::with_capacity(line.len() + 1);
        frame.extend_from_slice(line);
        frame.push(b'\n');
        let shared = &self.shared;
        let refused = |error| PartialWrite { accepted: 0, error };
        let mut guard = tokio::select! {
            guard = shared.pipe.lock() => guard,
            () = shared.closed.cancelled() => return Err(refused(closed())),
        };
        let Some(pipe) = guard.as_mut() else {
            return Err(refused(closed()));
        };
        let mut accepted = 0usize;
        let result = tokio::select! {
            r = async {
                while accepted < frame.len() {
                    let n = pipe.write(&frame[accepted..]).await?;
                    if n == 0 {
                        return Err(io::Error::from(io::ErrorKind::WriteZero));
                    }
                    accepted += n;
                }
                pipe.flush().await
            } => r,
            () = shared.closed.cancelled() => Err(closed()),
        };
        match result {
            Ok(()) => Ok(()),
            Err(error) => {
                guard.take();
                Err(PartialWrite { accepted, error })
            }
        }
    }

    /// Close stdin: the child sees end-of-file.
    pub async fn close(self) {
        self.shared.closed.cancel();
        self.shared.pipe.lock().await.take();
    }

    async fn write_parts(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        let shared = &self.shared;
        let mut guard = tokio::select! {
            guard = shared.pipe.lock() => guard,
            () = shared.closed.cancelled() => return Err(closed()),
        };
        let Some(pipe) = guard.as_mut() else {
            return Err(closed());
        };
        let result = tokio::select! {
            r = async {
                for part in parts {
                    pipe.write_all(part).await?;
                }
                pipe.flush().await
            } => r,
            () = shared.closed.cancelled() => Err(closed()),
        };
        if result.is_err() {
            guard.take();
        }
        result
    }
}

impl Drop for StdinController {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// A failed [`StdinController::write_line_counted`]: the error, and how many
/// bytes of the frame the pipe accepted before it.
#[derive(Debug, thiserror::Error)]
#[error("stdin write failed after {accepted} bytes: {error}")]
pub struct PartialWrite {
    /// Bytes the pipe accepted (0: nothing reached the child).
    pub accepted: usize,
    /// Why the write failed.
    #[source]
    pub error: io::Error,
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "stdin is closed")
}

/// [`StdinMode::Bytes`](crate::StdinMode::Bytes): the bytes still to write.
/// Written by the process's pump, a `write` at a time (cancellation safe).
#[derive(Debug)]
pub(crate) struct StdinFeed {
    pub(crate) pipe: ChildStdin,
    pub(crate) data: Bytes,
}

impl StdinFeed {
    /// Write some of the remaining bytes. `Ok(true)` when everything is written.
    pub(crate) async fn write_some(&mut self) -> io::Result<bool> {
        if self.data.is_empty() {
            return Ok(true);
        }
        let n = self.pipe.write(&self.data).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        let _ = self.data.split_to(n);
        Ok(self.data.is_empty())
    }
}
