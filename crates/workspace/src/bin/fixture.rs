//! Test fixture for agent-adaptor-workspace (not a user tool):
//!
//! * `hold <base_dir> <run_id> <dirty 0|1>` — take a git-worktree lease for
//!   the run, optionally leave an uncommitted file in it, print
//!   `ready <path>` and wait to be killed (the crash the sweep recovers from);
//! * `listen <host:port> <count_file>` — append a line to `count_file`, then
//!   answer every connection with `HTTP/1.0 200 OK` (a `GET /exit` makes it
//!   exit instead);
//! * `listen-after <host:port> <count_file> <wait_file>` — `listen`, once
//!   `wait_file` exists (a service that is ready only after another one
//!   started);
//! * `stall` — write an error to stderr and never become ready.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use agent_adaptor_workspace::{GitWorktreeSpec, WorkspaceManager, WorkspaceRequest, WorkspaceSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("hold") if args.len() == 4 => hold(&args[1], &args[2], &args[3] == "1"),
        Some("listen") if args.len() == 3 => listen(&args[1], &args[2]),
        Some("listen-after") if args.len() == 4 => {
            while !std::path::Path::new(&args[3]).exists() {
                std::thread::sleep(Duration::from_millis(20));
            }
            listen(&args[1], &args[2])
        }
        Some("stall") => {
            eprintln!(
                "boom: cannot bind the port, secret={}",
                std::env::var("SERVICE_TOKEN").unwrap_or_default()
            );
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        _ => Err(
            "usage: hold <base_dir> <run_id> <0|1> | listen <addr> <count_file> \
                 | listen-after <addr> <count_file> <wait_file> | stall"
                .into(),
        ),
    }
}

fn hold(base: &str, run_id: &str, dirty: bool) -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let lease = rt.block_on(WorkspaceManager::new().resolve(&WorkspaceRequest {
        base_dir: base.into(),
        spec: WorkspaceSpec::GitWorktree(GitWorktreeSpec::new("HEAD", "agent/{run_id}")),
        run_id: run_id.into(),
        thread: None,
    }))?;
    if dirty {
        std::fs::write(lease.path.join("WIP.txt"), "unsaved work\n")?;
    }
    println!("ready {}", lease.path.display());
    std::io::stdout().flush()?;
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

fn listen(addr: &str, count_file: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(count_file)?;
    writeln!(f, "start")?;
    let listener = TcpListener::bind(addr)?;
    for conn in listener.incoming() {
        let mut conn = conn?;
        let mut buf = [0u8; 1024];
        let n = conn.read(&mut buf).unwrap_or(0);
        if buf[..n].starts_with(b"GET /exit ") {
            std::process::exit(0);
        }
        let _ = conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
    Ok(())
}
