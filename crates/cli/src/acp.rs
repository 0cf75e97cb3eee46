//! `agent-adaptor acp`: the library's drivers served as an ACP agent on
//! stdio ([`AcpServer`]): an editor starts this command and speaks ACP
//! (protocol v1) on its stdin and stdout. Sessions are threads in the
//! store (`--store`, default the SQLite file `run` and `serve` use), so
//! `session/load` continues them after a restart; an llm thread's
//! conversation is replayed. Stdout carries only ACP frames; logs and
//! errors go to stderr. End of stdin ends the server: every run is
//! cancelled and its processes end.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_bridges::acp::{AcpServer, HistoryEntry, HistoryReader};
use agent_adaptor_core::driver::SessionState;
use agent_adaptor_core::{Agent, RunOptions};
use agent_adaptor_llm::agent::session::HISTORY_KEY;
use agent_adaptor_llm::{Message, MessageRole};
use serde_json::Value;

use crate::args::AcpArgs;
use crate::error::CliError;
use crate::host_record::{HostRecord, recover_dead_runs, sweep_dead_hosts};
use crate::select::{env_policy, select_with_env};
use crate::store::StoreSpec;

/// How long a cancelled run's processes get before they are killed.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Serve ACP on stdin/stdout until stdin ends.
pub async fn acp(args: AcpArgs) -> Result<(), CliError> {
    crate::serve::log::init(args.log_format);
    if let Some(line) = sweep_dead_hosts() {
        tracing::info!("{line}");
    }
    if let Some(dir) = &args.cwd
        && !dir.is_dir()
    {
        return Err(CliError::usage(format!(
            "--cwd {}: not a directory",
            dir.display()
        )));
    }
    let equipment = args.equip.load()?;
    let store = StoreSpec::parse(args.store.as_deref())?.open().await?;
    let selected = select_with_env(
        &args.driver,
        None,
        env_policy(&args.driver, args.inherit_env),
    )
    .await?;
    recover_dead_runs(&store).await;
    // Held while the server runs: nobody takes its leases for a dead one's.
    let host = HostRecord::claim(&store);
    let mut defaults = equipment.apply(RunOptions::new());
    if let Some(model) = &args.driver.model {
        defaults = defaults.model(model.clone());
    }
    // The host tools of the llm agent work in --cwd (a session's own cwd
    // is the workspace of its runs).
    let workspace = crate::tools::workspace(args.cwd.as_deref());
    for tool in crate::tools::host_tools(selected.name, &workspace) {
        defaults = defaults.tool(tool);
    }
    let agent = Agent::builder_shared(selected.driver.clone())
        .thread_store(store.store.clone())
        .lease_owner(host.instance(), host.epoch())
        .cancel_grace(CANCEL_GRACE)
        .defaults(defaults)
        .build()
        .map_err(|e| CliError::failure(e.to_string()))?;
    tracing::info!(driver = %selected.label, threads = %store.description, "serving ACP on stdio");
    let history: HistoryReader = Arc::new(llm_history);
    let server = AcpServer::with_threads(agent.clone())
        .title(selected.label.clone())
        .history(history);
    let served = server.serve(tokio::io::stdin(), tokio::io::stdout()).await;
    agent.close().await;
    drop(host);
    served.map_err(|e| CliError::failure(format!("reading stdin: {e}")))
}

/// The conversation an llm thread keeps in its state (other drivers keep
/// only their CLI's session id: nothing to replay).
pub fn llm_history(state: &SessionState) -> Option<Vec<HistoryEntry>> {
    let text = state.data.get(HISTORY_KEY)?;
    let messages: Vec<Message> = serde_json::from_str(text).ok()?;
    let mut entries = Vec::new();
    for m in messages {
        match m.role {
            MessageRole::User => entries.push(HistoryEntry::User(m.content)),
            MessageRole::Assistant => {
                entries.push(HistoryEntry::Agent(m.content));
                for call in m.tool_calls {
                    entries.push(HistoryEntry::ToolCall {
                        id: call.id,
                        name: call.name,
                        input: Some(call.arguments),
                    });
                }
            }
            MessageRole::Tool => entries.push(HistoryEntry::ToolResult {
                id: m.tool_call_id.unwrap_or_default(),
                output: Value::String(m.content),
                is_error: false,
            }),
            _ => {}
        }
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use agent_adaptor_llm::ToolCall;
    use serde_json::json;

    use super::*;

    #[test]
    fn an_llm_conversation_replays_in_order() {
        let mut assistant = Message::assistant("let me look");
        assistant
            .tool_calls
            .push(ToolCall::new("c1", "list_files", json!({"path": "."})));
        let mut tool = Message::user("a.txt");
        tool.role = MessageRole::Tool;
        tool.tool_call_id = Some("c1".into());
        let history = vec![
            Message::system("be brief"),
            Message::user("hi"),
            assistant,
            tool,
            Message::assistant("one file"),
        ];
        let state = SessionState {
            resume_id: "llm-1".into(),
            display_id: String::new(),
            data: BTreeMap::from([(
                HISTORY_KEY.to_owned(),
                serde_json::to_string(&history).unwrap(),
            )]),
        };
        let entries = llm_history(&state).unwrap();
        assert_eq!(entries.len(), 5, "{entries:?}");
        assert_eq!(entries[0], HistoryEntry::User("hi".into()));
        assert!(matches!(&entries[2], HistoryEntry::ToolCall { id, .. } if id == "c1"));
        assert_eq!(entries[4], HistoryEntry::Agent("one file".into()));
        let none = SessionState {
            resume_id: "x".into(),
            display_id: String::new(),
            data: BTreeMap::new(),
        };
        assert_eq!(llm_history(&none), None);
    }
}
