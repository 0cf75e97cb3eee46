//! `mock-model-server`: the scripted mock model server as a binary.
//!
//! ```text
//! mock-model-server [--port N] [--script FILE.json] [--log]
//! ```
//!
//! Prints `listening http://127.0.0.1:PORT` as its first stdout line, then
//! serves until killed. `--port 0` (the default) picks a free port. The
//! script file's JSON shape is documented in
//! `agent_adaptor_testkit::mock::Script` (module `mock::script`); without
//! `--script` every request gets `"OK"`. `--log` prints one line per request
//! (method, path, and body) to stderr.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use agent_adaptor_testkit::mock::{MockServer, Script};

const USAGE: &str = "usage: mock-model-server [--port N] [--script FILE.json] [--log]";

struct Options {
    port: u16,
    script: Option<String>,
    log: bool,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        port: 0,
        script: None,
        log: false,
    };
    let mut args = args;
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "--port" => {
                let value = inline
                    .or_else(|| args.next())
                    .ok_or("--port needs a value")?;
                options.port = value
                    .parse()
                    .map_err(|_| format!("--port: not a port number: {value}"))?;
            }
            "--script" => {
                options.script = Some(
                    inline
                        .or_else(|| args.next())
                        .ok_or("--script needs a file")?,
                );
            }
            "--log" => options.log = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    Ok(options)
}

fn load_script(path: Option<&str>) -> Result<Script, String> {
    let Some(path) = path else {
        return Ok(Script::new());
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{path}: not a valid script: {e}"))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            if message.is_empty() {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            eprintln!("mock-model-server: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let script = match load_script(options.script.as_deref()) {
        Ok(script) => script,
        Err(message) => {
            eprintln!("mock-model-server: {message}");
            return ExitCode::from(2);
        }
    };
    let addr = SocketAddr::from(([127, 0, 0, 1], options.port));
    let server = match MockServer::start_on(addr, script).await {
        Ok(server) => server,
        Err(error) => {
            eprintln!("mock-model-server: cannot listen on {addr}: {error}");
            return ExitCode::from(1);
        }
    };
    {
        let mut stdout = std::io::stdout().lock();
        let printed =
            writeln!(stdout, "listening {}", server.base_url()).and_then(|()| stdout.flush());
        if printed.is_err() {
            return ExitCode::from(1);
        }
    }
    let mut seen = 0;
    loop {
        let requests = server.wait_for_requests(seen + 1).await;
        if options.log {
            for request in &requests[seen..] {
                let query = request
                    .query
                    .as_deref()
                    .map(|q| format!("?{q}"))
                    .unwrap_or_default();
                eprintln!(
                    "{} {}{} {}",
                    request.method,
                    request.path,
                    query,
                    String::from_utf8_lossy(&request.body)
                );
            }
        }
        seen = requests.len();
    }
}
