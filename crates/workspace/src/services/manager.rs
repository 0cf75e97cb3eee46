//! [`ServiceManager`]: ensure the services a run needs before launch, reuse
//! them by labels, release them by run or label, and report what was seen.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_adaptor_driver::RuntimeServiceReport;
use tokio::sync::Mutex;

use super::child::Child;
use super::ready::Probe;
use super::spec::{Lifecycle, ServiceError, ServiceSpec};

/// A service a run got from [`ServiceManager::ensure`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRef {
    /// The service's name.
    pub name: String,
    /// Where it listens (the readiness address).
    pub address: String,
    /// True when an already running service was reused.
    pub reused: bool,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

impl ServiceRef {
    /// What the run observed, for `RunResult::services()` (no env, no secrets).
    pub fn report(&self) -> RuntimeServiceReport {
        let mut metadata = self.labels.clone();
        metadata.insert("reused".into(), self.reused.to_string());
        RuntimeServiceReport {
            name: self.name.clone(),
            status: "running".into(),
            endpoint: Some(self.address.clone()),
            health: "healthy".into(),
            metadata,
        }
    }
}

struct Running {
    name: String,
    address: String,
    labels: BTreeMap<String, String>,
    lifecycle: Lifecycle,
    runs: BTreeSet<String>,
    child: Arc<Child>,
}

impl Running {
    fn is(&self, spec: &ServiceSpec) -> bool {
        self.name == spec.name && self.labels == spec.labels
    }

    fn service_ref(&self, reused: bool) -> ServiceRef {
        ServiceRef {
            name: self.name.clone(),
            address: self.address.clone(),
            reused,
            labels: self.labels.clone(),
        }
    }
}

/// A labelled service's identity: its name and labels.
type Key = (String, BTreeMap<String, String>);

/// Starts, reuses and stops runtime services. Cheap to clone; dropping the
/// last clone stops every service it started.
///
/// The list of running services is locked only to read or change it, never
/// while a service starts or is waited for: different services start
/// concurrently. A labelled service starts under a gate of its own (name
/// and labels), so concurrent runs asking for it start it once.
#[derive(Clone, Default)]
pub struct ServiceManager {
    running: Arc<Mutex<Vec<Running>>>,
    gates: Arc<std::sync::Mutex<HashMap<Key, Arc<Mutex<()>>>>>,
}

impl std::fmt::Debug for ServiceManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceManager").finish_non_exhaustive()
    }
}

impl ServiceManager {
    /// A manager with no services.
    pub fn new() -> Self {
        ServiceManager::default()
    }

    /// Ensure every service in `specs` runs and is ready, for `run_id`.
    /// A service with labels is reused when one with the same name and
    /// labels already runs and still passes its readiness check; one whose
    /// process has exited is started anew. Call before the agent is
    /// spawned.
    ///
    /// # Errors
    ///
    /// An unsupported readiness check (before anything is spawned), a
    /// program that cannot start, or readiness that never comes — then the
    /// service is stopped (a reused one is left to its other runs) and the
    /// error carries its stderr tail (secret env values redacted).
    pub async fn ensure(
        &self,
        run_id: &str,
        specs: &[ServiceSpec],
    ) -> Result<Vec<ServiceRef>, ServiceError> {
        let mut probes = Vec::with_capacity(specs.len());
        for spec in specs {
            probes.push(Probe::parse(&spec.readiness).ok_or_else(|| {
                ServiceError::InvalidReadiness {
                    name: spec.name.clone(),
                    what: spec.readiness.address().to_owned(),
                }
            })?);
        }
        let mut refs = Vec::with_capacity(specs.len());
        for (spec, probe) in specs.iter().zip(probes) {
            let service = if spec.labels.is_empty() {
                self.start(run_id, spec, &probe).await?
            } else {
                let gate = self.gate(spec);
                let _starting = gate.lock().await;
                match self.reuse(run_id, spec, &probe).await? {
                    Some(service) => service,
                    None => self.start(run_id, spec, &probe).await?,
                }
            };
            refs.push(service);
        }
        Ok(refs)
    }

    /// The gate a labelled service starts under.
    fn gate(&self, spec: &ServiceSpec) -> Arc<Mutex<()>> {
        let mut gates = match self.gates.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        gates
            .entry((spec.name.clone(), spec.labels.clone()))
            .or_default()
            .clone()
    }

