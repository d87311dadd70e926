//! zkr-connection against real ZooKeeper servers: Curator's connection-state sequences, session
//! rebuild, auth, namespaces, protected create, the retry loop and bad input.

use std::time::Duration;

use zkr_connection::Classify as _;
use zkr_connection::{ConnectionState::*, Error, RetryOptions, ZkClient};
use zkr_integration_tests::{
    builder, connect, connect_with_session, eventually, expect_no_state, expect_states, raw, timing,
    unique_root,
};
use zkr_testing::{expire_session, shared_server, FaultProxy, TestingCluster, TestingServer};
use zookeeper_client::{Acls, Client, CreateMode};

async fn states_until_reconnected_after_lost(
    states: &mut zkr_connection::ConnectionStateStream,
) -> Vec<zkr_connection::ConnectionState> {
    use futures::StreamExt;
    let mut seen = Vec::new();
    while !(seen.len() >= 2 && seen[seen.len() - 2..] == [Lost, Reconnected]) {
        let next = tokio::time::timeout(timing().wait(), states.next()).await;
        seen.push(next.expect("a state").expect("the stream goes on"));
    }
    seen
}

#[tokio::test]
async fn injected_expiry_gives_connected_lost_reconnected_on_a_new_session() {
    let server = shared_server().await.unwrap();
    let zk = builder(&server.connect_string()).start().await.unwrap();
    let mut states = zk.state_changes();
    zk.wait_connected(timing().wait()).await.unwrap();
    let first = zk.session().await.unwrap();

    zk.inject_session_expiration();
    expect_states(&mut states, &[Connected, Lost, Reconnected]).await;
    let second = zk.session().await.unwrap();
    assert_eq!(second.generation(), first.generation() + 1);
    assert_ne!(second.id(), first.id());
}

#[tokio::test]
async fn status_names_the_state_the_session_and_its_timeout_and_follows_a_rebuild() {
    let server = shared_server().await.unwrap();
    let zk = builder(&server.connect_string()).session_timeout(Duration::from_secs(6)).start().await.unwrap();
    let mut states = zk.state_changes();
    zk.wait_connected(timing().wait()).await.unwrap();
    let first = zk.session().await.unwrap();
    let status = zk.status();
    assert_eq!(status.state, Some(Connected));
    assert_eq!((status.session_id, status.generation), (Some(first.id()), 1));
    assert_eq!(status.negotiated_timeout, Some(Duration::from_secs(6)));
    assert!(status.in_state_for < timing().wait() && !status.closed, "{status:?}");

    zk.inject_session_expiration();
    expect_states(&mut states, &[Connected, Lost, Reconnected]).await;
    let rebuilt = zk.status();
    assert_eq!((rebuilt.state, rebuilt.generation), (Some(Reconnected), 2), "{rebuilt:?}");
    assert_ne!(rebuilt.session_id, Some(first.id()));
    zk.close().await;
    assert!(zk.status().closed);
}

#[tokio::test]
async fn server_side_expiry_gives_suspended_lost_reconnected_and_ephemerals_go() {
    let server = shared_server().await.unwrap();
    let root = unique_root("expiry");
    let zk = builder(&server.connect_string()).start().await.unwrap();
    let mut states = zk.state_changes();
    zk.wait_connected(timing().wait()).await.unwrap();
    expect_states(&mut states, &[Connected]).await;
    zk.create(&format!("{root}/eph"), b"", CreateMode::Ephemeral).await.unwrap();
    let old = zk.session().await.unwrap();

    // The server drops the old connection when the intruder attaches (Suspended), then the
    // reconnect is told the session expired (Lost), then the manager builds a new one. The
    // victim may win a race to reattach before the intruder closes the session, which shows as
    // extra Reconnected/Suspended pairs before the Lost.
    expire_session(old.client(), &server.connect_string()).await.unwrap();
    let seen = states_until_reconnected_after_lost(&mut states).await;
    assert_eq!(seen.first(), Some(&Suspended), "{seen:?}");
    assert_eq!(&seen[seen.len() - 2..], &[Lost, Reconnected], "{seen:?}");
    assert!(
        seen[..seen.len() - 2]
            .chunks(2)
            .all(|c| c[0] == Suspended && c.get(1).is_none_or(|s| *s == Reconnected)),
        "{seen:?}"
    );
    let observer = raw(&server.connect_string()).await;
    assert_eq!(observer.check_stat(&format!("{root}/eph")).await.unwrap(), None);
    zk.create(&format!("{root}/eph"), b"", CreateMode::Ephemeral).await.unwrap();
}

