//! The command line of a stream-json CLI (pure): one-shot `-p`, or
//! stream-json frames on stdin (the control transport, resident processes).
//! The run's equipment (instructions, MCP config) adds flags naming per-run
//! files (`equip.rs`).

use agent_adaptor_driver::Request;
use serde_json::Value;

use super::Family;
use super::config::{Config, Transport};

/// The command line for one run (program excluded).
pub fn argv(family: &Family, cfg: &Config, req: &Request) -> Vec<String> {
    argv_with(family, cfg, req, cfg.transport() == Transport::Control)
}

/// The command line of a CLI that reads its input as stream-json frames
/// (`stdin_frames`: the control transport and resident processes) or the
/// prompt as plain text (`-p`, one-shot). The permission-prompt flag is
/// passed only with [`Config::host_approvals`].
pub fn argv_with(family: &Family, cfg: &Config, req: &Request, stdin_frames: bool) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    if stdin_frames {
        if family.print_flag_with_control {
            a.push("-p".into());
        }
        a.extend(["--input-format".into(), "stream-json".into()]);
        if cfg.host_approvals
            && let Some(flag) = family.permission_prompt_flag
        {
            a.extend([flag.into(), "stdio".into()]);
        }
    } else {
        a.push("-p".into());
    }
    a.extend([
        "--output-format".into(),
        "stream-json".into(),
        "--verbose".into(),
    ]);
    if req.streaming {
        a.push("--include-partial-messages".into());
    }
    if let Some(m) = req.model_override.as_ref().or(cfg.model.as_ref()) {
        a.extend(["--model".into(), m.clone()]);
    }
    if let Some(e) = &cfg.effort {
        a.extend(["--effort".into(), e.clone()]);
    }
    if let Some(n) = cfg.max_turns {
        a.extend(["--max-turns".into(), n.to_string()]);
    }
    if let Some(p) = &cfg.permission_mode {
        a.extend(["--permission-mode".into(), p.clone()]);
    }
    if let Some(id) = req
        .session
        .as_ref()
        .and_then(|s| s.state.as_ref())
        .map(|s| s.resume_id.as_str())
        .filter(|id| !id.is_empty())
    {
        a.extend(["--resume".into(), id.to_owned()]);
    }
    for d in &cfg.add_dirs {
        a.extend(["--add-dir".into(), d.to_string_lossy().into_owned()]);
    }
    if let Some(schema) = req.native_output_schema() {
        // The CLI adds a `StructuredOutput` tool with this input schema,
        // validates the call and reports it as `result.structured_output`
        // (stream-json, one-shot and control transports alike).
        a.extend(["--json-schema".into(), cli_schema(&schema.schema_json)]);
    }
    a.extend(cfg.extra_args.iter().cloned());
    a
}

