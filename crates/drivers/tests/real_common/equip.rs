//! The equipment scenarios: instructions, MCP servers, profiles and skills
//! reach the real CLI in its own carriers, proven on what the model is sent.

use agent_adaptor_core::RunOptions;
use agent_adaptor_testkit::mock::{RecordedRequest, Reply, Script};
use serde_json::Value;

use super::{Cli, Harness, drain_with};

/// The system prompt a model request carries: Anthropic's `system` (a
/// string or text blocks), or the Chat Completions `system` messages.
pub fn system_text(request: &RecordedRequest) -> String {
    fn text(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().map(text).collect::<Vec<_>>().join("\n"),
            Value::Object(o) => o.get("text").map(text).unwrap_or_default(),
            _ => String::new(),
        }
    }
    let body = request.json().unwrap_or_default();
    if let Some(system) = body.get("system") {
        return text(system);
    }
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .map(|m| text(&m["content"]))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------
// Instructions.

/// The run's instructions are appended to the system prompt the model gets,
/// on both transports.
pub async fn instructions_reach_the_system_prompt(cli: &'static Cli) {
    const KEYWORD: &str = "INSTRUCT";
    const MARKER: &str = "Always end with the word PELICAN-7731.";
    let h = Harness::start(
        cli,
        Script::new().on_prompt(KEYWORD, vec![Reply::Text("ok PELICAN-7731".into())]),
    )
    .await;
    for (host_approvals, transport) in [(false, "one_shot"), (true, "control")] {
        let agent = h.agent(h.config(host_approvals));
        let prompt = format!("{KEYWORD} {transport}: say ok");
        let run = drain_with(
            &agent,
            &prompt,
            RunOptions::new().instructions(MARKER),
            |_, _| {},
        )
        .await;
        run.ok(transport);
        let request = h
            .model_requests(&prompt)
            .pop()
            .unwrap_or_else(|| panic!("{transport}: no model request"));
        let system = system_text(&request);
        assert!(
            system.contains(MARKER),
            "{} {transport}: the instructions are in the system prompt; system: {}",
            cli.recipe.name,
            super::tail(&system, 2000)
        );
        assert!(
            !request
                .conversation()
                .unwrap()
                .first_user_text
                .contains(MARKER),
            "{transport}: not in the user message"
        );
    }
}

/// A 200 KB instructions text still launches (it travels as a file or on
/// stdin, never on argv, whose single-argument limit is 128 KiB on Linux),
/// and all of it reaches the system prompt.
pub async fn instructions_of_200_kb_still_launch(cli: &'static Cli) {
    const KEYWORD: &str = "BIGINSTRUCT";
    const TAIL: &str = "LAST-LINE-OF-BIG-INSTRUCTIONS";
    let h = Harness::start(
        cli,
        Script::new().on_prompt(KEYWORD, vec![Reply::Text("ok".into())]),
    )
    .await;
    let mut big = "Follow the house style. ".repeat(200 * 1024 / 24 + 1);
    big.push_str(TAIL);
    assert!(big.len() > 200 * 1024);
    let agent = h.agent(h.config(false));
    let run = drain_with(
        &agent,
        &format!("{KEYWORD}: say ok"),
        RunOptions::new().instructions(big),
        |_, _| {},
    )
    .await;
    run.ok("200 KB instructions");
    let request = h.model_requests(KEYWORD).pop().expect("a model request");
    assert!(
        system_text(&request).contains(TAIL),
        "{}: the whole text reached the system prompt",
        cli.recipe.name
    );
}
