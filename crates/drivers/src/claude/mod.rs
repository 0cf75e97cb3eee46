//! Claude Code (`claude -p --output-format stream-json --verbose`).
//!
//! ```no_run
//! use agent_adaptor_drivers::claude;
//!
//! let mut config = claude::config();
//! config.model = Some("claude-sonnet-4-5".into());
//! let driver = claude::driver(config);
//! # let _ = driver;
//! ```
//!
//! Transports: one-shot (`-p`, the prompt on stdin) by default; with
//! `host_approvals` the control protocol (`--input-format stream-json
//! --permission-prompt-tool stdio`), which routes every `can_use_tool`
//! request to the host as an approval. A run with host tools also reads
//! stream-json frames: its tools are an in-process SDK MCP server
//! (`mcp_message` control requests).

use crate::streamjson::{CLAUDE, Config, StreamJsonDriver};

/// The default configuration.
pub fn config() -> Config {
    Config::new(&CLAUDE)
}

/// A Claude Code driver.
pub fn driver(config: Config) -> StreamJsonDriver {
    StreamJsonDriver::new(&CLAUDE, config)
}
