//! Live terminal rendering of a run.
//!
//! The answer text goes to stdout as it streams; everything else goes to
//! stderr: reasoning (dimmed), tool calls by kind ([`tool_view`]: a
//! command with its output, an edit as a diff, an MCP or host tool with
//! its input and result; a spinner while they run, then ✓ or a red ✗ for
//! an error or a denial, with the time the tool ran, not counting the time
//! its approval waited for the human), approvals, notes and the final
//! usage line. With a terminal on stderr, ANSI styles and spinners (also
//! "waiting for the model…" while nothing else is on screen) are used;
//! otherwise plain lines.
//!
//! Every stdout write goes through one place ([`Renderer::out`]): the first
//! one that fails (a closed pipe, a full disk) is kept
//! ([`Renderer::output_error`]) and nothing more is written to stdout, so
//! the caller can cancel the run.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::{Duration, Instant};

use agent_adaptor_core::driver::{LifecycleId, ToolScope, Usage};
use agent_adaptor_core::{ApprovalRequest, Event, Phase, notice_kind};
use serde_json::Value;

use crate::tool_view::{self, RESULT_LINES, ToolView};

const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";
const CLEAR_LINE: &str = "\r\x1b[2K";
const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// A tool call being shown.
#[derive(Debug)]
struct Tool {
    name: String,
    scope: ToolScope,
    /// Complete arguments, when given at start.
    args: Option<Value>,
    /// Streamed argument text.
    args_text: String,
    timing: Timing,
}

impl Tool {
    /// The call, classified (streamed arguments parsed when complete).
    fn view(&self) -> ToolView {
        let args = match &self.args {
            Some(a) => a.clone(),
            None => serde_json::from_str(&self.args_text)
                .unwrap_or_else(|_| Value::String(self.args_text.clone())),
        };
        tool_view::classify(&self.name, &self.scope, &args)
    }
}

/// A tool's running time without the time its approval waited for a human.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    started: Instant,
    waited: Duration,
    waiting_since: Option<Instant>,
}

impl Timing {
    /// Started at `now`.
    pub fn new(now: Instant) -> Self {
        Timing {
            started: now,
            waited: Duration::ZERO,
            waiting_since: None,
        }
    }

    /// A human is asked about the tool from `now` on.
    pub fn pause(&mut self, now: Instant) {
        self.waiting_since.get_or_insert(now);
    }

    /// The human answered at `now`.
    pub fn resume(&mut self, now: Instant) {
        if let Some(since) = self.waiting_since.take() {
            self.waited += now.saturating_duration_since(since);
        }
    }

    /// The time the tool ran up to `now`, without the waits.
    pub fn elapsed(&self, now: Instant) -> Duration {
        let end = self.waiting_since.unwrap_or(now);
        end.saturating_duration_since(self.started)
            .saturating_sub(self.waited)
    }
}

/// Renders events to stdout/stderr (see the [module docs](self)).
#[derive(Debug)]
pub struct Renderer {
    styled: bool,
    /// The stdout text does not end with a newline.
    text_mid_line: bool,
    /// Reasoning is being printed (stderr, mid-line).
    thinking_mid_line: bool,
    /// A spinner line is on stderr (no newline after it).
    spinner_drawn: bool,
    tools: HashMap<LifecycleId, Tool>,
    /// Tool ids in start order, for the spinner.
    running: Vec<LifecycleId>,
    /// Approval request id → the tool call it is about.
    approvals: HashMap<String, LifecycleId>,
    /// Tool calls whose approval was not given (rendered ✗).
    denied: HashSet<LifecycleId>,
    /// Since when the run waits for the model with nothing on screen.
    waiting: Option<Instant>,
    frame: usize,
    /// The first stdout write that failed; stdout is not written after it.
    output_error: Option<std::io::Error>,
}

impl Renderer {
    /// A renderer; `styled` enables ANSI styles and the spinner.
    pub fn new(styled: bool) -> Self {
        Renderer {
            styled,
            text_mid_line: false,
            thinking_mid_line: false,
            spinner_drawn: false,
            tools: HashMap::new(),
            running: Vec::new(),
            approvals: HashMap::new(),
            denied: HashSet::new(),
            waiting: None,
            frame: 0,
            output_error: None,
        }
    }

