//! What a run equips Codex with, in Codex's own carriers:
//!
//! * **instructions** — Codex's `developer_instructions` (a developer
//!   message placed before the conversation): the app-server's
//!   `thread/start` / `thread/resume` `developerInstructions` (JSON on
//!   stdin), exec's `-c developer_instructions=<TOML string>`;
//! * **MCP servers** — Codex's `[mcp_servers.<name>]` tables (`command`,
//!   `args`, `env` | `url`, `http_headers`, `bearer_token_env_var`;
//!   `required`, `enabled_tools`, `disabled_tools`, per-tool
//!   `approval_mode = "approve"`): the app-server's `thread/start.config`
//!   (`"mcp_servers.<name>": {table}`), exec's `-c mcp_servers.<name>={…}`.
//!   Both merge with the user's own servers (an override of the whole
//!   `mcp_servers` table merges too, observed on 0.171), so
//!   `Request::mcp_strict` is not declared: a dedicated profile is the way
//!   to run without the user's servers;
//! * **profile** — `CODEX_HOME` pointing at the profile's home
//!   (`<root>/codex`; a clone is seeded with `config.toml` copied and
//!   `auth.json` linked);
//! * **skills** — copied into `<CODEX_HOME>/skills/<name>/`, only in a
//!   dedicated or clone home (never the user's own);
//! * **host tools** (exec) — the run's loopback MCP server as one more
//!   `-c mcp_servers.agent-adaptor={…}` with `bearer_token_env_var`, the
//!   token in the child's environment ([`host_tools_override`]).
//!
//! exec's carriers are command-line arguments, so they are bounded
//! ([`EXEC_ARGV_BUDGET`]): Codex reads no developer-instructions file, and a
//! config layer file (`--profile`) must live in `CODEX_HOME`. A run whose
//! equipment exceeds the budget is served by the app-server when the
//! transport is `Auto`, and refused before launch when it is forced to
//! `Exec`.

use std::path::{Path, PathBuf};

use agent_adaptor_driver::{
    DriverError, FailureCode, HOST_TOOL_SERVER, HostToolSpec, McpServer, McpTransport, Request,
    RunFailure,
};
use agent_adaptor_driver::{SkillRef, canonical_session_config_fingerprint};
use agent_adaptor_driver_kit::host_mcp::loopback::{LoopbackServer, TOKEN_ENV};
use agent_adaptor_driver_kit::profile::{CloneSeed, prepare_home};
use agent_adaptor_driver_kit::scratch::write_private;
use agent_adaptor_driver_kit::skills::materialize;
use serde_json::{Map, Value, json};

use super::Config;

/// The bytes of equipment exec may carry as `-c` arguments (Linux limits
/// one argument to 128 KiB and all of them, with the environment, to a
/// quarter of the stack limit).
pub const EXEC_ARGV_BUDGET: usize = 96 * 1024;

/// What a clone of the user's Codex home starts with.
const CLONE_SEED: CloneSeed<'static> = CloneSeed {
    copy: &["config.toml"],
    link: &["auth.json"],
};

/// One run's equipment, ready for either transport.
#[derive(Debug, Clone, Default)]
pub(crate) struct Equipment {
    /// The developer instructions.
    pub instructions: Option<String>,
    /// `(key, value)` config overrides: `mcp_servers.<name>` → its table.
    pub config: Vec<(String, Value)>,
    /// Host variables the child needs (bearer-token variables).
    pub pass_env: Vec<String>,
    /// `CODEX_HOME` of a dedicated or clone profile.
    pub home: Option<PathBuf>,
    /// The fingerprints of the materialized skills (for the resident
    /// signature).
    pub skills: Vec<String>,
}

