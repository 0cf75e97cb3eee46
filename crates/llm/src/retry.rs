//! Retries before the first event: [`LlmRetryConfig`] and what happened,
//! [`RetryMetadata`].
//!
//! A call is retried while the stream is being established: on HTTP 408,
//! 409, 429 and 5xx except 501 (unless the body says the quota is gone), and
//! when the connection fails before any event arrived. Once an event has been
//! delivered nothing is retried: a later failure reaches the consumer.

use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};

/// How retries are made. The defaults: 2 retries, 1 s initial backoff
/// doubling up to 60 s, ±25 % jitter, and at most 30 s spent recovering
/// (counted from the first failure).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LlmRetryConfig {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff.
    pub initial_backoff: Duration,
    /// The largest backoff.
    pub max_backoff: Duration,
    /// The growth per attempt.
    pub backoff_multiplier: f64,
    /// Random spread, as a fraction of the backoff (0.25 = ±25 %).
    pub jitter_factor: f64,
    /// The most time spent recovering, from the first failure.
    pub max_retry_elapsed: Duration,
}

impl Default for LlmRetryConfig {
    fn default() -> Self {
        LlmRetryConfig {
            max_retries: 2,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            backoff_multiplier: 2.0,
            jitter_factor: 0.25,
            max_retry_elapsed: Duration::from_secs(30),
        }
    }
}

impl LlmRetryConfig {
    /// No retries: the first failure reaches the host at once.
    pub fn no_retry() -> Self {
        LlmRetryConfig {
            max_retries: 0,
            ..LlmRetryConfig::default()
        }
    }

    /// With a retry count.
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// With an initial backoff.
    #[must_use]
    pub fn with_initial_backoff(mut self, backoff: Duration) -> Self {
        self.initial_backoff = backoff;
        self
    }

    /// With a recovery budget.
    #[must_use]
    pub fn with_max_retry_elapsed(mut self, budget: Duration) -> Self {
        self.max_retry_elapsed = budget;
        self
    }

    /// The backoff before retry number `attempt` (0-based), jitter included.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let base = self.initial_backoff.as_secs_f64()
            * self
                .backoff_multiplier
                .max(1.0)
                .powi(attempt.min(32) as i32);
        let base = base.min(self.max_backoff.as_secs_f64());
        let jitter = self.jitter_factor.clamp(0.0, 1.0);
        let factor = if jitter > 0.0 {
            rand::rng().random_range(1.0 - jitter..=1.0 + jitter)
        } else {
            1.0
        };
        Duration::from_secs_f64((base * factor).max(0.0))
    }

    /// The wait before retry number `attempt`: the provider's `Retry-After`
    /// when it gave one no longer than `max_backoff`, else [`backoff`](Self::backoff).
    pub fn wait(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        match retry_after {
            Some(wait) if wait <= self.max_backoff => wait,
            _ => self.backoff(attempt),
        }
    }
}

/// True for statuses worth retrying: 408, 409, 429 and 5xx except 501.
pub fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500 | 502..=599)
}

/// What the retry layer did during one call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RetryMetadata {
    /// Retries made (attempts after the first).
    pub attempts: u32,
    /// Time spent waiting between attempts.
    pub total_retry_wait: Duration,
    /// Time from the first failure to the final outcome.
    pub total_retry_elapsed: Duration,
    /// Why each retry happened (`HTTP 429`, `connect error: …`), in order.
    pub reasons: Vec<String>,
    /// The last `Retry-After` the provider sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_retry_after: Option<Duration>,
}

impl RetryMetadata {
    /// True when at least one retry happened.
    pub fn had_retries(&self) -> bool {
        self.attempts > 0
    }
}

/// Parses `Retry-After` (seconds; HTTP dates are not honoured) or
/// `retry-after-ms`.
pub fn parse_retry_after(
    retry_after: Option<&str>,
    retry_after_ms: Option<&str>,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    retry_after
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}
