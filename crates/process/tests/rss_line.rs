//! A 256 MiB single line passes with flat memory (its own test binary, so
//! VmHWM measures this test alone).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;

use agent_adaptor_driver::RawBytes;
use agent_adaptor_process::Process;
use common::{TestSink, sh, status_kib};

const LINE: u64 = 256 * 1024 * 1024;
const LIMIT_KIB: u64 = 64 * 1024;

/// Stream `raw` and check every byte equals `byte`, except a final `\n` when `newline`.
fn check_all(raw: &RawBytes, byte: u8, newline: bool) {
    let pattern = vec![byte; 1 << 16];
    let mut r = raw.open().unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    let body = raw.len() - u64::from(newline);
    loop {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        let in_body = usize::try_from(body.saturating_sub(total)).unwrap().min(n);
        assert!(
            buf[..in_body] == pattern[..in_body],
            "content differs near offset {total}"
        );
        if in_body < n {
            assert_eq!(&buf[in_body..n], b"\n");
        }
        total += n as u64;
    }
    assert_eq!(total, raw.len());
}

#[tokio::test]
async fn line_of_256_mib_keeps_rss_flat() {
    let base_rss = status_kib("VmRSS");
    let base_hwm = status_kib("VmHWM");
    let sink = TestSink::discarding();
    let script = format!("head -c {LINE} /dev/zero | tr '\\0' 'a'; echo");
    let mut p = Process::spawn(&sh(&script)).unwrap();

    let line = p.next_line(&sink).await.unwrap().unwrap();
    assert_eq!(line.len(), LINE);
    assert!(line.is_terminated());
    assert!(
        line.as_memory().is_none(),
        "a 256 MiB line must be file-backed"
    );
    assert!(p.next_line(&sink).await.unwrap().is_none());
    let fin = p.finish(&sink).await.unwrap();
    assert!(fin.exit.success());
    assert_eq!(
        fin.stdout.len(),
        LINE + 1,
        "raw stdout = what the child wrote"
    );
    assert!(fin.stdout.as_memory().is_none(), "the capture spilled");
    let seen = sink.seen();
    assert_eq!(seen.bytes, LINE + 1, "every byte was emitted as a chunk");

    check_all(line.bytes(), b'a', false);
    check_all(&fin.stdout, b'a', true);

    let peak = status_kib("VmHWM");
    eprintln!(
        "256 MiB line: peak RSS (VmHWM) {} KiB = {:.1} MiB; harness baseline RSS {} KiB, HWM before {} KiB; {} chunks",
        peak,
        peak as f64 / 1024.0,
        base_rss,
        base_hwm,
        seen.chunks
    );
    assert!(
        peak < LIMIT_KIB,
        "peak RSS {peak} KiB exceeds {LIMIT_KIB} KiB"
    );
}
