//! The home a Gemini CLI run sees (`GEMINI_CLI_HOME`).
//!
//! Gemini CLI 0.61 reads its user configuration from `<home>/.gemini`, where
//! `<home>` is `GEMINI_CLI_HOME` or else the OS home: `settings.json` (with
//! `mcpServers`), the global context file (`GEMINI.md`, or the first name of
//! the settings' `context.fileName`), `skills/<name>/SKILL.md`, sessions
//! under `tmp/`, credentials. Its system-wide settings files cannot carry a
//! run's equipment: it skips them unless they and every parent directory
//! are owned by root and not group/other-writable.
//!
//! So a run with equipment gets an **overlay home** in its private scratch
//! directory: `<scratch>/home/.gemini/` holds a link to every entry of the
//! base home's `.gemini/` (credentials, sessions, history, extensions …)
//! except the files the run changes, which are written there instead:
//!
//! * `settings.json`: the base settings (comments stripped) with the run's
//!   `mcpServers` added (the run's win on a name clash; under `mcp_strict`
//!   they replace the base's);
//! * the global context file: the base's text, then the run's instructions.
//!   Gemini puts global context at the end of the system instruction (in
//!   `<loaded_context>`), so the instructions are appended to the system
//!   prompt, not sent as a user message;
//! * `skills/`: links to the base's skills and the run's skills copied in.
//!
//! The base is the profile's home, or the user's native one; nothing is
//! written to it except an empty `.gemini/tmp/` when absent, so that the
//! session files the CLI writes there survive the run (resume needs them).
//!
//! Limits (Gemini's own rules): what the CLI writes to the overlay's own
//! files (a settings migration, an MCP server toggled) ends with the run;
//! a workspace `.gemini/settings.json` outranks user settings, so a server
//! it defines under one of the run's names replaces the run's (strict runs
//! still load no other name: `--allowed-mcp-server-names`); and, the OS
//! home being replaced, a run whose working directory is the user's home
//! reads `~/.gemini/settings.json` as workspace settings.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use agent_adaptor_driver::SkillRef;
use agent_adaptor_driver_kit::scratch::{RunScratch, create_private_dir_all, write_private};
use serde_json::{Map, Value, json};

/// The settings' default context file name.
const DEFAULT_CONTEXT_FILE: &str = "GEMINI.md";

/// What a run adds to its base home.
#[derive(Debug, Default)]
pub struct Equipment<'a> {
    /// Text appended to the global context file.
    pub instructions: Option<&'a str>,
    /// The run's `mcpServers` entries (Gemini's format).
    pub mcp_servers: Map<String, Value>,
    /// Only the run's servers: the base's `mcpServers` are dropped.
    pub mcp_strict: bool,
    /// Skills copied into `.gemini/skills/`.
    pub skills: &'a [SkillRef],
}

impl Equipment<'_> {
    /// True when the run changes nothing in its home.
    pub fn is_empty(&self) -> bool {
        self.instructions.is_none()
            && self.mcp_servers.is_empty()
            && !self.mcp_strict
            && self.skills.is_empty()
    }
}

/// Why a run's home could not be prepared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HomeError {
    /// Reading the base home or writing the overlay failed.
    #[error("gemini: preparing the run's home ({what}): {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The cause.
        source: io::Error,
    },
    /// The base `settings.json` is not a JSON object (after comments are
    /// stripped); Gemini would ignore it, the driver refuses to guess.
    #[error("gemini: {path} is not a JSON object: {reason}")]
    Settings {
        /// The file.
        path: PathBuf,
        /// The parse error.
        reason: String,
    },
    /// No home to start from: neither `GEMINI_CLI_HOME` nor `HOME` is known.
    #[error("gemini: no home directory (set HOME or GEMINI_CLI_HOME)")]
    NoHome,
}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> HomeError {
    move |source| HomeError::Io { what, source }
}

/// A run's overlay home, removed when dropped (keep it until the CLI has
/// exited).
#[derive(Debug)]
pub struct RunHome {
    scratch: RunScratch,
}

