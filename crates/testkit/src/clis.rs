//! The real provider CLIs, run offline against the [`mock`](crate::mock)
//! model server: where the binaries are, and how to start each one so that it
//! talks to nothing but the mock.
//!
//! `scripts/install-clis` installs the pinned CLIs (`tests/clis/package.json`)
//! with `npm ci` and writes `tests/clis/bin-paths.env`, which
//! [`CliRecipe::binary`] reads; an environment variable of the same name
//! (`CLAUDE_BIN`, `CODEX_BIN`, `GEMINI_BIN`, `CODEBUDDY_BIN`, and for the ACP
//! agents `QWEN_BIN`, `COPILOT_BIN`, `OPENCODE_BIN`, `CLAUDE_ACP_BIN`,
//! `CODEX_ACP_BIN`) overrides it.
//!
//! Every per-CLI fact lives in one [`CliRecipe`] constant ([`CLAUDE`],
//! [`CODEX`], [`GEMINI`], [`CODEBUDDY`]; the ACP agents [`QWEN`],
//! [`COPILOT`], [`OPENCODE`], [`CLAUDE_ACP`], [`CODEX_ACP`], [`CODEBUDDY_ACP`]); each field's doc
//! says where the fact comes from (`shared/reference/protocols.md` section, or
//! what was observed running the pinned version). [`CliRecipe::command`]
//! turns a one-shot recipe into a ready [`tokio::process::Command`], and
//! [`CliRecipe::acp_command`] an ACP agent (the same, with stdin piped for the
//! protocol) ([`CliRecipe::prepare`] does the same preparation of the home and
//! returns the environment, for starting the CLI some other way, such as
//! through a driver under test):
//!
//! * the environment is **cleared**; only `PATH` is passed through, and
//!   `HOME`, the XDG directories and `TMPDIR` point into the given scratch
//!   home, so nothing of the user's configuration, credentials or provider
//!   variables (`OPENAI_BASE_URL`, proxies, ...) is read;
//! * API keys are the dummy [`DUMMY_API_KEY`]; telemetry, auto-update,
//!   plugin marketplaces and other nonessential traffic are switched off
//!   (each verified with `strace` inside a network namespace that had only
//!   loopback: the only connections left are to the mock, and CodeBuddy's to a
//!   loopback listener of its own);
//! * stdin is null (`codex exec` hangs and `gemini -p` exits 55 on an open
//!   stdin, protocols.md §0.1), piped for an ACP agent; stdout and stderr are
//!   piped;
//! * the working directory is `<home>/work`, and the child dies with the
//!   handle (`kill_on_drop`) in a process group of its own (so a test can
//!   kill the whole tree).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agent_adaptor_testkit::clis::{self, ScratchDir};
//!
//! let home = ScratchDir::new("claude")?;
//! let mut cmd = clis::claude_command("http://127.0.0.1:4000", home.path(), "SMOKE hi")?;
//! let output = cmd.output().await?;
//! assert!(output.status.success());
//! # Ok(())
//! # }
//! ```

use std::fs;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::process::Command;

mod acp;

pub use acp::{ACP_AGENTS, CLAUDE_ACP, CODEBUDDY_ACP, CODEX_ACP, COPILOT, OPENCODE, QWEN};

/// The API key every recipe hands its CLI; the mock accepts any key.
pub const DUMMY_API_KEY: &str = "mock-key";

/// `tests/clis/bin-paths.env` in this workspace (written by
/// `scripts/install-clis`).
pub const BIN_PATHS_FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/clis/bin-paths.env"
);

