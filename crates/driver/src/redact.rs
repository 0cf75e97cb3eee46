//! Credentials out of what is shown: [`redact_url`] makes a URL safe to print,
//! log, publish in an agent card or put into an event.

/// What replaces a secret.
const MASK: &str = "***";

/// `url` with every place a credential can hide masked: the userinfo
/// (`user:pw@` → `***@`), every query parameter's value (`?api-key=K` →
/// `?api-key=***`; a parameter without `=` is masked whole) and the fragment
/// (`#…` → `#***`). The scheme, host, port and path are kept, so the result
/// still says where requests go.
///
/// It never fails and never panics. Input that is not a well-formed URL is
/// redacted by the same rules, erring towards hiding: everything before the
/// last `@` ahead of the query is treated as userinfo, even when a `/` comes
/// first (a password containing an unencoded `/`), so
/// `http://u:p/w@host` shows as `http://***@host`.
///
/// ```
/// use agent_adaptor_driver::redact_url;
///
/// assert_eq!(
///     redact_url("http://user:pw@127.0.0.1:8080/v1?api-key=K&x=1"),
///     "http://***@127.0.0.1:8080/v1?api-key=***&x=***"
/// );
/// assert_eq!(redact_url("https://api.openai.com/v1"), "https://api.openai.com/v1");
/// ```
pub fn redact_url(url: &str) -> String {
    // The fragment, then the query, are split off first: the userinfo rule
    // below must only look at what comes before them.
    let (rest, fragment) = match url.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (url, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let (scheme, rest) = split_scheme(rest);
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    match rest.rfind('@') {
        Some(at) => {
            out.push_str(MASK);
            out.push_str(&rest[at..]);
        }
        None => out.push_str(rest),
    }
    if let Some(query) = query {
        out.push('?');
        let params: Vec<String> = query.split('&').map(redact_param).collect();
        out.push_str(&params.join("&"));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        if !fragment.is_empty() {
            out.push_str(MASK);
        }
    }
    out
}

/// `scheme://` and the rest, or `""` and everything when there is no
/// well-formed scheme (RFC 3986: a letter, then letters, digits, `+-.`).
fn split_scheme(s: &str) -> (&str, &str) {
    if let Some(i) = s.find("://") {
        let scheme = &s[..i];
        let mut chars = scheme.chars();
        let well_formed = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if well_formed {
            return s.split_at(i + 3);
        }
    }
    ("", s)
}

/// One `key=value` of a query: the key kept, the value masked; a parameter
/// without `=` may itself be a token, so it is masked whole.
fn redact_param(param: &str) -> String {
    match param.split_once('=') {
        Some((key, _)) => format!("{key}={MASK}"),
        None if param.is_empty() => String::new(),
        None => MASK.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn userinfo_is_masked() {
        assert_eq!(
            redact_url("http://user:pw@host:8080/v1"),
            "http://***@host:8080/v1"
        );
        assert_eq!(redact_url("https://token@host/"), "https://***@host/");
        assert_eq!(redact_url("http://:pw@host"), "http://***@host");
    }

    #[test]
    fn every_query_value_is_masked_keys_kept() {
        assert_eq!(
            redact_url("http://h/v1?api-key=K&key=K2&empty=&flag"),
            "http://h/v1?api-key=***&key=***&empty=***&***"
        );
        assert_eq!(redact_url("http://h/?"), "http://h/?");
        assert_eq!(redact_url("http://h/?a=1&&b=2"), "http://h/?a=***&&b=***");
    }

    #[test]
    fn fragment_is_masked() {
        assert_eq!(redact_url("http://h/cb#access_token=T"), "http://h/cb#***");
        assert_eq!(redact_url("http://h/#"), "http://h/#");
    }

    #[test]
    fn ipv6_hosts_and_ports_are_kept() {
        assert_eq!(redact_url("http://[::1]:8080/v1"), "http://[::1]:8080/v1");
        assert_eq!(
            redact_url("http://u:p@[fe80::1%25eth0]:9/v1?k=v"),
            "http://***@[fe80::1%25eth0]:9/v1?k=***"
        );
    }

    #[test]
    fn no_scheme() {
        assert_eq!(redact_url("user:pw@host/v1"), "***@host/v1");
        assert_eq!(redact_url("host:8080/v1?k=v"), "host:8080/v1?k=***");
        assert_eq!(redact_url("1http://u:p@h"), "***@h");
    }

    #[test]
    fn percent_encoded_credentials() {
        // An encoded `@` or `:` inside the userinfo does not end it early.
        assert_eq!(
            redact_url("http://us%40er:p%3Aw%40d@host/v1"),
            "http://***@host/v1"
        );
        assert_eq!(
            redact_url("http://h/v1?api%2Dkey=s%26cret%3D"),
            "http://h/v1?api%2Dkey=***"
        );
    }

    #[test]
    fn malformed_input_errs_towards_hiding() {
        // A password with an unencoded `/`: the part after it is no path.
        assert_eq!(redact_url("http://u:p/w@host/v1"), "http://***@host/v1");
        assert_eq!(redact_url("@@@"), "***@");
        assert_eq!(redact_url("http://u:p@"), "http://***@");
        assert_eq!(redact_url(""), "");
        assert_eq!(redact_url("http://[::1"), "http://[::1");
        // Multi-byte text never splits inside a character.
        assert_eq!(
            redact_url("http://ü:ö@hé/ä?ü=ö#ß"),
            "http://***@hé/ä?ü=***#***"
        );
    }

    #[test]
    fn credentials_never_survive() {
        for url in [
            "http://user:pw@127.0.0.1:1/v1?api-key=K",
            "pw@h?K",
            "http://h?x=pw#K",
            "http://a:pw@b:K@c/",
        ] {
            let shown = redact_url(url);
            assert!(
                !shown.contains("pw") && !shown.contains('K'),
                "{url} -> {shown}"
            );
        }
    }
}
