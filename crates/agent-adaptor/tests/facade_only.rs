//! README.md's Rust blocks and the examples reach everything through the
//! facade: none names a sub-crate (`agent_adaptor_drivers::…`), so a user
//! copying them depends on `agent-adaptor` alone.

use std::path::{Path, PathBuf};

/// `file:line: text` of every line naming a sub-crate path; in Markdown,
/// only the lines of ```` ```rust ```` blocks count.
fn sub_crate_paths(file: &Path, text: &str) -> Vec<String> {
    let markdown = file.extension().is_some_and(|x| x == "md");
    let mut in_rust = !markdown;
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            if markdown && line.starts_with("```") {
                in_rust = line.starts_with("```rust");
                return false;
            }
            in_rust && line.contains("agent_adaptor_")
        })
        .map(|(i, line)| format!("{}:{}: {}", file.display(), i + 1, line.trim()))
        .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn readme_and_examples_use_only_the_facade() {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![crate_dir.join("../../README.md")];
    let examples = crate_dir.join("examples");
    let mut found = std::fs::read_dir(&examples)
        .unwrap_or_else(|e| panic!("{}: {e}", examples.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect::<Vec<_>>();
    assert!(found.len() >= 5, "the examples are missing: {found:?}");
    found.sort();
    files.extend(found);
    let offenders: Vec<String> = files
        .iter()
        .flat_map(|f| sub_crate_paths(f, &read(f)))
        .collect();
    assert!(
        offenders.is_empty(),
        "use agent_adaptor::… instead of a sub-crate:\n{}",
        offenders.join("\n")
    );
}
