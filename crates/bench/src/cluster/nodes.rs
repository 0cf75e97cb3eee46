//! The processes of a cluster run: `agent-adaptor serve` instances over one
//! PostgreSQL database, started on free loopback ports, SIGKILLed and
//! restarted under the same instance id.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use agent_adaptor_testkit::clis::CLAUDE;

/// The variable `serve` takes its token from.
const TOKEN_ENV: &str = "AGENT_ADAPTOR_TOKEN";

/// Which agent the instances run.
#[derive(Clone, Debug)]
pub enum Agent {
    /// The `llm` driver (Chat Completions) against the mock at this base URL.
    Llm(String),
    /// The real Claude Code (tests/clis) against the mock at this base URL.
    Claude(String),
}

/// How every instance of a group is started.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// The `agent-adaptor` binary.
    pub server: PathBuf,
    /// The shared store.
    pub pg_url: String,
    /// The shared token (passed in the environment, never on the command line).
    pub token: String,
    /// The agent.
    pub agent: Agent,
    /// `--lease-ttl` (only passed when given: older servers lack the flag).
    pub lease_ttl: Option<u64>,
    /// `--max-runs-per-client` (every client shares the one token).
    pub max_runs: usize,
    /// Where each instance gets its own home, state and log.
    pub work_dir: PathBuf,
}

/// One running `serve` instance, SIGKILLed on drop.
pub struct Node {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Node {
    /// Start instance `id` (its home under the work directory, kept across a
    /// restart: a restart is the same host coming back) and wait for the
    /// line that says where it listens.
    pub fn start(spec: &NodeSpec, id: &str) -> Result<Node, String> {
        let home = spec.work_dir.join(id);
        let work = home.join("work");
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        let log_path = spec.work_dir.join(format!("{id}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("{}: {e}", log_path.display()))?;
        let mut cmd = Command::new(&spec.server);
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--log-format", "json"])
            .args(["--store", &spec.pg_url, "--instance-id", id])
            .args(["--max-runs-per-client", &spec.max_runs.to_string()])
            .args(["--cwd", &work.to_string_lossy()])
            .env(TOKEN_ENV, &spec.token)
            .env("HOME", &home)
            .env("AGENT_ADAPTOR_HOME", home.join("agent-adaptor"))
            .env("AGENT_ADAPTOR_STATE_DIR", home.join("state"))
            .current_dir(&work)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        if let Some(ttl) = spec.lease_ttl {
            cmd.args(["--lease-ttl", &ttl.to_string()]);
        }
        match &spec.agent {
            Agent::Llm(base) => {
                cmd.args(["--driver", "llm", "--provider", "openai", "--model", "mock"])
                    .args(["--base-url", &format!("{base}/v1")])
                    .env("OPENAI_API_KEY", "mock-key");
            }
            Agent::Claude(base) => claude(&mut cmd, base, &home)?,
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("{}: {e}", spec.server.display()))?;
        let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        // Keep draining stdout so the server never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        let addr = first
            .strip_prefix("agent-adaptor serve: http://")
            .and_then(|rest| rest.split(['/', ' ']).next())
            .ok_or_else(|| {
                let _ = child.kill();
                format!(
                    "{id}: unexpected first line {first:?} (see {})",
                    log_path.display()
                )
            })?;
        Ok(Node {
            addr: addr.parse().map_err(|e| format!("{addr}: {e}"))?,
            child,
        })
    }

    /// The process id (for SIGKILL while the node is shared).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// SIGKILL a process by id (no grace: the instance dies mid-run).
pub fn sigkill(pid: u32) -> Result<(), String> {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let pid = i32::try_from(pid).map_err(|e| e.to_string())?;
    kill(Pid::from_raw(pid), Signal::SIGKILL).map_err(|e| format!("kill {pid}: {e}"))
}

/// Claude Code offline against the mock, isolated in `home` as the CLI's
/// own tests run it: its recipe's environment (passed on with `--env`) and
/// the binary on `PATH`.
fn claude(cmd: &mut Command, base: &str, home: &Path) -> Result<(), String> {
    let env = CLAUDE.prepare(base, home).map_err(|e| e.to_string())?;
    let bin = home.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let link = bin.join("claude");
    if !link.exists() {
        std::os::unix::fs::symlink(CLAUDE.binary().map_err(|e| e.to_string())?, &link)
            .map_err(|e| format!("{}: {e}", link.display()))?;
    }
    cmd.args(["--driver", "claude", "--model", CLAUDE.model]);
    let extra = [
        ("CLAUDE_CODE_MAX_RETRIES", "0"),
        ("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1"),
    ];
    for (name, value) in env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain(extra)
    {
        cmd.args(["--env", name]).env(name, value);
    }
    let path = std::env::var("PATH").unwrap_or_default();
    cmd.env("PATH", format!("{}:{path}", bin.display()))
        .current_dir(home.join("work"));
    Ok(())
}
