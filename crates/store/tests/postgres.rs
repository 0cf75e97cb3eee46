//! The shared store suite against PostgreSQL, plus what only PostgreSQL
//! has: server-clock expiry, schema guarantees, secret-free errors.
//!
//! Compiled with the `postgres-tests` feature (scripts/test turns it on and
//! runs under scripts/with-postgres); with the feature on, a missing
//! `PG_TEST_URL` fails every test here instead of skipping it.
#![cfg(feature = "postgres-tests")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_store::{PgStore, ThreadStore};
use common::pg_url;

async fn postgres() -> Arc<dyn ThreadStore> {
    Arc::new(PgStore::connect(&pg_url()).await.unwrap())
}

agent_adaptor_store::thread_store_suite!(postgres_store, postgres);

/// Notifications cross store values: two `PgStore`s on one database (as
/// two hosts have), a notification sent on one reaches the other's
/// listener, and the sender's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_on_one_store_reaches_another_store_on_the_same_database() {
    use agent_adaptor_core::thread::durable::{Notification, TOPIC_TASK};
    let here = PgStore::connect(&pg_url()).await.unwrap();
    let there = PgStore::connect(&pg_url()).await.unwrap();
    let mut far = there.listen().await.unwrap();
    let mut near = here.listen().await.unwrap();
    let sent = Notification::new(TOPIC_TASK, format!("task-{:016x}", rand_id()));
    here.notify(&sent).await.unwrap();
    let got = agent_adaptor_store::suite::receive(&mut far, &sent)
        .await
        .unwrap();
    assert_eq!(got, sent);
    let own = agent_adaptor_store::suite::receive(&mut near, &sent)
        .await
        .unwrap();
    assert_eq!(own, sent);
}

fn rand_id() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

mod postgres_only {
    use std::time::Duration;

    use agent_adaptor_store::suite::sample_record;
    use agent_adaptor_store::{
        FinalizeRequest, Lease, PgConfig, PgStore, RecordStatus, StoreError, ThreadRecord,
        ThreadStore,
    };
    use sqlx::{Connection, PgConnection};

    use super::pg_url;

    const TTL: Duration = Duration::from_secs(60);

    fn key(name: &str) -> String {
        format!("pg-only/{name}/{:016x}", rand_u64())
    }

    fn rand_u64() -> u64 {
        use std::hash::{BuildHasher, RandomState};
        RandomState::new().hash_one(std::time::SystemTime::now())
    }

    fn finalize(lease: &Lease, record: &ThreadRecord) -> FinalizeRequest {
        FinalizeRequest {
            lease: lease.clone(),
            record: record.clone(),
            require_key_absent: false,
        }
    }

    async fn raw() -> PgConnection {
        PgConnection::connect(&pg_url()).await.unwrap()
    }

    #[tokio::test]
    async fn the_schema_itself_allows_one_active_record_per_key_and_only_object_params() {
        let store = PgStore::connect(&pg_url()).await.unwrap();
        let k = key("schema");
        let lease = store
            .acquire_lease(&format!("key:{k}"), "o", TTL)
            .await
            .unwrap();
        let r1 = store
            .finalize(finalize(&lease, &sample_record(&k, 1, None)))
            .await
            .unwrap();
        let mut conn = raw().await;
        for (id, status, params) in [
            ("active", "active", "{}"),
            ("array", "archived", "[1]"),
            ("status", "zombie", "{}"),
        ] {
            let out = sqlx::query(
                "INSERT INTO agent_adaptor_thread_records (id, key, status, driver_type, \
                 fingerprint, codec, params, previous_id, created_at, updated_at) \
                 VALUES ($1, $2, $3, 'd', 'f', 'c', $4::jsonb, NULL, now(), now())",
            )
            .bind(format!("{k}/{id}"))
            .bind(&k)
            .bind(status)
            .bind(params)
            .execute(&mut conn)
            .await;
            assert!(out.is_err(), "{id}: {out:?}");
        }
        assert_eq!(store.records(&k).await.unwrap(), vec![r1]);
    }

    #[tokio::test]
    async fn resolve_falls_back_to_the_newest_archived_record_only_when_asked() {
        let store = PgStore::connect(&pg_url()).await.unwrap();
        let k = key("archived");
        let lease = store
            .acquire_lease(&format!("key:{k}"), "o", TTL)
            .await
            .unwrap();
        let r1 = store
            .finalize(finalize(&lease, &sample_record(&k, 1, None)))
            .await
            .unwrap();
        let r2 = store
            .finalize(finalize(&lease, &sample_record(&k, 2, Some(&r1))))
            .await
            .unwrap();
        sqlx::query("UPDATE agent_adaptor_thread_records SET status = 'archived' WHERE key = $1")
            .bind(&k)
            .execute(&mut raw().await)
            .await
            .unwrap();
        assert_eq!(store.resolve(&k, false).await.unwrap(), None);
        let newest = store.resolve(&k, true).await.unwrap().unwrap();
        assert_eq!((newest.id, newest.status), (r2.id, RecordStatus::Archived));
    }