    /// Write `text` to stdout and flush, unless a stdout write failed
    /// before; a failure is kept (see [`output_error`](Self::output_error)).
    pub fn out(&mut self, text: &str) {
        self.out_bytes(text.as_bytes());
    }

    /// [`out`](Self::out) for bytes (`run --json` writes a batch of lines
    /// at once).
    pub fn out_bytes(&mut self, bytes: &[u8]) {
        if self.output_error.is_some() {
            return;
        }
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
            self.output_error = Some(e);
        }
    }

    /// Record that stdout cannot be written (seen without a write, e.g. by
    /// [`stdout_closed`]); nothing more is written to it.
    pub fn fail_output(&mut self, e: std::io::Error) {
        self.output_error.get_or_insert(e);
    }

    /// Why stdout could not be written (a closed pipe, a full disk), once
    /// a write failed.
    pub fn output_error(&self) -> Option<&std::io::Error> {
        self.output_error.as_ref()
    }

    fn style(&self, style: &str, text: &str) -> String {
        if self.styled {
            format!("{style}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }

    /// Clear the spinner line and end any open stdout/reasoning line, so a
    /// whole line can be written to stderr.
    fn line_start(&mut self) {
        let mut err = std::io::stderr().lock();
        if self.spinner_drawn {
            let _ = write!(err, "{CLEAR_LINE}");
            self.spinner_drawn = false;
        }
        if self.thinking_mid_line {
            let _ = writeln!(err, "{}", if self.styled { RESET } else { "" });
            self.thinking_mid_line = false;
        }
        if self.text_mid_line {
            self.out("\n");
            self.text_mid_line = false;
        }
        let _ = err.flush();
    }

    /// Write one whole line to stderr.
    pub fn note(&mut self, line: &str) {
        self.line_start();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
        let _ = err.flush();
    }

    /// A dimmed note line.
    pub fn dim_note(&mut self, line: &str) {
        let styled = self.style(DIM, line);
        self.note(&styled);
    }

    /// Stop drawing the spinner (before a prompt); it comes back on the
    /// next [`tick`](Self::tick).
    pub fn suspend(&mut self) {
        self.line_start();
    }

    /// Redraw the spinner (call about every 100 ms): the newest running
    /// tool's, else "waiting for the model…".
    pub fn tick(&mut self) {
        if !self.styled || self.thinking_mid_line || self.text_mid_line {
            return;
        }
        let now = Instant::now();
        let what = match self.running.last().and_then(|id| self.tools.get(id)) {
            Some(tool) if tool.timing.waiting_since.is_some() => return,
            Some(tool) => format!(
                "{BOLD}{}{RESET} {DIM}{} {}{RESET}",
                tool.name,
                tool.view().summary(),
                seconds(tool.timing.elapsed(now))
            ),
            None => match self.waiting {
                Some(since) => format!(
                    "{DIM}waiting for the model… {}{RESET}",
                    seconds(now.saturating_duration_since(since))
                ),
                None => return,
            },
        };
        self.frame = (self.frame + 1) % FRAMES.len();
        let line = format!("{CLEAR_LINE}{CYAN}{}{RESET} {what}", FRAMES[self.frame]);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{line}");
        let _ = err.flush();
        self.spinner_drawn = true;
    }

    /// The run now waits for the model (the prompt was sent).
    pub fn wait_for_model(&mut self) {
        self.waiting.get_or_insert_with(Instant::now);
    }

    /// The question for an approval request, with the exact input it
    /// approves (the tool call's, else the request's details; none for a
    /// question).
    pub fn approval_prompt(&self, req: &ApprovalRequest) -> String {
        // A question shows its choices, not the tool call that asks it.
        let view = (req.kind != agent_adaptor_core::ApprovalKind::Question)
            .then(|| {
                self.tools
                    .get(req.tool_call_id.as_str())
                    .map(Tool::view)
                    .or_else(|| crate::approve::details_view(req))
            })
            .flatten();
        crate::approve::prompt_text(req, view.as_ref(), self.styled)
    }

    /// A human (or a handler, or the policy) is asked about request `id`
    /// for tool call `tool`: its clock stops.
    fn approval_asked(&mut self, id: &str, tool: &str) {
        if tool.is_empty() {
            return;
        }
        self.approvals.insert(id.to_owned(), tool.into());
        if let Some(t) = self.tools.get_mut(tool) {
            t.timing.pause(Instant::now());
        }
    }

    /// The approval `data` (an `approval.resolved` notice's) settled.
    fn approval_resolved(&mut self, data: Option<&Value>) -> String {
        let get = |k: &str| {
            data.and_then(|d| d.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let result = get("result");
        if let Some(tool) = self.approvals.remove(get("request_id")) {
            if let Some(t) = self.tools.get_mut(&tool) {
                t.timing.resume(Instant::now());
            }
            if !matches!(result, "approved" | "answered") {
                self.denied.insert(tool);
            }
        }
        let by = data
            .and_then(|d| d.get("decided_by"))
            .and_then(Value::as_str)
            .unwrap_or("host");
        let grant = data.and_then(|d| d.get("thread_grant"));
        let tool = grant
            .and_then(|g| g.get("tool"))
            .and_then(Value::as_str)
            .unwrap_or("");
        match grant {
            Some(g) if g.get("source").and_then(Value::as_str) == Some("thread") => {
                format!("(decided by {by}: {tool} is always allowed in this thread)")
            }
            Some(g) if g.get("granted").and_then(Value::as_bool) == Some(true) => {
                format!("(decided by {by}; {tool} is now always allowed in this thread)")
            }
            Some(g) => format!(
                "(decided by {by}; always allowing {tool} failed: {})",
                g.get("error").and_then(Value::as_str).unwrap_or("unknown")
            ),
            None => format!("(decided by {by})"),
        }
    }

    /// Render one event.
    pub fn event(&mut self, event: &Event) {
        if matches!(event, Event::Thinking(_)) {
            self.waiting = None;
        }
        match event {
            Event::TextDelta(d) if d.phase == Phase::Content && !d.text.is_empty() => {
                self.waiting = None;
                if self.spinner_drawn || self.thinking_mid_line {
                    self.line_start();
                }
                self.out(&d.text);
                self.text_mid_line = !d.text.ends_with('\n');
            }
            Event::Thinking(t) => match t.phase {
                Phase::Start => {
                    self.line_start();
                    let label = self.style(DIM, "thinking: ");
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "{label}{}", if self.styled { DIM } else { "" });
                    let _ = err.flush();
                    self.thinking_mid_line = true;
                }
                Phase::Content => {
                    if !self.thinking_mid_line {
                        self.line_start();
                        self.thinking_mid_line = true;
                        if self.styled {
                            eprint!("{DIM}");
                        }
                    }
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "{}", t.text);
                    let _ = err.flush();
                }
                Phase::End => self.line_start(),
            },
            Event::ToolCall(c) => self.tool_call(c),
            Event::ToolResult(r) => self.tool_done(&r.id, r.result.as_ref()),
            Event::ApprovalRequest(req) => {
                self.waiting = None;
                self.approval_asked(&req.id, &req.tool_call_id);
            }
            Event::Notice(n) if n.kind == notice_kind::APPROVAL_REQUESTED => {
                let request = n.data.as_ref().and_then(|d| d.get("request"));
                let request = request.or(n.data.as_ref());
                let field = |k: &str| {
                    request
                        .and_then(|r| r.get(k))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                self.approval_asked(&field("request_id"), &field("tool_call_id"));
            }
            Event::Notice(n) if n.kind == notice_kind::APPROVAL_RESOLVED => {
                let how = self.approval_resolved(n.data.as_ref());
                let line = format!("approval {} {how}", n.text);
                self.dim_note(&line);
            }
            Event::Notice(n) if n.kind == notice_kind::DRIVER_VIOLATION => {
                let line = self.style(RED, &format!("driver violation: {}", n.text));
                self.note(&line);
            }
            Event::TodoUpdated(t) => {
                for line in crate::render_observe::todo_lines(&t.snapshot) {
                    self.note(&line);
                }
            }
            Event::SubagentUpdate(s) => {
                if let Some(line) = crate::render_observe::subagent_line(s) {
                    self.dim_note(&line);
                }
            }
            Event::Dropped(d) => {
                self.dim_note(&format!("[{} events dropped: {}]", d.count, d.reason))
            }
            Event::RunStarted(_) => self.wait_for_model(),
            Event::RunFinished(_) => {
                self.waiting = None;
                self.line_start();
                self.running.clear();
            }
            _ => {}
        }
    }

    fn tool_call(&mut self, c: &agent_adaptor_core::ToolCall) {
        match c.phase {
            Phase::Start => {
                self.waiting = None;
                let tool = Tool {
                    name: c.name.clone(),
                    scope: c.scope.clone(),
                    args: c.args.clone(),
                    args_text: String::new(),
                    timing: Timing::new(Instant::now()),
                };
                if !self.styled {
                    let line = format!("tool {} started: {}", c.name, tool.view().summary());
                    self.note(line.trim_end_matches(": "));
                }
                self.tools.insert(c.id.clone(), tool);
                self.running.push(c.id.clone());
                self.tick();
            }
            Phase::Content => {
                if let Some(tool) = self.tools.get_mut(&c.id) {
                    tool.args_text.push_str(&c.args_delta);
                }
            }
            Phase::End => {
                if let Some(result) = &c.result {
                    self.tool_done(&c.id, Some(result));
                }
            }
        }
    }

    fn tool_done(&mut self, id: &str, result: Option<&Value>) {
        self.running.retain(|r| r != id);
        let Some(tool) = self.tools.remove(id) else {
            return;
        };
        let outcome = tool_view::outcome(result);
        let failed = outcome.is_error || self.denied.remove(id);
        let mark = if failed {
            self.style(RED, "✗")
        } else {
            self.style(GREEN, "✓")
        };
        let view = tool.view();
        let head = format!(
            "{mark} {} {} {}",
            self.style(BOLD, &tool.name),
            view.summary(),
            self.style(DIM, &seconds(tool.timing.elapsed(Instant::now())))
        );
        self.note(&head);
        if matches!(view, ToolView::Edit { .. }) && !failed {
            for line in view.detail_lines(self.styled, "    ") {
                self.note(&line);
            }
        }
        let (lines, hidden) = tool_view::collapse(&outcome.text, RESULT_LINES);
        for line in lines {
            let line = format!("    {line}");
            if failed {
                let line = self.style(RED, &line);
                self.note(&line);
            } else {
                self.dim_note(&line);
            }
        }
        if hidden > 0 {
            self.dim_note(&format!("    {}", tool_view::more(hidden)));
        }
        if self.running.is_empty() {
            self.wait_for_model();
        }
    }

    /// The final usage line.
    pub fn usage(&mut self, usage: Option<&Usage>, elapsed: Duration, what: &str) {
        let line = format!("— {} · {} · {what}", usage_text(usage), seconds(elapsed));
        self.dim_note(&line);
    }

    /// End the output (a final newline after streamed text).
    pub fn finish(&mut self) {
        self.line_start();
    }
}

/// Resolves when stdout is a pipe or socket whose reader went away (`|
/// head` exited), seen without writing to it (the kernel reports an error
/// condition on the descriptor); never, for a terminal, a file, or when
/// stdout cannot be watched.
pub async fn stdout_closed() {
    use std::os::fd::AsFd;
    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;
    // A duplicate the watcher owns, so the descriptor it registered stays
    // open and the same for as long as it is registered (the I/O-safety
    // condition the deprecation of `with_interest` is about).
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return std::future::pending().await;
    };
    #[allow(deprecated)]
    let watched = AsyncFd::with_interest(fd, Interest::ERROR);
    match watched {
        Ok(fd) => {
            if let Ok(mut guard) = fd.ready(Interest::ERROR).await {
                guard.retain_ready();
                return;
            }
            std::future::pending().await
        }
        Err(_) => std::future::pending().await,
    }
}

/// `12 in (3 cached) · 4 out (1 reasoning)`, or "usage not reported".
pub fn usage_text(usage: Option<&Usage>) -> String {
    let Some(u) = usage else {
        return "usage not reported".into();
    };
    let mut parts = Vec::new();
    if let Some(i) = u.input_tokens {
        let cached = u
            .cached_input_tokens
            .filter(|c| *c > 0)
            .map(|c| format!(" ({c} cached)"))
            .unwrap_or_default();
        parts.push(format!("{i} tokens in{cached}"));
    }
    if let Some(o) = u.output_tokens {
        let reasoning = u
            .reasoning_tokens
            .filter(|r| *r > 0)
            .map(|r| format!(" ({r} reasoning)"))
            .unwrap_or_default();
        parts.push(format!("{o} out{reasoning}"));
    }
    if let Some(c) = u.cost_usd {
        parts.push(format!("${c:.4}"));
    }
    if parts.is_empty() {
        "usage not reported".into()
    } else {
        parts.join(" · ")
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// The first line of `text`, at most `max` characters.
pub(crate) fn preview(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > max {
        let cut: String = line.chars().take(max).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lines_say_what_was_reported() {
        assert_eq!(usage_text(None), "usage not reported");
        let u = Usage {
            input_tokens: Some(100),
            cached_input_tokens: Some(20),
            output_tokens: Some(10),
            reasoning_tokens: Some(3),
            ..Usage::default()
        };
        assert_eq!(
            usage_text(Some(&u)),
            "100 tokens in (20 cached) · 10 out (3 reasoning)"
        );
    }

    #[test]
    fn a_tools_time_excludes_its_approval_wait() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut timing = Timing::new(t0);
        timing.pause(at(100));
        // While the human is asked, the clock stands still.
        assert_eq!(timing.elapsed(at(5_000)), Duration::from_millis(100));
        timing.resume(at(10_100));
        assert_eq!(timing.elapsed(at(10_300)), Duration::from_millis(300));
        // A second wait adds up; a resume without a pause changes nothing.
        timing.pause(at(10_300));
        timing.resume(at(20_300));
        timing.resume(at(20_350));
        assert_eq!(timing.elapsed(at(20_400)), Duration::from_millis(400));
    }

    #[test]
    fn the_prompt_shows_the_tool_calls_own_arguments_by_id() {
        let meta: agent_adaptor_core::EventMeta = serde_json::from_value(serde_json::json!({
            "run_id": "r", "sequence": 1, "time": "2026-01-01T00:00:00Z"
        }))
        .unwrap();
        let mut renderer = Renderer::new(false);
        renderer.event(&Event::ToolCall(agent_adaptor_core::ToolCall {
            meta: meta.clone(),
            id: "t1".into(),
            name: "Edit".into(),
            args: Some(serde_json::json!({
                "file_path": "src/a.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"
            })),
            args_delta: String::new(),
            result: None,
            phase: Phase::Start,
            scope: ToolScope::Builtin,
            delegation: None,
        }));
        let req: ApprovalRequest = serde_json::from_value(serde_json::json!({
            "meta": meta, "id": "apr_1", "kind": "permission", "title": "Allow Edit?",
            "source": "claude.can_use_tool", "tool_call_id": "t1",
            "created_at": "2026-01-01T00:00:00Z", "attempt": 0
        }))
        .unwrap();
        let prompt = renderer.approval_prompt(&req);
        assert!(
            prompt.contains("    src/a.rs\n    - let x = 1;\n    + let x = 2;\n"),
            "{prompt}"
        );
    }

    #[test]
    fn previews_are_one_short_line() {
        assert_eq!(preview("abc\ndef", 10), "abc");
        assert_eq!(preview("abcdef", 3), "abc…");
    }
}
