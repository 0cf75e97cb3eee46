//! The probe and equipment clauses (CAP-02/03/05–09, SES-09), judged
//! closely: what each finding says, the opt-ins, and a driver without
//! probes (skipped, with the reason).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use agent_adaptor_conformance::reference::Fault;
use agent_adaptor_conformance::{Options, Outcome, Report, test_driver};
use agent_adaptor_driver::{
    CheckStatus, ConfigError, Descriptor, Driver, DriverError, EnvironmentCheck, EnvironmentReport,
    EventSink, Profile, ProfileReport, ProfileSource, QuotaReport, QuotaWindow, Request, Response,
    RunContext, async_trait,
};
use common::{driver, options};

fn findings(report: &Report, id: &str) -> String {
    report
        .clause(id)
        .iter()
        .filter_map(|r| match &r.outcome {
            Outcome::Fail(f) => Some(f.join("\n")),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn hermetic(fault: Option<Fault>, options: Options) -> Report {
    test_driver(move || driver(fault), options).await
}

#[tokio::test]
async fn a_passing_but_unhealthy_environment_is_named() {
    let report = hermetic(Some(Fault::PassingButUnhealthy), Options::new()).await;
    let text = findings(&report, "CAP-03");
    assert!(text.contains("healthy = false"), "{report}");
}

#[tokio::test]
async fn a_probe_that_asks_a_server_is_not_hermetic() {
    let report = hermetic(Some(Fault::LiveQuota), Options::new()).await;
    let text = findings(&report, "CAP-07");
    assert!(text.contains("not deterministic"), "{report}");
}

#[tokio::test]
async fn a_duplicate_config_field_is_named() {
    let report = hermetic(Some(Fault::DuplicateConfigField), Options::new()).await;
    assert!(
        findings(&report, "CAP-08").contains("\"model\" appears twice"),
        "{report}"
    );
}

#[tokio::test]
async fn the_guard_must_follow_the_profile_and_not_the_run_directory() {
    // With the suite's session state (every opt-in).
    let fault = Some(Fault::CodecGuardsEverything);
    let report = hermetic(fault, options(fault)).await;
    let text = findings(&report, "SES-09");
    assert!(text.contains("\"run_dir\""), "{report}");
    // Without a session state supplied, SES-09 is still judged (on a
    // synthetic state): the correct codec passes.
    let report = hermetic(None, Options::new()).await;
    assert!(report.passed("SES-09"), "{report}");
}

#[tokio::test]
async fn the_opt_ins_are_judged() {
    let report = hermetic(
        None,
        Options::new()
            .expected_model("another-model")
            .required_config_fields(["model", "temperature"]),
    )
    .await;
    assert!(
        findings(&report, "CAP-05").contains("expected \"another-model\""),
        "{report}"
    );
    let text = findings(&report, "CAP-08");
    assert!(text.contains("no field \"temperature\""), "{report}");
    assert!(!text.contains("\"model\""), "{report}");
    let report = hermetic(
        None,
        Options::new()
            .expected_model("ref-1")
            .required_config_fields(["model", "reply"]),
    )
    .await;
    report.assert_passed();
    assert!(
        report.passed("CAP-05") && report.passed("CAP-08"),
        "{report}"
    );
}

/// A driver with no probe and no codec at all (and, when `skills`, a
/// declaration of skills it cannot back).
#[derive(Default)]
struct Bare {
    skills: bool,
}

#[async_trait]
impl Driver for Bare {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new("bare", "Bare");
        d.skills = self.skills;
        d
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        Ok(())
    }
    async fn run(
        &self,
        _ctx: RunContext,
        _req: Request,
        _sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        Ok(Response::default())
    }
}

#[tokio::test]
async fn a_driver_without_probes_has_them_skipped_with_the_reason() {
    let report = test_driver(Bare::default, Options::new()).await;
    report.assert_passed();
    for (id, why) in [
        ("CAP-03", "no environment probe"),
        ("CAP-05", "detects no model"),
        ("CAP-07", "no quota probe"),
        ("CAP-08", "no config schema"),
        ("SES-09", "no session codec"),
        ("CAP-06", "no profile report"),
        ("CAP-09", "no skills report"),
    ] {
        let rs = report.clause(id);
        assert!(
            matches!(&rs[..], [r] if matches!(&r.outcome, Outcome::Skip(w) if w.contains(why))),
            "{id}:\n{report}"
        );
    }
    // Declaring no skills and giving no report is truthful.
    assert!(report.passed("CAP-02"), "{report}");
    // Asked for what it cannot give, it fails.
    let report = test_driver(
        Bare::default,
        Options::new()
            .expected_model("m")
            .required_config_fields(["model"]),
    )
    .await;
    assert!(
        report.failed("CAP-05") && report.failed("CAP-08"),
        "{report}"
    );
}

#[tokio::test]
async fn a_panicking_probe_is_reported_not_propagated() {
    struct Panicky;
    #[async_trait]
    impl Driver for Panicky {
        fn descriptor(&self) -> Descriptor {
            Descriptor::new("panicky", "Panicky")
        }
        fn validate_config(&self) -> Result<(), ConfigError> {
            Ok(())
        }
        async fn run(
            &self,
            _ctx: RunContext,
            _req: Request,
            _sink: &dyn EventSink,
        ) -> Result<Response, DriverError> {
            Ok(Response::default())
        }
        fn check_environment(&self) -> Option<EnvironmentReport> {
            panic!("the probe exploded")
        }
    }
    let report = test_driver(|| Panicky, Options::new()).await;
    assert!(
        findings(&report, "CAP-03").contains("the probe exploded"),
        "{report}"
    );
}

#[tokio::test]
async fn skills_declared_without_a_report_fail_cap_02() {
    let report = test_driver(|| Bare { skills: true }, Options::new()).await;
    assert!(
        findings(&report, "CAP-02").contains("gives no skills report"),
        "{report}"
    );
}

#[tokio::test]
async fn a_skills_mode_without_the_declaration_fails_cap_02() {
    let report = hermetic(Some(Fault::UndeclaredSkills), Options::new()).await;
    assert!(
        findings(&report, "CAP-02").contains("not declared but the report has mode Ephemeral"),
        "{report}"
    );
    // The echo laws still hold.
    assert!(report.passed("CAP-09"), "{report}");
}

#[tokio::test]
async fn a_skills_report_that_loses_a_skill_fails_cap_09() {
    let report = hermetic(Some(Fault::SkillsEchoDropsOne), Options::new()).await;
    let text = findings(&report, "CAP-09");
    assert!(text.contains("does not echo the selection"), "{report}");
    assert!(text.contains("beta-2"), "{report}");
}

#[tokio::test]
async fn a_profile_report_of_another_driver_fails_cap_06() {
    let report = hermetic(Some(Fault::ForeignProfileReport), Options::new()).await;
    let text = findings(&report, "CAP-06");
    for kind in ["native", "dedicated", "clone"] {
        assert!(
            text.contains(&format!(
                "profile_report({kind}) names driver type \"another\""
            )),
            "{report}"
        );
    }
}

/// Reports a dedicated home it does not declare, somewhere else.
struct Overclaiming;

#[async_trait]
impl Driver for Overclaiming {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new("over", "Overclaiming")
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        Ok(())
    }
    async fn run(
        &self,
        _ctx: RunContext,
        _req: Request,
        _sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        Ok(Response::default())
    }
    fn profile_report(&self, profile: &Profile) -> Option<ProfileReport> {
        Some(ProfileReport {
            driver_type: "over".into(),
            supported: true,
            dir: Some(
                profile
                    .root()
                    .map_or("/home/u/.over".into(), |r| r.join("elsewhere")),
            ),
            env_var: None,
            source: if profile.is_native() {
                ProfileSource::Default
            } else {
                ProfileSource::Option
            },
        })
    }
}

#[tokio::test]
async fn an_undeclared_or_misplaced_profile_home_fails_cap_06() {
    let report = test_driver(|| Overclaiming, Options::new()).await;
    let text = findings(&report, "CAP-06");
    assert!(
        text.contains("profile_report(dedicated): supported = true but the descriptor declares dedicated = false"),
        "{report}"
    );
    assert!(
        text.contains("not Some(\"/nonexistent/agent-adaptor-conformance/profiles/over\")"),
        "{report}"
    );
}

/// Reports in another driver's name, with a status that hides a failed
/// check and a quota window without a label.
struct Impostor;

#[async_trait]
impl Driver for Impostor {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new("impostor", "Impostor")
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        Ok(())
    }
    async fn run(
        &self,
        _ctx: RunContext,
        _req: Request,
        _sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        Ok(Response::default())
    }
    fn check_environment(&self) -> Option<EnvironmentReport> {
        let mut r = EnvironmentReport::from_checks(
            "someone-else",
            vec![EnvironmentCheck::fail("", "the binary is missing")],
        );
        r.status = CheckStatus::Warn;
        Some(r)
    }
    fn quota(&self) -> Option<QuotaReport> {
        Some(QuotaReport {
            driver_type: "someone-else".into(),
            available: true,
            reason: None,
            windows: vec![QuotaWindow {
                label: String::new(),
                used_percent: Some(140),
                resets_at: None,
            }],
        })
    }
}

#[tokio::test]
async fn reports_in_another_drivers_name_or_hiding_a_failure_fail() {
    let report = test_driver(|| Impostor, Options::new()).await;
    let env = findings(&report, "CAP-03");
    for expected in [
        "names driver type \"someone-else\"",
        "status Warn hides a check at Fail",
        "has no code",
    ] {
        assert!(env.contains(expected), "{expected}:\n{report}");
    }
    let quota = findings(&report, "CAP-07");
    for expected in [
        "names driver type \"someone-else\"",
        "window #0 has no label",
        "140% used",
    ] {
        assert!(quota.contains(expected), "{expected}:\n{report}");
    }
}
