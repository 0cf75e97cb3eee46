//! Structured output end to end: core (`run_as`, `with_schema_json`) over
//! the real, pinned Codex and Claude Code CLIs (installed by
//! `scripts/install-clis`), offline against the testkit mock model server.
//!
//! * Codex (app-server and exec): core passes the schema natively (exec
//!   `--output-schema FILE`, app-server `turn/start.outputSchema`); the mock
//!   records it as the Responses request's `text.format` (strict
//!   `json_schema`), and the final agent message is the JSON.
//! * Claude Code (one-shot and control transports): core passes
//!   `--json-schema`; the CLI offers the model a `StructuredOutput` tool
//!   whose `input_schema` is the schema (recorded by the mock), and reports
//!   the call as `result.structured_output`. A model that answers plain JSON
//!   text instead is nagged once by the CLI, then core validates the final
//!   text.
//!
//! * CodeBuddy Code (one-shot and control): prompt + validate, because its
//!   `--json-schema` never shows the model the schema (see
//!   `streamjson::Family::native_json_schema`).
//!
//! Every case checks what core decided: a valid answer is decoded into a
//! struct; an answer that breaks the schema, or is not JSON, fails the run
//! with `policy_violation` and the validation errors, the partial result
//! kept; under `schema_return_invalid` the same answer is returned with its
//! errors.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::time::Duration;

use agent_adaptor_core::driver::StructuredOutputSource;
use agent_adaptor_core::result::DecodeError;
use agent_adaptor_core::{Agent, Error, FailureReason, RunOptions, RunResult, run_as};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::{claude, codebuddy, codex};
use agent_adaptor_testkit::clis::{CLAUDE, CODEBUDDY, CODEX, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Reply, Script};
use serde::Deserialize;
use serde_json::{Value, json};

/// Every run's bound (a hang fails instead of blocking CI).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// What every case asks for. `deny_unknown_fields` makes schemars emit
/// `additionalProperties: false`, which OpenAI's strict mode requires.
#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Verdict {
    /// The verdict.
    verdict: String,
    /// How many issues were found.
    issues: u32,
}

fn valid() -> Value {
    json!({"verdict": "ship it", "issues": 0})
}

/// Breaks the schema twice: a string count and a missing verdict.
fn invalid() -> Value {
    json!({"issues": "none"})
}

/// The mock, a scratch home prepared for one CLI, and its environment.
struct Harness {
    server: MockServer,
    home: ScratchDir,
    env: Vec<(String, String)>,
}

impl Harness {
    async fn start(recipe: &agent_adaptor_testkit::clis::CliRecipe, script: Script) -> Self {
        let server = MockServer::start(script).await.unwrap();
        let home = ScratchDir::new(recipe.name).unwrap();
        let env = recipe.prepare(&server.base_url(), home.path()).unwrap();
        Harness { server, home, env }
    }

    fn work(&self) -> std::path::PathBuf {
        self.home.path().join("work")
    }

    /// The model requests of the conversation started with `keyword`.
    fn requests(&self, keyword: &str) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .filter(|r| {
                r.conversation()
                    .is_some_and(|c| c.first_user_text.contains(keyword))
            })
            .collect()
    }

    fn codex(&self, transport: codex::Transport) -> Agent {
        let base = self.server.base_url();
        let mut cfg = codex::Config {
            command: CODEX.binary().unwrap(),
            transport,
            model: Some(CODEX.model.into()),
            cwd: Some(self.work()),
            env_policy: EnvPolicy::only(["PATH", "USER"]),
            ..Default::default()
        };
        for (k, v) in agent_adaptor_testkit::clis::codex_mock_overrides(&base) {
            cfg.overrides.insert(k, v);
        }
        cfg.env.extend(self.env.iter().cloned());
        Agent::new(codex::driver(cfg))
    }

    fn claude(&self, host_approvals: bool) -> Agent {
        let mut cfg = claude::config();
        cfg.command = CLAUDE.binary().unwrap();
        cfg.env = self
            .env
            .iter()
            .cloned()
            .chain([
                ("CLAUDE_CODE_MAX_RETRIES".into(), "0".into()),
                (
                    "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK".into(),
                    "1".into(),
                ),
            ])
            .collect();
        cfg.env_policy = EnvPolicy::only(["PATH", "USER"]);
        cfg.model = Some(CLAUDE.model.into());
        cfg.cwd = Some(self.work());
        cfg.host_approvals = host_approvals;
        Agent::new(claude::driver(cfg))
    }
}

