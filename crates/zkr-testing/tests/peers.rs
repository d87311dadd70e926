//! The Curator and kazoo peers against a real server.

use std::sync::atomic::{AtomicU32, Ordering};

use zkr_testing::peers::{parse_result, CuratorTool, KazooTool, PeerProcess};
use zkr_testing::{shared_server, Error, Timing};

/// A lock path no other test (or earlier run against the same server) uses.
fn unique_path(test: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!("/zkr-peers/{test}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

async fn finish(peer: PeerProcess) {
    let status = peer.wait().await.unwrap();
    assert!(status.success(), "peer failed: {status}");
}

/// `hold` blocks `try`; after `release`, `try` gets the lock. Run with either tool.
async fn hold_blocks_try(spawn: impl Fn(&[&str]) -> zkr_testing::Result<PeerProcess>, path: &str) {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();

    let mut holder = spawn(&["hold", &cs, path]).unwrap();
    let held = holder.expect_line("HELD ").await.unwrap();
    assert!(held.starts_with(&format!("HELD {path}/")), "{held}");

    let mut blocked = spawn(&["try", &cs, path, "200"]).unwrap();
    assert_eq!(blocked.expect_line("").await.unwrap(), "NOT_ACQUIRED");
    finish(blocked).await;

    holder.send_line("release").await.unwrap();
    assert_eq!(holder.expect_line("").await.unwrap(), "RELEASED");
    finish(holder).await;

    let mut free = spawn(&["try", &cs, path, "200"]).unwrap();
    assert_eq!(free.expect_line("").await.unwrap(), "ACQUIRED");
    finish(free).await;
}

#[tokio::test]
async fn curator_try_fails_while_held_and_succeeds_after_release() {
    let curator = CuratorTool::locate().unwrap();
    hold_blocks_try(|args| curator.spawn(args), &unique_path("curator-hold")).await;
}

#[tokio::test]
async fn kazoo_try_fails_while_held_and_succeeds_after_release() {
    let kazoo = KazooTool::locate().unwrap();
    hold_blocks_try(|args| kazoo.spawn(args), &unique_path("kazoo-hold")).await;
}

#[tokio::test]
async fn curator_lock_rounds_print_the_protocol() {
    let server = shared_server().await.unwrap();
    let curator = CuratorTool::locate().unwrap();
    let path = unique_path("curator-lock");
    let mut peer = curator.spawn(&["lock", &server.connect_string(), &path, "3", "20"]).unwrap();

    let mut lines = Vec::new();
    while let Some(line) = peer.next_line().await.unwrap() {
        lines.push(line);
    }
    finish(peer).await;

    assert_eq!(lines.len(), 7, "{lines:?}");
    let mut last_t = 0u64;
    for (i, line) in lines[..6].iter().enumerate() {
        let words: Vec<&str> = line.split(' ').collect();
        let event = if i % 2 == 0 { "ACQUIRED" } else { "RELEASING" };
        let round = (i / 2).to_string();
        assert_eq!(words.len(), 3, "{line}");
        assert_eq!((words[0], words[1]), (event, round.as_str()), "{line}");
        let t: u64 = words[2].parse().unwrap();
        assert!(t >= last_t, "timestamps go backwards: {lines:?}");
        last_t = t;
    }
    assert_eq!(lines[6], "DONE");
}

#[tokio::test]
async fn curator_uncontended_bench_reports_a_result() {
    let server = shared_server().await.unwrap();
    let curator = CuratorTool::locate().unwrap();
    let path = unique_path("curator-bench");
    let mut peer = curator.spawn(&["bench-uncontended", &server.connect_string(), &path, "1"]).unwrap();
    let line = peer.expect_line("RESULT ").await.unwrap();
    finish(peer).await;

    let fields = parse_result(&line);
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["ops", "seconds", "p50_us", "p99_us"], "{line}");
    let ops: u64 = fields[0].1.parse().unwrap();
    assert!(ops > 0, "{line}");
    let p50: u64 = fields[2].1.parse().unwrap();
    let p99: u64 = fields[3].1.parse().unwrap();
    assert!(p50 <= p99, "{line}");
}

#[tokio::test]
async fn bad_arguments_surface_as_peer_exited_with_stderr() {
    let server = shared_server().await.unwrap();
    let curator = CuratorTool::locate().unwrap();
    let mut peer = curator.spawn(&["try", &server.connect_string(), "/x", "soon"]).unwrap();
    match peer.next_line().await {
        Err(Error::PeerExited { peer, stderr, .. }) => {
            assert_eq!(peer, "CuratorTool try");
            assert!(stderr.contains("TIMEOUT_MS"), "{stderr}");
        }
        other => panic!("expected PeerExited, got {other:?}"),
    }

    let kazoo = KazooTool::locate().unwrap();
    let mut peer = kazoo.spawn(&["frobnicate"]).unwrap();
    let err = peer.expect_line("ACQUIRED").await.unwrap_err();
    assert!(matches!(&err, Error::PeerExited { stderr, .. } if stderr.contains("unknown command")), "{err}");
}

#[tokio::test]
async fn curator_leader_fails_over_when_the_leader_dies() {
    let server = shared_server().await.unwrap();
    let curator = CuratorTool::locate().unwrap();
    let path = unique_path("curator-leader");
    let start = |session_ms: &str| {
        let mut cmd = curator.command(&["bench-leader-failover", &server.connect_string(), &path]);
        cmd.env("ZKR_PEER_SESSION_MS", session_ms);
        PeerProcess::spawn("CuratorTool bench-leader-failover", cmd).unwrap()
    };

    let mut first = start("2000");
    first.expect_line("LEADER ").await.unwrap();
    let mut second = start("2000");
    // The second candidate must be queued before the leader dies.
    let client = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
    let queued = tokio::time::timeout(Timing::from_env().wait(), async {
        while client.list_children(&path).await.map_or(0, |c| c.len()) < 2 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    queued.await.expect("the second candidate never queued");
    let killed_at_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    drop(first); // SIGKILL: the server notices when the 2 s session expires

    let line = second.expect_line("LEADER ").await.unwrap();
    let leader_at_ms: u128 = line["LEADER ".len()..].parse().unwrap();
    assert!(leader_at_ms >= killed_at_ms, "{line} before the kill at {killed_at_ms}");
    finish(second).await; // closing stdin ends it
}

#[test]
fn parse_result_reads_benchmark_lines() {
    let fields = parse_result("RESULT drained=100 millis=812 rss_kb=90312");
    let expected = [("drained", "100"), ("millis", "812"), ("rss_kb", "90312")];
    assert_eq!(fields.len(), expected.len());
    for ((key, value), (want_key, want_value)) in fields.iter().zip(expected) {
        assert_eq!((key.as_str(), value.as_str()), (want_key, want_value));
    }
    assert!(parse_result("DONE").is_empty());
}

/// The stored JSON of a Curator `ServiceInstance`, checked field by field.
fn check_instance(json: &str, name: &str, id: &str, port: u64) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(v["name"], name, "{json}");
    assert_eq!(v["id"], id, "{json}");
    assert_eq!(v["address"], "10.0.0.7", "{json}");
    assert_eq!(v["port"], port, "{json}");
    assert_eq!(v["sslPort"], port + 1, "{json}");
    assert_eq!(v["serviceType"], "DYNAMIC", "{json}");
    assert_eq!(v["enabled"], true, "{json}");
    assert!(v["registrationTimeUTC"].as_u64().is_some_and(|t| t > 1_600_000_000_000), "{json}");
    let parts = v["uriSpec"]["parts"].as_array().unwrap_or_else(|| panic!("no uriSpec.parts: {json}"));
    let spec: String = parts
        .iter()
        .map(|p| match p["variable"].as_bool() {
            Some(true) => format!("{{{}}}", p["value"].as_str().unwrap()),
            _ => p["value"].as_str().unwrap().to_string(),
        })
        .collect();
    assert_eq!(spec, "{scheme}://{address}:{port}", "{json}");
    v
}

#[tokio::test]
async fn curator_discovery_register_list_provider_and_watch() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let curator = CuratorTool::locate().unwrap();
    let base = unique_path("discovery");

    let mut watch = curator.spawn(&["discovery-watch", &cs, &base, "api"]).unwrap();
    watch.expect_line("READY").await.unwrap();
    assert_eq!(watch.expect_line("INSTANCES").await.unwrap(), "INSTANCES ");

    let mut a = curator
        .spawn(&["discovery-register", &cs, &base, "api", "a", "10.0.0.7", "8080", r#"{"zone":"a","n":1}"#])
        .unwrap();
    let stored = a.expect_line("READY ").await.unwrap()["READY ".len()..].to_string();
    let v = check_instance(&stored, "api", "a", 8080);
    assert_eq!(v["payload"]["zone"], "a", "{stored}");
    assert_eq!(v["payload"]["n"], 1, "{stored}");
    assert_eq!(v["payload"]["@class"], "java.util.LinkedHashMap", "{stored}");
    let mut b = curator.spawn(&["discovery-register", &cs, &base, "api", "b", "10.0.0.7", "9090"]).unwrap();
    let stored_b = b.expect_line("READY ").await.unwrap()["READY ".len()..].to_string();
    assert!(check_instance(&stored_b, "api", "b", 9090)["payload"].is_null(), "{stored_b}");
    // The cache may see a before b in a separate change, or both in one.
    while watch.expect_line("INSTANCES ").await.unwrap() != "INSTANCES a,b" {}

    let mut list = curator.spawn(&["discovery-list", &cs, &base, "api"]).unwrap();
    assert_eq!(list.expect_line("INSTANCE ").await.unwrap(), format!("INSTANCE a {stored}"));
    assert_eq!(list.expect_line("INSTANCE ").await.unwrap(), format!("INSTANCE b {stored_b}"));
    assert_eq!(list.expect_line("RESULT").await.unwrap(), "RESULT count=2");
    finish(list).await;

    let mut provider = curator.spawn(&["discovery-provider", &cs, &base, "api", "4"]).unwrap();
    let line = provider.expect_line("RESULT").await.unwrap();
    let ids: Vec<&str> = line.trim_start_matches("RESULT ids=").split(',').collect();
    assert_eq!(ids.len(), 4, "{line}");
    assert!(ids[0] != ids[1] && ids[0] == ids[2] && ids[1] == ids[3], "not round-robin: {line}");
    finish(provider).await;

    a.close_stdin();
    assert_eq!(a.expect_line("DONE").await.unwrap(), "DONE");
    finish(a).await;
    while watch.expect_line("INSTANCES ").await.unwrap() != "INSTANCES b" {}
    b.close_stdin();
    b.expect_line("DONE").await.unwrap();
    finish(b).await;
    while watch.expect_line("INSTANCES ").await.unwrap() != "INSTANCES " {}
    finish(watch).await;

    let mut empty = curator.spawn(&["discovery-provider", &cs, &base, "api", "2"]).unwrap();
    assert_eq!(empty.expect_line("RESULT").await.unwrap(), "RESULT ids=");
    finish(empty).await;
}

/// The Curator checker worker (`checker-worker`) tells a lost lock: a holder cut off from its
/// server mid critical section, whose write got no answer, releases on its holding session
/// until ZooKeeper answers, and says `LOST` once the session is gone. It gave the release up
/// at the first connection loss (`RELEASE_ERROR`), a claim that the hold lasted until then:
/// the soak's `curator-mutex` seed 117656915982380034 failed its history on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_curator_checker_worker_says_lost_when_its_session_went_during_the_release() {
    let server = shared_server().await.unwrap();
    let path = unique_path("checker-worker");
    let counter = format!("{path}-counter");
    let observer = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
    let mode = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    observer.mkdir(&counter, &mode).await.unwrap();
    let proxy = zkr_testing::FaultProxy::start(&server.connect_string()).await.unwrap();
    let curator = CuratorTool::locate().unwrap();
    let mut command =
        curator.command(&["checker-worker", "mutex", &proxy.connect_string(), &path, &counter, "2000", "1"]);
    command.env("ZKR_PEER_SESSION_MS", "3000");
    let mut worker = PeerProcess::spawn("checker-worker", command).unwrap();
    worker.expect_line("SESSION ").await.unwrap();
    worker.send_line("hold 2500").await.unwrap();
    worker.expect_line("HOLDING").await.unwrap();
    proxy.blackhole();
    let write = worker.expect_line("").await.unwrap();
    assert!(write.starts_with("WRITE "), "{write}");
    let outcome = worker.expect_line("").await.unwrap();
    assert!(outcome.starts_with("UNKNOWN ") || outcome.starts_with("ABORT "), "{outcome}");
    // Past the session timeout, and then back: the session is gone.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    proxy.heal();
    let release = worker.expect_line("").await.unwrap();
    assert!(release.starts_with("LOST "), "the release said {release} after {outcome}");
    worker.close_stdin();
    worker.expect_line("DONE").await.unwrap();
    finish(worker).await;
}
