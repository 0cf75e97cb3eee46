//! Shared by the real-agent ACP tests (`real_acp_gemini.rs`,
//! `real_acp_agents.rs`): the glue from a testkit [`CliRecipe`] (its
//! binary, its environment and home files, the mock's URL) to an
//! [`acp::Config`] of the ACP driver, and a harness holding the mock, the
//! scratch home and that configuration.
#![allow(dead_code)] // each test binary uses a part

use std::path::{Path, PathBuf};

use agent_adaptor_core::Agent;
use agent_adaptor_drivers::acp::{self, AcpAgent};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_testkit::clis::{CliRecipe, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Script};

/// The ACP driver configuration of `agent` started as `binary` with the
/// recipe's environment `env` (nothing inherited but `PATH` and `USER`),
/// in `workspace`, with `extra_args` after the driver's own arguments.
pub fn config(
    agent: AcpAgent,
    binary: &Path,
    env: &[(String, String)],
    workspace: PathBuf,
    extra_args: Vec<String>,
) -> acp::Config {
    acp::Config {
        command: Some(binary.to_path_buf()),
        env: env.iter().cloned().collect(),
        env_policy: EnvPolicy::only(["PATH", "USER"]),
        cwd: Some(workspace),
        extra_args,
        ..acp::Config::for_agent(agent)
    }
}

/// The arguments of `recipe` the driver does not pass itself: the recipe's
/// arguments (templates filled) after the driver recipe's own, which must
/// be their prefix (e.g. Codex's `-c` provider overrides; none for `qwen
/// --acp`).
pub fn extra_args(
    recipe: &CliRecipe,
    agent: &AcpAgent,
    base_url: &str,
    home: &Path,
) -> Vec<String> {
    let own = agent.recipe().args;
    assert!(
        recipe.args.starts_with(own),
        "{}: the testkit arguments {:?} do not start with the driver's {own:?}",
        recipe.name,
        recipe.args
    );
    let base_url = base_url.trim_end_matches('/');
    let home = home.to_string_lossy();
    recipe.args[own.len()..]
        .iter()
        .map(|arg| {
            arg.replace("{base_url}", base_url)
                .replace("{model}", recipe.model)
                .replace("{home}", &home)
        })
        .collect()
}

/// The mock, a scratch home prepared by a testkit recipe, and the ACP
/// driver configuration that starts the recipe's pinned binary on both.
pub struct AcpHarness {
    /// The mock model server the agent talks to.
    pub server: MockServer,
    /// The scratch home (`~`) of the runs.
    pub home: ScratchDir,
    recipe: &'static CliRecipe,
    config: acp::Config,
}

impl AcpHarness {
    /// Start the mock with `script`, prepare a scratch home with `recipe`,
    /// and configure `agent` on them.
    pub async fn start(recipe: &'static CliRecipe, agent: AcpAgent, script: Script) -> Self {
        let server = MockServer::start(script).await.expect("start the mock");
        let home = ScratchDir::new(recipe.name).expect("a scratch home");
        // The error says: run scripts/install-clis.
        let binary = recipe.binary().unwrap_or_else(|e| panic!("{e}"));
        let base_url = server.base_url();
        let env = recipe
            .prepare(&base_url, home.path())
            .unwrap_or_else(|e| panic!("{e}"));
        let extra = extra_args(recipe, &agent, &base_url, home.path());
        let config = config(agent, &binary, &env, home.path().join("work"), extra);
        AcpHarness {
            server,
            home,
            recipe,
            config,
        }
    }

    /// The driver configuration of the runs.
    pub fn config(&self) -> acp::Config {
        self.config.clone()
    }

    /// An agent of the ACP driver with [`AcpHarness::config`].
    pub fn agent(&self) -> Agent {
        Agent::new(acp::driver(self.config()))
    }

    /// The working directory of the runs.
    pub fn workspace(&self) -> PathBuf {
        self.home.path().join("work")
    }

    /// The model requests (on the recipe's path) of the conversation whose
    /// first user text holds `keyword`, in order.
    pub fn model_requests(&self, keyword: &str) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path == self.recipe.request_path)
            .filter(|r| {
                r.conversation()
                    .is_some_and(|c| c.first_user_text.contains(keyword))
            })
            .collect()
    }
}
