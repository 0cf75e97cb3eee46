//! The ACP agents (Agent Client Protocol on stdio), run offline against the
//! mock: one [`CliRecipe`] each, started with
//! [`CliRecipe::acp_command`] (stdin piped: it carries the protocol).
//!
//! The facts come from running the pinned versions under a network namespace
//! with only loopback (and `strace -e connect`): with these recipes every
//! connection goes to the mock (opencode and CodeBuddy also talk to a
//! loopback server of their own). None needs an `authenticate` call: the environment and files
//! below are the whole login. `docs/carriers.md` ("ACP agents") has the
//! protocol facts (capabilities, permission options, load/resume, errors).

use super::{CliRecipe, DUMMY_API_KEY};

/// A proxy on the discard port: whatever ignores `NO_PROXY` (a background
/// npm install, an update check) fails at once instead of reaching the
/// network; the mock on 127.0.0.1 is reached directly.
const DEAD_PROXY: &[(&str, &str)] = &[
    ("HTTPS_PROXY", "http://127.0.0.1:9"),
    ("HTTP_PROXY", "http://127.0.0.1:9"),
    ("NO_PROXY", "127.0.0.1,localhost"),
];

/// Qwen Code `0.24.4`, `qwen --acp` (a Gemini CLI fork; Chat Completions).
///
/// * `OPENAI_BASE_URL` (with `/v1`), `OPENAI_API_KEY`, `OPENAI_MODEL`, and
///   `~/.qwen/settings.json` selecting the `openai` auth type: requests go to
///   `POST /v1/chat/completions`. `initialize` offers the one auth method
///   `openai`; no `authenticate` call is needed.
/// * Settings: `tools.approvalMode = "default"` (the headless default is
///   `auto`, an LLM classifier that approves "safe" commands without asking);
///   managed auto-memory and auto-dream off (each turn would otherwise add a
///   memory-extraction model request); bundled skills off (otherwise
///   `available_commands_update` carries ~550 KB of skill text in `_meta`);
///   follow-up suggestions off (otherwise a suggestion model request follows
///   every turn); usage statistics and auto-update off.
/// * `QWEN_CODE_SYSTEM_SETTINGS_PATH` / `QWEN_CODE_SYSTEM_DEFAULTS_PATH`
///   point at absent files in the home, so `/etc` is not read.
/// * Run with `node` (the entry is `cli-entry.js`; the package declares Node
///   >= 22, and ran on Node 20 here).
/// * A model HTTP 5xx is retried 7 times with backoff (~70 s) before
///   `session/prompt` fails; there is no setting for it (a 400 fails at once).
pub const QWEN: CliRecipe = CliRecipe {
    name: "qwen",
    bin_var: "QWEN_BIN",
    npm_package: "@qwen-code/qwen-code",
    npm_version: "0.24.4",
    model: "mock-model",
    request_path: "/v1/chat/completions",
    args: &["--acp"],
    env: &[
        ("OPENAI_BASE_URL", "{base_url}/v1"),
        ("OPENAI_API_KEY", DUMMY_API_KEY),
        ("OPENAI_MODEL", "{model}"),
        (
            "QWEN_CODE_SYSTEM_SETTINGS_PATH",
            "{home}/.qwen/system-settings.json",
        ),
        (
            "QWEN_CODE_SYSTEM_DEFAULTS_PATH",
            "{home}/.qwen/system-defaults.json",
        ),
    ],
    dirs: &[".qwen"],
    files: &[(
        ".qwen/settings.json",
        r#"{"security":{"auth":{"selectedType":"openai"}},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true},"tools":{"approvalMode":"default"},"memory":{"enableManagedAutoMemory":false,"enableManagedAutoDream":false},"skills":{"disabledLevels":["bundled"]},"ui":{"enableFollowupSuggestions":false}}"#,
    )],
};

/// GitHub Copilot CLI `1.0.102`, `copilot --acp` (its official offline
/// mode; Chat Completions).
///
/// * `COPILOT_OFFLINE=true` with `COPILOT_PROVIDER_BASE_URL` (with `/v1`),
///   `COPILOT_PROVIDER_API_KEY`, `COPILOT_PROVIDER_TYPE=openai`,
///   `COPILOT_PROVIDER_WIRE_API=completions` and `COPILOT_MODEL`: requests go
///   to `POST /v1/chat/completions`; no GitHub login, no `authenticate`.
///   `COPILOT_AUTO_UPDATE=false`.
/// * State lives in `~/.copilot` (sessions in `session-state/<id>`).
/// * The native binary from `@github/copilot-<platform>` (the package's
///   `npm-loader.js` only finds and spawns it).
pub const COPILOT: CliRecipe = CliRecipe {
    name: "copilot",
    bin_var: "COPILOT_BIN",
    npm_package: "@github/copilot",
    npm_version: "1.0.102",
    model: "mock-model",
    request_path: "/v1/chat/completions",
    args: &["--acp"],
    env: &[
        ("COPILOT_OFFLINE", "true"),
        ("COPILOT_PROVIDER_BASE_URL", "{base_url}/v1"),
        ("COPILOT_PROVIDER_API_KEY", DUMMY_API_KEY),
        ("COPILOT_PROVIDER_TYPE", "openai"),
        ("COPILOT_PROVIDER_WIRE_API", "completions"),
        ("COPILOT_MODEL", "{model}"),
        ("COPILOT_AUTO_UPDATE", "false"),
    ],
    dirs: &[],
    files: &[],
};

