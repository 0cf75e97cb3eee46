//! Declaration clauses judged without running the provider: DRV, CFG, CAP,
//! SO, SES. (The OBS clauses are judged on the runs' payloads.)

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use agent_adaptor_driver::{Driver, SessionCodec, SessionParams, SessionState};

use crate::options::Options;
use crate::record::panic_message;
use crate::report::Report;

/// Call `f`, turning a panic into an error message.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|p| format!("{what} panicked: {}", panic_message(&*p)))
}

const SCOPE: &str = "declarations";

/// Judge every declaration clause on two fresh instances `a` and `b`.
pub(crate) fn check(a: &dyn Driver, b: &dyn Driver, options: &Options, report: &mut Report) {
    descriptor(a, b, report);
    config(a, options, report);
    capabilities(a, b, report);
    crate::probes::check(a, b, options, report);
    crate::equipment::check(a, b, report);
    structured_output(a, report);
    session(a, options, report);
}

/// How long `close_processes` may take (it stops processes gracefully).
const CLOSE_BOUND: std::time::Duration = std::time::Duration::from_secs(30);

/// CAP-11: a driver that declares persistent processes can close them —
/// `close_processes` returns, twice (it is idempotent), within a bound.
pub(crate) async fn close_processes(a: &dyn Driver, report: &mut Report) {
    match guarded("descriptor()", || a.descriptor().process.persistent) {
        Err(e) => report.judge("CAP-11", SCOPE, vec![e]),
        Ok(false) => report.skip("CAP-11", SCOPE, "the driver keeps no process between runs"),
        Ok(true) => {
            let mut f = Vec::new();
            for call in ["first", "second"] {
                let closed = futures::FutureExt::catch_unwind(AssertUnwindSafe(
                    tokio::time::timeout(CLOSE_BOUND, a.close_processes()),
                ))
                .await;
                match closed {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => f.push(format!(
                        "the {call} close_processes() did not return within {CLOSE_BOUND:?}"
                    )),
                    Err(p) => f.push(format!(
                        "the {call} close_processes() panicked: {}",
                        panic_message(&*p)
                    )),
                }
            }
            report.judge("CAP-11", SCOPE, f);
        }
    }
}

fn descriptor(a: &dyn Driver, b: &dyn Driver, report: &mut Report) {
    match guarded("descriptor()", || {
        (a.descriptor(), a.descriptor(), b.descriptor())
    }) {
        Err(e) => {
            report.judge("DRV-01", SCOPE, vec![e.clone()]);
            report.judge("DRV-02", SCOPE, vec![e]);
        }
        Ok((d1, d2, d3)) => {
            let mut f = Vec::new();
            if d1.driver_type.trim().is_empty() {
                f.push("driver_type is empty".to_owned());
            }
            if d1.display_name.trim().is_empty() {
                f.push("display_name is empty".to_owned());
            }
            report.judge("DRV-01", SCOPE, f);
            let mut f = Vec::new();
            if d1 != d2 {
                f.push("two calls on one instance differ".to_owned());
            }
            if d1 != d3 {
                f.push("two instances from the factory differ".to_owned());
            }
            report.judge("DRV-02", SCOPE, f);
        }
    }
    report.not_applicable(
        "DRV-03",
        SCOPE,
        "by construction: descriptor() returns an owned value",
    );
}

fn config(a: &dyn Driver, options: &Options, report: &mut Report) {
    match guarded("validate_config()", || a.validate_config()) {
        Err(e) => {
            report.judge("CFG-01", SCOPE, vec![e]);
            report.skip("CFG-02", SCOPE, "validate_config panicked");
        }
        Ok(r) => {
            report.pass("CFG-01", SCOPE);
            let f = match r {
                Ok(()) => vec![],
                Err(e) => vec![format!("the suite's configuration was rejected: {e}")],
            };
            report.judge("CFG-02", SCOPE, f);
        }
    }
    match &options.invalid_config {
        None => report.skip(
            "CFG-03",
            SCOPE,
            "no invalid configuration supplied (opt-in)",
        ),
        Some(factory) => {
            let f = match guarded("validate_config() of the invalid config", || {
                factory().validate_config()
            }) {
                Err(e) => vec![e],
                Ok(Ok(())) => vec!["an invalid configuration was accepted".to_owned()],
                Ok(Err(_)) => vec![],
            };
            report.judge("CFG-03", SCOPE, f);
        }
    }
}

