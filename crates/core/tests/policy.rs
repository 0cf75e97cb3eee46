//! Run-policy validation and translation, as tables: every policy field ×
//! what a driver declares.
//!
//! * A scripted driver with configurable declarations: an explicit value
//!   that is declared reaches the driver in `Request::policy`; one that is
//!   not is the typed error, and the driver is never called.
//! * The built-in drivers (their real descriptors) against the fake CLI:
//!   an accepted value puts the driver's own flags in the argv the fake
//!   recorded (`--args-out`); a refused one is the typed error and no
//!   process is spawned (no argv recorded at all).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::driver::{
    DecisionKind, DecisionRequest, Driver, FeatureSupport, HumanDecisionSupport, QuestionSupport,
    RunPolicyCapabilities, SandboxSupport, StreamPayload,
};
use agent_adaptor_core::policy::{
    ApprovalMode, ApprovalTimeout, FallbackAction, FeatureLevel, Policy, QuestionMode, SandboxLevel,
};
use agent_adaptor_core::scripted::{ScriptedDriver, Step};
use agent_adaptor_core::{
    Agent, Error, Event, MemoryStore, RunOptions, RunResult, Runner, approve_all, notice_kind,
};
use agent_adaptor_drivers::{claude, codebuddy, codex, cursor, gemini};
use agent_adaptor_testkit::fixtures;
use agent_adaptor_testkit::replay::{ArgsRecord, OPTS_ENV, fake_cli_binary};
use common::*;
use serde_json::Value;

/// Every explicit value of every policy field, with its label
/// (`dimension=value`).
fn explicit_values() -> Vec<(String, Policy)> {
    let mut v = Vec::new();
    for level in SandboxLevel::EXPLICIT {
        v.push((
            format!("sandbox={}", level.as_str()),
            Policy::default().sandbox(level),
        ));
    }
    for level in FeatureLevel::EXPLICIT {
        v.push((
            format!("web_search={}", level.as_str()),
            Policy::default().web_search(level),
        ));
        v.push((
            format!("browser={}", level.as_str()),
            Policy::default().browser(level),
        ));
    }
    for mode in ApprovalMode::EXPLICIT {
        v.push((
            format!("permission={}", mode.as_str()),
            Policy::default().permission(mode),
        ));
        v.push((
            format!("plan_review={}", mode.as_str()),
            Policy::default().plan_review(mode),
        ));
    }
    for mode in QuestionMode::EXPLICIT {
        v.push((
            format!("question={}", mode.as_str()),
            Policy::default().question(mode),
        ));
    }
    v
}

/// The error an undeclared explicit value must produce.
fn assert_refusal(err: &Error, driver: &str, label: &str) {
    let (dim, value) = label.split_once('=').unwrap();
    match err {
        Error::PolicyCapabilityUnsupported {
            driver: d,
            dimension,
            value: v,
        } => assert_eq!(
            (d.as_str(), *dimension, *v),
            (driver, dim, value),
            "{label}"
        ),
        Error::HumanDecisionModeUnsupported {
            driver: d,
            kind,
            mode,
        } => assert_eq!(
            (d.as_str(), kind.as_str(), *mode),
            (driver, dim, value),
            "{label}"
        ),
        other => panic!("{driver} {label}: not a capability error: {other:?}"),
    }
}

// ------------------------------------------------------- scripted driver

/// A recording scripted driver declaring `caps`, and an agent on it.
fn declared(caps: RunPolicyCapabilities) -> (ScriptedDriver, Agent) {
    let driver = ScriptedDriver::text_reply("ok").with_run_policy(caps);
    let agent = Agent::new(driver.clone());
    (driver, agent)
}

/// Declarations with exactly the value `label` names.
fn declaring(label: &str) -> RunPolicyCapabilities {
    let (dim, value) = label.split_once('=').unwrap();
    let mut caps = RunPolicyCapabilities::default();
    let mode = |m: &str| HumanDecisionSupport {
        ask: m == "ask",
        auto_approve: m == "auto_approve",
        auto_reject: m == "auto_deny",
        retry: false,
    };
    match dim {
        "sandbox" => caps.declare_sandbox(SandboxSupport {
            read_only: value == "read_only",
            workspace_write: value == "workspace_write",
            unrestricted: value == "unrestricted",
        }),
        "web_search" => caps.declare_web_search(FeatureSupport {
            allow: value == "allow",
            deny: value == "deny",
        }),
        "browser" => caps.declare_browser(FeatureSupport {
            allow: value == "allow",
            deny: value == "deny",
        }),
        "permission" => caps.permission = mode(value),
        "plan_review" => caps.plan_review = mode(value),
        "question" => {
            caps.question = QuestionSupport {
                ask: value == "ask",
                auto_reject: value == "auto_deny",
                retry: false,
            }
        }
        other => panic!("{other}"),
    }
    caps
}

