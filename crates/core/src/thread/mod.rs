//! Threads: durable conversations under a host-owned key (streaming guide
//! §6, driver contract §9).
//!
//! ```
//! use std::sync::Arc;
//! use agent_adaptor_core::{Agent, Runner, thread::MemoryStore};
//! use agent_adaptor_core::scripted::ScriptedDriver;
//! use agent_adaptor_driver::StandardSessionCodec;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let driver = ScriptedDriver::resumable_reply("hello", "session-1");
//! let agent = Agent::builder(driver)
//!     .thread_store(Arc::new(MemoryStore::new()))
//!     .build()
//!     .unwrap();
//! let thread = agent.thread("tenant-7/conversation-42");
//! thread.run("first turn").await.unwrap();
//! let state = thread.checkpoint().await.unwrap().expect("a healthy turn is resumable");
//! assert_eq!(state.resume_id, "session-1");
//! # }
//! ```
//!
//! A thread run resolves the key's record, takes the key's lease (one
//! writer at a time; a second concurrent run fails fast with `Busy`), hands
//! the driver the resume state when the record is compatible, and — only
//! when the run succeeded with a checkpoint that passed core's validation —
//! atomically archives the old record and saves the new one. A failed run
//! never replaces the active record.
//!
//! A thread can also keep every event of its runs: [`Thread::record_events`]
//! appends them to the store's event log (see [`event_log`]), read back
//! with [`ThreadStore::events`].

mod delete;
pub use delete::{delete, delete_with_ttl};
pub mod durable;
pub(crate) mod error;
pub mod event_log;
pub(crate) mod grants;
mod memory_durable;
pub(crate) mod recorder;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_driver::{
    Driver, Request, SessionCodec, SessionContext, SessionMode, SessionState,
    canonical_session_config_fingerprint,
};
use chrono::Utc;

use crate::agent::Agent;
use crate::control::{RunControl, StopReason};
use crate::options::RunOptions;
use crate::result::Error;
use crate::stream::RunStream;
use crate::{Runner, id};
pub use error::{Mismatch, ThreadError};
pub use event_log::{
    EventPage, EventQuery, EventWindow, NewEvent, RecordedEvent, Retention, StoredEventRow,
};
pub use store::{
    FinalizeRequest, InterruptedRun, Lease, MemoryStore, RecordStatus, StoreError, TakenLease,
    ThreadPolicy, ThreadRecord, ThreadStore, check_tool_name, recovery_prefixes,
};

/// How long a thread lease lasts without renewal, unless the agent sets
/// its own ([`AgentBuilder::lease_ttl`](crate::AgentBuilder::lease_ttl)).
pub const LEASE_TTL: Duration = Duration::from_secs(300);
/// A host's hook for the runs a thread run recovered before taking its
/// lease (see [`AgentBuilder::on_recovered`](crate::AgentBuilder::on_recovered)).
pub type OnRecovered = Arc<dyn Fn(Vec<InterruptedRun>) + Send + Sync>;

/// How often a running thread renews a [`LEASE_TTL`] lease: every third
/// of its TTL.
pub const LEASE_RENEW: Duration = Duration::from_secs(100);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// Continue a compatible record; over an incompatible one start a fresh
    /// session (with a `thread.session_replaced` notice), or refuse when
    /// `strict`.
    ContinueOrStart {
        strict: bool,
    },
    ContinueOnly,
    /// Always a fresh session; the record it replaces is archived when the
    /// run saves its own.
    NewSession,
    Fork {
        parent: Arc<str>,
    },
}

/// A durable conversation under an opaque host key. Same [`Runner`] as an
/// [`Agent`]; holds no resources between runs.
#[derive(Debug, Clone)]
pub struct Thread {
    agent: Agent,
    key: Arc<str>,
    mode: Mode,
    tools: Vec<crate::tools::Tool>,
    recording: Option<Retention>,
}

impl Thread {
    pub(crate) fn new(agent: Agent, key: Arc<str>) -> Self {
        Thread {
            agent,
            key,
            mode: Mode::ContinueOrStart { strict: false },
            tools: Vec::new(),
            recording: None,
        }
    }

