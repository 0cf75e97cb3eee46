//! The CodeBuddy Code driver against the real, pinned `codebuddy` CLI (from
//! `@tencent-ai/agent-sdk`, installed by `scripts/install-clis`), offline: the
//! testkit mock model server answers its Chat Completions requests. Each
//! scenario of `real_common` runs once: token-level streaming, a real tool
//! round trip, approvals over the control transport (approve and deny),
//! resume, an HTTP 400, cancel mid-stream (the process group is gone within
//! 2 s), and the conformance suite on both transports.
//!
//! Compiled only with `--features agent-adaptor-drivers/real-clis`. A missing
//! binary fails with a message to run `scripts/install-clis`.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod group_watch;
#[macro_use]
mod real_common;

use agent_adaptor_drivers::codebuddy;
use agent_adaptor_testkit::clis;
use real_common::Cli;

/// CodeBuddy Code as these tests drive it.
static CLI: Cli = Cli {
    recipe: clis::CODEBUDDY,
    config: codebuddy::config,
    driver: codebuddy::driver,
    // CodeBuddy sends `default-model` on its own.
    model: None,
    // CodeBuddy makes one request per HTTP error.
    env: &[],
    shell_tool: "Bash",
    // Headless (`-p`) CodeBuddy denies every Bash command it would ask
    // about, `ls` and `echo` included; a user allows one explicitly.
    allow_read_only: &["--allowedTools", "Bash(printf:*)"],
    // CodeBuddy 2.117 logs the deny reply's `reason` but tells the model its
    // own fixed rejection text.
    fixed_denial_text: Some("The user doesn't want to proceed with this tool use"),
    // CodeBuddy 2.117 defers tool loading (ToolSearch) unless told not to.
    load_mcp_tools: &[("CODEBUDDY_DEFER_TOOL_LOADING", "false")],
    mcp_lookup: "mcp__aa_test__lookup",
    host_lookup: "mcp__agent_adaptor__lookup",
    mcp_error_flag: false,
    user_mcp_file: ".codebuddy/.mcp.json",
};

real_cli_tests!(CLI);
