//! What the web chat calls a thread: the name a person gave it, else its
//! first prompt.
//!
//! A rename is one record in the event log of a sibling key
//! ([`title_key`]): the thread's own record belongs to its driver (each
//! turn writes it again) and its own log to its runs. The first prompt is
//! the one the event log keeps with a run's first record, for every
//! driver (the conversation driver also keeps it with its record).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use agent_adaptor_bridges::agui::agui_thread_key;
use agent_adaptor_core::thread::event_log::NewEvent;
use agent_adaptor_core::thread::{EventQuery, StoreError};
use agent_adaptor_core::{Event, EventMeta, Notice, ThreadStore};
use serde_json::{Value, json};

use super::WEB_NAMESPACE;
use agent_adaptor_llm::agent::session::TITLE_CHARS;

/// The namespace of the sibling keys that hold renames.
const TITLE_NAMESPACE: &str = "web.title";

/// The notice kind of a rename.
const RENAMED: &str = "web.renamed";

/// The run id the rename records carry.
const RENAME_RUN: &str = "rename";

/// The longest name a thread may be given, in characters.
pub(super) const MAX_TITLE_CHARS: usize = 200;

/// The key whose log holds web thread `id`'s renames.
pub(super) fn title_key(id: &str) -> String {
    agui_thread_key(TITLE_NAMESPACE, id)
}

/// Record `title` as web thread `id`'s name.
pub(super) async fn rename(
    store: &dyn ThreadStore,
    id: &str,
    title: &str,
) -> Result<(), StoreError> {
    let key = title_key(id);
    let event = Event::Notice(Notice {
        meta: EventMeta {
            run_id: Arc::from(RENAME_RUN),
            thread_key: Some(Arc::from(key.as_str())),
            sequence: 0,
            time: chrono::Utc::now(),
            source: None,
        },
        kind: Cow::Borrowed(RENAMED),
        text: String::new(),
        item: None,
        metadata: BTreeMap::new(),
        data: Some(json!({ "title": title })),
    });
    store
        .append_events(&key, RENAME_RUN, &[NewEvent::now(event)])
        .await
        .map(|_| ())
}

/// The newest name given to web thread `id`, if any (`None` too when the
/// store keeps no log).
pub(super) async fn renamed(
    store: &dyn ThreadStore,
    id: &str,
) -> Result<Option<String>, StoreError> {
    let key = title_key(id);
    let mut query = Some(EventQuery::since(0));
    let mut newest = None;
    while let Some(q) = query {
        let page = match store.events(&key, &q).await {
            Ok(page) => page,
            Err(StoreError::Unsupported(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        for rec in &page.events {
            if let Event::Notice(n) = &rec.event
                && n.kind == RENAMED
                && let Some(Value::String(t)) = n.data.as_ref().and_then(|d| d.get("title"))
            {
                newest = Some(t.clone());
            }
        }
        query = page.next;
    }
    Ok(newest)
}

/// The first prompt web thread `id`'s event log still holds, cut to a
/// title's length.
pub(super) async fn first_prompt(
    store: &dyn ThreadStore,
    id: &str,
) -> Result<Option<String>, StoreError> {
    let key = agui_thread_key(WEB_NAMESPACE, id);
    // The first record of a run carries its prompt: the log's first
    // record is one, unless pruning cut a run in two.
    let query = EventQuery::since(0).max_events(64);
    match store.events(&key, &query).await {
        Ok(page) => Ok(page
            .events
            .iter()
            .find_map(|r| r.prompt.as_deref())
            .map(|p| p.chars().take(TITLE_CHARS).collect())),
        Err(StoreError::Unsupported(_)) => Ok(None),
        Err(e) => Err(e),
    }
}
