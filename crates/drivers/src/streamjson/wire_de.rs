//! Deserializing the tagged stream-json types tag first (see
//! [`crate::tagged`]): what `#[serde(tag = "type", rename_all =
//! "snake_case")]` with a `#[serde(other)]` catch-all did, without buffering
//! every line. Each variant's fields are read through a private struct with
//! the same field attributes as the variant.

use serde::Deserialize;
use serde_json::Value;

use super::wire::{
    AssistantLine, Block, ControlCancelLine, ControlRequestLine, ControlResponseLine, Delta, Line,
    ResultLine, SseEvent, StreamEventLine, SystemLine, UserLine,
};
use crate::tagged::{self, Fields, Tagged};

tagged::deserialize_tagged!(Line, Block, SseEvent, Delta);

impl<'de> Tagged<'de> for Line {
    const EXPECTING: &'static str = "internally tagged enum Line";

    fn variant<F: Fields<'de>>(tag: &str, f: F) -> Result<Self, F::Error> {
        Ok(match tag {
            "system" => Line::System(f.read::<SystemLine>()?),
            "assistant" => Line::Assistant(f.read::<AssistantLine>()?),
            "user" => Line::User(f.read::<UserLine>()?),
            "stream_event" => Line::StreamEvent(f.read::<StreamEventLine>()?),
            "result" => Line::Result(f.read::<ResultLine>()?),
            "control_request" => Line::ControlRequest(f.read::<ControlRequestLine>()?),
            "control_response" => Line::ControlResponse(f.read::<ControlResponseLine>()?),
            "control_cancel_request" => Line::ControlCancelRequest(f.read::<ControlCancelLine>()?),
            _ => {
                f.skip()?;
                Line::Unknown
            }
        })
    }
}

impl<'de> Tagged<'de> for Block {
    const EXPECTING: &'static str = "internally tagged enum Block";

    fn variant<F: Fields<'de>>(tag: &str, f: F) -> Result<Self, F::Error> {
        #[derive(Deserialize)]
        struct Text {
            #[serde(default)]
            text: String,
        }
        #[derive(Deserialize)]
        struct Thinking {
            #[serde(default)]
            thinking: String,
        }
        #[derive(Deserialize)]
        struct ToolUse {
            #[serde(default)]
            id: String,
            #[serde(default)]
            name: String,
            #[serde(default)]
            input: Value,
        }
        #[derive(Deserialize)]
        struct ToolResult {
            #[serde(default)]
            tool_use_id: String,
            #[serde(default)]
            content: Value,
            #[serde(default)]
            is_error: bool,
        }
        Ok(match tag {
            "text" => Block::Text {
                text: f.read::<Text>()?.text,
            },
            "thinking" => Block::Thinking {
                thinking: f.read::<Thinking>()?.thinking,
            },
            "redacted_thinking" => {
                f.skip()?;
                Block::RedactedThinking {}
            }
            "tool_use" => {
                let t: ToolUse = f.read()?;
                Block::ToolUse {
                    id: t.id,
                    name: t.name,
                    input: t.input,
                }
            }
            "tool_result" => {
                let t: ToolResult = f.read()?;
                Block::ToolResult {
                    tool_use_id: t.tool_use_id,
                    content: t.content,
                    is_error: t.is_error,
                }
            }
            _ => {
                f.skip()?;
                Block::Other
            }
        })
    }
}

impl<'de> Tagged<'de> for SseEvent {
    const EXPECTING: &'static str = "internally tagged enum SseEvent";