impl Equipment {
    /// The equipment of `req`: prepares the profile's home and its skills.
    /// A refusal is a [`RunFailure`] (`policy_error`) before anything is
    /// spawned.
    pub(crate) fn of(
        cfg: &Config,
        req: &Request,
    ) -> Result<Result<Equipment, RunFailure>, DriverError> {
        let home = prepare_home(&req.profile, "codex", &native_home(cfg), &CLONE_SEED)?;
        match home.as_deref() {
            Some(home) => install_skills(home, &req.skills)?,
            None if !req.skills.is_empty() => {
                return Ok(Err(RunFailure::new(
                    FailureCode::PolicyError,
                    "codex reads skills from its home: skills need a dedicated or clone profile",
                )));
            }
            None => {}
        }
        let config = req
            .mcp_servers
            .iter()
            .map(|s| (format!("mcp_servers.{}", s.name), mcp_table(s)))
            .collect();
        Ok(Ok(Equipment {
            instructions: req.instructions.clone().filter(|t| !t.is_empty()),
            config,
            pass_env: req
                .mcp_servers
                .iter()
                .filter_map(|s| s.transport.bearer_token_env())
                .map(str::to_owned)
                .collect(),
            home,
            skills: req.skills.iter().map(|s| s.fingerprint.clone()).collect(),
        }))
    }

    /// exec's `-c` arguments.
    pub(crate) fn exec_overrides(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(text) = &self.instructions {
            a.extend(c_flag("developer_instructions", &json!(text)));
        }
        for (k, v) in &self.config {
            a.extend(c_flag(k, v));
        }
        a
    }

    /// Whether exec can carry this equipment on its command line.
    pub(crate) fn fits_exec_argv(&self) -> bool {
        self.exec_overrides().iter().map(String::len).sum::<usize>() <= EXEC_ARGV_BUDGET
    }

    /// The app-server's `config` overrides (`None` when there are none).
    pub(crate) fn thread_config(&self) -> Option<Map<String, Value>> {
        (!self.config.is_empty()).then(|| self.config.iter().cloned().collect())
    }
}

/// One `-c key=<TOML>` override.
fn c_flag(key: &str, value: &Value) -> [String; 2] {
    ["-c".into(), format!("{key}={}", toml_inline(value))]
}

/// exec's `-c` override of the run's host-tool server: Streamable HTTP at
/// its loopback URL, the token read from [`TOKEN_ENV`] (set in the child's
/// environment, never on argv), required, and every tool approved (exec
/// cannot ask; the host's toolbox asks the host per the run's policy).
pub(crate) fn host_tools_override(server: &LoopbackServer, specs: &[HostToolSpec]) -> [String; 2] {
    let mut entry = server.mcp_server(TOKEN_ENV);
    entry.tools.auto_approve = specs.iter().map(|s| s.name.clone()).collect();
    c_flag(
        &format!("mcp_servers.{HOST_TOOL_SERVER}"),
        &mcp_table(&entry),
    )
}

/// The checkpoint key holding the fingerprint of the instructions a Codex
/// thread started with.
pub(crate) const INSTRUCTIONS_KEY: &str = "developer_instructions";

/// The fingerprint of `req`'s instructions (none without).
pub(crate) fn instructions_mark(req: &Request) -> Option<String> {
    let text = req.instructions.as_deref().filter(|t| !t.is_empty())?;
    canonical_session_config_fingerprint("codex/developer-instructions/v1", &text).ok()
}

/// Codex fixes a thread's developer instructions when it starts: a resumed
/// thread keeps them and ignores new ones (observed on 0.171, both
/// transports). A resumed run whose instructions differ from the thread's
/// is refused rather than silently run without them.
pub(crate) fn check_resumed_instructions(req: &Request) -> Option<RunFailure> {
    let state = req.session.as_ref()?.state.as_ref()?;
    if state.resume_id.is_empty() {
        return None;
    }
    let started = state.data.get(INSTRUCTIONS_KEY).cloned();
    (started != instructions_mark(req)).then(|| {
        RunFailure::new(
            FailureCode::PolicyError,
            "codex keeps the developer instructions a thread started with: \
             a resumed thread cannot take other instructions (start a new thread)",
        )
    })
}

