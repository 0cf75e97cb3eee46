//! A small `--flag value` parser (the bench needs no more).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

/// Parsed flags: `--name value` pairs and bare `--switch`es.
#[derive(Debug, Default)]
pub struct Args {
    values: BTreeMap<String, String>,
    switches: Vec<String>,
}

/// The flags that take no value.
const SWITCHES: &[&str] = &[
    "--latency",
    "--stamp",
    "--no-sdk",
    "--skip-big",
    "--quick",
    "--help",
    "--no-kill",
    "--approvals-anywhere",
    "--a2a-anywhere",
    "--agui-reattach",
];

impl Args {
    /// Parses `args` (after the subcommand).
    pub fn parse(args: &[String]) -> Result<Args, String> {
        let mut parsed = Args::default();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            if !arg.starts_with("--") {
                return Err(format!("unexpected argument {arg:?}"));
            }
            if SWITCHES.contains(&arg.as_str()) {
                parsed.switches.push(arg.clone());
                continue;
            }
            let value = it.next().ok_or_else(|| format!("{arg} needs a value"))?;
            parsed.values.insert(arg.clone(), value.clone());
        }
        Ok(parsed)
    }

    /// Whether `--name` was given.
    pub fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    /// The value of `--name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The value of `--name`, required.
    pub fn require(&self, name: &str) -> Result<&str, String> {
        self.get(name).ok_or_else(|| format!("missing {name}"))
    }

    /// A path flag, required.
    pub fn path(&self, name: &str) -> Result<PathBuf, String> {
        self.require(name).map(PathBuf::from)
    }

    /// A number flag with a default.
    pub fn number<T: FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .replace('_', "")
                .parse()
                .map_err(|_| format!("{name}: invalid number {v:?}")),
        }
    }

    /// A comma-separated list of numbers with a default.
    pub fn numbers(&self, name: &str, default: &[u64]) -> Result<Vec<u64>, String> {
        match self.get(name) {
            None => Ok(default.to_vec()),
            Some(v) => v
                .split(',')
                .map(|n| {
                    n.trim()
                        .replace('_', "")
                        .parse()
                        .map_err(|_| format!("{name}: invalid number {n:?}"))
                })
                .collect(),
        }
    }
}
