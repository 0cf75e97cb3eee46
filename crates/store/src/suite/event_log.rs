//! Event log cases: cursors, queries and paging, retention, concurrent
//! appenders, deletion.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::Event;
use agent_adaptor_core::driver::Role;
use agent_adaptor_core::event::{EventMeta, Phase, TextDelta};
use agent_adaptor_core::thread::{
    EventQuery, NewEvent, RecordedEvent, Retention, StoreError, ThreadStore,
};
use chrono::Utc;

use super::{Outcome, ensure, must, unique_key};

/// A text delta of run `run` numbered `sequence`, with awkward text
/// (quotes, backslashes, newlines, non-ASCII).
pub fn sample_event(run: &str, sequence: u64) -> Event {
    Event::TextDelta(TextDelta {
        meta: EventMeta {
            run_id: Arc::from(run),
            thread_key: None,
            sequence,
            time: Utc::now(),
            source: None,
        },
        message_id: "m1".into(),
        text: format!("ünïcødé 🧵 \"{run}\" \\ #{sequence}\n"),
        role: Role::Assistant,
        phase: Phase::Content,
    })
}

/// `n` events of run `run`, the first carrying the run's prompt.
pub fn sample_run(run: &str, n: u64) -> Vec<NewEvent> {
    (1..=n)
        .map(|i| {
            let e = NewEvent::now(sample_event(run, i));
            if i == 1 {
                e.with_prompt(format!("prompt of {run}"))
            } else {
                e
            }
        })
        .collect()
}

/// Every event of `key`, following the pages.
pub async fn read_all(
    store: &dyn ThreadStore,
    key: &str,
    first: EventQuery,
) -> Result<Vec<RecordedEvent>, StoreError> {
    let mut out = Vec::new();
    let mut query = Some(first);
    while let Some(q) = query {
        let page = store.events(key, &q).await?;
        out.extend(page.events);
        query = page.next;
    }
    Ok(out)
}

fn cursors(events: &[RecordedEvent]) -> Vec<u64> {
    events.iter().map(|e| e.cursor).collect()
}

fn sequence(e: &RecordedEvent) -> u64 {
    e.event.meta().sequence
}

/// `runs` runs of `per_run` events each: cursors are 1..=N in order
/// across runs, `since(c)` returns exactly the suffix after `c` (checked
/// at every run boundary), each event decodes to what was appended.
pub async fn event_log_many_runs(store: Arc<dyn ThreadStore>, runs: u64, per_run: u64) -> Outcome {
    let key = unique_key("event_log_many_runs");
    for r in 0..runs {
        let run = format!("run-{r}");
        let got = must(
            store
                .append_events(&key, &run, &sample_run(&run, per_run))
                .await,
            "append",
        )?;
        let want: Vec<u64> = (r * per_run + 1..=(r + 1) * per_run).collect();
        ensure!(got == want, "run {r}: cursors {got:?}, want {want:?}");
    }
    let total = runs * per_run;
    let all = must(
        read_all(&*store, &key, EventQuery::since(0)).await,
        "read all",
    )?;
    ensure!(
        cursors(&all) == (1..=total).collect::<Vec<_>>(),
        "cursors not 1..={total}"
    );
    for (i, e) in all.iter().enumerate() {
        let (r, s) = (i as u64 / per_run, i as u64 % per_run + 1);
        ensure!(
            e.run_id == format!("run-{r}"),
            "event {}: run {}",
            e.cursor,
            e.run_id
        );
        ensure!(
            sequence(e) == s,
            "event {}: sequence {}",
            e.cursor,
            sequence(e)
        );
        let expected = sample_event(&e.run_id, s);
        let same_text = matches!((&e.event, &expected),
            (Event::TextDelta(a), Event::TextDelta(b)) if a.text == b.text);
        ensure!(same_text, "event {} decodes to another text", e.cursor);
        ensure!(
            e.prompt.is_some() == (s == 1),
            "event {}: prompt {:?}",
            e.cursor,
            e.prompt
        );
    }
    let step = (runs / 10).max(1);
    for r in (0..=runs).step_by(step as usize) {
        let since = r * per_run;
        let suffix = must(
            read_all(&*store, &key, EventQuery::since(since).max_events(333)).await,
            "since",
        )?;
        ensure!(
            cursors(&suffix) == (since + 1..=total).collect::<Vec<_>>(),
            "since({since}) is not the suffix"
        );
    }
    Ok(())
}

/// 40 runs of 50 events (see [`event_log_many_runs`]).
pub async fn event_log_cursors_and_since(store: Arc<dyn ThreadStore>) -> Outcome {
    event_log_many_runs(store, 40, 50).await
}

