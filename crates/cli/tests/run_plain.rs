//! `agent-adaptor run` with stderr not a terminal: line-based output
//! without ANSI, tools rendered by kind with ✓ or ✗ (the playground's
//! `list_files` host tool, approved or denied by `--approve`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

#[test]
fn plain_output_is_lines_with_a_check_for_an_approved_tool() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("README.md"), "hi").unwrap();
    let out = support::run(
        home.path(),
        &["run", "--playground", "--approve", "all", "hello"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
    let err = support::stderr(&out);
    assert!(!err.contains('\u{1b}'), "no ANSI: {err:?}");
    assert!(err.contains("approval approved (decided by"), "{err}");
    assert!(err.contains(r#"✓ list_files {"path":"."}"#), "{err}");
    assert!(
        err.contains("    README.md"),
        "the result under the tool: {err}"
    );
    assert!(!err.contains("✗"), "{err}");
}

#[test]
fn plain_output_marks_a_denied_tool_with_a_cross() {
    let home = tempfile::tempdir().unwrap();
    let out = support::run(
        home.path(),
        &["run", "--playground", "--approve", "none", "hello"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
    let err = support::stderr(&out);
    assert!(!err.contains('\u{1b}'), "no ANSI: {err:?}");
    assert!(err.contains("approval rejected"), "{err}");
    assert!(err.contains(r#"✗ list_files {"path":"."}"#), "{err}");
    assert!(!err.contains("✓"), "{err}");
}
