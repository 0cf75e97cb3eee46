//! The `fake-cli` flags.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// The environment variable from which `fake-cli` can take its own flags.
///
/// When it is set (and not blank), `fake-cli` parses its flags from it and treats the
/// whole command line as foreign: the argv a driver built for the real CLI is accepted
/// without complaint (and can be recorded with `--args-out`). The value is either a JSON
/// array of strings (`["--fixture", "claude/print-basic.jsonl"]`, for values holding
/// spaces) or whitespace-separated words.
pub const OPTS_ENV: &str = "AGENT_ADAPTOR_FAKE_CLI_OPTS";

/// The exit code of `fake-cli` on bad flags or an unusable fixture.
pub const USAGE_EXIT_CODE: i32 = 2;

/// The usage text of `fake-cli`.
pub const USAGE: &str = "\
fake-cli: replays a recorded CLI capture on stdout (a stand-in for a real CLI in tests)

usage: fake-cli --fixture PATH [options] [-- FOREIGN-ARGS...]
       AGENT_ADAPTOR_FAKE_CLI_OPTS='--fixture PATH [options]' fake-cli ANY-ARGS...

  --fixture PATH        capture to replay (.jsonl or .transcript); absolute, or relative
                        to the captures directory ($AGENT_ADAPTOR_FIXTURES overrides it)
  --delay-ms N          sleep N ms before each stdout line (default 0)
  --exit-code N         exit code when the replay ends (default 0)
  --stderr TEXT         write TEXT as a line on stderr before anything else (repeatable)
  --stderr-every N      write a noise line on stderr after every N stdout lines
  --truncate-after N    stop after N stdout lines (a crash: no terminal line)
  --hang                when the replay ends, sleep forever instead of exiting
  --ignore-sigterm      ignore SIGTERM (notes each one on stderr; unix only)
  --record-stdin FILE   append every line read from stdin to FILE
  --args-out FILE       write argv and the --env-out variables to FILE (JSON lines)
  --env-out NAME        environment variable to include in --args-out (repeatable)
  --wait-stdin-eof      (.jsonl) read stdin to EOF before printing anything, like
                        `codex exec` with an open stdin
  --stdin-check MODE    (.transcript) check each stdin line against the recorded
                        SDK->CLI frame: none (default), type, exact-json; exit 3 on mismatch
  --ignore-key NAME     (exact-json) ignore this object key at any depth (repeatable)
  --exit-after-replay   (.transcript) exit after the last frame instead of waiting for
                        stdin EOF
  --serve-turns         (.jsonl) serve turns like a CLI reading stream-json input:
                        answer each control_request line with a success
                        control_response, print the capture for each user frame (or
                        once for plain-text stdin, a one-shot prompt), exit at stdin
                        EOF. `{{turn}}` in the capture becomes the turn number
  -h, --help            print this text

Everything after `--` is ignored (but recorded by --args-out). In the capture,
`{{session}}` becomes the value of a foreign `--resume` argument, or
`fake-session-<pid>` without one. Exit codes: the --exit-code value, 2 on bad flags,
3 on a stdin mismatch, 1 on an I/O error.
";

/// How `fake-cli` compares a line read from stdin with the recorded `SDK->CLI` frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StdinCheck {
    /// Only count lines (`none`).
    #[default]
    None,
    /// Compare the message shape (`type`): the top-level `type` plus, for
    /// `control_request` / `control_response` frames, `request.subtype` /
    /// `response.subtype`; for JSON-RPC frames (no `type`), the kind (request,
    /// notification, response, error) and the `method`.
    Type,
    /// Compare the parsed JSON for equality after removing the keys listed in
    /// [`Options::ignore_keys`] at any depth (`exact-json`).
    ExactJson,
}

impl StdinCheck {
    /// The flag spelling: `none`, `type` or `exact-json`.
    pub fn as_str(self) -> &'static str {
        match self {
            StdinCheck::None => "none",
            StdinCheck::Type => "type",
            StdinCheck::ExactJson => "exact-json",
        }
    }
}

impl FromStr for StdinCheck {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(StdinCheck::None),
            "type" => Ok(StdinCheck::Type),
            "exact-json" => Ok(StdinCheck::ExactJson),
            other => Err(UsageError(format!(
                "--stdin-check: unknown mode {other:?} (expected none, type or exact-json)"
            ))),
        }
    }
}

