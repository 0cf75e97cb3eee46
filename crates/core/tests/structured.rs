//! Structured output through core with a scripted driver: mechanism
//! selection (native, prompt + validate, unsupported), schema validation
//! before launch, local revalidation, failure and return-invalid outcomes,
//! and `run_as` round trips.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use agent_adaptor_core::driver::{
    ApprovalMode, Descriptor, HumanDecisionSupport, OnInvalid, StreamCapability, StructuredOutput,
    StructuredOutputCapability, StructuredOutputSource,
};
use agent_adaptor_core::result::DecodeError;
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::{
    Agent, Error, Event, FailureReason, Policy, RunAs, RunCause, RunOptions, Runner, run_as,
};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

/// The answer every test asks for.
#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct Answer {
    /// The answer.
    answer: String,
    /// How sure the model is, 0 to 10.
    #[schemars(range(min = 0, max = 10))]
    confidence: u8,
}

const SCHEMA: &str = r#"{"type":"object","properties":{"answer":{"type":"string"},"confidence":{"type":"integer","minimum":0,"maximum":10}},"required":["answer","confidence"],"additionalProperties":false}"#;

fn native() -> StructuredOutputCapability {
    StructuredOutputCapability {
        json_schema_native: true,
        works_with_run: true,
        works_with_streaming: true,
        ..Default::default()
    }
}

fn prompt_only() -> StructuredOutputCapability {
    StructuredOutputCapability {
        json_schema_prompt_validate: true,
        works_with_run: true,
        works_with_streaming: true,
        ..Default::default()
    }
}

/// What a native driver reports: `value` as the provider's structured output
/// (the driver itself claims it is valid; core must not trust that).
fn reported(value: Value) -> StructuredOutput {
    StructuredOutput {
        format: "json_schema".into(),
        source: StructuredOutputSource::Native,
        raw_json: value.to_string(),
        value: Some(value),
        valid: true,
        validation_errors: Vec::new(),
        schema_hash: String::new(),
    }
}

fn native_driver(text: &str, value: Value) -> ScriptedDriver {
    ScriptedDriver::text_reply(text)
        .with_structured_output(native())
        .with_response_structured_output(reported(value))
}

fn run_error(e: &Error) -> &agent_adaptor_core::RunError {
    e.as_run_error()
        .unwrap_or_else(|| panic!("not a run error: {e:?}"))
}

// ---------------------------------------------------------------- native

#[tokio::test]
async fn native_valid_output_is_revalidated_and_decoded() {
    let driver = native_driver("Done.", json!({"answer": "42", "confidence": 9}));
    let agent = Agent::new(driver.clone());
    let opts = RunOptions::new()
        .with_schema_json(SCHEMA)
        .schema_name("answer")
        .schema_description("The answer and how sure");
    let result = agent.run_with("What is it?", opts).await.unwrap();

    // The driver got the schema for its native mode, the prompt untouched.
    let requests = driver.recorded_requests();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(req.prompt, "What is it?");
    assert_eq!(
        req.structured_output_source,
        Some(StructuredOutputSource::Native)
    );
    let schema = req.native_output_schema().expect("a native schema");
    assert_eq!(schema.format, "json_schema");
    assert_eq!(schema.name, "answer");
    assert_eq!(schema.description, "The answer and how sure");
    assert_eq!(schema.on_invalid, OnInvalid::FailRun);
    let sent: Value = serde_json::from_str(&schema.schema_json).unwrap();
    assert_eq!(sent, serde_json::from_str::<Value>(SCHEMA).unwrap());
    assert!(req.streaming, "native works with the streaming transport");

    let so = result.structured_output().unwrap();
    assert_eq!(so.source, StructuredOutputSource::Native);
    assert!(so.valid, "{so:?}");
    assert!(so.validation_errors.is_empty());
    assert_eq!(so.value, Some(json!({"answer": "42", "confidence": 9})));
    assert!(so.schema_hash.starts_with("sha256:"), "{}", so.schema_hash);
    assert_eq!(so.schema_hash.len(), "sha256:".len() + 64);
    let answer: Answer = result.decode().unwrap();
    assert_eq!(
        answer,
        Answer {
            answer: "42".into(),
            confidence: 9
        }
    );
    // The text layer stays what the provider said.
    assert_eq!(result.text, "Done.");
}

