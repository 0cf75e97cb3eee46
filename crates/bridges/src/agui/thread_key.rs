//! The thread key an AG-UI `threadId` binds to.
//!
//! The key is the tuple `(namespace, threadId)` encoded as
//!
//! ```text
//! agui/v1/<escape(namespace)>/<escape(threadId)>
//! ```
//!
//! where `escape` replaces `%` with `%25` and `/` with `%2F` (nothing else).
//! Escaped components contain no `/`, so the key splits back into exactly the
//! tuple it came from ([`parse_agui_thread_key`]): two different
//! `(namespace, threadId)` pairs never share a key, whatever characters the
//! client puts in its `threadId`. The namespace is the handler's
//! ([`SseOptions::thread_namespace`](super::SseOptions::thread_namespace)),
//! e.g. a tenant, so tenants sharing one thread store cannot reach each
//! other's threads by choosing a `threadId`.
//!
//! Raw-mode `sessionKey`s are encoded the same way under their own prefix
//! ([`raw_thread_key`]: `sse/v1/<escape(namespace)>/<escape(sessionKey)>`),
//! so a raw client can never address an AG-UI thread, an A2A context
//! (`a2a:<contextId>`) or any other key outside its prefix, whatever
//! `sessionKey` it sends.

/// The prefix of every AG-UI thread key.
pub const AGUI_THREAD_KEY_PREFIX: &str = "agui/v1/";

/// The prefix of every raw-mode thread key.
pub const RAW_THREAD_KEY_PREFIX: &str = "sse/v1/";

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('%') {
        out.push_str(&rest[..pos]);
        let code = rest.get(pos..pos + 3)?;
        match code {
            "%25" => out.push('%'),
            "%2F" => out.push('/'),
            _ => return None,
        }
        rest = &rest[pos + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// The thread key of AG-UI thread `thread_id` in `namespace`.
///
/// ```
/// use agent_adaptor_bridges::agui::{agui_thread_key, parse_agui_thread_key};
/// let key = agui_thread_key("tenant-7", "a/b%c");
/// assert_eq!(key, "agui/v1/tenant-7/a%2Fb%25c");
/// assert_eq!(parse_agui_thread_key(&key), Some(("tenant-7".into(), "a/b%c".into())));
/// ```
pub fn agui_thread_key(namespace: &str, thread_id: &str) -> String {
    encode(AGUI_THREAD_KEY_PREFIX, namespace, thread_id)
}

/// The `(namespace, threadId)` a key was made from, or `None` when it is not
/// an AG-UI thread key.
pub fn parse_agui_thread_key(key: &str) -> Option<(String, String)> {
    decode(AGUI_THREAD_KEY_PREFIX, key)
}

/// The thread key of raw-mode session `session_key` in `namespace`.
///
/// ```
/// use agent_adaptor_bridges::agui::{parse_raw_thread_key, raw_thread_key};
/// let key = raw_thread_key("", "agui/v1/web/t1");
/// assert_eq!(key, "sse/v1//agui%2Fv1%2Fweb%2Ft1");
/// assert_eq!(parse_raw_thread_key(&key), Some(("".into(), "agui/v1/web/t1".into())));
/// ```
pub fn raw_thread_key(namespace: &str, session_key: &str) -> String {
    encode(RAW_THREAD_KEY_PREFIX, namespace, session_key)
}

/// The `(namespace, sessionKey)` a key was made from, or `None` when it is
/// not a raw-mode thread key.
pub fn parse_raw_thread_key(key: &str) -> Option<(String, String)> {
    decode(RAW_THREAD_KEY_PREFIX, key)
}

fn encode(prefix: &str, namespace: &str, id: &str) -> String {
    format!("{prefix}{}/{}", escape(namespace), escape(id))
}

fn decode(prefix: &str, key: &str) -> Option<(String, String)> {
    let rest = key.strip_prefix(prefix)?;
    let (ns, id) = rest.split_once('/')?;
    if id.contains('/') {
        return None;
    }
    Some((unescape(ns)?, unescape(id)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoding_is_injective_on_tricky_inputs() {
        let parts = [
            "",
            "/",
            "//",
            "%",
            "%2F",
            "%25",
            "a/b",
            "a%2Fb",
            "agui/v1/x/y",
            "ü/é",
            " ",
            "a:b",
        ];
        let mut seen = std::collections::HashMap::new();
        for ns in parts {
            for tid in parts {
                let key = agui_thread_key(ns, tid);
                assert_eq!(
                    parse_agui_thread_key(&key),
                    Some((ns.to_owned(), tid.to_owned())),
                    "{key}"
                );
                if let Some(prev) = seen.insert(key.clone(), (ns, tid)) {
                    panic!("{key} encodes both {prev:?} and {:?}", (ns, tid));
                }
            }
        }
        assert_eq!(parse_agui_thread_key("conversation-42"), None);
        assert_eq!(parse_agui_thread_key("agui/v1/a/b/c"), None);
        assert_eq!(parse_agui_thread_key("agui/v1/a/%zz"), None);
    }

    #[test]
    fn raw_keys_never_leave_their_prefix() {
        for session in ["agui/v1/web/t1", "a2a:ctxA", "", "sse/v1/x/y", "%2F"] {
            let key = raw_thread_key("", session);
            assert!(key.starts_with(RAW_THREAD_KEY_PREFIX), "{key}");
            assert_eq!(parse_agui_thread_key(&key), None);
            assert_eq!(
                parse_raw_thread_key(&key),
                Some((String::new(), session.to_owned()))
            );
        }
    }
}
