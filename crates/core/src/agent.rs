//! [`Agent`], its builder, and the [`Runner`] trait.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_driver::{AgentIdentity, ConfigError, Descriptor, Driver, Request};
use futures::future::BoxFuture;

use crate::broker::BrokerConfig;
use crate::id::new_id;
use crate::options::{RunOptions, shared_option_setters};
use crate::result::{Error, RunResult};
use crate::run::{Launch, refused, start};
use crate::sink::ApprovalRouting;
use crate::stream::RunStream;
use crate::thread::{ThreadPlan, ThreadStore};

/// Default time a driver gets to return after cancellation before core
/// drops it (which kills its processes).
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(5);

/// Anything that runs prompts: an [`Agent`], and later a `Thread`.
///
/// `run` is exactly `stream` + drain + `result`: there is one pipeline.
pub trait Runner: Send + Sync {
    /// Start a run with per-call options; returns at once.
    fn stream_with(&self, prompt: &str, options: RunOptions) -> RunStream;

    /// Start a run with the agent's defaults; returns at once.
    fn stream(&self, prompt: &str) -> RunStream {
        self.stream_with(prompt, RunOptions::default())
    }

    /// Run to completion with per-call options.
    fn run_with(
        &self,
        prompt: &str,
        options: RunOptions,
    ) -> BoxFuture<'static, Result<RunResult, Error>> {
        Box::pin(self.stream_with(prompt, options).finish())
    }

    /// Run to completion with the agent's defaults.
    fn run(&self, prompt: &str) -> BoxFuture<'static, Result<RunResult, Error>> {
        self.run_with(prompt, RunOptions::default())
    }
}

/// A configured agent, ready to run. Cheap to clone.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

struct AgentInner {
    driver: Arc<dyn Driver>,
    defaults: RunOptions,
    broker: BrokerConfig,
    cancel_grace: Duration,
    identity: AgentIdentity,
    thread_store: Option<Arc<dyn ThreadStore>>,
    lease_owner: Option<Arc<str>>,
    lease_ttl: Duration,
    resources: Option<Arc<dyn crate::resources::RunResources>>,
    on_recovered: Option<crate::thread::OnRecovered>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("driver", &self.inner.driver.descriptor().driver_type)
            .field("defaults", &self.inner.defaults)
            .finish()
    }
}

impl Agent {
    /// An agent with default settings.
    pub fn new(driver: impl Driver) -> Agent {
        Agent::from_parts(Arc::new(driver), AgentBuilder::settings_default())
    }

    /// Configure an agent.
    pub fn builder(driver: impl Driver) -> AgentBuilder {
        AgentBuilder::new(Arc::new(driver))
    }

    /// Configure an agent around a shared driver.
    pub fn builder_shared(driver: Arc<dyn Driver>) -> AgentBuilder {
        AgentBuilder::new(driver)
    }

    fn from_parts(driver: Arc<dyn Driver>, s: Settings) -> Agent {
        Agent {
            inner: Arc::new(AgentInner {
                driver,
                defaults: s.defaults,
                broker: s.broker,
                cancel_grace: s.cancel_grace,
                identity: s.identity,
                thread_store: s.thread_store,
                lease_owner: s.lease_owner,
                lease_ttl: s.lease_ttl,
                resources: s.resources,
                on_recovered: s.on_recovered,
            }),
        }
    }

    /// The driver's descriptor.
    pub fn descriptor(&self) -> Descriptor {
        self.inner.driver.descriptor()
    }

    /// Stop and reap every provider process the driver keeps between runs
    /// (resident processes of drivers whose descriptor declares
    /// `process.persistent`; see
    /// [`Driver::close_processes`]).
    ///
    /// Call it when the host shuts down, or to release the processes early.
    /// It is idempotent and the agent remains usable: later runs spawn anew.
    /// Runs in progress keep their processes until they end. Clones of this
    /// agent share the driver, so they are affected alike.
    pub async fn close(&self) {
        self.inner.driver.close_processes().await;
    }

