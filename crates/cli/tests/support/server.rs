//! A running `agent-adaptor serve` for tests: its URL, its token, an
//! authenticated client, and its operator log.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running `agent-adaptor serve`, killed on drop.
pub struct Server {
    /// The process.
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The first line's URL (with `#token=…` unless `--no-auth`).
    pub start_url: String,
    /// The token from the start URL.
    pub token: Option<String>,
    /// Every stderr line so far (the operator log).
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// A client that sends `Authorization: Bearer <token>` (when there is
    /// one) on every request.
    pub fn client(&self) -> reqwest::Client {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(t) = &self.token {
            headers.insert(
                reqwest::header::AUTHORIZATION,
                format!("Bearer {t}").parse().unwrap(),
            );
        }
        reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .default_headers(headers)
            .build()
            .unwrap()
    }

    /// A client without credentials.
    pub fn anonymous(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap()
    }

    /// `GET path` with the token; the JSON body (any status).
    pub async fn get_json(&self, path: &str) -> serde_json::Value {
        self.client()
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The operator log so far, as one string.
    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

/// `agent-adaptor serve --playground` on a free port with `extra` flags.
pub fn serve_with(home: &Path, extra: &[&str]) -> Server {
    let mut args = vec!["--playground"];
    args.extend_from_slice(extra);
    serve_cmd(super::command(home), &args)
}

/// `serve` on a free port with `args` (a driver choice included), from a
/// prepared command (environment set; it may be a wrapper whose arguments
/// end with the binary).
pub fn serve_cmd(mut cmd: std::process::Command, args: &[&str]) -> Server {
    let port = super::free_port();
    let mut child = cmd
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let stderr = child.stderr.take().unwrap();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            eprintln!("[serve] {line}");
            sink.lock().unwrap().push(line);
        }
    });
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let start_url = first
        .strip_prefix("agent-adaptor serve: ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_owned();
    assert!(
        start_url.starts_with(&format!("http://127.0.0.1:{port}/")),
        "{first}"
    );
    let token = start_url.split_once("#token=").map(|(_, t)| t.to_owned());
    let mut rest = Vec::new();
    for _ in 0..3 {
        rest.push(lines.next().and_then(Result::ok).unwrap_or_default());
    }
    assert!(
        rest[1].contains("threads: "),
        "the store path is printed: {rest:?}"
    );
    // Keep draining stdout so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    Server {
        child,
        base: format!("http://127.0.0.1:{port}"),
        start_url,
        token,
        log,
    }
}

/// The `data:` JSON objects of an SSE body.
pub fn sse_data(body: &str) -> Vec<serde_json::Value> {
    body.split("\n\n")
        .filter_map(|frame| {
            let data: Vec<&str> = frame
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            (!data.is_empty()).then(|| serde_json::from_str(&data.join("\n")).unwrap())
        })
        .collect()
}

/// POST `body` as JSON to `url` accepting an event stream; the whole
/// response body.
pub async fn post_sse(client: &reqwest::Client, url: String, body: &serde_json::Value) -> String {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .json(body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}
