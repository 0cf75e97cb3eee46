//! Every recorded capture loads, exactly; bad input gives typed errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use agent_adaptor_testkit::fixtures::{self, Capture, Direction, FixtureError, Frame};

/// The capture files, found independently of `fixtures::list`.
fn files_on_disk() -> Vec<String> {
    let root = fixtures::dir();
    let mut found = Vec::new();
    for provider in std::fs::read_dir(&root).unwrap() {
        let provider = provider.unwrap().path();
        if !provider.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&provider).unwrap() {
            let file = file.unwrap().path();
            let name = file.file_name().unwrap().to_str().unwrap().to_owned();
            if name.ends_with(".jsonl") || name.ends_with(".transcript") {
                let folder = provider.file_name().unwrap().to_str().unwrap();
                found.push(format!("{folder}/{name}"));
            }
        }
    }
    found.sort();
    found
}

/// What `wc -l` counts, plus an unterminated last line.
fn line_count(bytes: &[u8]) -> usize {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
    newlines + usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"))
}

fn scratch(name: &str, contents: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fixtures-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn the_captures_directory_is_found() {
    let dir = fixtures::dir();
    assert!(dir.is_dir(), "{} is not a directory", dir.display());
    assert!(dir.join("claude").is_dir());
}

#[test]
fn every_capture_in_the_directory_loads() {
    let on_disk = files_on_disk();
    assert!(
        on_disk.len() >= 32,
        "expected the 32 recorded captures, found {on_disk:?}"
    );
    assert_eq!(fixtures::list().unwrap(), on_disk);
    let all = fixtures::try_all().unwrap();
    assert_eq!(
        all.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>(),
        on_disk
    );
    assert_eq!(fixtures::all(), all);
    let transcripts = all.iter().filter(|(_, c)| c.is_transcript()).count();
    assert_eq!(
        transcripts,
        on_disk
            .iter()
            .filter(|n| n.ends_with(".transcript"))
            .count()
    );
}

#[test]
fn line_and_frame_counts_match_wc_l() {
    for (name, capture) in fixtures::try_all().unwrap() {
        let bytes = std::fs::read(fixtures::path(&name)).unwrap();
        let count = match &capture {
            Capture::Lines(lines) => lines.len(),
            Capture::Transcript(frames) => frames.len(),
        };
        assert_eq!(count, line_count(&bytes), "{name}");
    }
}

#[test]
fn jsonl_lines_are_the_exact_bytes_of_the_file() {
    for (name, capture) in fixtures::try_all().unwrap() {
        let Capture::Lines(lines) = &capture else {
            continue;
        };
        let bytes = std::fs::read(fixtures::path(&name)).unwrap();
        assert_eq!(capture.stdout_bytes(), bytes, "{name}");
        assert_eq!(
            capture.stdout_lines(),
            lines.iter().map(String::as_str).collect::<Vec<_>>()
        );
        assert!(capture.stdin_lines().is_empty());
    }
}

#[test]
fn transcript_frames_are_exact_and_parse_as_json() {
    for (name, capture) in fixtures::try_all().unwrap() {
        let Capture::Transcript(frames) = &capture else {
            continue;
        };
        let text = std::fs::read_to_string(fixtures::path(&name)).unwrap();
        for (raw, frame) in text.lines().zip(frames) {
            let (prefix, json) = raw.split_once(' ').unwrap();
            assert_eq!(
                Direction::from_prefix(prefix),
                Some(frame.dir),
                "{name}: {prefix}"
            );
            assert_eq!(json, frame.line, "{name}");
            serde_json::from_str::<serde_json::Value>(&frame.line)
                .unwrap_or_else(|e| panic!("{name}: frame is not JSON ({e}): {}", frame.line));
        }
        assert!(
            frames.iter().any(|f| f.dir == Direction::CliToSdk),
            "{name}"
        );
        assert!(
            frames.iter().any(|f| f.dir == Direction::SdkToCli),
            "{name}"
        );
        let mut stdout = Vec::new();
        for frame in frames.iter().filter(|f| f.dir == Direction::CliToSdk) {
            stdout.extend_from_slice(frame.line.as_bytes());
            stdout.push(b'\n');
        }
        assert_eq!(capture.stdout_bytes(), stdout, "{name}");
    }
}

#[test]
fn claude_control_transcript_has_the_recorded_shape() {
    let capture = fixtures::load("claude/control-can-use-tool-allow.transcript").unwrap();
    let Capture::Transcript(frames) = &capture else {
        panic!("not a transcript")
    };
    assert_eq!(frames.len(), 13);
    assert_eq!(capture.stdin_lines().len(), 3);
    assert_eq!(capture.stdout_lines().len(), 10);
    assert_eq!(frames[0].dir, Direction::SdkToCli);
    assert!(frames[0].line.starts_with(r#"{"type": "control_request""#));
    assert_eq!(frames[2].dir, Direction::CliToSdk);
    assert!(frames[2].line.starts_with(r#"{"type":"control_response""#));
}

#[test]
fn json_rpc_transcripts_map_client_and_server_prefixes() {
    for name in [
        "codex/app-server-approval.transcript",
        "gemini/acp.transcript",
    ] {
        let capture = fixtures::load(name).unwrap();
        let Capture::Transcript(frames) = &capture else {
            panic!("not a transcript")
        };
        assert_eq!(
            frames[0].dir,
            Direction::SdkToCli,
            "{name}: the client speaks first"
        );
        assert!(
            frames[0].line.contains(r#""method": "initialize""#),
            "{name}"
        );
        assert_eq!(frames[1].dir, Direction::CliToSdk, "{name}");
    }
    assert_eq!(Direction::from_prefix("C->S"), Some(Direction::SdkToCli));
    assert_eq!(Direction::from_prefix("A->C"), Some(Direction::CliToSdk));
    assert_eq!(Direction::SdkToCli.to_string(), "SDK->CLI");
}

#[test]
fn an_empty_capture_is_empty() {
    let capture = fixtures::load("gemini/stream-api-error.jsonl").unwrap();
    assert_eq!(capture, Capture::Lines(Vec::new()));
    assert!(capture.stdout_bytes().is_empty());
}

#[test]
fn absolute_paths_load_too() {
    let absolute = fixtures::path("codex/exec-basic.jsonl");
    assert!(absolute.is_absolute());
    assert_eq!(
        fixtures::load(&absolute).unwrap(),
        fixtures::load("codex/exec-basic.jsonl").unwrap()
    );
}

#[test]
fn a_missing_capture_is_not_found() {
    let err = fixtures::load("claude/no-such-capture.jsonl").unwrap_err();
    let FixtureError::NotFound { path } = &err else {
        panic!("wrong error: {err:?}")
    };
    assert!(path.ends_with("claude/no-such-capture.jsonl"));
    assert!(err.to_string().contains("no-such-capture.jsonl"));
}

#[test]
fn a_bad_direction_prefix_names_its_line() {
    let path = scratch(
        "bad-prefix.transcript",
        b"CLI->SDK {\"a\":1}\nCLI-SDK {\"b\":2}\n",
    );
    let err = fixtures::load_path(&path).unwrap_err();
    let FixtureError::BadDirection { line, found, .. } = &err else {
        panic!("wrong error: {err:?}")
    };
    assert_eq!((*line, found.as_str()), (2, "CLI-SDK"));
    assert!(err.to_string().contains(":2:"), "{err}");

    let path = scratch("no-space.transcript", b"SDK->CLI {}\nSDK->CLI{}\n");
    let err = fixtures::load_path(&path).unwrap_err();
    assert!(
        matches!(err, FixtureError::BadDirection { line: 2, .. }),
        "{err:?}"
    );

    let path = scratch("blank-line.transcript", b"SDK->CLI {}\n\nCLI->SDK {}\n");
    assert!(matches!(
        fixtures::load_path(&path),
        Err(FixtureError::BadDirection { line: 2, .. })
    ));
}

#[test]
fn other_bad_files_give_typed_errors() {
    let path = scratch("capture.txt", b"{}\n");
    assert!(matches!(
        fixtures::load_path(&path),
        Err(FixtureError::UnknownFormat { .. })
    ));

    let path = scratch("latin1.jsonl", b"{}\n{\"x\":\"\xe9\"}\n");
    assert!(matches!(
        fixtures::load_path(&path),
        Err(FixtureError::NotUtf8 { line: 2, .. })
    ));
}

#[test]
fn lines_keep_their_bytes_and_an_unterminated_last_line_counts() {
    let path = scratch("raw.jsonl", b"{\"a\":1}\r\n  \n{\"b\":2}");
    let capture = fixtures::load_path(&path).unwrap();
    assert_eq!(
        capture,
        Capture::Lines(vec!["{\"a\":1}\r".into(), "  ".into(), "{\"b\":2}".into()])
    );
    assert_eq!(capture.stdout_bytes(), b"{\"a\":1}\r\n  \n{\"b\":2}\n");

    let path = scratch(
        "frames.transcript",
        b"SDK->CLI {\"q\": 1}\nCLI->SDK {\"r\":1}\n",
    );
    let capture = fixtures::load_path(&path).unwrap();
    assert_eq!(
        capture,
        Capture::Transcript(vec![
            Frame {
                dir: Direction::SdkToCli,
                line: "{\"q\": 1}".into()
            },
            Frame {
                dir: Direction::CliToSdk,
                line: "{\"r\":1}".into()
            },
        ])
    );
    assert_eq!(capture.stdin_lines(), ["{\"q\": 1}"]);
}
