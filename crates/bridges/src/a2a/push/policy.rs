//! Which webhook URLs a push may reach: the operator's host allowlist, the
//! URL's shape, and the addresses its host resolves to (SSRF).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use reqwest::Url;
use url::Host;

/// Resolves a webhook's host name to addresses. The default asks the
/// system resolver; a host with its own DNS policy (or a test) supplies
/// another with [`PushSettings::resolver`](super::PushSettings::resolver).
#[async_trait]
pub trait PushResolver: Send + Sync + 'static {
    /// The addresses of `host` (a DNS name, never an IP literal) at `port`.
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>>;
}

/// A shared resolver resolves as the one it shares.
#[async_trait]
impl<T: PushResolver + ?Sized> PushResolver for Arc<T> {
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
        (**self).resolve(host, port).await
    }
}

/// The system resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl PushResolver for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
        Ok(tokio::net::lookup_host((host, port))
            .await?
            .map(|a| a.ip())
            .collect())
    }
}

/// One `--push-allow-host` entry: `HOST[:PORT]`, where HOST is a DNS name,
/// an IPv4 literal or a bracketed IPv6 literal. Without a port, every port
/// of the host is allowed.
///
/// ```
/// use agent_adaptor_bridges::a2a::push::AllowedHost;
///
/// let entry: AllowedHost = "hooks.example.com:8443".parse().unwrap();
/// assert_eq!(entry.to_string(), "hooks.example.com:8443");
/// assert!("[::1]".parse::<AllowedHost>().is_ok());
/// assert!("https://hooks.example.com".parse::<AllowedHost>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    host: Host<String>,
    port: Option<u16>,
}

/// Why an allowlist entry was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("push allowlist entry {entry:?}: {reason} (expected HOST or HOST:PORT)")]
pub struct BadAllowedHost {
    /// The entry as given.
    pub entry: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FromStr for AllowedHost {
    type Err = BadAllowedHost;

    fn from_str(entry: &str) -> Result<Self, Self::Err> {
        let bad = |reason| BadAllowedHost {
            entry: entry.to_owned(),
            reason,
        };
        let text = entry.trim();
        if text.is_empty() {
            return Err(bad("empty"));
        }
        if text.contains(['/', '?', '#', '@', '\\']) || text.chars().any(char::is_whitespace) {
            return Err(bad(
                "a host and an optional port only, no scheme, path or user",
            ));
        }
        let url = Url::parse(&format!("http://{text}/")).map_err(|_| bad("not a host name"))?;
        let host = url.host().ok_or_else(|| bad("no host"))?.to_owned();
        // The port as written: the URL parser forgets an explicit :80.
        let after_brackets = text.rsplit_once(']').map_or(text, |(_, rest)| rest);
        let port = match after_brackets.rsplit_once(':') {
            Some((_, p)) => match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err(bad("the port must be 1 to 65535")),
                Ok(p) => Some(p),
            },
            None => None,
        };
        Ok(AllowedHost { host, port })
    }
}

impl std::fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Host::Ipv6(ip) => write!(f, "[{ip}]")?,
            other => write!(f, "{other}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

impl AllowedHost {
    fn matches(&self, host: &Host<&str>, port: u16) -> bool {
        let same_host = match (&self.host, host) {
            (Host::Domain(a), Host::Domain(b)) => a == b,
            (Host::Ipv4(a), Host::Ipv4(b)) => a == b,
            (Host::Ipv6(a), Host::Ipv6(b)) => a == b,
            _ => false,
        };
        same_host && self.port.is_none_or(|p| p == port)
    }
}

/// Why a webhook URL is refused (at registration, and again before every
/// delivery).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PushRefusal {
    /// The URL does not parse.
    #[error("the push URL is not a valid URL")]
    BadUrl,
    /// Not `http` or `https`.
    #[error("the push URL must be http or https, not {0:?}")]
    Scheme(String),
    /// The URL carries a user name or password.
    #[error("the push URL must not carry credentials (use token or authentication)")]
    Credentials,
    /// The host (and port) is not on the operator's allowlist.
    #[error("push notifications to {0} are not allowed on this server")]
    HostNotAllowed(String),
    /// The host name does not resolve.
    #[error("the push URL's host {0} does not resolve")]
    Unresolvable(String),
    /// The host resolves to an address push may not reach (loopback,
    /// private, link-local, CGNAT, multicast, unspecified …) and the
    /// allowlist does not name that address (or `localhost`) explicitly.
    #[error(
        "the push URL's host {host} resolves to {addr}, which push notifications may not reach"
    )]
    ForbiddenAddress {
        /// The host as written in the URL.
        host: String,
        /// The refused address.
        addr: IpAddr,
    },
    /// The token or authentication is not a valid HTTP header value.
    #[error("the push config's {0} is not a valid HTTP header value")]
    BadHeader(&'static str),
    /// The task already has the most configurations allowed.
    #[error("a task may have at most {0} push notification configs")]
    TooMany(usize),
}