#[tokio::test]
async fn restart_within_the_session_timeout_gives_suspended_reconnected_on_the_same_session() {
    let server = TestingServer::start().await.unwrap();
    let zk = ZkClient::builder(server.connect_string())
        .session_timeout(timing().multiple(Duration::from_secs(20)))
        .start()
        .await
        .unwrap();
    let mut states = zk.state_changes();
    zk.wait_connected(timing().wait()).await.unwrap();
    let session = zk.session().await.unwrap();

    server.restart().await.unwrap();
    expect_states(&mut states, &[Connected, Suspended, Reconnected]).await;
    assert_eq!(zk.session().await.unwrap().id(), session.id());
    assert_eq!(zk.generation(), session.generation());
}

#[tokio::test]
async fn server_down_too_long_gives_suspended_lost_then_reconnected_when_back() {
    let server = TestingServer::start().await.unwrap();
    let zk = builder(&server.connect_string()).start().await.unwrap();
    let mut states = zk.state_changes();
    zk.wait_connected(timing().wait()).await.unwrap();
    let session = zk.session().await.unwrap();

    server.stop().unwrap();
    expect_states(&mut states, &[Connected, Suspended, Lost]).await;
    assert!(zk.try_session().is_none(), "no session while rebuilding");
    server.restart().await.unwrap();
    expect_states(&mut states, &[Reconnected]).await;
    assert_eq!(zk.generation(), session.generation() + 1);
}

#[tokio::test]
async fn lost_is_announced_before_the_server_can_expire_the_session() {
    // A partition: the client hears nothing. Lost must come no later than a session timeout
    // after the last contact, so the server-side expiry (which frees a lock) comes after it.
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let root = unique_root("partition");
    let zk = ZkClient::builder(proxy.connect_string())
        .session_timeout(timing().multiple(Duration::from_secs(6)))
        .start()
        .await
        .unwrap();
    let mut states = zk.state_changes();
    zk.wait_connected(timing().wait()).await.unwrap();
    zk.create(&format!("{root}/eph"), b"", CreateMode::Ephemeral).await.unwrap();
    let observer = raw(&server.connect_string()).await;

    proxy.blackhole();
    expect_states(&mut states, &[Connected, Suspended, Lost]).await;
    // When we announce Lost, the server must not have deleted our ephemeral yet.
    let still_there = observer.check_stat(&format!("{root}/eph")).await.unwrap().is_some();
    assert!(still_there, "the server expired the session before the client announced Lost");
    proxy.heal();
    expect_states(&mut states, &[Reconnected]).await;
}

#[tokio::test]
async fn proxy_cut_gives_suspended_reconnected_and_a_slow_subscriber_blocks_nobody() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = builder(&proxy.connect_string()).start().await.unwrap();
    let mut slow = zk.state_changes();
    let mut states = zk.state_changes();
    zk.wait_connected(timing().wait()).await.unwrap();
    let session = zk.session().await.unwrap();

    proxy.cut();
    expect_states(&mut states, &[Connected, Suspended, Reconnected]).await;
    assert_eq!(zk.session().await.unwrap().id(), session.id());
    // The subscriber that never read still gets every transition, in order.
    expect_states(&mut slow, &[Connected, Suspended, Reconnected]).await;
    expect_no_state(&mut slow, Duration::from_millis(100)).await;
}

#[tokio::test]
async fn leader_kill_keeps_the_session_with_suspended_then_reconnected() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let zk = ZkClient::builder(cluster.connect_string())
        .session_timeout(timing().multiple(Duration::from_secs(10)))
        .start()
        .await
        .unwrap();
    let mut states = zk.state_changes();
    zk.wait_connected(timing().wait()).await.unwrap();
    let session = zk.session().await.unwrap();
    let leader = cluster.leader().await.expect("a leader");

    cluster.kill(leader).unwrap();
    expect_states(&mut states, &[Connected, Suspended, Reconnected]).await;
    assert_eq!(zk.session().await.unwrap().id(), session.id(), "the same session continues");
    zk.create("/after-leader-kill", b"", CreateMode::Persistent).await.unwrap();
}

