//! The environment a CLI child gets: an allowlist, never the host's whole
//! environment by default. One definition for every driver family.
//!
//! A child starts from nothing and receives
//!
//! 1. the host variables named by [`BASE_ALLOWLIST`] (where programs are,
//!    who and where the user is, locale, terminal, proxies and CA
//!    certificates),
//! 2. the host variables the driver's CLI documents (its
//!    `&'static [&str]` allowlist: `ANTHROPIC_*`, `CLAUDE_*` …),
//! 3. the host variables the host names in [`EnvPolicy::Allowlist`]'s
//!    `pass`,
//! 4. then the configuration's explicit bindings ([`EnvVars`]), which win.
//!
//! [`EnvPolicy::Only`] replaces 1–3 by an exact list (hermetic runs, such
//! as the real-CLI tests). [`EnvPolicy::InheritAll`] is the explicit
//! opt-out: the child inherits everything (the bindings still win). A
//! server must never choose it.
//!
//! A pattern is an exact name, or a prefix ending in `*` (`LC_*`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::ops::{Deref, DerefMut};

use agent_adaptor_driver::ConfigError;
use agent_adaptor_process::Command;
use serde::Serialize;

/// Host variables every CLI child gets when the host has them: the user and
/// their directories, locale, terminal, proxies and CA certificates. None of
/// them is a credential by itself (a proxy URL may carry one, but without it
/// the CLI cannot reach its API at all).
pub const BASE_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "TZ",
    "LANG",
    "LANGUAGE",
    "LC_*",
    // Where the CLIs keep settings and sessions when the user moved them.
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    // Rendering only: some CLIs print differently (or warn) without them.
    "TERM",
    "NO_COLOR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// Which host variables a CLI child inherits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvPolicy {
    /// The default: [`BASE_ALLOWLIST`], the driver's documented variables,
    /// and the host variables named in `pass` (exact names or `PREFIX_*`).
    Allowlist {
        /// Further host variables to pass through (e.g. `AWS_PROFILE` for a
        /// Claude Code on Bedrock).
        pass: Vec<String>,
    },
    /// Exactly these host variables (names or `PREFIX_*`): not even the
    /// base list or the driver's. For hermetic runs (tests against a mock
    /// model that set everything else through the bindings).
    Only {
        /// The host variables to pass.
        names: Vec<String>,
    },
    /// Every host variable. An explicit opt-in for a trusted local run
    /// (`agent-adaptor run --inherit-env`); a server never uses it.
    InheritAll,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        EnvPolicy::Allowlist { pass: Vec::new() }
    }
}

impl EnvPolicy {
    /// The allowlist plus these host variables (exact names or `PREFIX_*`).
    pub fn passing<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EnvPolicy::Allowlist {
            pass: names.into_iter().map(Into::into).collect(),
        }
    }

    /// Exactly these host variables, and the bindings.
    pub fn only<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EnvPolicy::Only {
            names: names.into_iter().map(Into::into).collect(),
        }
    }

    /// This policy, also passing the host variables `names` (a run's MCP
    /// bearer-token variables: the child reads the token, the driver never
    /// does). [`EnvPolicy::InheritAll`] passes them already.
    pub fn with_passed<S: AsRef<str>>(&self, names: &[S]) -> EnvPolicy {
        let mut policy = self.clone();
        if let EnvPolicy::Allowlist { pass: list } | EnvPolicy::Only { names: list } = &mut policy {
            list.extend(names.iter().map(|n| n.as_ref().to_owned()));
        }
        policy
    }

    /// The host-variable patterns this policy passes for a driver
    /// documenting `driver`; `None` for [`EnvPolicy::InheritAll`].
    fn patterns<'a>(&'a self, driver: &'a [&'a str]) -> Option<Vec<&'a str>> {
        match self {
            EnvPolicy::InheritAll => None,
            EnvPolicy::Only { names } => Some(names.iter().map(String::as_str).collect()),
            EnvPolicy::Allowlist { pass } => Some(
                BASE_ALLOWLIST
                    .iter()
                    .chain(driver)
                    .copied()
                    .chain(pass.iter().map(String::as_str))
                    .collect(),
            ),
        }
    }

    /// Whether a host variable called `name` reaches a child of a driver
    /// whose documented variables are `driver` (bindings aside).
    pub fn allows(&self, driver: &[&str], name: &str) -> bool {
        self.patterns(driver)
            .is_none_or(|patterns| patterns.iter().any(|p| matches(p, name)))
    }

    /// The first `pass` entry that is not a valid name or pattern, if any.
    pub fn invalid_name(&self) -> Option<&str> {
        match self {
            EnvPolicy::InheritAll => None,
            EnvPolicy::Allowlist { pass: names } | EnvPolicy::Only { names } => {
                names.iter().map(String::as_str).find(|p| !valid_pattern(p))
            }
        }
    }

    /// Give `cmd` its environment: this policy over the host's variables
    /// for a driver documenting `driver`, then `defaults` (the SDK's own
    /// settings), then the configuration's `bindings`.
    pub fn apply(
        &self,
        cmd: &mut Command,
        driver: &[&str],
        defaults: &[(&str, &str)],
        bindings: &EnvVars,
    ) {
        if let Some(patterns) = self.patterns(driver) {
            cmd.env_clear()
                .inherit_env(patterns.iter().filter(|p| !p.ends_with('*')))
                .inherit_env_prefixed(patterns.iter().filter_map(|p| p.strip_suffix('*')));
        }
        for (k, v) in defaults {
            cmd.env(k, v);
        }
        for (k, v) in bindings.iter() {
            cmd.env(k, v);
        }
    }

    /// The variables of this process's environment that this policy passes
    /// to a child of a driver documenting `driver` (for a child started
    /// outside the process helper, e.g. `cli --version`). The values may be
    /// secrets: hand them to the child, never show them.
    pub fn host_env(&self, driver: &[&str]) -> BTreeMap<OsString, OsString> {
        let mut cmd = Command::new("");
        self.apply(&mut cmd, driver, &[], &EnvVars::new());
        cmd.effective_env()
    }
}

