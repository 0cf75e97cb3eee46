//! The server token, and the session cookie a browser gets for it.
//!
//! A cookie is `<sid>.<mac>`: a random session id and the HMAC-SHA256 of it
//! under the token. It is checked without server state (so it survives a
//! restart with the same token, and several servers sharing one token
//! accept each other's sessions), it is worthless without the token, and
//! each exchange makes a new session, so two browsers are two principals.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

use crate::Principal;
use crate::secret::{hex, unhex};

/// The cookie's name.
pub const SESSION_COOKIE: &str = "agent_adaptor_session";

/// The shortest token accepted from a host.
pub const MIN_TOKEN_LEN: usize = 16;

/// A server's secret token. Its `Debug` never shows it.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// A token that is too short or not printable ASCII.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the token must be at least {MIN_TOKEN_LEN} printable ASCII characters, without spaces")]
pub struct WeakToken;

impl Token {
    /// A new random token (32 bytes, hex).
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Token(hex(&bytes))
    }

    /// The host's own token.
    pub fn new(token: impl Into<String>) -> Result<Self, WeakToken> {
        let token = token.into();
        let printable = token.bytes().all(|b| b.is_ascii_graphic());
        if token.len() < MIN_TOKEN_LEN || !printable {
            return Err(WeakToken);
        }
        Ok(Token(token))
    }

    /// The token itself (to print the URL once; never log it).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `given` is the token, in time independent of its content.
    pub fn matches(&self, given: &str) -> bool {
        crate::secret::constant_time_eq(given.as_bytes(), self.0.as_bytes())
    }

    fn mac(&self) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(self.0.as_bytes())
            .unwrap_or_else(|_| unreachable_mac());
        mac.update(b"agent-adaptor session v1:");
        mac
    }

    /// A new session: the cookie value and its principal.
    pub(crate) fn new_session(&self) -> (String, Principal) {
        let mut sid = [0u8; 12];
        rand::rng().fill_bytes(&mut sid);
        let sid = hex(&sid);
        let mut mac = self.mac();
        mac.update(sid.as_bytes());
        let tag = hex(&mac.finalize().into_bytes());
        (format!("{sid}.{tag}"), session_principal(&sid))
    }

    /// The principal of a cookie value, if the token signed it.
    pub(crate) fn session(&self, cookie: &str) -> Option<Principal> {
        let (sid, tag) = cookie.split_once('.')?;
        if sid.len() != 24 || !sid.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let tag = unhex(tag)?;
        let mut mac = self.mac();
        mac.update(sid.as_bytes());
        mac.verify_slice(&tag).ok()?;
        Some(session_principal(sid))
    }
}

/// HMAC accepts keys of any length, so `new_from_slice` cannot fail.
fn unreachable_mac() -> Hmac<Sha256> {
    match <Hmac<Sha256> as Mac>::new_from_slice(b"agent-adaptor") {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    }
}

fn session_principal(sid: &str) -> Principal {
    Principal::new(format!("session:{sid}"))
}

/// The value of cookie `name` in a `Cookie` header.
pub(crate) fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_cookie_is_valid_only_under_its_token() {
        let token = Token::generate();
        let (cookie, principal) = token.new_session();
        assert_eq!(token.session(&cookie), Some(principal.clone()));
        let (other, other_principal) = token.new_session();
        assert_ne!(principal, other_principal, "each exchange is a new session");
        assert_eq!(token.session(&other), Some(other_principal));
        assert_eq!(Token::generate().session(&cookie), None);
        let (sid, tag) = cookie.split_once('.').unwrap_or_default();
        let mut forged = tag.to_owned();
        forged.replace_range(0..1, if tag.starts_with('0') { "1" } else { "0" });
        assert_eq!(token.session(&format!("{sid}.{forged}")), None);
        assert_eq!(token.session(sid), None);
        assert_eq!(token.session("x.y"), None);
    }

    #[test]
    fn tokens_compare_exactly_and_weak_ones_are_refused() {
        let token = Token::new("0123456789abcdef").unwrap_or_else(|_| Token::generate());
        assert!(token.matches("0123456789abcdef"));
        assert!(!token.matches("0123456789abcdeF"));
        assert!(!token.matches("0123456789abcde"));
        assert_eq!(Token::new("short").err(), Some(WeakToken));
        assert_eq!(Token::new("has a space in it!!").err(), Some(WeakToken));
        assert!(!format!("{token:?}").contains("0123"));
    }

    #[test]
    fn cookies_are_found_by_name() {
        let h = "a=1; agent_adaptor_session=abc.def; b=2";
        assert_eq!(cookie(h, SESSION_COOKIE), Some("abc.def"));
        assert_eq!(cookie(h, "c"), None);
    }
}
