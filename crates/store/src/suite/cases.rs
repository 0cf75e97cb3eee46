//! Store-level cases: leases, finalize, resolve, concurrency.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_adaptor_core::driver::SessionParams;
use agent_adaptor_core::thread::{
    FinalizeRequest, Lease, RecordStatus, StoreError, ThreadRecord, ThreadStore,
};
use chrono::Utc;

use super::{Outcome, ensure, must, unique_key};

const LONG: Duration = Duration::from_secs(60);

fn target(key: &str) -> String {
    format!("key:{key}")
}

/// A record for `key` whose params count `turn` (`values["turn"]`),
/// following `previous`, with a fresh random id and awkward text in its
/// params (quotes, backslashes, newlines, non-ASCII).
pub fn sample_record(key: &str, turn: u64, previous: Option<&ThreadRecord>) -> ThreadRecord {
    let now = Utc::now();
    let mut values = BTreeMap::new();
    values.insert("turn".to_owned(), turn.to_string());
    values.insert(
        "text".to_owned(),
        "ünïcødé 🧵 \"quoted\" 'single' \\ back\nslash {}[]".to_owned(),
    );
    ThreadRecord {
        id: format!("rec_{:016x}", rand::random::<u64>()),
        key: key.to_owned(),
        status: RecordStatus::Active,
        driver_type: "suite".to_owned(),
        fingerprint: "suite-fingerprint-v1".to_owned(),
        codec: "suite".to_owned(),
        params: SessionParams {
            resume_id: format!("resume-{turn}"),
            display_id: format!("display-{turn}"),
            values,
        },
        previous_id: previous.map(|r| r.id.clone()),
        created_at: now,
        updated_at: now,
    }
}

/// The turn counted in a record's params (see [`sample_record`]).
pub fn turn_of(record: &ThreadRecord) -> Option<u64> {
    record.params.values.get("turn")?.parse().ok()
}

fn request(lease: &Lease, record: &ThreadRecord, require_key_absent: bool) -> FinalizeRequest {
    FinalizeRequest {
        lease: lease.clone(),
        record: record.clone(),
        require_key_absent,
    }
}

/// A stored record matches what was written (times to the microsecond
/// the SQL stores keep; `updated_at` within a generous clock-skew window).
fn same_record(stored: &ThreadRecord, written: &ThreadRecord) -> Outcome {
    ensure!(
        stored.id == written.id,
        "id: {} != {}",
        stored.id,
        written.id
    );
    ensure!(stored.status == RecordStatus::Active, "status: {stored:?}");
    ensure!(
        (
            stored.key.as_str(),
            stored.driver_type.as_str(),
            stored.codec.as_str()
        ) == (
            written.key.as_str(),
            written.driver_type.as_str(),
            written.codec.as_str()
        ),
        "key/driver/codec differ: {stored:?} vs {written:?}"
    );
    ensure!(
        stored.fingerprint == written.fingerprint,
        "fingerprint differs"
    );
    ensure!(
        stored.params == written.params,
        "params differ: {:?} vs {:?}",
        stored.params,
        written.params
    );
    ensure!(
        stored.previous_id == written.previous_id,
        "previous_id differs"
    );
    let drift = (stored.created_at - written.created_at).abs();
    ensure!(
        drift <= chrono::Duration::milliseconds(1),
        "created_at {} != {}",
        stored.created_at,
        written.created_at
    );
    let skew = chrono::Duration::minutes(10);
    ensure!(
        stored.updated_at > written.created_at - skew && stored.updated_at < Utc::now() + skew,
        "updated_at {} is not about now",
        stored.updated_at
    );
    Ok(())
}

/// The key's active record is exactly `expected` (and `include_archived`
/// agrees).
async fn active_is(store: &dyn ThreadStore, key: &str, expected: &ThreadRecord) -> Outcome {
    for archived in [false, true] {
        let got = must(store.resolve(key, archived).await, "resolve")?;
        match got {
            Some(r) => same_record(&r, expected)?,
            None => return Err(format!("resolve({key:?}, {archived}) found nothing")),
        }
    }
    Ok(())
}

fn is_busy(r: &Result<Lease, StoreError>, t: &str) -> bool {
    matches!(r, Err(StoreError::Busy { target }) if target == t)
}

