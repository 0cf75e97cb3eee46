//! CodeBuddy Code (`codebuddy -p --output-format stream-json --verbose`),
//! which speaks Claude Code's stream-json family with its own permission
//! reply shape (`{"allowed": …}`) and exit code 0 on API errors (the failure
//! is read from the `result` line, never from the exit code). Host tools are
//! an in-process SDK MCP server, as for Claude Code.

use crate::streamjson::{CODEBUDDY, Config, StreamJsonDriver};

/// The default configuration.
pub fn config() -> Config {
    Config::new(&CODEBUDDY)
}

/// A CodeBuddy Code driver.
pub fn driver(config: Config) -> StreamJsonDriver {
    StreamJsonDriver::new(&CODEBUDDY, config)
}
