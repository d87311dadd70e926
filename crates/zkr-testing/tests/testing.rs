//! zkr-testing against real servers: every harness feature is exercised here.

use std::path::Path;
use std::time::Duration;

use zkr_testing::{
    expire_session, probe_session, FaultProxy, ServerOptions, TestingCluster, TestingServer, Timing,
};
use zookeeper_client::{Acls, Client, CreateMode, SessionState, StateWatcher};

fn timing() -> Timing {
    Timing::from_env()
}

/// Waits for the watcher to report `want`, failing the test after `Timing::wait`.
async fn await_state(watcher: &mut StateWatcher, want: SessionState) {
    let seen = tokio::time::timeout(timing().wait(), async {
        if watcher.state() == want {
            return;
        }
        while watcher.changed().await != want {}
    })
    .await;
    assert!(seen.is_ok(), "client never reached {want:?}");
}

/// Processes whose command line mentions `needle` (a server's unique temp directory).
fn processes_mentioning(needle: &Path) -> Vec<u32> {
    let needle = needle.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmdline).contains(&needle) && pid != std::process::id() {
                found.push(pid);
            }
        }
    }
    found
}

async fn connect(connect_string: &str) -> Client {
    Client::connector()
        .with_session_timeout(timing().session())
        .connect(connect_string)
        .await
        .expect("connect")
}

/// A server whose JVM cannot start is reported as exited, with its log, at once (it hung: the
/// start held its process lock while it cleared the process). The start runs on a thread of its
/// own, so that a hang fails the test instead of blocking it.
#[test]
fn a_server_that_cannot_start_is_reported_as_exited() {
    let (done, started) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let options = ServerOptions::default().jvm_option("-XX:NoSuchOption");
        let _ = done.send(runtime.block_on(TestingServer::with_options(options)).map(|s| s.connect_string()));
    });
    match started.recv_timeout(timing().wait()).expect("the start returns instead of hanging") {
        Err(zkr_testing::Error::Exited { log, .. }) => assert!(log.contains("NoSuchOption"), "{log}"),
        other => panic!("expected Exited, got {other:?}"),
    }
}

#[tokio::test]
async fn stop_and_restart_keep_port_and_data() {
    let server = TestingServer::start().await.unwrap();
    let port = server.port();
    let client = connect(&server.connect_string()).await;
    client.create("/kept", b"value", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    drop(client);

    server.stop().unwrap();
    assert!(!server.is_running());
    assert!(Client::connector().with_fail_eagerly().connect(&server.connect_string()).await.is_err());

    server.restart().await.unwrap();
    assert!(server.is_running());
    assert_eq!(server.port(), port);
    let client = connect(&server.connect_string()).await;
    let (data, _) = client.get_data("/kept").await.unwrap();
    assert_eq!(data, b"value");
    let srvr = server.four_letter_word("srvr").await.unwrap();
    assert!(srvr.contains("Mode: standalone"), "{srvr}");
}

#[tokio::test]
async fn cluster_leader_kill_elects_a_new_leader_and_clients_carry_on() {
    let cluster = TestingCluster::start(3).await.unwrap();
    assert_eq!(cluster.servers().len(), 3);
    assert!(cluster.servers().iter().all(|s| s.running));
    let client = connect(&cluster.connect_string()).await;
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create("/before", b"1", &options).await.unwrap();

    let leader = cluster.leader().await.expect("an elected leader");
    cluster.kill(leader).unwrap();
    assert!(!cluster.servers()[leader].running);

    // A write goes through once the remaining two have elected a leader; requests issued while
    // the client reconnects wait for the connection, those in flight fail with ConnectionLoss.
    let wrote = tokio::time::timeout(timing().wait(), async {
        loop {
            match client.create("/after", b"2", &options).await {
                Ok(_) | Err(zookeeper_client::Error::NodeExists) => return,
                Err(zookeeper_client::Error::ConnectionLoss) => continue,
                Err(e) => panic!("unexpected error {e}"),
            }
        }
    })
    .await;
    assert!(wrote.is_ok(), "no write succeeded after the leader was killed");
    let new_leader = cluster.leader().await.expect("a new leader");
    assert_ne!(new_leader, leader);
    assert_eq!(client.get_data("/before").await.unwrap().0, b"1");

    cluster.restart(leader).await.unwrap();
    assert!(cluster.servers().iter().all(|s| s.running));
    let direct = connect(&cluster.server_connect_string(leader).unwrap()).await;
    direct.sync("/after").await.unwrap();
    assert_eq!(direct.get_data("/after").await.unwrap().0, b"2");
}

#[tokio::test]
async fn pause_disconnects_and_resume_reconnects_the_same_session() {
    let server = TestingServer::start().await.unwrap();
    let client = connect(&server.connect_string()).await;
    let session = client.session_id();
    let mut watcher = client.state_watcher();

    server.pause().unwrap();
    await_state(&mut watcher, SessionState::Disconnected).await;
    server.resume().unwrap();
    await_state(&mut watcher, SessionState::SyncConnected).await;
    assert_eq!(client.session_id(), session);
    client.check_stat("/").await.unwrap();
}

#[tokio::test]
async fn expire_session_is_observed_by_the_client() {
    let server = TestingServer::start().await.unwrap();
    let client = connect(&server.connect_string()).await;
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    client.create("/eph", b"", &ephemeral).await.unwrap();

    expire_session(&client, &server.connect_string()).await.unwrap();
    assert_eq!(client.state(), SessionState::Expired);
    assert_eq!(client.check_stat("/").await, Err(zookeeper_client::Error::SessionExpired));

    let other = connect(&server.connect_string()).await;
    assert_eq!(other.check_stat("/eph").await.unwrap(), None, "ephemeral of the expired session remains");
}

/// The probe's write changes nothing, even where its node exists; it tells a live session from
/// a closed one.
#[tokio::test]
async fn the_session_probe_writes_nothing_and_tells_a_closed_session() {
    let server = TestingServer::start().await.unwrap();
    let client = connect(&server.connect_string()).await;
    assert_eq!(probe_session(&client).await, Ok(()), "no node: a live session");
    client
        .create("/zkr-testing-session-probe", b"keep", &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    assert_eq!(probe_session(&client).await, Ok(()), "the node there: a live session");
    let (data, stat) = client.get_data("/zkr-testing-session-probe").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"keep"[..], 0), "the probe wrote nothing");
    expire_session(&client, &server.connect_string()).await.unwrap();
    assert_eq!(probe_session(&client).await, Err(zookeeper_client::Error::SessionExpired));
}

