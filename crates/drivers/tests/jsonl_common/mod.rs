//! Shared by `gemini_driver.rs` and `cursor_driver.rs`: where the drivers'
//! own fixtures live, how a parse is judged (lifecycle rules, transcript
//! item rules, the transcript mirror), fuzzing a parser, variant fixtures
//! written on the fly, and a run through core against the fake CLI.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_adaptor_conformance::fuzz::{FuzzConfig, fuzz_inputs};
use agent_adaptor_core::{Agent, Error, Event, RunOptions, RunResult, Runner};
use agent_adaptor_driver::{
    LifecycleChecker, RunEvent, StreamCapability, StreamKind, StreamPayload, TranscriptItem,
};
use agent_adaptor_drivers::pump::{LineProtocol, Out};
use agent_adaptor_testkit::fixtures;
use futures::StreamExt;

/// A bound for every fake-CLI run (they take milliseconds).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The path of a fixture: `shared/...` captures by their name relative to
/// the captures directory, this crate's own (`own/<cli>/<file>`) under
/// `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    match name.strip_prefix("own/") {
        Some(rel) => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(rel),
        None => fixtures::path(name),
    }
}

/// The stdout lines of a fixture.
pub fn lines(name: &str) -> Vec<String> {
    let capture = fixtures::load_path(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    capture
        .stdout_lines()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// Feed `lines` to `parser`, then `finish` it; returns everything it emitted
/// and what `finish` formed.
pub fn feed<P: LineProtocol, T>(
    parser: &mut P,
    lines: &[String],
    finish: impl FnOnce(&mut P) -> (Vec<Out>, T),
) -> (Vec<Out>, T) {
    let mut outs = Vec::new();
    for l in lines {
        outs.extend(parser.line(l.as_bytes()));
    }
    let (tail, parsed) = finish(parser);
    outs.extend(tail);
    (outs, parsed)
}

/// Judge one parse: every payload obeys the lifecycle rules of `cap`
/// (none at all when `payloads` is off), every item is valid, and the items
/// emitted are exactly `transcript`, in order.
pub fn judge(
    what: &str,
    outs: &[Out],
    cap: StreamCapability,
    payloads: bool,
    transcript: &[TranscriptItem],
) {
    let mut rules = LifecycleChecker::new(cap);
    let mut items = Vec::new();
    for o in outs {
        match o {
            Out::Stream(s) => {
                assert!(payloads, "{what}: a payload while payloads are off: {s:?}");
                rules.check(s).unwrap_or_else(|v| panic!("{what}: {v}"));
            }
            Out::Event(RunEvent::Item(i)) => {
                i.validate().unwrap_or_else(|v| panic!("{what}: {v}"));
                items.push((**i).clone());
            }
            _ => {}
        }
    }
    if payloads {
        rules.finish(true).unwrap_or_else(|v| panic!("{what}: {v}"));
    }
    assert_eq!(items, transcript, "{what}: the transcript mirror");
}

/// The payloads of a parse.
pub fn payloads(outs: &[Out]) -> Vec<&StreamPayload> {
    outs.iter()
        .filter_map(|o| match o {
            Out::Stream(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// The text deltas of a parse, as (message id, delta).
pub fn text_deltas(outs: &[Out]) -> Vec<(String, String)> {
    payloads(outs)
        .into_iter()
        .filter_map(|p| match &p.kind {
            StreamKind::TextContent { message_id, delta } => {
                Some((message_id.to_string(), delta.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The operational notices of a parse: (text, data).
pub fn notices(outs: &[Out]) -> Vec<String> {
    outs.iter()
        .filter_map(|o| match o {
            Out::Event(RunEvent::Lifecycle(e)) => Some(e.text.clone()),
            _ => None,
        })
        .collect()
}

/// Fuzz a parser seeded with `seeds` (fixture names): it never panics and
/// its payloads always obey the lifecycle rules of `cap`.
pub fn fuzz<P: LineProtocol, T>(
    seeds: &[&str],
    cap: StreamCapability,
    make: impl Fn() -> P,
    finish: impl Fn(&mut P) -> (Vec<Out>, T),
) {
    let seeds: Vec<Vec<u8>> = seeds
        .iter()
        .map(|n| {
            fixtures::load_path(&fixture(n))
                .unwrap_or_else(|e| panic!("{n}: {e}"))
                .stdout_bytes()
        })
        .collect();
    let seeds: Vec<&[u8]> = seeds.iter().map(Vec::as_slice).collect();
    fuzz_inputs(
        &seeds,
        FuzzConfig {
            cases: 400,
            ..FuzzConfig::default()
        },
        |input| {
            let mut p = make();
            let mut outs = Vec::new();
            for l in input.split(|b| *b == b'\n') {
                outs.extend(p.line(l));
            }
            let (tail, _) = finish(&mut p);
            outs.extend(tail);
            let mut rules = LifecycleChecker::new(cap);
            for o in &outs {
                if let Out::Stream(s) = o {
                    rules.check(s).unwrap_or_else(|v| panic!("{v}"));
                }
            }
            rules.finish(true).unwrap_or_else(|v| panic!("{v}"));
        },
    );
}

/// Write `lines` as a `.jsonl` fixture in `dir`.
pub fn write_variant(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    path
}

/// Everything a run through core produced.
pub struct Run {
    /// The events, in order.
    pub events: Vec<Event>,
    /// How it ended.
    pub outcome: Result<RunResult, Error>,
}

impl Run {
    /// The notices' texts.
    pub fn notices(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Notice(n) if n.item.is_none() => Some(n.text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The error of a run that must have failed.
    pub fn err(&self) -> &agent_adaptor_core::RunError {
        match &self.outcome {
            Ok(r) => panic!("the run succeeded with {:?}", r.text),
            Err(e) => e
                .as_run_error()
                .unwrap_or_else(|| panic!("not a RunError: {e}")),
        }
    }
}

/// Run `prompt` on `agent` to the end, calling `on_event` on every event (it
/// may cancel).
pub async fn drain(
    agent: &Agent,
    prompt: &str,
    mut on_event: impl FnMut(&Event, &agent_adaptor_core::RunStream),
) -> Run {
    let mut stream = agent.stream_with(prompt, RunOptions::new().timeout(RUN_TIMEOUT));
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        on_event(&event, &stream);
        events.push(event);
    }
    let outcome = stream.result().await;
    Run { events, outcome }
}

/// A clean process end with `code`.
pub fn exit(code: i32) -> agent_adaptor_drivers::one_shot::Exit {
    agent_adaptor_drivers::one_shot::Exit {
        process: agent_adaptor_drivers::exit::ExitFacts::exited(code),
        ..Default::default()
    }
}

/// Parse `lines` with a fresh parser, judge the contract, return the layers.
pub fn parse_with<P: agent_adaptor_drivers::one_shot::OneShotParser>(
    parser: &mut P,
    what: &str,
    lines: &[String],
    cap: StreamCapability,
    streaming: bool,
    code: i32,
) -> (Vec<Out>, agent_adaptor_drivers::one_shot::Parsed) {
    let (outs, parsed) = feed(parser, lines, |p| p.finish(&exit(code)));
    judge(
        what,
        &outs,
        cap,
        streaming,
        &parsed.transcript.to_vec().unwrap(),
    );
    (outs, parsed)
}
