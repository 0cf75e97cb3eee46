//! `mock-mcp-server`: a small, real MCP server for tests (tools `lookup`,
//! `add`, `fail`).
//!
//! ```text
//! mock-mcp-server [--name NAME] [--log FILE] [--http 127.0.0.1:PORT [--bearer-token-env VAR]]
//! ```
//!
//! Serves MCP on stdin/stdout by default; with `--http` it serves Streamable
//! HTTP and prints `listening on http://127.0.0.1:PORT/mcp` as its first
//! stdout line. See `agent_adaptor_testkit::mcp` for the tools and flags.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use agent_adaptor_testkit::mcp::{
    DEFAULT_NAME, LISTENING_PREFIX, TestTools, serve_http, serve_stdio,
};

const USAGE: &str = "usage: mock-mcp-server [--name NAME] [--log FILE] \
                     [--http 127.0.0.1:PORT [--bearer-token-env VAR]]";

struct Options {
    name: String,
    log: Option<PathBuf>,
    http: Option<SocketAddr>,
    bearer_token_env: Option<String>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        name: DEFAULT_NAME.to_owned(),
        log: None,
        http: None,
        bearer_token_env: None,
    };
    let mut args = args;
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        if matches!(flag.as_str(), "-h" | "--help") {
            return Err(String::new());
        }
        let value = inline
            .or_else(|| args.next())
            .ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--name" => options.name = value,
            "--log" => options.log = Some(PathBuf::from(value)),
            "--http" => {
                options.http = Some(
                    value
                        .parse()
                        .map_err(|_| format!("--http: not an address: {value}"))?,
                );
            }
            "--bearer-token-env" => options.bearer_token_env = Some(value),
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    if options.bearer_token_env.is_some() && options.http.is_none() {
        return Err("--bearer-token-env needs --http".to_owned());
    }
    Ok(options)
}

/// The token named by `--bearer-token-env` (never printed).
fn bearer_token(var: Option<&str>) -> Result<Option<String>, String> {
    let Some(var) = var else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(token) if !token.is_empty() => Ok(Some(token)),
        _ => Err(format!("--bearer-token-env: ${var} is not set (or empty)")),
    }
}

async fn run(options: Options) -> Result<(), String> {
    let tools = TestTools::new(options.name, options.log);
    let Some(addr) = options.http else {
        return serve_stdio(tools).await.map_err(|e| e.to_string());
    };
    let token = bearer_token(options.bearer_token_env.as_deref())?;
    let server = serve_http(tools, addr, token)
        .await
        .map_err(|e| e.to_string())?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{LISTENING_PREFIX}{}", server.url())
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("stdout: {e}"))?;
    }
    server.run().await.map_err(|e| e.to_string())
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
            eprintln!("mock-mcp-server: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mock-mcp-server: {message}");
            ExitCode::from(1)
        }
    }
}
