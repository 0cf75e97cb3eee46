//! `agent-adaptor mock-model`: the testkit's scripted mock model server,
//! for trying real CLIs offline (it speaks OpenAI Responses and Chat
//! Completions, Anthropic Messages and Gemini).

use agent_adaptor_testkit::mock::{MockServer, Script};

use crate::args::MockModelArgs;
use crate::error::CliError;
use crate::playground;

/// Run `agent-adaptor mock-model` until Ctrl-C / SIGTERM.
pub async fn mock_model(args: MockModelArgs) -> Result<(), CliError> {
    let script: Script = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                CliError::usage(format!("cannot read script file {}: {e}", path.display()))
            })?;
            serde_json::from_str(&text).map_err(|e| {
                CliError::usage(format!(
                    "script file {} is not a valid script: {e}",
                    path.display()
                ))
            })?
        }
        None => playground::script(None),
    };
    let server = MockServer::start_on(args.addr, script)
        .await
        .map_err(|e| CliError::failure(format!("cannot listen on {}: {e}", args.addr)))?;
    let url = server.base_url();
    println!("mock model server: {url}");
    println!("  Claude Code:  ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY=mock claude -p 'hello'");
    println!("  Gemini CLI:   GOOGLE_GEMINI_BASE_URL={url} GEMINI_API_KEY=mock gemini -p 'hello'");
    println!(
        "  CodeBuddy:    CODEBUDDY_BASE_URL={url} CODEBUDDY_API_KEY=mock codebuddy -p 'hello'"
    );
    println!(
        "  Codex:        codex exec -c model_provider=mock -c 'model_providers.mock={{name=\"mock\",base_url=\"{url}/v1\",wire_api=\"responses\"}}' 'hello'"
    );
    println!(
        "  llm driver:   agent-adaptor run --driver llm --provider openai --base-url {url}/v1 hello"
    );
    crate::signals::wait_for_shutdown().await;
    server.shutdown().await;
    Ok(())
}
