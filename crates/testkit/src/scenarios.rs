//! Mock-model scripts shared by the tests that drive real CLIs through
//! different layers (the driver alone, the AG-UI bridge with the official
//! client): one scenario, written once.

use serde_json::json;

use crate::mock::{Reply, Script};

/// The observation scenario: the model writes a todo list, updates it, and
/// delegates to a subagent (Claude Code's `Task`) that runs one shell
/// command. Prompt with [`observe::OBSERVE_PARENT`]; the subagent's prompt carries
/// [`observe::OBSERVE_CHILD`].
pub mod observe {
    use super::{Reply, Script, json};

    /// The parent's prompt keyword.
    pub const OBSERVE_PARENT: &str = "OBSPARENT";
    /// The subagent's prompt keyword (inside its `Task` prompt).
    pub const OBSERVE_CHILD: &str = "OBSCHILD";
    /// The command the subagent runs (prints `from-sub-agent`).
    pub const CHILD_COMMAND: &str = "printf '%s-%s\\n' from sub-agent";
    /// What the command prints.
    pub const CHILD_OUTPUT: &str = "from-sub-agent";

    /// A `TodoWrite` call with the two items in the given statuses.
    fn todos(first: &str, second: &str) -> Reply {
        Reply::ToolCall {
            name: "TodoWrite".into(),
            arguments: json!({"todos": [
                {"content": "Plan the work", "status": first, "activeForm": "Planning the work"},
                {"content": "Delegate the listing", "status": second, "activeForm": "Delegating the listing"}
            ]}),
        }
    }

    /// `TodoWrite` twice, then `Task` with a subagent that runs
    /// [`CHILD_COMMAND`] with `shell_tool`, then a final answer.
    pub fn script(shell_tool: &str) -> Script {
        Script::new()
            .on_prompt(
                OBSERVE_CHILD,
                vec![
                    Reply::ToolCall {
                        name: shell_tool.into(),
                        arguments: json!({"command": CHILD_COMMAND, "description": "Print a word"}),
                    },
                    Reply::Text("The sub-agent ran the command.".into()),
                ],
            )
            .on_prompt(
                OBSERVE_PARENT,
                vec![
                    todos("in_progress", "pending"),
                    todos("completed", "in_progress"),
                    Reply::ToolCall {
                        name: "Task".into(),
                        arguments: json!({
                            "description": "Print a word",
                            "prompt": format!("{OBSERVE_CHILD}: run the command"),
                            "subagent_type": "general-purpose",
                            "run_in_background": false
                        }),
                    },
                    Reply::Text("All done.".into()),
                ],
            )
    }

    /// Environment Claude Code needs for the scenario: its task-list tools
    /// off, so the model's `TodoWrite` is the todo tool it offers.
    pub const CLAUDE_ENV: &[(&str, &str)] = &[("CLAUDE_CODE_ENABLE_TASKS", "false")];
}
