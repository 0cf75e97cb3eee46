//! Decoding one stdout line of JSON.

use serde::Deserialize;

/// Deserialize one line of JSON.
///
/// The line's UTF-8 is checked once, up front, and the text parsed as a
/// `str`: serde_json's byte-slice reader would check every string in the
/// line again on its own (a tenth of a Codex run's parse, in profiles). A
/// line that is not valid UTF-8 is parsed as bytes, so its error is exactly
/// the one `serde_json::from_slice` gives.
///
/// # Errors
///
/// As [`serde_json::from_slice`].
pub fn from_line<'a, T: Deserialize<'a>>(raw: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(raw) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(raw),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::Value;

    use super::from_line;

    #[test]
    fn same_value_and_same_errors_as_from_slice() {
        let lines: [&[u8]; 7] = [
            br#"{"a":"caf\u00e9 \"q\"","b":[1,2.5,-3],"c":null}"#,
            "{\"t\":\"日本語 🦀\"}".as_bytes(),
            b"{\"bad\":\"\xff\xfe\"}",
            b"\xff{}",
            b"{\"a\":1",
            b"not json",
            b"",
        ];
        for raw in lines {
            let ours = from_line::<Value>(raw);
            let theirs = serde_json::from_slice::<Value>(raw);
            match (ours, theirs) {
                (Ok(a), Ok(b)) => assert_eq!(a, b),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("{:?}: {a:?} vs {b:?}", String::from_utf8_lossy(raw)),
            }
        }
    }
}