/// `name` matches `pattern`: equal, or `pattern` is `PREFIX*` and `name`
/// starts with `PREFIX`.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => !prefix.is_empty() && name.starts_with(prefix),
        None => pattern == name,
    }
}

/// A variable name, or a non-empty prefix followed by `*`.
fn valid_pattern(pattern: &str) -> bool {
    let name = pattern.strip_suffix('*').unwrap_or(pattern);
    valid_name(name)
}

/// The configuration check every driver shares: valid binding names and
/// valid pass-through names.
pub fn validate(driver: &str, policy: &EnvPolicy, bindings: &EnvVars) -> Result<(), ConfigError> {
    let invalid = |name: &str| ConfigError {
        driver: driver.to_owned(),
        reason: format!("invalid environment variable name {name:?}"),
    };
    if let Some(name) = bindings.invalid_name() {
        return Err(invalid(name));
    }
    match policy.invalid_name() {
        Some(name) => Err(invalid(name)),
        None => Ok(()),
    }
}

/// A name a child environment can hold: non-empty, no `=`, no NUL, no `*`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0', '*'])
}

/// Environment bindings set for a CLI child (they win over inherited
/// variables). A map of name → value whose `Debug` shows names only: the
/// values are often credentials. Part of the session fingerprint (hashed).
#[derive(Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct EnvVars(BTreeMap<String, String>);

impl EnvVars {
    /// No bindings.
    pub fn new() -> Self {
        EnvVars::default()
    }

    /// The first name that is not a valid variable name, if any.
    pub fn invalid_name(&self) -> Option<&str> {
        self.0.keys().map(String::as_str).find(|n| !valid_name(n))
    }
}

impl fmt::Debug for EnvVars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Deref for EnvVars {
    type Target = BTreeMap<String, String>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for EnvVars {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl From<BTreeMap<String, String>> for EnvVars {
    fn from(map: BTreeMap<String, String>) -> Self {
        EnvVars(map)
    }
}

impl<const N: usize> From<[(String, String); N]> for EnvVars {
    fn from(pairs: [(String, String); N]) -> Self {
        EnvVars(pairs.into())
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for EnvVars {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        EnvVars(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for EnvVars {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        self.0
            .extend(iter.into_iter().map(|(k, v)| (k.into(), v.into())));
    }
}

impl<'a> IntoIterator for &'a EnvVars {
    type Item = (&'a String, &'a String);
    type IntoIter = std::collections::btree_map::Iter<'a, String, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_exact_names_and_prefixes() {
        assert!(matches("LC_*", "LC_ALL"));
        assert!(!matches("LC_*", "XLC_ALL"));
        assert!(matches("PATH", "PATH"));
        assert!(!matches("PATH", "PATHX"));
        assert!(!matches("*", "ANYTHING"));
    }

    #[test]
    fn the_default_allows_the_base_list_and_the_driver_only() {
        let policy = EnvPolicy::default();
        let driver = &["ANTHROPIC_*"];
        assert!(policy.allows(driver, "PATH"));
        assert!(policy.allows(driver, "LC_CTYPE"));
        assert!(policy.allows(driver, "ANTHROPIC_BASE_URL"));
        assert!(!policy.allows(driver, "AWS_SECRET_ACCESS_KEY"));
        assert!(!policy.allows(driver, "GITHUB_TOKEN"));
        assert!(EnvPolicy::passing(["GITHUB_TOKEN"]).allows(driver, "GITHUB_TOKEN"));
        assert!(EnvPolicy::passing(["AWS_*"]).allows(driver, "AWS_PROFILE"));
        assert!(EnvPolicy::InheritAll.allows(driver, "GITHUB_TOKEN"));
        let only = EnvPolicy::only(["PATH"]);
        assert!(only.allows(driver, "PATH"));
        assert!(!only.allows(driver, "HOME") && !only.allows(driver, "ANTHROPIC_API_KEY"));
    }

    #[test]
    fn with_passed_adds_names_to_every_policy() {
        let driver = &["ANTHROPIC_*"];
        for policy in [EnvPolicy::default(), EnvPolicy::only(["PATH"])] {
            assert!(!policy.allows(driver, "DOCS_TOKEN"));
            let more = policy.with_passed(&["DOCS_TOKEN"]);
            assert!(more.allows(driver, "DOCS_TOKEN") && more.allows(driver, "PATH"));
            assert!(!more.allows(driver, "OTHER_TOKEN"));
        }
        assert_eq!(
            EnvPolicy::InheritAll.with_passed(&["X"]),
            EnvPolicy::InheritAll
        );
    }

    #[test]
    fn invalid_names_are_found() {
        assert_eq!(EnvPolicy::passing(["A", "B=C"]).invalid_name(), Some("B=C"));
        assert_eq!(EnvPolicy::passing(["*"]).invalid_name(), Some("*"));
        assert_eq!(EnvPolicy::passing(["AWS_*"]).invalid_name(), None);
        let vars: EnvVars = [("A*".to_owned(), "v".to_owned())].into();
        assert_eq!(vars.invalid_name(), Some("A*"));
    }

    #[test]
    fn bindings_debug_shows_names_only() {
        let vars: EnvVars = [("API_KEY", "sk-secret")].into_iter().collect();
        let shown = format!("{vars:?}");
        assert!(
            shown.contains("API_KEY") && !shown.contains("sk-secret"),
            "{shown}"
        );
    }
}
