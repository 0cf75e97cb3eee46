//! The `{{now_ns}}` placeholder: the time a line is written.
//!
//! A stdout line holding [`NOW_PLACEHOLDER`] has it replaced, just before the
//! line is written, by the wall-clock time in nanoseconds since the Unix
//! epoch (`SystemTime::now()`, i.e. `CLOCK_REALTIME`). A consumer on the
//! same machine that reads the stamp back and compares it with its own
//! clock when it receives the line measures the latency it adds
//! (`agent-adaptor-bench`'s latency runs). Lines without the placeholder are
//! written unchanged.

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

/// The placeholder replaced by the write time (ns since the Unix epoch).
pub const NOW_PLACEHOLDER: &str = "{{now_ns}}";

/// `line` with every [`NOW_PLACEHOLDER`] replaced by the time now.
pub(crate) fn fill(line: &str) -> Cow<'_, str> {
    if !line.contains(NOW_PLACEHOLDER) {
        return Cow::Borrowed(line);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    Cow::Owned(line.replace(NOW_PLACEHOLDER, &now.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_the_placeholder_with_the_time_now() {
        assert!(matches!(fill("{\"a\":1}"), Cow::Borrowed("{\"a\":1}")));
        let before = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let line = fill("{\"t\":\"@ts={{now_ns}};x\"}").into_owned();
        let stamp: u128 = line
            .trim_start_matches("{\"t\":\"@ts=")
            .split(';')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(stamp >= before, "{line}");
        assert!(!line.contains(NOW_PLACEHOLDER));
    }
}
