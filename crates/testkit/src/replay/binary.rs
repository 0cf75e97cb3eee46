//! Finding the `fake-cli` binary from tests in other crates, where
//! `CARGO_BIN_EXE_fake-cli` is not set.

use std::path::PathBuf;

/// The path of the `fake-cli` binary of this workspace's target directory,
/// building it first when it is missing or older than the running test
/// binary (tests of other crates get no `CARGO_BIN_EXE_*` for it, and cargo
/// does not rebuild a dependency's binaries with them).
/// `AGENT_ADAPTOR_FAKE_CLI` overrides the path.
pub fn fake_cli_binary() -> std::io::Result<PathBuf> {
    crate::bins::testkit_binary("fake-cli", "AGENT_ADAPTOR_FAKE_CLI")
}