impl PushRefusal {
    /// A short stable name for the refusal (the `refusal` metadata of the
    /// A2A error): `bad_url`, `scheme`, `credentials`, `host_not_allowed`,
    /// `unresolvable`, `forbidden_address`, `bad_header`, `too_many`.
    pub fn kind(&self) -> &'static str {
        match self {
            PushRefusal::BadUrl => "bad_url",
            PushRefusal::Scheme(_) => "scheme",
            PushRefusal::Credentials => "credentials",
            PushRefusal::HostNotAllowed(_) => "host_not_allowed",
            PushRefusal::Unresolvable(_) => "unresolvable",
            PushRefusal::ForbiddenAddress { .. } => "forbidden_address",
            PushRefusal::BadHeader(_) => "bad_header",
            PushRefusal::TooMany(_) => "too_many",
        }
    }
}

/// A checked webhook: where to connect (never resolved again).
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) url: Url,
    /// The DNS name to pin to `addr` (none for an IP literal).
    pub(crate) domain: Option<String>,
    pub(crate) addr: SocketAddr,
    /// `scheme://host:port`: what logs may show of the URL.
    pub(crate) origin: String,
}

/// The allowlist and the resolver.
#[derive(Clone)]
pub(crate) struct Policy {
    pub(crate) allow: Vec<AllowedHost>,
    pub(crate) resolver: Arc<dyn PushResolver>,
}

