//! `--push-allow-host` and the push secret: A2A push notifications' settings.

use agent_adaptor_bridges::a2a::push::PushSettings;

use crate::args::ServeArgs;
use crate::error::CliError;

/// The environment variable holding the push secret (when no
/// `--push-secret-file`).
pub const PUSH_SECRET_ENV: &str = "AGENT_ADAPTOR_PUSH_SECRET";

/// The push settings `args` ask for: `None` without `--push-allow-host`
/// (push off); a usage error without a secret, with a short one, or with an
/// entry that is not `HOST[:PORT]`. Configs are kept in the A2A server's
/// task store.
pub fn settings(args: &ServeArgs) -> Result<Option<PushSettings>, CliError> {
    if args.push_allow_hosts.is_empty() {
        return Ok(None);
    }
    let secret = match &args.push_secret_file {
        Some(path) => std::fs::read(path)
            .map_err(|e| CliError::usage(format!("--push-secret-file {}: {e}", path.display())))?,
        None => std::env::var(PUSH_SECRET_ENV)
            .ok()
            .filter(|s| !s.trim().is_empty())
            .map(String::into_bytes)
            .ok_or_else(|| {
                CliError::usage(format!(
                    "--push-allow-host needs a secret to sign deliveries: \
                     --push-secret-file PATH or {PUSH_SECRET_ENV}"
                ))
            })?,
    };
    let mut settings = PushSettings::new(secret).map_err(|e| CliError::usage(e.to_string()))?;
    for entry in &args.push_allow_hosts {
        settings = settings
            .allow_host(entry)
            .map_err(|e| CliError::usage(e.to_string()))?;
    }
    Ok(Some(settings))
}