fn capabilities(a: &dyn Driver, b: &dyn Driver, report: &mut Report) {
    // CAP-01: supports_resume ⇔ stable codec ∧ stable non-empty fingerprint.
    let f = match guarded("session capability probes", || {
        (
            a.descriptor().sessions.supports_resume,
            a.session_codec().map(|c| c.name().to_owned()),
            b.session_codec().map(|c| c.name().to_owned()),
            a.session_config_fingerprint(),
            a.session_config_fingerprint(),
            b.session_config_fingerprint(),
        )
    }) {
        Err(e) => vec![e],
        Ok((declared, ca, cb, fa1, fa2, fb)) => {
            let mut f = Vec::new();
            let codec_ok = matches!((&ca, &cb), (Some(x), Some(y)) if !x.is_empty() && x == y);
            let fp_ok = match (&fa1, &fa2, &fb) {
                (Some(Ok(x)), Some(Ok(y)), Some(Ok(z))) => !x.is_empty() && x == y && x == z,
                _ => false,
            };
            if let Some(Err(e)) = &fa1 {
                f.push(format!("the config fingerprint failed: {e}"));
            }
            if declared && !codec_ok {
                f.push(
                    "supports_resume is declared but there is no stable, named session codec"
                        .into(),
                );
            }
            if declared && !fp_ok {
                f.push("supports_resume is declared but the config fingerprint is missing, empty or unstable".into());
            }
            if !declared && codec_ok && fp_ok {
                f.push(
                    "a codec and a fingerprint exist but supports_resume is not declared".into(),
                );
            }
            f
        }
    };
    report.judge("CAP-01", SCOPE, f);
    match guarded("descriptor()", || a.descriptor().models) {
        Err(e) => report.judge("CAP-04", SCOPE, vec![e]),
        Ok(models) if models.is_empty() => report.skip("CAP-04", SCOPE, "no models declared"),
        Ok(models) => {
            let f = models
                .iter()
                .enumerate()
                .filter(|(_, m)| m.id.trim().is_empty())
                .map(|(i, _)| format!("model #{i} has an empty id"))
                .collect();
            report.judge("CAP-04", SCOPE, f);
        }
    }
    let f = match guarded("stream_capability()", || {
        (
            a.stream_capability(),
            a.stream_capability(),
            b.stream_capability(),
        )
    }) {
        Err(e) => vec![e],
        Ok((x, y, z)) => {
            let mut f = Vec::new();
            if x != y {
                f.push(format!("two calls differ: {x:?} vs {y:?}"));
            }
            if x != z {
                f.push(format!("two instances differ: {x:?} vs {z:?}"));
            }
            f
        }
    };
    report.judge("CAP-10", SCOPE, f);
}

fn structured_output(a: &dyn Driver, report: &mut Report) {
    let so = match guarded("descriptor()", || a.descriptor().structured_output) {
        Ok(so) => so,
        Err(e) => {
            report.judge("SO-01", SCOPE, vec![e]);
            return;
        }
    };
    let mechanism = so.json_schema_native || so.json_schema_prompt_validate;
    let mut f = Vec::new();
    if (so.works_with_run || so.works_with_streaming || so.works_with_hitl) && !mechanism {
        f.push("a works_with_* flag is set but no mechanism is declared".to_owned());
    }
    if mechanism && !so.works_with_run {
        f.push("a mechanism is declared but works_with_run is false".to_owned());
    }
    report.judge("SO-01", SCOPE, f);
    report.skip("SO-02", SCOPE, "needs a live structured run (opt-in)");
    report.not_applicable(
        "SO-03",
        SCOPE,
        "by construction: the suite requests no structured output",
    );
}

