//! The probe clauses, judged without running the provider: CAP-03
//! (environment), CAP-05 (model detection), CAP-07 (quota) and CAP-08
//! (config schema).
//!
//! *Hermetic* is judged by what the suite can see from outside a
//! synchronous call: the probe does not panic, returns within
//! [`PROBE_BOUND`], and gives the same answer twice on one instance and
//! once on another (a probe that asks a server, or counts, does not). A
//! network call made and closed inside the probe is invisible from here;
//! a driver proves that part in its own tests by probing under an empty
//! `HOME` and `PATH` (the built-in drivers do).

use std::fmt::Debug;
use std::time::{Duration, Instant};

use agent_adaptor_driver::{CheckStatus, Driver, FieldKind};

use crate::hermetic::guarded;
use crate::options::Options;
use crate::report::Report;

const SCOPE: &str = "declarations";

/// How long a hermetic probe may take: it reads a few local files.
pub(crate) const PROBE_BOUND: Duration = Duration::from_secs(10);

/// Call a probe twice on `a` and once on `b`: the first answer, and the
/// hermeticity findings. `Err` when a call panicked.
pub(crate) fn hermetic<T: PartialEq + Debug>(
    what: &str,
    a: impl Fn() -> T,
    b: impl FnOnce() -> T,
) -> Result<(T, Vec<String>), String> {
    let start = Instant::now();
    let (x, y, z) = guarded(what, || (a(), a(), b()))?;
    let took = start.elapsed();
    let mut f = Vec::new();
    if x != y {
        f.push(format!(
            "{what} is not deterministic (two calls differ: {x:?} vs {y:?}): a hermetic probe reads local state only"
        ));
    }
    if x != z {
        f.push(format!(
            "{what} differs between two instances ({x:?} vs {z:?})"
        ));
    }
    if took > PROBE_BOUND * 3 {
        f.push(format!(
            "three calls of {what} took {took:?}: a hermetic probe reads local files only (bound {PROBE_BOUND:?} a call)"
        ));
    }
    Ok((x, f))
}

/// Judge CAP-03, CAP-05, CAP-07 and CAP-08.
pub(crate) fn check(a: &dyn Driver, b: &dyn Driver, options: &Options, report: &mut Report) {
    let driver_type = match guarded("descriptor()", || a.descriptor().driver_type) {
        Ok(t) => t,
        Err(e) => {
            for id in ["CAP-03", "CAP-05", "CAP-07", "CAP-08"] {
                report.judge(id, SCOPE, vec![e.clone()]);
            }
            return;
        }
    };
    environment(a, b, &driver_type, report);
    detect_model(a, b, options, report);
    quota(a, b, &driver_type, report);
    config_schema(a, b, options, report);
}

fn same_type(f: &mut Vec<String>, what: &str, reported: &str, driver_type: &str) {
    if reported != driver_type {
        f.push(format!(
            "{what} names driver type {reported:?}, the descriptor {driver_type:?}"
        ));
    }
}

/// CAP-03: hermetic; the driver's type; `Pass` ⇒ healthy, `Fail` ⇒ not;
/// the status no better than its worst check; every check has a code.
fn environment(a: &dyn Driver, b: &dyn Driver, driver_type: &str, report: &mut Report) {
    let (r, mut f) = match hermetic(
        "check_environment()",
        || a.check_environment(),
        || b.check_environment(),
    ) {
        Err(e) => return report.judge("CAP-03", SCOPE, vec![e]),
        Ok((None, _)) => {
            return report.skip("CAP-03", SCOPE, "the driver has no environment probe");
        }
        Ok((Some(r), f)) => (r, f),
    };
    same_type(
        &mut f,
        "the environment report",
        &r.driver_type,
        driver_type,
    );
    if r.healthy != (r.status != CheckStatus::Fail) {
        f.push(format!(
            "status {:?} with healthy = {}: healthy holds exactly when the status is not Fail",
            r.status, r.healthy
        ));
    }
    if let Some(worst) = r.checks.iter().map(|c| c.level).max()
        && worst > r.status
    {
        f.push(format!("status {:?} hides a check at {worst:?}", r.status));
    }
    for (i, c) in r.checks.iter().enumerate() {
        if c.code.trim().is_empty() {
            f.push(format!("check #{i} ({:?}) has no code", c.message));
        }
    }
    report.judge("CAP-03", SCOPE, f);
}

