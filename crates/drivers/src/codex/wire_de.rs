//! Deserializing the tagged `codex exec --json` types tag first (see
//! [`crate::tagged`]): what `#[serde(tag = "type")]` with a
//! `#[serde(other)]` catch-all (and `Item`'s `#[serde(flatten)]`) did,
//! without buffering every line twice. Each variant's fields are read
//! through a private struct with the same field attributes as the variant.

use serde::Deserialize;
use serde_json::Value;

use super::wire::{ErrorBody, ExecEvent, ExecUsage, Item, ItemDetails};
use crate::tagged::{self, Fields, Tagged};

tagged::deserialize_tagged!(ExecEvent, Item);

impl<'de> Tagged<'de> for ExecEvent {
    const EXPECTING: &'static str = "internally tagged enum ExecEvent";

    fn variant<F: Fields<'de>>(tag: &str, f: F) -> Result<Self, F::Error> {
        #[derive(Deserialize)]
        struct ThreadStarted {
            #[serde(default)]
            thread_id: String,
        }
        #[derive(Deserialize)]
        struct WithItem {
            item: Item,
        }
        #[derive(Deserialize)]
        struct TurnCompleted {
            #[serde(default)]
            usage: Option<ExecUsage>,
        }
        #[derive(Deserialize)]
        struct TurnFailed {
            #[serde(default)]
            error: Option<ErrorBody>,
        }
        #[derive(Deserialize)]
        struct Error {
            #[serde(default)]
            message: String,
        }
        Ok(match tag {
            "thread.started" => ExecEvent::ThreadStarted {
                thread_id: f.read::<ThreadStarted>()?.thread_id,
            },
            "turn.started" => {
                f.skip()?;
                ExecEvent::TurnStarted
            }
            "item.started" => ExecEvent::ItemStarted {
                item: f.read::<WithItem>()?.item,
            },
            "item.updated" => ExecEvent::ItemUpdated {
                item: f.read::<WithItem>()?.item,
            },
            "item.completed" => ExecEvent::ItemCompleted {
                item: f.read::<WithItem>()?.item,
            },
            "turn.completed" => ExecEvent::TurnCompleted {
                usage: f.read::<TurnCompleted>()?.usage,
            },
            "turn.failed" => ExecEvent::TurnFailed {
                error: f.read::<TurnFailed>()?.error,
            },
            "error" => ExecEvent::Error {
                message: f.read::<Error>()?.message,
            },
            _ => {
                f.skip()?;
                ExecEvent::Unknown
            }
        })
    }
}

/// An item is tagged by its details' `type`; every variant's struct also
/// reads the common `id`.
impl<'de> Tagged<'de> for Item {
    const EXPECTING: &'static str = "struct Item";

    fn variant<F: Fields<'de>>(tag: &str, f: F) -> Result<Self, F::Error> {
        #[derive(Deserialize)]
        struct Text {
            #[serde(default)]
            id: String,
            #[serde(default)]
            text: String,
        }
        #[derive(Deserialize)]
        struct CommandExecution {
            #[serde(default)]
            id: String,
            #[serde(default)]
            command: String,
            #[serde(default)]
            aggregated_output: String,
            #[serde(default)]
            exit_code: Option<i64>,
            #[serde(default)]
            status: String,
        }
        #[derive(Deserialize)]
        struct FileChange {
            #[serde(default)]
            id: String,
            #[serde(default)]
            changes: Value,
            #[serde(default)]
            status: String,
        }
        #[derive(Deserialize)]
        struct McpToolCall {
            #[serde(default)]
            id: String,
            #[serde(default)]
            server: String,
            #[serde(default)]
            tool: String,
            #[serde(default)]
            arguments: Value,
            #[serde(default)]
            result: Option<Value>,
            #[serde(default)]
            error: Option<Value>,
            #[serde(default)]
            status: String,
        }
        #[derive(Deserialize)]
        struct WebSearch {
            #[serde(default)]
            id: String,
            #[serde(default)]
            query: String,
        }
        #[derive(Deserialize)]
        struct Error {
            #[serde(default)]
            id: String,
            #[serde(default)]
            message: String,
        }
        #[derive(Deserialize)]
        struct Other {
            #[serde(default)]
            id: String,
        }
        let (id, details) = match tag {
            "agent_message" => {
                let t: Text = f.read()?;
                (t.id, ItemDetails::AgentMessage { text: t.text })
            }
            "reasoning" => {
                let t: Text = f.read()?;
                (t.id, ItemDetails::Reasoning { text: t.text })
            }
            "command_execution" => {
                let c: CommandExecution = f.read()?;
                let details = ItemDetails::CommandExecution {
                    command: c.command,
                    aggregated_output: c.aggregated_output,
                    exit_code: c.exit_code,
                    status: c.status,
                };
                (c.id, details)
            }
            "file_change" => {
                let c: FileChange = f.read()?;
                let details = ItemDetails::FileChange {
                    changes: c.changes,
                    status: c.status,
                };
                (c.id, details)
            }
            "mcp_tool_call" => {
                let c: McpToolCall = f.read()?;
                let details = ItemDetails::McpToolCall {
                    server: c.server,
                    tool: c.tool,
                    arguments: c.arguments,
                    result: c.result,
                    error: c.error,
                    status: c.status,
                };
                (c.id, details)
            }
            "web_search" => {
                let w: WebSearch = f.read()?;
                (w.id, ItemDetails::WebSearch { query: w.query })
            }
            "error" => {
                let e: Error = f.read()?;
                (e.id, ItemDetails::Error { message: e.message })
            }
            _ => (f.read::<Other>()?.id, ItemDetails::Other),
        };
        Ok(Item { id, details })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The previous, derived form of `Item`: the reference behaviour.
    #[derive(Debug, Deserialize)]
    struct DerivedItem {
        #[serde(default)]
        id: String,
        #[serde(flatten)]
        details: ItemDetails,
    }

