//! The scenarios of `fake-acp-agent` and its command line.

use std::path::PathBuf;

/// What the agent does; see the [module docs](super) for each one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scenario {
    /// A plain turn: thought, three text deltas, usage, plan, `end_turn`.
    Text,
    /// A pending `execute` tool call that asks for permission.
    Permission,
    /// Reads the file at the path through `fs/read_text_file`.
    FsRead(String),
    /// Writes the prompt's text to the path through `fs/write_text_file`.
    FsWrite(String),
    /// Runs the command line through `terminal/*`.
    Terminal(String),
    /// Answers `initialize` with protocol version 999.
    BadVersion,
    /// Prints a non-JSON line and a frame without `jsonrpc` after
    /// `session/new`, then behaves like `text`.
    Malformed,
    /// Never answers `session/prompt`, ignores `session/cancel`, outlives
    /// the end of its stdin.
    Silent,
    /// Starts `sleep 600` in its process group, then behaves like `silent`.
    HangOnCancelChild,
    /// Answers `session/prompt` with a JSON-RPC error.
    Error,
    /// Exits with status 3 after the first text delta of a prompt.
    Exit,
}

impl Scenario {
    /// The scenario called `name`, taking its argument from `arg` when it
    /// needs one.
    pub fn parse(name: &str, arg: impl FnOnce() -> Option<String>) -> Result<Scenario, String> {
        let needs = |what: &str| arg().ok_or_else(|| format!("scenario {name} needs {what}"));
        Ok(match name {
            "text" => Scenario::Text,
            "permission" => Scenario::Permission,
            "fs-read" => Scenario::FsRead(needs("a PATH")?),
            "fs-write" => Scenario::FsWrite(needs("a PATH")?),
            "terminal" => Scenario::Terminal(needs("a CMD")?),
            "bad-version" => Scenario::BadVersion,
            "malformed" => Scenario::Malformed,
            "silent" => Scenario::Silent,
            "hang-on-cancel-child" => Scenario::HangOnCancelChild,
            "error" => Scenario::Error,
            "exit" => Scenario::Exit,
            other => return Err(format!("unknown scenario {other:?}")),
        })
    }

    /// Whether the agent never answers a prompt.
    pub fn is_silent(&self) -> bool {
        matches!(self, Scenario::Silent | Scenario::HangOnCancelChild)
    }
}

/// The command line of `fake-acp-agent`.
pub const USAGE: &str = "usage: fake-acp-agent [--scenario NAME [ARG]] [--log FILE] [--state DIR]";

/// The parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The scenario (`text` by default).
    pub scenario: Scenario,
    /// Where every received frame is appended, one JSON line each.
    pub log: Option<PathBuf>,
    /// Where sessions are kept (`sessions.json`), so a second process can
    /// load them; in memory only without it.
    pub state: Option<PathBuf>,
}

impl Options {
    /// Parses the arguments after the program name; `Err("")` for `--help`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut options = Options {
            scenario: Scenario::Text,
            log: None,
            state: None,
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            if matches!(flag.as_str(), "-h" | "--help") {
                return Err(String::new());
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--scenario" => options.scenario = Scenario::parse(&value, || args.next())?,
                "--log" => options.log = Some(PathBuf::from(value)),
                "--state" => options.state = Some(PathBuf::from(value)),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn scenarios_take_their_argument_from_the_next_word() {
        let o = parse(&["--scenario", "fs-read", "a/b.txt", "--log", "/tmp/l"]).unwrap();
        assert_eq!(o.scenario, Scenario::FsRead("a/b.txt".into()));
        assert_eq!(o.log, Some(PathBuf::from("/tmp/l")));
        assert_eq!(parse(&[]).unwrap().scenario, Scenario::Text);
        assert_eq!(
            parse(&["--scenario", "terminal", "echo hi"])
                .unwrap()
                .scenario,
            Scenario::Terminal("echo hi".into())
        );
    }

    #[test]
    fn bad_command_lines_are_refused() {
        assert!(
            parse(&["--scenario", "fs-write"])
                .unwrap_err()
                .contains("PATH")
        );
        assert!(
            parse(&["--scenario", "nope"])
                .unwrap_err()
                .contains("unknown scenario")
        );
        assert!(parse(&["--log"]).is_err());
        assert!(parse(&["--frob", "x"]).is_err());
        assert_eq!(parse(&["--help"]), Err(String::new()));
    }
}
