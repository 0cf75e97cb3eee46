//! What a tool call is, for the terminal: a shell command, a file edit, an
//! MCP or host tool, or something else; and what its result says (text,
//! error or not). The approval prompt and the tool rendering both show a
//! call through this module, so a command reads the same before the
//! answer and after the run.

use agent_adaptor_core::driver::ToolScope;
use serde_json::Value;

/// Lines of a command's output (or any result) shown before "… N more
/// lines".
pub const RESULT_LINES: usize = 6;
/// Lines of a diff or of an input shown before "… N more lines".
pub const INPUT_LINES: usize = 24;
/// Characters of one shown line.
const LINE_CHARS: usize = 160;

/// A tool call, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolView {
    /// A shell command (Claude `Bash`, Codex `command_execution`, Gemini
    /// `run_shell_command` …).
    Command {
        /// The command line.
        command: String,
    },
    /// File edits (Claude `Edit`/`MultiEdit`/`Write`, Codex
    /// `file_change`, …), one per file.
    Edit {
        /// The edits.
        files: Vec<FileEdit>,
    },
    /// An MCP server's or the host's tool: its input as given.
    Tool {
        /// `server/tool` or the host tool's name.
        label: String,
        /// The input.
        input: Value,
    },
    /// Anything else (read, search, …): its input as given.
    Other {
        /// The input.
        input: Value,
    },
}

/// One file's edit.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEdit {
    /// The file.
    pub path: String,
    /// The change, as unified-style lines.
    pub diff: Vec<DiffLine>,
}

/// A line of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffLine {
    /// Unchanged (context).
    Same(String),
    /// Removed.
    Removed(String),
    /// Added.
    Added(String),
    /// A hunk marker or note (`@@ … @@`, `(new file)`).
    Note(String),
}

const COMMAND_TOOLS: &[&str] = &[
    "bash",
    "command_execution",
    "commandexecution",
    "run_shell_command",
    "shell",
    "exec",
    "exec_command",
    "execute",
    "terminal",
    "run_terminal_cmd",
];

const EDIT_TOOLS: &[&str] = &[
    "edit",
    "multiedit",
    "write",
    "write_file",
    "replace",
    "edit_file",
    "file_change",
    "filechange",
    "apply_patch",
    "search_replace",
];

/// Classify the call of tool `name` (in `scope`) with arguments `args`.
pub fn classify(name: &str, scope: &ToolScope, args: &Value) -> ToolView {
    match scope {
        ToolScope::Mcp { server, tool } => {
            return ToolView::Tool {
                label: format!("{server}/{tool}"),
                input: args.clone(),
            };
        }
        ToolScope::Host => {
            return ToolView::Tool {
                label: name.to_owned(),
                input: args.clone(),
            };
        }
        _ => {}
    }
    let lower = name.to_ascii_lowercase();
    if let Some(rest) = name.strip_prefix("mcp__") {
        return ToolView::Tool {
            label: rest.replacen("__", "/", 1),
            input: args.clone(),
        };
    }
    if COMMAND_TOOLS.contains(&lower.as_str())
        && let Some(command) = command_of(args)
    {
        return ToolView::Command { command };
    }
    if EDIT_TOOLS.contains(&lower.as_str()) {
        let files = edits_of(args);
        if !files.is_empty() {
            return ToolView::Edit { files };
        }
    }
    ToolView::Other {
        input: args.clone(),
    }
}

/// The command line of `args` (`command` as a string or an argv array).
fn command_of(args: &Value) -> Option<String> {
    match args.get("command").or_else(|| args.get("cmd"))? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

fn text<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str))
}

/// The edits of `args`: Claude's `Edit` (old/new), `MultiEdit` (edits),
/// `Write` (content), Codex's changes (a unified diff or a kind per path).
fn edits_of(args: &Value) -> Vec<FileEdit> {
    if let Some(changes) = args.get("changes") {
        return codex_changes(changes);
    }
    let Some(path) = text(args, &["file_path", "path", "filePath", "absolute_path"]) else {
        return Vec::new();
    };
    let diff = if let Some(edits) = args.get("edits").and_then(Value::as_array) {
        edits
            .iter()
            .flat_map(|e| {
                line_diff(
                    text(e, &["old_string", "old_str"]).unwrap_or(""),
                    text(e, &["new_string", "new_str"]).unwrap_or(""),
                )
            })
            .collect()
    } else if let Some(new) = text(args, &["new_string", "new_str"]) {
        line_diff(text(args, &["old_string", "old_str"]).unwrap_or(""), new)
    } else if let Some(content) = text(args, &["content", "file_text"]) {
        let mut lines = vec![DiffLine::Note("(whole file)".into())];
        lines.extend(content.lines().map(|l| DiffLine::Added(l.to_owned())));
        lines
    } else {
        Vec::new()
    };
    vec![FileEdit {
        path: path.to_owned(),
        diff,
    }]
}

