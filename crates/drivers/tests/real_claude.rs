//! The Claude Code driver against the real, pinned `claude` binary (installed
//! by `scripts/install-clis`), offline: the testkit mock model server answers
//! its Anthropic Messages requests. Each scenario of `real_common` runs once:
//! token-level streaming, a real tool round trip, approvals over the control
//! transport (approve and deny), resume, an HTTP 400, cancel mid-stream (the
//! process group is gone within 2 s), and the conformance suite on both
//! transports.
//!
//! Compiled only with `--features agent-adaptor-drivers/real-clis`. A missing
//! binary fails with a message to run `scripts/install-clis`.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod group_watch;
#[macro_use]
mod real_common;

use agent_adaptor_drivers::claude;
use agent_adaptor_testkit::clis;
use real_common::Cli;

/// Claude Code as these tests drive it.
static CLI: Cli = Cli {
    recipe: clis::CLAUDE,
    config: claude::config,
    driver: claude::driver,
    // A model name Claude knows (no unrecognized-model warning).
    model: Some(clis::CLAUDE.model),
    // Without these, a 5xx is retried with long backoff and an in-stream
    // error is repeated without streaming.
    env: &[
        ("CLAUDE_CODE_MAX_RETRIES", "0"),
        ("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1"),
    ],
    shell_tool: "Bash",
    // Claude runs read-only commands such as printf without asking.
    allow_read_only: &[],
    // The deny reply's `message` becomes the tool result.
    fixed_denial_text: None,
    // Claude 2.1.332 defers MCP tools behind ToolSearch (listed by name in
    // a system reminder) unless tool search is off.
    load_mcp_tools: &[("ENABLE_TOOL_SEARCH", "false")],
    mcp_lookup: "mcp__aa-test__lookup",
    host_lookup: "mcp__agent-adaptor__lookup",
    mcp_error_flag: true,
    user_mcp_file: ".claude/.claude.json",
};

real_cli_tests!(CLI);

// Claude Code removes disallowed tools from what it offers the model
// (CodeBuddy Code keeps them declared and denies the call: its deny rules).
real_cli_tests!(@cases CLI; policy_web_search_deny_removes_the_web_tools);

// The observation proof: todos, a subagent and its attributed tool call.
real_cli_tests!(@cases CLI; todos_and_a_subagent_are_observed);