/// The schema as the CLI takes it: without a top-level `$schema`. Both CLIs
/// compile `--json-schema` with a draft-07 validator that knows no other
/// meta-schema and exits 1 on `"$schema": "…/draft/2020-12/schema"` (what
/// `schemars` writes; observed with Claude Code 2.1.332). Core compiled the
/// schema as Draft 2020-12 already and validates the answer itself.
fn cli_schema(schema_json: &str) -> String {
    match serde_json::from_str::<Value>(schema_json) {
        Ok(Value::Object(mut map)) if map.contains_key("$schema") => {
            map.remove("$schema");
            Value::Object(map).to_string()
        }
        _ => schema_json.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamjson::{CLAUDE, CODEBUDDY};
    use agent_adaptor_driver::{SessionContext, SessionState};

    #[test]
    fn one_shot_argv() {
        let mut cfg = Config::new(&CLAUDE);
        cfg.model = Some("claude-sonnet-4-5".into());
        cfg.max_turns = Some(3);
        let mut req = Request::new("run_1", "hi");
        req.streaming = true;
        assert_eq!(
            argv(&CLAUDE, &cfg, &req),
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--model",
                "claude-sonnet-4-5",
                "--max-turns",
                "3"
            ]
        );
    }

    #[test]
    fn resume_and_override() {
        let cfg = Config::new(&CLAUDE);
        let mut req = Request::new("run_1", "hi");
        req.model_override = Some("m2".into());
        req.session = Some(SessionContext {
            state: Some(SessionState {
                resume_id: "sess-9".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        let a = argv(&CLAUDE, &cfg, &req);
        assert!(a.windows(2).any(|w| w == ["--resume", "sess-9"]));
        assert!(a.windows(2).any(|w| w == ["--model", "m2"]));
        assert!(!a.contains(&"--include-partial-messages".to_owned()));
    }

    #[test]
    fn control_transport_differs_by_family() {
        let mut cfg = Config::new(&CLAUDE);
        cfg.host_approvals = true;
        let req = Request::new("run_1", "hi");
        let claude = argv(&CLAUDE, &cfg, &req);
        assert!(
            claude
                .windows(2)
                .any(|w| w == ["--permission-prompt-tool", "stdio"])
        );
        assert!(
            claude
                .windows(2)
                .any(|w| w == ["--input-format", "stream-json"])
        );
        let codebuddy = argv(&CODEBUDDY, &cfg, &req);
        assert!(!codebuddy.iter().any(|a| a == "--permission-prompt-tool"));
        assert!(!codebuddy.iter().any(|a| a == "-p"));
    }

    #[test]
    fn resident_argv_reads_frames_and_asks_only_with_host_approvals() {
        let cfg = Config::new(&CLAUDE);
        let mut req = Request::new("run_1", "hi");
        req.streaming = true;
        assert_eq!(
            argv_with(&CLAUDE, &cfg, &req, true),
            [
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages"
            ]
        );
        let mut asking = cfg.clone();
        asking.host_approvals = true;
        assert_eq!(
            argv_with(&CLAUDE, &asking, &req, true),
            argv(&CLAUDE, &asking, &req),
            "the control transport's command line"
        );
        let codebuddy = argv_with(&CODEBUDDY, &Config::new(&CODEBUDDY), &req, true);
        assert_eq!(codebuddy[..2], ["--input-format", "stream-json"]);
    }

    #[test]
    fn a_native_output_schema_becomes_json_schema() {
        use agent_adaptor_driver::{OnInvalid, OutputSchema, StructuredOutputSource};
        let schema = r#"{"type":"object"}"#;
        let mut req = Request::new("r", "p");
        req.output_schema = Some(OutputSchema {
            format: "json_schema".into(),
            schema_json: schema.into(),
            name: String::new(),
            description: String::new(),
            on_invalid: OnInvalid::FailRun,
        });
        req.structured_output_source = Some(StructuredOutputSource::Native);
        for family in [&CLAUDE, &CODEBUDDY] {
            for frames in [false, true] {
                let a = argv_with(family, &Config::new(family), &req, frames);
                assert!(
                    a.windows(2).any(|w| w == ["--json-schema", schema]),
                    "{a:?}"
                );
            }
        }
        // The CLIs' draft-07 validator refuses a 2020-12 `$schema`.
        let mut with_meta = req.clone();
        if let Some(s) = with_meta.output_schema.as_mut() {
            s.schema_json =
                r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}"#
                    .into();
        }
        let a = argv(&CLAUDE, &Config::new(&CLAUDE), &with_meta);
        assert!(
            a.windows(2).any(|w| w == ["--json-schema", schema]),
            "{a:?}"
        );
        // Core validates a prompt-validated schema itself: not passed on.
        req.structured_output_source = Some(StructuredOutputSource::PromptValidate);
        let a = argv(&CLAUDE, &Config::new(&CLAUDE), &req);
        assert!(!a.iter().any(|x| x == "--json-schema"), "{a:?}");
        // The flag belongs to the driver.
        let mut cfg = Config::new(&CLAUDE);
        cfg.extra_args = vec!["--json-schema".into(), schema.into()];
        assert!(cfg.validate(&CLAUDE).is_err());
    }
}
