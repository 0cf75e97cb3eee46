//! Loading of recorded CLI captures.
//!
//! The captures live in `shared/fixtures/cli-captures/` beside the repository (see
//! [`dir`]). Two formats exist:
//!
//! * `*.jsonl` — the raw stdout of one CLI run, one line per JSON object. Loaded as
//!   [`Capture::Lines`], each line exactly as recorded (without its `\n`).
//! * `*.transcript` — a bidirectional capture, one frame per line, each line
//!   `<direction> <json>`. Loaded as [`Capture::Transcript`]. The direction prefixes are
//!   `CLI->SDK` (the CLI wrote the frame on stdout) and `SDK->CLI` (the host wrote it to
//!   the CLI's stdin). The JSON-RPC captures name the two sides differently, so these
//!   aliases are accepted too: `S->C` / `C->S` (Codex app-server: the CLI is the
//!   *server*) and `A->C` / `C->A` (ACP: the CLI is the *agent*).
//!
//! ```no_run
//! use agent_adaptor_testkit::fixtures::{self, Capture};
//!
//! let capture = fixtures::load("claude/print-basic.jsonl")?;
//! if let Capture::Lines(lines) = &capture {
//!     assert!(lines[0].starts_with('{'));
//! }
//! for (name, capture) in fixtures::try_all()? {
//!     println!("{name}: {} stdout bytes", capture.stdout_bytes().len());
//! }
//! # Ok::<(), fixtures::FixtureError>(())
//! ```

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The environment variable that overrides [`dir`].
pub const FIXTURES_ENV: &str = "AGENT_ADAPTOR_FIXTURES";

/// The captures directory.
///
/// `$AGENT_ADAPTOR_FIXTURES` when set (and non-empty); otherwise
/// `../../../shared/fixtures/cli-captures` relative to this crate's manifest directory,
/// which is where `shared/` sits beside the repository both locally and in CI. The
/// directory is not checked for existence: a missing one shows up as
/// [`FixtureError::NotFound`] when something is loaded from it.
pub fn dir() -> PathBuf {
    if let Some(custom) = std::env::var_os(FIXTURES_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(custom);
    }
    let joined =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/cli-captures");
    joined.canonicalize().unwrap_or(joined)
}

/// The full path of a capture given relative to [`dir`] (an absolute path is returned
/// unchanged).
pub fn path(relative: impl AsRef<Path>) -> PathBuf {
    dir().join(relative)
}

/// Loads one capture, named relative to [`dir`] (e.g. `"claude/print-basic.jsonl"`); an
/// absolute path is accepted too.
pub fn load(relative: impl AsRef<Path>) -> Result<Capture, FixtureError> {
    load_path(&path(relative))
}

/// Loads the capture at `path`. The format follows the extension: `.jsonl` or
/// `.transcript`.
pub fn load_path(path: &Path) -> Result<Capture, FixtureError> {
    let kind = CaptureKind::of(path).ok_or_else(|| FixtureError::UnknownFormat {
        path: path.to_path_buf(),
    })?;
    let bytes = std::fs::read(path).map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            FixtureError::NotFound {
                path: path.to_path_buf(),
            }
        } else {
            FixtureError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        FixtureError::NotUtf8 {
            path: path.to_path_buf(),
            line,
        }
    })?;
    match kind {
        CaptureKind::Lines => Ok(Capture::Lines(
            split_lines(&text).map(str::to_owned).collect(),
        )),
        CaptureKind::Transcript => parse_transcript(path, &text).map(Capture::Transcript),
    }
}

/// The names (relative to [`dir`], `/`-separated, sorted) of every `.jsonl` and
/// `.transcript` file under [`dir`], recursively. Other files are skipped.
pub fn list() -> Result<Vec<String>, FixtureError> {
    let root = dir();
    let mut names = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                FixtureError::NotFound {
                    path: folder.clone(),
                }
            } else {
                FixtureError::Io {
                    path: folder.clone(),
                    source,
                }
            }
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| FixtureError::Io {
                path: folder.clone(),
                source,
            })?;
            let entry_path = entry.path();
            let file_type = entry.file_type().map_err(|source| FixtureError::Io {
                path: entry_path.clone(),
                source,
            })?;
            if file_type.is_dir() {
                pending.push(entry_path);
            } else if CaptureKind::of(&entry_path).is_some()
                && let Ok(relative) = entry_path.strip_prefix(&root)
            {
                let parts: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                names.push(parts.join("/"));
            }
        }
    }
    names.sort();
    Ok(names)
}

/// Every capture under [`dir`] as `(name, capture)`, sorted by name; the first error
/// stops the walk.
pub fn try_all() -> Result<Vec<(String, Capture)>, FixtureError> {
    list()?
        .into_iter()
        .map(|name| {
            let capture = load(&name)?;
            Ok((name, capture))
        })
        .collect()
}

/// Every capture under [`dir`] that loads, as `(name, capture)`, sorted by name.
///
/// Captures that fail to load are left out (and a missing directory gives an empty
/// list), so a test iterating this should also assert it is not empty — or use
/// [`try_all`], which reports the first failure.
pub fn all() -> Vec<(String, Capture)> {
    list()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|name| load(&name).ok().map(|capture| (name, capture)))
        .collect()
}