fn is_lease_lost<T>(r: &Result<T, StoreError>, t: &str) -> bool {
    matches!(r, Err(StoreError::LeaseLost { target }) if target == t)
}

/// A held lease blocks other owners; renew keeps the token and extends the
/// expiry; release is idempotent and ignores stale leases.
pub async fn lease_busy_renew_release(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("lease");
    let t = target(&key);
    let a = must(store.acquire_lease(&t, "owner-a", LONG).await, "acquire")?;
    ensure!(
        a.target == t && a.owner == "owner-a" && !a.token.is_empty(),
        "lease fields: {a:?}"
    );
    ensure!(
        a.expires_at > Utc::now() + chrono::Duration::seconds(30),
        "a 60 s lease expires about 60 s from now: {a:?}"
    );
    let b = store.acquire_lease(&t, "owner-b", LONG).await;
    ensure!(is_busy(&b, &t), "another owner must be Busy: {b:?}");
    let renewed = must(store.renew_lease(&a, LONG * 2).await, "renew")?;
    ensure!(
        renewed.token == a.token && renewed.owner == a.owner && renewed.target == a.target,
        "renew keeps the lease's identity: {renewed:?} vs {a:?}"
    );
    ensure!(
        renewed.expires_at > a.expires_at,
        "renew extends: {renewed:?}"
    );
    must(store.release_lease(&renewed).await, "release")?;
    must(store.release_lease(&a).await, "second release")?;
    let lost = store.renew_lease(&a, LONG).await;
    ensure!(is_lease_lost(&lost, &t), "renew after release: {lost:?}");
    let b = must(
        store.acquire_lease(&t, "owner-b", LONG).await,
        "acquire freed",
    )?;
    ensure!(b.token != a.token, "a new acquisition has a new token");
    must(store.release_lease(&a).await, "stale release")?;
    let c = store.acquire_lease(&t, "owner-c", LONG).await;
    ensure!(
        is_busy(&c, &t),
        "a stale release must not free b's lease: {c:?}"
    );
    let other = target(&unique_key("lease-other"));
    let o = must(store.acquire_lease(&other, "owner-c", LONG).await, "other")?;
    must(store.release_lease(&o).await, "release other")?;
    must(store.release_lease(&b).await, "release b")
}

/// The holder may acquire again (a new token); the old token is dead.
pub async fn lease_same_owner_reacquires(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("reacquire");
    let t = target(&key);
    let first = must(store.acquire_lease(&t, "owner", LONG).await, "acquire")?;
    let second = must(store.acquire_lease(&t, "owner", LONG).await, "re-acquire")?;
    ensure!(
        second.token != first.token,
        "re-acquisition changes the token"
    );
    let other = store.acquire_lease(&t, "intruder", LONG).await;
    ensure!(is_busy(&other, &t), "still busy for others: {other:?}");
    let r = sample_record(&key, 1, None);
    let stale = store.finalize(request(&first, &r, false)).await;
    ensure!(is_lease_lost(&stale, &t), "superseded token: {stale:?}");
    let saved = must(
        store.finalize(request(&second, &r, false)).await,
        "finalize",
    )?;
    same_record(&saved, &r)?;
    must(store.release_lease(&second).await, "release")
}

/// An expired lease is taken over by another owner; the old holder can
/// neither renew nor finalize. A zero TTL is expired at once.
pub async fn lease_expiry_takeover(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("expiry");
    let t = target(&key);
    let started = Instant::now();
    let a = must(
        store
            .acquire_lease(&t, "owner-a", Duration::from_millis(300))
            .await,
        "acquire",
    )?;
    tokio::time::sleep(Duration::from_millis(450).saturating_sub(started.elapsed())).await;
    let b = must(store.acquire_lease(&t, "owner-b", LONG).await, "takeover")?;
    ensure!(
        b.token != a.token && b.owner == "owner-b",
        "b's lease: {b:?}"
    );
    let renew = store.renew_lease(&a, LONG).await;
    ensure!(
        is_lease_lost(&renew, &t),
        "a renews after takeover: {renew:?}"
    );
    let r = sample_record(&key, 1, None);
    let lost = store.finalize(request(&a, &r, false)).await;
    ensure!(
        is_lease_lost(&lost, &t),
        "a finalizes after takeover: {lost:?}"
    );
    let nothing = must(store.resolve(&key, true).await, "resolve")?;
    ensure!(nothing.is_none(), "a's failed finalize wrote {nothing:?}");
    let saved = must(store.finalize(request(&b, &r, false)).await, "b finalizes")?;
    same_record(&saved, &r)?;
    must(store.release_lease(&b).await, "release")?;

    let t0 = target(&unique_key("zero-ttl"));
    must(
        store.acquire_lease(&t0, "owner-c", Duration::ZERO).await,
        "zero",
    )?;
    let d = store.acquire_lease(&t0, "owner-d", LONG).await;
    ensure!(d.is_ok(), "a zero-TTL lease is expired at once: {d:?}");
    Ok(())
}