#[tokio::test]
async fn native_invalid_output_fails_the_run_with_the_errors_and_the_result() {
    // The driver claims "valid", but confidence is out of range and a
    // property is extra: core's own validation decides.
    let driver = native_driver(
        "Done.",
        json!({"answer": "42", "confidence": 11, "extra": true}),
    );
    let agent = Agent::new(driver);
    let mut stream = agent.stream_with("What?", RunOptions::new().with_schema_json(SCHEMA));
    let mut finished = None;
    while let Some(ev) = stream.next().await {
        if let Event::RunFinished(f) = ev {
            finished = Some(f);
        }
    }
    let err = stream.result().await.unwrap_err();
    let re = run_error(&err);
    assert_eq!(re.reason, FailureReason::PolicyViolation);
    assert!(
        re.message.contains("does not match the schema"),
        "{}",
        re.message
    );

    let details = re.details.as_ref().unwrap();
    let errors: Vec<String> = serde_json::from_value(details["validation_errors"].clone()).unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors.iter().any(|e| e.starts_with("/confidence: ")),
        "{errors:?}"
    );
    assert!(errors.iter().any(|e| e.contains("extra")), "{errors:?}");
    assert_eq!(details["source"], "native");
    match &re.cause {
        Some(RunCause::InvalidStructuredOutput(e)) => assert_eq!(e, &errors),
        other => panic!("cause {other:?}"),
    }

    // Nothing is lost: the partial result carries the output and the errors.
    let partial = re.result.as_ref().unwrap();
    assert_eq!(partial.text, "Done.");
    let so = partial.structured_output().unwrap();
    assert!(!so.valid);
    assert_eq!(so.validation_errors, errors);
    assert_eq!(
        so.value,
        Some(json!({"answer": "42", "confidence": 11, "extra": true}))
    );

    let finished = finished.expect("RunFinished");
    assert!(finished.failed);
    assert_eq!(finished.reason, Some(FailureReason::PolicyViolation));
}

#[tokio::test]
async fn native_invalid_output_under_return_invalid_succeeds_with_the_errors() {
    let driver = native_driver("Done.", json!({"answer": 42}));
    let agent = Agent::new(driver.clone());
    let opts = RunOptions::new()
        .with_schema_json(SCHEMA)
        .schema_return_invalid();
    let result = agent.run_with("What?", opts).await.unwrap();
    assert_eq!(
        driver.recorded_requests()[0]
            .output_schema
            .as_ref()
            .unwrap()
            .on_invalid,
        OnInvalid::ReturnInvalid
    );
    let so = result.structured_output().unwrap();
    assert!(!so.valid);
    assert_eq!(so.value, Some(json!({"answer": 42})));
    assert!(
        so.validation_errors
            .iter()
            .any(|e| e.starts_with("/answer: ")),
        "{:?}",
        so.validation_errors
    );
    assert!(
        so.validation_errors
            .iter()
            .any(|e| e.contains("confidence")),
        "{:?}",
        so.validation_errors
    );
    match result.decode::<Answer>() {
        Err(DecodeError::Invalid(errors)) => assert_eq!(errors, so.validation_errors),
        other => panic!("decode gave {other:?}"),
    }
}