#[tokio::test]
async fn auth_is_reapplied_after_a_session_rebuild() {
    let server = shared_server().await.unwrap();
    let root = unique_root("auth");
    let node = format!("{root}/secret");
    let owner = builder(&server.connect_string())
        .digest_auth("alice", "pw")
        .creator_only_acl()
        .connect()
        .await
        .unwrap();
    let mut states = owner.state_changes();
    owner.create(&node, b"v1", CreateMode::Persistent).await.unwrap();

    owner.inject_session_expiration();
    expect_states(&mut states, &[Lost, Reconnected]).await;
    owner
        .retry(|s| {
            let node = node.clone();
            async move { s.client().set_data(&node, b"v2", None).await }
        })
        .await
        .unwrap();

    let anonymous = raw(&server.connect_string()).await;
    assert_eq!(anonymous.get_data(&node).await.unwrap_err(), zookeeper_client::Error::NoAuth);
    assert_eq!(anonymous.set_data(&node, b"x", None).await.unwrap_err(), zookeeper_client::Error::NoAuth);
    let mallory = builder(&server.connect_string()).digest_auth("mallory", "pw").connect().await.unwrap();
    let err = mallory
        .retry(|s| {
            let node = node.clone();
            async move { s.client().delete(&node, None).await }
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Zk(zookeeper_client::Error::NoAuth)), "{err}");
}

#[tokio::test]
async fn namespaces_are_isolated() {
    let server = shared_server().await.unwrap();
    let ns = unique_root("ns")[1..].to_string();
    let a = builder(&server.connect_string()).namespace(format!("{ns}/a")).connect().await.unwrap();
    let b = builder(&server.connect_string()).namespace(format!("{ns}/b")).connect().await.unwrap();
    a.create("/x", b"from a", CreateMode::Persistent).await.unwrap();
    b.create("/x", b"from b", CreateMode::Persistent).await.unwrap();
    let read = |zk: ZkClient| async move {
        zk.retry(|s| async move { s.client().get_data("/x").await }).await.unwrap().0
    };
    assert_eq!(read(a.clone()).await, b"from a");
    assert_eq!(read(b.clone()).await, b"from b");
    let observer = raw(&server.connect_string()).await;
    assert_eq!(observer.get_data(&format!("/{ns}/a/x")).await.unwrap().0, b"from a");
    assert_eq!(observer.get_data(&format!("/{ns}/b/x")).await.unwrap().0, b"from b");
}

/// A protected create through `proxy` whose request has reached the server while its reply is
/// held: the test then loses or cancels it.
struct HeldCreate {
    zk: ZkClient,
    observer: Client,
    root: String,
    creating: tokio::task::JoinHandle<zkr_connection::Result<zkr_connection::ProtectedNode>>,
}

async fn held_protected_create(server: &TestingServer, proxy: &FaultProxy, name: &str) -> HeldCreate {
    let root = unique_root(name);
    let zk = builder(&proxy.connect_string()).start().await.unwrap();
    zk.create_parents(&format!("{root}/x")).await.unwrap();
    let observer = raw(&server.connect_string()).await;
    proxy.hold_replies();
    let creating = {
        let zk = zk.clone();
        let root = root.clone();
        tokio::spawn(async move {
            zk.create_protected(&root, "lock-", b"", CreateMode::EphemeralSequential).await
        })
    };
    eventually("the create to reach the server", || async {
        !observer.list_children(&root).await.unwrap().is_empty()
    })
    .await;
    HeldCreate { zk, observer, root, creating }
}