/// Range, tail and bounded pages: each window is returned whole across
/// pages, in order, without gaps; a page never exceeds its event bound;
/// an unknown key has an empty log.
pub async fn event_log_windows_and_paging(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("event_log_windows_and_paging");
    must(
        store.append_events(&key, "r1", &sample_run("r1", 30)).await,
        "append",
    )?;
    let cases: [(EventQuery, Vec<u64>); 5] = [
        (EventQuery::range(5, 12), (5..12).collect()),
        (EventQuery::tail(7), (24..=30).collect()),
        (EventQuery::tail(100).max_events(4), (1..=30).collect()),
        (EventQuery::range(3, 29).max_events(5), (3..29).collect()),
        (EventQuery::since(10).max_bytes(1), (11..=30).collect()),
    ];
    for (query, want) in cases {
        let mut seen = Vec::new();
        let mut next = Some(query);
        while let Some(q) = next {
            let page = must(store.events(&key, &q).await, "events")?;
            ensure!(
                page.events.len() <= q.max_events.max(1),
                "page over its bound: {q:?}"
            );
            ensure!(
                !page.events.is_empty() || page.next.is_none(),
                "empty page with a next"
            );
            seen.extend(cursors(&page.events));
            next = page.next;
        }
        ensure!(seen == want, "{query:?}: got {seen:?}");
    }
    let none = must(
        store
            .events(&unique_key("none"), &EventQuery::tail(5))
            .await,
        "unknown",
    )?;
    ensure!(
        none.events.is_empty() && none.next.is_none(),
        "unknown key has events"
    );
    let bad = store.append_events(&key, "", &sample_run("x", 1)).await;
    ensure!(
        matches!(bad, Err(StoreError::Invalid(_))),
        "empty run id: {bad:?}"
    );
    Ok(())
}

/// Retention by count keeps the newest; by age drops what is older (a
/// prefix); cursors keep growing after pruning and after `delete`.
pub async fn event_log_retention(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("event_log_retention");
    let old = Utc::now() - chrono::Duration::hours(3);
    let aged: Vec<NewEvent> = sample_run("old", 6)
        .into_iter()
        .map(|mut e| {
            e.recorded_at = old;
            e
        })
        .collect();
    must(store.append_events(&key, "old", &aged).await, "append old")?;
    must(
        store
            .append_events(&key, "new", &sample_run("new", 10))
            .await,
        "append new",
    )?;
    let by_age = Retention::keep_all().max_age(Duration::from_secs(3600));
    let dropped = must(store.prune_events(&key, &by_age).await, "prune by age")?;
    ensure!(dropped == 6, "by age dropped {dropped}");
    let left = must(read_all(&*store, &key, EventQuery::since(0)).await, "read")?;
    ensure!(
        cursors(&left) == (7..=16).collect::<Vec<_>>(),
        "after age: {:?}",
        cursors(&left)
    );
    let dropped = must(
        store.prune_events(&key, &Retention::keep_last(4)).await,
        "by count",
    )?;
    ensure!(dropped == 6, "by count dropped {dropped}");
    let left = must(read_all(&*store, &key, EventQuery::since(0)).await, "read")?;
    ensure!(
        cursors(&left) == (13..=16).collect::<Vec<_>>(),
        "after count: {:?}",
        cursors(&left)
    );
    let tail = must(store.events(&key, &EventQuery::tail(2)).await, "tail")?;
    ensure!(cursors(&tail.events) == vec![15, 16], "tail after pruning");
    let none = must(
        store.prune_events(&key, &Retention::keep_all()).await,
        "keep all",
    )?;
    ensure!(none == 0, "keep_all dropped {none}");
    must(
        store.prune_events(&key, &Retention::keep_last(0)).await,
        "drop all",
    )?;
    let next = must(
        store
            .append_events(&key, "later", &sample_run("later", 1))
            .await,
        "append",
    )?;
    ensure!(next == vec![17], "after pruning everything: {next:?}");
    must(store.delete(&key).await, "delete")?;
    let gone = must(read_all(&*store, &key, EventQuery::since(0)).await, "read")?;
    ensure!(gone.is_empty(), "delete left {} events", gone.len());
    let next = must(
        store
            .append_events(&key, "again", &sample_run("again", 1))
            .await,
        "append",
    )?;
    ensure!(next == vec![18], "cursors reused after delete: {next:?}");
    Ok(())
}

/// Eight tasks append 20 batches of 7 to one key at once: every cursor
/// 1..=N is used exactly once and every batch got consecutive cursors.
pub async fn event_log_concurrent_appenders(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("event_log_concurrent_appenders");
    let mut tasks = Vec::new();
    for t in 0..8 {
        let (store, key) = (store.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            let mut batches = Vec::new();
            for b in 0..20 {
                let run = format!("t{t}-b{b}");
                batches.push(
                    store
                        .append_events(&key, &run, &sample_run(&run, 7))
                        .await?,
                );
            }
            Ok::<_, StoreError>(batches)
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        let batches = task.await.map_err(|e| format!("task: {e}"))?;
        for batch in must(batches, "append")? {
            ensure!(
                batch.windows(2).all(|w| w[1] == w[0] + 1) && batch.len() == 7,
                "batch not consecutive: {batch:?}"
            );
            all.extend(batch);
        }
    }
    all.sort_unstable();
    ensure!(
        all == (1..=8 * 20 * 7).collect::<Vec<u64>>(),
        "cursors lost or reused"
    );
    let read = must(read_all(&*store, &key, EventQuery::since(0)).await, "read")?;
    ensure!(cursors(&read) == all, "the log differs from the appends");
    for e in &read {
        let first = (e.cursor - 1) % 7 == 0;
        ensure!(
            sequence(e) == (e.cursor - 1) % 7 + 1 && e.prompt.is_some() == first,
            "batch {} torn at {}",
            e.run_id,
            e.cursor
        );
    }
    Ok(())
}
