//! Where a call goes: [`Protocol`] (a wire protocol), [`ProviderEndpoint`]
//! (base URL, auth, headers) and [`Provider`] (a named endpoint + protocol, the
//! host-facing entry point).

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::{Stream, StreamExt};

use crate::collector::{
    CollectedTurn, TurnLimits, collect_turn, first_event_timeout, limit_stream, turn_timeout,
};
use crate::error::LlmError;
use crate::event::LlmStreamEvent;
use crate::message::{LlmCallConfig, Message};

/// A stream of events; `Err` items are call failures (a dropped
/// connection, a breached limit), `Ok(Error(..))` is the provider's own
/// terminal error.
pub type LlmResponseStream = Pin<Box<dyn Stream<Item = Result<LlmStreamEvent, LlmError>> + Send>>;

/// A wire protocol (one per vendor API). Protocols hold no credentials and no host: the endpoint is
/// passed in per call.
#[async_trait]
pub trait Protocol: Send + Sync + 'static {
    /// A short stable id (`openai-chat`, `openai-responses`, `anthropic`,
    /// `gemini`, `openrouter`).
    fn id(&self) -> &'static str;

    /// The vendor's public base URL.
    fn default_base_url(&self) -> &'static str;

    /// The auth a vendor expects for `key` (bearer, `x-api-key`,
    /// `x-goog-api-key`).
    fn default_auth(&self, key: &str) -> Arc<dyn ProviderAuth> {
        Arc::new(BearerAuth::new(key))
    }

    /// Opens the stream. Resolves once the first event arrived (or the
    /// stream ended), after any retries.
    async fn chat_completion_stream(
        &self,
        endpoint: &ProviderEndpoint,
        messages: &[Message],
        config: &LlmCallConfig,
    ) -> Result<LlmResponseStream, LlmError>;
}

/// Adds credentials to a request.
pub trait ProviderAuth: Send + Sync + 'static {
    /// The headers to set (they replace same-named headers).
    fn headers(&self) -> Vec<(String, String)>;
}

/// `Authorization: Bearer KEY`.
#[derive(Clone)]
pub struct BearerAuth(String);

impl BearerAuth {
    /// Bearer auth with `key`.
    pub fn new(key: impl Into<String>) -> Self {
        BearerAuth(key.into())
    }
}

impl fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerAuth(<redacted>)")
    }
}

impl ProviderAuth for BearerAuth {
    fn headers(&self) -> Vec<(String, String)> {
        vec![("authorization".into(), format!("Bearer {}", self.0))]
    }
}

/// One header carrying the key (`x-api-key`, `x-goog-api-key`, `api-key`).
#[derive(Clone)]
pub struct StaticHeaderAuth {
    name: String,
    value: String,
}

impl StaticHeaderAuth {
    /// `name: value`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        StaticHeaderAuth {
            name: name.into().to_ascii_lowercase(),
            value: value.into(),
        }
    }
}

impl fmt::Debug for StaticHeaderAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StaticHeaderAuth({}: <redacted>)", self.name)
    }
}

impl ProviderAuth for StaticHeaderAuth {
    fn headers(&self) -> Vec<(String, String)> {
        vec![(self.name.clone(), self.value.clone())]
    }
}

/// Base URL, auth and fixed headers of a provider.
#[derive(Clone)]
pub struct ProviderEndpoint {
    base_url: String,
    auth: Option<Arc<dyn ProviderAuth>>,
    headers: Vec<(String, String)>,
}

impl fmt::Debug for ProviderEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderEndpoint")
            .field("base_url", &self.display_url())
            .field("auth", &self.auth.as_ref().map(|_| "<configured>"))
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ProviderEndpoint {
    /// An endpoint at `base_url` (a trailing `/` is trimmed).
    pub fn new(base_url: impl Into<String>) -> Self {
        ProviderEndpoint {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            auth: None,
            headers: Vec::new(),
        }
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Whether credentials are configured (their value is not shown).
    pub fn has_auth(&self) -> bool {
        self.auth.is_some()
    }

    /// The base URL as it may be shown (labels, events, errors, logs):
    /// credentials in its userinfo, query and fragment masked
    /// ([`redact_url`](agent_adaptor_driver::redact_url)). The real one,
    /// [`base_url`](Self::base_url), is for requests only.
    pub fn display_url(&self) -> String {
        agent_adaptor_driver::redact_url(&self.base_url)
    }

    /// `path` appended to the base URL; a query in `path` is merged with one
    /// in the base URL.
    pub fn url(&self, path: &str) -> String {
        let (base, base_query) = match self.base_url.split_once('?') {
            Some((base, query)) => (base, Some(query)),
            None => (self.base_url.as_str(), None),
        };
        let (path, path_query) = match path.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (path, None),
        };
        let mut url = format!(
            "{}/{}",
            base.trim_end_matches('/'),
            path.trim_start_matches('/')
        );
        let queries: Vec<&str> = [base_query, path_query].into_iter().flatten().collect();
        if !queries.is_empty() {
            url.push('?');
            url.push_str(&queries.join("&"));
        }
        url
    }

    /// Every header to send: the endpoint's, then `extra`, then auth (each
    /// replacing same-named earlier ones, case-insensitively).
    pub fn headers(&self, extra: &[(String, String)]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let auth = self
            .auth
            .as_ref()
            .map(|auth| auth.headers())
            .unwrap_or_default();
        for (name, value) in self.headers.iter().chain(extra).chain(&auth) {
            let name = name.to_ascii_lowercase();
            if matches!(
                name.as_str(),
                "host" | "content-length" | "transfer-encoding" | "connection" | "upgrade"
            ) {
                continue;
            }
            out.retain(|(existing, _)| *existing != name);
            out.push((name, value.clone()));
        }
        out
    }
}

