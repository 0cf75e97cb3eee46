//! Fuzzing the stream-json parser with mutated captures: whatever the CLI
//! prints, the parser never panics, and what it emits always obeys the
//! payload lifecycle and the transcript rules.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::PathBuf;

use agent_adaptor_conformance::fuzz::{FuzzConfig, fuzz_inputs};
use agent_adaptor_driver::{LifecycleChecker, RunEvent, StreamCapability};
use agent_adaptor_drivers::streamjson::{CLAUDE, CODEBUDDY, ExitFacts, Out, Parser};

fn captures() -> Vec<Vec<u8>> {
    let dir = std::env::var_os("AGENT_ADAPTOR_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/cli-captures"),
        PathBuf::from,
    );
    let mut out = Vec::new();
    for family in ["claude", "codebuddy"] {
        for entry in std::fs::read_dir(dir.join(family)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(std::fs::read(path).unwrap());
            }
        }
    }
    assert!(out.len() >= 10, "the captures are missing");
    out
}

#[test]
fn the_parser_survives_mutated_captures() {
    let seeds = captures();
    let seeds: Vec<&[u8]> = seeds.iter().map(Vec::as_slice).collect();
    let config = FuzzConfig {
        cases: 400,
        ..FuzzConfig::default()
    };
    let mut modes = [(false, false), (true, false), (true, true)]
        .into_iter()
        .cycle();
    let mut family = [&CLAUDE, &CODEBUDDY].into_iter().cycle();
    fuzz_inputs(&seeds, config, |input| {
        let (payloads, partials) = modes.next().unwrap();
        let mut parser = Parser::new(family.next().unwrap(), payloads, partials);
        let mut outs = Vec::new();
        for line in input.split(|b| *b == b'\n') {
            outs.extend(parser.line(line));
        }
        let (tail, parsed) = parser.finish(ExitFacts::exited(0));
        outs.extend(tail);
        let mut rules = LifecycleChecker::new(StreamCapability::FULL);
        let mut items = Vec::new();
        for o in &outs {
            match o {
                Out::Stream(p) => rules.check(p).unwrap_or_else(|v| panic!("{v}")),
                Out::Event(RunEvent::Item(i)) => {
                    i.validate().unwrap_or_else(|v| panic!("{v}"));
                    items.push((**i).clone());
                }
                _ => {}
            }
        }
        if payloads {
            rules.finish(true).unwrap_or_else(|v| panic!("{v}"));
        }
        assert_eq!(items, parsed.transcript);
    });
}