/// CAP-05: hermetic; a detected model is named (and is the expected one,
/// when the suite was told).
fn detect_model(a: &dyn Driver, b: &dyn Driver, options: &Options, report: &mut Report) {
    let (m, mut f) = match hermetic("detect_model()", || a.detect_model(), || b.detect_model()) {
        Err(e) => return report.judge("CAP-05", SCOPE, vec![e]),
        Ok((None, f)) if options.expected_model.is_some() => {
            let mut f = f;
            f.push("no model detected, but one was expected".into());
            return report.judge("CAP-05", SCOPE, f);
        }
        Ok((None, _)) => return report.skip("CAP-05", SCOPE, "the driver detects no model"),
        Ok((Some(m), f)) => (m, f),
    };
    if m.model.trim().is_empty() {
        f.push(format!(
            "the detected model is empty (source {:?})",
            m.source
        ));
    }
    if let Some(expected) = &options.expected_model
        && &m.model != expected
    {
        f.push(format!("detected {:?}, expected {expected:?}", m.model));
    }
    report.judge("CAP-05", SCOPE, f);
}

/// CAP-07: hermetic; the driver's type; an unavailable quota says why and
/// has no windows; labels non-empty; percentages at most 100.
fn quota(a: &dyn Driver, b: &dyn Driver, driver_type: &str, report: &mut Report) {
    let (q, mut f) = match hermetic("quota()", || a.quota(), || b.quota()) {
        Err(e) => return report.judge("CAP-07", SCOPE, vec![e]),
        Ok((None, _)) => return report.skip("CAP-07", SCOPE, "the driver has no quota probe"),
        Ok((Some(q), f)) => (q, f),
    };
    same_type(&mut f, "the quota report", &q.driver_type, driver_type);
    if !q.available {
        if !q.windows.is_empty() {
            f.push("an unavailable quota reports windows".into());
        }
        if q.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            f.push("an unavailable quota does not say why".into());
        }
    }
    for (i, w) in q.windows.iter().enumerate() {
        if w.label.trim().is_empty() {
            f.push(format!("window #{i} has no label"));
        }
        if w.used_percent.is_some_and(|p| p > 100) {
            f.push(format!(
                "window {:?} is {}% used",
                w.label,
                w.used_percent.unwrap_or_default()
            ));
        }
    }
    report.judge("CAP-07", SCOPE, f);
}

/// CAP-08: deterministic; field names non-empty and unique; labels
/// non-empty; a select has options and a default among them; the fields
/// the suite was told are required are there.
fn config_schema(a: &dyn Driver, b: &dyn Driver, options: &Options, report: &mut Report) {
    let (s, mut f) = match hermetic(
        "config_schema()",
        || a.config_schema(),
        || b.config_schema(),
    ) {
        Err(e) => return report.judge("CAP-08", SCOPE, vec![e]),
        Ok((None, _)) if options.required_config_fields.is_empty() => {
            return report.skip("CAP-08", SCOPE, "the driver has no config schema");
        }
        Ok((None, _)) => {
            return report.judge(
                "CAP-08",
                SCOPE,
                vec!["no config schema, but fields are required of it".into()],
            );
        }
        Ok((Some(s), f)) => (s, f),
    };
    let mut seen = std::collections::BTreeSet::new();
    for (i, field) in s.fields.iter().enumerate() {
        if field.name.trim().is_empty() {
            f.push(format!("field #{i} has no name"));
        } else if !seen.insert(field.name.as_str()) {
            f.push(format!("field {:?} appears twice", field.name));
        }
        if field.label.trim().is_empty() {
            f.push(format!("field {:?} has no label", field.name));
        }
        if field.kind == FieldKind::Select {
            if field.options.is_empty() {
                f.push(format!("select field {:?} has no options", field.name));
            }
            if let Some(d) = &field.default
                && !field.options.contains(d)
            {
                f.push(format!(
                    "select field {:?} defaults to {d:?}, not one of its options",
                    field.name
                ));
            }
        } else if !field.options.is_empty() {
            f.push(format!(
                "field {:?} lists options but is a {:?}",
                field.name, field.kind
            ));
        }
    }
    for name in &options.required_config_fields {
        if !seen.contains(name.as_str()) {
            f.push(format!("the schema has no field {name:?}"));
        }
    }
    report.judge("CAP-08", SCOPE, f);
}
