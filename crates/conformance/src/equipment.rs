//! The equipment clauses, judged without running the provider: CAP-02
//! (skills declared truthfully), CAP-06 (profile reports) and CAP-09 (the
//! skills report's echo laws). Each probe call is judged hermetic as in
//! [`crate::probes`]: no panic, a bound, the same answer twice and on
//! another instance.

use std::path::PathBuf;

use agent_adaptor_driver::{
    Descriptor, Driver, Profile, ProfileSource, SkillEntry, SkillMode, SkillRef,
};

use crate::hermetic::guarded;
use crate::probes::hermetic;
use crate::report::Report;

const SCOPE: &str = "declarations";

/// Judge CAP-02, CAP-06 and CAP-09.
pub(crate) fn check(a: &dyn Driver, b: &dyn Driver, report: &mut Report) {
    let d = match guarded("descriptor()", || a.descriptor()) {
        Ok(d) => d,
        Err(e) => {
            for id in ["CAP-02", "CAP-06", "CAP-09"] {
                report.judge(id, SCOPE, vec![e.clone()]);
            }
            return;
        }
    };
    skills(a, b, &d, report);
    profiles(a, b, &d, report);
}

/// A selection of two skills whose directories do not exist: the report
/// is computed from the selection alone.
fn selection() -> Vec<SkillRef> {
    ["alpha", "beta-2"]
        .iter()
        .map(|name| SkillRef {
            name: (*name).to_owned(),
            description: format!("The {name} skill of the conformance suite"),
            dir: PathBuf::from("/nonexistent/agent-adaptor-conformance/skills").join(name),
            fingerprint: format!("sha256:{name}"),
        })
        .collect()
}

fn echo(selection: &[SkillRef]) -> Vec<SkillEntry> {
    selection
        .iter()
        .map(|s| SkillEntry {
            name: s.name.clone(),
            description: s.description.clone(),
            fingerprint: s.fingerprint.clone(),
        })
        .collect()
}

/// CAP-02: declared skills ⇔ a report with a mode; CAP-09: its echo laws.
fn skills(a: &dyn Driver, b: &dyn Driver, d: &Descriptor, report: &mut Report) {
    let empty = hermetic("skills(&[])", || a.skills(&[]), || b.skills(&[]));
    let (r, mut f9) = match empty {
        Err(e) => {
            report.judge("CAP-02", SCOPE, vec![e.clone()]);
            return report.judge("CAP-09", SCOPE, vec![e]);
        }
        Ok(x) => x,
    };
    let mode = r.as_ref().map(|r| r.mode);
    let f2 = match (d.skills, mode) {
        (true, None) => vec!["skills are declared but the driver gives no skills report".into()],
        (true, Some(SkillMode::Unsupported)) => {
            vec!["skills are declared but the report's mode is unsupported".into()]
        }
        (false, Some(m)) if m != SkillMode::Unsupported => vec![format!(
            "skills are not declared but the report has mode {m:?}"
        )],
        _ => vec![],
    };
    report.judge("CAP-02", SCOPE, f2);
    let Some(r) = r else {
        return report.skip("CAP-09", SCOPE, "the driver gives no skills report");
    };
    if r.driver_type != d.driver_type {
        f9.push(format!(
            "the skills report names driver type {:?}, the descriptor {:?}",
            r.driver_type, d.driver_type
        ));
    }
    if !r.skills.is_empty() {
        f9.push(format!(
            "the empty selection gives skills: {:?}",
            r.skills.iter().map(|s| &s.name).collect::<Vec<_>>()
        ));
    }
    let sel = selection();
    match hermetic("skills(selection)", || a.skills(&sel), || b.skills(&sel)) {
        Err(e) => f9.push(e),
        Ok((None, _)) => f9.push("a report for the empty selection but none for two skills".into()),
        Ok((Some(s), more)) => {
            f9.extend(more);
            if s.mode != r.mode {
                f9.push(format!(
                    "the mode changes with the selection: {:?} then {:?}",
                    r.mode, s.mode
                ));
            }
            let expected = if s.mode == SkillMode::Unsupported {
                Vec::new()
            } else {
                echo(&sel)
            };
            if s.skills != expected {
                f9.push(format!(
                    "the report does not echo the selection: {:?} for {:?}",
                    s.skills, expected
                ));
            }
        }
    }
    report.judge("CAP-09", SCOPE, f9);
}

/// The profiles CAP-06 asks about; the roots are never created.
fn asked() -> [Profile; 3] {
    let root = PathBuf::from("/nonexistent/agent-adaptor-conformance/profiles");
    [
        Profile::Native,
        Profile::Dedicated { root: root.clone() },
        Profile::Clone { root },
    ]
}

/// CAP-06: for each profile, the driver's type; supported ⇔ a source and a
/// dir; a non-native profile is supported exactly when declared, at
/// `<root>/<driver type>`, from the profile option.
fn profiles(a: &dyn Driver, b: &dyn Driver, d: &Descriptor, report: &mut Report) {
    let mut f = Vec::new();
    for profile in asked() {
        let kind = profile.kind();
        let what = format!("profile_report({kind})");
        let r = match hermetic(
            &what,
            || a.profile_report(&profile),
            || b.profile_report(&profile),
        ) {
            Err(e) => {
                f.push(e);
                continue;
            }
            Ok((None, _)) if profile.is_native() => {
                return report.skip("CAP-06", SCOPE, "the driver gives no profile report");
            }
            Ok((None, _)) => {
                f.push(format!("a native profile report but none for {kind}"));
                continue;
            }
            Ok((Some(r), more)) => {
                f.extend(more);
                r
            }
        };
        if r.driver_type != d.driver_type {
            f.push(format!(
                "{what} names driver type {:?}, the descriptor {:?}",
                r.driver_type, d.driver_type
            ));
        }
        if r.supported == (r.source == ProfileSource::Unsupported) {
            f.push(format!(
                "{what}: supported = {} with source {:?}",
                r.supported, r.source
            ));
        }
        if r.supported && r.dir.as_ref().is_none_or(|p| p.as_os_str().is_empty()) {
            f.push(format!("{what} is supported but names no directory"));
        }
        let declared = match &profile {
            Profile::Native => {
                if r.source == ProfileSource::Option {
                    f.push(format!("{what} claims the profile option as its source"));
                }
                continue;
            }
            Profile::Dedicated { .. } => d.profiles.dedicated,
            Profile::Clone { .. } => d.profiles.clone,
        };
        if r.supported != declared {
            f.push(format!(
                "{what}: supported = {} but the descriptor declares {kind} = {declared}",
                r.supported
            ));
        }
        if r.supported {
            let home = profile.home(&d.driver_type);
            if r.dir != home {
                f.push(format!("{what} names {:?}, not {home:?}", r.dir));
            }
            if r.source != ProfileSource::Option {
                f.push(format!(
                    "{what} has source {:?}, not the profile option",
                    r.source
                ));
            }
        }
    }
    report.judge("CAP-06", SCOPE, f);
}