impl RunHome {
    /// The directory to export as `GEMINI_CLI_HOME`.
    pub fn path(&self) -> PathBuf {
        self.scratch.path().join("home")
    }
}

/// Build the overlay home of a run over `base` (a directory holding, or
/// about to hold, `.gemini/`).
pub fn overlay(base: &Path, eq: &Equipment<'_>) -> Result<RunHome, HomeError> {
    let scratch = RunScratch::new("gemini").map_err(io_err("the scratch directory"))?;
    let run = RunHome { scratch };
    let (base_dir, dir) = (base.join(".gemini"), run.path().join(".gemini"));
    create_private_dir_all(&dir).map_err(io_err("the overlay"))?;
    create_private_dir_all(&base_dir.join("tmp")).map_err(io_err("the sessions directory"))?;

    let settings_path = base_dir.join("settings.json");
    let mut settings = read_settings(&settings_path)?;
    let context_file = context_file_name(&settings);
    merge_servers(&mut settings, &eq.mcp_servers, eq.mcp_strict);

    let mut own: Vec<String> = vec!["settings.json".into()];
    if eq.instructions.is_some() {
        own.push(context_file.clone());
    }
    if !eq.skills.is_empty() {
        own.push("skills".into());
    }
    link_entries(&base_dir, &dir, &own)?;
    if let Ok(agents) = fs::symlink_metadata(base.join(".agents"))
        && agents.is_dir()
    {
        symlink(&base.join(".agents"), &run.path().join(".agents"))
            .map_err(io_err("linking .agents"))?;
    }

    let text = serde_json::to_vec_pretty(&settings).unwrap_or_default();
    write_private(&dir.join("settings.json"), &text).map_err(io_err("settings.json"))?;
    if let Some(instructions) = eq.instructions {
        let mut memory = match fs::read_to_string(base_dir.join(&context_file)) {
            Ok(text) if !text.trim().is_empty() => text + "\n\n",
            _ => String::new(),
        };
        memory.push_str(instructions);
        write_private(&dir.join(&context_file), memory.as_bytes())
            .map_err(io_err("the context file"))?;
    }
    if !eq.skills.is_empty() {
        let skills = dir.join("skills");
        create_private_dir_all(&skills).map_err(io_err("the skills directory"))?;
        let names: Vec<String> = eq.skills.iter().map(|s| s.name.clone()).collect();
        link_entries(&base_dir.join("skills"), &skills, &names)?;
        agent_adaptor_driver_kit::skills::materialize(eq.skills, &skills)
            .map_err(io_err("copying the skills"))?;
    }
    Ok(run)
}

/// The base settings, `{}` when there are none.
fn read_settings(path: &Path) -> Result<Value, HomeError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(json!({})),
        Err(e) => return Err(io_err("reading settings.json")(e)),
    };
    let bad = |reason: String| HomeError::Settings {
        path: path.to_owned(),
        reason,
    };
    match serde_json::from_str::<Value>(&strip_comments(&text)) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(bad("not an object".into())),
        Err(e) => Err(bad(e.to_string())),
    }
}

/// The global context file Gemini reads first (`context.fileName`: a name
/// or a list of names).
fn context_file_name(settings: &Value) -> String {
    let name = &settings["context"]["fileName"];
    name.as_str()
        .or_else(|| {
            name.as_array()
                .and_then(|a| a.first())
                .and_then(Value::as_str)
        })
        .filter(|n| !n.is_empty() && !n.contains(['/', '\\']) && *n != "." && *n != "..")
        .unwrap_or(DEFAULT_CONTEXT_FILE)
        .to_owned()
}

