//! `agent-adaptor inspect`: the drivers library's
//! [`Inspector`] for every
//! driver (or one, or a family), printed as a table or as
//! `{"run_would_use": {driver, why}, "drivers":[…]}`, after the verdict:
//! which driver `run` without `--driver` would use, and why. Credentials
//! appear by the names of their variables and files only.

use std::fmt::Write as _;
use std::io::Write as _;

use agent_adaptor_drivers::inspect::{
    AuthState, DriverReport, Inspector, ModelsSource, VersionReport, report_each,
};
use serde_json::json;

use crate::args::InspectArgs;
use crate::error::CliError;
use crate::select::AutoChoice;

/// Run `agent-adaptor inspect`.
pub async fn inspect(args: InspectArgs) -> Result<(), CliError> {
    let inspectors = match &args.driver {
        Some(name) => Inspector::matching(name).map_err(|e| CliError::usage(e.to_string()))?,
        None => Inspector::all(),
    };
    let reports = report_each(&inspectors)
        .await
        .map_err(|e| CliError::failure(e.to_string()))?;
    let (driver, why) = AutoChoice::detect().verdict();
    let text = if args.json {
        let verdict = json!({"driver": driver, "why": why});
        format!(
            "{}\n",
            json!({ "run_would_use": verdict, "drivers": reports })
        )
    } else {
        format!(
            "run would use: {driver} ({why})\n\n{}{}",
            table(&reports),
            looks_for(&reports)
        )
    };
    // A reader that went away (`| head`) is not an error of ours.
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::failure(format!("cannot write the report: {e}")))
        }
        _ => Ok(()),
    }
}

/// The reports as a table, then each failed check with its hint.
fn table(reports: &[DriverReport]) -> String {
    let header = ["DRIVER", "BINARY", "VERSION", "AUTH", "MODEL", "HEALTH"].map(str::to_owned);
    let rows: Vec<[String; 6]> = reports.iter().map(row).collect();
    let mut widths = header.clone().map(|h| h.len());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    for report in reports {
        for c in report.health.iter().filter(|c| !c.ok) {
            let _ = write!(out, "\n{}: {}: {}", report.driver, c.name, c.reason);
            if let Some(hint) = &c.hint {
                let _ = write!(out, " (hint: {hint})");
            }
        }
    }
    if reports.iter().any(|r| !r.healthy()) {
        out.push('\n');
    }
    out
}

/// What each driver that is not ready looks for: its programs on `PATH`
/// and its credentials (variables and files), so a missing piece reads as
/// missing, not as broken.
fn looks_for(reports: &[DriverReport]) -> String {
    let mut out = String::new();
    for r in reports.iter().filter(|r| !r.healthy()) {
        let mut wants = Vec::new();
        if let Some(b) = r.binary.as_ref().filter(|b| b.path.is_none()) {
            wants.push(format!("{} on PATH", b.looked_for.join(" or ")));
        }
        if r.auth.state == AuthState::Absent && !r.auth.looked.is_empty() {
            wants.push(format!("credentials in {}", r.auth.looked.join(", ")));
        }
        if !wants.is_empty() {
            if out.is_empty() {
                out.push_str("\nnot ready, missing:\n");
            }
            let _ = writeln!(out, "  {}: {}", r.driver, wants.join("; "));
        }
    }
    out
}

fn row(r: &DriverReport) -> [String; 6] {
    let binary = match &r.binary {
        None => "-".to_owned(),
        Some(b) => match &b.path {
            Some(path) => path.display().to_string(),
            None => "not found".to_owned(),
        },
    };
    let version = match r.binary.as_ref().map(|b| &b.version) {
        None => "-".to_owned(),
        Some(VersionReport::Known { version }) => version.clone(),
        Some(VersionReport::Unknown { .. }) => "unknown".to_owned(),
    };
    let auth = match (r.auth.state, &r.auth.source) {
        (AuthState::Present, Some(source)) => format!("present ({source})"),
        (AuthState::Expired, _) => "expired".to_owned(),
        (AuthState::Present, None) => "present".to_owned(),
        (AuthState::Absent, _) => "absent".to_owned(),
        (AuthState::Unknown, _) => "unknown".to_owned(),
    };
    let model = match (&r.models.source, r.models.models.first()) {
        (ModelsSource::None { .. }, _) | (_, None) => "-".to_owned(),
        (_, Some(m)) => m.clone(),
    };
    let ok = r.health.iter().filter(|c| c.ok).count();
    let health = format!("{ok}/{} ok", r.health.len());
    [r.driver.clone(), binary, version, auth, model, health]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::ProviderName;

    /// The inspector's LLM providers read the key variables the `llm`
    /// driver of this CLI reads.
    #[tokio::test]
    async fn llm_providers_are_inspected_by_the_cli_s_key_variables() {
        for p in ProviderName::ALL {
            let Ok(inspector) = Inspector::named(&format!("llm:{}", p.as_str())) else {
                // `openai-responses` shares `llm:openai`'s key.
                assert_eq!(p.key_var(), "OPENAI_API_KEY");
                continue;
            };
            let report = inspector.with_host_env(Default::default()).report().await;
            assert_eq!(report.auth.looked, [format!("${}", p.key_var())]);
        }
    }
}
