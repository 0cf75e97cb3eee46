//! The LLM driver's probes: what it can tell without calling the provider
//! (the endpoint's form, the model, whether credentials are configured),
//! an honestly unavailable quota, and its config schema. No request is
//! made: a probe that asked the provider would not be hermetic.

use agent_adaptor_driver::{
    ConfigField, ConfigSchema, DetectedModel, EnvironmentCheck, EnvironmentReport, FieldKind,
    ModelSource, QuotaReport,
};

use super::LlmDriver;

const TYPE: &str = "llm";

/// [`Driver::check_environment`](agent_adaptor_driver::Driver::check_environment).
pub(super) fn environment(d: &LlmDriver) -> EnvironmentReport {
    let endpoint = d.provider.endpoint();
    let shown = endpoint.display_url();
    let base = endpoint.base_url();
    let mut checks = vec![
        if base.starts_with("http://") || base.starts_with("https://") {
            EnvironmentCheck::pass("endpoint", format!("base URL {shown}"))
        } else {
            EnvironmentCheck::fail("endpoint", format!("base URL {shown:?} is not http(s)"))
        },
        if d.config.model.trim().is_empty() {
            EnvironmentCheck::fail("model", "no model configured")
        } else {
            EnvironmentCheck::pass("model", format!("model {}", d.config.model))
        },
    ];
    checks.push(if endpoint.has_auth() {
        EnvironmentCheck::pass("auth", "credentials configured")
    } else {
        EnvironmentCheck::warn("auth", "no credentials configured")
            .with_hint("a hosted provider needs an API key; a local server may not")
    });
    EnvironmentReport::from_checks(TYPE, checks)
}

/// [`Driver::detect_model`](agent_adaptor_driver::Driver::detect_model).
pub(super) fn detect_model(d: &LlmDriver) -> Option<DetectedModel> {
    (!d.config.model.trim().is_empty()).then(|| DetectedModel {
        model: d.config.model.clone(),
        provider: d.provider.name().to_owned(),
        source: ModelSource::Configured,
    })
}

/// [`Driver::quota`](agent_adaptor_driver::Driver::quota).
pub(super) fn quota() -> QuotaReport {
    QuotaReport::unavailable(
        TYPE,
        "an LLM API's quota is known only to the provider, which a hermetic probe does not ask",
    )
}

/// The driver's configuration: the provider's endpoint and the call
/// settings ([`LlmCallConfig`](crate::LlmCallConfig)).
pub(super) fn config_schema() -> ConfigSchema {
    let field = ConfigField::new;
    ConfigSchema {
        fields: vec![
            field(
                "base_url",
                "Base URL",
                FieldKind::Text,
                "The provider's base URL (http or https)",
            ),
            field(
                "auth",
                "Credentials",
                FieldKind::Text,
                "The API key or auth header (never shown)",
            ),
            field(
                "headers",
                "Headers",
                FieldKind::Map,
                "Fixed HTTP headers of every request",
            ),
            field("model", "Model", FieldKind::Text, "The model id").required(),
            field(
                "temperature",
                "Temperature",
                FieldKind::Number,
                "Sampling temperature",
            ),
            field(
                "max_tokens",
                "Max tokens",
                FieldKind::Number,
                "The output token cap",
            ),
            field(
                "tools",
                "Tools",
                FieldKind::List,
                "Tools the model may call (reported, not run)",
            ),
            field(
                "parallel_tool_calls",
                "Parallel tool calls",
                FieldKind::Toggle,
                "Allow several tool calls in one answer",
            ),
            field(
                "reasoning",
                "Reasoning effort",
                FieldKind::Select,
                "Reasoning effort",
            )
            .options(["low", "medium", "high"]),
            field(
                "response_format",
                "Response format",
                FieldKind::Textarea,
                "Structured output (set per run from the output schema)",
            ),
            field(
                "extra_headers",
                "Extra headers",
                FieldKind::Map,
                "HTTP headers of each call",
            ),
            field(
                "limits",
                "Limits",
                FieldKind::Map,
                "Time and size bounds of a turn",
            ),
        ],
    }
}
