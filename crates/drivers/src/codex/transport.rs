//! The processes a Codex run talks to: the command line, a one-shot
//! `codex exec --json` run (with its `--output-schema` file) and a one-shot
//! `codex app-server` run. The resident app-server is `resident.rs`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use agent_adaptor_driver::{DriverError, EventSink, Request, RunContext};
use agent_adaptor_driver_kit::host_calls::HostCalls;
use agent_adaptor_driver_kit::host_mcp::loopback::{self, LoopbackServer, TOKEN_ENV};
use agent_adaptor_process::{Command, Finished, StdinMode};
use bytes::Bytes;
use serde_json::Value;

use super::appserver::protocol::ThreadParams;
use super::appserver::transport::{Plan, Session};
use super::appserver::{AppServerParser, dynamic_tools};
use super::equip::{self, Equipment};
use super::parse::ExecParser;
use super::record::{Parsed, Totals};
use super::wire::ExecUsage;
use super::{CodexDriver, ENV_ALLOWLIST, argv, previous_totals, resume_id};
use crate::exit::{CliName, ExitFacts};
use crate::pump;

impl CodexDriver {
    /// The CLI's command line: configured program and environment, `cwd`,
    /// `stdin` and the cancellation graces.
    /// With `equip`: the profile's `CODEX_HOME`, and the host variables the
    /// run's MCP servers name (bearer tokens) passed through unless
    /// configured.
    pub(super) fn command(
        &self,
        args: Vec<String>,
        cwd: Option<&Path>,
        stdin: StdinMode,
        equip: &Equipment,
    ) -> Command {
        let cfg = &self.config;
        let mut cmd = Command::new(&cfg.command);
        cmd.args(args);
        cfg.env_policy.apply(&mut cmd, ENV_ALLOWLIST, &[], &cfg.env);
        cmd.inherit_env(equip.pass_env.iter().filter(|v| !cfg.env.contains_key(*v)));
        if let Some(home) = &equip.home {
            cmd.env("CODEX_HOME", home);
        }
        if let Some(dir) = cwd {
            cmd.cwd(dir);
        }
        cmd.stdin(stdin)
            .close_grace(cfg.cancel_grace)
            .term_grace(cfg.cancel_grace * 2);
        cmd
    }

    /// One `codex exec --json` run: the prompt on stdin, one event per line.
    pub(super) async fn run_exec(
        &self,
        ctx: &RunContext,
        req: &Request,
        sink: &dyn EventSink,
        cwd: Option<&Path>,
        schema: Option<&Value>,
        equip: &Equipment,
    ) -> Result<(Finished, Parsed), DriverError> {
        let schema_file = schema.map(SchemaFile::write).transpose()?;
        // The host tools' server, started before the CLI; it stops with
        // the run.
        let (host, calls) = LoopbackServer::for_run(req).await?.unzip();
        let mut overrides = equip.exec_overrides();
        if let Some(server) = &host {
            overrides.extend(equip::host_tools_override(server, req.host_tools.specs()));
        }
        let args = argv::exec_argv(
            &self.config,
            req,
            cwd,
            schema_file.as_ref().map(|f| f.0.as_path()),
            &overrides,
        );
        let prompt = StdinMode::Bytes(Bytes::from(req.prompt.clone().into_bytes()));
        let mut cmd = self.command(args, cwd, prompt, equip);
        if let Some(server) = &host {
            cmd.env(TOKEN_ENV, server.token());
        }
        let mut parser = ExecParser::new(req.streaming, previous_usage(req))
            .with_transcript(req.new_transcript());
        let cli = CliName {
            name: "Codex",
            terminal: "turn.completed",
        };
        let run = pump::run(cli, &cmd, ctx, sink, &mut parser, None, &[]);
        let finished = loopback::serving(calls, &req.host_tools, sink, &ctx.cancel, run).await?;
        let (tail, parsed) = parser.finish(ExitFacts::of(&finished.exit));
        for out in tail {
            pump::deliver(out, sink, &mut None, &mut None).await?;
        }
        Ok((finished, parsed))
    }

    /// What an app-server run asks of the server.
    pub(super) fn plan(
        &self,
        req: &Request,
        cwd: Option<&Path>,
        schema: Option<Value>,
        equip: &Equipment,
    ) -> Plan {
        let cfg = &self.config;
        Plan {
            thread: ThreadParams {
                cwd: cwd.map(|d| d.to_string_lossy().into_owned()),
                approval_policy: cfg.approval_policy.clone(),
                sandbox: cfg.sandbox.clone(),
                model: req.model_override.clone().or_else(|| cfg.model.clone()),
                developer_instructions: equip.instructions.clone(),
                config: equip.thread_config(),
            },
            resume: resume_id(req),
            prompt: req.prompt.clone(),
            output_schema: schema,
            dynamic_tools: dynamic_tools::declared(req),
        }
    }

