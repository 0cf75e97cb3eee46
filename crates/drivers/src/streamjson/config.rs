//! The configuration of a stream-json CLI driver, and its command line.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use agent_adaptor_driver::{ConfigError, Request};
use serde::Serialize;
use serde_json::{Value, json};

use super::Family;
use crate::child_env::{EnvPolicy, EnvVars};

/// How the CLI is driven, per run, when no resident process serves the run
/// (see [`Config::resident`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// `-p --output-format stream-json --verbose`, the prompt on stdin, then EOF.
    OneShot,
    /// `--input-format stream-json` with the control protocol: permission
    /// requests are routed to the host's decision sink.
    Control,
}

/// Configuration shared by the drivers of the stream-json family.
///
/// Every field is provider-visible and part of the session config
/// fingerprint (environment values included, hashed, never logged).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The CLI binary (default: the family's program name, from `PATH`).
    pub command: PathBuf,
    /// `--model`.
    pub model: Option<String>,
    /// `--effort` (Claude: low … max).
    pub effort: Option<String>,
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// `--permission-mode`.
    pub permission_mode: Option<String>,
    /// Route permission requests to the host (the control transport).
    pub host_approvals: bool,
    /// MCP servers, written as the CLI's own `--mcp-config` JSON
    /// (`{"mcpServers": {name: spec}}`).
    pub mcp_servers: BTreeMap<String, Value>,
    /// `--add-dir` directories.
    pub add_dirs: Vec<PathBuf>,
    /// The working directory when the request names none.
    pub cwd: Option<PathBuf>,
    /// Extra arguments appended last. Flags the driver owns are rejected.
    pub extra_args: Vec<String>,
    /// Environment bindings for the CLI (they win over inherited variables).
    pub env: EnvVars,
    /// Which host variables the CLI inherits (default: the allowlist plus
    /// the family's documented variables; see [`crate::child_env`]). Not
    /// part of the session fingerprint: like the inherited values, it is
    /// the host's setup, not the session's.
    #[serde(skip)]
    pub env_policy: EnvPolicy,
    /// How long the CLI may take to exit after stdin closes on cancel.
    #[serde(skip)]
    pub cancel_close_grace: Duration,
    /// How long after SIGTERM before SIGKILL on cancel.
    #[serde(skip)]
    pub cancel_term_grace: Duration,
    /// Keep one live CLI process per provider session between the turns of
    /// a thread (default on). A thread run (one whose request carries a
    /// continue-or-start or continue-only session) that streams, has no
    /// output schema and is not [`Request::spawn`] is served by a *resident*
    /// process: the CLI runs with `--input-format stream-json`, each turn
    /// writes one user frame, the turn ends at the `result` line and the
    /// process stays up for the next turn of the same session. Not part of
    /// the session fingerprint: it changes no provider-visible behaviour.
    #[serde(skip)]
    pub resident: bool,
    /// How long a resident process may stay idle before it is stopped
    /// (default [`DEFAULT_IDLE_TIMEOUT`](crate::resident::DEFAULT_IDLE_TIMEOUT),
    /// 5 min).
    #[serde(skip)]
    pub resident_idle_timeout: Duration,
    /// When a resident process is stopped (idle, closed, replaced, or after
    /// a failed turn): how long after its stdin closes before SIGTERM
    /// (default 2 s, so the CLI can write its session). SIGKILL follows
    /// after [`cancel_term_grace`](Config::cancel_term_grace).
    #[serde(skip)]
    pub resident_stop_grace: Duration,
}

impl Config {
    /// The defaults for `family`.
    pub fn new(family: &Family) -> Self {
        Config {
            command: PathBuf::from(family.program),
            model: None,
            effort: None,
            max_turns: None,
            permission_mode: None,
            host_approvals: false,
            mcp_servers: BTreeMap::new(),
            add_dirs: Vec::new(),
            cwd: None,
            extra_args: Vec::new(),
            env: EnvVars::new(),
            env_policy: EnvPolicy::default(),
            cancel_close_grace: Duration::from_millis(500),
            cancel_term_grace: Duration::from_millis(1000),
            resident: true,
            resident_idle_timeout: crate::resident::DEFAULT_IDLE_TIMEOUT,
            resident_stop_grace: Duration::from_secs(2),
        }
    }

    /// The transport this configuration selects.
    pub fn transport(&self) -> Transport {
        if self.host_approvals {
            Transport::Control
        } else {
            Transport::OneShot
        }
    }

    /// Reject what the driver must own.
    pub fn validate(&self, family: &Family) -> Result<(), ConfigError> {
        let err = |reason: String| ConfigError {
            driver: family.driver_type.to_owned(),
            reason,
        };
        if self.command.as_os_str().is_empty() {
            return Err(err("command is empty".into()));
        }
        for arg in &self.extra_args {
            let flag = arg.split('=').next().unwrap_or(arg);
            if OWNED_FLAGS.contains(&flag) {
                return Err(err(format!(
                    "extra_args must not contain {flag}: the driver sets it"
                )));
            }
        }
        if let Some(e) = &self.effort
            && !["low", "medium", "high", "xhigh", "max"].contains(&e.as_str())
        {
            return Err(err(format!("unknown effort {e:?}")));
        }
        if self.max_turns == Some(0) {
            return Err(err("max_turns must be at least 1".into()));
        }
        crate::child_env::validate(family.driver_type, &self.env_policy, &self.env)
    }
}

