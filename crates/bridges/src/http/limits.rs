//! [`ServerLimits`]: the bounds one [`HttpServer`](super::HttpServer)
//! enforces, with documented defaults, and the connection limit derived from
//! the process's file-descriptor limit.

use std::time::Duration;

/// Default [`ServerLimits::header_read_timeout`]: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`ServerLimits::idle_timeout`]: 60 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default [`ServerLimits::grace`]: 10 s.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);
/// Default [`ServerLimits::close_wait`]: 2 s.
pub const DEFAULT_CLOSE_WAIT: Duration = Duration::from_secs(2);
/// The connection limit used when the file-descriptor limit cannot be read
/// or is unlimited.
pub const FALLBACK_MAX_CONNECTIONS: usize = 1024;
/// File descriptors kept free of connections at least (the store's files,
/// child processes' pipes, the runtime's own descriptors, the listener).
pub const MIN_FD_RESERVE: u64 = 64;
/// The smallest connection limit [`ServerLimits::from_fd_limit`] derives.
pub const MIN_MAX_CONNECTIONS: usize = 8;

/// The bounds of one server. [`Default`] derives
/// [`max_connections`](Self::max_connections) from the process's
/// `RLIMIT_NOFILE` soft limit ([`ServerLimits::from_fd_limit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// How long a request head may take to arrive, counted from its first
    /// byte: a client that sends part of a header and stalls is dropped.
    pub header_read_timeout: Duration,
    /// How long a connection may sit with no request in flight and no byte
    /// of a new one (kept alive, or fresh and silent) before it is closed.
    pub idle_timeout: Duration,
    /// Open connections at most. On reaching the limit the connection idle
    /// the longest is closed, so a slot is ready for the next client; when
    /// none is idle, accepting waits until one closes.
    pub max_connections: usize,
    /// After the shutdown signal: how long in-flight requests and streams
    /// may go on finishing.
    pub grace: Duration,
    /// After the grace period (and the close hook): how long the
    /// connections still open get to end by themselves (a stream sending
    /// its final frame) before they are dropped.
    pub close_wait: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits::from_fd_limit(nofile_soft_limit())
    }
}

impl ServerLimits {
    /// The default limits with `max_connections` derived from a
    /// file-descriptor limit of `soft` (`None`: unknown or unlimited, giving
    /// [`FALLBACK_MAX_CONNECTIONS`]): `soft` minus a reserve of a quarter of
    /// it, at least [`MIN_FD_RESERVE`], and never below
    /// [`MIN_MAX_CONNECTIONS`]. With 256 descriptors that is 192
    /// connections; with 1024, 768.
    pub fn from_fd_limit(soft: Option<u64>) -> Self {
        let max_connections = match soft {
            Some(soft) => {
                let reserve = (soft / 4).max(MIN_FD_RESERVE);
                let room = soft.saturating_sub(reserve);
                usize::try_from(room)
                    .unwrap_or(usize::MAX)
                    .max(MIN_MAX_CONNECTIONS)
            }
            None => FALLBACK_MAX_CONNECTIONS,
        };
        ServerLimits {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections,
            grace: DEFAULT_GRACE,
            close_wait: DEFAULT_CLOSE_WAIT,
        }
    }

    /// Set [`header_read_timeout`](Self::header_read_timeout).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Set [`idle_timeout`](Self::idle_timeout).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Set [`max_connections`](Self::max_connections) (at least 1).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Set [`grace`](Self::grace).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Set [`close_wait`](Self::close_wait).
    pub fn close_wait(mut self, wait: Duration) -> Self {
        self.close_wait = wait;
        self
    }
}

/// The process's `RLIMIT_NOFILE` soft limit, or `None` when it is unlimited
/// or cannot be read.
pub fn nofile_soft_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_limit_leaves_a_reserve_of_descriptors() {
        assert_eq!(ServerLimits::from_fd_limit(Some(256)).max_connections, 192);
        assert_eq!(ServerLimits::from_fd_limit(Some(1024)).max_connections, 768);
        assert_eq!(ServerLimits::from_fd_limit(Some(100)).max_connections, 36);
        assert_eq!(
            ServerLimits::from_fd_limit(Some(10)).max_connections,
            MIN_MAX_CONNECTIONS
        );
        assert_eq!(
            ServerLimits::from_fd_limit(None).max_connections,
            FALLBACK_MAX_CONNECTIONS
        );
        assert!(nofile_soft_limit().is_some_and(|n| n > 0));
    }
}
