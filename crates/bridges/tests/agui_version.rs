//! AG-UI version alignment (streaming guide §11): the AG-UI packages our
//! interop tests run are pinned in `tests/bridges/package-lock.json`; this
//! test fails when that pin (or what is installed) leaves the version the
//! bridge follows ([`AGUI_CORE_VERSION`], protocol [`PROTOCOL_VERSION`]).
//!
//! Upgrading deliberately: bump the pins in tests/bridges/package.json, run
//! `npm install --package-lock-only` and `scripts/install-bridge-clients`,
//! re-run the AG-UI tests (agui_client.rs exercises every event we emit
//! through the client's schemas and verifier), then update
//! `AGUI_CORE_VERSION` / `PROTOCOL_VERSION` in `src/agui/wire.rs` and the
//! module docs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/agui_node.rs"]
mod agui_node;

use agent_adaptor_bridges::agui::{AGUI_CORE_VERSION, PROTOCOL_VERSION};
use serde_json::Value;

/// The AG-UI packages that must move together (they pin each other).
const PACKAGES: [&str; 2] = ["@ag-ui/core", "@ag-ui/client"];

fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

#[test]
fn the_lockfile_pins_the_ag_ui_version_the_bridge_follows() {
    let dir = agui_node::bridges_dir();
    let manifest = read_json(&dir.join("package.json"));
    let lock = read_json(&dir.join("package-lock.json"));
    for pkg in PACKAGES {
        assert_eq!(
            manifest["dependencies"][pkg].as_str(),
            Some(AGUI_CORE_VERSION),
            "tests/bridges/package.json must pin {pkg} to exactly {AGUI_CORE_VERSION}"
        );
        let locked = lock["packages"][format!("node_modules/{pkg}")]["version"]
            .as_str()
            .unwrap_or_else(|| panic!("{pkg} is not in tests/bridges/package-lock.json"));
        assert_eq!(
            locked, AGUI_CORE_VERSION,
            "package-lock.json has {pkg} {locked}; the bridge follows {AGUI_CORE_VERSION} \
             (see this file's docs to upgrade deliberately)"
        );
    }
}

#[test]
fn the_installed_ag_ui_packages_are_the_version_and_protocol_the_bridge_follows() {
    // What the interop tests really run, read from node_modules (not the
    // lockfile's intent): each package's own version and declared protocol.
    for pkg in PACKAGES {
        agui_node::require_node_package(pkg);
        let installed = read_json(
            &agui_node::bridges_dir()
                .join("node_modules")
                .join(pkg)
                .join("package.json"),
        );
        assert_eq!(
            installed["version"].as_str(),
            Some(AGUI_CORE_VERSION),
            "the installed {pkg} is not the version the bridge follows \
             (see this file's docs to upgrade deliberately)"
        );
        assert_eq!(
            installed["agui"]["protocolVersion"].as_str(),
            Some(PROTOCOL_VERSION),
            "{pkg} declares protocol {}",
            installed["agui"]
        );
    }
}