    fn variant<F: Fields<'de>>(tag: &str, f: F) -> Result<Self, F::Error> {
        #[derive(Deserialize)]
        struct MessageStart {
            message: super::wire::ApiMessage,
        }
        #[derive(Deserialize)]
        struct ContentBlockStart {
            index: u32,
            content_block: Block,
        }
        #[derive(Deserialize)]
        struct ContentBlockDelta {
            index: u32,
            delta: Delta,
        }
        #[derive(Deserialize)]
        struct ContentBlockStop {
            index: u32,
        }
        Ok(match tag {
            "message_start" => SseEvent::MessageStart {
                message: f.read::<MessageStart>()?.message,
            },
            "content_block_start" => {
                let e: ContentBlockStart = f.read()?;
                SseEvent::ContentBlockStart {
                    index: e.index,
                    content_block: e.content_block,
                }
            }
            "content_block_delta" => {
                let e: ContentBlockDelta = f.read()?;
                SseEvent::ContentBlockDelta {
                    index: e.index,
                    delta: e.delta,
                }
            }
            "content_block_stop" => SseEvent::ContentBlockStop {
                index: f.read::<ContentBlockStop>()?.index,
            },
            _ => {
                f.skip()?;
                SseEvent::Other
            }
        })
    }
}

impl<'de> Tagged<'de> for Delta {
    const EXPECTING: &'static str = "internally tagged enum Delta";

    fn variant<F: Fields<'de>>(tag: &str, f: F) -> Result<Self, F::Error> {
        #[derive(Deserialize)]
        struct TextDelta {
            #[serde(default)]
            text: String,
        }
        #[derive(Deserialize)]
        struct ThinkingDelta {
            #[serde(default)]
            thinking: String,
        }
        #[derive(Deserialize)]
        struct InputJsonDelta {
            #[serde(default)]
            partial_json: String,
        }
        Ok(match tag {
            "text_delta" => Delta::TextDelta {
                text: f.read::<TextDelta>()?.text,
            },
            "thinking_delta" => Delta::ThinkingDelta {
                thinking: f.read::<ThinkingDelta>()?.thinking,
            },
            "input_json_delta" => Delta::InputJsonDelta {
                partial_json: f.read::<InputJsonDelta>()?.partial_json,
            },
            _ => {
                f.skip()?;
                Delta::Other
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_delta_line_decodes_whatever_the_key_order() {
        for raw in [
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"hé\n"}},"session_id":"s"}"#,
            r#"{"session_id":"s","event":{"delta":{"text":"hé\n","type":"text_delta"},"index":2,"type":"content_block_delta"},"type":"stream_event"}"#,
        ] {
            let line: Line = serde_json::from_str(raw).unwrap();
            let Line::StreamEvent(e) = line else {
                panic!("{raw}")
            };
            let SseEvent::ContentBlockDelta {
                index: 2,
                delta: Delta::TextDelta { text },
            } = e.event
            else {
                panic!("{raw}")
            };
            assert_eq!(text, "hé\n");
        }
    }

    #[test]
    fn unknown_types_are_the_catch_all_at_every_level() {
        let line: Line = serde_json::from_str(r#"{"type":"rate_limit_event","x":[1]}"#).unwrap();
        assert!(matches!(line, Line::Unknown));
        let raw = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}}}"#;
        let Line::StreamEvent(e) = serde_json::from_str(raw).unwrap() else {
            panic!()
        };
        assert!(matches!(
            e.event,
            SseEvent::ContentBlockDelta {
                delta: Delta::Other,
                ..
            }
        ));
        let raw = r#"{"type":"assistant","message":{"id":"m","content":[{"type":"server_tool_use"},{"type":"text","text":"t"}]}}"#;
        let Line::Assistant(a) = serde_json::from_str(raw).unwrap() else {
            panic!()
        };
        assert!(matches!(a.message.content[0], Block::Other));
        assert!(matches!(&a.message.content[1], Block::Text { text } if text == "t"));
    }

    #[test]
    fn malformed_lines_are_errors() {
        for raw in [
            r#"{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta"}}}"#,
            r#"{"type":"stream_event"}"#,
            r#"{"event":{}}"#,
            r#"{"type":"system","subtype":"init""#,
            r#"{"type":"unknown_thing","x":[}"#,
            r#"["system"]"#,
        ] {
            assert!(serde_json::from_str::<Line>(raw).is_err(), "{raw}");
        }
    }
}