/// Flags the driver sets itself; `extra_args` may not contain them.
pub const OWNED_FLAGS: &[&str] = &[
    "-p",
    "--print",
    "--output-format",
    "--input-format",
    "--verbose",
    "--include-partial-messages",
    "--resume",
    "-r",
    "--continue",
    "-c",
    "--session-id",
    "--permission-prompt-tool",
    "--model",
    "--mcp-config",
    "--max-turns",
    "--permission-mode",
    "--effort",
    "--json-schema",
];

/// The command line for one run (program excluded).
pub fn argv(family: &Family, cfg: &Config, req: &Request) -> Vec<String> {
    argv_with(family, cfg, req, cfg.transport() == Transport::Control)
}

/// The command line of a CLI that reads its input as stream-json frames
/// (`stdin_frames`: the control transport and resident processes) or the
/// prompt as plain text (`-p`, one-shot). The permission-prompt flag is
/// passed only with [`Config::host_approvals`].
pub fn argv_with(family: &Family, cfg: &Config, req: &Request, stdin_frames: bool) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    if stdin_frames {
        if family.print_flag_with_control {
            a.push("-p".into());
        }
        a.extend(["--input-format".into(), "stream-json".into()]);
        if cfg.host_approvals
            && let Some(flag) = family.permission_prompt_flag
        {
            a.extend([flag.into(), "stdio".into()]);
        }
    } else {
        a.push("-p".into());
    }
    a.extend([
        "--output-format".into(),
        "stream-json".into(),
        "--verbose".into(),
    ]);
    if req.streaming {
        a.push("--include-partial-messages".into());
    }
    if let Some(m) = req.model_override.as_ref().or(cfg.model.as_ref()) {
        a.extend(["--model".into(), m.clone()]);
    }
    if let Some(e) = &cfg.effort {
        a.extend(["--effort".into(), e.clone()]);
    }
    if let Some(n) = cfg.max_turns {
        a.extend(["--max-turns".into(), n.to_string()]);
    }
    if let Some(p) = &cfg.permission_mode {
        a.extend(["--permission-mode".into(), p.clone()]);
    }
    if let Some(id) = req
        .session
        .as_ref()
        .and_then(|s| s.state.as_ref())
        .map(|s| s.resume_id.as_str())
        .filter(|id| !id.is_empty())
    {
        a.extend(["--resume".into(), id.to_owned()]);
    }
    if !cfg.mcp_servers.is_empty() {
        a.extend([
            "--mcp-config".into(),
            json!({ "mcpServers": cfg.mcp_servers }).to_string(),
        ]);
    }
    for d in &cfg.add_dirs {
        a.extend(["--add-dir".into(), d.to_string_lossy().into_owned()]);
    }
    if let Some(schema) = req.native_output_schema() {
        // The CLI adds a `StructuredOutput` tool with this input schema,
        // validates the call and reports it as `result.structured_output`
        // (stream-json, one-shot and control transports alike).
        a.extend(["--json-schema".into(), cli_schema(&schema.schema_json)]);
    }
    a.extend(cfg.extra_args.iter().cloned());
    a
}

