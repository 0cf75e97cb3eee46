//! Readiness checks: a TCP connect, or an HTTP `GET` answered 2xx/3xx.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::spec::Readiness;

/// A readiness check validated before anything is spawned.
#[derive(Debug, Clone)]
pub(crate) enum Probe {
    Tcp(String),
    Http {
        addr: String,
        host: String,
        path: String,
    },
}

impl Probe {
    /// Parse the check; `None` when it is not supported.
    pub(crate) fn parse(r: &Readiness) -> Option<Probe> {
        match r {
            Readiness::Tcp(a) => a
                .rsplit_once(':')
                .filter(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
                .map(|_| Probe::Tcp(a.clone())),
            Readiness::Http(url) => {
                let rest = url.strip_prefix("http://")?;
                let (authority, path) = match rest.find('/') {
                    Some(i) => (&rest[..i], &rest[i..]),
                    None => (rest, "/"),
                };
                if authority.is_empty() || authority.contains('@') {
                    return None;
                }
                let addr = if authority.contains(':') {
                    authority.to_owned()
                } else {
                    format!("{authority}:80")
                };
                Some(Probe::Http {
                    addr,
                    host: authority.to_owned(),
                    path: path.to_owned(),
                })
            }
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// One attempt (bounded by `per_try`).
    pub(crate) async fn ready(&self, per_try: Duration) -> bool {
        tokio::time::timeout(per_try, self.attempt())
            .await
            .unwrap_or(false)
    }

    async fn attempt(&self) -> bool {
        match self {
            Probe::Tcp(addr) => TcpStream::connect(addr.as_str()).await.is_ok(),
            Probe::Http { addr, host, path } => {
                let Ok(mut s) = TcpStream::connect(addr.as_str()).await else {
                    return false;
                };
                let req =
                    format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nConnection: close\r\n\r\n");
                if s.write_all(req.as_bytes()).await.is_err() {
                    return false;
                }
                let mut buf = [0u8; 64];
                let mut got = 0;
                while got < 12 {
                    match s.read(&mut buf[got..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..got]);
                head.split_whitespace()
                    .nth(1)
                    .and_then(|c| c.parse::<u16>().ok())
                    .is_some_and(|c| (200..400).contains(&c))
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_supported_checks_only() {
        assert!(matches!(
            Probe::parse(&Readiness::Tcp("127.0.0.1:80".into())),
            Some(Probe::Tcp(_))
        ));
        assert!(Probe::parse(&Readiness::Tcp("nope".into())).is_none());
        assert!(Probe::parse(&Readiness::Http("https://x/".into())).is_none());
        assert!(Probe::parse(&Readiness::Http("http://u:p@x/".into())).is_none());
        match Probe::parse(&Readiness::Http("http://127.0.0.1:9/health".into())) {
            Some(Probe::Http { addr, path, .. }) => {
                assert_eq!(addr, "127.0.0.1:9");
                assert_eq!(path, "/health");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