#[tokio::test]
async fn every_field_against_a_scripted_driver_declaring_or_not() {
    let values = explicit_values();
    for (label, policy) in &values {
        // Declared: accepted, and the driver sees the value.
        let (driver, agent) = declared(declaring(label));
        let result = agent
            .run_with("q", RunOptions::new().policy(*policy))
            .await
            .unwrap_or_else(|e| panic!("{label} declared: {e}"));
        assert_eq!(result.text, "ok");
        let seen = driver.recorded_requests();
        assert_eq!(seen.len(), 1, "{label}");
        assert_eq!(seen[0].policy, policy.run_policy(), "{label}");

        // Declared elsewhere (every *other* value of every field): refused
        // before the driver is called, with no event at all.
        let others = values.iter().filter(|(l, _)| l != label).fold(
            RunPolicyCapabilities::default(),
            |mut caps, (l, _)| {
                let d = declaring(l);
                merge(&mut caps, &d);
                caps
            },
        );
        let (driver, agent) = declared(others);
        let (events, outcome) =
            drain(agent.stream_with("q", RunOptions::new().policy(*policy))).await;
        assert!(events.is_empty(), "{label}: refused before RunStarted");
        assert_refusal(&outcome.unwrap_err(), "scripted", label);
        assert!(driver.recorded_requests().is_empty(), "{label}: not called");
    }
}

fn merge(into: &mut RunPolicyCapabilities, d: &RunPolicyCapabilities) {
    let or = |a: &mut bool, b: bool| *a |= b;
    or(
        &mut into.sandbox_levels.read_only,
        d.sandbox_levels.read_only,
    );
    or(
        &mut into.sandbox_levels.workspace_write,
        d.sandbox_levels.workspace_write,
    );
    or(
        &mut into.sandbox_levels.unrestricted,
        d.sandbox_levels.unrestricted,
    );
    or(&mut into.web_search_levels.allow, d.web_search_levels.allow);
    or(&mut into.web_search_levels.deny, d.web_search_levels.deny);
    or(&mut into.browser_levels.allow, d.browser_levels.allow);
    or(&mut into.browser_levels.deny, d.browser_levels.deny);
    for (a, b) in [
        (&mut into.permission, d.permission),
        (&mut into.plan_review, d.plan_review),
    ] {
        or(&mut a.ask, b.ask);
        or(&mut a.auto_approve, b.auto_approve);
        or(&mut a.auto_reject, b.auto_reject);
    }
    or(&mut into.question.ask, d.question.ask);
    or(&mut into.question.auto_reject, d.question.auto_reject);
    // Only the per-level declarations: no coarse flag (it would mean "all").
    into.isolation = false;
    into.web_search = false;
    into.browser = false;
}