    /// Record every event of every run of this thread in the store's
    /// event log (see [`event_log`]), pruning it by `retention` after each
    /// run. A failed write fails the run with [`ThreadError::EventLog`].
    #[must_use]
    pub fn record_events(mut self, retention: Retention) -> Self {
        self.recording = Some(retention);
        self
    }

    /// Give every run of this thread a host tool (over the agent's, under
    /// the run's; by name). See [`Tool`](crate::Tool).
    #[must_use]
    pub fn tool(mut self, tool: crate::tools::Tool) -> Self {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
        self
    }

    /// The host's key, verbatim.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Only continue an existing record: a missing key fails with
    /// [`ThreadError::NotFound`], an incompatible one with `Incompatible`.
    pub fn resume_only(mut self) -> Self {
        self.mode = Mode::ContinueOnly;
        self
    }

    /// Refuse, instead of silently starting over, when the key's record was
    /// written by an incompatible agent (another driver, configuration,
    /// model, workspace or equipment): the run fails with
    /// [`ThreadError::Incompatible`] (carrying a [`Mismatch`]) before the
    /// lease is taken and the driver is called. Without it such a run
    /// starts a fresh session and emits a `thread.session_replaced`
    /// notice ([`notice_kind::THREAD_SESSION_REPLACED`](crate::notice_kind::THREAD_SESSION_REPLACED)).
    #[must_use]
    pub fn refuse_incompatible(mut self) -> Self {
        if let Mode::ContinueOrStart { strict } = &mut self.mode {
            *strict = true;
        }
        self
    }

    /// Start a fresh provider session under this key even when the stored
    /// one is compatible; the replaced record is archived when the run
    /// saves its own, and a `thread.session_replaced` notice says so.
    #[must_use]
    pub fn new_session(mut self) -> Self {
        self.mode = Mode::NewSession;
        self
    }

    /// A new thread under `new_key` that starts from this thread's state.
    /// This thread is untouched; the fork fails if `new_key` already exists.
    pub fn fork(&self, new_key: impl Into<String>) -> Thread {
        Thread {
            agent: self.agent.clone(),
            key: new_key.into().into(),
            mode: Mode::Fork {
                parent: self.key.clone(),
            },
            tools: self.tools.clone(),
            recording: self.recording,
        }
    }

    /// The active record's resume state, decoded by the driver's codec
    /// (for audit; runs resolve it themselves).
    pub async fn checkpoint(&self) -> Result<Option<SessionState>, Error> {
        let plan = self.plan()?;
        let record = plan
            .store
            .resolve(&self.key, false)
            .await
            .map_err(|e| Error::Thread(ThreadError::Store(e)))?;
        match record {
            None => Ok(None),
            Some(r) if r.codec != plan.codec.name() => {
                Err(Error::Thread(ThreadError::Incompatible {
                    reason: format!("record written by codec {:?}", r.codec),
                    record: None,
                }))
            }
            Some(r) => Ok(plan.codec.from_params(&r.params)),
        }
    }

    /// Everything a thread run needs that can be checked before admission:
    /// a store, and a driver that can resume (codec + config fingerprint).
    fn plan(&self) -> Result<ThreadPlan, Error> {
        let store = self
            .agent
            .thread_store()
            .ok_or(Error::ThreadStoreRequired)?;
        let driver = self.agent.driver();
        let incompatible = |reason: &str| {
            Error::Thread(ThreadError::Incompatible {
                reason: reason.to_owned(),
                record: None,
            })
        };
        if !driver.descriptor().sessions.supports_resume {
            return Err(incompatible("the driver does not support resume"));
        }
        let codec = driver
            .session_codec()
            .ok_or_else(|| incompatible("the driver has no session codec"))?;
        let config = match driver.session_config_fingerprint() {
            Some(Ok(fp)) if !fp.is_empty() => fp,
            Some(Err(e)) => return Err(incompatible(&e.to_string())),
            _ => return Err(incompatible("the driver has no config fingerprint")),
        };
        Ok(ThreadPlan {
            store,
            owner: self.agent.lease_owner(),
            lease_ttl: self.agent.lease_ttl(),
            on_recovered: self.agent.on_recovered(),
            key: self.key.clone(),
            mode: self.mode.clone(),
            driver_type: driver.descriptor().driver_type,
            config_fingerprint: config,
            codec,
            equipment: String::new(),
            recording: self.recording,
        })
    }
}

