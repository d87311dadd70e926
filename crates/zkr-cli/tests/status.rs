//! `zkr status` against real servers: a 3-server ensemble as its servers die (degraded, a new
//! leader, no quorum), and a server that allows only `srvr`, with and without its AdminServer.

use zkr_testing::{ServerOptions, TestingCluster, TestingServer, Timing};

mod common;
use common::run_zkr;

/// `zkr --connect CS status ARGS`: (exit code, stdout).
async fn status(cs: &str, args: &[&str]) -> (i32, String) {
    let mut all = vec!["--connect", cs, "status"];
    all.extend(args);
    let out = run_zkr("127.0.0.1:1", &all).await;
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The server lines' modes, in connect-string order.
fn modes(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| !l.starts_with("ensemble:"))
        .map(|l| l.split_whitespace().nth(1).unwrap().to_owned())
        .collect()
}

/// Runs `zkr status` until `wanted` accepts (code, output), within the wait bound.
async fn until(cs: &str, what: &str, wanted: impl Fn(i32, &str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + Timing::from_env().wait() * 2;
    loop {
        let (code, out) = status(cs, &[]).await;
        if wanted(code, &out) {
            return out;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: last exit {code}:\n{out}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_goes_from_healthy_to_degraded_to_no_quorum() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let cs = cluster.connect_string();
    let out = until(&cs, "healthy", |code, _| code == 0).await;
    let mut seen = modes(&out);
    seen.sort();
    assert_eq!(seen, ["follower", "follower", "leader"], "{out}");
    assert!(
        out.contains("(mntr)")
            && out.contains("followers 2/2 synced")
            && out.ends_with("ensemble: healthy\n"),
        "{out}"
    );
    let json: serde_json::Value = serde_json::from_str(&status(&cs, &["--json"]).await.1).unwrap();
    assert_eq!(json["health"], "healthy");
    assert!(json["servers"][0]["zxid"].as_str().unwrap().starts_with("0x"), "{json}");

    // The leader dies: a new leader among the two left, the dead one unreachable: degraded.
    let old = cluster.leader().await.expect("a leader");
    cluster.kill(old).unwrap();
    let out =
        until(&cs, "a new leader", |code, out| code == 8 && modes(out).contains(&"leader".to_owned())).await;
    let modes_now = modes(&out);
    assert_eq!(modes_now[old], "unreachable", "{out}");
    assert!(out.ends_with("ensemble: degraded\n"), "{out}");

    // One more dies: no quorum.
    let next = cluster.leader().await.expect("the new leader");
    assert_ne!(next, old);
    cluster.kill(next).unwrap();
    let out = until(&cs, "no quorum", |code, _| code == 9).await;
    assert!(out.ends_with("ensemble: no quorum\n"), "{out}");
}

/// A server that allows only `srvr` (3.5+'s default whitelist) and has no AdminServer (the test
/// servers run without Jetty, so the AdminServer path is covered by a unit test only).
#[tokio::test]
async fn where_mntr_is_not_allowed_srvr_answers() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server =
        TestingServer::with_options(ServerOptions::default().config("4lw.commands.whitelist", "srvr"))
            .await
            .unwrap();
    let (code, out) = status(&server.connect_string(), &["--admin-port", &port.to_string()]).await;
    assert!(code == 0 && out.contains("standalone") && out.contains("(srvr)"), "{code}: {out}");
    assert!(out.contains("zxid 0x") && out.contains("znodes"), "{out}");
}
