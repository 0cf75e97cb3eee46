//! Lines, chunks and the raw capture: byte-exact, complete, cancellation safe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use agent_adaptor_driver::{Emit, EventSink, RunEvent, SinkError, StreamPayload};
use agent_adaptor_process::{Line, Process};
use common::{TestSink, assert_same, pseudo_random, sh, split_lines};

async fn all_lines(p: &mut Process, sink: &dyn EventSink) -> Vec<Line> {
    let mut out = Vec::new();
    while let Some(line) = p.next_line(sink).await.unwrap() {
        out.push(line);
    }
    out
}

fn line_bytes(lines: &[Line]) -> Vec<Vec<u8>> {
    lines.iter().map(|l| l.bytes().to_vec().unwrap()).collect()
}

/// A file with exactly these bytes, for `cat` to replay.
fn data_file(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, bytes).unwrap();
    f
}

#[tokio::test]
async fn invalid_utf8_round_trips_through_lines_chunks_and_capture() {
    let out: &[u8] = b"\xff\xfe ok \xc3\x28\n\x80\x00tail\r\n\xed\xa0\x80";
    let err: &[u8] = b"\xffbad\xc0\xaf\nerr-tail";
    let (fo, fe) = (data_file(out), data_file(err));
    let script = format!(
        "cat '{}'; cat '{}' >&2",
        fo.path().display(),
        fe.path().display()
    );
    let sink = TestSink::new();
    let mut p = Process::spawn(&sh(&script)).unwrap();
    let lines = all_lines(&mut p, &sink).await;
    let fin = p.finish(&sink).await.unwrap();

    assert_eq!(
        line_bytes(&lines),
        vec![
            b"\xff\xfe ok \xc3\x28".to_vec(),
            b"\x80\x00tail\r".to_vec(),
            b"\xed\xa0\x80".to_vec()
        ]
    );
    assert!(lines[1].is_terminated() && !lines[2].is_terminated());
    assert_eq!(fin.stdout.to_vec().unwrap(), out);
    assert_eq!(fin.stderr.to_vec().unwrap(), err);
    let seen = sink.seen();
    assert_eq!(seen.stdout, out);
    assert_eq!(seen.stderr, err);
    assert!(fin.exit.success());
    assert!(fin.sink_error.is_none());
}

#[tokio::test]
async fn spilled_capture_and_file_backed_lines_are_identical() {
    // 1 MiB of pseudo-random bytes (about 4,000 '\n's, some lines far longer
    // than 300 bytes) through a 1 KiB spill threshold, on both streams.
    let data = pseudo_random(1 << 20, 0x9e37_79b9_7f4a_7c15);
    let f = data_file(&data);
    let script = format!("cat '{0}'; cat '{0}' >&2", f.path().display());
    let mut cmd = sh(&script);
    cmd.spill_threshold(1024).max_line_in_memory(300);
    let sink = TestSink::new();
    let mut p = Process::spawn(&cmd).unwrap();
    let lines = all_lines(&mut p, &sink).await;
    let fin = p.finish(&sink).await.unwrap();

    assert!(fin.stdout.as_memory().is_none(), "stdout must have spilled");
    assert!(fin.stderr.as_memory().is_none(), "stderr must have spilled");
    assert_eq!(fin.stdout.len(), data.len() as u64);
    assert_same(&fin.stdout.to_vec().unwrap(), &data);
    assert_same(&fin.stderr.to_vec().unwrap(), &data);
    let want = split_lines(&data);
    assert_eq!(line_bytes(&lines), want);
    let (mut mem, mut file) = (0, 0);
    for (line, w) in lines.iter().zip(&want) {
        assert_eq!(line.len(), w.len() as u64);
        match line.as_memory() {
            Some(m) => {
                assert!(m.len() <= 300);
                mem += 1;
            }
            None => {
                assert!(line.len() > 300);
                file += 1;
            }
        }
    }
    assert!(
        mem > 100 && file > 100,
        "both kinds exercised: {mem} in memory, {file} file-backed"
    );
    let seen = sink.seen();
    assert_same(&seen.stdout, &data);
    assert_same(&seen.stderr, &data);
}