/// A loaded capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Capture {
    /// A `.jsonl` capture: the CLI's stdout lines, each exactly as recorded, without the
    /// line terminator.
    Lines(Vec<String>),
    /// A `.transcript` capture: the frames in recorded order.
    Transcript(Vec<Frame>),
}

impl Capture {
    /// What the CLI wrote on stdout: every line of a `.jsonl` capture, or the
    /// [`Direction::CliToSdk`] frames of a transcript, each followed by `\n`.
    pub fn stdout_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for line in self.stdout_lines() {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        out
    }

    /// The lines the CLI wrote on stdout, in order (see [`Capture::stdout_bytes`]).
    pub fn stdout_lines(&self) -> Vec<&str> {
        match self {
            Capture::Lines(lines) => lines.iter().map(String::as_str).collect(),
            Capture::Transcript(frames) => frames_in(frames, Direction::CliToSdk),
        }
    }

    /// The lines the host wrote to the CLI's stdin, in order: the
    /// [`Direction::SdkToCli`] frames of a transcript; empty for a `.jsonl` capture.
    pub fn stdin_lines(&self) -> Vec<&str> {
        match self {
            Capture::Lines(_) => Vec::new(),
            Capture::Transcript(frames) => frames_in(frames, Direction::SdkToCli),
        }
    }

    /// Whether this is a [`Capture::Transcript`].
    pub fn is_transcript(&self) -> bool {
        matches!(self, Capture::Transcript(_))
    }
}

fn frames_in(frames: &[Frame], dir: Direction) -> Vec<&str> {
    frames
        .iter()
        .filter(|f| f.dir == dir)
        .map(|f| f.line.as_str())
        .collect()
}

/// One frame of a transcript.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Who wrote the frame.
    pub dir: Direction,
    /// The frame's JSON text exactly as recorded, without the direction prefix and the
    /// single space that follows it.
    pub line: String,
}

/// The direction of a transcript [`Frame`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The CLI wrote the frame on its stdout (`CLI->SDK`; also `S->C`, `A->C`).
    CliToSdk,
    /// The host wrote the frame to the CLI's stdin (`SDK->CLI`; also `C->S`, `C->A`).
    SdkToCli,
}

impl Direction {
    /// Parses a transcript direction prefix, including the JSON-RPC aliases described in
    /// the [module docs](self).
    pub fn from_prefix(prefix: &str) -> Option<Direction> {
        match prefix {
            "CLI->SDK" | "S->C" | "A->C" => Some(Direction::CliToSdk),
            "SDK->CLI" | "C->S" | "C->A" => Some(Direction::SdkToCli),
            _ => None,
        }
    }

    /// The canonical prefix: `CLI->SDK` or `SDK->CLI`.
    pub fn prefix(self) -> &'static str {
        match self {
            Direction::CliToSdk => "CLI->SDK",
            Direction::SdkToCli => "SDK->CLI",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())
    }
}

/// Why a capture could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FixtureError {
    /// The file (or the captures directory) does not exist.
    #[error("capture not found: {} (captures directory: {}; override with ${FIXTURES_ENV})", path.display(), dir().display())]
    NotFound {
        /// The path that was looked up.
        path: PathBuf,
    },
    /// Reading the file or directory failed.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The path being read.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The file is not valid UTF-8.
    #[error("{}:{line}: not valid UTF-8", path.display())]
    NotUtf8 {
        /// The capture's path.
        path: PathBuf,
        /// The 1-based line holding the first invalid byte.
        line: usize,
    },
    /// The file name ends neither in `.jsonl` nor in `.transcript`.
    #[error("{}: unknown capture format (expected a .jsonl or .transcript file)", path.display())]
    UnknownFormat {
        /// The capture's path.
        path: PathBuf,
    },
    /// A transcript line does not start with a known direction prefix followed by a space.
    #[error("{}:{line}: bad direction prefix {found:?} (expected `CLI->SDK ` or `SDK->CLI `)", path.display())]
    BadDirection {
        /// The capture's path.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The text found where the prefix should be (at most 40 characters).
        found: String,
    },
}

#[derive(Clone, Copy)]
enum CaptureKind {
    Lines,
    Transcript,
}

impl CaptureKind {
    fn of(path: &Path) -> Option<CaptureKind> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("jsonl") => Some(CaptureKind::Lines),
            Some("transcript") => Some(CaptureKind::Transcript),
            _ => None,
        }
    }
}

/// Splits on `\n`, treating a final `\n` as a terminator (so `"a\nb\n"` has two lines,
/// like `wc -l`, and an unterminated last line still counts). Nothing else is stripped.
fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
        .map(|l| l.strip_suffix('\n').unwrap_or(l))
}

fn parse_transcript(path: &Path, text: &str) -> Result<Vec<Frame>, FixtureError> {
    split_lines(text)
        .enumerate()
        .map(|(index, raw)| {
            let parsed = raw
                .split_once(' ')
                .and_then(|(prefix, line)| Some((Direction::from_prefix(prefix)?, line)));
            match parsed {
                Some((dir, line)) => Ok(Frame {
                    dir,
                    line: line.to_owned(),
                }),
                None => Err(FixtureError::BadDirection {
                    path: path.to_path_buf(),
                    line: index + 1,
                    found: raw
                        .split(' ')
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(40)
                        .collect(),
                }),
            }
        })
        .collect()
}
