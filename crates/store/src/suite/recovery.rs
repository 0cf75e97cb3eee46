//! Cases for lease recovery after a holder's process died, and for writes
//! that fail half way.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::thread::store::InterruptedRun;
use agent_adaptor_core::thread::{FinalizeRequest, Lease, StoreError, ThreadStore};

use super::{Outcome, ensure, must, unique_key};
use crate::suite::sample_record;

const LONG: Duration = Duration::from_secs(60);

fn target(key: &str) -> String {
    format!("key:{key}")
}

/// An instance id no other case uses, holding LIKE's wildcards (`%`, `_`)
/// so a store that matched owners with an unescaped LIKE would overreach.
fn instance_id() -> String {
    format!("suite%_{:016x}:8080", rand::random::<u64>())
}

fn busy_for_others(r: &Result<Lease, StoreError>) -> bool {
    matches!(r, Err(StoreError::Busy { .. }))
}

/// `recover_instance` releases exactly the leases of earlier epochs of the
/// instance (not the current epoch's, not another instance's, not one
/// whose id only looks alike under LIKE), records each as an interrupted
/// run with its prompt (oldest first), frees the keys at once, is
/// idempotent, and `delete` drops the key's interrupted runs.
pub async fn recover_instance_frees_dead_incarnations(store: Arc<dyn ThreadStore>) -> Outcome {
    let inst = instance_id();
    let lookalike = inst.replace("%_", "XY");
    let keys: Vec<String> = (0..5)
        .map(|i| unique_key(&format!("recover-{i}")))
        .collect();
    let owners = [
        format!("{inst}@e1/run-1"),      // dead, with a prompt
        format!("{inst}@e0/run-2"),      // dead, plain lease (no prompt)
        format!("{inst}@e2/run-3"),      // the live epoch
        format!("{lookalike}@e1/run-4"), // another instance, LIKE-alike
        format!("{inst}2@e1/run-5"),     // another instance, same prefix
    ];
    let prompt = "summarize \"this\" — ünï 🧵\nplease";
    must(
        store
            .acquire_run_lease(&target(&keys[0]), &owners[0], LONG, prompt)
            .await,
        "acquire run lease",
    )?;
    for (key, owner) in keys.iter().zip(&owners).skip(1) {
        must(
            store.acquire_lease(&target(key), owner, LONG).await,
            "acquire",
        )?;
    }

    let runs = must(store.recover_instance(&inst, "e2").await, "recover")?;
    let summary: Vec<(&str, &str, Option<&str>)> = runs
        .iter()
        .map(|r| (r.key.as_str(), r.run_id.as_str(), r.prompt.as_deref()))
        .collect();
    ensure!(
        summary
            == [
                (keys[0].as_str(), "run-1", Some(prompt)),
                (keys[1].as_str(), "run-2", None)
            ],
        "recovered {summary:?}"
    );
    ensure!(
        runs.iter().all(|r| r.started_at <= r.interrupted_at),
        "started after interrupted: {runs:?}"
    );
    for (i, key) in keys.iter().enumerate() {
        let next = store.acquire_lease(&target(key), "next-run", LONG).await;
        match i {
            0 | 1 => ensure!(next.is_ok(), "key {i} not freed: {next:?}"),
            _ => ensure!(busy_for_others(&next), "key {i} freed: {next:?}"),
        }
    }
    let recorded = must(store.interrupted_runs(&keys[0]).await, "interrupted_runs")?;
    ensure!(recorded == runs[..1], "recorded {recorded:?}");
    let none = must(store.interrupted_runs(&keys[2]).await, "interrupted_runs")?;
    ensure!(none.is_empty(), "a live run was recorded: {none:?}");
    let again = must(store.recover_instance(&inst, "e2").await, "recover again")?;
    ensure!(again.is_empty(), "second recovery found {again:?}");
    let recorded_again = must(store.interrupted_runs(&keys[0]).await, "interrupted_runs")?;
    ensure!(
        recorded_again == recorded,
        "recorded twice: {recorded_again:?}"
    );

    // delete drops the interrupted runs with the key.
    let next = must(
        store
            .acquire_lease(&target(&keys[0]), "next-run", LONG)
            .await,
        "reacquire",
    )?;
    must(store.release_lease(&next).await, "release")?;
    must(store.delete(&keys[0]).await, "delete")?;
    let gone = must(store.interrupted_runs(&keys[0]).await, "interrupted_runs")?;
    ensure!(
        gone.is_empty(),
        "interrupted runs survived delete: {gone:?}"
    );
    let kept = must(store.interrupted_runs(&keys[1]).await, "interrupted_runs")?;
    ensure!(kept == runs[1..], "another key's runs changed: {kept:?}");
    Ok(())
}