/// Everything needed to run one real CLI offline against the mock.
///
/// Templates in [`args`](Self::args), [`env`](Self::env) and
/// [`files`](Self::files) may contain `{base_url}` (the mock's base URL, e.g.
/// `http://127.0.0.1:PORT`, without a trailing slash), `{model}`
/// ([`model`](Self::model)) and `{home}` (the scratch home); an argument that
/// is exactly `{prompt}` becomes the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CliRecipe {
    /// Short name (`claude`, `codex`, `gemini`, `codebuddy`, `qwen`,
    /// `copilot`, `opencode`, `claude-acp`, `codex-acp`).
    pub name: &'static str,
    /// The environment variable (and `bin-paths.env` key) holding the path of
    /// the binary or entry script.
    pub bin_var: &'static str,
    /// The npm package and the exact version pinned in
    /// `tests/clis/package.json` (the versions protocols.md describes).
    pub npm_package: &'static str,
    /// The pinned version of [`npm_package`](Self::npm_package).
    pub npm_version: &'static str,
    /// The model name the CLI is told to use (and sends to the mock).
    pub model: &'static str,
    /// The path of the model request the CLI sends to the mock (path only,
    /// no query); a run that talked to the mock recorded at least one.
    pub request_path: &'static str,
    /// Arguments (templates), the prompt included for a one-shot recipe (an
    /// ACP agent gets its prompts on stdin).
    pub args: &'static [&'static str],
    /// Environment variables (templates), on top of [`COMMON_ENV`].
    pub env: &'static [(&'static str, &'static str)],
    /// Directories created under the home before the run.
    pub dirs: &'static [&'static str],
    /// Files written under the home before the run: (relative path, content
    /// template).
    pub files: &'static [(&'static str, &'static str)],
}

/// Environment set for every CLI (templates): an isolated home and XDG/temp
/// directories, no colour, a fixed locale.
pub const COMMON_ENV: &[(&str, &str)] = &[
    ("HOME", "{home}"),
    ("XDG_CONFIG_HOME", "{home}/.config"),
    ("XDG_CACHE_HOME", "{home}/.cache"),
    ("XDG_DATA_HOME", "{home}/.local/share"),
    ("XDG_STATE_HOME", "{home}/.local/state"),
    ("TMPDIR", "{home}/tmp"),
    ("LANG", "C.UTF-8"),
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
];

/// Directories created for every CLI (the working directory and the ones
/// [`COMMON_ENV`] points at).
const COMMON_DIRS: &[&str] = &[
    "work",
    ".config",
    ".cache",
    ".local/share",
    ".local/state",
    "tmp",
];

