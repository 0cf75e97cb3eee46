//! The `--args-out` file: what command line and environment `fake-cli` was started with.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use serde_json::{Value, json};

/// The arguments (without the program name) and selected environment variables a
/// `fake-cli` process was started with, as written by `--args-out` / `--env-out`.
///
/// The file holds one JSON object a line, so that arguments holding newlines (prompts)
/// survive: `{"arg":"exec"}` for each argument in order, then
/// `{"env":"NAME","value":"…"}` for each `--env-out` variable (`"value":null` when it was
/// unset).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArgsRecord {
    /// Every argument after the program name, in order (the fake's own flags included).
    pub args: Vec<String>,
    /// The requested environment variables; `None` for one that was not set.
    pub env: BTreeMap<String, Option<String>>,
}

impl ArgsRecord {
    /// Builds the record for `args`, reading the variables `env_names` from this
    /// process's environment (non-UTF-8 text is converted lossily).
    pub fn from_env(args: Vec<String>, env_names: &[String]) -> ArgsRecord {
        let env = env_names
            .iter()
            .map(|name| {
                (
                    name.clone(),
                    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        ArgsRecord { args, env }
    }

    /// The file text: one JSON object a line.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        let lines = self.args.iter().map(|arg| json!({ "arg": arg })).chain(
            self.env
                .iter()
                .map(|(name, value)| json!({ "env": name, "value": value })),
        );
        for line in lines {
            text.push_str(&line.to_string());
            text.push('\n');
        }
        text
    }

    /// Parses the file text written by [`ArgsRecord::to_text`].
    pub fn parse(text: &str) -> Result<ArgsRecord, io::Error> {
        let mut record = ArgsRecord::default();
        for (index, line) in text.lines().enumerate() {
            let bad = || {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("args record line {}: {line:?}", index + 1),
                )
            };
            let value: Value = serde_json::from_str(line).map_err(|_| bad())?;
            if let Some(arg) = value.get("arg").and_then(Value::as_str) {
                record.args.push(arg.to_owned());
            } else if let Some(name) = value.get("env").and_then(Value::as_str) {
                let env_value = match value.get("value") {
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(Value::Null) | None => None,
                    Some(_) => return Err(bad()),
                };
                record.env.insert(name.to_owned(), env_value);
            } else {
                return Err(bad());
            }
        }
        Ok(record)
    }

    /// Writes the record to `path` (replacing the file).
    pub fn write(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.to_text())
    }

    /// Reads a record written by `fake-cli --args-out`.
    pub fn load(path: &Path) -> io::Result<ArgsRecord> {
        ArgsRecord::parse(&std::fs::read_to_string(path)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_arguments_with_newlines_and_unset_variables() {
        let mut record = ArgsRecord {
            args: vec!["exec".into(), "two\nlines \"quoted\"".into()],
            ..Default::default()
        };
        record.env.insert("SET".into(), Some("v".into()));
        record.env.insert("UNSET".into(), None);
        let text = record.to_text();
        assert_eq!(text.lines().count(), 4);
        assert_eq!(ArgsRecord::parse(&text).unwrap(), record);
        assert!(ArgsRecord::parse("{\"other\":1}\n").is_err());
        assert!(ArgsRecord::parse("plain text\n").is_err());
    }
}
