//! The fake agent's sessions: each one's cwd and turns, kept in
//! `<state>/sessions.json` when a state directory is given, so a second
//! process can `session/load` what the first one created.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One finished turn: what the user said and what the agent answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// The prompt's text.
    pub user: String,
    /// The agent's text, all deltas joined.
    pub agent: String,
}

/// One session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The `cwd` of `session/new`.
    pub cwd: PathBuf,
    /// Its finished turns, oldest first.
    pub turns: Vec<Turn>,
}

/// All sessions, by id.
#[derive(Debug, Default)]
pub struct Sessions {
    file: Option<PathBuf>,
    by_id: BTreeMap<String, Session>,
}

impl Sessions {
    /// The sessions saved under `state`, or none (in memory only) without it.
    pub fn open(state: Option<PathBuf>) -> io::Result<Sessions> {
        let Some(dir) = state else {
            return Ok(Sessions::default());
        };
        std::fs::create_dir_all(&dir)?;
        let file = dir.join("sessions.json");
        let by_id = match std::fs::read_to_string(&file) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(e),
        };
        Ok(Sessions {
            file: Some(file),
            by_id,
        })
    }

    /// Creates a session in `cwd` and returns its id (`fake-session-N`).
    pub fn create(&mut self, cwd: PathBuf) -> io::Result<String> {
        let id = format!("fake-session-{}", self.by_id.len() + 1);
        self.by_id.insert(
            id.clone(),
            Session {
                cwd,
                turns: Vec::new(),
            },
        );
        self.save()?;
        Ok(id)
    }

    /// The session `id`, if it exists.
    pub fn get(&self, id: &str) -> Option<&Session> {
        self.by_id.get(id)
    }

    /// Records a finished turn of session `id` (unknown ids are ignored).
    pub fn record(&mut self, id: &str, turn: Turn) -> io::Result<()> {
        if let Some(session) = self.by_id.get_mut(id) {
            session.turns.push(turn);
            self.save()?;
        }
        Ok(())
    }

    fn save(&self) -> io::Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let text = serde_json::to_string_pretty(&self.by_id).map_err(io::Error::other)?;
        let tmp = file.with_extension("json.tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(tmp, file)
    }
}