/// A later acquisition replaces the prompt kept with a lease: a plain
/// `acquire_lease` after a released run lease leaves none, a run lease
/// re-taken by its owner keeps the newest.
pub async fn recovered_prompt_is_the_current_holders(store: Arc<dyn ThreadStore>) -> Outcome {
    let inst = instance_id();
    let (first, second) = (unique_key("prompt-a"), unique_key("prompt-b"));
    let run = must(
        store
            .acquire_run_lease(&target(&first), &format!("{inst}@e1/r1"), LONG, "old")
            .await,
        "acquire a",
    )?;
    must(store.release_lease(&run).await, "release a")?;
    must(
        store
            .acquire_lease(&target(&first), &format!("{inst}@e1/r2"), LONG)
            .await,
        "plain acquire a",
    )?;
    let owner = format!("{inst}@e1/r3");
    for prompt in ["first", "second"] {
        must(
            store
                .acquire_run_lease(&target(&second), &owner, LONG, prompt)
                .await,
            "acquire b",
        )?;
    }
    let runs = must(store.recover_instance(&inst, "e2").await, "recover")?;
    let mut got: Vec<(String, String, Option<String>)> = runs
        .into_iter()
        .map(|r: InterruptedRun| (r.key, r.run_id, r.prompt))
        .collect();
    got.sort();
    let mut want = vec![
        (first.clone(), "r2".to_owned(), None),
        (second.clone(), "r3".to_owned(), Some("second".to_owned())),
    ];
    want.sort();
    ensure!(got == want, "recovered {got:?}, expected {want:?}");
    Ok(())
}

/// An instance id or epoch holding a separator (`@`, `/`), or an empty
/// instance id, is `Invalid`, and nothing is released.
pub async fn recover_instance_rejects_separators(store: Arc<dyn ThreadStore>) -> Outcome {
    let inst = instance_id();
    let key = unique_key("recover-invalid");
    must(
        store
            .acquire_lease(&target(&key), &format!("{inst}@e1/r"), LONG)
            .await,
        "acquire",
    )?;
    let bad = [
        (format!("{inst}@e1"), "e2".to_owned()),
        (format!("{inst}/x"), "e2".to_owned()),
        (inst.clone(), "e2/x".to_owned()),
        (inst.clone(), "e@2".to_owned()),
        (String::new(), "e2".to_owned()),
    ];
    for (instance, epoch) in &bad {
        let got = store.recover_instance(instance, epoch).await;
        ensure!(
            matches!(got, Err(StoreError::Invalid(_))),
            "recover_instance({instance:?}, {epoch:?}): {got:?}"
        );
    }
    let still = store.acquire_lease(&target(&key), "other", LONG).await;
    ensure!(busy_for_others(&still), "a lease was released: {still:?}");
    Ok(())
}

/// A finalize that fails half way (its new record reuses the id of the
/// key's current record, which a SQL store's unique index refuses after
/// the old record was archived) writes nothing and leaves nothing locked:
/// the key's record is still active, the same lease finalizes next, and
/// once released another owner takes the key at once and may delete it.
/// (A store without unique record ids may accept the write; the rest
/// holds all the same.)
pub async fn failed_finalize_leaves_nothing_locked(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("failed-finalize");
    let lease = must(
        store.acquire_lease(&target(&key), "a", LONG).await,
        "acquire",
    )?;
    let write = |record| FinalizeRequest {
        lease: lease.clone(),
        record,
        require_key_absent: false,
    };
    let first = must(
        store.finalize(write(sample_record(&key, 1, None))).await,
        "finalize 1",
    )?;
    let mut clash = sample_record(&key, 2, Some(&first));
    clash.id = first.id.clone();
    if let Err(e) = store.finalize(write(clash)).await {
        ensure!(
            matches!(e, StoreError::Backend(_)),
            "a failed write is a backend error: {e:?}"
        );
        let active = must(store.resolve(&key, false).await, "resolve")?;
        ensure!(
            active.as_ref().is_some_and(|r| r.id == first.id),
            "the failed write changed the active record: {active:?}"
        );
    }
    let lease = must(store.renew_lease(&lease, LONG).await, "renew")?;
    let current = must(store.resolve(&key, false).await, "resolve")?;
    let next = sample_record(&key, 3, current.as_ref());
    must(
        store
            .finalize(FinalizeRequest {
                lease: lease.clone(),
                record: next,
                require_key_absent: false,
            })
            .await,
        "finalize after the failure",
    )?;
    must(store.release_lease(&lease).await, "release")?;
    let other = must(
        store.acquire_lease(&target(&key), "b", LONG).await,
        "another owner",
    )?;
    must(store.release_lease(&other).await, "release b")?;
    let deleted = must(store.delete(&key).await, "delete")?;
    ensure!(deleted >= 2, "deleted {deleted}");
    Ok(())
}
