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
//! Raw-mode `sessionKey`s are used verbatim (the host owns them). A raw key
//! that itself starts with `agui/v1/` could name an AG-UI thread; hosts that
//! serve both modes from one store should keep raw keys out of that prefix.

/// The prefix of every AG-UI thread key.
pub const AGUI_THREAD_KEY_PREFIX: &str = "agui/v1/";

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
    format!(
        "{AGUI_THREAD_KEY_PREFIX}{}/{}",
        escape(namespace),
        escape(thread_id)
    )
}

/// The `(namespace, threadId)` a key was made from, or `None` when it is not
/// an AG-UI thread key.
pub fn parse_agui_thread_key(key: &str) -> Option<(String, String)> {
    let rest = key.strip_prefix(AGUI_THREAD_KEY_PREFIX)?;
    let (ns, tid) = rest.split_once('/')?;
    if tid.contains('/') {
        return None;
    }
    Some((unescape(ns)?, unescape(tid)?))
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
}