/// Each finalize archives the key's active record and makes the new one
/// active; keys are compared verbatim.
pub async fn finalize_archives_and_rebinds(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = format!("{}/Tenant Ü:with:colons %20 'q'", unique_key("finalize"));
    let t = target(&key);
    let lease = must(store.acquire_lease(&t, "owner", LONG).await, "acquire")?;
    let r1 = sample_record(&key, 1, None);
    let saved1 = must(store.finalize(request(&lease, &r1, false)).await, "r1")?;
    same_record(&saved1, &r1)?;
    active_is(&*store, &key, &r1).await?;
    let r2 = sample_record(&key, 2, Some(&saved1));
    let saved2 = must(store.finalize(request(&lease, &r2, false)).await, "r2")?;
    same_record(&saved2, &r2)?;
    active_is(&*store, &key, &r2).await?;
    for near in [
        key.to_uppercase(),
        key.to_lowercase(),
        format!("{key} "),
        key.chars().skip(1).collect(),
    ] {
        let got = must(store.resolve(&near, true).await, "resolve near key")?;
        ensure!(got.is_none(), "{near:?} is another key, found {got:?}");
    }
    must(store.release_lease(&lease).await, "release")
}

/// Finalize with a released, expired, superseded or forged lease fails
/// with `LeaseLost` and writes nothing (not even under the record's id).
pub async fn finalize_with_stale_lease_writes_nothing(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("stale");
    let t = target(&key);
    let a = must(store.acquire_lease(&t, "owner-a", LONG).await, "acquire")?;
    let r1 = sample_record(&key, 1, None);
    must(store.finalize(request(&a, &r1, false)).await, "r1")?;
    must(store.release_lease(&a).await, "release")?;
    let attempt = sample_record(&key, 2, Some(&r1));

    let released = store.finalize(request(&a, &attempt, false)).await;
    ensure!(is_lease_lost(&released, &t), "released lease: {released:?}");
    active_is(&*store, &key, &r1).await?;

    let b = must(
        store.acquire_lease(&t, "owner-b", Duration::ZERO).await,
        "b",
    )?;
    let expired = store.finalize(request(&b, &attempt, false)).await;
    ensure!(is_lease_lost(&expired, &t), "expired lease: {expired:?}");
    active_is(&*store, &key, &r1).await?;

    let c = must(store.acquire_lease(&t, "owner-c", LONG).await, "c")?;
    let superseded = store.finalize(request(&b, &attempt, false)).await;
    ensure!(
        is_lease_lost(&superseded, &t),
        "taken-over lease: {superseded:?}"
    );
    let forged = Lease {
        token: format!("{}-forged", c.token),
        ..c.clone()
    };
    let forged = store.finalize(request(&forged, &attempt, false)).await;
    ensure!(is_lease_lost(&forged, &t), "forged token: {forged:?}");
    active_is(&*store, &key, &r1).await?;

    // Had any failed attempt written its record, this id would be taken.
    let saved = must(store.finalize(request(&c, &attempt, false)).await, "valid")?;
    same_record(&saved, &attempt)?;
    active_is(&*store, &key, &attempt).await?;
    must(store.release_lease(&c).await, "release")
}