/// Claude Code `2.1.332` (protocols.md §2.1 offline recipe, §2.2 argv, §2.3
/// output).
///
/// * `ANTHROPIC_BASE_URL` without `/v1`: requests go to
///   `POST /v1/messages?beta=true` (§2.1); `ANTHROPIC_API_KEY` is sent as
///   `x-api-key`.
/// * `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` plus `DISABLE_AUTOUPDATER`,
///   `DISABLE_TELEMETRY`, `DISABLE_ERROR_REPORTING` (§2.1); observed: exactly
///   one request, to the mock.
/// * `CLAUDE_CONFIG_DIR` keeps settings and sessions in the scratch home.
/// * `-p --output-format stream-json --verbose` (`--verbose` is required with
///   stream-json, §2.2); the terminal line is
///   `{"type":"result","subtype":"success","is_error":false,"result":TEXT,...}` (§2.3).
/// * `--model claude-sonnet-4-5`: a name Claude knows, so it prints no
///   `[claude-code:unrecognized_model]` warning (§0.2).
/// * The binary is the native one from `@anthropic-ai/claude-code-<platform>`
///   (§0.4), so npm install scripts are not needed.
pub const CLAUDE: CliRecipe = CliRecipe {
    name: "claude",
    bin_var: "CLAUDE_BIN",
    npm_package: "@anthropic-ai/claude-code",
    npm_version: "2.1.332",
    model: "claude-sonnet-4-5",
    request_path: "/v1/messages",
    args: &[
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "{model}",
        "{prompt}",
    ],
    env: &[
        ("ANTHROPIC_BASE_URL", "{base_url}"),
        ("ANTHROPIC_API_KEY", DUMMY_API_KEY),
        ("CLAUDE_CONFIG_DIR", "{home}/.claude"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_ERROR_REPORTING", "1"),
    ],
    dirs: &[".claude"],
    files: &[],
};

/// OpenAI Codex `0.171.0`, `codex exec --json` (protocols.md §1.1 offline
/// recipe, §1.2 argv, §1.3 events).
///
/// * A custom provider `mock` with `base_url = {base_url}/v1` and
///   `wire_api = "responses"` (`"chat"` is a hard error in 0.171, §1.1):
///   requests go to `POST /v1/responses`. `env_key = MOCK_API_KEY` makes Codex
///   send `Authorization: Bearer <MOCK_API_KEY>`. Retries are off so a mock
///   failure shows at once.
/// * `CODEX_HOME` must exist (Codex refuses to start otherwise; observed).
/// * `features.plugins=false`: otherwise Codex runs
///   `git ls-remote https://github.com/openai/plugins.git` at startup
///   (observed). `analytics.enabled=false`: otherwise it resolves
///   `ab.chatgpt.com` and `chatgpt.com`, which costs ~5 s offline (observed).
///   `check_for_update_on_startup=false` for good measure.
/// * `--skip-git-repo-check` (the work dir is not a git repo), prompt as the
///   last argument with stdin null (§0.1).
/// * `mock-model` is unknown to Codex: it emits a non-fatal
///   `item.completed{type:"error"}` "Model metadata ... not found" line (§1.1);
///   the answer is `item.completed{item:{type:"agent_message",text}}` (§1.3).
/// * The binary is the native one from `@openai/codex-<platform>` (§0.4), not
///   the `codex.js` wrapper (which on Node 20 stays resident as a parent).
pub const CODEX: CliRecipe = CliRecipe {
    name: "codex",
    bin_var: "CODEX_BIN",
    npm_package: "@openai/codex",
    npm_version: "0.171.0",
    model: "mock-model",
    request_path: "/v1/responses",
    #[rustfmt::skip]
    args: &[
        "exec", "--json", "--skip-git-repo-check",
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
        "{prompt}",
    ],
    env: &[
        ("CODEX_HOME", "{home}/.codex"),
        ("MOCK_API_KEY", DUMMY_API_KEY),
    ],
    dirs: &[".codex"],
    files: &[],
};

/// The `-c key=value` overrides of [`CODEX`]'s arguments that point Codex at
/// the mock at `base_url` (the model itself excluded), in order: for a
/// driver configuration's `overrides`, so the offline settings live once.
pub fn codex_mock_overrides(base_url: &str) -> Vec<(String, String)> {
    CODEX
        .args
        .windows(2)
        .filter(|pair| pair[0] == "-c")
        .filter_map(|pair| pair[1].split_once('='))
        .filter(|(key, _)| *key != "model")
        .map(|(key, value)| (key.to_owned(), value.replace("{base_url}", base_url)))
        .collect()
}

/// Gemini CLI `0.61.0`, `gemini -p ... --output-format stream-json`
/// (protocols.md §5).
///
/// * `GOOGLE_GEMINI_BASE_URL` + `GEMINI_API_KEY`: requests go to
///   `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`.
/// * `~/.gemini/settings.json` must select `gemini-api-key` auth (else exit
///   41, "Invalid auth method selected."); it also turns off usage statistics
///   and auto-update (§5).
/// * `-m` is always passed: with the default `auto` model a router first
///   calls `:generateContent` and retries with backoff (§5).
/// * `--skip-trust`: 0.61 refuses to run headless in an untrusted directory
///   (exit 55; observed).
/// * `GEMINI_CLI_SYSTEM_SETTINGS_PATH` / `GEMINI_CLI_SYSTEM_DEFAULTS_PATH`
///   point at (absent) files in the home, so `/etc/gemini-cli` is not read.
/// * Output: `init`, `message` (`role:"assistant"`, `delta:true` chunks, to
///   be concatenated), then `result{status:"success"}` (§5).
/// * Run with `node` (the entry is `bundle/gemini.js`); it relaunches itself
///   once as a child node with a larger heap, as for users.
pub const GEMINI: CliRecipe = CliRecipe {
    name: "gemini",
    bin_var: "GEMINI_BIN",
    npm_package: "@google/gemini-cli",
    npm_version: "0.61.0",
    model: "gemini-2.5-flash",
    request_path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
    args: &[
        "-p",
        "{prompt}",
        "--output-format",
        "stream-json",
        "-m",
        "{model}",
        "--skip-trust",
    ],
    env: &[
        ("GOOGLE_GEMINI_BASE_URL", "{base_url}"),
        ("GEMINI_API_KEY", DUMMY_API_KEY),
        (
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
            "{home}/.gemini/system-settings.json",
        ),
        (
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
            "{home}/.gemini/system-defaults.json",
        ),
    ],
    dirs: &[".gemini"],
    files: &[(
        ".gemini/settings.json",
        r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true}}"#,
    )],
};

