//! A driver that edits the run's workspace, for tests through core.

use std::sync::Arc;

use agent_adaptor_core::driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FingerprintError, Request, Response,
    RunContext, SessionCodec, async_trait,
};
use agent_adaptor_core::scripted::ScriptedDriver;

/// Appends the prompt to README.md in the run's workspace, then answers
/// like the scripted driver.
pub struct Editor(pub ScriptedDriver);

#[async_trait]
impl Driver for Editor {
    fn descriptor(&self) -> Descriptor {
        self.0.descriptor()
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        self.0.validate_config()
    }
    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        self.0.session_codec()
    }
    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        self.0.session_config_fingerprint()
    }
    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let dir = req
            .workspace
            .clone()
            .expect("core passes the lease's directory");
        let readme = dir.join("README.md");
        let mut text = std::fs::read_to_string(&readme).unwrap_or_default();
        text.push_str(&req.prompt);
        text.push('\n');
        std::fs::write(&readme, text).map_err(|e| DriverError::Other(Box::new(e)))?;
        self.0.run(ctx, req, sink).await
    }
}
