//! The error types `result.rs` aggregates live in leaf modules: none of them
//! imports the result, approval, sink or agent modules, so `result.rs`
//! depends on them without a circle back through `thread`, `structured` or
//! `policy`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

/// The leaves, relative to `src/`.
const LEAVES: [&str; 3] = ["thread/error.rs", "structured_error.rs", "policy/record.rs"];

/// Modules a leaf must not name.
const ABOVE: [&str; 8] = [
    "crate::result",
    "crate::approval",
    "crate::sink",
    "crate::agent",
    "crate::thread::",
    "crate::structured::",
    "crate::policy::",
    "super::super",
];

fn source(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The lines of `text` that are code (not comments).
fn code(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

#[test]
fn the_error_leaves_import_nothing_above_them() {
    for leaf in LEAVES {
        let text = source(leaf);
        for line in code(&text) {
            for above in ABOVE {
                assert!(!line.contains(above), "{leaf} names {above}: {line}");
            }
        }
    }
}

#[test]
fn result_names_the_leaves_not_the_modules_above_them() {
    let text = source("result.rs");
    for line in code(&text) {
        for above in [
            "crate::thread::ThreadError",
            "crate::structured::",
            "crate::policy::DecisionRecord",
            "crate::policy::DecidedBy",
        ] {
            assert!(!line.contains(above), "result.rs names {above}: {line}");
        }
    }
}