#[tokio::test]
async fn inherit_never_counts_as_an_explicit_request() {
    // A driver declaring nothing accepts every inherit value and every
    // field that is not a capability (timeouts, fallbacks, retries, budget).
    let policy = Policy::default()
        .approval_timeout(ApprovalTimeout::Never)
        .on_timeout(FallbackAction::Retry)
        .on_reject(FallbackAction::Abort)
        .max_retries(0)
        .active_execution_timeout(Duration::from_secs(60));
    let (driver, agent) = declared(RunPolicyCapabilities::default());
    agent
        .run_with("q", RunOptions::new().policy(policy))
        .await
        .unwrap();
    assert!(
        driver.recorded_requests()[0]
            .policy
            .human_decision
            .on_reject
            == FallbackAction::Abort
    );
    agent
        .run_with("q", RunOptions::new().policy(Policy::INHERIT))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_coarse_flags_declare_every_level() {
    let caps = RunPolicyCapabilities {
        isolation: true,
        web_search: true,
        browser: true,
        ..Default::default()
    };
    for (label, policy) in explicit_values().into_iter().take(7) {
        let (_, agent) = declared(caps);
        agent
            .run_with("q", RunOptions::new().policy(policy))
            .await
            .unwrap_or_else(|e| panic!("{label}: {e}"));
    }
}

#[tokio::test]
async fn out_of_domain_values_are_invalid_before_anything_else() {
    let everything = ScriptedDriver::ROUTED_DECISIONS;
    for (policy, field, value) in [
        (
            Policy::default().approval_timeout(ApprovalTimeout::After(Duration::ZERO)),
            "approvals.timeout",
            "0ns",
        ),
        (
            Policy::default().approval_timeout(ApprovalTimeout::After(Duration::MAX)),
            "approvals.timeout",
            "18446744073709551615.999999999s",
        ),
        (
            Policy::default().active_execution_timeout(Duration::ZERO),
            "active_execution_timeout",
            "0ns",
        ),
        (
            // Out of domain wins over an unsupported capability.
            Policy::READ_ONLY.active_execution_timeout(Duration::MAX),
            "active_execution_timeout",
            "18446744073709551615.999999999s",
        ),
    ] {
        let (driver, agent) = declared(everything);
        let (events, outcome) =
            drain(agent.stream_with("q", RunOptions::new().policy(policy))).await;
        assert!(events.is_empty());
        match outcome.unwrap_err() {
            Error::InvalidPolicy {
                driver: d,
                field: f,
                value: v,
            } => assert_eq!((d.as_str(), f, v.as_str()), ("scripted", field, value)),
            other => panic!("{other:?}"),
        }
        assert!(driver.recorded_requests().is_empty());
    }
}

#[tokio::test]
async fn the_auto_deny_preset_is_strict() {
    let mut caps = ScriptedDriver::ROUTED_DECISIONS;
    let (_, agent) = declared(caps);
    agent
        .run_with("q", RunOptions::new().policy(Policy::APPROVALS_AUTO_DENY))
        .await
        .unwrap();
    caps.question.auto_reject = false;
    let (driver, agent) = declared(caps);
    let err = agent
        .run_with("q", RunOptions::new().policy(Policy::APPROVALS_AUTO_DENY))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::HumanDecisionModeUnsupported {
            kind: DecisionKind::Question,
            mode: "auto_deny",
            ..
        }
    ));
    assert!(driver.recorded_requests().is_empty());
}

#[tokio::test]
async fn an_agent_default_is_validated_too_and_a_thread_run_takes_no_lease() {
    let driver = ScriptedDriver::resumable_reply("ok", "s-1");
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::builder(driver.clone())
        .thread_store(store)
        .policy(Policy::READ_ONLY)
        .build()
        .unwrap();
    let thread = agent.thread("k");
    let err = thread.run("q").await.unwrap_err();
    assert!(matches!(
        err,
        Error::PolicyCapabilityUnsupported {
            dimension: "sandbox",
            value: "read_only",
            ..
        }
    ));
    assert!(driver.recorded_requests().is_empty());
    // Nothing was leased: the key is free for a run the driver supports.
    let agent = Agent::builder(driver.clone())
        .thread_store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    agent.thread("k").run("q").await.unwrap();
    assert_eq!(driver.recorded_requests().len(), 1);
}

#[tokio::test]
async fn decisions_reach_core_as_the_policy_says_on_a_routed_driver() {
    // The scripted driver routes every decision; an explicit mode decides it.
    let mut req = DecisionRequest::new(DecisionKind::PlanReview, "test.plan");
    req.prompt = "Approve?".into();
    let agent = Agent::new(
        scripted(
            vec![
                Step::Stream(StreamPayload::run_started()),
                Step::Decide(req),
                Step::Stream(StreamPayload::run_finished(None)),
            ],
            response("", vec![]),
        )
        .with_run_policy(ScriptedDriver::ROUTED_DECISIONS),
    );
    let policy = Policy::default().plan_review(ApprovalMode::AutoApprove);
    let result = agent
        .run_with("q", RunOptions::new().policy(policy))
        .await
        .unwrap();
    assert_eq!(result.metadata["decision.0"], "approved");
}

// ------------------------------------------------------- built-in drivers