#[tokio::test]
async fn native_without_a_reported_output_validates_the_final_text() {
    // An HTTP driver's native mode makes the final text the JSON and
    // reports nothing else.
    let driver = ScriptedDriver::text_reply(r#"{"answer":"yes","confidence":3}"#)
        .with_structured_output(native());
    let result = Agent::new(driver)
        .run_with("Q", RunOptions::new().with_schema_json(SCHEMA))
        .await
        .unwrap();
    let so = result.structured_output().unwrap();
    assert!(so.valid, "{so:?}");
    assert_eq!(so.raw_json, r#"{"answer":"yes","confidence":3}"#);
    assert_eq!(result.decode::<Answer>().unwrap().answer, "yes");
}

#[tokio::test]
async fn native_raw_json_without_a_value_is_parsed_by_core() {
    let mut so = reported(json!(null));
    so.value = None;
    so.raw_json = "not json at all".into();
    let driver = ScriptedDriver::text_reply("not json at all")
        .with_structured_output(native())
        .with_response_structured_output(so);
    let err = Agent::new(driver)
        .run_with("Q", RunOptions::new().with_schema_json(SCHEMA))
        .await
        .unwrap_err();
    let re = run_error(&err);
    assert_eq!(re.reason, FailureReason::PolicyViolation);
    let so = re.result.as_ref().unwrap().structured_output().unwrap();
    assert_eq!(so.value, None);
    assert_eq!(so.raw_json, "not json at all");
    assert!(
        so.validation_errors[0].contains("not exactly one JSON value"),
        "{:?}",
        so.validation_errors
    );
}

// ---------------------------------------------------------------- prompt

#[tokio::test]
async fn prompt_validation_appends_the_instruction_and_decodes_the_text() {
    let driver = ScriptedDriver::text_reply("  {\"answer\": \"blue\", \"confidence\": 7}\n")
        .with_structured_output(prompt_only());
    let agent = Agent::new(driver.clone());
    let opts = RunOptions::new()
        .with_schema_json(SCHEMA)
        .schema_name("colour")
        .schema_description("The sky's colour");
    let result = agent.run_with("Which colour?", opts).await.unwrap();

    let req = &driver.recorded_requests()[0];
    assert_eq!(
        req.structured_output_source,
        Some(StructuredOutputSource::PromptValidate)
    );
    assert!(
        req.native_output_schema().is_none(),
        "a prompt-validated schema must not be passed natively"
    );
    assert!(req.output_schema.is_some());
    let (original, instruction) = req.prompt.split_once("\n\n---\n").unwrap();
    assert_eq!(original, "Which colour?");
    assert!(
        instruction.contains("exactly one JSON value"),
        "{instruction}"
    );
    assert!(instruction.contains("no code fences"), "{instruction}");
    assert!(instruction.contains("Schema name: colour"), "{instruction}");
    assert!(
        instruction.contains("What the JSON describes: The sky's colour"),
        "{instruction}"
    );
    let schema_text = instruction.rsplit_once("JSON Schema:\n").unwrap().1;
    assert_eq!(
        serde_json::from_str::<Value>(schema_text).unwrap(),
        serde_json::from_str::<Value>(SCHEMA).unwrap()
    );

    let so = result.structured_output().unwrap();
    assert_eq!(so.source, StructuredOutputSource::PromptValidate);
    assert!(so.valid, "{so:?}");
    assert_eq!(
        result.decode::<Answer>().unwrap(),
        Answer {
            answer: "blue".into(),
            confidence: 7
        }
    );
}

#[tokio::test]
async fn prompt_validation_does_not_strip_code_fences_or_extra_text() {
    let cases = [
        (
            "fenced",
            "```json\n{\"answer\": \"blue\", \"confidence\": 7}\n```",
        ),
        (
            "text after",
            "{\"answer\": \"blue\", \"confidence\": 7} Hope this helps!",
        ),
        (
            "text before",
            "Here it is: {\"answer\": \"blue\", \"confidence\": 7}",
        ),
        (
            "two values",
            "{\"answer\": \"blue\", \"confidence\": 7} {\"answer\": \"red\", \"confidence\": 1}",
        ),
        ("blank", " \n "),
    ];
    for (name, text) in cases {
        let driver = ScriptedDriver::text_reply(text).with_structured_output(prompt_only());
        let err = Agent::new(driver)
            .run_with("Q", RunOptions::new().with_schema_json(SCHEMA))
            .await
            .unwrap_err();
        let re = run_error(&err);
        assert_eq!(re.reason, FailureReason::PolicyViolation, "{name}");
        let so = re.result.as_ref().unwrap().structured_output().unwrap();
        assert!(!so.valid, "{name}");
        assert_eq!(so.value, None, "{name}");
        assert_eq!(so.raw_json, text, "{name}");
        assert_eq!(so.validation_errors.len(), 1, "{name}");
        assert!(
            so.validation_errors[0].starts_with("the final text is"),
            "{name}: {:?}",
            so.validation_errors
        );
    }
}

#[tokio::test]
async fn prompt_validation_ignores_what_a_driver_reports_natively() {
    // Only the final text counts in prompt mode.
    let driver = ScriptedDriver::text_reply("nope")
        .with_structured_output(prompt_only())
        .with_response_structured_output(reported(json!({"answer": "x", "confidence": 1})));
    let result = Agent::new(driver)
        .run_with(
            "Q",
            RunOptions::new()
                .with_schema_json(SCHEMA)
                .schema_return_invalid(),
        )
        .await
        .unwrap();
    let so = result.structured_output().unwrap();
    assert_eq!(so.source, StructuredOutputSource::PromptValidate);
    assert!(!so.valid);
    assert_eq!(so.raw_json, "nope");
}

// ---------------------------------------------------------------- selection

/// A driver that asks humans (declares `ask`).
fn asking(descriptor_so: StructuredOutputCapability) -> ScriptedDriver {
    let mut d = Descriptor::new("asker", "Asks humans");
    d.run_policy.permission = HumanDecisionSupport {
        ask: true,
        ..Default::default()
    };
    d.structured_output = descriptor_so;
    ScriptedDriver::text_reply(r#"{"answer":"a","confidence":1}"#).with_descriptor(d)
}

#[tokio::test]
async fn selection_follows_the_declarations() {
    struct Case {
        name: &'static str,
        driver: ScriptedDriver,
        source: StructuredOutputSource,
        streaming: bool,
    }
    let batch_only = StructuredOutputCapability {
        json_schema_native: true,
        works_with_run: true,
        ..Default::default()
    };
    let both = StructuredOutputCapability {
        json_schema_native: true,
        json_schema_prompt_validate: true,
        works_with_run: true,
        works_with_streaming: true,
        works_with_hitl: false,
        ..Default::default()
    };
    let native_hitl = StructuredOutputCapability {
        works_with_hitl: true,
        ..both.clone()
    };
    let text = r#"{"answer":"a","confidence":1}"#;
    let cases = [
        Case {
            name: "native on the streaming transport",
            driver: ScriptedDriver::text_reply(text).with_structured_output(native()),
            source: StructuredOutputSource::Native,
            streaming: true,
        },
        Case {
            name: "native only in batch: core picks the batch transport",
            driver: ScriptedDriver::text_reply(text).with_structured_output(batch_only.clone()),
            source: StructuredOutputSource::Native,
            streaming: false,
        },
        Case {
            name: "native on a driver without a rich transport",
            driver: ScriptedDriver::text_reply(text)
                .with_capability(None)
                .with_structured_output(native()),
            source: StructuredOutputSource::Native,
            streaming: false,
        },
        Case {
            name: "native first when both are declared",
            driver: ScriptedDriver::text_reply(text).with_structured_output(both.clone()),
            source: StructuredOutputSource::Native,
            streaming: true,
        },
        Case {
            name: "a driver that asks humans, native not with HITL: prompt",
            driver: asking(both.clone()),
            source: StructuredOutputSource::PromptValidate,
            streaming: true,
        },
        Case {
            name: "a driver that asks humans, native with HITL",
            driver: asking(native_hitl),
            source: StructuredOutputSource::Native,
            streaming: true,
        },
        Case {
            name: "prompt only",
            driver: ScriptedDriver::text_reply(text).with_structured_output(prompt_only()),
            source: StructuredOutputSource::PromptValidate,
            streaming: true,
        },
    ];
    for case in cases {
        let result = Agent::new(case.driver.clone())
            .run_with("Q", RunOptions::new().with_schema_json(SCHEMA))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let req = &case.driver.recorded_requests()[0];
        assert_eq!(
            req.structured_output_source,
            Some(case.source),
            "{}",
            case.name
        );
        assert_eq!(req.streaming, case.streaming, "{}", case.name);
        assert_eq!(
            req.native_output_schema().is_some(),
            case.source == StructuredOutputSource::Native,
            "{}",
            case.name
        );
        assert_eq!(
            result.structured_output().unwrap().source,
            case.source,
            "{}",
            case.name
        );
    }
}

#[tokio::test]
async fn a_policy_that_never_asks_keeps_the_native_mode() {
    // The driver can ask, but native output does not work with HITL: with
    // permission auto-approved the run asks nobody, so native is usable.
    let mut d = Descriptor::new("asker", "Asks humans");
    d.run_policy.permission = HumanDecisionSupport {
        ask: true,
        auto_approve: true,
        ..Default::default()
    };
    d.structured_output = StructuredOutputCapability {
        json_schema_native: true,
        json_schema_prompt_validate: true,
        works_with_run: true,
        works_with_streaming: true,
        ..Default::default()
    };
    let text = r#"{"answer":"a","confidence":1}"#;
    for (mode, source) in [
        (ApprovalMode::AutoApprove, StructuredOutputSource::Native),
        (ApprovalMode::Ask, StructuredOutputSource::PromptValidate),
    ] {
        let driver = ScriptedDriver::text_reply(text).with_descriptor(d.clone());
        let opts = RunOptions::new()
            .with_schema_json(SCHEMA)
            .policy(Policy::default().permission(mode));
        Agent::new(driver.clone())
            .run_with("Q", opts)
            .await
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert_eq!(
            driver.recorded_requests()[0].structured_output_source,
            Some(source),
            "{mode:?}"
        );
    }
}

#[tokio::test]
async fn unsupported_structured_output_is_refused_before_launch() {
    let native_not_with_hitl = StructuredOutputCapability {
        json_schema_native: true,
        works_with_run: true,
        works_with_streaming: true,
        ..Default::default()
    };
    let cases = [
        (
            "nothing declared",
            ScriptedDriver::text_reply("{}"),
            "json_schema_native is not declared",
        ),
        (
            "native not with HITL, no prompt validation",
            asking(native_not_with_hitl),
            "works_with_hitl",
        ),
        (
            "native with no usable transport",
            ScriptedDriver::text_reply("{}")
                .with_structured_output(StructuredOutputCapability {
                    json_schema_native: true,
                    works_with_streaming: true,
                    ..Default::default()
                })
                .with_capability(None),
            "no transport",
        ),
    ];
    for (name, driver, why) in cases {
        let driver_type = driver_type(&driver);
        let agent = Agent::new(driver.clone());
        let mut stream = agent.stream_with("Q", RunOptions::new().with_schema_json(SCHEMA));
        assert!(stream.next().await.is_none(), "{name}: no events at all");
        match stream.result().await {
            Err(Error::StructuredOutputUnsupported(e)) => {
                assert_eq!(e.driver, driver_type, "{name}");
                assert!(e.reason.contains(why), "{name}: {}", e.reason);
                assert!(
                    e.reason
                        .contains("json_schema_prompt_validate is not declared"),
                    "{name}: {}",
                    e.reason
                );
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(
            driver.recorded_requests().is_empty(),
            "{name}: the driver was called"
        );
    }
}

fn driver_type(d: &ScriptedDriver) -> String {
    use agent_adaptor_core::driver::Driver;
    d.descriptor().driver_type
}

// ---------------------------------------------------------------- schemas

#[tokio::test]
async fn malformed_schemas_are_refused_before_launch() {
    let cases: [(&str, &[u8], &str, &str); 12] = [
        ("empty", b"", "schema", "empty"),
        ("blank", b"  \n\t", "schema", "empty"),
        (
            "not JSON",
            b"{type: object}",
            "schema",
            "not exactly one JSON value",
        ),
        (
            "two values",
            b"{\"type\":\"object\"} {}",
            "schema",
            "not exactly one JSON value",
        ),
        (
            "an array",
            b"[]",
            "schema",
            "must be a JSON object, not an array",
        ),
        (
            "a boolean",
            b"true",
            "schema",
            "must be a JSON object, not a boolean",
        ),
        ("the empty object", b"{}", "schema", "accepts anything"),
        ("not UTF-8", b"{\"type\":\"\xff\"}", "schema", "not UTF-8"),
        (
            "another draft",
            br#"{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}"#,
            "schema",
            "not Draft 2020-12",
        ),
        (
            "an unknown type",
            br#"{"type":"objekt"}"#,
            "schema",
            "does not compile as Draft 2020-12",
        ),
        (
            "a remote reference",
            br#"{"$ref":"https://example.invalid/schema.json"}"#,
            "schema",
            "does not compile",
        ),
        (
            "a bad minimum",
            br#"{"type":"integer","minimum":"zero"}"#,
            "schema",
            "does not compile",
        ),
    ];
    for (name, bytes, field, why) in cases {
        // A driver that supports structured output: only the schema is wrong.
        let driver = ScriptedDriver::text_reply("{}").with_structured_output(prompt_only());
        let agent = Agent::new(driver.clone());
        let mut stream = agent.stream_with("Q", RunOptions::new().with_schema_json(bytes));
        assert!(stream.next().await.is_none(), "{name}: no events");
        match stream.result().await {
            Err(Error::InvalidOutputSchema(e)) => {
                assert_eq!(e.field, field, "{name}");
                assert!(e.reason.contains(why), "{name}: {}", e.reason);
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(driver.recorded_requests().is_empty(), "{name}");
    }
}

#[tokio::test]
async fn the_schema_is_checked_before_the_driver_declarations() {
    // Even a driver without structured output reports the bad schema first.
    let driver = ScriptedDriver::text_reply("{}");
    let err = Agent::new(driver.clone())
        .run_with("Q", RunOptions::new().with_schema_json("[1]"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidOutputSchema(_)), "{err:?}");
    assert!(driver.recorded_requests().is_empty());
}

#[tokio::test]
async fn schema_options_are_validated() {
    let cases = [
        (
            "a name with a space",
            RunOptions::new()
                .with_schema_json(SCHEMA)
                .schema_name("my answer"),
            "schema_name",
        ),
        (
            "an empty name",
            RunOptions::new().with_schema_json(SCHEMA).schema_name(""),
            "schema_name",
        ),
        (
            "a long name",
            RunOptions::new()
                .with_schema_json(SCHEMA)
                .schema_name("n".repeat(65)),
            "schema_name",
        ),
        (
            "a name without a schema",
            RunOptions::new().schema_name("answer"),
            "schema_name",
        ),
        (
            "a description without a schema",
            RunOptions::new().schema_description("d"),
            "schema_description",
        ),
        (
            "return_invalid without a schema",
            RunOptions::new().schema_return_invalid(),
            "schema_return_invalid",
        ),
    ];
    for (name, opts, field) in cases {
        let driver = ScriptedDriver::text_reply("{}").with_structured_output(prompt_only());
        let err = Agent::new(driver.clone())
            .run_with("Q", opts)
            .await
            .unwrap_err();
        match err {
            Error::InvalidOutputSchema(e) => assert_eq!(e.field, field, "{name}: {e}"),
            other => panic!("{name}: {other:?}"),
        }
        assert!(driver.recorded_requests().is_empty(), "{name}");
    }
}

#[tokio::test]
async fn the_schema_is_normalized_and_hashed_by_content() {
    let a = r#"{"type":"object","required":["x"],"properties":{"x":{"type":"string"}}}"#;
    let b = "{\n  \"properties\": {\"x\": {\"type\": \"string\"}},\n  \"type\": \"object\",\n  \"required\": [\"x\"]\n}\n";
    let mut hashes = Vec::new();
    let mut sent = Vec::new();
    for schema in [a, b] {
        let driver = ScriptedDriver::text_reply(r#"{"x":"y"}"#).with_structured_output(native());
        let result = Agent::new(driver.clone())
            .run_with("Q", RunOptions::new().with_schema_json(schema))
            .await
            .unwrap();
        hashes.push(result.structured_output().unwrap().schema_hash.clone());
        sent.push(
            driver.recorded_requests()[0]
                .output_schema
                .clone()
                .unwrap()
                .schema_json,
        );
    }
    assert_eq!(hashes[0], hashes[1]);
    assert_eq!(sent[0], sent[1]);
    assert_eq!(
        sent[0],
        r#"{"properties":{"x":{"type":"string"}},"required":["x"],"type":"object"}"#
    );
}

#[tokio::test]
async fn the_schema_bytes_are_copied() {
    let mut bytes = SCHEMA.as_bytes().to_vec();
    let opts = RunOptions::new().with_schema_json(&bytes);
    bytes.clear();
    bytes.extend_from_slice(b"not a schema");
    let driver = native_driver("ok", json!({"answer": "a", "confidence": 0}));
    let result = Agent::new(driver).run_with("Q", opts).await.unwrap();
    assert!(result.structured_output().unwrap().valid);
}

// ---------------------------------------------------------------- run_as

#[tokio::test]
async fn run_as_round_trips_a_schemars_struct() {
    let driver = ScriptedDriver::text_reply(r#"{"answer":"forty-two","confidence":10}"#)
        .with_structured_output(prompt_only());
    let agent = Agent::new(driver.clone());
    let (answer, result): (Answer, _) = run_as(&agent, "Answer me", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(
        answer,
        Answer {
            answer: "forty-two".into(),
            confidence: 10
        }
    );
    assert!(result.structured_output().unwrap().valid);

    // The schema is schemars' Draft 2020-12 schema of `Answer`.
    let req = &driver.recorded_requests()[0];
    let schema = req.output_schema.as_ref().unwrap();
    assert_eq!(schema.name, "Answer");
    let sent: Value = serde_json::from_str(&schema.schema_json).unwrap();
    assert_eq!(
        sent["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(sent["type"], "object");
    assert_eq!(sent["required"], json!(["answer", "confidence"]));
    assert_eq!(sent["properties"]["confidence"]["maximum"], 10);

    // The method form, through a trait object.
    let runner: &dyn Runner = &agent;
    let (again, _) = runner
        .run_as::<Answer>("Answer me", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(again, answer);
}

#[tokio::test]
async fn run_as_futures_outlive_the_runner_borrow() {
    // The future owns what it needs: the agent may go before it is awaited.
    let fut = {
        let agent = Agent::new(
            ScriptedDriver::text_reply(r#"{"answer":"a","confidence":1}"#)
                .with_structured_output(prompt_only()),
        );
        let prompt = String::from("Q");
        let by_method = agent.run_as::<Answer>(&prompt, RunOptions::new());
        let by_fn = run_as::<Answer, _>(&agent, &prompt, RunOptions::new());
        async move { (by_method.await, by_fn.await) }
    };
    let (a, b) = tokio::spawn(fut).await.unwrap();
    assert_eq!(a.unwrap().0, b.unwrap().0);
}

#[tokio::test]
async fn run_as_reports_an_out_of_schema_answer() {
    // confidence 11 breaks the derived schema's maximum.
    let text = r#"{"answer":"x","confidence":11}"#;
    let driver = ScriptedDriver::text_reply(text).with_structured_output(prompt_only());
    let agent = Agent::new(driver);
    let err = run_as::<Answer, _>(&agent, "Q", RunOptions::new())
        .await
        .unwrap_err();
    let re = run_error(&err);
    assert_eq!(re.reason, FailureReason::PolicyViolation);
    assert!(re.message.contains("/confidence"), "{}", re.message);

    // Under return_invalid the run succeeds and decoding reports the errors,
    // with the result kept.
    let err = run_as::<Answer, _>(&agent, "Q", RunOptions::new().schema_return_invalid())
        .await
        .unwrap_err();
    match err {
        Error::Decode { error, result } => {
            assert!(
                matches!(error, DecodeError::Invalid(ref e) if e[0].starts_with("/confidence")),
                "{error:?}"
            );
            assert_eq!(result.text, text);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn run_as_keeps_an_explicit_schema() {
    // The caller's schema wins over the type's (here: a looser one).
    let loose = r#"{"type":"object","required":["answer"]}"#;
    let driver = ScriptedDriver::text_reply(r#"{"answer":"x","confidence":300}"#)
        .with_structured_output(prompt_only());
    let err = run_as::<Answer, _>(
        &Agent::new(driver.clone()),
        "Q",
        RunOptions::new().with_schema_json(loose),
    )
    .await
    .unwrap_err();
    // The loose schema validated; u8 cannot hold 300, so decoding fails.
    match err {
        Error::Decode {
            error: DecodeError::Json(_),
            result,
        } => assert!(result.structured_output().unwrap().valid),
        other => panic!("{other:?}"),
    }
    let sent = driver.recorded_requests()[0].output_schema.clone().unwrap();
    assert_eq!(
        sent.schema_json,
        r#"{"required":["answer"],"type":"object"}"#
    );
    assert_eq!(sent.name, "");
}

#[tokio::test]
async fn decode_without_a_schema_parses_the_trimmed_text() {
    let driver = ScriptedDriver::text_reply("\n {\"answer\":\"a\",\"confidence\":2} \n");
    let result = Agent::new(driver).run("Q").await.unwrap();
    assert!(result.structured_output().is_none());
    assert_eq!(result.decode::<Answer>().unwrap().confidence, 2);
}

#[tokio::test]
async fn a_failed_run_keeps_its_own_reason() {
    // The driver fails: the schema plays no part in the outcome.
    let driver = ScriptedDriver::new(
        Vec::new(),
        agent_adaptor_core::scripted::Ending::Fail("boom".into()),
    )
    .with_structured_output(prompt_only())
    .with_capability(Some(StreamCapability::FULL));
    let err = Agent::new(driver)
        .run_with("Q", RunOptions::new().with_schema_json(SCHEMA))
        .await
        .unwrap_err();
    assert_eq!(run_error(&err).reason, FailureReason::Infrastructure);
}