/// The schema as the CLI takes it: without a top-level `$schema`. Both CLIs
/// compile `--json-schema` with a draft-07 validator that knows no other
/// meta-schema and exits 1 on `"$schema": "…/draft/2020-12/schema"` (what
/// `schemars` writes; observed with Claude Code 2.1.332). Core compiled the
/// schema as Draft 2020-12 already and validates the answer itself.
fn cli_schema(schema_json: &str) -> String {
    match serde_json::from_str::<Value>(schema_json) {
        Ok(Value::Object(mut map)) if map.contains_key("$schema") => {
            map.remove("$schema");
            Value::Object(map).to_string()
        }
        _ => schema_json.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamjson::{CLAUDE, CODEBUDDY};
    use agent_adaptor_driver::{SessionContext, SessionState};

    #[test]
    fn one_shot_argv() {
        let mut cfg = Config::new(&CLAUDE);
        cfg.model = Some("claude-sonnet-4-5".into());
        cfg.max_turns = Some(3);
        let mut req = Request::new("run_1", "hi");
        req.streaming = true;
        assert_eq!(
            argv(&CLAUDE, &cfg, &req),
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--model",
                "claude-sonnet-4-5",
                "--max-turns",
                "3"
            ]
        );
    }

    #[test]
    fn resume_and_override() {
        let cfg = Config::new(&CLAUDE);
        let mut req = Request::new("run_1", "hi");
        req.model_override = Some("m2".into());
        req.session = Some(SessionContext {
            state: Some(SessionState {
                resume_id: "sess-9".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        let a = argv(&CLAUDE, &cfg, &req);
        assert!(a.windows(2).any(|w| w == ["--resume", "sess-9"]));
        assert!(a.windows(2).any(|w| w == ["--model", "m2"]));
        assert!(!a.contains(&"--include-partial-messages".to_owned()));
    }

    #[test]
    fn control_transport_differs_by_family() {
        let mut cfg = Config::new(&CLAUDE);
        cfg.host_approvals = true;
        let req = Request::new("run_1", "hi");
        let claude = argv(&CLAUDE, &cfg, &req);
        assert!(
            claude
                .windows(2)
                .any(|w| w == ["--permission-prompt-tool", "stdio"])
        );
        assert!(
            claude
                .windows(2)
                .any(|w| w == ["--input-format", "stream-json"])
        );
        let codebuddy = argv(&CODEBUDDY, &cfg, &req);
        assert!(!codebuddy.iter().any(|a| a == "--permission-prompt-tool"));
        assert!(!codebuddy.iter().any(|a| a == "-p"));
    }

    #[test]
    fn resident_argv_reads_frames_and_asks_only_with_host_approvals() {
        let cfg = Config::new(&CLAUDE);
        let mut req = Request::new("run_1", "hi");
        req.streaming = true;
        assert_eq!(
            argv_with(&CLAUDE, &cfg, &req, true),
            [
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages"
            ]
        );
        let mut asking = cfg.clone();
        asking.host_approvals = true;
        assert_eq!(
            argv_with(&CLAUDE, &asking, &req, true),
            argv(&CLAUDE, &asking, &req),
            "the control transport's command line"
        );
        let codebuddy = argv_with(&CODEBUDDY, &Config::new(&CODEBUDDY), &req, true);
        assert_eq!(codebuddy[..2], ["--input-format", "stream-json"]);
    }

    #[test]
    fn mcp_servers_use_the_cli_format() {
        let mut cfg = Config::new(&CLAUDE);
        cfg.mcp_servers
            .insert("files".into(), json!({"command": "mcp-files", "args": []}));
        let a = argv(&CLAUDE, &cfg, &Request::new("r", "p"));
        let i = a.iter().position(|x| x == "--mcp-config").unwrap();
        let v: Value = serde_json::from_str(&a[i + 1]).unwrap();
        assert_eq!(v["mcpServers"]["files"]["command"], "mcp-files");
    }

    #[test]
    fn a_native_output_schema_becomes_json_schema() {
        use agent_adaptor_driver::{OnInvalid, OutputSchema, StructuredOutputSource};
        let schema = r#"{"type":"object"}"#;
        let mut req = Request::new("r", "p");
        req.output_schema = Some(OutputSchema {
            format: "json_schema".into(),
            schema_json: schema.into(),
            name: String::new(),
            description: String::new(),
            on_invalid: OnInvalid::FailRun,
        });
        req.structured_output_source = Some(StructuredOutputSource::Native);
        for family in [&CLAUDE, &CODEBUDDY] {
            for frames in [false, true] {
                let a = argv_with(family, &Config::new(family), &req, frames);
                assert!(
                    a.windows(2).any(|w| w == ["--json-schema", schema]),
                    "{a:?}"
                );
            }
        }
        // The CLIs' draft-07 validator refuses a 2020-12 `$schema`.
        let mut with_meta = req.clone();
        if let Some(s) = with_meta.output_schema.as_mut() {
            s.schema_json =
                r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}"#
                    .into();
        }
        let a = argv(&CLAUDE, &Config::new(&CLAUDE), &with_meta);
        assert!(
            a.windows(2).any(|w| w == ["--json-schema", schema]),
            "{a:?}"
        );
        // Core validates a prompt-validated schema itself: not passed on.
        req.structured_output_source = Some(StructuredOutputSource::PromptValidate);
        let a = argv(&CLAUDE, &Config::new(&CLAUDE), &req);
        assert!(!a.iter().any(|x| x == "--json-schema"), "{a:?}");
        // The flag belongs to the driver.
        let mut cfg = Config::new(&CLAUDE);
        cfg.extra_args = vec!["--json-schema".into(), schema.into()];
        assert!(cfg.validate(&CLAUDE).is_err());
    }

    #[test]
    fn owned_flags_are_rejected() {
        let mut cfg = Config::new(&CLAUDE);
        cfg.extra_args = vec!["--output-format=json".into()];
        let e = cfg.validate(&CLAUDE).unwrap_err();
        assert!(e.reason.contains("--output-format"));
        cfg.extra_args = vec!["--fallback-model".into(), "x".into()];
        cfg.validate(&CLAUDE).unwrap();
        cfg.effort = Some("extreme".into());
        assert!(cfg.validate(&CLAUDE).is_err());
    }
}
