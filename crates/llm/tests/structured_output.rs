//! Structured output through core and the LLM agent driver, for every vendor
//! protocol, against the mock server: where the protocol has a response
//! format (Chat Completions, Responses, Gemini) the schema goes out natively
//! and the prompt is untouched; Anthropic Messages has none, so core appends
//! the instruction and no response format is sent. Either way core
//! validates the answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_adaptor_core::driver::{Driver, StructuredOutputSource};
use agent_adaptor_core::{Agent, FailureReason, RunOptions, Runner};
use agent_adaptor_llm::agent::LlmDriver;
use agent_adaptor_llm::{
    AnthropicMessages, GeminiGenerateContent, OpenAiChat, OpenAiResponses, Provider,
};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Reply};
use serde::Deserialize;
use serde_json::{Value, json};

const SCHEMA: &str = r#"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}"#;

#[derive(Debug, Deserialize, PartialEq)]
struct City {
    city: String,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Vendor {
    Chat,
    Responses,
    Anthropic,
    Gemini,
}

fn llm(vendor: Vendor, server: &MockServer) -> LlmDriver {
    let root = server.base_url();
    let provider: Provider = match vendor {
        Vendor::Chat => common::provider(OpenAiChat::new(), &format!("{root}/v1")),
        Vendor::Responses => common::provider(OpenAiResponses::new(), &format!("{root}/v1")),
        Vendor::Anthropic => common::provider(AnthropicMessages::new(), &format!("{root}/v1")),
        Vendor::Gemini => common::provider(GeminiGenerateContent::new(), &format!("{root}/v1beta")),
    };
    LlmDriver::new(provider, "mock-model")
}

/// The response format the request carried, where the protocol puts it.
fn response_format(vendor: Vendor, body: &Value) -> Option<Value> {
    let v = match vendor {
        Vendor::Chat => body.get("response_format"),
        Vendor::Responses => body.pointer("/text/format"),
        Vendor::Gemini => body
            .pointer("/generationConfig/responseJsonSchema")
            .or_else(|| body.pointer("/generationConfig/responseSchema")),
        Vendor::Anthropic => body
            .get("response_format")
            .or_else(|| body.get("output_format")),
    };
    v.cloned()
}

fn model_request(server: &MockServer) -> RecordedRequest {
    server
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("a model request")
}

#[tokio::test]
async fn every_vendor_decodes_a_valid_answer_natively_or_by_prompt() {
    let vendors = [
        Vendor::Chat,
        Vendor::Responses,
        Vendor::Anthropic,
        Vendor::Gemini,
    ];
    for vendor in vendors {
        let server = common::server(vec![Reply::Json(json!({"city": "Lyon"}))]).await;
        let driver = llm(vendor, &server);
        let native = vendor != Vendor::Anthropic;
        let declared = driver.descriptor().structured_output;
        assert_eq!(declared.json_schema_native, native, "{vendor:?}");
        assert!(declared.json_schema_prompt_validate, "{vendor:?}");

        let result = Agent::new(driver)
            .run_with(
                common::PROMPT,
                RunOptions::new()
                    .with_schema_json(SCHEMA)
                    .schema_name("city"),
            )
            .await
            .unwrap_or_else(|e| panic!("{vendor:?}: {e}"));
        assert_eq!(
            result.decode::<City>().unwrap(),
            City {
                city: "Lyon".into()
            },
            "{vendor:?}"
        );
        let so = result.structured_output().unwrap();
        assert_eq!(
            so.source,
            if native {
                StructuredOutputSource::Native
            } else {
                StructuredOutputSource::PromptValidate
            },
            "{vendor:?}"
        );

        let sent = model_request(&server);
        let body = sent.json().unwrap();
        let first_user = sent.conversation().unwrap().first_user_text;
        let format = response_format(vendor, &body);
        if native {
            let format = format.unwrap_or_else(|| panic!("{vendor:?}: no response format"));
            assert!(
                format.to_string().contains(r#""required":["city"]"#),
                "{vendor:?}: {format}"
            );
            assert_eq!(first_user, common::PROMPT, "{vendor:?}: prompt untouched");
        } else {
            assert_eq!(format, None, "{vendor:?}");
            assert!(
                first_user.starts_with(common::PROMPT)
                    && first_user.contains("exactly one JSON value")
                    && first_user.contains(r#""required":["city"]"#),
                "{vendor:?}: {first_user}"
            );
        }
    }
}

#[tokio::test]
async fn an_answer_that_is_not_json_fails_the_run_for_both_mechanisms() {
    for vendor in [Vendor::Chat, Vendor::Anthropic] {
        let server = common::server(vec![Reply::Text("Lyon, I think.".into())]).await;
        let err = Agent::new(llm(vendor, &server))
            .run_with(common::PROMPT, RunOptions::new().with_schema_json(SCHEMA))
            .await
            .unwrap_err();
        let re = err.as_run_error().unwrap();
        assert_eq!(re.reason, FailureReason::PolicyViolation, "{vendor:?}");
        let partial = re.result.as_ref().unwrap();
        assert_eq!(partial.text, "Lyon, I think.", "{vendor:?}");
        assert!(!partial.structured_output().unwrap().valid, "{vendor:?}");
    }
}
