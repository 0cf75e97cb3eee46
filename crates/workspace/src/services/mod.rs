//! Runtime services a run needs (a database, a dev server …): started and
//! checked for readiness before the agent is spawned, reused by labels
//! across runs, and reported in the run's result.

mod child;
mod manager;
mod ready;
mod spec;

pub use manager::{ServiceManager, ServiceRef};
pub use spec::{Lifecycle, Readiness, ServiceError, ServiceSpec};
