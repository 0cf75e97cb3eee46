//! The bench binary runs a tiny plan end to end (`run --quick --no-sdk`):
//! every Rust contender, the latency, concurrency and flat-RSS parts, and the
//! results files. Nothing here looks at a timing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::process::Command;

use agent_adaptor_testkit::replay::fake_cli_binary;
use serde_json::Value;

#[test]
fn a_quick_plan_runs_end_to_end() {
    let dir =
        std::env::temp_dir().join(format!("agent-adaptor-bench-smoke-{}", std::process::id()));
    let fake = fake_cli_binary().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_agent-adaptor-bench"))
        .args(["run", "--quick", "--no-sdk", "--work-dir"])
        .arg(&dir)
        .arg("--fake")
        .arg(&fake)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench failed:\n{stderr}");

    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let samples = results["samples"].as_array().unwrap();
    // Two workload kinds × seven Rust contenders × one size × one repetition.
    assert_eq!(samples.len(), 14, "{stderr}");
    for s in samples {
        assert_eq!(s["report"]["ok"], true, "{s}");
        assert!(s["report"]["usage"]["maxrss_kib"].as_u64().unwrap() > 0);
    }
    // Both raw-pipe contenders parsed every line, the one handing them to
    // another thread too.
    for name in ["limit", "limit-stream"] {
        let mine: Vec<_> = samples.iter().filter(|s| s["contender"] == name).collect();
        assert_eq!(mine.len(), 2, "{name}");
        for s in mine {
            assert_eq!(s["report"]["lines"], s["workload"]["lines"], "{s}");
        }
    }
    // Every successful agent-adaptor run kept the complete raw stdout.
    for s in samples
        .iter()
        .filter(|s| s["report"]["raw_stdout_bytes"].is_u64())
    {
        assert_eq!(
            s["report"]["raw_stdout_bytes"], s["workload"]["bytes"],
            "{s}"
        );
    }
    for l in results["latency"].as_array().unwrap() {
        assert!(l["count"].as_u64().unwrap() > 0, "{l}");
    }
    let concurrency = results["concurrency"].as_array().unwrap();
    assert_eq!(concurrency.len(), 2);
    assert!(
        concurrency
            .iter()
            .all(|c| c["failed"] == 0 && c["events"].as_u64().unwrap() > 0)
    );
    let big = results["big"].as_array().unwrap();
    assert_eq!(big.len(), 4);
    assert!(big.iter().all(|s| s["report"]["ok"] == true));
    let md = std::fs::read_to_string(dir.join("results.md")).unwrap();
    assert!(
        md.contains("| limit |") && md.contains("### Targets"),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
