//! The `agent-adaptor` binary; everything lives in the library
//! ([`agent_adaptor_cli`]).

fn main() -> std::process::ExitCode {
    agent_adaptor_cli::main_entry()
}
