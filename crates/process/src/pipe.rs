//! [`OutPipe`]: the read end of a child's stdout or stderr, read directly
//! while output flows and registered with the runtime's poller only while
//! it waits for more.
//!
//! A pipe registered with epoll (edge-triggered, as tokio registers it)
//! wakes the poller on *every* write into it, not only when it turns
//! readable: the kernel cannot tell whether anyone still cares. A CLI that
//! prints a line per `write` at full speed then wakes whichever runtime
//! worker is parked in the poller once per line, although the task reading
//! the pipe is busy on another worker and has not asked for more. On two
//! CPUs each of those wakes preempts the CLI itself. Measured on a 200k-line
//! stream: ~50k needless context switches and a third more CPU.
//!
//! So the pipe is in the poller only between a read that found it empty and
//! the readiness that follows; while the reader keeps up with data already
//! there, no write wakes anyone. Registering reports a pipe that is already
//! readable at once, so no data can slip in unnoticed between the empty read
//! and the registration.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;

use bytes::{Bytes, BytesMut};
use tokio::net::unix::pipe::Receiver;

/// Bytes asked for per read (a pipe hands out at most its buffer, 64 KiB).
pub(crate) const READ_CHUNK: usize = 64 * 1024;

/// Where the pipe is.
enum State {
    /// Read directly: not in the poller (non-blocking).
    Direct(File),
    /// In the poller, waiting to turn readable.
    Waiting(Receiver),
    /// Only while moving between the two, or after a move failed (the
    /// descriptor is then gone).
    Moving,
}

/// The read end of a child's output pipe (see the module docs).
pub(crate) struct OutPipe {
    state: State,
    /// Initialized bytes the next read lands in; what a large read filled
    /// is split off as its chunk, so each byte is zeroed once and written
    /// once.
    spare: BytesMut,
}

impl std::fmt::Debug for OutPipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            State::Direct(_) => "direct",
            State::Waiting(_) => "waiting",
            State::Moving => "moving",
        };
        f.debug_struct("OutPipe").field("state", &state).finish()
    }
}

impl OutPipe {
    /// Take over `fd`, the read end of a pipe (made non-blocking here;
    /// tokio hands pipes over in blocking mode). It starts in the poller:
    /// a child has rarely written anything yet.
    pub(crate) fn new(fd: OwnedFd) -> io::Result<Self> {
        Ok(OutPipe {
            state: State::Waiting(Receiver::from_owned_fd(fd)?),
            spare: BytesMut::new(),
        })
    }