/// opencode `1.18.33` (npm `opencode-ai`), `opencode acp` (Chat
/// Completions through `@ai-sdk/openai-compatible`, which the binary
/// bundles).
///
/// * The provider `mock` and the model `mock/{model}` come from
///   `$XDG_CONFIG_HOME/opencode/opencode.json`, which also sets
///   `permission.bash/edit/webfetch = "ask"` (opencode's default is to allow
///   them without asking), hides the built-in `opencode` provider and turns
///   off title generation, sharing and auto-update.
/// * `OPENCODE_DISABLE_MODELS_FETCH`, `OPENCODE_DISABLE_AUTOUPDATE`,
///   `OPENCODE_DISABLE_DEFAULT_PLUGINS`, `OPENCODE_PURE` (no external
///   plugins), `OPENCODE_DISABLE_LSP_DOWNLOAD`, `OPENCODE_DISABLE_SHARE`,
///   `OPENCODE_DISABLE_CLAUDE_CODE` (no reading of `~/.claude`),
///   `OPENCODE_DISABLE_EXTERNAL_SKILLS`.
/// * Even so it starts a background `npm install @opencode-ai/plugin` into
///   its configuration directory (it went through `HTTPS_PROXY`:
///   `CONNECT registry.npmjs.org:443`); the dead proxy makes it fail at once
///   (logged as a warning, the run is unaffected).
/// * `opencode acp` serves its own HTTP API on 127.0.0.1 (port 4096 when
///   free, else another) and talks to it.
/// * A model that cannot be reached is retried for about a minute before
///   `session/prompt` fails.
pub const OPENCODE: CliRecipe = CliRecipe {
    name: "opencode",
    bin_var: "OPENCODE_BIN",
    npm_package: "opencode-ai",
    npm_version: "1.18.33",
    model: "mock-model",
    request_path: "/v1/chat/completions",
    args: &["acp"],
    env: &[
        ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1"),
        ("OPENCODE_PURE", "1"),
        ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
        ("OPENCODE_DISABLE_SHARE", "1"),
        ("OPENCODE_DISABLE_CLAUDE_CODE", "1"),
        ("OPENCODE_DISABLE_EXTERNAL_SKILLS", "1"),
        DEAD_PROXY[0],
        DEAD_PROXY[1],
        DEAD_PROXY[2],
    ],
    dirs: &[".config/opencode"],
    files: &[(
        ".config/opencode/opencode.json",
        r#"{"$schema":"https://opencode.ai/config.json","model":"mock/{model}","small_model":"mock/{model}","autoupdate":false,"share":"disabled","disabled_providers":["opencode"],"permission":{"bash":"ask","edit":"ask","webfetch":"ask"},"agent":{"title":{"disable":true}},"provider":{"mock":{"npm":"@ai-sdk/openai-compatible","name":"Mock","options":{"baseURL":"{base_url}/v1","apiKey":"mock-key"},"models":{"{model}":{"name":"Mock model"}}}}}"#,
    )],
};

