//! PostgreSQL writes that fail half way (a trigger raises inside the
//! transaction) leave no lease or lock behind, and the same pooled
//! connection serves the next call.
#![cfg(feature = "postgres-tests")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::time::Duration;

use agent_adaptor_store::suite::sample_record;
use agent_adaptor_store::{
    FinalizeRequest, Lease, PgConfig, PgStore, StoreError, ThreadRecord, ThreadStore,
};
use common::{pg_url, rand_u64};
use sqlx::{Connection, PgConnection};

const TTL: Duration = Duration::from_secs(60);

fn request(lease: &Lease, record: &ThreadRecord) -> FinalizeRequest {
    FinalizeRequest {
        lease: lease.clone(),
        record: record.clone(),
        require_key_absent: false,
    }
}

fn injected<T: std::fmt::Debug>(r: &Result<T, StoreError>) -> bool {
    matches!(r, Err(StoreError::Backend(m)) if m.contains("injected fault"))
}

/// Triggers that raise for rows of this test only (`WHEN` on its key or
/// owner), so suite cases sharing the database are not disturbed.
struct Faults {
    conn: PgConnection,
    id: String,
}

impl Faults {
    async fn new() -> Faults {
        let mut conn = PgConnection::connect(&pg_url()).await.unwrap();
        let id = format!("{:016x}", rand_u64());
        let function = format!(
            "CREATE FUNCTION fail_{id}() RETURNS trigger LANGUAGE plpgsql AS \
             'BEGIN RAISE EXCEPTION ''injected fault''; END'"
        );
        sqlx::query(&function).execute(&mut conn).await.unwrap();
        Faults { conn, id }
    }

    /// Make `event` on `table` fail where `when` holds.
    async fn fail(&mut self, name: &str, event: &str, table: &str, when: &str) {
        let sql = format!(
            "CREATE TRIGGER {name}_{id} BEFORE {event} ON {table} FOR EACH ROW \
             WHEN ({when}) EXECUTE FUNCTION fail_{id}()",
            id = self.id
        );
        sqlx::query(&sql).execute(&mut self.conn).await.unwrap();
    }

    async fn heal(&mut self, name: &str, table: &str) {
        let sql = format!("DROP TRIGGER {name}_{} ON {table}", self.id);
        sqlx::query(&sql).execute(&mut self.conn).await.unwrap();
    }

    async fn close(mut self) {
        let sql = format!("DROP FUNCTION fail_{}()", self.id);
        sqlx::query(&sql).execute(&mut self.conn).await.unwrap();
        self.conn.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_failing_half_way_leave_nothing_locked() {
    let config = PgConfig {
        max_connections: 1,
        ..PgConfig::default()
    };
    let store = PgStore::connect_with(&pg_url(), config).await.unwrap();
    let mut faults = Faults::new().await;
    let key = format!("pg-faults/{}", faults.id);
    let target = format!("key:{key}");
    let records = "agent_adaptor_thread_records";
    let leases = "agent_adaptor_thread_leases";
    let on_key = format!("NEW.key = '{key}'");

    // finalize: the old record is archived, then the insert fails.
    let lease = store.acquire_lease(&target, "a", TTL).await.unwrap();
    let first = store
        .finalize(request(&lease, &sample_record(&key, 1, None)))
        .await
        .unwrap();
    faults.fail("f", "INSERT", records, &on_key).await;
    let failed = store
        .finalize(request(&lease, &sample_record(&key, 2, Some(&first))))
        .await;
    assert!(injected(&failed), "{failed:?}");
    faults.heal("f", records).await;
    let active = store.resolve(&key, false).await.unwrap().unwrap();
    assert_eq!(active.id, first.id);
    let lease = store.renew_lease(&lease, TTL).await.unwrap();
    store
        .finalize(request(&lease, &sample_record(&key, 2, Some(&first))))
        .await
        .unwrap();
    store.release_lease(&lease).await.unwrap();

    // acquire (a run lease): the upsert fails.
    let owner_b = format!("NEW.target = '{target}' AND NEW.owner = 'b'");
    faults.fail("a", "INSERT", leases, &owner_b).await;
    let failed = store.acquire_run_lease(&target, "b", TTL, "p").await;
    assert!(injected(&failed), "{failed:?}");
    faults.heal("a", leases).await;
    let lease = store.acquire_lease(&target, "c", TTL).await.unwrap();
    store.release_lease(&lease).await.unwrap();

    // delete: the lease row goes, then deleting the records fails.
    let old_key = format!("OLD.key = '{key}'");
    faults.fail("d", "DELETE", records, &old_key).await;
    let failed = store.delete(&key).await;
    assert!(injected(&failed), "{failed:?}");
    faults.heal("d", records).await;
    assert_eq!(store.records(&key).await.unwrap().len(), 2);
    assert_eq!(store.delete(&key).await.unwrap(), 2);

    // recover_instance: the lease goes, then recording the run fails.
    let instance = format!("host-{}", faults.id);
    store
        .acquire_run_lease(&target, &format!("{instance}@e1/run-1"), TTL, "the prompt")
        .await
        .unwrap();
    let interrupted = "agent_adaptor_interrupted_runs";
    faults.fail("r", "INSERT", interrupted, &on_key).await;
    let failed = store.recover_instance(&instance, "e2").await;
    assert!(injected(&failed), "{failed:?}");
    faults.heal("r", interrupted).await;
    let busy = store.acquire_lease(&target, "other", TTL).await;
    assert!(matches!(busy, Err(StoreError::Busy { .. })), "{busy:?}");
    assert_eq!(store.interrupted_runs(&key).await.unwrap(), vec![]);
    let runs = store.recover_instance(&instance, "e2").await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].prompt.as_deref(), Some("the prompt"));
    let lease = store.acquire_lease(&target, "other", TTL).await.unwrap();
    store.release_lease(&lease).await.unwrap();
    store.delete(&key).await.unwrap();
    faults.close().await;
}
