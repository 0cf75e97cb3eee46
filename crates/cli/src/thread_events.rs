//! `agent-adaptor threads show KEY --events`: a thread's recorded events,
//! page by page (each page bounded), oldest first.
//!
//! With `--json`, each event is the line `run --json` printed for it, with
//! its `cursor` (and, on a run's first event, the run's `prompt`): a host
//! that followed a run live can catch up with `--since LAST_CURSOR`.

use std::io::Write;

use agent_adaptor_core::Event;
use agent_adaptor_core::thread::{EventQuery, RecordedEvent, StoreError};

use crate::error::CliError;
use crate::json_out;
use crate::store::OpenedStore;

/// Print `key`'s events that `first` selects, following its pages.
pub async fn show_events(
    opened: &OpenedStore,
    key: &str,
    first: EventQuery,
    json_out: bool,
) -> Result<(), CliError> {
    let failed = |e: StoreError| CliError::failure(format!("cannot read the thread's events: {e}"));
    let mut out = std::io::stdout().lock();
    let mut query = Some(first);
    let mut shown = 0u64;
    while let Some(q) = query {
        let page = opened.store.events(key, &q).await.map_err(failed)?;
        for record in &page.events {
            let line = if json_out {
                json_line(record)
            } else {
                text_line(record)
            };
            writeln!(out, "{line}").map_err(|e| CliError::failure(format!("stdout: {e}")))?;
        }
        shown += page.events.len() as u64;
        query = page.next;
    }
    if shown == 0 && !json_out {
        writeln!(
            out,
            "no recorded events for {key:?} in {}",
            opened.description
        )
        .map_err(|e| CliError::failure(format!("stdout: {e}")))?;
    }
    Ok(())
}

/// The `run --json` line of the event, with `cursor` (and `prompt`).
pub fn json_line(record: &RecordedEvent) -> String {
    let line = json_out::event_line(&record.event);
    let mut head = format!("{{\"cursor\":{}", record.cursor);
    if let Some(prompt) = &record.prompt {
        head.push_str(",\"prompt\":");
        head.push_str(&serde_json::Value::from(prompt.as_str()).to_string());
    }
    match line.strip_prefix('{') {
        Some(rest) if rest != "}" => format!("{head},{rest}"),
        _ => format!("{head}}}"),
    }
}

/// One line for a person: cursor, run, kind and, for text, the text.
fn text_line(record: &RecordedEvent) -> String {
    let mut line = String::new();
    if let Some(prompt) = &record.prompt {
        line.push_str(&format!(
            "{:>8} user: {}\n",
            "",
            crate::error::one_line(prompt)
        ));
    }
    let detail = match &record.event {
        Event::TextDelta(d) if !d.text.is_empty() => format!(" {:?}", d.text),
        Event::RunFinished(f) if f.failed => {
            format!(" failed: {}", crate::error::one_line(&f.message))
        }
        _ => String::new(),
    };
    line.push_str(&format!(
        "{:>8} {} {}{detail}",
        record.cursor,
        record.run_id,
        record.event.kind_name()
    ));
    line
}