/// A named provider: an endpoint and the [`Protocol`] it speaks.
///
/// ```
/// use agent_adaptor_llm::{BearerAuth, LlmRetryConfig, OpenAiChat, Provider};
///
/// let provider = Provider::new(
///     "gateway",
///     OpenAiChat::new().with_retry_config(LlmRetryConfig::no_retry()),
/// )
/// .base_url("http://127.0.0.1:8081/v1")
/// .auth(BearerAuth::new("local-key"));
/// assert_eq!(provider.name(), "gateway");
/// ```
#[derive(Clone)]
pub struct Provider {
    name: String,
    protocol: Arc<dyn Protocol>,
    endpoint: ProviderEndpoint,
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("protocol", &self.protocol.id())
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

impl Provider {
    /// A provider named `name` speaking `protocol`, at the protocol's default base
    /// URL, without auth.
    pub fn new(name: impl Into<String>, protocol: impl Protocol) -> Self {
        Provider::from_protocol(name, Arc::new(protocol))
    }

    /// Like [`Provider::new`] with a shared protocol.
    pub fn from_protocol(name: impl Into<String>, protocol: Arc<dyn Protocol>) -> Self {
        let endpoint = ProviderEndpoint::new(protocol.default_base_url());
        Provider {
            name: name.into(),
            protocol,
            endpoint,
        }
    }

    /// With a base URL (trailing `/` trimmed).
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        let auth = self.endpoint.auth.take();
        let headers = std::mem::take(&mut self.endpoint.headers);
        self.endpoint = ProviderEndpoint {
            auth,
            headers,
            ..ProviderEndpoint::new(url)
        };
        self
    }

    /// With auth.
    #[must_use]
    pub fn auth(mut self, auth: impl ProviderAuth) -> Self {
        self.endpoint.auth = Some(Arc::new(auth));
        self
    }

    /// With shared auth.
    #[must_use]
    pub fn auth_arc(mut self, auth: Arc<dyn ProviderAuth>) -> Self {
        self.endpoint.auth = Some(auth);
        self
    }

    /// With the vendor's usual auth for `key` (bearer for OpenAI-protocol,
    /// `x-api-key` for Anthropic, `x-goog-api-key` for Gemini).
    #[must_use]
    pub fn api_key(self, key: &str) -> Self {
        let auth = self.protocol.default_auth(key);
        self.auth_arc(auth)
    }

    /// With a header sent on every call.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.endpoint
            .headers
            .push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The wire protocol.
    pub fn protocol(&self) -> &Arc<dyn Protocol> {
        &self.protocol
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &ProviderEndpoint {
        &self.endpoint
    }

    /// Streams one turn: the connect phase is bounded by `config.limits`
    /// (time to first event, total), the rest by [`limit_stream`]; empty
    /// `TextDelta`s are filtered out; errors name the provider.
    pub async fn chat_completion_stream(
        &self,
        messages: &[Message],
        config: &LlmCallConfig,
    ) -> Result<LlmResponseStream, LlmError> {
        let started = Instant::now();
        let limits = config.limits;
        let connect = self
            .protocol
            .chat_completion_stream(&self.endpoint, messages, config);
        let stream = match connect_bound(&limits) {
            Some((limit, error)) => match tokio::time::timeout(limit, connect).await {
                Ok(result) => result,
                Err(_) => Err(error),
            },
            None => connect.await,
        }
        .map_err(|error| self.name_error(error))?;
        let name = self.name.clone();
        let stream = stream.filter_map(move |item| {
            let item = match item {
                Ok(LlmStreamEvent::TextDelta(text)) if text.is_empty() => None,
                Err(mut error) => {
                    error.provider.get_or_insert_with(|| name.clone());
                    Some(Err(error))
                }
                other => Some(other),
            };
            std::future::ready(item)
        });
        // The first event has arrived (the protocol resolves at first-event
        // time): only the total bound and the byte cap remain.
        let mut rest = limits.after(started.elapsed());
        rest.first_event = None;
        Ok(limit_stream(Box::pin(stream), rest))
    }

    /// One turn, folded (see [`collect_turn`]).
    pub async fn chat_completion(
        &self,
        messages: &[Message],
        config: &LlmCallConfig,
    ) -> Result<CollectedTurn, LlmError> {
        let started = Instant::now();
        let stream = self.chat_completion_stream(messages, config).await?;
        let mut limits = config.limits.after(started.elapsed());
        limits.first_event = None;
        collect_turn(stream, &limits, |_| {})
            .await
            .map_err(|error| self.name_error(error))
    }

    fn name_error(&self, mut error: LlmError) -> LlmError {
        error.provider.get_or_insert_with(|| self.name.clone());
        error
    }
}

/// The tighter of the two time bounds for the connect phase.
fn connect_bound(limits: &TurnLimits) -> Option<(std::time::Duration, LlmError)> {
    let total = limits.total.map(|d| (d, turn_timeout(d)));
    let first = limits.first_event.map(|d| (d, first_event_timeout(d)));
    match (total, first) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shown_base_url_hides_credentials() {
        let endpoint = ProviderEndpoint::new("http://user:pw@127.0.0.1:9/v1?api-key=K");
        assert_eq!(
            endpoint.display_url(),
            "http://***@127.0.0.1:9/v1?api-key=***"
        );
        let debug = format!("{endpoint:?}");
        assert!(!debug.contains("pw") && !debug.contains("=K"), "{debug}");
        // Requests still go to the real one.
        assert_eq!(
            endpoint.url("chat/completions"),
            "http://user:pw@127.0.0.1:9/v1/chat/completions?api-key=K"
        );
    }
}
