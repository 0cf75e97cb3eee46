//! SSE parsing throughput: one large Chat Completions stream, consumed end to
//! end by agent-adaptor-llm and by the `async-openai` crate (divan).
//!
//! # What is measured
//!
//! The stream is what the testkit mock model server sends for a long text
//! answer (`TEXT_BYTES` of text in 8-character deltas: one
//! `chat.completion.chunk` per delta, a finish chunk, a usage chunk and
//! `[DONE]`). It is rendered once, then served byte for byte from memory by a
//! minimal HTTP/1.1 server on 127.0.0.1 running on its own thread, so an
//! iteration measures the client: connect, request, read and decode every
//! frame, hand every delta to the consumer.
//!
//! * `agent_adaptor_llm` — `Provider::chat_completion_stream` with
//!   [`OpenAiChat`], draining every [`LlmStreamEvent`] (asserts the
//!   text deltas add up to the answer and `Done` arrives).
//! * `async_openai` — `async_openai::Client::chat().create_stream`, draining
//!   every chunk (asserts the same text).
//! * `raw_body` — the floor: `reqwest` reading the body bytes, no parsing.
//!
//! Both clients use reqwest over plain HTTP on the same loopback server, on a
//! current-thread tokio runtime. Run with
//! `cargo bench -p agent-adaptor-llm --bench sse`; compare the medians as
//! ratios (the figures of a run are in the issue notes).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, OnceLock};

use agent_adaptor_llm::{LlmCallConfig, LlmStreamEvent, Message, OpenAiChat, Provider};
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use futures::StreamExt;

/// Text bytes in the scripted answer (8-byte deltas → 65 536 chunks).
const TEXT_BYTES: usize = 512 * 1024;

struct Fixture {
    addr: SocketAddr,
    answer: String,
    runtime: tokio::runtime::Runtime,
}

fn answer() -> String {
    let words = "the quick brown fox jumps over the lazy dog ";
    words.repeat(TEXT_BYTES / words.len() + 1)[..TEXT_BYTES].to_owned()
}

/// Renders the stream once through the mock server and returns the raw
/// response body.
fn render(runtime: &tokio::runtime::Runtime, answer: &str) -> Vec<u8> {
    runtime.block_on(async {
        let server = MockServer::start(Script::new().fallback(Reply::Text(answer.to_owned())))
            .await
            .expect("mock server");
        let body = serde_json::json!({
            "model": "bench-model",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "bench"}],
        });
        let bytes = reqwest::Client::new()
            .post(format!("{}/v1/chat/completions", server.base_url()))
            .json(&body)
            .send()
            .await
            .expect("request")
            .bytes()
            .await
            .expect("body");
        server.shutdown().await;
        bytes.to_vec()
    })
}

/// Serves `body` as a `text/event-stream` response to every request.
fn serve(body: Arc<Vec<u8>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let body = Arc::clone(&body);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut request = vec![0; length];
                if reader.read_exact(&mut request).is_err() {
                    return;
                }
                let mut stream = reader.into_inner();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            });
        }
    });
    addr
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let answer = answer();
        let body = render(&runtime, &answer);
        let addr = serve(Arc::new(body));
        Fixture {
            addr,
            answer,
            runtime,
        }
    })
}

#[divan::bench(sample_count = 20)]
fn agent_adaptor_llm() {
    let fixture = fixture();
    let provider = Provider::new("bench", OpenAiChat::new())
        .base_url(format!("http://{}/v1", fixture.addr))
        .api_key("bench");
    let text = fixture.runtime.block_on(async {
        let mut stream = provider
            .chat_completion_stream(
                &[Message::user("bench")],
                &LlmCallConfig::new("bench-model"),
            )
            .await
            .expect("stream");
        let mut text = String::with_capacity(TEXT_BYTES);
        let mut done = false;
        while let Some(item) = stream.next().await {
            match item.expect("event") {
                LlmStreamEvent::TextDelta(delta) => text.push_str(&delta),
                LlmStreamEvent::Done(_) => done = true,
                _ => {}
            }
        }
        assert!(done, "Done arrives");
        text
    });
    assert_eq!(text.len(), fixture.answer.len());
}

#[divan::bench(sample_count = 20)]
fn async_openai() {
    use async_openai::config::OpenAIConfig;
    use async_openai::types::{
        ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequestArgs,
    };
    let fixture = fixture();
    let config = OpenAIConfig::new()
        .with_api_base(format!("http://{}/v1", fixture.addr))
        .with_api_key("bench");
    let client = async_openai::Client::with_config(config);
    let request = CreateChatCompletionRequestArgs::default()
        .model("bench-model")
        .messages([ChatCompletionRequestUserMessageArgs::default()
            .content("bench")
            .build()
            .expect("message")
            .into()])
        .stream(true)
        .build()
        .expect("request");
    let text = fixture.runtime.block_on(async {
        let mut stream = client.chat().create_stream(request).await.expect("stream");
        let mut text = String::with_capacity(TEXT_BYTES);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.expect("chunk");
            for choice in chunk.choices {
                if let Some(delta) = choice.delta.content {
                    text.push_str(&delta);
                }
            }
        }
        text
    });
    assert_eq!(text.len(), fixture.answer.len());
}

#[divan::bench(sample_count = 20)]
fn raw_body() {
    let fixture = fixture();
    let client = reqwest::Client::new();
    let length = fixture.runtime.block_on(async {
        let mut body = client
            .post(format!("http://{}/v1/chat/completions", fixture.addr))
            .body("{}")
            .send()
            .await
            .expect("request")
            .bytes_stream();
        let mut length = 0;
        while let Some(chunk) = body.next().await {
            length += chunk.expect("chunk").len();
        }
        length
    });
    assert!(length > TEXT_BYTES);
}

fn main() {
    divan::main();
}
