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
    // An empty authority (`file:///path`) has no userinfo: an `@` is the path's.
    match rest.rfind('@').filter(|_| !rest.starts_with('/')) {
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

/// The userinfo of `url` (`user:pw` in `https://user:pw@host/`), found by
/// the same rule as [`redact_url`]'s: everything before the last `@` of the
/// authority-and-path part, when the URL has a `scheme://` and a non-empty
/// authority. `None` when there is none.
pub fn url_userinfo(url: &str) -> Option<&str> {
    let rest = url.split(['?', '#']).next().unwrap_or(url);
    let (scheme, rest) = split_scheme(rest);
    if scheme.is_empty() || rest.starts_with('/') {
        return None;
    }
    rest.rfind('@').map(|at| &rest[..at])
}

/// `url` without its userinfo (`https://u:pw@host/x?sig=1` →
/// `https://host/x?sig=1`): what an event may carry when the URL itself is
/// the payload (a signed link stays usable), while a password never rides
/// along. Everything else is kept verbatim.
///
/// ```
/// use agent_adaptor_driver::redact::without_userinfo;
///
/// assert_eq!(without_userinfo("https://u:pw@cdn.example/a.png?sig=1"), "https://cdn.example/a.png?sig=1");
/// assert_eq!(without_userinfo("file:///tmp/a@b.png"), "file:///tmp/a@b.png");
/// ```
pub fn without_userinfo(url: &str) -> String {
    match url_userinfo(url) {
        Some(info) => {
            let start = info.as_ptr() as usize - url.as_ptr() as usize;
            let mut out = String::with_capacity(url.len());
            out.push_str(&url[..start]);
            out.push_str(&url[start + info.len() + 1..]);
            out
        }
        None => url.to_owned(),
    }
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

/// Names whose `name=value` / `name: value` value is a credential.
const SECRET_NAMES: [&str; 8] = [
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "auth",
    "credential",
    "cookie",
];

/// Prefixes of well-known API key formats.
const KEY_PREFIXES: [&str; 9] = [
    "sk-",
    "sk_",
    "pk_",
    "ghp_",
    "gho_",
    "github_pat_",
    "xox",
    "AIza",
    "glpat-",
];

/// `text` (free text, such as a CLI's stderr) with what looks like a
/// credential masked: URLs by [`redact_url`], the value of `name=value` or
/// `name: value` when the name says key, token, secret, password, auth,
/// credential or cookie, the word after `Bearer`/`Basic`, tokens with a
/// well-known key prefix (`sk-`, `ghp_`, `AIza` …) and long runs of
/// key-like characters (24 or more, letters and digits mixed). Whitespace
/// is kept, so lines stay lines.
///
/// ```
/// use agent_adaptor_driver::redact_text;
///
/// assert_eq!(
///     redact_text("Invalid API key: sk-ant-abc123\nAuthorization: Bearer t0k3n"),
///     "Invalid API key: ***\nAuthorization: Bearer ***"
/// );
/// ```
pub fn redact_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut mask_next = false;
    let mut rest = text;
    while !rest.is_empty() {
        let start = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        rest = after;
        if word.is_empty() {
            continue;
        }
        let lower = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_ascii_lowercase();
        let scheme = matches!(lower.as_str(), "bearer" | "basic");
        if mask_next && !scheme && !lower.is_empty() {
            out.push_str(MASK);
            mask_next = false;
            continue;
        }
        mask_next = scheme || (word.ends_with(':') && names_secret(&lower));
        out.push_str(&redact_word(word));
    }
    out
}

/// True when a field name says its value is a credential.
fn names_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_NAMES.iter().any(|s| name.contains(s))
}

/// One whitespace-free word of [`redact_text`].
fn redact_word(word: &str) -> String {
    if word.contains("://") {
        return redact_url(word);
    }
    for sep in ['=', ':'] {
        if let Some((name, value)) = word.split_once(sep)
            && !value.is_empty()
            && names_secret(name)
        {
            return format!("{name}{sep}{MASK}");
        }
    }
    let core = word.trim_matches(|c: char| {
        matches!(
            c,
            '"' | '\'' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | ',' | ';' | '`'
        )
    });
    if looks_like_key(core) {
        return word.replacen(core, MASK, 1);
    }
    word.to_owned()
}

/// A token with a well-known key prefix, or a long run of key characters
/// mixing letters and digits.
fn looks_like_key(s: &str) -> bool {
    if KEY_PREFIXES
        .iter()
        .any(|p| s.len() > p.len() + 3 && s.starts_with(p))
    {
        return true;
    }
    s.len() >= 24
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+' | '='))
        && s.chars().any(|c| c.is_ascii_digit())
        && s.chars().any(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::{redact_text, redact_url};

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
    fn an_at_sign_in_the_path_of_an_empty_authority_is_kept() {
        let url = "file:///srv/node_modules/@google/gemini-cli/bundle/chunk.js:267833:24";
        assert_eq!(redact_url(url), url);
        // With an authority, everything up to the last `@` is masked (a
        // password may hold a `/`).
        assert_eq!(redact_url("https://u:p@h/@x"), "https://***@x");
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

    #[test]
    fn text_keeps_words_and_masks_credentials() {
        assert_eq!(
            redact_text("Error: Invalid API key · Please run /login"),
            "Error: Invalid API key · Please run /login"
        );
        assert_eq!(
            redact_text("  key=abc123 password: hunter2\n\tauth_token=x y"),
            "  key=*** password: ***\n\tauth_token=*** y"
        );
        assert_eq!(
            redact_text("see http://u:pw@h/v1?k=v (\"AIzaSyA1b2c3d4\")"),
            "see http://***@h/v1?k=*** (\"***\")"
        );
        assert_eq!(
            redact_text("id 0123456789abcdef0123456789abcdef end"),
            "id *** end"
        );
        assert_eq!(redact_text("exit code 1"), "exit code 1");
    }
}