/// CodeBuddy Code `2.117.0`, shipped inside `@tencent-ai/agent-sdk` `0.3.201`
/// at `cli/bin/codebuddy` (protocols.md §4).
///
/// * `CODEBUDDY_BASE_URL` (no `/v1`) + `CODEBUDDY_API_KEY`: requests go to
///   `POST /chat/completions` (OpenAI Chat Completions streaming,
///   `model:"default-model"`; §4). No `--model` is passed.
/// * `DISABLE_AUTOUPDATER=1`, `CODEBUDDY_DISABLE_AUTO_MEMORY=1` (what the SDK
///   sets, §4); `CODEBUDDY_SKIP_BUILTIN_MARKETPLACE=1`, otherwise it runs
///   `git clone https://cnb.cool/codebuddy/marketplace` at startup (observed);
///   `DISABLE_TELEMETRY`, `DISABLE_GALILEO`, `CODEBUDDY_REMOTE_CONFIG_DISABLED`
///   switch off tracing and remote product configuration (read in its
///   bundle). `CODEBUDDY_CONFIG_DIR` keeps its state in the home.
/// * Argv as Claude's: `-p --output-format stream-json --verbose PROMPT`; the
///   terminal line is `{"type":"result","subtype":"success","result":TEXT,...}`
///   (an API error is `subtype:"error_during_execution"` with **exit 0**, §0.3).
/// * Run with `node` (the entry is a node script).
pub const CODEBUDDY: CliRecipe = CliRecipe {
    name: "codebuddy",
    bin_var: "CODEBUDDY_BIN",
    npm_package: "@tencent-ai/agent-sdk",
    npm_version: "0.3.201",
    model: "default-model",
    request_path: "/chat/completions",
    args: &[
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "{prompt}",
    ],
    env: &[
        ("CODEBUDDY_BASE_URL", "{base_url}"),
        ("CODEBUDDY_API_KEY", DUMMY_API_KEY),
        ("CODEBUDDY_CONFIG_DIR", "{home}/.codebuddy"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_GALILEO", "1"),
        ("CODEBUDDY_DISABLE_AUTO_MEMORY", "1"),
        ("CODEBUDDY_SKIP_BUILTIN_MARKETPLACE", "1"),
        ("CODEBUDDY_REMOTE_CONFIG_DISABLED", "1"),
    ],
    dirs: &[".codebuddy"],
    files: &[],
};

/// The four one-shot recipes (a prompt in argv); the ACP agents are
/// [`ACP_AGENTS`].
pub const ALL: [CliRecipe; 4] = [CLAUDE, CODEX, GEMINI, CODEBUDDY];

/// Why a CLI could not be prepared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// The binary is not installed (or its path is wrong).
    #[error(
        "{cli}: binary not found ({detail}); run scripts/install-clis (or set {var} to the binary)"
    )]
    NotInstalled {
        /// The CLI's short name.
        cli: &'static str,
        /// The variable naming its path.
        var: &'static str,
        /// What was looked at.
        detail: String,
    },
    /// Preparing the scratch home failed.
    #[error("{cli}: preparing {path}: {source}")]
    Home {
        /// The CLI's short name.
        cli: &'static str,
        /// The file or directory being created.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

impl CliRecipe {
    /// The path of the binary or entry script: the environment
    /// variable [`bin_var`](Self::bin_var) if set and non-empty, else the line
    /// for it in [`BIN_PATHS_FILE`]. Fails when neither names an existing
    /// file.
    pub fn binary(&self) -> Result<PathBuf, CliError> {
        let not_installed = |detail: String| CliError::NotInstalled {
            cli: self.name,
            var: self.bin_var,
            detail,
        };
        let (path, from) = match std::env::var_os(self.bin_var).filter(|v| !v.is_empty()) {
            Some(value) => (PathBuf::from(value), format!("${}", self.bin_var)),
            None => {
                let text = fs::read_to_string(BIN_PATHS_FILE)
                    .map_err(|e| not_installed(format!("cannot read {BIN_PATHS_FILE}: {e}")))?;
                let prefix = format!("{}=", self.bin_var);
                let value = text
                    .lines()
                    .find_map(|line| line.trim().strip_prefix(&prefix))
                    .ok_or_else(|| {
                        not_installed(format!("no {} in {BIN_PATHS_FILE}", self.bin_var))
                    })?;
                (PathBuf::from(value.trim()), BIN_PATHS_FILE.to_owned())
            }
        };
        if path.is_file() {
            Ok(path)
        } else {
            Err(not_installed(format!(
                "{} (from {from}) does not exist",
                path.display()
            )))
        }
    }

    /// A command that runs this CLI once, offline, against the mock at
    /// `base_url` (e.g. `http://127.0.0.1:PORT`), with `home` as its whole
    /// world (created if missing; files of [`files`](Self::files) are
    /// written) and `prompt` as the user message. See the module docs for
    /// what is isolated.
    pub fn command(&self, base_url: &str, home: &Path, prompt: &str) -> Result<Command, CliError> {
        self.command_with_binary(&self.binary()?, base_url, home, prompt)
    }

    /// Prepares `home` for a run of this CLI against the mock at `base_url`
    /// (e.g. `http://127.0.0.1:PORT`) and returns the environment to run it
    /// with: [`COMMON_ENV`] then [`env`](Self::env), templates expanded, in
    /// that order (a later binding of the same name wins).
    ///
    /// Creates the working directory `<home>/work`, the directories
    /// [`COMMON_ENV`] points at and [`dirs`](Self::dirs), and writes
    /// [`files`](Self::files). This is what [`command`](Self::command) does
    /// before building its command; use it to start the CLI some other way
    /// (a driver under test, for example) with the same isolation: clear the
    /// environment, pass `PATH`, and run in `<home>/work`.
    pub fn prepare(&self, base_url: &str, home: &Path) -> Result<Vec<(String, String)>, CliError> {
        let home_str = home.to_string_lossy();
        let base_url = base_url.trim_end_matches('/');
        let fill = |template: &str| substitute(template, base_url, self.model, &home_str);

        for dir in COMMON_DIRS.iter().chain(self.dirs) {
            let path = home.join(dir);
            fs::create_dir_all(&path).map_err(|source| CliError::Home {
                cli: self.name,
                path,
                source,
            })?;
        }
        for (file, content) in self.files {
            let path = home.join(file);
            fs::write(&path, fill(content)).map_err(|source| CliError::Home {
                cli: self.name,
                path,
                source,
            })?;
        }
        Ok(COMMON_ENV
            .iter()
            .chain(self.env)
            .map(|(key, value)| ((*key).to_owned(), fill(value)))
            .collect())
    }

    /// [`command`](Self::command) with the binary given explicitly instead of
    /// looked up (a path ending in `.js`/`.cjs`/`.mjs`, or a script whose `#!`
    /// line names node, is run with `node` from `PATH`).
    pub fn command_with_binary(
        &self,
        binary: &Path,
        base_url: &str,
        home: &Path,
        prompt: &str,
    ) -> Result<Command, CliError> {
        self.build(binary, base_url, home, prompt, Stdio::null())
    }

    /// A command that starts this ACP agent offline against the mock at
    /// `base_url`, with `home` as its whole world, as
    /// [`command`](Self::command) does, but with stdin piped: the caller
    /// speaks ACP (NDJSON JSON-RPC) on stdin and stdout. An argument that is
    /// exactly `{prompt}` (none of the ACP recipes has one) becomes empty.
    pub fn acp_command(&self, base_url: &str, home: &Path) -> Result<Command, CliError> {
        self.acp_command_with_binary(&self.binary()?, base_url, home)
    }

    /// [`acp_command`](Self::acp_command) with the binary given explicitly
    /// (run with `node` when it is a JavaScript entry, as in
    /// [`command_with_binary`](Self::command_with_binary)).
    pub fn acp_command_with_binary(
        &self,
        binary: &Path,
        base_url: &str,
        home: &Path,
    ) -> Result<Command, CliError> {
        self.build(binary, base_url, home, "", Stdio::piped())
    }

    /// The command of [`command_with_binary`](Self::command_with_binary) and
    /// [`acp_command_with_binary`](Self::acp_command_with_binary).
    fn build(
        &self,
        binary: &Path,
        base_url: &str,
        home: &Path,
        prompt: &str,
        stdin: Stdio,
    ) -> Result<Command, CliError> {
        let env = self.prepare(base_url, home)?;
        let home_str = home.to_string_lossy();
        let base_url = base_url.trim_end_matches('/');
        let fill = |template: &str| substitute(template, base_url, self.model, &home_str);

        let mut cmd = if is_node_script(binary) {
            let mut cmd = Command::new("node");
            cmd.arg(binary);
            cmd
        } else {
            Command::new(binary)
        };
        cmd.args(self.args.iter().map(|arg| {
            if *arg == "{prompt}" {
                prompt.to_owned()
            } else {
                fill(arg)
            }
        }));
        cmd.env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd.envs(env);
        cmd.current_dir(home.join("work"))
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        Ok(cmd)
    }
}

/// Claude Code, offline against the mock: [`CLAUDE`]`.command(...)`.
pub fn claude_command(base_url: &str, home: &Path, prompt: &str) -> Result<Command, CliError> {
    CLAUDE.command(base_url, home, prompt)
}

/// Codex (`codex exec --json`), offline against the mock:
/// [`CODEX`]`.command(...)`.
pub fn codex_command(base_url: &str, home: &Path, prompt: &str) -> Result<Command, CliError> {
    CODEX.command(base_url, home, prompt)
}

/// Gemini CLI, offline against the mock: [`GEMINI`]`.command(...)`.
pub fn gemini_command(base_url: &str, home: &Path, prompt: &str) -> Result<Command, CliError> {
    GEMINI.command(base_url, home, prompt)
}

/// CodeBuddy Code, offline against the mock: [`CODEBUDDY`]`.command(...)`.
pub fn codebuddy_command(base_url: &str, home: &Path, prompt: &str) -> Result<Command, CliError> {
    CODEBUDDY.command(base_url, home, prompt)
}

/// SIGKILL to the process group `pgid` (the recipes start every CLI in a
/// group of its own, pgid = pid): the CLI and every helper it spawned. A
/// no-op when `pgid` is `None` or the group is already gone.
pub fn kill_process_group(pgid: Option<u32>) {
    if let Some(pgid) = pgid {
        // No unsafe/libc in this crate: use kill(1). Errors mean "gone".
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Replaces `{base_url}`, `{model}` and `{home}` in one pass (a value that
/// itself contains a placeholder is not expanded again); other text,
/// including other braces, is kept.
fn substitute(template: &str, base_url: &str, model: &str, home: &str) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let (value, len) = [
            ("{base_url}", base_url),
            ("{model}", model),
            ("{home}", home),
        ]
        .into_iter()
        .find(|(key, _)| tail.starts_with(key))
        .map_or(("{", 1), |(key, value)| (value, key.len()));
        out.push_str(value);
        rest = &tail[len..];
    }
    out.push_str(rest);
    out
}

/// Whether `path` is a JavaScript entry to run with `node`: a `.js`, `.cjs` or
/// `.mjs` file, or a script whose `#!` line names node.
fn is_node_script(path: &Path) -> bool {
    if matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("js" | "cjs" | "mjs")
    ) {
        return true;
    }
    let mut head = [0_u8; 128];
    let len = fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let head = &head[..len];
    head.starts_with(b"#!")
        && head
            .split(|b| *b == b'\n')
            .next()
            .is_some_and(|line| line.windows(4).any(|w| w == b"node"))
}

/// A uniquely named directory under the system temp dir, removed (with its
/// contents) on drop. Suitable as a CLI's scratch home.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// Creates `$TMPDIR/agent-adaptor-<label>-<pid>-<nanos>-<n>`.
    pub fn new(label: &str) -> io::Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "agent-adaptor-{label}-{}-{nanos}-{n}",
            std::process::id()
        ));
        fs::create_dir_all(&path)?;
        Ok(Self { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::{codex_mock_overrides, substitute};

    #[test]
    fn codex_overrides_point_at_the_mock_without_the_model() {
        let o = codex_mock_overrides("http://127.0.0.1:9");
        assert_eq!(o[0], ("model_provider".to_owned(), "mock".to_owned()));
        assert!(o.contains(&(
            "model_providers.mock.base_url".to_owned(),
            "http://127.0.0.1:9/v1".to_owned()
        )));
        assert!(o.iter().all(|(k, v)| k != "model" && !v.contains('{')));
        assert_eq!(o.len(), 10);
    }

    #[test]
    fn substitute_fills_known_placeholders_once() {
        assert_eq!(
            substitute(
                "{base_url}/v1 {model} {home}/x {other} {",
                "http://h:1",
                "m",
                "/h{model}"
            ),
            "http://h:1/v1 m /h{model}/x {other} {"
        );
    }
}
