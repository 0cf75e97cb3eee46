//! The suite's verdicts: one [`ClauseResult`] per clause, gathered in a [`Report`].

use std::fmt;

/// The verdict on one clause.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The clause holds.
    Pass,
    /// The clause is broken; each string is one finding.
    Fail(Vec<String>),
    /// The clause is not judged here, for now; the reason says why (a
    /// missing opt-in, an SPI surface still to come).
    Skip(String),
    /// The clause cannot be broken through the driver SPI, so there is
    /// nothing to judge; the reason names the construction that holds it.
    NotApplicable(String),
}

/// One clause's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClauseResult {
    /// The stable clause id (`"EVT-03"` …).
    pub id: &'static str,
    /// Which check produced it (e.g. the run case's name), for the report.
    pub scope: String,
    /// The verdict.
    pub outcome: Outcome,
}

/// Every verdict of one suite run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The verdicts, in the order they were produced.
    pub results: Vec<ClauseResult>,
}

impl Report {
    pub(crate) fn push(&mut self, id: &'static str, scope: &str, outcome: Outcome) {
        debug_assert!(
            crate::catalogue::title(id).is_some(),
            "clause {id} is not in the catalogue"
        );
        self.results.push(ClauseResult {
            id,
            scope: scope.to_owned(),
            outcome,
        });
    }

    pub(crate) fn pass(&mut self, id: &'static str, scope: &str) {
        self.push(id, scope, Outcome::Pass);
    }

    pub(crate) fn skip(&mut self, id: &'static str, scope: &str, why: impl Into<String>) {
        self.push(id, scope, Outcome::Skip(why.into()));
    }

    pub(crate) fn not_applicable(&mut self, id: &'static str, scope: &str, why: &str) {
        self.push(id, scope, Outcome::NotApplicable(why.to_owned()));
    }

    /// `Pass` when `findings` is empty, else `Fail`.
    pub(crate) fn judge(&mut self, id: &'static str, scope: &str, findings: Vec<String>) {
        let outcome = if findings.is_empty() {
            Outcome::Pass
        } else {
            Outcome::Fail(findings)
        };
        self.push(id, scope, outcome);
    }

    /// Append another report's verdicts.
    pub fn extend(&mut self, other: Report) {
        self.results.extend(other.results);
    }

    /// Every failed verdict.
    pub fn failures(&self) -> Vec<&ClauseResult> {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Fail(_)))
            .collect()
    }

    /// The verdicts for `id`.
    pub fn clause(&self, id: &str) -> Vec<&ClauseResult> {
        self.results.iter().filter(|r| r.id == id).collect()
    }

    /// True when `id` was judged and failed at least once.
    pub fn failed(&self, id: &str) -> bool {
        self.clause(id)
            .iter()
            .any(|r| matches!(r.outcome, Outcome::Fail(_)))
    }

    /// True when `id` was judged, never failed, and passed at least once.
    pub fn passed(&self, id: &str) -> bool {
        let rs = self.clause(id);
        rs.iter().any(|r| r.outcome == Outcome::Pass)
            && !rs.iter().any(|r| matches!(r.outcome, Outcome::Fail(_)))
    }

    /// Panic with a readable list of every failure, if there is one. Use it
    /// at the end of a driver's conformance test.
    #[track_caller]
    pub fn assert_passed(&self) {
        let failures = self.failures();
        if !failures.is_empty() {
            let mut msg = format!("{} conformance clause(s) failed:\n", failures.len());
            for f in failures {
                msg.push_str(&format!("{f}\n"));
            }
            panic!("{msg}");
        }
    }
}

impl fmt::Display for ClauseResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let title = crate::catalogue::title(self.id).unwrap_or("?");
        match &self.outcome {
            Outcome::Pass => write!(f, "PASS {} [{}] {title}", self.id, self.scope),
            Outcome::Skip(why) => write!(f, "SKIP {} [{}] {title}: {why}", self.id, self.scope),
            Outcome::NotApplicable(why) => {
                write!(f, "N/A  {} [{}] {title}: {why}", self.id, self.scope)
            }
            Outcome::Fail(findings) => {
                write!(f, "FAIL {} [{}] {title}", self.id, self.scope)?;
                for x in findings {
                    write!(f, "\n     - {x}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.results {
            writeln!(f, "{r}")?;
        }
        Ok(())
    }
}
