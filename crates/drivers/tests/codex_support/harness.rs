//! The offline harness of the real-Codex tests: the mock model server, a
//! scratch home prepared by the testkit recipe, and the driver
//! configuration pointing Codex at the mock.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::codex::{self, CodexDriver, Config, Transport};
use agent_adaptor_testkit::clis::{CODEX, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Script};

use super::{Dir, SchemaCheck};

/// Every real run's bound.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The offline home, the mock and the driver configuration of one test.
pub struct Harness {
    pub server: MockServer,
    pub home: ScratchDir,
    pub env: Vec<(String, String)>,
    runs: std::sync::atomic::AtomicUsize,
}

impl Harness {
    pub async fn start(script: Script) -> Harness {
        let server = MockServer::start(script).await.unwrap();
        let home = ScratchDir::new("real-codex").unwrap();
        let env = CODEX.prepare(&server.base_url(), home.path()).unwrap();
        Harness {
            server,
            home,
            env,
            runs: Default::default(),
        }
    }

    pub fn work(&self) -> PathBuf {
        self.home.path().join("work")
    }

    /// The driver config: the recipe's offline overrides (protocols.md
    /// §9), `transport`, and for the app-server a wrapper that logs what the
    /// driver writes to codex's stdin (for the schema check).
    pub fn config(&self, transport: Transport) -> Config {
        let base = self.server.base_url();
        let mut cfg = Config {
            command: CODEX.binary().unwrap(),
            transport,
            model: Some(CODEX.model.into()),
            cwd: Some(self.work()),
            env_policy: EnvPolicy::only(["PATH", "USER"]),
            ..Default::default()
        };
        for (k, v) in agent_adaptor_testkit::clis::codex_mock_overrides(&base) {
            cfg.overrides.insert(k, v);
        }
        cfg.env.extend(self.env.iter().cloned());
        if transport != Transport::Exec {
            let n = self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let log = self.home.path().join(format!("stdin-{n}.jsonl"));
            let wrapper = self.home.path().join("codex-tee");
            std::fs::write(
                &wrapper,
                "#!/bin/sh\ntee -a \"$AA_STDIN_LOG\" | \"$AA_CODEX\" \"$@\"\n",
            )
            .unwrap();
            make_executable(&wrapper);
            cfg.env
                .insert("AA_STDIN_LOG".into(), log.to_string_lossy().into_owned());
            cfg.env.insert(
                "AA_CODEX".into(),
                cfg.command.to_string_lossy().into_owned(),
            );
            cfg.command = wrapper;
        }
        cfg
    }

    pub fn driver(&self, transport: Transport) -> CodexDriver {
        codex::driver(self.config(transport))
    }

    /// What the driver wrote in the app-server run made by `cfg`.
    pub fn stdin_log(cfg: &Config) -> String {
        std::fs::read_to_string(&cfg.env["AA_STDIN_LOG"]).unwrap_or_default()
    }

    /// The model requests of conversations started with `keyword`.
    pub fn requests(&self, keyword: &str) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/responses"))
            .filter(|r| {
                r.conversation()
                    .is_some_and(|c| c.first_user_text.contains(keyword))
            })
            .collect()
    }
}

pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = std::fs::metadata(path).unwrap().permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(path, perms).unwrap();
}

/// Validate both directions of one app-server run against the schema.
pub fn check_schema(cfg: &Config, stdout: &str) -> usize {
    let stdin = Harness::stdin_log(cfg);
    let mut check = SchemaCheck::new();
    check.frames(
        stdin
            .lines()
            .map(|l| (Dir::Client, l))
            .chain(stdout.lines().map(|l| (Dir::Server, l))),
    );
    assert!(check.total() > 5, "the run was checked");
    check.total()
}
