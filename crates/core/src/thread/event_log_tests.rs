//! The event log API over the memory store.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use super::*;
use crate::event::{EventMeta, Phase, TextDelta};
use crate::thread::{MemoryStore, ThreadStore};
use agent_adaptor_driver::Role;

fn delta(run: &str, sequence: u64, text: &str) -> Event {
    Event::TextDelta(TextDelta {
        meta: EventMeta {
            run_id: Arc::from(run),
            thread_key: Some(Arc::from("k")),
            sequence,
            time: Utc::now(),
            source: None,
        },
        message_id: "m1".into(),
        text: text.to_owned(),
        role: Role::Assistant,
        phase: Phase::Content,
    })
}

fn text(e: &RecordedEvent) -> String {
    match &e.event {
        Event::TextDelta(d) => d.text.clone(),
        other => panic!("unexpected event {other:?}"),
    }
}

/// Appends `n` events of run `run` to key `k`, the first with a prompt.
async fn run(store: &MemoryStore, key: &str, run: &str, n: u64) -> Vec<u64> {
    let events: Vec<NewEvent> = (1..=n)
        .map(|i| {
            let e = NewEvent::now(delta(run, i, &format!("{run}-{i}")));
            if i == 1 {
                e.with_prompt(format!("prompt of {run}"))
            } else {
                e
            }
        })
        .collect();
    store.append_events(key, run, &events).await.unwrap()
}

#[tokio::test]
async fn cursors_grow_across_runs_and_since_returns_the_suffix() {
    let store = MemoryStore::new();
    assert_eq!(run(&store, "k", "r1", 3).await, vec![1, 2, 3]);
    assert_eq!(run(&store, "k", "r2", 2).await, vec![4, 5]);
    assert_eq!(run(&store, "other", "r3", 1).await, vec![1]);

    let page = store.events("k", &EventQuery::since(2)).await.unwrap();
    let cursors: Vec<u64> = page.events.iter().map(|e| e.cursor).collect();
    assert_eq!(cursors, vec![3, 4, 5]);
    assert!(!page.truncated());
    assert_eq!(text(&page.events[0]), "r1-3");
    assert_eq!(page.events[1].run_id, "r2");
    assert_eq!(page.events[1].prompt.as_deref(), Some("prompt of r2"));
    assert_eq!(page.events[2].prompt, None);
}

#[tokio::test]
async fn range_and_tail_select_their_windows() {
    let store = MemoryStore::new();
    run(&store, "k", "r1", 10).await;
    let range = store.events("k", &EventQuery::range(3, 6)).await.unwrap();
    assert_eq!(
        range.events.iter().map(|e| e.cursor).collect::<Vec<_>>(),
        vec![3, 4, 5]
    );
    let tail = store.events("k", &EventQuery::tail(4)).await.unwrap();
    assert_eq!(
        tail.events.iter().map(|e| e.cursor).collect::<Vec<_>>(),
        vec![7, 8, 9, 10]
    );
    let all = store.events("k", &EventQuery::tail(100)).await.unwrap();
    assert_eq!(all.events.len(), 10);
    let unknown = store.events("nobody", &EventQuery::since(0)).await.unwrap();
    assert!(unknown.events.is_empty() && !unknown.truncated());
}

#[tokio::test]
async fn bounds_cut_pages_and_next_continues_without_gaps() {
    let store = MemoryStore::new();
    run(&store, "k", "r1", 25).await;
    for first in [
        EventQuery::since(0).max_events(4),
        EventQuery::tail(20).max_events(3),
        EventQuery::range(2, 23).max_events(5),
        EventQuery::since(0).max_bytes(1),
    ] {
        let mut query = Some(first);
        let mut seen = Vec::new();
        while let Some(q) = query {
            let page = store.events("k", &q).await.unwrap();
            assert!(page.events.len() <= q.max_events.max(1));
            seen.extend(page.events.iter().map(|e| e.cursor));
            query = page.next;
        }
        let expected: Vec<u64> = match first.window {
            EventWindow::Since(_) => (1..=25).collect(),
            EventWindow::Tail(_) => (6..=25).collect(),
            EventWindow::Range { from, to } => (from..to).collect(),
        };
        assert_eq!(seen, expected, "{first:?}");
    }
}

#[tokio::test]
async fn retention_by_count_keeps_the_newest_and_cursors_are_never_reused() {
    let store = MemoryStore::new();
    run(&store, "k", "r1", 10).await;
    assert_eq!(
        store
            .prune_events("k", &Retention::keep_last(3))
            .await
            .unwrap(),
        7
    );
    let page = store.events("k", &EventQuery::since(0)).await.unwrap();
    assert_eq!(
        page.events.iter().map(|e| e.cursor).collect::<Vec<_>>(),
        vec![8, 9, 10]
    );
    assert_eq!(
        store
            .prune_events("k", &Retention::keep_last(0))
            .await
            .unwrap(),
        3
    );
    assert_eq!(run(&store, "k", "r2", 1).await, vec![11]);
    assert_eq!(store.delete("k").await.unwrap(), 0);
    assert_eq!(run(&store, "k", "r3", 1).await, vec![12]);
    assert!(
        store
            .events("k", &EventQuery::since(0))
            .await
            .unwrap()
            .events
            .len()
            == 1
    );
}

#[tokio::test]
async fn retention_by_age_drops_old_events_as_a_prefix() {
    let store = MemoryStore::new();
    let old = Utc::now() - chrono::Duration::hours(2);
    let events: Vec<NewEvent> = (1..=4)
        .map(|i| NewEvent {
            recorded_at: old,
            prompt: None,
            event: delta("r1", i, "old"),
        })
        .collect();
    store.append_events("k", "r1", &events).await.unwrap();
    run(&store, "k", "r2", 2).await;
    let kept = Retention::keep_all().max_age(Duration::from_secs(3600));
    assert_eq!(store.prune_events("k", &kept).await.unwrap(), 4);
    let page = store.events("k", &EventQuery::since(0)).await.unwrap();
    assert_eq!(
        page.events.iter().map(|e| e.cursor).collect::<Vec<_>>(),
        vec![5, 6]
    );
    assert_eq!(
        store
            .prune_events("k", &Retention::keep_all())
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn empty_run_id_is_refused_and_appends_nothing() {
    let store = MemoryStore::new();
    let err = store
        .append_events("k", "", &[NewEvent::now(delta("", 1, "x"))])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    assert!(
        store
            .events("k", &EventQuery::since(0))
            .await
            .unwrap()
            .events
            .is_empty()
    );
}

#[test]
fn an_undecodable_row_is_corrupt_not_skipped() {
    let row = |cursor: u64, json: &str| StoredEventRow {
        cursor,
        run_id: "r".into(),
        recorded_at: Utc::now(),
        prompt: None,
        event_json: json.to_owned(),
    };
    let good = encode_event(&delta("r", 1, "ok")).unwrap();
    let err = EventPage::assemble(
        &EventQuery::since(0),
        None,
        [row(1, &good), row(2, "{\"type\":\"no_such_kind\"}")],
    )
    .unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt(ref m) if m.contains("event 2")),
        "{err:?}"
    );
}