    /// Whether runs of this agent's threads have a store (so
    /// [`Agent::thread`] can continue a conversation).
    pub fn has_thread_store(&self) -> bool {
        self.inner.thread_store.is_some()
    }

    /// Check `options` (over the agent's defaults) the way a run is checked
    /// before admission: the driver's configuration, the run policy, and
    /// every instruction, MCP server, skill and profile against what the
    /// driver carries. Nothing starts; a bridge uses it to refuse a session
    /// whose equipment a later run would refuse.
    pub fn preflight(&self, options: &RunOptions) -> Result<(), Error> {
        self.validate()?;
        let opts = options.over(&self.inner.defaults);
        let descriptor = self.inner.driver.descriptor();
        opts.policy.validate(&descriptor)?;
        let mut request = Request::new(new_id("run_"), "");
        crate::equip::equip(
            &opts.equip,
            opts.instructions.as_deref(),
            &descriptor,
            &mut request,
        )
        .map(|_| ())
    }

    fn validate(&self) -> Result<(), Error> {
        let driver = &self.inner.driver;
        match catch_unwind(AssertUnwindSafe(|| driver.validate_config())) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::InvalidDriverConfig(e)),
            Err(_) => Err(Error::InvalidDriverConfig(ConfigError {
                driver: driver.descriptor().driver_type,
                reason: "validate_config panicked".into(),
            })),
        }
    }
}

impl Runner for Agent {
    fn stream_with(&self, prompt: &str, options: RunOptions) -> RunStream {
        self.launch(prompt, options, None)
    }
}

impl Agent {
    /// The configured thread store.
    pub(crate) fn thread_store(&self) -> Option<Arc<dyn ThreadStore>> {
        self.inner.thread_store.clone()
    }

    /// `{instance}@{epoch}`, when the host named this process (see
    /// [`AgentBuilder::lease_owner`]).
    pub(crate) fn lease_owner(&self) -> Option<Arc<str>> {
        self.inner.lease_owner.clone()
    }

    /// How long this agent's thread leases last without renewal (see
    /// [`AgentBuilder::lease_ttl`]).
    pub(crate) fn lease_ttl(&self) -> Duration {
        self.inner.lease_ttl
    }

    /// The host's hook for the runs a thread run recovered (see
    /// [`AgentBuilder::on_recovered`]).
    pub(crate) fn on_recovered(&self) -> Option<crate::thread::OnRecovered> {
        self.inner.on_recovered.clone()
    }

    /// The run resources manager, if the host configured one.
    pub(crate) fn resources(&self) -> Option<Arc<dyn crate::resources::RunResources>> {
        self.inner.resources.clone()
    }

    /// The agent's default working directory.
    pub(crate) fn default_workspace(&self) -> Option<std::path::PathBuf> {
        self.inner.defaults.workspace.clone()
    }

    /// The driver.
    pub(crate) fn driver_arc(&self) -> Arc<dyn Driver> {
        self.inner.driver.clone()
    }

    /// A stream refused before admission.
    pub(crate) fn refuse(&self, e: Error) -> RunStream {
        refused(new_id("run_").into(), e)
    }

