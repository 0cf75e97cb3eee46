//! Runtime services: readiness before launch, reuse by labels, release.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::collections::BTreeMap;
use std::time::Duration;

use agent_adaptor_workspace::{Lifecycle, Readiness, ServiceError, ServiceManager, ServiceSpec};

const FIXTURE: &str = env!("CARGO_BIN_EXE_agent-adaptor-workspace-fixture");

fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

#[tokio::test]
async fn never_ready_fails_with_stderr_tail_and_no_secret() {
    let m = ServiceManager::new();
    let spec = ServiceSpec::new("db", FIXTURE, Readiness::Tcp(free_addr()))
        .args(["stall"])
        .secret_env("SERVICE_TOKEN", "s3cr3t-value")
        .ready_timeout(Duration::from_millis(800));
    let err = m.ensure("run-1", &[spec]).await.unwrap_err();
    match &err {
        ServiceError::NotReady {
            name, stderr_tail, ..
        } => {
            assert_eq!(name, "db");
            assert!(stderr_tail.contains("boom: cannot bind"), "{stderr_tail:?}");
            assert!(!stderr_tail.contains("s3cr3t-value"));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(!err.to_string().contains("s3cr3t-value"));
    assert_eq!(m.running().await, 0);
}

#[tokio::test]
async fn exit_before_ready_fails_fast() {
    let m = ServiceManager::new();
    let spec = ServiceSpec::new("bad", FIXTURE, Readiness::Tcp(free_addr()))
        .args(["no-such-mode"])
        .ready_timeout(Duration::from_secs(60));
    let err = m.ensure("run-1", &[spec]).await.unwrap_err();
    match err {
        ServiceError::NotReady {
            why, stderr_tail, ..
        } => {
            assert!(why.contains("exited with code"), "{why}");
            assert!(stderr_tail.contains("usage:"), "{stderr_tail:?}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn unsupported_readiness_is_refused_before_spawn() {
    let m = ServiceManager::new();
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let spec = ServiceSpec::new(
        "web",
        FIXTURE,
        Readiness::Http("https://127.0.0.1:1/".into()),
    )
    .args(["listen", "127.0.0.1:1", count.to_str().unwrap()]);
    let err = m.ensure("run-1", &[spec]).await.unwrap_err();
    assert!(
        matches!(err, ServiceError::InvalidReadiness { .. }),
        "{err:?}"
    );
    assert!(!count.exists(), "nothing was spawned");
}

#[tokio::test]
async fn labelled_service_is_started_once_for_three_runs() {
    let m = ServiceManager::new();
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let addr = free_addr();
    let url = format!("http://{addr}/health");
    let spec = ServiceSpec::new("web", FIXTURE, Readiness::Http(url.clone()))
        .args(["listen", &addr, count.to_str().unwrap()])
        .label("project", "demo")
        .secret_env("SERVICE_TOKEN", "s3cr3t-value");
    let mut reused = Vec::new();
    for run in ["r1", "r2", "r3"] {
        let refs = m.ensure(run, std::slice::from_ref(&spec)).await.unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].address, url);
        reused.push(refs[0].reused);
        let report = refs[0].report();
        assert_eq!(report.status, "running");
        assert_eq!(report.endpoint.as_deref(), Some(url.as_str()));
        assert!(!serde_json::to_string(&report).unwrap().contains("s3cr3t"));
        m.release_by_run(run).await;
    }
    assert_eq!(reused, [false, true, true]);
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "start\n");
    assert_eq!(m.running().await, 1, "a shared service outlives its runs");

    m.release_by_labels(&BTreeMap::from([("project".into(), "demo".into())]))
        .await;
    assert_eq!(m.running().await, 0);
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "the service was stopped"
    );
}

#[tokio::test]
async fn ephemeral_service_stops_with_its_last_run() {
    let m = ServiceManager::new();
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let addr = free_addr();
    let spec = ServiceSpec::new("tmp", FIXTURE, Readiness::Tcp(addr.clone()))
        .args(["listen", &addr, count.to_str().unwrap()])
        .label("k", "v")
        .lifecycle(Lifecycle::Ephemeral);
    m.ensure("a", std::slice::from_ref(&spec)).await.unwrap();
    m.ensure("b", std::slice::from_ref(&spec)).await.unwrap();
    m.release_by_run("a").await;
    assert_eq!(m.running().await, 1);
    m.release_by_run("b").await;
    assert_eq!(m.running().await, 0);
    assert!(std::net::TcpStream::connect(&addr).is_err());
}

/// A `web` service labelled `project=demo` that adds a line to `count` each
/// time it starts: the temp dir holding `count`, `count`, its address, the
/// spec.
fn counted_web() -> (tempfile::TempDir, std::path::PathBuf, String, ServiceSpec) {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let addr = free_addr();
    let spec = ServiceSpec::new("web", FIXTURE, Readiness::Tcp(addr.clone()))
        .args(["listen", &addr, count.to_str().unwrap()])
        .label("project", "demo");
    (dir, count, addr, spec)
}

#[tokio::test]
async fn three_concurrent_runs_sharing_a_label_start_it_once() {
    let m = ServiceManager::new();
    let (_dir, count, _addr, spec) = counted_web();
    let one = std::slice::from_ref(&spec);
    let (a, b, c) = tokio::join!(
        m.ensure("r1", one),
        m.ensure("r2", one),
        m.ensure("r3", one)
    );
    let reused: Vec<bool> = [a, b, c]
        .into_iter()
        .map(|r| r.unwrap()[0].reused)
        .collect();
    assert_eq!(
        reused.iter().filter(|r| !**r).count(),
        1,
        "one run started it, two reused it: {reused:?}"
    );
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "start\n");
    assert_eq!(m.running().await, 1);
}