fn session(a: &dyn Driver, options: &Options, report: &mut Report) {
    let codec = match guarded("session_codec()", || a.session_codec()) {
        Err(e) => {
            report.judge("SES-01", SCOPE, vec![e]);
            return;
        }
        Ok(None) => {
            for id in [
                "SES-01", "SES-02", "SES-03", "SES-04", "SES-05", "SES-06", "SES-07", "SES-08",
            ] {
                report.skip(id, SCOPE, "the driver has no session codec");
            }
            report.skip("SES-09", SCOPE, "the driver has no session codec");
            return;
        }
        Ok(Some(c)) => c,
    };
    let c: &dyn SessionCodec = &*codec;
    // SES-01
    let f = match guarded("codec name()", || {
        (c.name().to_owned(), c.name().to_owned())
    }) {
        Err(e) => vec![e],
        Ok((x, _)) if x.trim().is_empty() => vec!["the codec name is empty".to_owned()],
        Ok((x, y)) if x != y => vec!["the codec name is not stable".to_owned()],
        Ok(_) => vec![],
    };
    report.judge("SES-01", SCOPE, f);
    // SES-07 then SES-02: empty inputs.
    let empty = guarded("codec on empty inputs", || {
        (
            c.to_params(None),
            c.from_params(&SessionParams::default()),
            c.guard_fingerprint(&SessionParams::default()),
        )
    });
    match empty {
        Err(e) => {
            report.judge("SES-07", SCOPE, vec![e]);
            report.skip("SES-02", SCOPE, "the codec panicked on empty inputs");
        }
        Ok((params, state, _)) => {
            report.pass("SES-07", SCOPE);
            let mut f = Vec::new();
            if !params.is_zero() {
                f.push(format!("to_params(None) is not zero: {params:?}"));
            }
            if let Some(s) = state {
                f.push(format!("from_params(zero) is not None: {s:?}"));
            }
            report.judge("SES-02", SCOPE, f);
        }
    }
    let Some(state) = options.session_state.as_ref() else {
        for id in ["SES-03", "SES-04", "SES-05", "SES-06", "SES-08"] {
            report.skip(
                id,
                SCOPE,
                "no session state supplied (Options::session_state)",
            );
        }
        profile_guard(c, &synthetic_state(), report);
        return;
    };
    session_laws(c, state, options, report);
    profile_guard(c, state, report);
}

/// A resumable state for SES-09 when the suite was given none.
fn synthetic_state() -> SessionState {
    SessionState {
        resume_id: "conformance-session".into(),
        display_id: "conformance-session".into(),
        data: BTreeMap::from([("cwd".to_owned(), "/conformance/repo".to_owned())]),
    }
}

/// The profile's session fingerprint: the data key the guard must follow.
const PROFILE_KEY: &str = "profile_fingerprint";

/// Exact materialization data (a per-run directory, the fingerprint of the
/// exact profile payload): the guard must not follow them, or every resume
/// would be refused.
const MATERIALIZATION_KEYS: [&str; 2] = ["run_dir", "profile_exact_fingerprint"];

/// SES-09: the guard changes with the profile's session fingerprint, and
/// not with exact materialization data.
fn profile_guard(c: &dyn SessionCodec, state: &SessionState, report: &mut Report) {
    let with = |extra: &[(&str, &str)]| {
        let mut s = state.clone();
        for (k, v) in extra {
            s.data.insert((*k).to_owned(), (*v).to_owned());
        }
        c.guard_fingerprint(&c.to_params(Some(&s)))
    };
    let guards = guarded("guard fingerprint", || {
        let base = with(&[(PROFILE_KEY, "profile-a")]);
        let other_profile = with(&[(PROFILE_KEY, "profile-b")]);
        let materialized: Vec<(&str, String, String)> = MATERIALIZATION_KEYS
            .iter()
            .map(|k| {
                (
                    *k,
                    with(&[(PROFILE_KEY, "profile-a"), (k, "/run/one")]),
                    with(&[(PROFILE_KEY, "profile-a"), (k, "/run/two")]),
                )
            })
            .collect();
        (base, other_profile, materialized)
    });
    let f = match guards {
        Err(e) => vec![e],
        Ok((base, other_profile, materialized)) => {
            let mut f = Vec::new();
            if base == other_profile {
                f.push(format!(
                    "changing {PROFILE_KEY:?} does not change the guard: a thread would resume under another profile"
                ));
            }
            for (k, one, two) in materialized {
                if one != two {
                    f.push(format!(
                        "the guard follows {k:?}, exact materialization data: every resume would be refused"
                    ));
                }
            }
            f
        }
    };
    report.judge("SES-09", SCOPE, f);
}