impl Policy {
    /// Check `url` and resolve its host once: the address to connect to.
    pub(crate) async fn check(&self, url: &str) -> Result<Target, PushRefusal> {
        let url = Url::parse(url).map_err(|_| PushRefusal::BadUrl)?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(PushRefusal::Scheme(url.scheme().to_owned()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(PushRefusal::Credentials);
        }
        let host = url.host().ok_or(PushRefusal::BadUrl)?;
        let port = url.port_or_known_default().ok_or(PushRefusal::BadUrl)?;
        let shown = match &host {
            Host::Ipv6(ip) => format!("[{ip}]:{port}"),
            other => format!("{other}:{port}"),
        };
        if !self.allow.iter().any(|a| a.matches(&host, port)) {
            return Err(PushRefusal::HostNotAllowed(shown));
        }
        let (addrs, domain) = match &host {
            // The allowlist names this very literal: any address is allowed.
            Host::Ipv4(ip) => (vec![IpAddr::V4(*ip)], None),
            Host::Ipv6(ip) => (vec![IpAddr::V6(*ip)], None),
            Host::Domain(name) => {
                let addrs = self.resolver.resolve(name, port).await.unwrap_or_default();
                if addrs.is_empty() {
                    return Err(PushRefusal::Unresolvable(shown));
                }
                // Only an entry that is exactly `localhost` lets a name
                // reach loopback; nothing else special is reachable by name.
                let local = *name == "localhost";
                if let Some(addr) = addrs
                    .iter()
                    .find(|a| forbidden(**a) && !(local && a.is_loopback()))
                {
                    return Err(PushRefusal::ForbiddenAddress {
                        host: shown,
                        addr: *addr,
                    });
                }
                (addrs, Some((*name).to_owned()))
            }
        };
        let origin = format!("{}://{shown}", url.scheme());
        Ok(Target {
            addr: SocketAddr::new(addrs[0], port),
            url,
            domain,
            origin,
        })
    }
}

/// Whether push must not reach `ip` unless the operator named it: loopback,
/// private (RFC 1918, ULA), link-local (cloud metadata included), CGNAT,
/// multicast, broadcast, unspecified, reserved and documentation ranges,
/// IPv6 forms that embed such an IPv4 address (mapped, translated,
/// compatible, NAT64, 6to4), and local-use NAT64.
pub(crate) fn forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_unspecified()
        || a == 0
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || (a == 100 && (b & 0xc0) == 64) // CGNAT 100.64.0.0/10
        || ip.is_multicast()
        || ip.is_broadcast()
        || a >= 240 // reserved 240.0.0.0/4
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 198 && (b & 0xfe) == 18) // benchmarking 198.18.0.0/15
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    // IPv4-mapped ::ffff:a.b.c.d and IPv4-translated ::ffff:0:a.b.c.d
    // (SIIT): the IPv4 address decides.
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] || s[..6] == [0, 0, 0, 0, 0, 0xffff] {
        return forbidden_v4(embedded(s[6], s[7]));
    }
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || s[..6] == [0; 6] // IPv4-compatible ::a.b.c.d
        || (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] && forbidden_v4(embedded(s[6], s[7]))) // NAT64
        || s[..3] == [0x64, 0xff9b, 1] // local-use NAT64 64:ff9b:1::/48: the network's own
        || (s[0] == 0x2002 && forbidden_v4(embedded(s[1], s[2]))) // 6to4
        || (s[0] == 0x2001 && s[1] == 0) // Teredo
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[..4] == [0x100, 0, 0, 0]) // discard
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Vec<IpAddr>);

    #[async_trait]
    impl PushResolver for Fixed {
        async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<IpAddr>> {
            Ok(self.0.clone())
        }
    }

    fn policy(allow: &[&str], resolves_to: &[&str]) -> Policy {
        Policy {
            allow: allow.iter().map(|a| a.parse().unwrap()).collect(),
            resolver: Arc::new(Fixed(
                resolves_to.iter().map(|a| a.parse().unwrap()).collect(),
            )),
        }
    }

    #[test]
    fn special_addresses_are_forbidden_and_public_ones_are_not() {
        for bad in [
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "127.9.9.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "198.18.0.1",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd00:ec2::254",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:db8::1",
        ] {
            assert!(forbidden(bad.parse().unwrap()), "{bad} must be forbidden");
        }
        for good in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(!forbidden(good.parse().unwrap()), "{good} is public");
        }
    }

    #[test]
    fn ipv6_forms_embedding_ipv4_are_checked_by_their_ipv4() {
        // (address, forbidden)
        for (ip, bad) in [
            // IPv4-mapped ::ffff:0:0/96.
            ("::ffff:127.0.0.1", true),
            ("::ffff:169.254.169.254", true),
            ("::ffff:93.184.216.34", false),
            // IPv4-translated ::ffff:0:0:0/96.
            ("::ffff:0:7f00:1", true),
            ("::ffff:0:a9fe:a9fe", true),
            ("::ffff:0:c0a8:101", true),
            ("::ffff:0:5db8:d822", false),
            // NAT64 well-known prefix 64:ff9b::/96.
            ("64:ff9b::7f00:1", true),
            ("64:ff9b::a00:1", true),
            ("64:ff9b::5db8:d822", false),
            // Local-use NAT64 64:ff9b:1::/48: always.
            ("64:ff9b:1::5db8:d822", true),
            ("64:ff9b:1:ffff::1", true),
        ] {
            assert_eq!(forbidden(ip.parse().unwrap()), bad, "{ip}");
        }
    }

    #[test]
    fn allowlist_entries_parse_strictly() {
        for ok in [
            "example.com",
            "EXAMPLE.com:80",
            "127.0.0.1:9000",
            "[::1]:8080",
            "localhost",
        ] {
            assert!(ok.parse::<AllowedHost>().is_ok(), "{ok}");
        }
        for bad in [
            "",
            "http://example.com",
            "example.com/path",
            "user@example.com",
            "example.com:0",
            "example.com:99999",
            "example.com:http",
            "exa mple.com",
        ] {
            assert!(bad.parse::<AllowedHost>().is_err(), "{bad:?}");
        }
        assert_eq!(
            "EXAMPLE.com:80".parse::<AllowedHost>().unwrap().to_string(),
            "example.com:80"
        );
    }

    #[tokio::test]
    async fn urls_are_checked_against_the_allowlist_and_the_addresses() {
        let p = policy(&["hooks.example.com", "127.0.0.1:9000"], &["93.184.216.34"]);
        let t = p
            .check("https://hooks.example.com/a?secret=1")
            .await
            .unwrap();
        assert_eq!(t.origin, "https://hooks.example.com:443");
        assert_eq!(t.addr, "93.184.216.34:443".parse().unwrap());
        assert_eq!(t.domain.as_deref(), Some("hooks.example.com"));
        let literal = p.check("http://127.0.0.1:9000/hook").await.unwrap();
        assert_eq!(literal.domain, None);
        let refusals = [
            ("ftp://hooks.example.com/", "scheme"),
            ("https://u:p@hooks.example.com/", "credentials"),
            ("https://u@hooks.example.com/", "credentials"),
            ("https://other.example.com/", "host_not_allowed"),
            ("http://127.0.0.1:9001/", "host_not_allowed"),
            ("http://2130706433:9001/", "host_not_allowed"),
            ("not a url", "bad_url"),
        ];
        for (url, kind) in refusals {
            assert_eq!(p.check(url).await.unwrap_err().kind(), kind, "{url}");
        }
        // An allowlisted name resolving to a private address is refused …
        for addr in ["127.0.0.1", "10.0.0.7", "169.254.169.254", "::1"] {
            let rebound = policy(&["hooks.example.com"], &["93.184.216.34", addr]);
            let err = rebound
                .check("https://hooks.example.com/")
                .await
                .unwrap_err();
            assert_eq!(err.kind(), "forbidden_address", "{addr}");
        }
        // … unless the entry is exactly `localhost` (loopback only).
        let local = policy(&["localhost"], &["127.0.0.1", "::1"]);
        assert!(local.check("http://localhost:1234/").await.is_ok());
        let local_private = policy(&["localhost"], &["10.0.0.1"]);
        assert!(local_private.check("http://localhost/").await.is_err());
        let unresolved = policy(&["hooks.example.com"], &[]);
        let err = unresolved
            .check("https://hooks.example.com/")
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "unresolvable");
    }
}
