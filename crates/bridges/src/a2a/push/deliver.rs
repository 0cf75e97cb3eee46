//! Delivery: a task's status changes, queued without blocking the run, then
//! POSTed in order to every config of the task, with retries.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, USER_AGENT};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use super::config::TaskPushNotificationConfig;
use super::policy::{PushRefusal, Target};
use super::sign::{DELIVERY_HEADER, SIGNATURE_HEADER, TOKEN_HEADER, signature_header};
use super::{PushSettings, Pusher};
use crate::a2a::types::{StreamResponse, TaskStatusUpdateEvent};

/// The content type of a delivery (a `StreamResponse` as JSON).
const CONTENT: &str = "application/a2a+json";

/// One task's hook: [`status_changed`](Self::status_changed) is called
/// under the task's lock for every status change, in order.
pub(crate) struct TaskPush {
    task_id: String,
    seq: AtomicU64,
    tx: mpsc::UnboundedSender<Job>,
    pusher: Arc<Pusher>,
}

struct Job {
    seq: u64,
    event: TaskStatusUpdateEvent,
    /// Holds one place of the server's bounded queue until delivered.
    _permit: OwnedSemaphorePermit,
}

impl TaskPush {
    /// The hook of task `task_id`, with its delivery worker.
    pub(crate) fn new(pusher: Arc<Pusher>, task_id: &str) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(worker(pusher.clone(), task_id.to_owned(), rx));
        TaskPush {
            task_id: task_id.to_owned(),
            seq: AtomicU64::new(0),
            tx,
            pusher,
        }
    }

    /// Queue `event` for delivery; never waits. A full queue drops it (and
    /// says so in the log).
    pub(crate) fn status_changed(&self, event: &TaskStatusUpdateEvent) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let Ok(permit) = self.pusher.queue.clone().try_acquire_owned() else {
            tracing::warn!(
                task = %self.task_id,
                seq,
                "a2a push: the delivery queue is full; this status change is not pushed"
            );
            return;
        };
        let job = Job {
            seq,
            event: event.clone(),
            _permit: permit,
        };
        // The worker ends only after a terminal change: nothing is lost.
        let _ = self.tx.send(job);
    }
}

/// Deliver the task's changes one after the other (each to every config at
/// once); end after the terminal one.
async fn worker(pusher: Arc<Pusher>, task_id: String, mut rx: mpsc::UnboundedReceiver<Job>) {
    while let Some(job) = rx.recv().await {
        let terminal = job.event.status.state.is_terminal();
        let configs = match pusher.configs(&task_id).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(task = %task_id, seq = job.seq, error = %e,
                    "a2a push: cannot read the task's push configs; this change is not pushed");
                Vec::new()
            }
        };
        if !configs.is_empty() {
            let body = StreamResponse::StatusUpdate(job.event.clone());
            match serde_json::to_vec(&body) {
                Ok(body) => {
                    let delivery = format!("{task_id}:{}", job.seq);
                    let sends = configs
                        .iter()
                        .map(|c| deliver(&pusher, &delivery, &body, c));
                    futures::future::join_all(sends).await;
                }
                Err(e) => tracing::warn!(task = %task_id, error = %e, "a2a push: cannot encode"),
            }
        }
        drop(job);
        if terminal {
            break;
        }
    }
}

/// Most delivery clients kept; more empties the cache.
const MAX_CLIENTS: usize = 256;

/// Delivery clients, one per pinned target (the URL's DNS name, if any,
/// and the checked address it must connect to): a webhook's connections
/// are reused while its address stays the one checked.
#[derive(Default)]
pub(crate) struct Clients(Mutex<HashMap<(Option<String>, SocketAddr), reqwest::Client>>);

impl Clients {
    /// The client connecting to `target`'s checked address only.
    fn client(
        &self,
        target: &Target,
        settings: &PushSettings,
    ) -> Result<reqwest::Client, reqwest::Error> {
        let key = (target.domain.clone(), target.addr);
        let mut clients = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.timeout);
        if let Some(domain) = &target.domain {
            // Connect to the checked address: no second resolution.
            builder = builder.resolve(domain, target.addr);
        }
        let client = builder.build()?;
        if clients.len() >= MAX_CLIENTS {
            clients.clear();
        }
        clients.insert(key, client.clone());
        Ok(client)
    }
}

/// How one attempt ended.
enum Attempt {
    Delivered(StatusCode),
    /// Worth another try (connect error, timeout, 5xx, 429).
    Retry(String),
    /// Not worth another try (refused URL, redirect, other 4xx).
    GiveUp(String),
}