/// Codex's `changes`: a list of `{path, kind, diff}` or a map path → change.
fn codex_changes(changes: &Value) -> Vec<FileEdit> {
    let entries: Vec<(String, &Value)> = match changes {
        Value::Array(items) => items
            .iter()
            .map(|c| (text(c, &["path"]).unwrap_or("?").to_owned(), c))
            .collect(),
        Value::Object(map) => map.iter().map(|(p, c)| (p.clone(), c)).collect(),
        _ => Vec::new(),
    };
    entries
        .into_iter()
        .map(|(path, change)| {
            let diff = match text(change, &["diff", "unified_diff"]) {
                Some(diff) => unified(diff),
                None => {
                    let kind = change
                        .get("kind")
                        .map(|k| k.get("type").unwrap_or(k))
                        .and_then(Value::as_str)
                        .unwrap_or("change");
                    vec![DiffLine::Note(format!("({kind})"))]
                }
            };
            FileEdit { path, diff }
        })
        .collect()
}

/// The lines of a unified diff, by their first character.
fn unified(diff: &str) -> Vec<DiffLine> {
    diff.lines()
        .filter(|l| !l.starts_with("+++") && !l.starts_with("---"))
        .map(|l| {
            if let Some(rest) = l.strip_prefix('+') {
                DiffLine::Added(rest.to_owned())
            } else if let Some(rest) = l.strip_prefix('-') {
                DiffLine::Removed(rest.to_owned())
            } else if l.starts_with("@@") {
                DiffLine::Note(l.to_owned())
            } else {
                DiffLine::Same(l.strip_prefix(' ').unwrap_or(l).to_owned())
            }
        })
        .collect()
}

/// `old` → `new` as lines: the common leading and trailing lines as
/// context (two at most each side), the rest removed then added.
pub fn line_diff(old: &str, new: &str) -> Vec<DiffLine> {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut lines = Vec::new();
    let same = |l: &&str| DiffLine::Same((*l).to_owned());
    lines.extend(old[prefix.saturating_sub(2)..prefix].iter().map(same));
    lines.extend(
        old[prefix..old.len() - suffix]
            .iter()
            .map(|l| DiffLine::Removed((*l).to_owned())),
    );
    lines.extend(
        new[prefix..new.len() - suffix]
            .iter()
            .map(|l| DiffLine::Added((*l).to_owned())),
    );
    let tail = old.len() - suffix;
    lines.extend(old[tail..(tail + 2).min(old.len())].iter().map(same));
    lines
}

/// What a tool's result says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The result as text (Claude's `{"content", "is_error"}` unwrapped).
    pub text: String,
    /// The tool failed or was refused.
    pub is_error: bool,
}

/// Read a tool's result (`None`: no result was reported).
pub fn outcome(result: Option<&Value>) -> Outcome {
    let Some(result) = result else {
        return Outcome {
            text: String::new(),
            is_error: false,
        };
    };
    let flag = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
    match result {
        Value::String(s) => Outcome {
            text: s.clone(),
            is_error: false,
        },
        Value::Object(map) => {
            let status = map.get("status").and_then(Value::as_str).unwrap_or("");
            let exit_failed = map
                .get("exit_code")
                .or_else(|| map.get("exitCode"))
                .and_then(Value::as_i64)
                .is_some_and(|c| c != 0);
            let error_text = map.get("error").filter(|e| !e.is_null());
            let is_error = flag(result, "is_error")
                || flag(result, "isError")
                || exit_failed
                || error_text.is_some()
                || matches!(status, "failed" | "declined" | "rejected" | "denied");
            let body = map
                .get("content")
                .or_else(|| map.get("aggregated_output"))
                .or_else(|| map.get("aggregatedOutput"))
                .or_else(|| map.get("output"))
                .or_else(|| map.get("result").filter(|r| !r.is_null()))
                .or(error_text);
            Outcome {
                text: body.map_or_else(|| result.to_string(), content_text),
                is_error,
            }
        }
        other => Outcome {
            text: other.to_string(),
            is_error: false,
        },
    }
}

