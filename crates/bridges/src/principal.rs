//! [`Principal`]: who sent a request, as the host's authentication says.

use std::fmt;
use std::sync::Arc;

use axum::http::Extensions;

/// Who sent a request: an opaque id the host's authentication established
/// (a session, a token, a user). The bridges use it to keep one client's
/// runs to itself: only the principal that started a run may answer its
/// approvals, replay its stream, or read and cancel its A2A task.
///
/// Hosts insert it as a request extension (the [`Guard`](crate::guard::Guard)
/// does so for `agent-adaptor serve`); a request without one is
/// [`Principal::anonymous`], so a server with no authentication at all keeps
/// working, with every client the same principal.
///
/// ```
/// use agent_adaptor_bridges::Principal;
///
/// let mut req = axum::http::Request::new(());
/// req.extensions_mut().insert(Principal::new("session:ab12"));
/// assert_eq!(Principal::of(req.extensions()).as_str(), "session:ab12");
/// assert!(Principal::of(&axum::http::Extensions::new()).is_anonymous());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// The principal named `id` (never a secret: it is logged).
    pub fn new(id: impl AsRef<str>) -> Self {
        Principal(Arc::from(id.as_ref()))
    }

    /// The principal of requests that carry none.
    pub fn anonymous() -> Self {
        Principal(Arc::from("anonymous"))
    }

    /// Whether this is [`Principal::anonymous`].
    pub fn is_anonymous(&self) -> bool {
        &*self.0 == "anonymous"
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The digest this principal is recorded (and compared) as in shared
    /// stores (`sha256:` and 64 hex digits): a session principal names part
    /// of its cookie, so rows other hosts read keep a digest, never the id.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(self.0.as_bytes());
        format!("sha256:{}", crate::secret::hex(&digest))
    }

    /// The principal a request's extensions carry, else anonymous.
    pub fn of(extensions: &Extensions) -> Self {
        extensions
            .get::<Principal>()
            .cloned()
            .unwrap_or_else(Principal::anonymous)
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Principal({})", self.0)
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