impl Harness {
    fn codebuddy(&self, host_approvals: bool) -> Agent {
        let mut cfg = codebuddy::config();
        cfg.command = CODEBUDDY.binary().unwrap();
        cfg.env = self.env.iter().cloned().collect();
        cfg.env_policy = EnvPolicy::only(["PATH", "USER"]);
        cfg.cwd = Some(self.work());
        cfg.host_approvals = host_approvals;
        Agent::new(codebuddy::driver(cfg))
    }
}

/// `run_as::<Verdict>` under [`RUN_TIMEOUT`].
async fn verdict(
    agent: &Agent,
    prompt: &str,
    options: RunOptions,
) -> Result<(Verdict, RunResult), Error> {
    tokio::time::timeout(
        RUN_TIMEOUT + Duration::from_secs(30),
        run_as::<Verdict, _>(agent, prompt, options.timeout(RUN_TIMEOUT)),
    )
    .await
    .expect("the run ended")
}

/// A run refused by core for its output: `policy_violation`, the errors in
/// the details and the partial result. Returns the partial result.
fn policy_failure(what: &str, outcome: Result<(Verdict, RunResult), Error>) -> RunResult {
    let err = match outcome {
        Ok((v, _)) => panic!("{what}: the run succeeded with {v:?}"),
        Err(e) => e,
    };
    let re = err
        .as_run_error()
        .unwrap_or_else(|| panic!("{what}: {err:?}"));
    assert_eq!(re.reason, FailureReason::PolicyViolation, "{what}: {re}");
    let errors = re.details.as_ref().unwrap()["validation_errors"].clone();
    assert!(
        errors.as_array().is_some_and(|e| !e.is_empty()),
        "{what}: {errors}"
    );
    let partial = re.result.as_deref().cloned().expect("the partial result");
    let so = partial.structured_output().unwrap();
    assert!(!so.valid, "{what}");
    assert_eq!(json!(so.validation_errors), errors, "{what}");
    partial
}

/// The validation errors of [`invalid`]: the missing verdict and the string
/// count, as core reports them.
fn assert_invalid_errors(what: &str, errors: &[String]) {
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("/: ") && e.contains("verdict")),
        "{what}: {errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.starts_with("/issues: ")),
        "{what}: {errors:?}"
    );
}

/// A schema's `required` names, sorted.
fn required(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        serde_json::from_value(schema["required"].clone()).unwrap_or_default();
    names.sort();
    names
}

// ------------------------------------------------------------------ Codex