#[tokio::test]
async fn proxy_cut_disconnects_and_the_client_reconnects() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = connect(&proxy.connect_string()).await;
    let mut watcher = client.state_watcher();
    assert_eq!(proxy.connection_count(), 1);

    proxy.cut();
    await_state(&mut watcher, SessionState::Disconnected).await;
    await_state(&mut watcher, SessionState::SyncConnected).await;
    client.check_stat("/").await.unwrap();
}

#[tokio::test]
async fn proxy_blackhole_disconnects_and_heal_reconnects() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = connect(&proxy.connect_string()).await;
    let session = client.session_id();
    let mut watcher = client.state_watcher();

    proxy.blackhole();
    await_state(&mut watcher, SessionState::Disconnected).await;
    proxy.heal();
    await_state(&mut watcher, SessionState::SyncConnected).await;
    assert_eq!(client.session_id(), session, "a short partition keeps the session");
    client.check_stat("/").await.unwrap();
}

#[tokio::test]
async fn held_reply_is_lost_by_a_cut_but_the_request_was_applied() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = connect(&proxy.connect_string()).await;
    let direct = connect(&server.connect_string()).await;

    proxy.hold_replies();
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let create = client.create("/in-flight", b"", &options);
    // The request reaches the server although its reply is held.
    let applied = tokio::time::timeout(timing().wait(), async {
        while direct.check_stat("/in-flight").await.unwrap().is_none() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(applied.is_ok(), "the held request never reached the server");
    proxy.cut();
    proxy.heal();
    assert!(create.await.is_err(), "the reply should have been lost");
}

#[tokio::test]
async fn dropping_a_server_leaves_no_jvm_and_no_files() {
    let server = TestingServer::start().await.unwrap();
    let root = server.root_dir().to_path_buf();
    assert!(!processes_mentioning(&root).is_empty(), "the server should be running");
    drop(server);
    assert!(processes_mentioning(&root).is_empty(), "a JVM survived the drop");
    assert!(!root.exists(), "the data directory survived the drop");
}

#[tokio::test]
async fn dropping_a_cluster_leaves_no_jvm() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let root = cluster.root_dir().to_path_buf();
    cluster.pause(1).unwrap();
    drop(cluster);
    assert!(processes_mentioning(&root).is_empty(), "a JVM survived the drop");
    assert!(!root.exists());
}

const ORPHAN_HELPER_ENV: &str = "ZKR_TESTING_ORPHAN_HELPER";

/// In the child process (see below) this starts a server, prints its directory and waits to be
/// killed; in a normal run it does nothing.
#[tokio::test]
async fn orphan_helper() {
    if std::env::var_os(ORPHAN_HELPER_ENV).is_none() {
        return;
    }
    let server = TestingServer::start().await.unwrap();
    println!("ROOT={}", server.root_dir().display());
    std::future::pending::<()>().await;
}