fn merge_servers(settings: &mut Value, servers: &Map<String, Value>, strict: bool) {
    let Some(object) = settings.as_object_mut() else {
        return;
    };
    if servers.is_empty() && !strict {
        return;
    }
    let entry = object
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    if strict || !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Some(map) = entry.as_object_mut() {
        map.extend(servers.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// Link every entry of `from` into `to`, except the names in `skip`.
fn link_entries(from: &Path, to: &Path, skip: &[String]) -> Result<(), HomeError> {
    let entries = match fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("reading the base home")(e)),
    };
    for entry in entries {
        let entry = entry.map_err(io_err("reading the base home"))?;
        let name = entry.file_name();
        if skip.iter().any(|s| name == s.as_str()) {
            continue;
        }
        symlink(&entry.path(), &to.join(&name)).map_err(io_err("linking the base home"))?;
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(src: &Path, dst: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(src, dst)
}

#[cfg(not(unix))]
fn symlink(_src: &Path, _dst: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "the overlay home needs symbolic links",
    ))
}

/// JSON with `//` and `/* */` comments (what Gemini's settings loader
/// accepts) made plain JSON; comments become spaces, strings are kept.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn comments_are_stripped_and_strings_kept() {
        let text = "{ // a comment\n \"a\": \"http://x/*y*/\", /* b */ \"b\": \"q\\\"//\" }";
        let v: Value = serde_json::from_str(&strip_comments(text)).unwrap();
        assert_eq!(v, json!({"a": "http://x/*y*/", "b": "q\"//"}));
    }

    #[test]
    fn the_overlay_links_the_base_and_adds_the_equipment() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        let dir = base.join(".gemini");
        fs::create_dir_all(dir.join("skills/mine")).unwrap();
        fs::write(
            dir.join("settings.json"),
            r#"{"context":{"fileName":["AGENTS.md","GEMINI.md"]},
               // the user's server
               "mcpServers":{"user":{"command":"u"},"same":{"command":"old"}}}"#,
        )
        .unwrap();
        fs::write(dir.join("AGENTS.md"), "user context").unwrap();
        fs::write(dir.join("oauth_creds.json"), "secret").unwrap();
        let servers: Map<String, Value> = [
            ("same".to_owned(), json!({"command": "new"})),
            (
                "run".to_owned(),
                json!({"httpUrl": "http://127.0.0.1:1/mcp"}),
            ),
        ]
        .into_iter()
        .collect();
        let eq = Equipment {
            instructions: Some("run instructions"),
            mcp_servers: servers.clone(),
            ..Default::default()
        };
        let home = overlay(base, &eq).unwrap();
        let over = home.path().join(".gemini");
        assert_eq!(
            fs::read_to_string(over.join("AGENTS.md")).unwrap(),
            "user context\n\nrun instructions"
        );
        assert_eq!(
            fs::read_link(over.join("oauth_creds.json")).unwrap(),
            dir.join("oauth_creds.json")
        );
        assert_eq!(fs::read_link(over.join("tmp")).unwrap(), dir.join("tmp"));
        assert_eq!(
            fs::read_link(over.join("skills")).unwrap(),
            dir.join("skills")
        );
        let s: Value =
            serde_json::from_str(&fs::read_to_string(over.join("settings.json")).unwrap()).unwrap();
        assert_eq!(s["mcpServers"]["user"]["command"], "u");
        assert_eq!(s["mcpServers"]["same"]["command"], "new");
        assert_eq!(s["context"]["fileName"][0], "AGENTS.md");
        // The base is untouched.
        assert_eq!(
            fs::read_to_string(dir.join("AGENTS.md")).unwrap(),
            "user context"
        );

        let strict = Equipment {
            mcp_servers: servers,
            mcp_strict: true,
            ..Default::default()
        };
        let home2 = overlay(base, &strict).unwrap();
        let s: Value = serde_json::from_str(
            &fs::read_to_string(home2.path().join(".gemini/settings.json")).unwrap(),
        )
        .unwrap();
        let mut names: Vec<&String> = s["mcpServers"].as_object().unwrap().keys().collect();
        names.sort();
        assert_eq!(names, ["run", "same"]);
        let gone = home.path();
        drop(home);
        assert!(!gone.exists());
    }

    #[test]
    fn unreadable_settings_are_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join(".gemini")).unwrap();
        fs::write(tmp.path().join(".gemini/settings.json"), "[1]").unwrap();
        assert!(matches!(
            overlay(tmp.path(), &Equipment::default()),
            Err(HomeError::Settings { .. })
        ));
    }
}