/// `require_key_absent` (fork) onto a key with an active record fails with
/// `AlreadyExists` and changes nothing; onto a fresh key it succeeds once.
pub async fn fork_onto_occupied_key_already_exists(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("fork");
    let lease = must(
        store.acquire_lease(&target(&key), "o", LONG).await,
        "acquire",
    )?;
    let r1 = sample_record(&key, 1, None);
    must(store.finalize(request(&lease, &r1, false)).await, "r1")?;
    let fork = sample_record(&key, 1, None);
    let occupied = store.finalize(request(&lease, &fork, true)).await;
    ensure!(
        matches!(&occupied, Err(StoreError::AlreadyExists { key: k }) if *k == key),
        "fork onto an occupied key: {occupied:?}"
    );
    active_is(&*store, &key, &r1).await?;

    let fresh = unique_key("fork-target");
    let l2 = must(
        store.acquire_lease(&target(&fresh), "o", LONG).await,
        "acquire",
    )?;
    let child = sample_record(&fresh, 1, None);
    let saved = must(store.finalize(request(&l2, &child, true)).await, "fork")?;
    same_record(&saved, &child)?;
    let again = store
        .finalize(request(&l2, &sample_record(&fresh, 1, None), true))
        .await;
    ensure!(
        matches!(&again, Err(StoreError::AlreadyExists { key: k }) if *k == fresh),
        "second fork onto the same key: {again:?}"
    );
    active_is(&*store, &fresh, &child).await?;
    must(store.release_lease(&lease).await, "release")?;
    must(store.release_lease(&l2).await, "release")
}

/// A missing key resolves to nothing either way; with archived records
/// the active one still wins. (A key with only archived records cannot be
/// produced through the trait; the SQL stores' own tests cover that.)
pub async fn resolve_with_and_without_archived(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("resolve");
    for archived in [false, true] {
        let got = must(store.resolve(&key, archived).await, "resolve missing")?;
        ensure!(got.is_none(), "missing key resolved to {got:?}");
    }
    let lease = must(
        store.acquire_lease(&target(&key), "o", LONG).await,
        "acquire",
    )?;
    let mut previous: Option<ThreadRecord> = None;
    for turn in 1..=3 {
        let r = sample_record(&key, turn, previous.as_ref());
        let saved = must(store.finalize(request(&lease, &r, false)).await, "finalize")?;
        active_is(&*store, &key, &r).await?;
        previous = Some(saved);
    }
    must(store.release_lease(&lease).await, "release")
}

/// `list` returns active records only, newest first; `history` every
/// record of a key, the active one first; `delete` refuses a
/// key whose lease is held, removes every record of a key (archived too)
/// and its lease, and reports 0 for an unknown key.
pub async fn list_and_delete(store: Arc<dyn ThreadStore>) -> Outcome {
    let first = unique_key("list-a");
    let second = unique_key("list-b");
    for key in [&first, &second] {
        let lease = must(
            store.acquire_lease(&target(key), "o", LONG).await,
            "acquire",
        )?;
        let one = sample_record(key, 1, None);
        let saved = must(
            store.finalize(request(&lease, &one, false)).await,
            "finalize 1",
        )?;
        let two = sample_record(key, 2, Some(&saved));
        must(
            store.finalize(request(&lease, &two, false)).await,
            "finalize 2",
        )?;
        must(store.release_lease(&lease).await, "release")?;
    }
    let listed = must(store.list(100_000).await, "list")?;
    let ours: Vec<&ThreadRecord> = listed
        .iter()
        .filter(|r| r.key == first || r.key == second)
        .collect();
    ensure!(
        ours.len() == 2,
        "one active record per key expected: {ours:?}"
    );
    ensure!(
        ours[0].key == second && ours[1].key == first,
        "newest first: {:?}",
        ours.iter().map(|r| &r.key).collect::<Vec<_>>()
    );
    ensure!(
        ours.iter()
            .all(|r| r.status == RecordStatus::Active && turn_of(r) == Some(2)),
        "only the active records: {ours:?}"
    );
    let limited = must(store.list(1).await, "list 1")?;
    ensure!(limited.len() == 1, "limit 1 gave {}", limited.len());
    // `history`: every record of the key, the active one first.
    let history = must(store.history(&first, 10).await, "history")?;
    ensure!(
        history
            .iter()
            .map(|r| (r.status, turn_of(r)))
            .collect::<Vec<_>>()
            == [
                (RecordStatus::Active, Some(2)),
                (RecordStatus::Archived, Some(1))
            ],
        "history: {history:?}"
    );
    let newest = must(store.history(&first, 1).await, "history 1")?;
    ensure!(newest.len() == 1, "history limit 1 gave {}", newest.len());

    let lease = must(
        store.acquire_lease(&target(&first), "runner", LONG).await,
        "acquire",
    )?;
    match store.delete(&first).await {
        Err(StoreError::Busy { .. }) => {}
        other => return Err(format!("delete under a held lease: {other:?}")),
    }
    must(store.release_lease(&lease).await, "release")?;
    let deleted = must(store.delete(&first).await, "delete")?;
    ensure!(deleted == 2, "both records deleted, got {deleted}");
    let gone = must(store.resolve(&first, true).await, "resolve deleted")?;
    ensure!(gone.is_none(), "deleted key still resolves: {gone:?}");
    let again = must(store.delete(&first).await, "delete again")?;
    ensure!(again == 0, "second delete removed {again}");
    // The key is usable again, and the other key was untouched.
    must(
        store.acquire_lease(&target(&first), "new", LONG).await,
        "acquire after delete",
    )?;
    let other = must(store.resolve(&second, false).await, "resolve other")?;
    ensure!(
        other.is_some_and(|r| turn_of(&r) == Some(2)),
        "the other key changed"
    );
    must(store.delete(&second).await, "delete other").map(|_| ())
}