#[tokio::test]
async fn a_protected_create_whose_reply_is_lost_finds_its_node_and_leaves_exactly_one() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let HeldCreate { observer, root, creating, .. } =
        held_protected_create(server, &proxy, "protected").await;
    proxy.cut();
    proxy.heal();
    let node = creating.await.unwrap().expect("the protected create succeeds");
    let children = observer.list_children(&root).await.unwrap();
    assert_eq!(children, vec![node.name.clone()], "exactly one node, ours");
    assert!(zkr_connection::protected::is_protected_name(&node.name));
    assert_eq!(node.sequence, Some(0));
}

#[tokio::test]
async fn a_cancelled_protected_create_leaves_no_node() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let HeldCreate { zk, observer, root, creating } =
        held_protected_create(server, &proxy, "cancelled").await;
    creating.abort();
    assert!(creating.await.unwrap_err().is_cancelled());
    proxy.heal();
    eventually("the orphan to be deleted", || async {
        observer.list_children(&root).await.unwrap().is_empty()
    })
    .await;
    assert!(zk.is_connected(), "the session lives on; only the orphan went");
}

#[tokio::test]
async fn the_retry_loop_does_not_carry_a_sequence_across_a_session_expiry_unless_asked() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let cs = server.connect_string();

    let attempt = |cs: String| {
        move |s: zkr_connection::Session| {
            let cs = cs.clone();
            async move {
                if s.generation() == 1 {
                    expire_session(s.client(), &cs).await.expect("expire");
                }
                s.client().check_stat("/").await
            }
        }
    };
    let err = zk.retry(attempt(cs.clone())).await.unwrap_err();
    assert!(matches!(err, Error::SessionExpired { .. }), "{err}");

    let zk = connect(&server.connect_string()).await;
    let stat = zk.retry_with(RetryOptions::default().across_sessions(true), attempt(cs)).await.unwrap();
    assert!(stat.is_some());
    assert_eq!(zk.generation(), 2);
}

#[tokio::test]
async fn the_retry_loop_rides_out_a_disconnect_and_never_retries_answers() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let root = unique_root("retry");
    let zk = builder(&proxy.connect_string()).start().await.unwrap();
    zk.create(&root, b"", CreateMode::Persistent).await.unwrap();

    let mut calls = 0;
    let err = zk
        .retry(|s| {
            calls += 1;
            let path = format!("{root}/missing");
            async move { s.client().get_data(&path).await }
        })
        .await
        .unwrap_err();
    assert!(err.is_no_node());
    assert_eq!(calls, 1, "NoNode is an answer, not a fault");

    proxy.hold_replies();
    let reading = {
        let zk = zk.clone();
        let root = root.clone();
        tokio::spawn(async move {
            zk.retry(|s| {
                let root = root.clone();
                async move { s.client().get_data(&root).await }
            })
            .await
        })
    };
    tokio::task::yield_now().await;
    proxy.cut();
    proxy.heal();
    assert!(reading.await.unwrap().is_ok());
}

#[tokio::test]
async fn guaranteed_delete_finishes_after_a_partition_heals() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let root = unique_root("gdelete");
    let zk = connect_with_session(proxy.connect_string(), 10).await;
    zk.create(&root, b"", CreateMode::Persistent).await.unwrap();
    let mut states = zk.state_changes();

    proxy.blackhole();
    let deleting = zk.guaranteed_delete(root.clone(), None);
    expect_states(&mut states, &[Suspended]).await;
    proxy.heal();
    assert!(deleting.wait().await);
    assert_eq!(raw(&server.connect_string()).await.check_stat(&root).await.unwrap(), None);
}