/// Bad `fake-cli` flags; the message says which.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The parsed `fake-cli` flags. See [`USAGE`] for their meaning.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `--fixture`: the capture to replay (required unless `help`).
    pub fixture: Option<PathBuf>,
    /// `--delay-ms`: the sleep before each stdout line.
    pub delay: Duration,
    /// `--exit-code`: the exit code when the replay ends.
    pub exit_code: i32,
    /// `--stderr`: lines written on stderr before anything else.
    pub stderr: Vec<String>,
    /// `--stderr-every`: a noise line on stderr after every N stdout lines.
    pub stderr_every: Option<NonZeroUsize>,
    /// `--truncate-after`: stop after this many stdout lines.
    pub truncate_after: Option<usize>,
    /// `--hang`: sleep forever when the replay ends.
    pub hang: bool,
    /// `--ignore-sigterm`: ignore SIGTERM.
    pub ignore_sigterm: bool,
    /// `--record-stdin`: append the stdin lines to this file.
    pub record_stdin: Option<PathBuf>,
    /// `--args-out`: write argv and the [`Options::env_out`] variables to this file.
    pub args_out: Option<PathBuf>,
    /// `--env-out`: variables to include in the `--args-out` file.
    pub env_out: Vec<String>,
    /// `--wait-stdin-eof`: read stdin to EOF before printing (`.jsonl` only).
    pub wait_stdin_eof: bool,
    /// `--stdin-check`: how stdin lines are compared with the recorded frames.
    pub stdin_check: StdinCheck,
    /// `--ignore-key`: keys ignored by [`StdinCheck::ExactJson`].
    pub ignore_keys: Vec<String>,
    /// `--exit-after-replay`: do not wait for stdin EOF after the last transcript frame.
    pub exit_after_replay: bool,
    /// `--serve-turns`: serve a `.jsonl` capture once per user frame read from stdin
    /// (see [`replay`](crate::replay::replay)).
    pub serve_turns: bool,
    /// `--help`.
    pub help: bool,
}

impl Options {
    /// Parses `fake-cli`'s own flags (no program name, no foreign arguments). Both
    /// `--flag value` and `--flag=value` are accepted. `--fixture` is required unless
    /// `--help` is given.
    pub fn parse<I, S>(args: I) -> Result<Options, UsageError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut options = Options::default();
        let mut args = args.into_iter().map(Into::into);
        while let Some(arg) = args.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((name, value)) if name.starts_with("--") => {
                    (name.to_owned(), Some(value.to_owned()))
                }
                _ => (arg.clone(), None),
            };
            if let Some(flag) = Flag::boolean(&name) {
                if inline.is_some() {
                    return Err(UsageError(format!("{name} takes no value")));
                }
                match flag {
                    Flag::Hang => options.hang = true,
                    Flag::IgnoreSigterm => options.ignore_sigterm = true,
                    Flag::WaitStdinEof => options.wait_stdin_eof = true,
                    Flag::ExitAfterReplay => options.exit_after_replay = true,
                    Flag::ServeTurns => options.serve_turns = true,
                    Flag::Help => options.help = true,
                }
                continue;
            }
            let mut value = || match inline.clone() {
                Some(value) => Ok(value),
                None => args
                    .next()
                    .ok_or_else(|| UsageError(format!("{name} needs a value"))),
            };
            match name.as_str() {
                "--fixture" => options.fixture = Some(PathBuf::from(value()?)),
                "--delay-ms" => options.delay = Duration::from_millis(number(&name, &value()?)?),
                "--exit-code" => options.exit_code = number(&name, &value()?)?,
                "--stderr" => options.stderr.push(value()?),
                "--stderr-every" => options.stderr_every = Some(number(&name, &value()?)?),
                "--truncate-after" => options.truncate_after = Some(number(&name, &value()?)?),
                "--record-stdin" => options.record_stdin = Some(PathBuf::from(value()?)),
                "--args-out" => options.args_out = Some(PathBuf::from(value()?)),
                "--env-out" => options.env_out.push(value()?),
                "--stdin-check" => options.stdin_check = value()?.parse()?,
                "--ignore-key" => options.ignore_keys.push(value()?),
                _ => {
                    return Err(UsageError(format!(
                        "unknown argument {arg:?} (see --help; put foreign arguments after `--`)"
                    )));
                }
            }
        }
        if options.fixture.is_none() && !options.help {
            return Err(UsageError("missing --fixture PATH".to_owned()));
        }
        Ok(options)
    }
}

fn number<T: FromStr>(flag: &str, value: &str) -> Result<T, UsageError> {
    value
        .parse()
        .map_err(|_| UsageError(format!("{flag}: invalid number {value:?}")))
}

enum Flag {
    Hang,
    IgnoreSigterm,
    WaitStdinEof,
    ExitAfterReplay,
    ServeTurns,
    Help,
}

impl Flag {
    fn boolean(name: &str) -> Option<Flag> {
        match name {
            "--hang" => Some(Flag::Hang),
            "--ignore-sigterm" => Some(Flag::IgnoreSigterm),
            "--wait-stdin-eof" => Some(Flag::WaitStdinEof),
            "--exit-after-replay" => Some(Flag::ExitAfterReplay),
            "--serve-turns" => Some(Flag::ServeTurns),
            "-h" | "--help" => Some(Flag::Help),
            _ => None,
        }
    }
}

/// A whole `fake-cli` command line, split into its own flags and the foreign arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// `fake-cli`'s own flags.
    pub options: Options,
    /// The arguments meant for the real CLI, which `fake-cli` ignores: those after `--`,
    /// or the whole command line when the flags came from [`OPTS_ENV`].
    pub foreign: Vec<String>,
}

