//! The DNS-rebinding guard (`Host`) and the cross-site guard (`Origin`).

use std::net::IpAddr;

use axum::http::{HeaderMap, Method, header};

/// The host part of a `Host` header value (`[::1]:8787` → `::1`,
/// `LocalHost.:80` → `localhost`), or `None` when it is malformed.
pub(crate) fn host_name(value: &str) -> Option<String> {
    let value = value.trim();
    let host = if let Some(rest) = value.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.starts_with(':')) {
            return None;
        }
        inside
    } else {
        match value.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
            Some(_) => return None,
            None => value,
        }
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

/// Which `Host` names and `Origin`s a server answers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Allowlist {
    /// Host names (lowercase, no port) besides loopback ones.
    pub(crate) hosts: Vec<String>,
    /// Extra origins (`scheme://host[:port]`, lowercase) allowed to send
    /// state-changing requests.
    pub(crate) origins: Vec<String>,
}

/// Why a request was refused by [`Allowlist::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No or an unknown `Host`.
    Host(String),
    /// A cross-site state-changing request.
    Origin(String),
}

impl Allowlist {
    /// Whether `name` (from [`host_name`]) is served: `localhost`, any
    /// loopback address, or a configured name.
    pub(crate) fn host_allowed(&self, name: &str) -> bool {
        name == "localhost"
            || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
            || self.hosts.iter().any(|h| h == name)
    }

    /// Check `Host` on every request, and `Origin` (plus `Sec-Fetch-Site`)
    /// on every state-changing one: a browser's cross-site request carries
    /// an `Origin` other than the server's own; non-browser clients send
    /// none and are judged by their credentials alone.
    pub(crate) fn check(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
        let host_value = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let host = host_name(host_value).unwrap_or_default();
        if !self.host_allowed(&host) {
            return Err(Refusal::Host(host_value.to_owned()));
        }
        if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
            return Ok(());
        }
        if headers
            .get("sec-fetch-site")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"))
        {
            return Err(Refusal::Origin("Sec-Fetch-Site: cross-site".into()));
        }
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let origin = origin.to_str().unwrap_or("").trim().to_ascii_lowercase();
        let own = host_value.trim().to_ascii_lowercase();
        let same_origin = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .is_some_and(|rest| rest == own);
        if same_origin || self.origins.contains(&origin) {
            Ok(())
        } else {
            Err(Refusal::Origin(origin))
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                *k,
                HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("")),
            );
        }
        h
    }

    #[test]
    fn host_names_are_parsed_without_port_case_or_trailing_dot() {
        assert_eq!(host_name("[::1]:8787").as_deref(), Some("::1"));
        assert_eq!(host_name("LocalHost.:80").as_deref(), Some("localhost"));
        assert_eq!(host_name("127.0.0.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(host_name("a:b:c"), None);
        assert_eq!(host_name("[::1]x"), None);
        assert_eq!(host_name(""), None);
    }

    #[test]
    fn foreign_hosts_and_cross_site_posts_are_refused() {
        let list = Allowlist {
            hosts: vec!["agents.example".into()],
            origins: vec!["https://app.example".into()],
        };
        let get = Method::GET;
        let post = Method::POST;
        assert!(
            list.check(&get, &headers(&[("host", "127.0.0.1:9")]))
                .is_ok()
        );
        assert!(list.check(&get, &headers(&[("host", "[::1]:9")])).is_ok());
        assert!(
            list.check(&get, &headers(&[("host", "agents.example")]))
                .is_ok()
        );
        assert!(matches!(
            list.check(&get, &headers(&[("host", "attacker.example:9")])),
            Err(Refusal::Host(_))
        ));
        assert!(matches!(
            list.check(&get, &HeaderMap::new()),
            Err(Refusal::Host(_))
        ));
        let ok = [("host", "localhost:9"), ("origin", "http://localhost:9")];
        assert!(list.check(&post, &headers(&ok)).is_ok());
        let extra = [("host", "localhost:9"), ("origin", "https://app.example")];
        assert!(list.check(&post, &headers(&extra)).is_ok());
        for origin in ["http://localhost:10", "http://attacker.example", "null"] {
            let h = headers(&[("host", "localhost:9"), ("origin", origin)]);
            assert!(
                matches!(list.check(&post, &h), Err(Refusal::Origin(_))),
                "{origin}"
            );
        }
        let fetch = [("host", "localhost:9"), ("sec-fetch-site", "cross-site")];
        assert!(list.check(&post, &headers(&fetch)).is_err());
        assert!(
            list.check(&post, &headers(&[("host", "localhost:9")]))
                .is_ok()
        );
    }
}
