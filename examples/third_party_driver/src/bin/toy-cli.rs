//! `toy-cli`: a stand-in for an agent CLI. It reads the prompt on stdin and
//! prints JSON lines: `init`, the answer as `text` deltas around one `tool`
//! call and its `tool_result`, then the terminal `result`.
//!
//! `--fail` ends with a failed `result`; `--no-result` exits 1 without one;
//! `--stall` stops after the first delta and waits to be stopped.

use std::io::{Read, Write};

fn main() {
    let flags: Vec<String> = std::env::args().skip(1).collect();
    let has = |f: &str| flags.iter().any(|a| a == f);
    let mut prompt = String::new();
    if std::io::stdin().read_to_string(&mut prompt).is_err() {
        std::process::exit(2);
    }
    let mut out = std::io::stdout().lock();
    let mut say = |line: serde_json::Value| {
        // A closed stdout (the driver stopped reading) ends the CLI.
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            std::process::exit(1);
        }
    };
    let session = "toy-session-1";
    say(serde_json::json!({"type": "init", "session": session}));
    say(serde_json::json!({"type": "text", "text": "You said: "}));
    if has("--stall") {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
    let args = serde_json::json!({"text": prompt.trim()});
    say(serde_json::json!({"type": "tool", "id": "t1", "name": "shout", "args": args}));
    let loud = prompt.trim().to_uppercase();
    say(serde_json::json!({"type": "tool_result", "id": "t1", "output": loud}));
    say(serde_json::json!({"type": "text", "text": loud}));
    if has("--no-result") {
        eprintln!("toy-cli: lost the model");
        std::process::exit(1);
    }
    let ok = !has("--fail");
    let error = (!ok).then_some("the toy model refused");
    say(serde_json::json!({"type": "result", "ok": ok, "session": session, "error": error}));
}