#[tokio::test]
async fn bad_input_gives_typed_errors_and_leaves_nothing() {
    let server = shared_server().await.unwrap();
    let root = unique_root("bad");
    for cs in ["", "a:2181;b:2182", "a:0", "h:1,,h:2", "h:1/chroot/"] {
        assert!(
            matches!(ZkClient::builder(cs).start().await, Err(Error::InvalidConnectString { .. })),
            "{cs:?}"
        );
    }
    assert!(matches!(
        ZkClient::builder(server.connect_string()).namespace("/abs").start().await,
        Err(Error::InvalidSetting { setting: "namespace", .. })
    ));
    assert!(matches!(
        ZkClient::builder(server.connect_string()).session_timeout(Duration::ZERO).start().await,
        Err(Error::InvalidSetting { setting: "session_timeout", .. })
    ));

    let zk = connect(&server.connect_string()).await;
    for path in ["", "relative", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/nul\0"] {
        let err = zk.create(path, b"", CreateMode::Persistent).await.unwrap_err();
        assert!(matches!(err, Error::InvalidPath { .. }), "{path:?}: {err}");
    }
    assert!(matches!(zk.create("/", b"", CreateMode::Persistent).await, Err(Error::InvalidPath { .. })));
    let too_big = vec![0u8; zkr_connection::MAX_DATA_LEN + 1];
    let err = zk.create(&format!("{root}/big"), &too_big, CreateMode::Persistent).await.unwrap_err();
    assert!(matches!(err, Error::DataTooLarge { .. }), "{err}");
    let err = zk.create_protected(&root, "a/b", b"", CreateMode::EphemeralSequential).await.unwrap_err();
    assert!(matches!(err, Error::InvalidPath { .. }), "{err}");
    let observer = raw(&server.connect_string()).await;
    assert_eq!(observer.check_stat(&root).await.unwrap(), None, "nothing was created");

    // The largest value we accept is one ZooKeeper takes.
    let largest = vec![7u8; zkr_connection::MAX_DATA_LEN];
    zk.create(&format!("{root}/largest"), &largest, CreateMode::Persistent).await.unwrap();
}

#[tokio::test]
async fn connecting_to_nothing_fails_within_the_connection_timeout_and_says_why() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let started = std::time::Instant::now();
    let err = ZkClient::builder(format!("127.0.0.1:{port}"))
        .connection_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ConnectTimeout { .. }), "{err}");
    // The cause, host by host, not zookeeper-client's "no available hosts".
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}: connection refused")), "{err}");
    assert!(started.elapsed() < timing().wait());
}

#[tokio::test]
async fn close_ends_the_session_and_every_handle_sees_closed() {
    let server = shared_server().await.unwrap();
    let root = unique_root("close");
    let zk = connect(&server.connect_string()).await;
    zk.create(&format!("{root}/eph"), b"", CreateMode::Ephemeral).await.unwrap();
    let other = zk.clone();
    zk.close().await;
    assert!(matches!(other.session().await, Err(Error::Closed)));
    let observer = raw(&server.connect_string()).await;
    eventually("the closed session's ephemeral to go", || async {
        observer.check_stat(&format!("{root}/eph")).await.unwrap().is_none()
    })
    .await;
    let _ = Acls::anyone_all();
}