/// Both Codex transports, through core.
const CODEX_TRANSPORTS: [(&str, codex::Transport); 2] = [
    ("app-server", codex::Transport::AppServer),
    ("exec", codex::Transport::Exec),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_decodes_a_valid_answer_and_sends_the_schema_as_text_format() {
    let h = Harness::start(
        &CODEX,
        Script::new()
            .on_prompt("CXVALIDAPP", vec![Reply::Json(valid())])
            .on_prompt("CXVALIDEXEC", vec![Reply::Json(valid())]),
    )
    .await;
    for ((name, transport), keyword) in CODEX_TRANSPORTS
        .into_iter()
        .zip(["CXVALIDAPP", "CXVALIDEXEC"])
    {
        let agent = h.codex(transport);
        let prompt = format!("{keyword} review the change");
        let (v, result) = verdict(&agent, &prompt, RunOptions::new())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            v,
            Verdict {
                verdict: "ship it".into(),
                issues: 0
            },
            "{name}"
        );
        let so = result.structured_output().unwrap();
        assert_eq!(so.source, StructuredOutputSource::Native, "{name}");
        assert!(so.valid, "{name}: {so:?}");

        // On the wire: the schema is the Responses request's strict
        // text.format, and the prompt carries no instruction.
        let sent = h.requests(keyword);
        assert_eq!(sent.len(), 1, "{name}");
        let body = sent[0].json().unwrap();
        let format = &body["text"]["format"];
        assert_eq!(format["type"], "json_schema", "{name}: {format}");
        assert_eq!(format["strict"], true, "{name}");
        assert_eq!(
            required(&format["schema"]),
            ["issues", "verdict"],
            "{name}: {format}"
        );
        assert_eq!(
            format["schema"]["properties"]["issues"]["type"], "integer",
            "{name}"
        );
        assert_eq!(format["schema"]["additionalProperties"], false, "{name}");
        let first = sent[0].conversation().unwrap().first_user_text;
        assert!(!first.contains("Output format"), "{name}: {first}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_answers_that_break_the_schema_fail_or_return_with_errors() {
    let h = Harness::start(
        &CODEX,
        Script::new()
            .on_prompt("CXBAD", vec![Reply::Json(invalid())])
            .on_prompt("CXTEXT", vec![Reply::Text("not json".into())])
            .on_prompt("CXKEEP", vec![Reply::Json(invalid())]),
    )
    .await;
    for (name, transport) in CODEX_TRANSPORTS {
        let agent = h.codex(transport);
        let what = format!("{name}: invalid per schema");
        let partial = policy_failure(
            &what,
            verdict(&agent, &format!("CXBAD {name}"), RunOptions::new()).await,
        );
        let so = partial.structured_output().unwrap();
        assert_eq!(so.value, Some(invalid()), "{what}");
        assert_invalid_errors(&what, &so.validation_errors);

        let what = format!("{name}: not JSON");
        let partial = policy_failure(
            &what,
            verdict(&agent, &format!("CXTEXT {name}"), RunOptions::new()).await,
        );
        let so = partial.structured_output().unwrap();
        assert_eq!(so.value, None, "{what}");
        assert_eq!(so.raw_json.trim(), "not json", "{what}");
        assert!(
            so.validation_errors[0].contains("not exactly one JSON value"),
            "{what}: {:?}",
            so.validation_errors
        );

        let what = format!("{name}: return_invalid");
        match verdict(
            &agent,
            &format!("CXKEEP {name}"),
            RunOptions::new().schema_return_invalid(),
        )
        .await
        {
            Err(Error::Decode {
                error: DecodeError::Invalid(errors),
                result,
            }) => {
                assert_invalid_errors(&what, &errors);
                let so = result.structured_output().unwrap();
                assert_eq!(so.value, Some(invalid()), "{what}");
                assert_eq!(so.validation_errors, errors, "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

// ------------------------------------------------------------------ Claude

/// The schema core sent, as the mock saw it in the `StructuredOutput` tool.
fn structured_output_tool(request: &RecordedRequest) -> Value {
    let body = request.json().unwrap();
    body["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "StructuredOutput"))
        .cloned()
        .unwrap_or_else(|| panic!("no StructuredOutput tool in {}", body["tools"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_decodes_the_structured_output_tool_call_on_both_transports() {
    let call = |kw| {
        (
            kw,
            vec![
                Reply::ToolCall {
                    name: "StructuredOutput".into(),
                    arguments: valid(),
                },
                Reply::Text("Reported.".into()),
            ],
        )
    };
    let mut script = Script::new();
    for (kw, replies) in [call("CLTOOLONE"), call("CLTOOLCTL")] {
        script = script.on_prompt(kw, replies);
    }
    let h = Harness::start(&CLAUDE, script).await;
    for (name, host_approvals, keyword) in [
        ("one-shot", false, "CLTOOLONE"),
        ("control", true, "CLTOOLCTL"),
    ] {
        let agent = h.claude(host_approvals);
        let (v, result) = verdict(&agent, &format!("{keyword} review"), RunOptions::new())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(v.verdict, "ship it", "{name}");
        let so = result.structured_output().unwrap();
        assert_eq!(so.source, StructuredOutputSource::Native, "{name}");
        assert!(so.valid, "{name}: {so:?}");
        assert_eq!(so.value, Some(valid()), "{name}");

        // On the wire: the schema is the input schema of the CLI's
        // StructuredOutput tool, and the prompt carries no instruction.
        let sent = h.requests(keyword);
        let tool = structured_output_tool(&sent[0]);
        assert_eq!(
            required(&tool["input_schema"]),
            ["issues", "verdict"],
            "{name}: {tool}"
        );
        assert_eq!(
            tool["input_schema"]["additionalProperties"], false,
            "{name}"
        );
        let first = sent[0].conversation().unwrap().first_user_text;
        assert!(!first.contains("Output format"), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_plain_json_text_is_validated_by_core() {
    let h = Harness::start(
        &CLAUDE,
        Script::new()
            .on_prompt("CLJSON", vec![Reply::Json(valid())])
            .on_prompt("CLBAD", vec![Reply::Json(invalid())])
            .on_prompt("CLTEXT", vec![Reply::Text("not json".into())])
            .on_prompt("CLKEEP", vec![Reply::Json(invalid())]),
    )
    .await;
    let agent = h.claude(false);

    // A model that answers the JSON as text (no tool call): the CLI reports
    // no structured output, core validates the final text.
    let (v, result) = verdict(&agent, "CLJSON review", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(v.issues, 0);
    let so = result.structured_output().unwrap();
    assert!(so.valid, "{so:?}");
    assert_eq!(so.value, Some(valid()));
    // The CLI insisted on its tool once before giving up.
    assert!(
        h.requests("CLJSON").iter().any(|r| r
            .json()
            .unwrap()
            .to_string()
            .contains("StructuredOutput tool")),
        "the CLI's reminder"
    );

    let partial = policy_failure(
        "invalid per schema",
        verdict(&agent, "CLBAD review", RunOptions::new()).await,
    );
    let so = partial.structured_output().unwrap();
    assert_eq!(so.value, Some(invalid()));
    assert_invalid_errors("invalid per schema", &so.validation_errors);

    let partial = policy_failure(
        "not JSON",
        verdict(&agent, "CLTEXT review", RunOptions::new()).await,
    );
    assert_eq!(partial.text, "not json");
    let so = partial.structured_output().unwrap();
    assert_eq!(so.value, None);
    assert!(
        so.validation_errors[0].contains("not exactly one JSON value"),
        "{:?}",
        so.validation_errors
    );

    match verdict(
        &agent,
        "CLKEEP review",
        RunOptions::new().schema_return_invalid(),
    )
    .await
    {
        Err(Error::Decode {
            error: DecodeError::Invalid(errors),
            result,
        }) => {
            assert_invalid_errors("return_invalid", &errors);
            assert_eq!(result.structured_output().unwrap().value, Some(invalid()));
        }
        other => panic!("return_invalid: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_rejects_an_invalid_tool_call_and_core_fails_the_run() {
    // The model keeps calling the tool with input that breaks the schema:
    // the CLI refuses each call (its own validation), then gives up with the
    // model's last text, which core cannot accept either.
    let bad_call = Reply::ToolCall {
        name: "StructuredOutput".into(),
        arguments: invalid(),
    };
    let h = Harness::start(
        &CLAUDE,
        Script::new().on_prompt(
            "CLBADTOOL",
            vec![
                bad_call.clone(),
                bad_call.clone(),
                bad_call,
                Reply::Text("I could not produce it.".into()),
            ],
        ),
    )
    .await;
    let agent = h.claude(false);
    let partial = policy_failure(
        "invalid tool call",
        verdict(&agent, "CLBADTOOL review", RunOptions::new()).await,
    );
    let sent = h.requests("CLBADTOOL");
    assert!(
        sent.iter().any(|r| r
            .json()
            .unwrap()
            .to_string()
            .contains("Output does not match required schema")),
        "the CLI told the model its call was invalid"
    );
    assert!(partial.structured_output().unwrap().value.is_none());
}

// ------------------------------------------------------------------ CodeBuddy

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codebuddy_is_prompt_validated_on_both_transports() {
    // CodeBuddy's --json-schema never shows the model the schema, so core
    // uses the prompt: the instruction with the schema goes in the first
    // user message, no StructuredOutput tool is offered, the text is the JSON.
    let h = Harness::start(
        &CODEBUDDY,
        Script::new()
            .on_prompt("CBJSONONE", vec![Reply::Json(valid())])
            .on_prompt("CBJSONCTL", vec![Reply::Json(valid())])
            .on_prompt("CBBAD", vec![Reply::Json(invalid())]),
    )
    .await;
    for (name, host_approvals, keyword) in [
        ("one-shot", false, "CBJSONONE"),
        ("control", true, "CBJSONCTL"),
    ] {
        let agent = h.codebuddy(host_approvals);
        let (v, result) = verdict(&agent, &format!("{keyword} review"), RunOptions::new())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(v.verdict, "ship it", "{name}");
        let so = result.structured_output().unwrap();
        assert_eq!(so.source, StructuredOutputSource::PromptValidate, "{name}");
        assert_eq!(so.value, Some(valid()), "{name}");

        let sent = &h.requests(keyword)[0];
        let body = sent.json().unwrap();
        let tools = body["tools"].to_string();
        assert!(!tools.contains("StructuredOutput"), "{name}: {tools}");
        let first = sent.conversation().unwrap().first_user_text;
        assert!(
            first.contains("exactly one JSON value") && first.contains(r#""verdict":{"#),
            "{name}: {first}"
        );
    }

    // JSON text that breaks the schema: core fails the run.
    let partial = policy_failure(
        "invalid per schema",
        verdict(&h.codebuddy(false), "CBBAD review", RunOptions::new()).await,
    );
    assert_invalid_errors(
        "invalid per schema",
        &partial.structured_output().unwrap().validation_errors,
    );
}