    /// The running service `spec` names, registered for `run_id` once it
    /// passed its readiness check again; `None` when there is none (a dead
    /// one is forgotten and reaped).
    async fn reuse(
        &self,
        run_id: &str,
        spec: &ServiceSpec,
        probe: &Probe,
    ) -> Result<Option<ServiceRef>, ServiceError> {
        let found = {
            let mut running = self.running.lock().await;
            let dead = take(&mut running, |r| r.is(spec) && r.child.exit().is_some());
            let found = running.iter_mut().find(|r| r.is(spec)).map(|r| {
                r.runs.insert(run_id.to_owned());
                (r.service_ref(true), r.child.clone())
            });
            (dead, found)
        };
        let (dead, found) = found;
        stop_all(dead).await;
        let Some((service, child)) = found else {
            return Ok(None);
        };
        match wait_ready(&child, probe, spec.ready_timeout).await {
            Ok(()) => Ok(Some(service)),
            Err(why) => {
                let dead = {
                    let mut running = self.running.lock().await;
                    for r in running.iter_mut().filter(|r| Arc::ptr_eq(&r.child, &child)) {
                        r.runs.remove(run_id);
                    }
                    take(&mut running, |r| {
                        Arc::ptr_eq(&r.child, &child) && r.child.exit().is_some()
                    })
                };
                if dead.is_empty() {
                    // Alive but no longer ready: the other runs keep it.
                    return Err(ServiceError::NotReady {
                        name: spec.name.clone(),
                        why,
                        stderr_tail: redact(&child.tail.text(), spec),
                    });
                }
                // It exited since it was started: start it anew.
                stop_all(dead).await;
                Ok(None)
            }
        }
    }

    /// Start `spec` for `run_id` and wait for its readiness (no lock held).
    async fn start(
        &self,
        run_id: &str,
        spec: &ServiceSpec,
        probe: &Probe,
    ) -> Result<ServiceRef, ServiceError> {
        let child = Arc::new(Child::spawn(spec)?);
        if let Err(why) = wait_ready(&child, probe, spec.ready_timeout).await {
            let stderr_tail = redact(&child.tail.text(), spec);
            child.stop().await;
            return Err(ServiceError::NotReady {
                name: spec.name.clone(),
                why,
                stderr_tail,
            });
        }
        let running = Running {
            name: spec.name.clone(),
            address: spec.readiness.address().to_owned(),
            labels: spec.labels.clone(),
            lifecycle: spec.lifecycle,
            runs: BTreeSet::from([run_id.to_owned()]),
            child,
        };
        let service = running.service_ref(false);
        self.running.lock().await.push(running);
        Ok(service)
    }

    /// The run is over: ephemeral services no other run uses are stopped.
    pub async fn release_by_run(&self, run_id: &str) {
        let stopped = {
            let mut running = self.running.lock().await;
            for r in running.iter_mut() {
                r.runs.remove(run_id);
            }
            take(&mut running, |r| {
                r.lifecycle == Lifecycle::Ephemeral && r.runs.is_empty()
            })
        };
        stop_all(stopped).await;
    }

    /// Stop every service whose labels include all of `labels`.
    pub async fn release_by_labels(&self, labels: &BTreeMap<String, String>) {
        let stopped = {
            let mut running = self.running.lock().await;
            take(&mut running, |r| {
                labels.iter().all(|(k, v)| r.labels.get(k) == Some(v))
            })
        };
        stop_all(stopped).await;
    }

    /// How many services run now.
    pub async fn running(&self) -> usize {
        self.running.lock().await.len()
    }
}

fn take(running: &mut Vec<Running>, pick: impl Fn(&Running) -> bool) -> Vec<Running> {
    let (out, keep): (Vec<_>, Vec<_>) = std::mem::take(running).into_iter().partition(|r| pick(r));
    *running = keep;
    out
}

async fn stop_all(stopped: Vec<Running>) {
    for r in stopped {
        r.child.stop().await;
    }
}

async fn wait_ready(child: &Child, probe: &Probe, timeout: Duration) -> Result<(), String> {
    let start = Instant::now();
    loop {
        if let Some(exit) = child.exit() {
            return Err(format!("the process {exit} before it was ready"));
        }
        if probe.ready(Duration::from_millis(500)).await {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(format!("readiness did not come within {timeout:?}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The tail with every secret env value replaced.
fn redact(tail: &str, spec: &ServiceSpec) -> String {
    let mut out = tail.to_owned();
    for v in spec.secret_env.values().filter(|v| !v.is_empty()) {
        out = out.replace(v.as_str(), "[redacted]");
    }
    out
}
