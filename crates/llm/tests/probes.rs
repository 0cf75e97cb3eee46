//! The LLM driver's probes: judged by the conformance suite, and made
//! without a request (the mock server sees none).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_adaptor_conformance::{Options, test_driver};
use agent_adaptor_driver::{CheckStatus, Driver, ModelSource};
use agent_adaptor_llm::agent::LlmDriver;
use agent_adaptor_llm::{OpenAiChat, Provider};
use agent_adaptor_testkit::mock::{MockServer, Script};

const SECRET: &str = "sk-llm-probe-secret";

#[tokio::test]
async fn the_probes_are_judged_and_ask_nothing_of_the_provider() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let provider = Provider::new("local", OpenAiChat::new())
        .base_url(format!("{}/v1", server.base_url()))
        .api_key(SECRET);
    let driver = LlmDriver::new(provider.clone(), "m-1");
    let report = test_driver(
        || driver.clone(),
        Options::new()
            .expected_model("m-1")
            .required_config_fields(["model", "base_url"]),
    )
    .await;
    report.assert_passed();
    for id in ["CAP-02", "CAP-03", "CAP-05", "CAP-07", "CAP-08"] {
        assert!(report.passed(id), "{id}:\n{report}");
    }
    let r = driver.check_environment().unwrap();
    assert_eq!((r.status, r.healthy), (CheckStatus::Pass, true), "{r:?}");
    assert!(!format!("{r:?}").contains(SECRET));
    let m = driver.detect_model().unwrap();
    assert_eq!((m.model.as_str(), m.provider.as_str()), ("m-1", "local"));
    assert_eq!(m.source, ModelSource::Configured);
    assert!(server.requests().is_empty(), "a probe called the provider");

    // No credentials: a warning; a base URL that is not http(s): a failure.
    let bare = LlmDriver::new(Provider::new("local", OpenAiChat::new()), "m-1");
    assert_eq!(bare.check_environment().unwrap().status, CheckStatus::Warn);
    let broken = LlmDriver::new(
        Provider::new("local", OpenAiChat::new()).base_url("ftp://x"),
        "",
    );
    let r = broken.check_environment().unwrap();
    assert_eq!((r.status, r.healthy), (CheckStatus::Fail, false));
    assert_eq!(broken.detect_model(), None);
}