    /// One `codex app-server` run in a process of its own: the handshake,
    /// one turn, then the server exits.
    pub(super) async fn run_app_server(
        &self,
        ctx: &RunContext,
        req: &Request,
        sink: &dyn EventSink,
        cwd: Option<&Path>,
        schema: Option<Value>,
        equip: &Equipment,
    ) -> Result<(Finished, Parsed), DriverError> {
        let cfg = &self.config;
        let plan = self.plan(req, cwd, schema, equip);
        let parser =
            AppServerParser::new(req.streaming, plan.resume.is_some(), previous_totals(req))
                .with_transcript(req.new_transcript());
        let calls = HostCalls::new(req.host_tools.clone(), sink, ctx.cancel.clone());
        let (mut session, setup) = Session::new(parser, plan, calls);
        let cmd = self.command(argv::app_server_argv(cfg), cwd, StdinMode::Pipe, equip);
        let cli = CliName {
            name: "Codex app-server",
            terminal: "turn/completed",
        };
        let finished = pump::run_duplex(cli, &cmd, ctx, sink, &mut session, &setup).await?;
        let (tail, parsed) = session.parser.finish(ExitFacts::of(&finished.exit));
        for out in tail {
            pump::deliver(out, sink, &mut None, &mut None).await?;
        }
        Ok((finished, parsed))
    }
}

/// The thread's cumulative usage before this turn, from the resumed state.
fn previous_usage(req: &Request) -> Option<ExecUsage> {
    let data = &req.session.as_ref()?.state.as_ref()?.data;
    let t = Totals::from_state(data)?;
    Some(ExecUsage {
        input_tokens: t.input,
        cached_input_tokens: t.cached_input,
        output_tokens: t.output,
        reasoning_output_tokens: t.reasoning,
    })
}

/// exec's `--output-schema` file: created by this process (never an
/// existing file or a planted link), readable by its owner only (0600 on
/// Unix), removed when dropped, i.e. when the run ends however it ends.
struct SchemaFile(PathBuf);

impl SchemaFile {
    fn write(schema: &Value) -> Result<SchemaFile, DriverError> {
        use std::io::Write as _;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut nonce = [0u8; 8];
        nonce_bytes(&mut nonce);
        let path = std::env::temp_dir().join(format!(
            "agent-adaptor-codex-schema-{}-{}-{}.json",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            nonce.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let mut file = options.open(&path)?;
        // From here on the file is ours: dropping the guard removes it.
        let guard = SchemaFile(path);
        file.write_all(schema.to_string().as_bytes())?;
        file.sync_all()?;
        Ok(guard)
    }

    /// The file's path.
    #[cfg(test)]
    fn path(&self) -> &Path {
        &self.0
    }
}

/// Unpredictable bytes for a temp file name (the standard library's
/// randomly seeded hasher; no extra dependency).
fn nonce_bytes(out: &mut [u8; 8]) {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    *out = h.finish().to_le_bytes();
}

impl Drop for SchemaFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod schema_file_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_schema_file_is_private_complete_and_removed_on_drop() {
        let schema = serde_json::json!({"type": "object", "required": ["a"]});
        let file = SchemaFile::write(&schema).unwrap();
        let path = file.path().to_owned();
        let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(written, schema);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        let other = SchemaFile::write(&schema).unwrap();
        assert_ne!(other.path(), path, "every run gets a file of its own");
        drop(file);
        assert!(!path.exists());
        assert!(other.path().exists());
    }
}

#[cfg(test)]
mod command_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::child_env::EnvPolicy;
    use std::ffi::OsString;

    #[test]
    fn the_profile_home_and_the_bearer_variables_reach_the_child() {
        // PATH stands for a host variable holding a token: the policy
        // passes nothing, the run's MCP server names it.
        let host_path = std::env::var_os("PATH").unwrap();
        let driver = super::super::driver(super::super::Config {
            env_policy: EnvPolicy::only(Vec::<String>::new()),
            ..Default::default()
        });
        let plain = driver.command(vec![], None, StdinMode::Null, &Equipment::default());
        assert!(!plain.effective_env().contains_key(&OsString::from("PATH")));
        let equip = Equipment {
            pass_env: vec!["PATH".into()],
            home: Some("/profiles/codex".into()),
            ..Default::default()
        };
        let env = driver
            .command(vec![], None, StdinMode::Null, &equip)
            .effective_env();
        assert_eq!(env.get(&OsString::from("PATH")), Some(&host_path));
        assert_eq!(
            env.get(&OsString::from("CODEX_HOME")),
            Some(&OsString::from("/profiles/codex"))
        );
        // A configured binding wins over the host's value.
        let mut cfg = driver.config().clone();
        cfg.env.insert("PATH".into(), "/configured".into());
        let env = super::super::driver(cfg)
            .command(vec![], None, StdinMode::Null, &equip)
            .effective_env();
        assert_eq!(
            env.get(&OsString::from("PATH")),
            Some(&OsString::from("/configured"))
        );
    }
}