    #[tokio::test]
    async fn finalize_checks_the_owner_as_well_as_the_token() {
        let store = PgStore::connect(&pg_url()).await.unwrap();
        let k = key("owner");
        let lease = store
            .acquire_lease(&format!("key:{k}"), "o", TTL)
            .await
            .unwrap();
        let impostor = Lease {
            owner: "someone-else".into(),
            ..lease.clone()
        };
        let out = store
            .finalize(finalize(&impostor, &sample_record(&k, 1, None)))
            .await;
        assert!(matches!(out, Err(StoreError::LeaseLost { .. })), "{out:?}");
        assert!(store.records(&k).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn connection_errors_and_debug_output_never_show_the_password() {
        let secret = "sup3r-s3cret";
        for url in [
            format!("postgres://app:{secret}@127.0.0.1:1/db"),
            format!("postgres://app:{secret}@127.0.0.1:notaport/db"),
            format!("postgres://127.0.0.1:1/db?user=app&password={secret}"),
        ] {
            let config = PgConfig {
                max_connections: 1,
                acquire_timeout: Duration::from_secs(2),
                ..PgConfig::default()
            };
            let err = PgStore::connect_with(&url, config).await.unwrap_err();
            let text = format!("{err} {err:?}");
            assert!(matches!(err, StoreError::Backend(_)), "{text}");
            assert!(!text.contains(secret), "{text}");
        }
        // Trust authentication ignores the password, so this connects.
        let with_password = pg_url().replacen("://", &format!("://:{secret}@"), 1);
        let with_password = match pg_url().split_once("://") {
            Some((scheme, rest)) if rest.contains('@') => {
                let (user, host) = rest.split_once('@').unwrap();
                format!("{scheme}://{user}:{secret}@{host}")
            }
            _ => with_password,
        };
        let store = PgStore::connect(&with_password).await.unwrap();
        let debug = format!("{store:?}");
        assert!(
            !debug.contains(secret) && debug.contains("127.0.0.1"),
            "{debug}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_first_connections_migrate_a_fresh_database_once() {
        let db = format!("agent_adaptor_migrate_{:x}", rand_u64());
        let mut admin = raw().await;
        sqlx::query(&format!("CREATE DATABASE {db}"))
            .execute(&mut admin)
            .await
            .unwrap();
        let url = match pg_url().rsplit_once('/') {
            Some((base, _)) => format!("{base}/{db}"),
            None => panic!("PG_TEST_URL has no database"),
        };
        let connects: Vec<_> = (0..6)
            .map(|_| {
                let url = url.clone();
                tokio::spawn(async move { PgStore::connect(&url).await })
            })
            .collect();
        let mut stores = Vec::new();
        for c in connects {
            stores.push(c.await.unwrap().unwrap());
        }
        let mut conn = PgConnection::connect(&url).await.unwrap();
        let versions: Vec<i64> =
            sqlx::query_scalar("SELECT version FROM agent_adaptor_schema_migrations")
                .fetch_all(&mut conn)
                .await
                .unwrap();
        assert_eq!(versions, [1, 2, 3, 4, 5]);
        conn.close().await.unwrap();
        for s in &stores {
            s.close().await;
        }
        sqlx::query(&format!("DROP DATABASE {db} WITH (FORCE)"))
            .execute(&mut admin)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn an_acquire_stuck_behind_a_locked_lease_row_is_busy_not_a_hang() {
        let config = PgConfig {
            lock_timeout: Duration::from_millis(200),
            ..PgConfig::default()
        };
        let store = PgStore::connect_with(&pg_url(), config).await.unwrap();
        let t = format!("key:{}", key("locked"));
        store.acquire_lease(&t, "a", Duration::ZERO).await.unwrap();
        // Another session holds the lease row, as a finalize in flight does.
        let mut holder = raw().await;
        let mut tx = holder.begin().await.unwrap();
        sqlx::query("SELECT 1 FROM agent_adaptor_thread_leases WHERE target = $1 FOR UPDATE")
            .bind(&t)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let blocked = store.acquire_lease(&t, "b", TTL).await;
        assert!(
            matches!(blocked, Err(StoreError::Busy { .. })),
            "{blocked:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(3));
        tx.rollback().await.unwrap();
        store.acquire_lease(&t, "b", TTL).await.unwrap();
    }

    #[tokio::test]
    async fn an_unbounded_ttl_is_clamped_not_an_overflow() {
        let store = PgStore::connect(&pg_url()).await.unwrap();
        let t = format!("key:{}", key("forever"));
        let lease = store.acquire_lease(&t, "a", Duration::MAX).await.unwrap();
        assert!(lease.expires_at > chrono::Utc::now() + chrono::Duration::days(365 * 50));
        let renewed = store.renew_lease(&lease, Duration::MAX).await.unwrap();
        assert!(renewed.expires_at >= lease.expires_at);
    }
}