#[tokio::test]
async fn long_line_is_file_backed_and_streams_through_open() {
    let script = "head -c 3000000 /dev/zero | tr '\\0' a; echo; echo short";
    let sink = TestSink::new();
    let mut p = Process::spawn(&sh(script)).unwrap();
    let long = p.next_line(&sink).await.unwrap().unwrap();
    assert_eq!(long.len(), 3_000_000);
    assert!(long.as_memory().is_none());
    let mut r = long.bytes().open().unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        let k = std::io::Read::read(&mut r, &mut buf).unwrap();
        if k == 0 {
            break;
        }
        assert!(buf[..k].iter().all(|b| *b == b'a'));
        n += k as u64;
    }
    assert_eq!(n, 3_000_000);
    let short = p.next_line(&sink).await.unwrap().unwrap();
    assert_eq!(short.as_memory(), Some(&b"short"[..]));
    assert!(p.next_line(&sink).await.unwrap().is_none());
    let fin = p.finish(&sink).await.unwrap();
    assert_eq!(fin.stdout.len(), 3_000_000 + 1 + 6);
    // the line stays readable after the process is gone
    assert_eq!(long.bytes().to_vec().unwrap().len(), 3_000_000);
}

#[tokio::test]
async fn stderr_flood_does_not_block_stdout_lines() {
    // 1 MiB of stderr before the first stdout byte: a sequential reader deadlocks.
    let script = "head -c 1048576 /dev/zero >&2; echo done";
    let sink = TestSink::new();
    let mut p = Process::spawn(&sh(script)).unwrap();
    let line = tokio::time::timeout(Duration::from_secs(20), p.next_line(&sink))
        .await
        .expect("stderr flood must not block stdout")
        .unwrap()
        .unwrap();
    assert_eq!(line.as_memory(), Some(&b"done"[..]));
    let fin = p.finish(&sink).await.unwrap();
    assert_eq!(fin.stderr.len(), 1 << 20);
    assert_eq!(sink.seen().stderr.len(), 1 << 20);
}

#[tokio::test]
async fn empty_output_and_unterminated_tail() {
    let sink = TestSink::new();
    let mut p = Process::spawn(&sh("true")).unwrap();
    assert!(p.next_line(&sink).await.unwrap().is_none());
    assert!(
        p.next_line(&sink).await.unwrap().is_none(),
        "None stays None"
    );
    let fin = p.finish(&sink).await.unwrap();
    assert!(fin.stdout.is_empty() && fin.stderr.is_empty());
    assert_eq!(sink.seen().chunks, 0);

    let mut p = Process::spawn(&sh("printf 'x\\n\\ny'")).unwrap();
    let lines = all_lines(&mut p, &sink).await;
    assert_eq!(
        line_bytes(&lines),
        vec![b"x".to_vec(), b"".to_vec(), b"y".to_vec()]
    );
    assert!(lines[1].is_terminated() && lines[1].is_empty());
    assert!(!lines[2].is_terminated());
    p.finish(&sink).await.unwrap();
}

/// A sink that yields before accepting, so a cancelled `next_line` can be
/// dropped in the middle of an emit.
struct YieldingSink(TestSink);

impl EventSink for YieldingSink {
    fn emit(&self, event: RunEvent) -> Emit<'_> {
        Emit::new(async move {
            tokio::task::yield_now().await;
            self.0.emit(event).await
        })
    }
    fn emit_stream(&self, payload: StreamPayload) -> Emit<'_> {
        self.0.emit_stream(payload)
    }
}

async fn pull_with_random_cancels(
    sink: &dyn EventSink,
    script: &str,
    seed: u64,
) -> (Vec<Vec<u8>>, Vec<u8>) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut p = Process::spawn(&sh(script)).unwrap();
    let mut lines = Vec::new();
    let mut cancelled = 0;
    loop {
        let wait = Duration::from_micros(rng.random_range(0..300));
        tokio::select! {
            line = p.next_line(sink) => match line.unwrap() {
                Some(l) => lines.push(l.bytes().to_vec().unwrap()),
                None => break,
            },
            () = tokio::time::sleep(wait) => cancelled += 1,
        }
    }
    assert!(cancelled > 0, "the test must actually cancel next_line");
    let fin = p.finish(sink).await.unwrap();
    (lines, fin.stdout.to_vec().unwrap())
}

#[tokio::test]
async fn next_line_is_cancellation_safe() {
    // bursts of lines with pauses, so cancellations land everywhere
    let script = "i=0; while [ $i -lt 300 ]; do echo \"line-$i-abcdefghijklmnopqrstuvwxyz\"; \
                  [ $((i % 50)) -eq 0 ] && sleep 0.01; i=$((i+1)); done";
    let want: Vec<u8> = (0..300)
        .flat_map(|i| format!("line-{i}-abcdefghijklmnopqrstuvwxyz\n").into_bytes())
        .collect();

    // synchronous sink: lines, raw and the live chunks are all exact
    let sink = TestSink::new();
    let (lines, raw) = pull_with_random_cancels(&sink, script, 1).await;
    assert_eq!(raw, want);
    assert_eq!(lines, split_lines(&want));
    assert_eq!(sink.seen().stdout, want);

    // yielding sink: drops may hit an emit; lines and raw are still exact,
    // live chunks are at most once (never duplicated)
    let sink = YieldingSink(TestSink::new());
    let (lines, raw) = pull_with_random_cancels(&sink, script, 2).await;
    assert_eq!(raw, want);
    assert_eq!(lines, split_lines(&want));
    assert!(sink.0.seen().stdout.len() <= want.len());
}