#[tokio::test]
async fn a_transaction_applies_every_operation_or_none_and_names_the_refused_one() {
    let server = shared_server().await.unwrap();
    let ns = unique_root("txn")[1..].to_string();
    let zk = builder(&server.connect_string()).namespace(&ns).connect().await.unwrap();
    let observer = raw(&server.connect_string()).await;
    zk.create("/old", b"", CreateMode::Persistent).await.unwrap();
    zk.create("/config", b"v1", CreateMode::Persistent).await.unwrap();

    let results = zk
        .transaction()
        .check("/config", 0)
        .set_data("/config", b"v2", None)
        .create("/items", b"", CreateMode::Persistent)
        .create("/items/item-", b"a", CreateMode::PersistentSequential)
        .delete("/old", None)
        .commit()
        .await
        .unwrap();
    use zookeeper_client::MultiWriteResult as R;
    assert!(matches!(results[0], R::Check));
    assert!(matches!(&results[1], R::SetData { stat } if stat.version == 1));
    assert!(matches!(&results[3], R::Create { path, .. } if path == "/items/item-0000000000"), "{results:?}");
    assert!(matches!(results[4], R::Delete));
    assert_eq!(observer.get_data(&format!("/{ns}/config")).await.unwrap().0, b"v2", "inside the namespace");
    assert!(observer.check_stat(&format!("/{ns}/old")).await.unwrap().is_none());

    let err = zk
        .transaction()
        .create("/new", b"", CreateMode::Persistent)
        .check("/config", 0)
        .commit()
        .await
        .unwrap_err();
    match &err {
        Error::TransactionFailed {
            index: 1,
            op: zkr_connection::OpKind::Check,
            path,
            source,
            retried: false,
        } => {
            assert_eq!(path, "/config");
            assert_eq!(*source, zookeeper_client::Error::BadVersion);
        }
        other => panic!("expected the check to be named, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "operation 1 of the transaction (check /config) failed",
        "the cause is the source"
    );
    assert!(err.is_bad_version());
    assert!(!err.is_ambiguous(), "refused on the first attempt: nothing was applied");
    assert!(observer.check_stat(&format!("/{ns}/new")).await.unwrap().is_none(), "nothing applied");

    let err = zk.transaction().check_exists("/gone").commit().await.unwrap_err();
    assert!(err.is_no_node(), "{err:?}");
}

#[tokio::test]
async fn a_transaction_gets_the_acl_provider_s_acl_and_refuses_bad_input_before_sending() {
    let server = shared_server().await.unwrap();
    let root = unique_root("txn-acl");
    let zk = builder(&server.connect_string())
        .auth("digest", b"txn:secret".to_vec())
        .acl_provider(zkr_connection::CreatorAllAclProvider)
        .connect()
        .await
        .unwrap();
    zk.transaction().create(&root, b"", CreateMode::Persistent).commit().await.unwrap();
    let (acl, _) = zk
        .retry(|s| {
            let root = root.clone();
            async move { s.client().get_acl(&root).await }
        })
        .await
        .unwrap();
    assert_eq!(acl.len(), 1);
    assert_eq!(acl[0].scheme(), "digest", "{acl:?}");
    let observer = raw(&server.connect_string()).await;
    assert_eq!(observer.get_data(&root).await.unwrap_err(), zookeeper_client::Error::NoAuth);

    assert!(matches!(zk.transaction().commit().await, Err(Error::InvalidArgument(_))));
    let err = zk
        .transaction()
        .create(&format!("{root}/a"), b"", CreateMode::Persistent)
        .set_data("relative", b"", None)
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidPath { .. }), "{err:?}");
    let big = vec![0u8; zkr_connection::MAX_DATA_LEN + 1];
    let err = zk.transaction().create(&format!("{root}/b"), &big, CreateMode::Persistent).commit().await;
    assert!(matches!(err, Err(Error::DataTooLarge { .. })), "{err:?}");
    let children = zk
        .retry(|s| {
            let root = root.clone();
            async move { s.client().list_children(&root).await }
        })
        .await
        .unwrap();
    assert!(children.is_empty(), "nothing sent");
}

#[tokio::test]
async fn a_transaction_is_retried_as_one_unit_after_a_connection_loss() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let root = unique_root("txn-retry");
    let zk = builder(&proxy.connect_string()).start().await.unwrap();
    zk.create(&root, b"", CreateMode::Persistent).await.unwrap();
    let observer = raw(&server.connect_string()).await;

    proxy.blackhole();
    let committing = {
        let txn = zk.transaction().create(&format!("{root}/a"), b"", CreateMode::Persistent).set_data(
            &root,
            b"after",
            Some(0),
        );
        tokio::spawn(txn.commit())
    };
    tokio::task::yield_now().await;
    proxy.cut();
    proxy.heal();
    let results = committing.await.unwrap().expect("the retried transaction succeeds");
    assert_eq!(results.len(), 2);
    assert_eq!(observer.get_data(&root).await.unwrap().0, b"after");
    assert!(observer.check_stat(&format!("{root}/a")).await.unwrap().is_some());

    // A commit applied whose reply is lost: the retry meets its own effect, as documented.
    proxy.hold_replies();
    let committing =
        tokio::spawn(zk.transaction().create(&format!("{root}/b"), b"", CreateMode::Persistent).commit());
    eventually("the first attempt to be applied", || async {
        observer.check_stat(&format!("{root}/b")).await.unwrap().is_some()
    })
    .await;
    proxy.cut();
    proxy.heal();
    let err = committing.await.unwrap().unwrap_err();
    assert!(
        matches!(err, Error::TransactionFailed { index: 0, retried: true, .. }) && err.is_node_exists(),
        "{err:?}"
    );
    assert!(err.is_ambiguous(), "a failure on the retry may be the first attempt's own effect");
}