    /// Admit one run (of the agent, or of a thread when `thread` is set).
    pub(crate) fn launch(
        &self,
        prompt: &str,
        options: RunOptions,
        thread: Option<ThreadPlan>,
    ) -> RunStream {
        let run_id = new_id("run_");
        if let Err(e) = self.validate() {
            return refused(run_id.into(), e);
        }
        let opts = options.over(&self.inner.defaults);
        let driver = self.inner.driver.clone();
        // The run policy is checked against the driver before anything is
        // started (no lease, no driver call).
        let descriptor = driver.descriptor();
        if let Err(e) = opts.policy.validate(&descriptor) {
            return refused(run_id.into(), e);
        }
        // A workspace the driver would not work in is refused, never dropped.
        let need = self.inner.resources.as_ref().map(|r| r.workspace_need());
        if let Err(e) = crate::resources::check_carried(need.unwrap_or_default(), &descriptor) {
            return refused(run_id.into(), e);
        }
        let mut request = Request::new(run_id, prompt);
        request.driver_managed_workspace =
            need == Some(crate::resources::WorkspaceNeed::DriverManaged);
        // Instructions, MCP servers, skills and profile: each one the driver
        // carries, or a refusal now.
        let equipped = match crate::equip::equip(
            &opts.equip,
            opts.instructions.as_deref(),
            &descriptor,
            &mut request,
        ) {
            Ok(e) => e,
            Err(e) => return refused(request.run_id.as_str().into(), e),
        };
        let mut thread = thread;
        if let Some(plan) = thread.as_mut() {
            plan.equipment = equipped.fingerprint.clone();
        }
        request.streaming = driver.stream_capability().is_some();
        request.model_override = opts.model.clone();
        request.workspace = opts.workspace.clone();
        request.metadata = opts.metadata.clone();
        request.agent = self.inner.identity.clone();
        request.spawn = opts.spawn;
        request.transcript_budget = opts.transcript_budget;
        request.policy = opts.policy.run_policy();
        // Structured output: schema compiled and mechanism chosen before
        // anything is started; a refusal never reaches the driver.
        let structured = match crate::structured::prepare(
            &opts.schema,
            &driver.descriptor(),
            driver.stream_capability().is_some(),
            &mut request,
        ) {
            Ok(s) => s,
            Err(e) => return refused(request.run_id.as_str().into(), e),
        };
        start(Launch {
            driver,
            request,
            timeout: opts.timeout,
            approvals: ApprovalRouting {
                handler: opts.on_approval.clone(),
                policy: crate::policy::Effective::resolve(
                    &opts.policy.approvals,
                    &descriptor.run_policy,
                ),
                clock: opts
                    .policy
                    .active_execution_timeout
                    .map(|budget| Arc::new(crate::policy::ActiveClock::new(budget))),
                thread: thread.as_ref().map(ThreadPlan::grants),
            },
            broker: self.inner.broker,
            cancel_grace: self.inner.cancel_grace,
            thread_key: thread.as_ref().map(|t| t.key.clone()),
            thread,
            structured,
            skills: equipped.skills,
            resources: self.inner.resources.clone(),
        })
    }
}

struct Settings {
    defaults: RunOptions,
    broker: BrokerConfig,
    cancel_grace: Duration,
    identity: AgentIdentity,
    thread_store: Option<Arc<dyn ThreadStore>>,
    lease_owner: Option<Arc<str>>,
    lease_ttl: Duration,
    resources: Option<Arc<dyn crate::resources::RunResources>>,
    on_recovered: Option<crate::thread::OnRecovered>,
}

/// Builds an [`Agent`]: construction-only settings plus the shared options
/// as defaults for every run.
pub struct AgentBuilder {
    driver: Arc<dyn Driver>,
    settings: Settings,
}

impl AgentBuilder {
    fn settings_default() -> Settings {
        Settings {
            defaults: RunOptions::default(),
            broker: BrokerConfig::default(),
            cancel_grace: DEFAULT_CANCEL_GRACE,
            identity: AgentIdentity::default(),
            thread_store: None,
            lease_owner: None,
            lease_ttl: crate::thread::LEASE_TTL,
            resources: None,
            on_recovered: None,
        }
    }

    fn new(driver: Arc<dyn Driver>) -> Self {
        AgentBuilder {
            driver,
            settings: Self::settings_default(),
        }
    }

    /// Buffer for ordinary events (default 1024, at least 1). Terminal
    /// events have reserved capacity on top of this.
    pub fn event_buffer(mut self, events: usize) -> Self {
        self.settings.broker.buffer = events;
        self
    }

    /// Never drop events: a slow consumer applies backpressure to the driver.
    pub fn blocking_events(mut self) -> Self {
        self.settings.broker.blocking = true;
        self
    }

