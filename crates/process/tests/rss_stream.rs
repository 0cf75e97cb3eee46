//! A 1 GiB stream of lines passes with flat memory (its own test binary, so
//! VmHWM measures this test alone).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;

use agent_adaptor_process::Process;
use common::{TestSink, sh, status_kib};

const TOTAL: u64 = 1024 * 1024 * 1024;
const LIMIT_KIB: u64 = 64 * 1024;

#[tokio::test]
async fn stream_of_1_gib_keeps_rss_flat() {
    let base_rss = status_kib("VmRSS");
    let base_hwm = status_kib("VmHWM");
    // 1,048,576 lines of 1,023 printable bytes + '\n'
    let body: String = (0..1023u32)
        .map(|i| char::from(b'!' + (i % 90) as u8))
        .collect();
    let body = body.replace('\'', "#");
    let script = format!("yes '{body}' | head -c {TOTAL}");
    let sink = TestSink::discarding();
    let mut p = Process::spawn(&sh(&script)).unwrap();

    let mut lines = 0u64;
    while let Some(line) = p.next_line(&sink).await.unwrap() {
        let bytes = line.as_memory().expect("1 KiB lines are in memory");
        assert!(bytes == body.as_bytes(), "line {lines} differs");
        lines += 1;
    }
    assert_eq!(lines, TOTAL / 1024);
    let fin = p.finish(&sink).await.unwrap();
    assert!(fin.exit.success());
    assert_eq!(fin.stdout.len(), TOTAL, "raw stdout = what the child wrote");
    assert!(fin.stdout.as_memory().is_none(), "the capture spilled");
    let seen = sink.seen();
    assert_eq!(seen.bytes, TOTAL);

    // the spilled capture reads back exactly
    let mut record = body.clone().into_bytes();
    record.push(b'\n');
    let pattern = record.repeat(64); // 64 KiB
    let mut r = fin.stdout.open().unwrap();
    let mut buf = vec![0u8; pattern.len()];
    let mut total = 0u64;
    loop {
        let mut filled = 0;
        while filled < buf.len() {
            let n = r.read(&mut buf[filled..]).unwrap();
            if n == 0 {
                break;
            }
            filled += n;
        }
        if filled == 0 {
            break;
        }
        assert!(
            buf[..filled] == pattern[..filled],
            "raw differs near offset {total}"
        );
        total += filled as u64;
    }
    assert_eq!(total, TOTAL);

    let peak = status_kib("VmHWM");
    eprintln!(
        "1 GiB stream: peak RSS (VmHWM) {} KiB = {:.1} MiB; harness baseline RSS {} KiB, HWM before {} KiB; {} lines, {} chunks",
        peak,
        peak as f64 / 1024.0,
        base_rss,
        base_hwm,
        lines,
        seen.chunks
    );
    assert!(
        peak < LIMIT_KIB,
        "peak RSS {peak} KiB exceeds {LIMIT_KIB} KiB"
    );
}
