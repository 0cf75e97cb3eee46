//! The operator log of `serve`: structured lines on stderr.

use tracing::Level;

use crate::args::LogFormat;

/// The variable that sets the log level.
pub const LOG_ENV: &str = "AGENT_ADAPTOR_LOG";

/// Install the process-wide subscriber (once; a second call is a no-op).
pub fn init(format: LogFormat) {
    let level = std::env::var(LOG_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<Level>().ok())
        .unwrap_or(Level::INFO);
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
