//! The reference driver's probes (CAP-02/03/05–09), with their faults.

use std::sync::atomic::{AtomicU64, Ordering};

use agent_adaptor_driver::{
    CheckStatus, ConfigField, ConfigSchema, DetectedModel, EnvironmentCheck, EnvironmentReport,
    FieldKind, ModelSource, Profile, ProfileReport, ProfileSource, QuotaReport, QuotaWindow,
    SkillEntry, SkillMode, SkillRef, SkillsReport,
};

use super::{Fault, ReferenceConfig};

const TYPE: &str = "reference";

/// CAP-03: a simulated provider needs nothing from the machine.
pub(super) fn environment(fault: Option<Fault>) -> EnvironmentReport {
    let mut r = EnvironmentReport::from_checks(
        TYPE,
        vec![EnvironmentCheck::pass(
            "provider",
            "the provider is simulated in process",
        )],
    );
    if fault == Some(Fault::PassingButUnhealthy) {
        r.status = CheckStatus::Pass;
        r.healthy = false;
    }
    r
}

/// CAP-05: the configured model.
pub(super) fn detect_model(config: &ReferenceConfig, fault: Option<Fault>) -> DetectedModel {
    DetectedModel {
        model: if fault == Some(Fault::EmptyDetectedModel) {
            String::new()
        } else {
            config.model.clone()
        },
        provider: TYPE.into(),
        source: ModelSource::Configured,
    }
}

/// CAP-07: no quota to know — or, with its fault, one that changes on
/// every call, as a probe asking a server would.
pub(super) fn quota(fault: Option<Fault>, calls: &AtomicU64) -> QuotaReport {
    if fault != Some(Fault::LiveQuota) {
        return QuotaReport::unavailable(TYPE, "the simulated provider has no quota");
    }
    let n = calls.fetch_add(1, Ordering::Relaxed);
    QuotaReport {
        driver_type: TYPE.into(),
        available: true,
        reason: None,
        windows: vec![QuotaWindow {
            label: "5h".into(),
            used_percent: Some(u8::try_from(n % 100).unwrap_or_default()),
            resets_at: None,
        }],
    }
}

/// CAP-08: the fields of [`ReferenceConfig`].
pub(super) fn config_schema(fault: Option<Fault>) -> ConfigSchema {
    let mut fields = vec![
        ConfigField::new(
            "model",
            "Model",
            FieldKind::Text,
            "The model name it reports",
        )
        .required(),
        ConfigField::new("reply", "Reply", FieldKind::Textarea, "The answer it gives")
            .default_value(ReferenceConfig::default().reply),
    ];
    if fault == Some(Fault::DuplicateConfigField) {
        fields.push(ConfigField::new(
            "model",
            "Model again",
            FieldKind::Text,
            "a second field of the same name",
        ));
    }
    ConfigSchema { fields }
}

/// CAP-06: the simulated provider's home: `REFERENCE_HOME` natively (a
/// name only: nothing is read), `<root>/reference` under a profile.
pub(super) fn profile_report(profile: &Profile, fault: Option<Fault>) -> ProfileReport {
    let (dir, source) = match profile.home(TYPE) {
        Some(home) => (home, ProfileSource::Option),
        None => ("/reference/home".into(), ProfileSource::Default),
    };
    ProfileReport {
        driver_type: if fault == Some(Fault::ForeignProfileReport) {
            "another".into()
        } else {
            TYPE.into()
        },
        supported: true,
        dir: Some(dir),
        env_var: Some("REFERENCE_HOME".into()),
        source,
    }
}

/// CAP-02/09: skills are materialized per run (in the simulation); the
/// report echoes the selection — but for its fault, which loses the last.
pub(super) fn skills(selection: &[SkillRef], fault: Option<Fault>) -> SkillsReport {
    let mut skills: Vec<SkillEntry> = selection
        .iter()
        .map(|s| SkillEntry {
            name: s.name.clone(),
            description: s.description.clone(),
            fingerprint: s.fingerprint.clone(),
        })
        .collect();
    if fault == Some(Fault::SkillsEchoDropsOne) {
        skills.pop();
    }
    SkillsReport {
        driver_type: TYPE.into(),
        mode: SkillMode::Ephemeral,
        skills,
    }
}