    #[test]
    fn items_agree_with_the_derived_form() {
        let cases = [
            r#"{"id":"item_1","type":"agent_message","text":"hé"}"#,
            r#"{"type":"reasoning","id":"item_2","text":"r"}"#,
            r#"{"text":"t","type":"agent_message"}"#,
            r#"{"id":"i","type":"command_execution","command":"ls","aggregated_output":"a","exit_code":0,"status":"completed"}"#,
            r#"{"id":"i","type":"command_execution","exit_code":null,"status":"in_progress"}"#,
            r#"{"id":"i","type":"file_change","changes":[{"path":"a","kind":"add"}],"status":"completed"}"#,
            r#"{"id":"i","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"a":1},"result":{"content":[]},"error":null,"status":"completed"}"#,
            r#"{"id":"i","type":"web_search","query":"q"}"#,
            r#"{"id":"i","type":"error","message":"m"}"#,
            r#"{"id":"i","type":"todo_list","items":[{"text":"x","completed":false}]}"#,
            r#"{"id":7,"type":"agent_message","text":"t"}"#,
            r#"{"id":"i","type":"agent_message","text":7}"#,
            r#"{"id":"i"}"#,
            r#"{"id":"i","type":"agent_message","text":"t""#,
        ];
        for case in cases {
            let ours = serde_json::from_str::<Item>(case);
            let reference = serde_json::from_str::<DerivedItem>(case);
            match (&ours, &reference) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.id, b.id, "{case}");
                    assert_eq!(
                        format!("{:?}", a.details),
                        format!("{:?}", b.details),
                        "{case}"
                    );
                }
                (Err(_), Err(_)) => {}
                _ => panic!("{case}: ours {ours:?}, derived {reference:?}"),
            }
        }
    }

    #[test]
    fn events_decode_and_unknown_ones_are_caught() {
        let e: ExecEvent = serde_json::from_str(
            r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"done"}}"#,
        )
        .unwrap();
        let ExecEvent::ItemCompleted { item } = e else {
            panic!()
        };
        assert_eq!(item.id, "item_3");
        assert!(matches!(item.details, ItemDetails::AgentMessage { text } if text == "done"));
        let e: ExecEvent =
            serde_json::from_str(r#"{"type":"turn.completed","usage":{"input_tokens":3}}"#)
                .unwrap();
        assert!(matches!(
            e,
            ExecEvent::TurnCompleted { usage: Some(u) } if u.input_tokens == 3
        ));
        let e: ExecEvent = serde_json::from_str(r#"{"type":"turn.started","x":1}"#).unwrap();
        assert!(matches!(e, ExecEvent::TurnStarted));
        let e: ExecEvent = serde_json::from_str(r#"{"type":"session.configured"}"#).unwrap();
        assert!(matches!(e, ExecEvent::Unknown));
        for bad in [
            r#"{"type":"item.completed"}"#,
            r#"{"type":"item.completed","item":{"id":"x"}}"#,
            r#"{"thread_id":"t"}"#,
            r#"{"type":"thread.started","thread_id":"t""#,
        ] {
            assert!(serde_json::from_str::<ExecEvent>(bad).is_err(), "{bad}");
        }
    }
}