/// 32 tasks acquire one target at once: exactly one wins, the others are
/// `Busy` (not a backend error) — for a free target and for an expired one.
pub async fn concurrent_acquires_exactly_one_wins(store: Arc<dyn ThreadStore>) -> Outcome {
    const TASKS: usize = 32;
    for expired_first in [false, true] {
        let t = target(&unique_key("race"));
        if expired_first {
            must(store.acquire_lease(&t, "old", Duration::ZERO).await, "old")?;
        }
        let barrier = Arc::new(tokio::sync::Barrier::new(TASKS));
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                let (store, t, barrier) = (store.clone(), t.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store.acquire_lease(&t, &format!("owner-{i}"), LONG).await
                })
            })
            .collect();
        let (mut wins, mut busy, mut other) = (0, 0, Vec::new());
        for task in tasks {
            match task.await {
                Ok(Ok(_)) => wins += 1,
                Ok(r @ Err(_)) if is_busy(&r, &t) => busy += 1,
                Ok(Err(e)) => other.push(format!("{e:?}")),
                Err(join) => other.push(join.to_string()),
            }
        }
        ensure!(
            wins == 1 && busy == TASKS - 1 && other.is_empty(),
            "expired_first={expired_first}: {wins} won, {busy} busy, others: {other:?}"
        );
    }
    Ok(())
}

/// 6 tasks × 5 turns on one key (acquire, resolve, finalize turn + 1,
/// release; `Busy` → retry): the final record counts 30 turns.
pub async fn concurrent_turns_lose_nothing(store: Arc<dyn ThreadStore>) -> Outcome {
    const TASKS: u64 = 6;
    const TURNS: u64 = 5;
    let key = unique_key("turns");
    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            let (store, key) = (store.clone(), key.clone());
            tokio::spawn(async move { take_turns(&*store, &key, &format!("w{i}"), TURNS).await })
        })
        .collect();
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    let last = must(store.resolve(&key, false).await, "resolve")?;
    let turns = last.as_ref().and_then(turn_of);
    ensure!(turns == Some(TASKS * TURNS), "final turn count {turns:?}");
    Ok(())
}

async fn take_turns(store: &dyn ThreadStore, key: &str, owner: &str, turns: u64) -> Outcome {
    let t = target(key);
    for _ in 0..turns {
        let mut attempts = 0;
        let lease = loop {
            match store.acquire_lease(&t, owner, LONG).await {
                Ok(lease) => break lease,
                Err(StoreError::Busy { .. }) if attempts < 5_000 => {
                    attempts += 1;
                    let pause = 1 + rand::random::<u64>() % 4;
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
                Err(e) => return Err(format!("{owner}: acquire: {e:?}")),
            }
        };
        let current = must(store.resolve(key, false).await, "resolve")?;
        let turn = current.as_ref().and_then(turn_of).unwrap_or(0) + 1;
        let next = sample_record(key, turn, current.as_ref());
        must(
            store.finalize(request(&lease, &next, false)).await,
            "finalize",
        )?;
        must(store.release_lease(&lease).await, "release")?;
    }
    Ok(())
}
