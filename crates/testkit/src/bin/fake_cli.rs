//! `fake-cli`: stands in for a real coding-agent CLI in tests by replaying a recorded
//! capture from `shared/fixtures/cli-captures/` with chosen delays, exit code, stderr
//! noise, truncation and stdin rules. Run `fake-cli --help` for the flags; the engine is
//! [`agent_adaptor_testkit::replay`].
#![forbid(unsafe_code)]

use std::process::exit;
use std::time::Duration;

use agent_adaptor_testkit::fixtures;
use agent_adaptor_testkit::replay::{
    self, ArgsRecord, Invocation, OPTS_ENV, ProcessIo, USAGE, USAGE_EXIT_CODE,
};

fn main() {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let env_opts = std::env::var_os(OPTS_ENV).map(|v| v.to_string_lossy().into_owned());
    let invocation = match Invocation::parse(&argv, env_opts.as_deref()) {
        Ok(invocation) => invocation,
        Err(e) => usage_error(&e.to_string()),
    };
    let options = invocation.options;
    if options.help {
        print!("{USAGE}");
        exit(0);
    }

    // First, so that a driver test can read it even when the fixture is unusable.
    if let Some(path) = &options.args_out
        && let Err(e) = ArgsRecord::from_env(argv.clone(), &options.env_out).write(path)
    {
        usage_error(&format!("--args-out {}: {e}", path.display()));
    }

    let Some(fixture) = &options.fixture else {
        usage_error("missing --fixture PATH")
    };
    let capture = match fixtures::load_path(&replay::resolve_fixture(fixture)) {
        Ok(capture) => replay::with_session(&capture, &invocation.foreign, std::process::id()),
        Err(e) => usage_error(&e.to_string()),
    };
    if options.wait_stdin_eof && capture.is_transcript() {
        usage_error(
            "--wait-stdin-eof is for .jsonl captures (a transcript reads stdin frame by frame)",
        );
    }
    if options.ignore_sigterm {
        ignore_sigterm();
    }

    if options.serve_turns && capture.is_transcript() {
        usage_error("--serve-turns is for .jsonl captures (a transcript has its own turns)");
    }
    let read_stdin = capture.is_transcript() || options.wait_stdin_eof || options.serve_turns;
    let mut io = match ProcessIo::start(read_stdin, options.record_stdin.as_deref()) {
        Ok(io) => io,
        Err(e) => usage_error(&format!("cannot set up stdin: {e}")),
    };
    match replay::replay(&capture, &options, &mut io) {
        Ok(outcome) if outcome.hang => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        Ok(outcome) => exit(outcome.exit_code),
        Err(e) => {
            eprintln!("fake-cli: I/O error: {e}");
            exit(1);
        }
    }
}

fn usage_error(message: &str) -> ! {
    eprintln!("fake-cli: {message}\n(run fake-cli --help for usage)");
    exit(USAGE_EXIT_CODE);
}

/// Replaces SIGTERM's default action with a note on stderr, so the process survives it.
#[cfg(unix)]
fn ignore_sigterm() {
    use signal_hook::consts::SIGTERM;
    use signal_hook::iterator::Signals;

    let mut signals = match Signals::new([SIGTERM]) {
        Ok(signals) => signals,
        Err(e) => usage_error(&format!("--ignore-sigterm: {e}")),
    };
    let spawned = std::thread::Builder::new()
        .name("fake-cli-sigterm".to_owned())
        .spawn(move || {
            for _ in signals.forever() {
                eprintln!("fake-cli: ignoring SIGTERM");
            }
        });
    if let Err(e) = spawned {
        usage_error(&format!("--ignore-sigterm: {e}"));
    }
}

#[cfg(not(unix))]
fn ignore_sigterm() {
    usage_error("--ignore-sigterm is only supported on unix");
}