/// What a built-in driver does with one explicit value.
#[derive(Debug, Clone)]
enum Expect {
    /// Accepted: these argument sequences appear in the spawned argv.
    Flags(Vec<Vec<&'static str>>),
    /// Accepted by the Codex app-server: `thread/start` carries these
    /// params, and these argument sequences appear in the argv.
    AppServer(Vec<(&'static str, &'static str)>, Vec<Vec<&'static str>>),

    /// Refused before anything is spawned.
    Refused,
}

fn flags(f: &[&[&'static str]]) -> Expect {
    Expect::Flags(f.iter().map(|s| s.to_vec()).collect())
}

/// A fake CLI run: its scratch dir, the argv and stdin it records.
struct Fake {
    dir: tempfile::TempDir,
    fixture: PathBuf,
    extra: Vec<String>,
    n: std::cell::Cell<usize>,
}

impl Fake {
    fn new(fixture: PathBuf, extra: &[&str]) -> Fake {
        Fake {
            dir: tempfile::tempdir().unwrap(),
            fixture,
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
            n: Default::default(),
        }
    }

    /// Fresh record files for the next run; the fake's options. A run on
    /// the stream-json control transport (`control`) is served turn by
    /// turn, so its `initialize` is answered before the capture's `result`
    /// (a result before that answer is not believed).
    fn next_for(&self, control: bool) -> (PathBuf, PathBuf, String) {
        let n = self.n.get() + 1;
        self.n.set(n);
        let args = self.dir.path().join(format!("args-{n}"));
        let stdin = self.dir.path().join(format!("stdin-{n}"));
        let mut opts = vec![
            "--fixture".to_owned(),
            self.fixture.display().to_string(),
            "--args-out".into(),
            args.display().to_string(),
            "--record-stdin".into(),
            stdin.display().to_string(),
        ];
        opts.extend(self.extra.iter().cloned());
        if control {
            opts.push("--serve-turns".into());
        }
        (args, stdin, serde_json::to_string(&opts).unwrap())
    }
}

/// One built-in driver configuration under test.
struct Target {
    name: &'static str,
    driver_type: &'static str,
    fake: Fake,
    make: fn(String) -> Arc<dyn Driver>,
    expect: fn(&str) -> Expect,
    /// Flags no inherit run may carry.
    policy_flags: &'static [&'static str],
    /// Its inherit run, too, is on the stream-json control transport.
    control_always: bool,
}

fn claude_like(label: &str, host_approvals: bool, browser: bool, prompt_flag: bool) -> Expect {
    let control = |extra: &[&'static str]| {
        let mut f = vec![vec!["--input-format", "stream-json"]];
        if prompt_flag {
            f.push(vec!["--permission-prompt-tool", "stdio"]);
        }
        f.extend(extra.iter().map(|x| vec![*x]));
        Expect::Flags(f)
    };
    match label {
        "web_search=allow" => flags(&[&["--allowedTools=WebSearch"]]),
        "web_search=deny" => flags(&[&["--disallowedTools=WebSearch,WebFetch"]]),
        "browser=allow" if browser => flags(&[&["--chrome"]]),
        "browser=deny" if browser => flags(&[&["--no-chrome"]]),
        l if l.ends_with("=ask") && host_approvals => control(&[]),
        l if l.ends_with("=ask") => Expect::Refused,
        l if l.starts_with("permission=")
            || l.starts_with("plan_review=")
            || l.starts_with("question=") =>
        {
            control(&[])
        }
        _ => Expect::Refused,
    }
}

fn on_fake_streamjson(
    make: fn(
        agent_adaptor_drivers::streamjson::Config,
    ) -> agent_adaptor_drivers::streamjson::StreamJsonDriver,
    mut cfg: agent_adaptor_drivers::streamjson::Config,
    opts: String,
) -> Arc<dyn Driver> {
    cfg.command = fake_cli_binary().unwrap();
    cfg.env.insert(OPTS_ENV.into(), opts);
    Arc::new(make(cfg))
}

fn targets() -> Vec<Target> {
    let cursor_fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../drivers/tests/fixtures/cursor/success.jsonl");
    vec![
        Target {
            name: "claude one-shot",
            driver_type: "claude",
            fake: Fake::new(fixtures::path("claude/print-basic.jsonl"), &[]),
            make: |opts| on_fake_streamjson(claude::driver, claude::config(), opts),
            expect: |l| claude_like(l, false, true, true),
            policy_flags: &["--chrome", "--no-chrome", "--permission-prompt-tool"],
            control_always: false,
        },
        Target {
            name: "claude host approvals",
            driver_type: "claude",
            fake: Fake::new(fixtures::path("claude/print-basic.jsonl"), &[]),
            make: |opts| {
                let mut cfg = claude::config();
                cfg.host_approvals = true;
                on_fake_streamjson(claude::driver, cfg, opts)
            },
            expect: |l| claude_like(l, true, true, true),
            policy_flags: &["--chrome", "--no-chrome"],
            control_always: true,
        },
        Target {
            name: "codebuddy one-shot",
            driver_type: "codebuddy",
            fake: Fake::new(fixtures::path("codebuddy/print-basic.jsonl"), &[]),
            make: |opts| on_fake_streamjson(codebuddy::driver, codebuddy::config(), opts),
            expect: |l| claude_like(l, false, false, false),
            policy_flags: &["--input-format", "--chrome"],
            control_always: false,
        },
        Target {
            name: "codex exec",
            driver_type: "codex",
            fake: Fake::new(fixtures::path("codex/exec-basic.jsonl"), &[]),
            make: |opts| {
                let mut cfg = codex::Config {
                    command: fake_cli_binary().unwrap(),
                    transport: codex::Transport::Exec,
                    ..Default::default()
                };
                cfg.env.insert(OPTS_ENV.into(), opts);
                Arc::new(codex::driver(cfg))
            },
            expect: |l| match l {
                "sandbox=read_only" => flags(&[&["-s", "read-only"]]),
                "sandbox=workspace_write" => flags(&[&["-s", "workspace-write"]]),
                "sandbox=unrestricted" => flags(&[&["-s", "danger-full-access"]]),
                "web_search=allow" => flags(&[&["-c", "web_search=\"live\""]]),
                "web_search=deny" => flags(&[&["-c", "web_search=\"disabled\""]]),
                "permission=auto_approve" => flags(&[&["-c", "approval_policy=never"]]),
                _ => Expect::Refused,
            },
            policy_flags: &["-s", "approval_policy=never"],
            control_always: false,
        },
        Target {
            name: "codex app-server",
            driver_type: "codex",
            fake: Fake::new(fixtures::path("codex/app-server-approval.transcript"), &[]),
            make: |opts| {
                let mut cfg = codex::Config {
                    command: fake_cli_binary().unwrap(),
                    ..Default::default()
                };
                cfg.env.insert(OPTS_ENV.into(), opts);
                Arc::new(codex::driver(cfg))
            },
            expect: |l| {
                let server = |params: &[(&'static str, &'static str)], args: &[&[&'static str]]| {
                    Expect::AppServer(params.to_vec(), args.iter().map(|a| a.to_vec()).collect())
                };
                match l {
                    "sandbox=read_only" => server(&[("sandbox", "read-only")], &[]),
                    "sandbox=workspace_write" => server(&[("sandbox", "workspace-write")], &[]),
                    "sandbox=unrestricted" => server(&[("sandbox", "danger-full-access")], &[]),
                    "web_search=allow" => server(&[], &[&["-c", "web_search=\"live\""]]),
                    "web_search=deny" => server(&[], &[&["-c", "web_search=\"disabled\""]]),
                    "permission=ask" | "permission=auto_approve" | "permission=auto_deny" => {
                        server(&[("approvalPolicy", "on-request")], &[&["app-server"]])
                    }
                    _ => Expect::Refused,
                }
            },
            policy_flags: &["web_search=\"live\"", "web_search=\"disabled\""],
            control_always: false,
        },
        Target {
            name: "gemini",
            driver_type: "gemini",
            fake: Fake::new(fixtures::path("gemini/stream-basic.jsonl"), &[]),
            make: |opts| {
                let mut cfg = gemini::Config {
                    command: fake_cli_binary().unwrap(),
                    model: Some("gemini-2.5-flash".into()),
                    ..Default::default()
                };
                cfg.env.insert(OPTS_ENV.into(), opts);
                Arc::new(gemini::driver(cfg))
            },
            expect: |l| match l {
                "sandbox=workspace_write" => flags(&[&["--sandbox"]]),
                "permission=auto_approve" => flags(&[&["--yolo"]]),
                // Headless Gemini denies what it would ask: the default mode.
                "permission=auto_deny" => flags(&[]),
                _ => Expect::Refused,
            },
            policy_flags: &["--sandbox", "--yolo", "--approval-mode"],
            control_always: false,
        },
        Target {
            name: "cursor",
            driver_type: "cursor",
            fake: Fake::new(cursor_fixture, &[]),
            make: |opts| {
                let mut cfg = cursor::Config {
                    command: fake_cli_binary().unwrap(),
                    ..Default::default()
                };
                cfg.env.insert(OPTS_ENV.into(), opts);
                Arc::new(cursor::driver(cfg))
            },
            expect: |l| match l {
                "permission=auto_approve" => flags(&[&["--force"]]),
                _ => Expect::Refused,
            },
            policy_flags: &["--force"],
            control_always: false,
        },
    ]
}

/// Whether a run expected as `expect` is on the stream-json control transport.
fn on_control(expect: &Expect) -> bool {
    matches!(expect, Expect::Flags(f) if f.iter().any(|s| s == &["--input-format", "stream-json"]))
}

fn argv(path: &Path) -> Vec<String> {
    ArgsRecord::load(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .args
}

fn contains(argv: &[String], seq: &[&str]) -> bool {
    argv.windows(seq.len()).any(|w| w == seq)
}

fn thread_start(stdin: &Path) -> Value {
    std::fs::read_to_string(stdin)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|f| f["method"] == "thread/start")
        .unwrap_or_else(|| panic!("no thread/start in {}", stdin.display()))
}

async fn run_on(agent: &Agent, policy: Policy) -> (Vec<Event>, Result<RunResult, Error>) {
    // Approvals a fixture asks for (inherit modes) are approved; the
    // timeout bounds a hang.
    let opts = RunOptions::new()
        .policy(policy)
        .approval_handler(approve_all())
        .timeout(Duration::from_secs(60));
    drain(agent.stream_with("q", opts)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_field_against_every_built_in_driver() {
    for target in targets() {
        let name = target.name;

        // Inherit: the baseline run carries no policy flag.
        let (args, _, opts) = target.fake.next_for(target.control_always);
        let agent = Agent::builder_shared((target.make)(opts)).build().unwrap();
        let (_, outcome) = run_on(&agent, Policy::INHERIT).await;
        outcome.unwrap_or_else(|e| panic!("{name} inherit: {e}"));
        let base = argv(&args);
        for f in target.policy_flags {
            assert!(
                !base.iter().any(|a| a == f),
                "{name} inherit: {f} in {base:?}"
            );
        }

        for (label, policy) in explicit_values() {
            let (args, stdin, opts) = target
                .fake
                .next_for(target.control_always || on_control(&(target.expect)(&label)));
            let driver = (target.make)(opts);
            // The descriptor is the one the driver really reports.
            let declared = driver.descriptor();
            assert_eq!(declared.driver_type, target.driver_type);
            let agent = Agent::builder_shared(driver).build().unwrap();
            let (events, outcome) = run_on(&agent, policy).await;
            match (target.expect)(&label) {
                Expect::Refused => {
                    assert!(events.is_empty(), "{name} {label}");
                    assert_refusal(&outcome.unwrap_err(), target.driver_type, &label);
                    assert!(!args.exists(), "{name} {label}: nothing may be spawned");
                }
                Expect::Flags(want) => {
                    outcome.unwrap_or_else(|e| panic!("{name} {label}: {e}"));
                    let got = argv(&args);
                    for seq in want {
                        assert!(
                            contains(&got, &seq),
                            "{name} {label}: {seq:?} not in {got:?}"
                        );
                    }
                    if label == "permission=auto_deny" {
                        assert!(
                            !got.iter().any(|a| a == "--yolo" || a == "--force"),
                            "{name} {label}: {got:?}"
                        );
                    }
                }
                Expect::AppServer(params, want) => {
                    // Whether a denied turn fails is the provider's call
                    // (Codex cancels it; the replayed capture completes it).
                    if label != "permission=auto_deny" {
                        outcome.unwrap_or_else(|e| panic!("{name} {label}: {e}"));
                    }
                    let got = argv(&args);
                    assert_eq!(got[0], "app-server", "{name} {label}");
                    for seq in want {
                        assert!(
                            contains(&got, &seq),
                            "{name} {label}: {seq:?} not in {got:?}"
                        );
                    }
                    let start = thread_start(&stdin);
                    for (key, value) in params {
                        assert_eq!(start["params"][key], value, "{name} {label}: {start}");
                    }
                    check_codex_decision(&label, &events, &stdin);
                }
            }
        }
    }
}

/// The capture's one approval request: asked (and approved by the handler)
/// under `ask`, answered by core without asking under the auto modes. (The
/// driver's own HITL broadcasts are notices too; core's carry `decided_by`.)
fn check_codex_decision(label: &str, events: &[Event], stdin: &Path) {
    let by_policy = notices(events, notice_kind::APPROVAL_REQUESTED)
        .iter()
        .filter(|n| n.data.as_ref().is_some_and(|d| d["decided_by"] == "policy"))
        .count();
    let answer = std::fs::read_to_string(stdin)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|f| f["result"]["decision"].as_str().map(str::to_owned))
        .unwrap_or_default();
    match label {
        "permission=auto_approve" => {
            assert_eq!(by_policy, 1, "{label}");
            assert_eq!(answer, "accept");
        }
        "permission=auto_deny" => {
            assert_eq!(by_policy, 1, "{label}");
            assert_eq!(answer, "cancel");
        }
        _ => {
            assert_eq!(by_policy, 0, "{label}");
            assert_eq!(answer, "accept", "{label}: the handler approved");
        }
    }
}

/// The LLM agent declares only the permission modes of its tool calls (it
/// asks before each one); every other explicit value is refused before
/// anything starts.
#[tokio::test]
async fn the_llm_driver_declares_only_tool_permissions() {
    use agent_adaptor_llm::{OpenAiChat, Provider};
    let provider = Provider::new("mock", OpenAiChat::new()).base_url("http://127.0.0.1:9");
    let agent = Agent::new(agent_adaptor_llm::agent::LlmDriver::new(provider, "m"));
    for (label, policy) in explicit_values() {
        let (events, outcome) = run_on(&agent, policy).await;
        if label.starts_with("permission=") {
            // Admitted: the run starts (and fails at the closed port).
            assert!(!events.is_empty(), "{label}");
            assert!(
                matches!(outcome, Err(Error::Run(_))),
                "{label}: {outcome:?}"
            );
            continue;
        }
        assert!(events.is_empty(), "{label}");
        assert_refusal(&outcome.unwrap_err(), "llm", &label);
    }
}

/// Instructions are never dropped: a driver that does not declare a carrier
/// for them refuses the run before anything starts (no event, no process),
/// with the typed error naming the driver and the capability: every driver
/// either carries them or refuses. A driver that declares them receives them
/// (`pipeline.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_are_refused_before_launch_by_a_driver_without_a_carrier() {
    for target in targets() {
        let name = target.name;
        let (args, _, opts) = target.fake.next_for(target.control_always);
        let driver = (target.make)(opts);
        if driver.descriptor().instructions {
            // It carries them: proven against its real CLI (real_*_equip.rs, real_common).
            continue;
        }
        let agent = Agent::builder_shared(driver).build().unwrap();
        let run = RunOptions::new()
            .instructions("Answer in French.")
            .timeout(Duration::from_secs(60));
        let (events, outcome) = drain(agent.stream_with("q", run)).await;
        assert!(events.is_empty(), "{name}: refused before RunStarted");
        match outcome.unwrap_err() {
            Error::CapabilityUnsupported { driver, capability } => {
                assert_eq!(
                    (driver.as_str(), capability),
                    (target.driver_type, "instructions")
                );
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(!args.exists(), "{name}: nothing may be spawned");
    }

    // The same refusal from an agent default, on a scripted driver.
    let driver = ScriptedDriver::text_reply("ok");
    let agent = Agent::builder(driver.clone())
        .instructions("Answer in French.")
        .build()
        .unwrap();
    assert!(matches!(
        agent.run("q").await.unwrap_err(),
        Error::CapabilityUnsupported {
            capability: "instructions",
            ..
        }
    ));
    assert!(driver.recorded_requests().is_empty());
}