impl Runner for Thread {
    fn stream_with(&self, prompt: &str, mut options: RunOptions) -> RunStream {
        options.equip.tools = crate::tools::merge(&options.equip.tools, &self.tools);
        match self.plan() {
            Ok(plan) => self.agent.launch(prompt, options, Some(plan)),
            Err(e) => self.agent.refuse(e),
        }
    }
}

/// A thread run's plan, checked before admission.
pub(crate) struct ThreadPlan {
    store: Arc<dyn ThreadStore>,
    /// `{instance}@{epoch}` of the process, when the host named it.
    owner: Option<Arc<str>>,
    /// How long the lease lasts without renewal.
    lease_ttl: Duration,
    /// The host's hook for recovered runs (recovery before the lease).
    on_recovered: Option<OnRecovered>,
    pub(crate) key: Arc<str>,
    mode: Mode,
    driver_type: String,
    config_fingerprint: String,
    codec: Arc<dyn SessionCodec>,
    /// The fingerprint of the run's durable equipment (instructions
    /// bundle, MCP servers, skills, profile), set at launch.
    pub(crate) equipment: String,
    /// Record the run's events, with this retention.
    recording: Option<Retention>,
}

/// A thread run in progress: the lease is held.
pub(crate) struct ActiveThread {
    plan: ThreadPlan,
    lease: Lease,
    fingerprint: String,
    previous: Option<String>,
    /// The record this run's fresh session replaces, and why (for the
    /// `thread.session_replaced` notice).
    pub(crate) replaced: Option<Replaced>,
}

/// A record a fresh session replaces.
pub(crate) struct Replaced {
    /// The record.
    pub(crate) record: Mismatch,
    /// Why it is not continued.
    pub(crate) why: String,
}

impl Replaced {
    /// The notice's text and data.
    pub(crate) fn notice(&self) -> (String, serde_json::Value) {
        let r = &self.record;
        let text = format!(
            "thread {}: a new session starts; the previous {} session ({}) is archived when this run succeeds ({})",
            r.key, r.record_driver, r.record_id, self.why
        );
        let data = serde_json::json!({
            "key": r.key,
            "archived_record_id": r.record_id,
            "driver_type": r.record_driver,
            "new_driver_type": r.driver,
            "differs": r.differs,
            "reason": self.why,
        });
        (text, data)
    }
}

/// What resolving the key gave: the run's session, the record it follows,
/// the record a fresh session replaces.
struct Resolved {
    session: SessionContext,
    previous: Option<String>,
    replaced: Option<Replaced>,
}

impl ThreadPlan {
    /// What the run's recorder needs, when the thread records its events.
    pub(crate) fn recorder_spec(
        &self,
        run_id: &Arc<str>,
        prompt: &str,
    ) -> Option<recorder::RecorderSpec> {
        let retention = self.recording?;
        Some(recorder::RecorderSpec {
            store: self.store.clone(),
            key: self.key.clone(),
            run_id: run_id.clone(),
            prompt: prompt.to_owned(),
            retention,
        })
    }

    /// The compatibility fingerprint: driver, its configuration, the
    /// model, the workspace, the codec and the durable equipment (when the
    /// run has any, so records written without equipment stay compatible).
    fn fingerprint(&self, request: &Request) -> String {
        let mut value = serde_json::json!({
            "driver": self.driver_type,
            "config": self.config_fingerprint,
            "model": request.model_override,
            "workspace": request.workspace,
            "codec": self.codec.name(),
        });
        if !self.equipment.is_empty() {
            value["equipment"] = serde_json::Value::String(self.equipment.clone());
        }
        canonical_session_config_fingerprint("agent-adaptor/thread-compat/v1", &value)
            .unwrap_or_else(|_| self.config_fingerprint.clone())
    }

