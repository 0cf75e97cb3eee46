//! Quickstart: stream a run on the scripted driver and print what happens.
//!
//! `cargo run -p agent-adaptor --example quickstart`

use agent_adaptor::driver::{RunEvent, StreamPayload, TranscriptItem};
use agent_adaptor::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor::{Agent, Event, Phase, Runner};
use futures::StreamExt;
use serde_json::json;

fn script() -> ScriptedDriver {
    let answer = "The project has 3 crates: driver, core and the facade.";
    let call = json!({"command": "ls crates"});
    let mut steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Stream(StreamPayload::reasoning_start("r1")),
        Step::Stream(StreamPayload::reasoning_content(
            "r1",
            "Let me look at the crates.",
        )),
        Step::Stream(StreamPayload::reasoning_end("r1")),
        Step::Stream(StreamPayload::tool_call_start(
            "t1",
            "shell",
            Some(call.clone()),
        )),
        Step::Stream(StreamPayload::tool_call_end("t1", None)),
        Step::Stream(StreamPayload::tool_call_result(
            "t1",
            Some(json!({"stdout": "agent-adaptor core driver"})),
        )),
        Step::Stream(StreamPayload::text_start("m1")),
    ];
    for word in answer.split_inclusive(' ') {
        steps.push(Step::Stream(StreamPayload::text_content("m1", word)));
    }
    let items = vec![
        TranscriptItem::thinking("Let me look at the crates."),
        TranscriptItem::tool_call("t1", "shell", Some(call)),
        TranscriptItem::tool_result("t1", "agent-adaptor core driver", false),
        TranscriptItem::assistant(answer),
    ];
    steps.push(Step::Stream(StreamPayload::text_end("m1")));
    steps.extend(
        items
            .iter()
            .map(|i| Step::Emit(RunEvent::Item(i.clone().into()))),
    );
    steps.push(Step::Stream(StreamPayload::run_finished(None)));
    let response = agent_adaptor::driver::Response {
        output: answer.into(),
        transcript: items.into(),
        exit_code: Some(0),
        provider: "scripted".into(),
        ..Default::default()
    };
    ScriptedDriver::new(steps, Ending::Respond(Box::new(response)))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = Agent::new(script());
    let mut stream = agent.stream("What crates does this project have?");
    println!("run {}", stream.run_id());
    while let Some(event) = stream.next().await {
        let seq = event.meta().sequence;
        match &event {
            Event::RunStarted(_) => println!("[{seq}] run started"),
            Event::Thinking(t) if t.phase == Phase::Content => {
                println!("[{seq}] thinking: {}", t.text)
            }
            Event::ToolCall(c) if c.phase == Phase::Start => {
                println!(
                    "[{seq}] tool call {} {}",
                    c.name,
                    c.args.clone().unwrap_or_default()
                )
            }
            Event::ToolResult(r) => println!(
                "[{seq}] tool result {}",
                r.result.clone().unwrap_or_default()
            ),
            Event::TextDelta(d) if d.phase == Phase::Content => {
                println!("[{seq}] text: {:?}", d.text)
            }
            Event::RunFinished(f) => println!("[{seq}] run finished (failed: {})", f.failed),
            other => println!("[{seq}] {}", other.kind_name()),
        }
    }
    let result = stream.result().await?;
    println!("\nresult: {}", result.text);
    println!("transcript: {} items", result.transcript().len());
    Ok(())
}