#[tokio::test]
async fn sink_cancellation_is_reported_once_and_capture_continues() {
    let script = "yes 0123456789abcdef | head -n 20000";
    let want: Vec<u8> = b"0123456789abcdef\n".repeat(20000);
    let sink = TestSink::cancelling_after(1);
    let mut p = Process::spawn(&sh(script)).unwrap();
    let mut lines = 0usize;
    let err = loop {
        match p.next_line(&sink).await {
            Ok(Some(_)) => lines += 1,
            Ok(None) => panic!("the sink must have refused before the end"),
            Err(e) => break e,
        }
    };
    assert!(err.is_cancelled(), "{err:?}");
    // later calls keep working without emitting; the caller would stop here
    while p.next_line(&sink).await.unwrap().is_some() {
        lines += 1;
    }
    assert_eq!(lines, 20000);
    assert_eq!(sink.refused(), 1, "no emit after the first refusal");
    let fin = p.shutdown(&sink).await.unwrap();
    assert_eq!(fin.sink_error, Some(SinkError::Cancelled));
    assert_eq!(fin.stdout.to_vec().unwrap(), want);
    assert_eq!(sink.seen().chunks, 1);
}

#[tokio::test]
async fn futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let sink = TestSink::new();
    let mut p = Process::spawn(&sh("echo hi")).unwrap();
    {
        let fut = p.next_line(&sink);
        assert_send(&fut);
        fut.await.unwrap();
    }
    let fin = p.finish(&sink);
    assert_send(&fin);
    fin.await.unwrap();
}

#[tokio::test]
async fn ready_lines_are_the_rest_of_what_was_read_in_order_and_lose_nothing() {
    // One write of several lines: after the first line, the rest is ready
    // without another read; mixing the two calls keeps order and bytes.
    let data: Vec<u8> = (0..2000)
        .flat_map(|i| format!("line {i} {}\n", "x".repeat(i % 97)).into_bytes())
        .collect();
    let f = data_file(&data);
    let sink = TestSink::new();
    let mut p = Process::spawn(&sh(&format!("cat '{}'", f.path().display()))).unwrap();
    let mut lines = Vec::new();
    let mut ready_taken = 0;
    while let Some(line) = p.next_line(&sink).await.unwrap() {
        lines.push(line);
        while let Some(line) = p.ready_line() {
            ready_taken += 1;
            lines.push(line);
        }
    }
    assert!(p.ready_line().is_none(), "nothing after the end of stdout");
    assert!(
        ready_taken > 0,
        "a read of several lines leaves lines ready"
    );
    assert_eq!(line_bytes(&lines), split_lines(&data));
    let fin = p.finish(&sink).await.unwrap();
    assert_same(&fin.stdout.to_vec().unwrap(), &data);
}

#[tokio::test]
async fn a_capture_that_cannot_spill_fails_with_a_typed_error_and_no_hang() {
    // More than the threshold, and a spill directory that does not exist:
    // the capture cannot stay complete, which is an error, not a silent cut.
    let mut cmd = sh("i=0; while [ $i -lt 200 ]; do echo line-$i; i=$((i+1)); done");
    cmd.spill_threshold(64)
        .spill_dir("/nonexistent/agent-adaptor-spill-test");
    let sink = TestSink::new();
    let mut p = Process::spawn(&cmd).unwrap();
    let err = loop {
        match tokio::time::timeout(Duration::from_secs(10), p.next_line(&sink))
            .await
            .expect("next_line must not hang")
        {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the capture cannot have completed"),
            Err(err) => break err,
        }
    };
    match &err {
        agent_adaptor_process::ProcessError::Capture(io) => {
            assert_eq!(io.kind(), std::io::ErrorKind::NotFound, "{io}");
        }
        other => panic!("expected a capture error, got {other:?}"),
    }
    assert!(err.to_string().starts_with("raw capture failed"), "{err}");
    let fin = tokio::time::timeout(Duration::from_secs(10), p.finish(&sink))
        .await
        .expect("finish must not hang");
    assert!(
        matches!(fin, Err(agent_adaptor_process::ProcessError::Capture(_))),
        "finish reports the incomplete capture too: {fin:?}"
    );
}