    /// Take the lease and resolve the record into the request's session.
    pub(crate) async fn begin(self, request: &mut Request) -> Result<ActiveThread, ThreadError> {
        let target = format!("key:{}", self.key);
        let owner = self.holder(&request.run_id);
        let fingerprint = self.fingerprint(request);
        // A strict thread refuses an incompatible record before it takes
        // the lease (and again under it, below, should the record change).
        if matches!(self.mode, Mode::ContinueOrStart { strict: true }) {
            self.resolve(&fingerprint).await?;
        }
        let lease = self
            .take_lease(&target, &owner, &request.prompt)
            .await
            .map_err(|e| ThreadError::from_store(e, &self.key))?;
        let resolved = self.resolve(&fingerprint).await;
        match resolved {
            Ok(r) => {
                request.session = Some(r.session);
                Ok(ActiveThread {
                    plan: self,
                    lease,
                    fingerprint,
                    previous: r.previous,
                    replaced: r.replaced,
                })
            }
            Err(e) => {
                let _ = self.store.release_lease(&lease).await;
                Err(e)
            }
        }
    }

    /// Take the key's lease. With an `on_recovered` hook, an expired lease
    /// taken over is recorded in the same step and handed to the hook (a
    /// store that cannot do that recovers every expired lease first).
    async fn take_lease(
        &self,
        target: &str,
        owner: &str,
        prompt: &str,
    ) -> Result<Lease, StoreError> {
        let Some(hook) = &self.on_recovered else {
            return self
                .store
                .acquire_run_lease(target, owner, self.lease_ttl, prompt)
                .await;
        };
        match self
            .store
            .take_run_lease(target, owner, self.lease_ttl, prompt)
            .await
        {
            Ok(taken) => {
                if let Some(run) = taken.displaced {
                    hook(vec![run]);
                }
                return Ok(taken.lease);
            }
            Err(StoreError::Unsupported(_)) => {}
            Err(e) => return Err(e),
        }
        match self.store.recover_expired().await {
            Ok(runs) if !runs.is_empty() => hook(runs),
            Ok(_) | Err(StoreError::Unsupported(_)) => {}
            Err(e) => {
                tracing::warn!(error = %e, "recovering expired leases failed; taking the lease as is")
            }
        }
        self.store
            .acquire_run_lease(target, owner, self.lease_ttl, prompt)
            .await
    }

    /// The owner run `run_id` takes the key's lease with:
    /// `{instance}@{epoch}/{run id}`, or the run id alone when the host
    /// did not name its process.
    pub(crate) fn holder(&self, run_id: &str) -> String {
        match &self.owner {
            Some(process) => format!("{process}/{run_id}"),
            None => run_id.to_owned(),
        }
    }

    /// What differs between `record` and this run.
    fn mismatch(&self, record: &ThreadRecord) -> Mismatch {
        let mut differs = Vec::new();
        if record.driver_type != self.driver_type {
            differs.push("driver");
        }
        if record.codec != self.codec.name() {
            differs.push("codec");
        }
        if differs.is_empty() {
            differs.push("configuration");
        }
        Mismatch {
            key: self.key.to_string(),
            record_id: record.id.clone(),
            record_driver: record.driver_type.clone(),
            driver: self.driver_type.clone(),
            differs,
        }
    }