#[tokio::test]
async fn different_services_start_concurrently() {
    // `slow` is ready only once `fast` has started: were the manager locked
    // while `slow` waits for readiness, `fast` could not start and `slow`
    // would time out.
    let m = ServiceManager::new();
    let dir = tempfile::tempdir().unwrap();
    let (slow_count, fast_count) = (dir.path().join("slow"), dir.path().join("fast"));
    let (slow_addr, fast_addr) = (free_addr(), free_addr());
    let slow = ServiceSpec::new("slow", FIXTURE, Readiness::Tcp(slow_addr.clone()))
        .args([
            "listen-after",
            &slow_addr,
            slow_count.to_str().unwrap(),
            fast_count.to_str().unwrap(),
        ])
        .ready_timeout(Duration::from_secs(30));
    let fast = ServiceSpec::new("fast", FIXTURE, Readiness::Tcp(fast_addr.clone())).args([
        "listen",
        &fast_addr,
        fast_count.to_str().unwrap(),
    ]);
    let (a, b) = tokio::join!(
        m.ensure("r1", std::slice::from_ref(&slow)),
        m.ensure("r2", std::slice::from_ref(&fast))
    );
    assert_eq!(a.unwrap()[0].name, "slow");
    assert_eq!(b.unwrap()[0].name, "fast");
    assert_eq!(m.running().await, 2);
}

#[tokio::test]
async fn a_reused_service_that_exited_is_started_anew() {
    let m = ServiceManager::new();
    let (_dir, count, addr, spec) = counted_web();
    let one = std::slice::from_ref(&spec);
    assert!(!m.ensure("r1", one).await.unwrap()[0].reused);
    m.release_by_run("r1").await;
    // The service dies between runs.
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    std::io::Write::write_all(&mut conn, b"GET /exit HTTP/1.0\r\n\r\n").unwrap();
    drop(conn);
    // Its port closes when the process is gone.
    let mut waited = 0;
    while std::net::TcpStream::connect(&addr).is_ok() {
        waited += 1;
        assert!(waited < 1000, "the service did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }

    let refs = m.ensure("r2", one).await.unwrap();
    assert!(!refs[0].reused, "the dead service is not handed out");
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "start\nstart\n");
    assert_eq!(m.running().await, 1, "the dead one is forgotten");
    assert!(std::net::TcpStream::connect(&addr).is_ok());
}
