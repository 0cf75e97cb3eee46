//! The clause catalogue: every clause id the suite can report, with its title.

/// Every clause, in catalogue order: `(id, title)`.
pub const CLAUSES: &[(&str, &str)] = &[
    (
        "DRV-01",
        "the descriptor names a driver type and a display name",
    ),
    (
        "DRV-02",
        "the descriptor is deterministic across calls and across instances",
    ),
    ("DRV-03", "descriptor snapshots share no mutable state"),
    ("CFG-01", "validate_config never panics"),
    (
        "CFG-02",
        "validate_config accepts the configuration the suite was given",
    ),
    (
        "CFG-03",
        "validate_config rejects an invalid configuration (opt-in)",
    ),
    (
        "CAP-01",
        "supports_resume holds exactly when a stable codec and a stable, non-empty config fingerprint exist",
    ),
    ("CAP-02", "skills support is declared truthfully"),
    ("CAP-03", "the environment probe is hermetic and truthful"),
    ("CAP-04", "every declared model has a non-empty id"),
    ("CAP-05", "model detection is hermetic"),
    ("CAP-06", "the profile report is truthful"),
    ("CAP-07", "the quota probe is hermetic"),
    ("CAP-08", "the config schema is well formed"),
    ("CAP-09", "skill operations obey their echo laws"),
    (
        "CAP-10",
        "the stream capability is deterministic across calls and instances",
    ),
    (
        "CAP-11",
        "a persistent-process driver can close its processes",
    ),
    (
        "SO-01",
        "structured-output declarations are consistent: every works-with flag needs a mechanism, a mechanism works with run",
    ),
    (
        "SO-02",
        "a live native structured run yields valid native output (opt-in)",
    ),
    ("SO-03", "the suite never requests an undeclared mechanism"),
    (
        "EQP-01",
        "the equipment declaration core refuses by is coherent: MCP options need a transport, clone needs dedicated",
    ),
    (
        "EQP-02",
        "a driver that declares an instructions carrier accepts a run that sets instructions",
    ),
    ("SES-01", "the codec has a stable, non-empty name"),
    (
        "SES-02",
        "to_params(None) is zero and from_params(zero) is None",
    ),
    (
        "SES-03",
        "to_params keeps the resume id and data; a resumable state has a display id",
    ),
    ("SES-04", "params → state → params is lossless"),
    (
        "SES-05",
        "the guard fingerprint is non-empty and deterministic",
    ),
    (
        "SES-06",
        "changing a guard key changes the guard fingerprint (opt-in)",
    ),
    ("SES-07", "empty codec inputs never panic"),
    (
        "SES-08",
        "the required session keys survive the round trip (opt-in)",
    ),
    (
        "SES-09",
        "exact profile materialization stays separate from the session guard",
    ),
    ("EVT-01", "run.started exactly once, before anything else"),
    (
        "EVT-02",
        "exactly one terminal frame, last; run.error carries an error",
    ),
    (
        "EVT-03",
        "text lifecycles: id required, opened once, content and end only while open",
    ),
    ("EVT-04", "text content has a non-empty delta"),
    (
        "EVT-05",
        "tool calls: start needs id and name; args need an open call and a delta; end and result need a known id",
    ),
    ("EVT-06", "reasoning lifecycles obey the text rules"),
    ("EVT-07", "steps have names and are paired"),
    ("EVT-08", "HITL broadcasts carry their envelopes"),
    ("EVT-09", "drivers speak only as the assistant"),
    (
        "EVT-10",
        "drivers do not assign sequence numbers or timestamps",
    ),
    (
        "EVT-11",
        "every lifecycle is closed before the terminal frame",
    ),
    (
        "EVT-12",
        "no reasoning, tool-argument or HITL frames when the capability is declared false",
    ),
    ("EVT-13", "run frames carry no message or tool-call id"),
    (
        "EVT-14",
        "no argument delta after complete args; one result per tool call",
    ),
    ("EVT-15", "custom kinds have their own, non-canonical name"),
    (
        "OBS-01",
        "observation payloads only where the transport declares them",
    ),
    ("OBS-02", "observation fields only on their kinds"),
    ("OBS-03", "capability observations are well formed"),
    ("OBS-04", "capability observation lifecycles are complete"),
    ("OBS-05", "todo snapshots are well formed"),
    ("OBS-06", "todo revisions start at 1 and advance by 1"),
    (
        "OBS-07",
        "subagents start once and finish once, with valid scope and name",
    ),
    (
        "OBS-08",
        "images carry an image mime type and exactly one of data and uri",
    ),
    ("RUN-01", "raw chunks come only from stdout or stderr"),
    ("RUN-02", "item events carry valid transcript items"),
    ("RUN-03", "drivers leave the event sequence to core"),
    (
        "RUN-04",
        "the emitted transcript items equal the returned transcript, item by item",
    ),
    (
        "RUN-05",
        "a cancelled run returns within the grace period and leaves no process of its group running (opt-in)",
    ),
    ("TRN-01", "text-bearing transcript kinds have text"),
    ("TRN-02", "tool calls name the tool"),
    ("TRN-03", "tool results name the tool call"),
    ("TRN-04", "only assistant and thinking items are deltas"),
    (
        "TRN-05",
        "a result item names the session the run's init item announced",
    ),
    (
        "RSP-01",
        "a valid checkpoint has a resume id and a clean outcome",
    ),
    (
        "RSP-02",
        "a human-decision failure detail exists exactly for decision failure codes",
    ),
    (
        "RSP-03",
        "the output is never the raw stdout or the terminal JSON",
    ),
    (
        "RSP-04",
        "a valid checkpoint round-trips through the codec with a non-empty guard",
    ),
    (
        "RSP-05",
        "the terminal payload names the official event and keeps its exact JSON, as it appeared on stdout",
    ),
    (
        "CASE-01",
        "a hermetic run case ends the way the case expects (success or failure)",
    ),
    ("LIV-01", "a live run succeeds cleanly (opt-in)"),
    ("LIV-02", "a live run answers what was asked (opt-in)"),
    (
        "LIV-03",
        "a live run of a resume-capable driver yields a valid checkpoint (opt-in)",
    ),
];

/// The title of clause `id`, if it exists.
pub fn title(id: &str) -> Option<&'static str> {
    CLAUSES.iter().find(|(c, _)| *c == id).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_docs_table_lists_exactly_the_catalogue() {
        let doc = include_str!("../CLAUSES.md");
        let ids: Vec<&str> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("| "))
            .filter_map(|l| l.split(' ').next())
            .filter(|id| id.contains('-'))
            .collect();
        let catalogue: Vec<&str> = super::CLAUSES.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, catalogue);
        let mut unique = catalogue.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), catalogue.len(), "duplicate clause id");
    }
}
