//! The delivery signature: `X-Agent-Adaptor-Signature: t=<unix secs>,v1=<hex>`
//! where the hex is HMAC-SHA256 with the server's push secret over
//! `"<t>.<body>"` (the exact bytes POSTed).

use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::secret::{hex, unhex};

/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "X-Agent-Adaptor-Signature";
/// The header carrying the delivery id `<task id>:<seq>`: the same on every
/// retry of one delivery, so a receiver can drop duplicates.
pub const DELIVERY_HEADER: &str = "X-Agent-Adaptor-Delivery";
/// The A2A header carrying the config's `token`, when it has one.
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";
/// How far a signature's time may be from the receiver's clock by default.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

fn mac(secret: &[u8], t: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length: this cannot fail.
    let mut mac = match <Hmac<Sha256> as Mac>::new_from_slice(secret) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    };
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The signature header's value for `body` signed at `t` (unix seconds).
pub fn signature_header(secret: &[u8], t: i64, body: &[u8]) -> String {
    let tag = hex(&mac(secret, t, body).finalize().into_bytes());
    format!("t={t},v1={tag}")
}

/// Why a delivery's signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// The header is not `t=<secs>,v1=<hex>`.
    #[error("the signature header is malformed")]
    Malformed,
    /// `t` is further than the tolerance from `now` (a replay, or a clock
    /// off).
    #[error("the signature is too old or from the future")]
    Stale,
    /// No `v1` matches the body under the secret.
    #[error("the signature does not match")]
    Mismatch,
}

/// Check a delivery as a receiver: `header` is the
/// [`SIGNATURE_HEADER`] value, `body` the raw request body (before any JSON
/// parsing), `now` the receiver's clock in unix seconds. Accepts when one
/// `v1` is the HMAC-SHA256 of `"<t>.<body>"` under `secret` (compared in
/// constant time) and `t` is within `tolerance` of `now`. Dedupe retries
/// with the [`DELIVERY_HEADER`].
///
/// ```
/// use std::time::Duration;
/// use agent_adaptor_bridges::a2a::push::{signature_header, verify_signature, SignatureError};
///
/// let secret = b"the server's push secret";
/// let body = br#"{"statusUpdate":{"taskId":"task-1"}}"#;
/// let header = signature_header(secret, 1_700_000_000, body);
/// let tolerance = Duration::from_secs(300);
/// assert_eq!(verify_signature(secret, &header, body, 1_700_000_010, tolerance), Ok(()));
/// // Another body, another secret, an old signature: refused.
/// assert_eq!(
///     verify_signature(secret, &header, b"{}", 1_700_000_010, tolerance),
///     Err(SignatureError::Mismatch)
/// );
/// assert_eq!(
///     verify_signature(b"other", &header, body, 1_700_000_010, tolerance),
///     Err(SignatureError::Mismatch)
/// );
/// assert_eq!(
///     verify_signature(secret, &header, body, 1_700_001_000, tolerance),
///     Err(SignatureError::Stale)
/// );
/// ```
pub fn verify_signature(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now: i64,
    tolerance: Duration,
) -> Result<(), SignatureError> {
    let mut t = None;
    let mut tags = Vec::new();
    for item in header.split(',') {
        let (k, v) = item
            .trim()
            .split_once('=')
            .ok_or(SignatureError::Malformed)?;
        match k {
            "t" => t = Some(v.parse::<i64>().map_err(|_| SignatureError::Malformed)?),
            "v1" => tags.push(unhex(v).ok_or(SignatureError::Malformed)?),
            _ => {}
        }
    }
    let t = t.ok_or(SignatureError::Malformed)?;
    if tags.is_empty() {
        return Err(SignatureError::Malformed);
    }
    let skew = now.abs_diff(t);
    if skew > tolerance.as_secs() {
        return Err(SignatureError::Stale);
    }
    let ok = tags
        .iter()
        .any(|tag| mac(secret, t, body).verify_slice(tag).is_ok());
    if ok {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_headers_are_refused() {
        let d = DEFAULT_TOLERANCE;
        for h in ["", "t=1", "v1=00", "t=x,v1=00", "t=1,v1=zz", "garbage"] {
            assert_eq!(
                verify_signature(b"s", h, b"", 1, d),
                Err(SignatureError::Malformed),
                "{h:?}"
            );
        }
        let good = signature_header(b"s", 10, b"x");
        assert!(good.starts_with("t=10,v1="));
        assert_eq!(good.len(), "t=10,v1=".len() + 64);
        // A rotated secret's signature next to the right one still passes.
        let both = format!("{good},v1={}", "00".repeat(32));
        assert_eq!(verify_signature(b"s", &both, b"x", 10, d), Ok(()));
    }
}
