//! The shared store suite against core's in-memory reference store: the
//! suite's own baseline (every case must hold for the reference).

use std::sync::Arc;

use agent_adaptor_store::{MemoryStore, ThreadStore};

async fn memory() -> Arc<dyn ThreadStore> {
    Arc::new(MemoryStore::new())
}

agent_adaptor_store::thread_store_suite!(memory_store, memory);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_all_reports_no_failure_for_the_reference_store() {
    let outcome = agent_adaptor_store::suite::run_all(memory().await).await;
    assert_eq!(outcome, Ok(()));
}