/// A content value as text: a string, the text blocks of an array
/// (`[{"type":"text","text":…}]`), an MCP result's `content`, else its
/// JSON.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Object(map) if map.contains_key("content") => content_text(&map["content"]),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| text(b, &["text"]).map_or_else(|| b.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// `text`'s first `max` lines (each cut at a sensible width) and how many
/// more there are.
pub fn collapse(text: &str, max: usize) -> (Vec<String>, usize) {
    let lines: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    if lines.is_empty() {
        return (Vec::new(), 0);
    }
    let shown = lines.iter().take(max).map(|l| cut(l)).collect();
    (shown, lines.len().saturating_sub(max))
}

fn cut(line: &str) -> String {
    if line.chars().count() > LINE_CHARS {
        let head: String = line.chars().take(LINE_CHARS).collect();
        format!("{head}…")
    } else {
        line.to_owned()
    }
}

/// "… N more lines".
pub fn more(hidden: usize) -> String {
    format!("… {hidden} more line{}", if hidden == 1 { "" } else { "s" })
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

fn paint(styled: bool, style: &str, text: &str) -> String {
    if styled {
        format!("{style}{text}{RESET}")
    } else {
        text.to_owned()
    }
}

impl ToolView {
    /// The one-line summary after the tool's name: the command, the
    /// edited paths, or a short input preview.
    pub fn summary(&self) -> String {
        match self {
            ToolView::Command { command } => format!("$ {}", first_line(command)),
            ToolView::Edit { files } => files
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            // The tool's name heads the line already.
            ToolView::Tool { input, .. } | ToolView::Other { input } => first_line(&compact(input)),
        }
    }

    /// The input, shown in full (within [`INPUT_LINES`]) under the
    /// approval prompt: the whole command, each file's diff (coloured when
    /// `styled`), or the pretty-printed input. Indented by `indent`.
    pub fn detail_lines(&self, styled: bool, indent: &str) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            ToolView::Command { command } => {
                let (lines, hidden) = collapse(command, INPUT_LINES);
                for (i, l) in lines.iter().enumerate() {
                    let lead = if i == 0 { "$ " } else { "  " };
                    out.push(format!(
                        "{indent}{}",
                        paint(styled, BOLD, &format!("{lead}{l}"))
                    ));
                }
                if hidden > 0 {
                    out.push(format!("{indent}{}", paint(styled, DIM, &more(hidden))));
                }
            }
            ToolView::Edit { files } => {
                for f in files {
                    out.push(format!("{indent}{}", paint(styled, BOLD, &f.path)));
                    let shown = f.diff.iter().take(INPUT_LINES);
                    for line in shown {
                        let (style, text) = match line {
                            DiffLine::Same(t) => ("", format!("  {t}")),
                            DiffLine::Removed(t) => (RED, format!("- {t}")),
                            DiffLine::Added(t) => (GREEN, format!("+ {t}")),
                            DiffLine::Note(t) => (DIM, t.clone()),
                        };
                        let text = cut(&text);
                        let text = if style.is_empty() {
                            text
                        } else {
                            paint(styled, style, &text)
                        };
                        out.push(format!("{indent}{text}"));
                    }
                    if f.diff.len() > INPUT_LINES {
                        let hidden = more(f.diff.len() - INPUT_LINES);
                        out.push(format!("{indent}{}", paint(styled, DIM, &hidden)));
                    }
                }
            }
            ToolView::Tool { input, .. } | ToolView::Other { input } => {
                if input.is_null() || input.as_object().is_some_and(|o| o.is_empty()) {
                    return out;
                }
                let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
                let (lines, hidden) = collapse(&pretty, INPUT_LINES);
                out.extend(lines.iter().map(|l| format!("{indent}{l}")));
                if hidden > 0 {
                    out.push(format!("{indent}{}", paint(styled, DIM, &more(hidden))));
                }
            }
        }
        out
    }
}