/// POST `body` to `config` until delivered, refused, or out of attempts.
async fn deliver(
    pusher: &Pusher,
    delivery: &str,
    body: &[u8],
    config: &TaskPushNotificationConfig,
) {
    let attempts = pusher.settings.attempts.max(1);
    for attempt in 1..=attempts {
        let (origin, outcome) = attempt_once(pusher, delivery, body, config).await;
        let why = match outcome {
            Attempt::Delivered(status) => {
                tracing::debug!(delivery, config = %config.id, %origin, attempt,
                    status = status.as_u16(), "a2a push: delivered");
                return;
            }
            Attempt::GiveUp(why) => {
                tracing::warn!(delivery, config = %config.id, %origin, attempt, reason = %why,
                    "a2a push: delivery failed; not retried");
                return;
            }
            Attempt::Retry(why) => why,
        };
        if attempt == attempts {
            tracing::warn!(delivery, config = %config.id, %origin, attempt, reason = %why,
                "a2a push: delivery failed; no attempts left");
            return;
        }
        tracing::debug!(delivery, config = %config.id, %origin, attempt, reason = %why,
            "a2a push: delivery failed; retrying");
        tokio::time::sleep(backoff(pusher.settings.first_retry, attempt)).await;
    }
}

/// The wait after failed attempt `n` (1-based): `first · 2^(n-1)`, at most
/// a minute, with "equal jitter" (between half and all of it).
fn backoff(first: Duration, n: u32) -> Duration {
    let full = first
        .saturating_mul(1u32 << n.saturating_sub(1).min(16))
        .min(Duration::from_secs(60));
    let half = full / 2;
    half + half.mul_f64(rand::random::<f64>())
}

/// One attempt; also returns what the log may show of the URL.
async fn attempt_once(
    pusher: &Pusher,
    delivery: &str,
    body: &[u8],
    config: &TaskPushNotificationConfig,
) -> (String, Attempt) {
    let target = match pusher.policy.check(&config.url).await {
        Ok(t) => t,
        Err(refusal @ PushRefusal::Unresolvable(_)) => {
            return ("-".into(), Attempt::Retry(refusal.to_string()));
        }
        Err(refusal) => return ("-".into(), Attempt::GiveUp(refusal.to_string())),
    };
    let origin = target.origin.clone();
    let client = match pusher.clients.client(&target, &pusher.settings) {
        Ok(c) => c,
        Err(e) => return (origin, Attempt::GiveUp(e.without_url().to_string())),
    };
    let t = chrono::Utc::now().timestamp();
    let mut request = client
        .post(target.url)
        .header(CONTENT_TYPE, CONTENT)
        .header(
            USER_AGENT,
            concat!("agent-adaptor/", env!("CARGO_PKG_VERSION")),
        )
        .header(
            SIGNATURE_HEADER,
            signature_header(&pusher.settings.secret, t, body),
        )
        .header(DELIVERY_HEADER, delivery);
    // Checked at registration: valid header values.
    if !config.token.is_empty()
        && let Ok(v) = HeaderValue::from_str(&config.token)
    {
        request = request.header(TOKEN_HEADER, sensitive(v));
    }
    if let Some(auth) = &config.authentication
        && let Ok(v) = HeaderValue::from_str(&format!("{} {}", auth.scheme, auth.credentials))
    {
        request = request.header(AUTHORIZATION, sensitive(v));
    }
    let outcome = match request.body(body.to_vec()).send().await {
        Err(e) if e.is_timeout() => Attempt::Retry("timed out".into()),
        Err(e) => Attempt::Retry(e.without_url().to_string()),
        Ok(response) => {
            let status = response.status();
            if status.is_success() {
                Attempt::Delivered(status)
            } else if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
                Attempt::Retry(format!("HTTP {}", status.as_u16()))
            } else if status.is_redirection() {
                Attempt::GiveUp(format!(
                    "HTTP {} (redirects are not followed)",
                    status.as_u16()
                ))
            } else {
                Attempt::GiveUp(format!("HTTP {}", status.as_u16()))
            }
        }
    };
    (origin, outcome)
}

fn sensitive(mut v: HeaderValue) -> HeaderValue {
    v.set_sensitive(true);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let first = Duration::from_secs(2);
        for n in 1..=5u32 {
            let full = first * (1 << (n - 1));
            let d = backoff(first, n);
            assert!(d >= full / 2 && d <= full, "attempt {n}: {d:?}");
        }
        assert!(backoff(first, 40) <= Duration::from_secs(60));
    }
}
