//! The auth hook that guards the JSON-RPC endpoint.

use axum::http::{HeaderMap, StatusCode};

/// Decides, from the request headers, whether a JSON-RPC request may
/// proceed. Runs before the body is read; a refusal starts nothing.
///
/// Any `Fn(&HeaderMap) -> Result<(), AuthRejection>` closure is a hook:
///
/// ```
/// use agent_adaptor_bridges::a2a::AuthRejection;
/// use axum::http::HeaderMap;
///
/// let hook = |h: &HeaderMap| match h.get("x-api-key") {
///     Some(k) if k == "secret" => Ok(()),
///     _ => Err(AuthRejection::unauthorized("missing or wrong x-api-key")),
/// };
/// # let _: &dyn agent_adaptor_bridges::a2a::Authorize = &hook;
/// ```
///
/// For checks that must await (token introspection), wrap
/// [`A2aServer::router`](super::A2aServer::router) in an axum middleware
/// instead.
pub trait Authorize: Send + Sync + 'static {
    /// `Ok(())` to let the request through.
    fn authorize(&self, headers: &HeaderMap) -> Result<(), AuthRejection>;
}

impl<F> Authorize for F
where
    F: Fn(&HeaderMap) -> Result<(), AuthRejection> + Send + Sync + 'static,
{
    fn authorize(&self, headers: &HeaderMap) -> Result<(), AuthRejection> {
        self(headers)
    }
}

/// A refused request: the HTTP status, a message for the client, and an
/// optional `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRejection {
    /// 401 or 403 (any 4xx is sent as given).
    pub status: StatusCode,
    /// Said to the client; never echo a credential here.
    pub message: String,
    /// The `WWW-Authenticate` header value, if any.
    pub challenge: Option<String>,
}

impl AuthRejection {
    /// 401 with a `Bearer` challenge.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        AuthRejection {
            status: StatusCode::UNAUTHORIZED,
            message: message.into(),
            challenge: Some("Bearer".into()),
        }
    }

    /// 403.
    pub fn forbidden(message: impl Into<String>) -> Self {
        AuthRejection {
            status: StatusCode::FORBIDDEN,
            message: message.into(),
            challenge: None,
        }
    }
}

/// A hook accepting exactly `Authorization: Bearer <token>`.
#[derive(Clone)]
pub struct BearerToken {
    token: String,
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

/// A hook accepting exactly `Authorization: Bearer <token>`.
pub fn bearer_token(token: impl Into<String>) -> BearerToken {
    BearerToken {
        token: token.into(),
    }
}

impl Authorize for BearerToken {
    fn authorize(&self, headers: &HeaderMap) -> Result<(), AuthRejection> {
        match crate::secret::bearer(headers) {
            Some(t) if crate::secret::constant_time_eq(t.as_bytes(), self.token.as_bytes()) => {
                Ok(())
            }
            Some(_) => Err(AuthRejection::unauthorized("the bearer token is not valid")),
            None => Err(AuthRejection::unauthorized(
                "this A2A endpoint needs an Authorization: Bearer token",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderValue, header};

    #[test]
    fn bearer_tokens_must_match_exactly() {
        let hook = bearer_token("s3cret");
        let mut h = HeaderMap::new();
        assert_eq!(
            hook.authorize(&h).unwrap_err().status,
            StatusCode::UNAUTHORIZED
        );
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer s3cre"),
        );
        assert!(hook.authorize(&h).is_err());
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer s3cret"),
        );
        assert!(hook.authorize(&h).is_ok());
        assert!(!format!("{hook:?}").contains("s3cret"));
    }
}
