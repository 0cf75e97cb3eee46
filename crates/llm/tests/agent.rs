//! The LLM agent driver through core (`Agent` → `RunStream` → `Event`s →
//! `RunResult`) and the conformance kit, against the mock server, for every
//! vendor protocol.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_adaptor_conformance::{Expect, Options, RunCase, test_driver};
use agent_adaptor_core::{Agent, Error, Event, RunCause, RunResult, RunStream, Runner};
use agent_adaptor_driver::TranscriptKind;
use agent_adaptor_llm::agent::LlmDriver;
use agent_adaptor_llm::{OpenAiChat, Protocol, Provider};
use agent_adaptor_testkit::mock::{Reply, ToolCallSpec};
use common::{VENDORS, Vendor, llm};
use futures::StreamExt;
use serde_json::json;

async fn drain(mut stream: RunStream) -> (Vec<Event>, Result<RunResult, Error>) {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let outcome = stream.result().await;
    (events, outcome)
}

fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta(d) => Some(d.text.as_str()),
            _ => None,
        })
        .collect()
}

fn thinking_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Thinking(d) => Some(d.text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_text_turn_streams_and_returns_one_result_for_every_vendor() {
    for vendor in VENDORS {
        let answer = "Hello from the mock model, in several deltas.";
        let server = common::server(vec![Reply::Text(answer.into())]).await;
        let agent = Agent::new(llm(vendor, &server));
        let (events, outcome) = drain(agent.stream(common::PROMPT)).await;
        let result = outcome.unwrap_or_else(|e| panic!("{vendor:?}: {e}"));
        assert_eq!(result.text, answer, "{vendor:?}");
        assert_eq!(
            text_of(&events),
            answer,
            "{vendor:?}: deltas add up to the text"
        );
        assert!(
            matches!(events.first(), Some(Event::RunStarted(_))),
            "{vendor:?}"
        );
        assert!(
            matches!(events.last(), Some(Event::RunFinished(_))),
            "{vendor:?}"
        );
        let usage = result.usage.clone().expect("usage reported");
        assert_eq!(usage.output_tokens, Some(10), "{vendor:?}");
        assert_eq!(result.provider, "mock");
        let terminal = result.raw().terminal.as_ref().expect("terminal payload");
        assert_eq!(terminal.event, "done");
        let done: serde_json::Value = serde_json::from_str(terminal.json.get()).unwrap();
        assert_eq!(done["finish_reason"], "stop", "{vendor:?}");
        let kinds: Vec<_> = result
            .transcript()
            .as_slice()
            .unwrap()
            .iter()
            .map(|i| i.kind)
            .collect();
        assert_eq!(kinds, vec![TranscriptKind::Assistant], "{vendor:?}");
    }
}

#[tokio::test]
async fn reasoning_and_parallel_tool_calls_reach_core_for_every_vendor() {
    for vendor in VENDORS {
        let server = common::server(vec![Reply::ReasoningThenText {
            reasoning: "Think it through.".into(),
            text: "Answer.".into(),
        }])
        .await;
        let agent = Agent::new(llm(vendor, &server));
        let (events, outcome) = drain(agent.stream(common::PROMPT)).await;
        let result = outcome.unwrap_or_else(|e| panic!("{vendor:?}: {e}"));
        assert_eq!(result.text, "Answer.", "{vendor:?}");
        assert!(
            thinking_of(&events).contains("Think it through."),
            "{vendor:?}: {:?}",
            thinking_of(&events)
        );
        assert!(
            result
                .transcript()
                .as_slice()
                .unwrap()
                .iter()
                .any(|i| i.kind == TranscriptKind::Thinking),
            "{vendor:?}"
        );

        // Tools the run does not have: the model reads that, then answers.
        let server = common::server(vec![
            Reply::ToolCalls(vec![
                ToolCallSpec::new("read_file", json!({"path": "a.txt"})),
                ToolCallSpec::new("list_dir", json!({"path": "."})),
            ]),
            Reply::Text("Without tools, then.".into()),
        ])
        .await;
        let agent = Agent::new(llm(vendor, &server));
        let (events, outcome) = drain(agent.stream(common::PROMPT)).await;
        let result = outcome.unwrap_or_else(|e| panic!("{vendor:?}: {e}"));
        let calls: Vec<_> = result
            .transcript()
            .as_slice()
            .unwrap()
            .iter()
            .filter(|i| i.kind == TranscriptKind::ToolCall)
            .collect();
        assert_eq!(calls.len(), 2, "{vendor:?}: {:?}", result.transcript());
        let names: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolCall(c) if !c.name.is_empty() => Some(c.name.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(names, vec!["read_file", "list_dir"], "{vendor:?}");
        assert_eq!(result.text, "Without tools, then.", "{vendor:?}");
        let results: Vec<_> = result
            .transcript()
            .as_slice()
            .unwrap()
            .iter()
            .filter(|i| i.kind == TranscriptKind::ToolResult)
            .collect();
        assert_eq!(results.len(), 2, "{vendor:?}");
        assert!(
            results
                .iter()
                .all(|r| r.is_error && r.text.contains("no tool named")),
            "{vendor:?}: {results:?}"
        );
    }
}

fn failure_of(
    outcome: Result<RunResult, Error>,
) -> (agent_adaptor_driver::RunFailure, Option<RunResult>) {
    match outcome {
        Err(Error::Run(run)) => match &run.cause {
            Some(RunCause::Failure(failure)) => {
                ((**failure).clone(), run.result.as_deref().cloned())
            }
            other => panic!("expected a business failure, got {other:?}"),
        },
        other => panic!("expected a run error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_error_inside_a_200_stream_fails_the_run_with_code_and_status() {
    for vendor in VENDORS {
        // Each vendor's own word for "rate limited" (Anthropic's error types
        // stand for documented statuses; the others carry the status).
        let code = match vendor {
            Vendor::Anthropic => "rate_limit_error",
            Vendor::Gemini => "RESOURCE_EXHAUSTED",
            Vendor::Chat | Vendor::Responses => "rate_limit_exceeded",
        };
        let server = common::server(vec![Reply::StreamErrorEnvelope {
            partial_text: "Partial answer".into(),
            code: code.into(),
            status: 429,
            message: "slow down".into(),
        }])
        .await;
        let agent = Agent::new(llm(vendor, &server));
        let (events, outcome) = drain(agent.stream(common::PROMPT)).await;
        assert_eq!(text_of(&events), "Partial answer", "{vendor:?}");
        let (failure, partial) = failure_of(outcome);
        assert_eq!(
            failure.metadata.get("provider_code").map(String::as_str),
            Some(code),
            "{vendor:?}"
        );
        assert_eq!(
            failure.metadata.get("http_status").map(String::as_str),
            Some("429"),
            "{vendor:?}"
        );
        assert_eq!(failure.code.as_str(), "rate_limited", "{vendor:?}");
        assert_eq!(
            partial.expect("partial result kept").text,
            "Partial answer",
            "{vendor:?}"
        );
        assert_eq!(
            server.requests().len(),
            1,
            "{vendor:?}: never retried after the first event"
        );
    }
}

#[tokio::test]
async fn http_errors_and_cut_offs_fail_with_typed_reasons() {
    let server = common::server(vec![Reply::HttpError {
        status: 401,
        body: serde_json::Value::Null,
        retry_after: None,
    }])
    .await;
    let agent = Agent::new(llm(Vendor::Chat, &server));
    let (failure, _) = failure_of(agent.run(common::PROMPT).await);
    assert_eq!(failure.code.as_str(), "authentication");
    assert_eq!(
        failure.metadata.get("http_status").map(String::as_str),
        Some("401")
    );
    assert_eq!(server.requests().len(), 1);

    let server = common::server(vec![Reply::CutOff {
        partial_text: "Half an ans".into(),
    }])
    .await;
    let agent = Agent::new(llm(Vendor::Anthropic, &server));
    let (events, outcome) = drain(agent.stream(common::PROMPT)).await;
    assert_eq!(text_of(&events), "Half an ans");
    let (failure, partial) = failure_of(outcome);
    assert_eq!(failure.code.as_str(), "incomplete");
    assert_eq!(partial.unwrap().text, "Half an ans");
}

#[tokio::test]
async fn cancelling_a_run_stops_the_stream() {
    let server = common::server(vec![Reply::Slow {
        text: "a slow answer that takes a long while to arrive in full".into(),
        chunk_delay: std::time::Duration::from_millis(300),
    }])
    .await;
    let agent = Agent::new(llm(Vendor::Chat, &server));
    let mut stream = agent.stream(common::PROMPT);
    while let Some(event) = stream.next().await {
        if matches!(event, Event::TextDelta(_)) {
            stream.cancel();
            break;
        }
    }
    while stream.next().await.is_some() {}
    match stream.result().await {
        Err(Error::Run(run)) => assert_eq!(run.reason.as_str(), "cancelled"),
        other => panic!("expected cancellation, got {other:?}"),
    }
}

#[tokio::test]
async fn the_driver_passes_the_conformance_kit() {
    for vendor in VENDORS {
        let server = common::server(vec![Reply::ReasoningThenText {
            reasoning: "Plan.".into(),
            text: "Done.".into(),
        }])
        .await;
        let driver = llm(vendor, &server);
        let report = test_driver(
            move || driver.clone(),
            Options::new()
                .run(RunCase::new(
                    "streaming",
                    common::PROMPT,
                    true,
                    Expect::Success,
                ))
                .run(RunCase::new(
                    "batch",
                    common::PROMPT,
                    false,
                    Expect::Success,
                )),
        )
        .await;
        report.assert_passed();

        let server = common::server(vec![Reply::StreamErrorEnvelope {
            partial_text: "x".into(),
            code: "server_error".into(),
            status: 500,
            message: "boom".into(),
        }])
        .await;
        let driver = llm(vendor, &server);
        let report = test_driver(
            move || driver.clone(),
            Options::new().run(RunCase::new(
                "stream error",
                common::PROMPT,
                true,
                Expect::Failure,
            )),
        )
        .await;
        report.assert_passed();
    }
}

#[test]
fn config_validation_names_the_problem() {
    use agent_adaptor_driver::Driver;
    let provider = Provider::new("p", OpenAiChat::new()).base_url("ftp://x");
    let error = LlmDriver::new(provider.clone(), "m")
        .validate_config()
        .unwrap_err();
    assert!(error.reason.contains("not http"), "{error}");
    let provider = provider.base_url("http://127.0.0.1:1/v1");
    let error = LlmDriver::new(provider, " ").validate_config().unwrap_err();
    assert!(error.reason.contains("no model"), "{error}");
}

#[tokio::test]
async fn credentials_in_the_base_url_reach_no_error_and_no_notice() {
    use agent_adaptor_driver::Driver;
    let secret = "ftp://user:pw-secret@h/v1?key=K-secret";
    let provider = Provider::new("p", OpenAiChat::new()).base_url(secret);
    let error = LlmDriver::new(provider, "m").validate_config().unwrap_err();
    assert!(!error.to_string().contains("secret"), "{error}");

    // Nothing listens on the port: the transport error names the URL.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let provider = Provider::new(
        "p",
        OpenAiChat::new().with_retry_config(agent_adaptor_llm::LlmRetryConfig::no_retry()),
    )
    .base_url(format!(
        "http://user:pw-secret@127.0.0.1:{port}/v1?key=K-secret"
    ));
    let agent = Agent::new(LlmDriver::new(provider, "m"));
    let (events, outcome) = drain(agent.stream(common::PROMPT)).await;
    let shown = format!("{events:?}\n{outcome:?}");
    assert!(outcome.is_err(), "{shown}");
    assert!(
        shown.contains("127.0.0.1"),
        "the endpoint is still named: {shown}"
    );
    assert!(
        !shown.contains("pw-secret") && !shown.contains("K-secret"),
        "{shown}"
    );
}

/// A protocol whose stream ends cleanly after some text, without `Done` or
/// `Error` (a gateway that closes the body early).
struct EndsEarly;

#[async_trait::async_trait]
impl Protocol for EndsEarly {
    fn id(&self) -> &'static str {
        "ends-early"
    }

    fn default_base_url(&self) -> &'static str {
        "http://127.0.0.1:9/v1"
    }

    async fn chat_completion_stream(
        &self,
        _endpoint: &agent_adaptor_llm::ProviderEndpoint,
        _messages: &[agent_adaptor_llm::Message],
        _config: &agent_adaptor_llm::LlmCallConfig,
    ) -> Result<agent_adaptor_llm::LlmResponseStream, agent_adaptor_llm::LlmError> {
        let events = vec![Ok(agent_adaptor_llm::LlmStreamEvent::TextDelta(
            "Half".into(),
        ))];
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

#[tokio::test]
async fn a_stream_that_ends_without_a_terminal_event_fails_as_incomplete() {
    let agent = Agent::new(LlmDriver::new(Provider::new("early", EndsEarly), "m"));
    let (events, outcome) = drain(agent.stream(common::PROMPT)).await;
    assert_eq!(text_of(&events), "Half");
    let (failure, partial) = failure_of(outcome);
    assert_eq!(failure.code.as_str(), "incomplete");
    assert!(
        failure.message.contains("terminal event"),
        "{}",
        failure.message
    );
    let partial = partial.expect("partial result kept");
    assert_eq!(partial.text, "Half");
    assert!(
        partial.raw().terminal.is_none(),
        "no terminal payload was seen"
    );
}
