//! Reading the conversation out of a request body, per protocol: the text of
//! the first user message (where script keywords are looked for) and the
//! number of assistant turns already in the history (which scripted reply is
//! due).

use serde_json::Value;

use super::Protocol;

/// What the script needs to know about a request's conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conversation {
    /// All user text before the first assistant turn, joined with `\n`
    /// (string contents and text parts/blocks; not tool results, images or
    /// system/developer messages).
    pub first_user_text: String,
    /// The number of assistant turns in the history. A turn is a run of
    /// consecutive assistant-side entries: Anthropic `messages[]` role
    /// `assistant`; Chat `messages[]` role `assistant`; Responses `input[]`
    /// items `message` role `assistant`, `function_call`, `reasoning` and the
    /// other model-output item types; Gemini `contents[]` role `model`.
    ///
    /// Parallel tool calls are one turn when the history holds them as one
    /// answer: one Chat / Anthropic assistant message, one Gemini `model`
    /// content, or for Responses all `function_call` items before their
    /// `function_call_output`s (as Codex and the OpenAI docs send them;
    /// call, output, call, output reads as two turns).
    pub assistant_turns: usize,
}

/// Which side of the conversation a history entry is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    User,
    Assistant,
    /// system / developer messages: neither start nor end a turn.
    Neutral,
}

/// Extracts the conversation from a model request body. `None` when the body
/// has no conversation at all (no `messages` / `input` / `contents`).
pub fn conversation(protocol: Protocol, body: &Value) -> Option<Conversation> {
    let entries: Vec<(Side, Vec<String>)> = match protocol {
        Protocol::AnthropicMessages => body
            .get("messages")?
            .as_array()?
            .iter()
            .map(|message| role_entry(message, "assistant"))
            .collect(),
        Protocol::ChatCompletions => body
            .get("messages")?
            .as_array()?
            .iter()
            .map(|message| role_entry(message, "assistant"))
            .collect(),
        Protocol::Gemini => body
            .get("contents")?
            .as_array()?
            .iter()
            .map(gemini_entry)
            .collect(),
        Protocol::Responses => match body.get("input")? {
            Value::String(text) => vec![(Side::User, vec![text.clone()])],
            Value::Array(items) => items.iter().map(responses_entry).collect(),
            _ => return None,
        },
    };
    Some(summarize(&entries))
}

fn summarize(entries: &[(Side, Vec<String>)]) -> Conversation {
    let mut texts = Vec::new();
    let mut seen_assistant = false;
    let mut turns = 0;
    let mut in_assistant_run = false;
    for (side, entry_texts) in entries {
        match side {
            Side::User => {
                in_assistant_run = false;
                if !seen_assistant {
                    texts.extend(entry_texts.iter().cloned());
                }
            }
            Side::Assistant => {
                seen_assistant = true;
                if !in_assistant_run {
                    turns += 1;
                    in_assistant_run = true;
                }
            }
            Side::Neutral => {}
        }
    }
    Conversation {
        first_user_text: texts.join("\n"),
        assistant_turns: turns,
    }
}

/// Anthropic and Chat messages: `{role, content}` where content is a string
/// or an array of parts/blocks.
fn role_entry(message: &Value, assistant_role: &str) -> (Side, Vec<String>) {
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    let side = match role {
        "user" => Side::User,
        r if r == assistant_role => Side::Assistant,
        // Chat `tool` / legacy `function` results answer the assistant and end
        // its turn.
        "tool" | "function" => Side::User,
        _ => Side::Neutral,
    };
    let texts = if side == Side::User && role == "user" {
        content_texts(message.get("content"))
    } else {
        Vec::new()
    };
    (side, texts)
}

/// Text of a string content or of the text parts of an array content
/// (Anthropic `{"type":"text"}`, Chat `{"type":"text"}`, Responses
/// `{"type":"input_text"}`); tool results, images and the like are skipped.
fn content_texts(content: Option<&Value>) -> Vec<String> {
    match content {
        Some(Value::String(text)) => vec![text.clone()],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(text) => Some(text.clone()),
                Value::Object(object) => {
                    let kind = object.get("type").and_then(Value::as_str);
                    match kind {
                        Some("text" | "input_text") | None => object
                            .get("text")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        _ => None,
                    }
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn gemini_entry(content: &Value) -> (Side, Vec<String>) {
    let role = content
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or("user");
    let side = match role {
        "model" => Side::Assistant,
        "user" | "function" | "tool" => Side::User,
        _ => Side::Neutral,
    };
    let texts = if side == Side::User {
        content
            .get("parts")
            .and_then(Value::as_array)
            .map(|parts| {
                parts
                    .iter()
                    .filter(|part| part.get("thought").and_then(Value::as_bool) != Some(true))
                    .filter_map(|part| part.get("text").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    (side, texts)
}

fn responses_entry(item: &Value) -> (Side, Vec<String>) {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    match kind {
        "message" => {
            let role = item.get("role").and_then(Value::as_str).unwrap_or("");
            match role {
                "user" => (Side::User, content_texts(item.get("content"))),
                "assistant" => (Side::Assistant, Vec::new()),
                _ => (Side::Neutral, Vec::new()),
            }
        }
        // Results of tool calls come from the client side.
        "function_call_output"
        | "custom_tool_call_output"
        | "local_shell_call_output"
        | "mcp_call_output"
        | "computer_call_output"
        | "tool_search_output" => (Side::User, Vec::new()),
        // Everything else the model produced.
        "function_call"
        | "custom_tool_call"
        | "local_shell_call"
        | "reasoning"
        | "web_search_call"
        | "file_search_call"
        | "computer_call"
        | "image_generation_call"
        | "code_interpreter_call"
        | "mcp_call"
        | "tool_search_call" => (Side::Assistant, Vec::new()),
        _ => (Side::Neutral, Vec::new()),
    }
}
