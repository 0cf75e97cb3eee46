//! The driver of a stream-json CLI (Claude Code, CodeBuddy Code): one
//! implementation, the family's differences as data.

use std::sync::Arc;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FingerprintError, Request, Response,
    RunContext, SessionCodec, StandardSessionCodec, StreamCapability, StructuredOutputCapability,
    async_trait, canonical_session_config_fingerprint,
};

use super::Family;
use super::config::Config;
use super::transport;
use crate::resident::Pool;

/// A configured stream-json CLI driver. Build one with
/// [`claude::driver`](crate::claude::driver) or
/// [`codebuddy::driver`](crate::codebuddy::driver).
///
/// The driver owns a pool of resident processes (see [`Config::resident`]);
/// clones share it. [`Driver::close_processes`] (`Agent::close`) stops them;
/// dropping the last clone stops them too (gracefully when a tokio runtime
/// is at hand, else by killing their process groups).
#[derive(Debug, Clone)]
pub struct StreamJsonDriver {
    family: &'static Family,
    config: Config,
    pool: Pool<()>,
}

impl StreamJsonDriver {
    /// A driver for `family` with `config` (captured; later changes to the
    /// caller's copy do not affect it).
    pub fn new(family: &'static Family, config: Config) -> Self {
        let pool = Pool::new(config.resident_idle_timeout);
        StreamJsonDriver {
            family,
            config,
            pool,
        }
    }

    /// How many resident processes are idle in the pool (none is serving a
    /// run).
    pub fn idle_processes(&self) -> usize {
        self.pool.idle_len()
    }

    /// The captured configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

/// Where the family's `--json-schema` is native ([`Family::native_json_schema`]),
/// it works on every transport: observed with Claude Code 2.1.332 on
/// one-shot stream-json (with and without partial messages) and on the
/// control transport, where the CLI's own `StructuredOutput` tool is never
/// routed to the host as a permission request. Every family can follow a
/// prompt instruction.
fn structured_output_capability(family: &Family) -> StructuredOutputCapability {
    StructuredOutputCapability {
        json_schema_native: family.native_json_schema,
        json_schema_prompt_validate: true,
        works_with_run: true,
        works_with_streaming: true,
        works_with_hitl: true,
        notes: if family.native_json_schema {
            "--json-schema: a StructuredOutput tool, reported as result.structured_output".into()
        } else {
            "prompt instruction, final text validated by core (--json-schema does not show the \
             model the schema)"
                .into()
        },
    }
}

#[async_trait]
impl Driver for StreamJsonDriver {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new(self.family.driver_type, self.family.display_name);
        d.sessions.supports_resume = true;
        d.process.persistent = self.config.resident;
        d.structured_output = structured_output_capability(self.family);
        // Run policy: exactly what the family's table translates (asking
        // a human only with host approvals).
        super::policy::table(self.family, &self.config).declare(&mut d.run_policy);
        d
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        self.config.validate(self.family)
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        Some(StreamCapability {
            native: true,
            token_level: true,
            reasoning: true,
            tool_call_args: true,
            hitl: self.config.host_approvals,
        })
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        Some(Arc::new(StandardSessionCodec::new(self.family.driver_type)))
    }

    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        let domain = format!(
            "{}/configured-driver/v1;session-codec/v1",
            self.family.driver_type
        );
        Some(canonical_session_config_fingerprint(&domain, &self.config))
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        transport::run(self.family, &self.config, &self.pool, ctx, req, sink).await
    }

    async fn close_processes(&self) {
        self.pool.close().await;
    }
}
