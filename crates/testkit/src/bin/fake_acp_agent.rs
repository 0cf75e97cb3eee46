//! `fake-acp-agent`: a scripted ACP agent for fault tests.
//!
//! ```text
//! fake-acp-agent [--scenario NAME [ARG]] [--log FILE] [--state DIR]
//! ```
//!
//! See `agent_adaptor_testkit::acp_agent` for the scenarios.

use std::process::ExitCode;

use agent_adaptor_testkit::acp_agent::{Exit, Options, USAGE, run};

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(why) if why.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(why) => {
            eprintln!("fake-acp-agent: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(Exit::Eof) => ExitCode::SUCCESS,
        Ok(Exit::Status(status)) => ExitCode::from(status),
        Err(e) => {
            eprintln!("fake-acp-agent: {e}");
            ExitCode::FAILURE
        }
    }
}