fn session_laws(
    c: &dyn SessionCodec,
    state: &SessionState,
    options: &Options,
    report: &mut Report,
) {
    let laws = guarded("codec round trip", || {
        let params = c.to_params(Some(state));
        let back = c.from_params(&params);
        let again = back.as_ref().map(|s| c.to_params(Some(s)));
        let g1 = c.guard_fingerprint(&params);
        let g2 = c.guard_fingerprint(&params);
        (params, back, again, g1, g2)
    });
    let (params, back, again, g1, g2) = match laws {
        Ok(x) => x,
        Err(e) => {
            for id in ["SES-03", "SES-04", "SES-05", "SES-06", "SES-08"] {
                report.judge(id, SCOPE, vec![e.clone()]);
            }
            return;
        }
    };
    // SES-03
    let mut f = Vec::new();
    if params.resume_id != state.resume_id {
        f.push("to_params lost the resume id".to_owned());
    }
    for (k, v) in &state.data {
        if params.values.get(k) != Some(v) {
            f.push(format!("to_params lost data key {k:?}"));
        }
    }
    if !state.resume_id.is_empty() && params.display_id.is_empty() {
        f.push("a resumable state has no display id".to_owned());
    }
    report.judge("SES-03", SCOPE, f);
    // SES-04
    let f = match (&back, &again) {
        (None, _) => vec!["from_params(to_params(state)) is None".to_owned()],
        (Some(_), Some(p)) if *p != params => {
            vec![format!(
                "params → state → params changed: {params:?} became {p:?}"
            )]
        }
        _ => vec![],
    };
    report.judge("SES-04", SCOPE, f);
    // SES-05
    let mut f = Vec::new();
    if g1.is_empty() {
        f.push("the guard fingerprint is empty".to_owned());
    }
    if g1 != g2 {
        f.push("the guard fingerprint is not deterministic".to_owned());
    }
    report.judge("SES-05", SCOPE, f);
    // SES-06 (opt-in)
    if options.guard_keys.is_empty() {
        report.skip("SES-06", SCOPE, "no guard keys supplied (opt-in)");
    } else {
        let mut f = Vec::new();
        for key in &options.guard_keys {
            let mut changed = state.clone();
            let old = changed.data.get(key).cloned().unwrap_or_default();
            changed.data.insert(key.clone(), format!("{old}-changed"));
            match guarded("guard fingerprint", || {
                c.guard_fingerprint(&c.to_params(Some(&changed)))
            }) {
                Err(e) => f.push(e),
                Ok(g) if g == g1 => f.push(format!("changing {key:?} does not change the guard")),
                Ok(_) => {}
            }
        }
        report.judge("SES-06", SCOPE, f);
    }
    // SES-08 (opt-in)
    if options.session_keys.is_empty() {
        report.skip("SES-08", SCOPE, "no session keys supplied (opt-in)");
    } else {
        let kept: BTreeMap<String, String> = back.map(|s| s.data).unwrap_or_default();
        let f = options
            .session_keys
            .iter()
            .filter(|k| kept.get(*k) != state.data.get(*k) || !state.data.contains_key(*k))
            .map(|k| format!("session key {k:?} did not survive the round trip"))
            .collect();
        report.judge("SES-08", SCOPE, f);
    }
}
