//! A child that serves several requests in turn (a resident process): the
//! raw capture handed over per turn, the counted stdin write, `try_wait`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use agent_adaptor_process::{Process, StdinMode};
use common::{TestSink, sh};

const BOUND: Duration = Duration::from_secs(20);

/// Answers each stdin line with two stdout lines and one stderr line; exits
/// at end-of-file.
const SERVER: &str = r#"n=0
while IFS= read -r req; do
  n=$((n+1))
  echo "turn $n: $req"
  echo "done $n"
  echo "err $n" >&2
done
echo bye"#;

async fn turn(p: &mut Process, sink: &TestSink) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    loop {
        let line = tokio::time::timeout(BOUND, p.next_line(sink))
            .await
            .unwrap()
            .unwrap()
            .expect("the server answers");
        let bytes = line.bytes().to_vec().unwrap();
        let last = bytes.starts_with(b"done");
        lines.push(bytes);
        if last {
            return lines;
        }
    }
}

#[tokio::test]
async fn each_turn_hands_over_exactly_its_bytes() {
    for spill in [8 << 20, 4] {
        let sink = TestSink::new();
        let mut cmd = sh(SERVER);
        cmd.stdin(StdinMode::Pipe).spill_threshold(spill);
        let mut p = Process::spawn(&cmd).unwrap();
        let mut stdin = p.take_stdin().unwrap();
        let mut stderr_seen = Vec::new();
        for n in 1..=3 {
            stdin
                .write_line_counted(format!("req-{n}").as_bytes())
                .await
                .unwrap();
            let lines = turn(&mut p, &sink).await;
            assert_eq!(lines.len(), 2);
            assert!(p.try_wait().is_none(), "the server still runs");
            let got = p.take_capture().unwrap();
            assert_eq!(
                got.stdout.to_vec().unwrap(),
                format!("turn {n}: req-{n}\ndone {n}\n").into_bytes(),
                "spill threshold {spill}"
            );
            stderr_seen.extend(got.stderr.to_vec().unwrap());
        }
        drop(stdin);
        let fin = p.finish(&sink).await.unwrap();
        assert_eq!(
            fin.stdout.to_vec().unwrap(),
            b"bye\n",
            "only after the last hand-over"
        );
        stderr_seen.extend(fin.stderr.to_vec().unwrap());
        assert_eq!(stderr_seen, b"err 1\nerr 2\nerr 3\n");
        assert!(fin.exit.success());
        // The live chunks still carried every byte.
        let seen = sink.seen();
        let mut all = Vec::new();
        for n in 1..=3 {
            all.extend(format!("turn {n}: req-{n}\ndone {n}\n").into_bytes());
        }
        all.extend(b"bye\n");
        assert_eq!(seen.stdout, all);
    }
}

#[tokio::test]
async fn bytes_read_past_the_last_pulled_line_stay_for_the_next_turn() {
    let sink = TestSink::new();
    let mut p = Process::spawn(&sh("printf 'a\\nb\\nc'")).unwrap();
    let first = p.next_line(&sink).await.unwrap().unwrap();
    assert_eq!(first.as_memory(), Some(&b"a"[..]));
    // Let the rest arrive before handing over.
    let _ = tokio::time::timeout(BOUND, async {
        while p.try_wait().is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let head = p.take_capture().unwrap();
    assert_eq!(head.stdout.to_vec().unwrap(), b"a\n");
    let second = p.next_line(&sink).await.unwrap().unwrap();
    assert_eq!(second.as_memory(), Some(&b"b"[..]));
    let third = p.next_line(&sink).await.unwrap().unwrap();
    assert_eq!(third.as_memory(), Some(&b"c"[..]));
    assert!(p.next_line(&sink).await.unwrap().is_none());
    let rest = p.take_capture().unwrap();
    assert_eq!(rest.stdout.to_vec().unwrap(), b"b\nc");
    let fin = p.finish(&sink).await.unwrap();
    assert!(fin.stdout.is_empty());
}

#[tokio::test]
async fn a_dead_reader_accepts_no_byte_and_try_wait_reaps() {
    let sink = TestSink::new();
    let mut cmd = sh("exec 0<&-; exit 7");
    cmd.stdin(StdinMode::Pipe);
    let mut p = Process::spawn(&cmd).unwrap();
    let mut stdin = p.take_stdin().unwrap();
    let exit = tokio::time::timeout(BOUND, async {
        loop {
            if let Some(exit) = p.try_wait() {
                return exit;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(exit.code, Some(7));
    let err = stdin.write_line_counted(b"never read").await.unwrap_err();
    assert_eq!(err.accepted, 0, "{err}");
    assert_eq!(err.error.kind(), std::io::ErrorKind::BrokenPipe);
    // A closed controller refuses without writing.
    let err = stdin.write_line_counted(b"again").await.unwrap_err();
    assert_eq!(err.accepted, 0);
    let fin = p.finish(&sink).await.unwrap();
    assert_eq!(fin.exit.code, Some(7));
}