impl Invocation {
    /// Parses `argv` (without the program name) and the value of [`OPTS_ENV`], if set.
    pub fn parse(argv: &[String], env_opts: Option<&str>) -> Result<Invocation, UsageError> {
        if let Some(env_opts) = env_opts.filter(|v| !v.trim().is_empty()) {
            let words: Vec<String> = if env_opts.trim_start().starts_with('[') {
                serde_json::from_str(env_opts).map_err(|e| {
                    UsageError(format!("${OPTS_ENV}: not a JSON array of strings: {e}"))
                })?
            } else {
                env_opts.split_whitespace().map(str::to_owned).collect()
            };
            let options = Options::parse(words)
                .map_err(|UsageError(m)| UsageError(format!("${OPTS_ENV}: {m}")))?;
            return Ok(Invocation {
                options,
                foreign: argv.to_vec(),
            });
        }
        let (own, foreign) = match argv.iter().position(|a| a == "--") {
            Some(at) => (&argv[..at], argv[at + 1..].to_vec()),
            None => (argv, Vec::new()),
        };
        Ok(Invocation {
            options: Options::parse(own.iter().cloned())?,
            foreign,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn parses_every_flag() {
        let options = Options::parse([
            "--fixture=claude/print-basic.jsonl",
            "--delay-ms",
            "5",
            "--exit-code",
            "-1",
            "--stderr",
            "--looks-like-a-flag",
            "--stderr=two",
            "--stderr-every",
            "3",
            "--truncate-after",
            "0",
            "--hang",
            "--ignore-sigterm",
            "--record-stdin",
            "in.txt",
            "--args-out",
            "args.jsonl",
            "--env-out",
            "HOME",
            "--wait-stdin-eof",
            "--stdin-check",
            "exact-json",
            "--ignore-key",
            "request_id",
            "--exit-after-replay",
            "--serve-turns",
        ])
        .unwrap();
        assert_eq!(
            options.fixture,
            Some(PathBuf::from("claude/print-basic.jsonl"))
        );
        assert_eq!(options.delay, Duration::from_millis(5));
        assert_eq!(options.exit_code, -1);
        assert_eq!(options.stderr, ["--looks-like-a-flag", "two"]);
        assert_eq!(options.stderr_every.map(NonZeroUsize::get), Some(3));
        assert_eq!(options.truncate_after, Some(0));
        assert!(
            options.hang
                && options.ignore_sigterm
                && options.wait_stdin_eof
                && options.exit_after_replay
                && options.serve_turns
        );
        assert_eq!(options.record_stdin, Some(PathBuf::from("in.txt")));
        assert_eq!(options.args_out, Some(PathBuf::from("args.jsonl")));
        assert_eq!(options.env_out, ["HOME"]);
        assert_eq!(options.stdin_check, StdinCheck::ExactJson);
        assert_eq!(options.ignore_keys, ["request_id"]);
    }

    #[test]
    fn rejects_bad_flags() {
        for bad in [
            &["--fixture", "x.jsonl", "--bogus"][..],
            &["--fixture"],
            &["--delay-ms", "soon", "--fixture", "x.jsonl"],
            &["--stderr-every", "0", "--fixture", "x.jsonl"],
            &["--stdin-check", "loose", "--fixture", "x.jsonl"],
            &["--hang=yes", "--fixture", "x.jsonl"],
            &["--exit-code", "1"],
            &["positional", "--fixture", "x.jsonl"],
        ] {
            assert!(
                Options::parse(bad.iter().copied()).is_err(),
                "{bad:?} should be rejected"
            );
        }
        assert!(Options::parse(["--help"]).unwrap().help);
    }

    #[test]
    fn foreign_arguments_after_separator_or_with_env_options() {
        let argv = strings(&["--fixture", "a.jsonl", "--", "exec", "--json", "--fixture"]);
        let inv = Invocation::parse(&argv, None).unwrap();
        assert_eq!(inv.options.fixture, Some(PathBuf::from("a.jsonl")));
        assert_eq!(inv.foreign, ["exec", "--json", "--fixture"]);

        let argv = strings(&["exec", "--json", "hello world"]);
        let inv = Invocation::parse(&argv, Some("--fixture b.jsonl --exit-code 4")).unwrap();
        assert_eq!(inv.options.fixture, Some(PathBuf::from("b.jsonl")));
        assert_eq!(inv.options.exit_code, 4);
        assert_eq!(inv.foreign, argv);

        let inv =
            Invocation::parse(&argv, Some(r#"["--fixture", "dir with space/c.jsonl"]"#)).unwrap();
        assert_eq!(
            inv.options.fixture,
            Some(PathBuf::from("dir with space/c.jsonl"))
        );

        assert!(Invocation::parse(&argv, None).is_err());
        assert!(Invocation::parse(&argv, Some("[not json")).is_err());
    }
}