    /// How long a driver may take to return after cancellation (default 5 s).
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.settings.cancel_grace = grace;
        self
    }

    /// The host's identity for this agent (passed to the driver).
    pub fn identity(mut self, identity: AgentIdentity) -> Self {
        self.settings.identity = identity;
        self
    }

    /// Where threads are kept (needed by [`Agent::thread`] runs).
    pub fn thread_store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.settings.thread_store = Some(store);
        self
    }

    /// Name the process that holds this agent's thread leases: `instance`
    /// is stable across restarts of one server (e.g. `host:port`), `epoch`
    /// differs on every start (e.g. its start time). Lease owners become
    /// `{instance}@{epoch}/{run id}` and keep the run's prompt, so after a
    /// crash the next start calls
    /// [`ThreadStore::recover_instance`]
    /// with the same instance and a new epoch: the dead process's threads
    /// are usable at once (instead of after the 5-minute lease TTL) and
    /// each interrupted run is recorded with its prompt. Neither may hold
    /// `@` or `/` (`build` refuses them).
    pub fn lease_owner(mut self, instance: &str, epoch: &str) -> Self {
        self.settings.lease_owner = Some(Arc::from(format!("{instance}@{epoch}")));
        self
    }

    /// When a thread run takes over its key's expired lease, record the run
    /// that held it as interrupted in the same store step
    /// ([`ThreadStore::take_run_lease`]) and hand it to `hook` (a server
    /// logs it, records it in the thread's log and fails its bridge task).
    /// Without it a run takes an expired lease over without recording the
    /// run that held it; a host sweeping the store on a timer still records
    /// those it gets to first. With a store that cannot record takeovers,
    /// every expired lease is recovered first
    /// ([`ThreadStore::recover_expired`]); failures of that are logged and
    /// the run goes on.
    pub fn on_recovered(mut self, hook: crate::thread::OnRecovered) -> Self {
        self.settings.on_recovered = Some(hook);
        self
    }

    /// How long a thread lease lasts without renewal (default
    /// [`LEASE_TTL`](crate::thread::LEASE_TTL)); a running thread renews
    /// it every third of that. A host whose process dies holds its threads
    /// this long unless it recovers them (see
    /// [`ThreadStore::recover_expired`]); a shorter TTL frees them sooner
    /// and costs more renewals. `build` refuses a TTL under 1 s.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.settings.lease_ttl = ttl;
        self
    }

    /// A manager of run resources (a git worktree per thread or run,
    /// runtime services): each run's workspace and services are made ready
    /// before the driver is called, released after, and reported in
    /// [`RunResult::workspace`](crate::RunResult::workspace) and
    /// [`RunResult::services`](crate::RunResult::services).
    pub fn resources(mut self, resources: Arc<dyn crate::resources::RunResources>) -> Self {
        self.settings.resources = Some(resources);
        self
    }

    /// Use `options` as the defaults for every run (replacing earlier ones).
    pub fn defaults(mut self, options: RunOptions) -> Self {
        self.settings.defaults = options;
        self
    }

    /// Build the agent. Fails on an out-of-range setting.
    pub fn build(self) -> Result<Agent, Error> {
        if let Some(owner) = &self.settings.lease_owner {
            let (instance, epoch) = owner.split_once('@').unwrap_or((owner, ""));
            if let Err(e) = crate::thread::store::recovery_prefixes(instance, epoch) {
                return Err(Error::InvalidOption {
                    option: "lease_owner",
                    reason: e.to_string(),
                });
            }
        }
        if self.settings.lease_ttl < Duration::from_secs(1) {
            return Err(Error::InvalidOption {
                option: "lease_ttl",
                reason: format!("{:?} is under 1 s", self.settings.lease_ttl),
            });
        }
        if self.settings.broker.buffer == 0 {
            return Err(Error::InvalidOption {
                option: "event_buffer",
                reason: "must be at least 1".into(),
            });
        }
        Ok(Agent::from_parts(self.driver, self.settings))
    }
}

shared_option_setters!(AgentBuilder, |b| &mut b.settings.defaults);