#[test]
fn a_server_dies_with_the_process_that_started_it_even_on_sigkill() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "orphan_helper", "--nocapture", "--test-threads=1"])
        .env(ORPHAN_HELPER_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut root = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(dir) = line.split("ROOT=").nth(1) {
            root = Some(std::path::PathBuf::from(dir));
            break;
        }
    }
    let root = root.expect("the helper started a server");
    assert!(!processes_mentioning(&root).is_empty());
    child.kill().unwrap(); // SIGKILL: no destructor runs in the helper
    child.wait().unwrap();
    let deadline = std::time::Instant::now() + timing().wait();
    while (!processes_mentioning(&root).is_empty() || root.exists()) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(processes_mentioning(&root).is_empty(), "the JVM outlived its parent");
    assert!(!root.exists(), "the orphan guard did not remove the directory");
}

#[tokio::test]
async fn shared_server_is_started_once() {
    let a = zkr_testing::shared_server().await.unwrap();
    let b = zkr_testing::shared_server().await.unwrap();
    assert!(std::ptr::eq(a, b));
    let client = connect(&a.connect_string()).await;
    client.check_stat("/").await.unwrap();
}

#[test]
fn cluster_sizes_are_checked() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let err = rt.block_on(TestingCluster::start(2)).unwrap_err();
    assert!(matches!(err, zkr_testing::Error::ClusterSize(2)));
}

#[test]
fn install_errors_name_the_install_command() {
    let err = zkr_testing::Error::ZooKeeperNotFound { detail: "nothing".into() };
    assert!(err.to_string().contains(zkr_testing::INSTALL_COMMAND), "{err}");
    assert!(zkr_testing::INSTALL_COMMAND.contains("maven"));
    let err = "3.4.14".parse::<zkr_testing::Release>().unwrap_err();
    assert!(err.to_string().contains("3.9.5"), "{err}");
}

/// A release Maven Central does not have is a `MavenResolve` error naming it, not a hang or a
/// server that never starts.
#[test]
fn a_release_maven_cannot_resolve_is_an_error_naming_it() {
    let release: zkr_testing::Release = "3.5.99".parse().unwrap();
    let err = zkr_testing::Installation::for_release(&release).unwrap_err();
    assert!(matches!(err, zkr_testing::Error::MavenResolve { .. }), "{err:?}");
    assert!(err.to_string().contains("zookeeper-3.5.99"), "{err}");
}

/// A follower cut off from the quorum keeps its clients connected but cannot apply a write,
/// while the majority goes on; once joined again it catches up. Cut off by the links' proxies,
/// then by nftables in network namespaces (which go with the cluster).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_follower_keeps_its_clients_but_not_its_quorum() {
    isolated_follower(zkr_testing::ServerOptions::default().partitionable(true)).await;
    isolated_follower(zkr_testing::ServerOptions::default().network_namespaces(true)).await;
    let namespaces = std::process::Command::new("ip").args(["netns", "list"]).output().unwrap();
    let ours = format!("zkr-{}-", std::process::id());
    assert!(!String::from_utf8_lossy(&namespaces.stdout).contains(&ours), "a namespace was left");
    assert!(matches!(
        TestingCluster::start(1).await.unwrap().isolate(0),
        Err(zkr_testing::Error::NotPartitionable)
    ));
}

async fn isolated_follower(options: zkr_testing::ServerOptions) {
    let cluster = TestingCluster::with_options(3, options).await.unwrap();
    let leader = cluster.leader().await.expect("a leader");
    let follower = (leader + 1) % 3;
    let majority = connect(&cluster.server_connect_string(leader).unwrap()).await;
    let isolated = connect(&cluster.server_connect_string(follower).unwrap()).await;
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    cluster.isolate(follower).unwrap();
    majority.create("/during", b"", &options).await.unwrap();
    // The isolated server's client is still connected at first; its write is not applied.
    let write =
        tokio::time::timeout(Duration::from_secs(2), isolated.create("/cut-off", b"", &options)).await;
    assert!(!matches!(write, Ok(Ok(_))), "a write through an isolated server was applied: {write:?}");
    assert!(majority.check_stat("/cut-off").await.unwrap().is_none());
    assert!(cluster.heal(follower).is_ok());
    let caught_up = connect(&cluster.server_connect_string(follower).unwrap()).await;
    let synced = tokio::time::timeout(timing().wait() * 2, async {
        loop {
            if caught_up.sync("/").await.is_ok()
                && caught_up.check_stat("/during").await.is_ok_and(|s| s.is_some())
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    assert!(synced.await.is_ok(), "the follower did not catch up after the heal");
}