/// The Zed adapter for Claude Code, `@zed-industries/claude-agent-acp`
/// `0.23.1` (`dist/index.js`, run with `node`): it drives Claude Code
/// through `@anthropic-ai/claude-agent-sdk` `0.2.83`, which runs the Claude
/// Code CLI it bundles (`cli.js`, Claude Code 2.1.83) unless
/// `CLAUDE_CODE_EXECUTABLE` names another one.
///
/// * The same offline environment as [`CLAUDE`](super::CLAUDE)
///   (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`, `CLAUDE_CONFIG_DIR`, no
///   nonessential traffic): requests go to `POST /v1/messages?beta=true`.
/// * The model is `model` in `CLAUDE_CONFIG_DIR/settings.json` (the adapter
///   picks the session's model from the settings; `ANTHROPIC_MODEL` alone did
///   not change it).
/// * The bundled CLI fetches Claude's plugin blocklist from
///   `raw.githubusercontent.com` even with nonessential traffic off (it went
///   through `HTTPS_PROXY`); the dead proxy makes that fail at once. Setting
///   `CLAUDE_CODE_EXECUTABLE` to the pinned native Claude Code
///   ([`CLAUDE`](super::CLAUDE)'s binary) runs that one instead, which made
///   no connection but to the mock (and, with a model set, sent a one-word
///   probe request before the first turn).
/// * The adapter does not exit when its stdin closes: stop it with a signal.
/// * As root (`IS_SANDBOX` unset) it does not offer the `bypassPermissions`
///   mode.
pub const CLAUDE_ACP: CliRecipe = CliRecipe {
    name: "claude-acp",
    bin_var: "CLAUDE_ACP_BIN",
    npm_package: "@zed-industries/claude-agent-acp",
    npm_version: "0.23.1",
    model: "claude-sonnet-4-5",
    request_path: "/v1/messages",
    args: &[],
    env: &[
        ("ANTHROPIC_BASE_URL", "{base_url}"),
        ("ANTHROPIC_API_KEY", DUMMY_API_KEY),
        ("CLAUDE_CONFIG_DIR", "{home}/.claude"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_ERROR_REPORTING", "1"),
        DEAD_PROXY[0],
        DEAD_PROXY[1],
        DEAD_PROXY[2],
    ],
    dirs: &[".claude"],
    files: &[(".claude/settings.json", r#"{"model":"{model}"}"#)],
};

/// The Zed adapter for Codex, `@zed-industries/codex-acp` `0.16.0`: a native
/// binary (from `@zed-industries/codex-acp-<platform>`) that links the Codex
/// crates itself (it does not run `codex`).
///
/// * The same `-c` provider overrides as [`CODEX`](super::CODEX) (a `mock`
///   provider on `{base_url}/v1`, `wire_api = "responses"`, no retries,
///   plugins/analytics/update check off): requests go to `POST /v1/responses`.
/// * The model is `gpt-5.4-mini`, a slug the linked Codex knows: with an
///   unknown one (`mock-model`) Codex's "Model metadata ... not found" warning
///   arrives as an `agent_message_chunk`, mixed into the answer text.
/// * `CODEX_HOME` must exist. The adapter does not exit when its stdin
///   closes: stop it with a signal.
pub const CODEX_ACP: CliRecipe = CliRecipe {
    name: "codex-acp",
    bin_var: "CODEX_ACP_BIN",
    npm_package: "@zed-industries/codex-acp",
    npm_version: "0.16.0",
    model: "gpt-5.4-mini",
    request_path: "/v1/responses",
    #[rustfmt::skip]
    args: &[
        "-c", "model_provider=mock",
        "-c", "model={model}",
        "-c", "model_providers.mock.name=Mock",
        "-c", "model_providers.mock.base_url={base_url}/v1",
        "-c", "model_providers.mock.wire_api=responses",
        "-c", "model_providers.mock.env_key=MOCK_API_KEY",
        "-c", "model_providers.mock.request_max_retries=0",
        "-c", "model_providers.mock.stream_max_retries=0",
        "-c", "features.plugins=false",
        "-c", "analytics.enabled=false",
        "-c", "check_for_update_on_startup=false",
    ],
    env: &[
        ("CODEX_HOME", "{home}/.codex"),
        ("MOCK_API_KEY", DUMMY_API_KEY),
    ],
    dirs: &[".codex"],
    files: &[],
};

/// CodeBuddy Code `2.117.0` (bundled in `@tencent-ai/agent-sdk` `0.3.201`,
/// like [`CODEBUDDY`](super::CODEBUDDY)), `codebuddy --acp` (Chat
/// Completions).
///
/// * [`CODEBUDDY`](super::CODEBUDDY)'s offline environment and home:
///   requests go to `POST /chat/completions` (`model:"default-model"`). No
///   `authenticate` call is needed, though `initialize` offers four login
///   methods (`iOA`, `external`, `internal`, `selfhosted`).
/// * Besides the turn's model request, the first prompt of a session sends
///   one title request (`model:"default-model-lite"`, a system prompt asking
///   for a session title).
/// * Run with `node` (the entry is a node script).
pub const CODEBUDDY_ACP: CliRecipe = CliRecipe {
    name: "codebuddy-acp",
    args: &["--acp"],
    ..super::CODEBUDDY
};

/// The ACP agents installed by `scripts/install-clis`. Gemini CLI speaks ACP
/// too: [`GEMINI`](super::GEMINI)'s environment and files with the arguments
/// `--acp -m {model}` (observed offline: no `authenticate` needed, permission
/// options `proceed_always`, `proceed_once`, `cancel`).
pub const ACP_AGENTS: [CliRecipe; 6] = [
    QWEN,
    COPILOT,
    OPENCODE,
    CLAUDE_ACP,
    CODEX_ACP,
    CODEBUDDY_ACP,
];