    /// The next bytes the child wrote, at most [`READ_CHUNK`]; empty at end
    /// of file.
    ///
    /// Cancel-safe: dropped while waiting, the pipe stays registered and
    /// the next call goes on waiting; nothing read is ever dropped (a read
    /// that returned is returned).
    pub(crate) async fn read_chunk(&mut self) -> io::Result<Bytes> {
        loop {
            if let State::Waiting(pipe) = &self.state {
                pipe.readable().await?;
                self.direct()?;
            }
            let State::Direct(file) = &self.state else {
                return Err(io::Error::other(
                    "output pipe lost moving in or out of the poller",
                ));
            };
            if self.spare.len() < READ_CHUNK / 2 {
                self.spare = BytesMut::zeroed(READ_CHUNK);
            }
            match (&*file).read(&mut self.spare) {
                Ok(n) => return Ok(self.take(n)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait()?,
                Err(e) => return Err(e),
            }
        }
    }

    /// The `n` bytes just read as an independent chunk. A small read is
    /// copied, so a chunk held downstream (in the event queue, say) never
    /// pins a whole buffer, and the buffer is reused.
    fn take(&mut self, n: usize) -> Bytes {
        if n >= READ_CHUNK / 2 {
            self.spare.split_to(n).freeze()
        } else {
            Bytes::copy_from_slice(&self.spare[..n])
        }
    }

    /// Register with the poller (the pipe was found empty).
    fn wait(&mut self) -> io::Result<()> {
        if let State::Direct(file) = std::mem::replace(&mut self.state, State::Moving) {
            self.state = State::Waiting(Receiver::from_file_unchecked(file)?);
        }
        Ok(())
    }

    /// Leave the poller (the pipe turned readable).
    fn direct(&mut self) -> io::Result<()> {
        if let State::Waiting(pipe) = std::mem::replace(&mut self.state, State::Moving) {
            self.state = State::Direct(File::from(pipe.into_nonblocking_fd()?));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::io::Write;
    use std::task::Poll;

    use super::*;

    fn pipe() -> (OutPipe, std::io::PipeWriter) {
        let (reader, writer) = std::io::pipe().unwrap();
        (OutPipe::new(OwnedFd::from(reader)).unwrap(), writer)
    }

    fn state(p: &OutPipe) -> &'static str {
        match p.state {
            State::Direct(_) => "direct",
            State::Waiting(_) => "waiting",
            State::Moving => "moving",
        }
    }

    #[tokio::test]
    async fn reads_everything_in_order_then_end_of_file() {
        let (mut p, mut w) = pipe();
        let want: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let data = want.clone();
        let writer = std::thread::spawn(move || {
            for part in data.chunks(7_000) {
                w.write_all(part).unwrap();
            }
        });
        let mut got = Vec::new();
        loop {
            let chunk = p.read_chunk().await.unwrap();
            assert!(chunk.len() <= READ_CHUNK);
            if chunk.is_empty() {
                break;
            }
            got.extend_from_slice(&chunk);
        }
        writer.join().unwrap();
        assert_eq!(got, want);
        assert!(p.read_chunk().await.unwrap().is_empty(), "EOF stays EOF");
    }

    #[tokio::test]
    async fn leaves_the_poller_while_output_flows_and_joins_it_when_drained() {
        let (mut p, mut w) = pipe();
        assert_eq!(state(&p), "waiting", "nothing written yet");
        w.write_all(&[b'x'; 1000]).unwrap();
        // The whole pipe content, read directly after the readiness.
        assert_eq!(p.read_chunk().await.unwrap().len(), 1000);
        assert_eq!(state(&p), "direct", "out of the poller after reading");
        w.write_all(b"more").unwrap();
        assert_eq!(&p.read_chunk().await.unwrap()[..], b"more");
        assert_eq!(state(&p), "direct", "data was there: no registration");
        // Empty now: the next read registers and waits.
        let mut read = Box::pin(p.read_chunk());
        assert!(futures_poll_once(read.as_mut()).await.is_pending());
        drop(read);
        assert_eq!(state(&p), "waiting", "registered while it waits");
        drop(w);
        assert!(p.read_chunk().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_read_dropped_while_waiting_loses_neither_the_pipe_nor_data() {
        let (mut p, mut w) = pipe();
        for _ in 0..3 {
            let mut read = Box::pin(p.read_chunk());
            assert!(futures_poll_once(read.as_mut()).await.is_pending());
            drop(read);
        }
        w.write_all(b"after the cancelled reads").unwrap();
        assert_eq!(
            &p.read_chunk().await.unwrap()[..],
            b"after the cancelled reads"
        );
        drop(w);
        assert!(p.read_chunk().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn chunks_stay_intact_whatever_is_read_after_them() {
        let (mut p, mut w) = pipe();
        w.write_all(b"small").unwrap();
        let small = p.read_chunk().await.unwrap();
        w.write_all(&[7u8; 40_000]).unwrap();
        let large = p.read_chunk().await.unwrap();
        w.write_all(&[9u8; 40_000]).unwrap();
        let next = p.read_chunk().await.unwrap();
        assert_eq!(&small[..], b"small", "not overwritten by later reads");
        assert!(large.iter().all(|b| *b == 7) && large.len() == 40_000);
        assert!(next.iter().all(|b| *b == 9) && next.len() == 40_000);
    }

    /// Poll `f` once.
    async fn futures_poll_once<F: std::future::Future + Unpin>(mut f: F) -> Poll<F::Output> {
        std::future::poll_fn(|cx| Poll::Ready(std::pin::Pin::new(&mut f).poll(cx))).await
    }
}