/// A value on one line.
fn compact(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn first_line(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    let first = super::render::preview(first, 80);
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shell_tools_are_commands_with_the_whole_command_line() {
        let bash = classify(
            "Bash",
            &ToolScope::Builtin,
            &json!({"command": "touch a && echo hi", "description": "Say hi"}),
        );
        assert_eq!(
            bash,
            ToolView::Command {
                command: "touch a && echo hi".into()
            }
        );
        assert_eq!(bash.summary(), "$ touch a && echo hi");
        assert_eq!(bash.detail_lines(false, "  "), ["  $ touch a && echo hi"]);
        let argv = classify(
            "command_execution",
            &ToolScope::Builtin,
            &json!({"command": ["ls", "-la"]}),
        );
        assert_eq!(argv.summary(), "$ ls -la");
    }

    #[test]
    fn edits_render_as_diffs() {
        let edit = classify(
            "Edit",
            &ToolScope::Builtin,
            &json!({"file_path": "/r/a.rs", "old_string": "a\nb\nc", "new_string": "a\nB\nc"}),
        );
        assert_eq!(edit.summary(), "/r/a.rs");
        assert_eq!(
            edit.detail_lines(false, ""),
            ["/r/a.rs", "  a", "- b", "+ B", "  c"]
        );
        let styled = edit.detail_lines(true, "");
        assert!(styled.contains(&format!("{RED}- b{RESET}")), "{styled:?}");
        assert!(styled.contains(&format!("{GREEN}+ B{RESET}")), "{styled:?}");
        let write = classify(
            "Write",
            &ToolScope::Builtin,
            &json!({"file_path": "n.txt", "content": "x\ny"}),
        );
        assert_eq!(
            write.detail_lines(false, ""),
            ["n.txt", "(whole file)", "+ x", "+ y"]
        );
        let codex = classify(
            "file_change",
            &ToolScope::Builtin,
            &json!({"changes": [{"path": "f", "kind": {"type": "update"}, "diff": "@@ -1 +1 @@\n-old\n+new"}]}),
        );
        assert_eq!(
            codex.detail_lines(false, ""),
            ["f", "@@ -1 +1 @@", "- old", "+ new"]
        );
    }

    #[test]
    fn mcp_and_host_tools_show_their_input() {
        let scope = ToolScope::Mcp {
            server: "docs".into(),
            tool: "search".into(),
        };
        let mcp = classify("search", &scope, &json!({"q": "x"}));
        assert_eq!(mcp.summary(), r#"{"q":"x"}"#);
        assert_eq!(mcp.detail_lines(false, ""), ["{", r#"  "q": "x""#, "}"]);
        let claude_mcp = classify("mcp__docs__search", &ToolScope::Builtin, &json!({}));
        assert!(matches!(claude_mcp, ToolView::Tool { ref label, .. } if label == "docs/search"));
        let host = classify("list_files", &ToolScope::Host, &json!({"path": "."}));
        assert!(matches!(host, ToolView::Tool { ref label, .. } if label == "list_files"));
        let other = classify("Read", &ToolScope::Builtin, &json!({"file_path": "a"}));
        assert!(matches!(other, ToolView::Other { .. }));
    }

    #[test]
    fn claude_results_are_unwrapped_and_errors_seen() {
        let ok = outcome(Some(&json!({"content": "hi-from-tool", "is_error": false})));
        assert_eq!(ok.text, "hi-from-tool");
        assert!(!ok.is_error);
        let denied = outcome(Some(&json!({"content": "denied: no", "is_error": true})));
        assert_eq!(denied.text, "denied: no");
        assert!(denied.is_error);
        let blocks = outcome(Some(
            &json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        ));
        assert_eq!(blocks.text, "a\nb");
        let codex = outcome(Some(&json!({"aggregated_output": "boom", "exit_code": 2})));
        assert_eq!(codex.text, "boom");
        assert!(codex.is_error);
        assert!(outcome(Some(&json!({"status": "declined"}))).is_error);
        let mcp = outcome(Some(&json!({
            "result": {"content": [{"type": "text", "text": "found"}]},
            "error": null, "status": "completed"
        })));
        assert_eq!(mcp.text, "found");
        assert!(!mcp.is_error);
        assert_eq!(outcome(Some(&json!("plain"))).text, "plain");
        assert_eq!(outcome(None).text, "");
    }

    #[test]
    fn long_output_collapses() {
        let text = (1..=10)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join("\n");
        let (shown, hidden) = collapse(&text, RESULT_LINES);
        assert_eq!(shown, ["1", "2", "3", "4", "5", "6"]);
        assert_eq!(hidden, 4);
        assert_eq!(more(hidden), "… 4 more lines");
        assert_eq!(collapse("one\n", RESULT_LINES), (vec!["one".to_owned()], 0));
        assert_eq!(collapse("", RESULT_LINES), (Vec::<String>::new(), 0));
    }
}