/// Where the driver lists the skills it installed in a home.
const SKILLS_MANIFEST: &str = ".agent-adaptor-skills";

/// Make `<home>/skills` hold exactly the run's skills among those the
/// driver installed: copy the run's, remove the ones an earlier run
/// installed that this run does not carry (the user's or Codex's own
/// skills in a clone are left alone). Runs sharing a home at the same time
/// with different skills see each other's.
fn install_skills(home: &Path, skills: &[SkillRef]) -> std::io::Result<()> {
    let root = home.join("skills");
    let manifest = home.join(SKILLS_MANIFEST);
    let installed = std::fs::read_to_string(&manifest).unwrap_or_default();
    for name in installed.lines() {
        let stale = !skills.iter().any(|s| s.name == name);
        // Names were checked when installed; a line that is not one plain
        // component (a hand-edited manifest) is skipped.
        let plain = Path::new(name).components().count() == 1 && !name.starts_with('.');
        if stale && plain {
            match std::fs::remove_dir_all(root.join(name)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
    }
    if skills.is_empty() && installed.is_empty() {
        return Ok(());
    }
    materialize(skills, &root)?;
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    write_private(&manifest, names.join("\n").as_bytes())
}

/// The user's own Codex home: the configured `CODEX_HOME`, the host's, or
/// `~/.codex`.
fn native_home(cfg: &Config) -> PathBuf {
    if let Some(home) = cfg.env.get("CODEX_HOME") {
        return PathBuf::from(home);
    }
    if let Some(home) = std::env::var_os("CODEX_HOME") {
        return PathBuf::from(home);
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
        .join(".codex")
}

/// A server's `[mcp_servers.<name>]` table, as JSON.
pub(crate) fn mcp_table(server: &McpServer) -> Value {
    let mut t = Map::new();
    match &server.transport {
        McpTransport::Stdio { command, args, env } => {
            t.insert("command".into(), json!(command));
            if !args.is_empty() {
                t.insert("args".into(), json!(args));
            }
            if !env.is_empty() {
                t.insert("env".into(), json!(env));
            }
        }
        McpTransport::Http {
            url,
            headers,
            bearer_token_env,
        }
        | McpTransport::Sse {
            url,
            headers,
            bearer_token_env,
        } => {
            t.insert("url".into(), json!(url));
            if !headers.is_empty() {
                t.insert("http_headers".into(), json!(headers));
            }
            if let Some(var) = bearer_token_env {
                t.insert("bearer_token_env_var".into(), json!(var));
            }
        }
    }
    if server.required {
        t.insert("required".into(), json!(true));
    }
    let policy = &server.tools;
    if let Some(allow) = &policy.allow {
        t.insert("enabled_tools".into(), json!(allow));
    }
    if !policy.deny.is_empty() {
        t.insert("disabled_tools".into(), json!(policy.deny));
    }
    if !policy.auto_approve.is_empty() {
        let tools: Map<String, Value> = policy
            .auto_approve
            .iter()
            .map(|tool| (tool.clone(), json!({"approval_mode": "approve"})))
            .collect();
        t.insert("tools".into(), Value::Object(tools));
    }
    Value::Object(t)
}

/// `v` as a TOML value on one line (strings as TOML basic strings: JSON's
/// string escapes are TOML's; keys quoted; `null` as an empty string,
/// which the tables above never hold). Keys are sorted, whatever map type
/// serde_json was built with, so argv (and the resident signature over it)
/// is canonical.
pub(crate) fn toml_inline(v: &Value) -> String {
    match v {
        Value::Null => "\"\"".into(),
        Value::Bool(_) | Value::Number(_) | Value::String(_) => v.to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(toml_inline).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let pairs: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{} = {}", Value::String(k.clone()), toml_inline(v)))
                .collect();
            format!("{{{}}}", pairs.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_adaptor_driver::McpToolPolicy;

    #[test]
    fn a_server_is_codexs_own_table_on_one_toml_line() {
        let mut stdio = McpServer::stdio("aa-test", "/bin/srv", ["--name", "a \"b\""]);
        stdio.required = true;
        stdio.tools = McpToolPolicy {
            allow: Some(["lookup".to_owned(), "add".to_owned()].into()),
            deny: ["fail".to_owned()].into(),
            auto_approve: ["lookup".to_owned()].into(),
        };
        assert_eq!(
            toml_inline(&mcp_table(&stdio)),
            r#"{"args" = ["--name", "a \"b\""], "command" = "/bin/srv", "disabled_tools" = ["fail"], "enabled_tools" = ["add", "lookup"], "required" = true, "tools" = {"lookup" = {"approval_mode" = "approve"}}}"#
        );
        let mut http = McpServer::http("docs", "https://docs.example/mcp");
        if let McpTransport::Http {
            headers,
            bearer_token_env,
            ..
        } = &mut http.transport
        {
            headers.insert("X-Team".into(), "a".into());
            *bearer_token_env = Some("DOCS_TOKEN".into());
        }
        assert_eq!(
            mcp_table(&http),
            json!({"url": "https://docs.example/mcp", "http_headers": {"X-Team": "a"},
                   "bearer_token_env_var": "DOCS_TOKEN"})
        );
    }

    #[test]
    fn exec_gets_c_overrides_and_the_app_server_a_config_map() {
        let mut req = Request::new("r", "p");
        req.instructions = Some("Line one\n\"two\"".into());
        req.mcp_servers = vec![McpServer::stdio("aa-test", "srv", Vec::<String>::new())];
        let equip = match Equipment::of(&Config::default(), &req) {
            Ok(Ok(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            equip.exec_overrides(),
            [
                "-c",
                r#"developer_instructions="Line one\n\"two\"""#,
                "-c",
                r#"mcp_servers.aa-test={"command" = "srv"}"#
            ]
        );
        assert!(equip.fits_exec_argv());
        assert_eq!(
            Value::Object(equip.thread_config().unwrap_or_default()),
            json!({"mcp_servers.aa-test": {"command": "srv"}})
        );
        req.instructions = Some("x".repeat(EXEC_ARGV_BUDGET));
        let equip = match Equipment::of(&Config::default(), &req) {
            Ok(Ok(e)) => e,
            other => panic!("{other:?}"),
        };
        assert!(!equip.fits_exec_argv());
    }

    #[tokio::test]
    async fn the_host_tools_server_is_approved_and_its_token_stays_off_argv() {
        let spec = HostToolSpec {
            name: "lookup".into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            trusted: false,
        };
        let (server, _calls) = LoopbackServer::start(std::slice::from_ref(&spec))
            .await
            .unwrap();
        let [c, value] = host_tools_override(&server, &[spec]);
        assert_eq!(c, "-c");
        assert_eq!(
            value,
            format!(
                r#"mcp_servers.agent-adaptor={{"bearer_token_env_var" = "{TOKEN_ENV}", "required" = true, "tools" = {{"lookup" = {{"approval_mode" = "approve"}}}}, "url" = "{}"}}"#,
                server.url()
            )
        );
        assert!(!value.contains(server.token()));
    }

    #[test]
    fn skills_without_a_home_of_codexs_own_are_refused() {
        let mut req = Request::new("r", "p");
        req.skills = vec![agent_adaptor_driver::SkillRef {
            name: "s".into(),
            description: "d".into(),
            dir: "/nonexistent".into(),
            fingerprint: "f".into(),
        }];
        match Equipment::of(&Config::default(), &req) {
            Ok(Err(failure)) => assert_eq!(failure.code, FailureCode::PolicyError),
            other => panic!("{other:?}"),
        }
    }
}
