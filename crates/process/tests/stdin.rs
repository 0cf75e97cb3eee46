//! Stdin modes: Null, Bytes and Pipe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use agent_adaptor_process::{Process, StdinMode};
use bytes::Bytes;
use common::{TestSink, assert_same, pseudo_random, sh};

const BOUND: Duration = Duration::from_secs(20);

#[tokio::test]
async fn null_stdin_is_eof_at_once() {
    let sink = TestSink::new();
    let mut p = Process::spawn(&sh("cat; echo after-eof")).unwrap();
    assert!(p.take_stdin().is_none(), "no controller in Null mode");
    let line = tokio::time::timeout(BOUND, p.next_line(&sink))
        .await
        .expect("cat must see EOF at once")
        .unwrap()
        .unwrap();
    assert_eq!(line.as_memory(), Some(&b"after-eof"[..]));
    let fin = p.finish(&sink).await.unwrap();
    assert_eq!(fin.stdout.to_vec().unwrap(), b"after-eof\n");
    assert!(fin.exit.success());
    assert!(fin.timeline.stdin_closed_at.is_some());
}

#[tokio::test]
async fn bytes_are_written_then_eof() {
    let sink = TestSink::new();
    let mut cmd = sh("cat; echo end");
    cmd.stdin(StdinMode::Bytes(Bytes::from_static(b"one\ntwo\n")));
    let mut p = Process::spawn(&cmd).unwrap();
    assert!(p.take_stdin().is_none());
    let mut lines = Vec::new();
    while let Some(l) = tokio::time::timeout(BOUND, p.next_line(&sink))
        .await
        .unwrap()
        .unwrap()
    {
        lines.push(l.bytes().to_vec().unwrap());
    }
    assert_eq!(
        lines,
        vec![b"one".to_vec(), b"two".to_vec(), b"end".to_vec()]
    );
    let fin = p.finish(&sink).await.unwrap();
    assert!(fin.exit.success());
}

#[tokio::test]
async fn large_bytes_input_does_not_deadlock_against_output() {
    // 4 MiB in, echoed out: far beyond both pipe buffers, so the input must
    // be written while the output is read.
    let data = pseudo_random(4 << 20, 7);
    let sink = TestSink::new();
    let mut cmd = sh("cat");
    cmd.stdin(StdinMode::Bytes(Bytes::from(data.clone())));
    let p = Process::spawn(&cmd).unwrap();
    let fin = tokio::time::timeout(BOUND, p.finish(&sink))
        .await
        .unwrap()
        .unwrap();
    assert_same(&fin.stdout.to_vec().unwrap(), &data);
    assert!(fin.exit.success());
}

#[tokio::test]
async fn empty_bytes_is_eof() {
    let sink = TestSink::new();
    let mut cmd = sh("cat; echo done");
    cmd.stdin(StdinMode::Bytes(Bytes::new()));
    let p = Process::spawn(&cmd).unwrap();
    let fin = tokio::time::timeout(BOUND, p.finish(&sink))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fin.stdout.to_vec().unwrap(), b"done\n");
}

#[tokio::test]
async fn pipe_frames_echo_and_close_ends_the_child() {
    let sink = TestSink::new();
    let mut cmd = sh("while IFS= read -r l; do echo \"got:$l\"; done; echo bye");
    cmd.stdin(StdinMode::Pipe);
    let mut p = Process::spawn(&cmd).unwrap();
    let mut stdin = p.take_stdin().unwrap();
    assert!(p.take_stdin().is_none(), "only once");
    for i in 0..20 {
        let frame = format!("{{\"n\":{i}}}");
        stdin.write_line(frame.as_bytes()).await.unwrap();
        let line = tokio::time::timeout(BOUND, p.next_line(&sink))
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(
            line.bytes().to_vec().unwrap(),
            format!("got:{frame}").into_bytes()
        );
    }
    stdin.write_all(b"partial").await.unwrap();
    stdin.write_all(b" frame\n").await.unwrap();
    let line = p.next_line(&sink).await.unwrap().unwrap();
    assert_eq!(line.as_memory(), Some(&b"got:partial frame"[..]));
    stdin.close().await;
    let line = tokio::time::timeout(BOUND, p.next_line(&sink))
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(line.as_memory(), Some(&b"bye"[..]));
    assert!(p.next_line(&sink).await.unwrap().is_none());
    let fin = p.finish(&sink).await.unwrap();
    assert!(fin.exit.success());
    assert!(fin.timeline.term_sent_at.is_none());
}

#[tokio::test]
async fn dropping_the_controller_closes_stdin() {
    let sink = TestSink::new();
    let mut cmd = sh("cat; echo closed");
    cmd.stdin(StdinMode::Pipe);
    let mut p = Process::spawn(&cmd).unwrap();
    let mut stdin = p.take_stdin().unwrap();
    stdin.write_line(b"x").await.unwrap();
    drop(stdin);
    let fin = tokio::time::timeout(BOUND, p.finish(&sink))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fin.stdout.to_vec().unwrap(), b"x\nclosed\n");
}

#[tokio::test]
async fn untaken_pipe_is_closed_by_finish() {
    let sink = TestSink::new();
    let mut cmd = sh("cat; echo closed");
    cmd.stdin(StdinMode::Pipe);
    let p = Process::spawn(&cmd).unwrap();
    let fin = tokio::time::timeout(BOUND, p.finish(&sink))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fin.stdout.to_vec().unwrap(), b"closed\n");
}

#[tokio::test]
async fn shutdown_closes_a_held_stdin_and_writes_fail_after() {
    let sink = TestSink::new();
    let mut cmd = sh("cat; echo graceful");
    cmd.stdin(StdinMode::Pipe)
        .close_grace(Duration::from_secs(10));
    let mut p = Process::spawn(&cmd).unwrap();
    let mut stdin = p.take_stdin().unwrap();
    stdin.write_line(b"hello").await.unwrap();
    let fin = tokio::time::timeout(BOUND, p.shutdown(&sink))
        .await
        .unwrap()
        .unwrap();
    // cat saw EOF and exited during close_grace: no signal was needed
    assert_eq!(fin.stdout.to_vec().unwrap(), b"hello\ngraceful\n");
    assert!(fin.exit.success());
    assert!(fin.timeline.term_sent_at.is_none());
    let err = stdin.write_all(b"late").await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
}

#[tokio::test]
async fn a_blocked_writer_is_released_by_shutdown() {
    // The child never reads stdin, so a big write blocks; shutdown must still
    // close stdin and the writer must fail instead of hanging.
    let mut cmd = sh("exec sleep 30");
    cmd.stdin(StdinMode::Pipe)
        .close_grace(Duration::from_millis(50))
        .term_grace(Duration::from_millis(50));
    let mut p = Process::spawn(&cmd).unwrap();
    let mut stdin = p.take_stdin().unwrap();
    let writer = tokio::spawn(async move { stdin.write_all(&vec![b'x'; 4 << 20]).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let sink = TestSink::new();
    let fin = tokio::time::timeout(BOUND, p.shutdown(&sink))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fin.exit.signal.as_deref(), Some("SIGTERM"));
    let res = tokio::time::timeout(BOUND, writer).await.unwrap().unwrap();
    assert!(res.is_err(), "the blocked write must fail");
}