    async fn resolve(&self, fingerprint: &str) -> Result<Resolved, ThreadError> {
        let (source, include_archived, mode) = match &self.mode {
            Mode::ContinueOrStart { .. } | Mode::NewSession => {
                (self.key.clone(), false, SessionMode::ContinueOrStart)
            }
            Mode::ContinueOnly => (self.key.clone(), false, SessionMode::ContinueOnly),
            Mode::Fork { parent } => (parent.clone(), true, SessionMode::Fork),
        };
        let record = self
            .store
            .resolve(&source, include_archived)
            .await
            .map_err(ThreadError::Store)?;
        let compatible = record
            .as_ref()
            .is_some_and(|r| r.fingerprint == fingerprint && r.codec == self.codec.name());
        let mut session = SessionContext {
            mode,
            ..Default::default()
        };
        let incompatible = |r: &ThreadRecord| {
            let m = self.mismatch(r);
            ThreadError::Incompatible {
                reason: m.describe(),
                record: Some(Box::new(m)),
            }
        };
        let fresh = |session, record: Mismatch, why: String| Resolved {
            session,
            previous: Some(record.record_id.clone()),
            replaced: Some(Replaced { record, why }),
        };
        match (&self.mode, record) {
            (Mode::ContinueOnly | Mode::Fork { .. }, None) => Err(ThreadError::NotFound {
                key: source.to_string(),
            }),
            (Mode::ContinueOnly | Mode::Fork { .. }, Some(r)) if !compatible => {
                Err(incompatible(&r))
            }
            (Mode::Fork { .. }, Some(r)) => {
                session.state = self.codec.from_params(&r.params);
                session.previous_id = r.id;
                Ok(Resolved {
                    session,
                    previous: None,
                    replaced: None,
                })
            }
            (Mode::NewSession, Some(r)) => {
                let mut m = self.mismatch(&r);
                let why = if compatible {
                    m.differs.clear();
                    "a new session was asked for".to_owned()
                } else {
                    m.describe()
                };
                Ok(fresh(session, m, why))
            }
            (_, Some(r)) if compatible => {
                session.state = self.codec.from_params(&r.params);
                session.previous_id = r.id.clone();
                Ok(Resolved {
                    session,
                    previous: Some(r.id),
                    replaced: None,
                })
            }
            (Mode::ContinueOrStart { strict: true }, Some(r)) => Err(incompatible(&r)),
            // Incompatible under continue-or-start: a fresh provider session;
            // the old record is archived when the new one is saved.
            (_, Some(r)) => {
                let m = self.mismatch(&r);
                let why = m.describe();
                Ok(fresh(session, m, why))
            }
            (_, None) => Ok(Resolved {
                session,
                previous: None,
                replaced: None,
            }),
        }
    }
}

impl ActiveThread {
    /// Renew the lease until the run ends; on failure stop the run so that
    /// nothing is persisted.
    pub(crate) async fn keep_alive(&self, control: &RunControl) {
        let mut lease = self.lease.clone();
        loop {
            let ttl = self.plan.lease_ttl;
            tokio::time::sleep(ttl / 3).await;
            match self.plan.store.renew_lease(&lease, ttl).await {
                Ok(l) => lease = l,
                Err(_) => {
                    control.stop(StopReason::LeaseLost(self.plan.key.to_string()));
                    return std::future::pending().await;
                }
            }
        }
    }

    /// Persist a successful run's validated checkpoint (atomic); release
    /// the lease either way.
    pub(crate) async fn finish(
        self,
        checkpoint: Option<&SessionState>,
        persist: bool,
    ) -> Result<(), ThreadError> {
        let outcome = match (persist, checkpoint) {
            (false, _) => Ok(()),
            (true, None) => Err(ThreadError::CheckpointMissing),
            (true, Some(state)) => {
                let now = Utc::now();
                let record = ThreadRecord {
                    id: id::new_id("thr_"),
                    key: self.plan.key.to_string(),
                    status: RecordStatus::Active,
                    driver_type: self.plan.driver_type.clone(),
                    fingerprint: self.fingerprint.clone(),
                    codec: self.plan.codec.name().to_owned(),
                    params: self.plan.codec.to_params(Some(state)),
                    previous_id: self.previous.clone(),
                    created_at: now,
                    updated_at: now,
                };
                let request = FinalizeRequest {
                    lease: self.lease.clone(),
                    record,
                    require_key_absent: matches!(self.plan.mode, Mode::Fork { .. }),
                };
                self.plan
                    .store
                    .finalize(request)
                    .await
                    .map(|_| ())
                    .map_err(|e| ThreadError::from_store(e, &self.plan.key))
            }
        };
        let _ = self.plan.store.release_lease(&self.lease).await;
        outcome
    }
}

impl Agent {
    /// A durable conversation under `key` (needs a thread store).
    pub fn thread(&self, key: impl Into<String>) -> Thread {
        Thread::new(self.clone(), key.into().into())
    }

    fn driver(&self) -> Arc<dyn Driver> {
        self.driver_arc()
    }
}
