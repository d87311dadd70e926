//! `PersistentNode`, `PersistentTtlNode` and `GroupMember` against real ZooKeeper servers:
//! re-created after another client deletes the node and after a session expiry, protected
//! sequential names that change, another session's ephemeral node that is not taken over, TTL
//! creates on servers with TTL nodes on and off, and a group whose members see each other,
//! one of them a Curator `GroupMember`.

use std::time::Duration;

use zkr_connection::Error as ZkError;
use zkr_integration_tests::{connect, eventually, raw, timing, unique_root};
use zkr_recipes::nodes::{GroupMember, NodeError, PersistentNode, PersistentTtlNode};
use zkr_testing::{expire_session, shared_server, ServerOptions, TestingServer};
use zookeeper_client::{Client, CreateMode};

/// Waits until the node's path is `Some` and differs from `old`.
async fn next_path(node: &PersistentNode, old: Option<&str>) -> String {
    let mut paths = node.path_watch();
    let wait = paths.wait_for(|p| p.is_some() && p.as_deref() != old);
    let path = tokio::time::timeout(timing().wait(), wait).await.expect("a new path in time").unwrap();
    path.clone().unwrap()
}

#[tokio::test]
async fn an_ephemeral_node_deleted_by_another_client_is_created_again_with_its_latest_data() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let other = raw(&server.connect_string()).await;
    let path = format!("{}/member", unique_root("pn-delete"));
    let node = PersistentNode::builder(&zk, &path, CreateMode::Ephemeral).data(b"v1").start().await.unwrap();
    assert_eq!(node.wait_for_initial_create_timeout(timing().wait()).await.unwrap(), Some(path.clone()));
    assert_eq!(other.get_data(&path).await.unwrap().0, b"v1");
    node.set_data(b"v2".to_vec()).await.unwrap();
    assert_eq!(other.get_data(&path).await.unwrap().0, b"v2");

    other.delete(&path, None).await.unwrap();
    eventually("the node to be created again", || async { node.creates() == 2 }).await;
    let (data, stat) = other.get_data(&path).await.unwrap();
    assert_eq!(data, b"v2");
    assert_eq!(stat.ephemeral_owner, zk.session().await.unwrap().id());
    node.close().await;
    assert!(other.check_stat(&path).await.unwrap().is_none(), "close deletes the node");
}

#[tokio::test]
async fn an_ephemeral_node_is_back_on_the_new_session_after_an_expiry() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let other = raw(&server.connect_string()).await;
    let path = format!("{}/member", unique_root("pn-expiry"));
    let node = PersistentNode::builder(&zk, &path, CreateMode::Ephemeral).data(b"me").start().await.unwrap();
    node.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    let first = zk.session().await.unwrap();
    expire_session(first.client(), &server.connect_string()).await.unwrap();
    eventually("the node on a new session", || async {
        let owner = other.check_stat(&path).await.unwrap().map(|s| s.ephemeral_owner);
        owner.is_some_and(|o| o != first.id() && Some(o) == zk.try_session().map(|s| s.id()))
    })
    .await;
    assert_eq!(other.get_data(&path).await.unwrap().0, b"me");
    assert_eq!(node.actual_path().as_deref(), Some(path.as_str()));
    node.close().await;
}

#[tokio::test]
async fn a_protected_sequential_node_gets_a_new_name_when_created_again_and_close_leaves_nothing() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let other = raw(&server.connect_string()).await;
    let parent = unique_root("pn-seq");
    let node = PersistentNode::builder(&zk, &format!("{parent}/worker-"), CreateMode::EphemeralSequential)
        .start()
        .await
        .unwrap();
    let first =
        node.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    let name = first.rsplit('/').next().unwrap();
    assert!(name.starts_with("_c_") && name.contains("-worker-"), "{name}");
    other.delete(&first, None).await.unwrap();
    let second = next_path(&node, Some(&first)).await;
    assert_ne!(first, second);
    assert_eq!(other.list_children(&parent).await.unwrap().len(), 1, "one node at a time");
    node.close().await;
    assert!(other.list_children(&parent).await.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn another_sessions_ephemeral_node_is_not_taken_over_but_waited_for() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    // Its own short session (the default 6 s): dropping it ends the session and frees the node.
    let squatter = Client::connect(&server.connect_string()).await.unwrap();
    let path = format!("{}/id-1", unique_root("pn-held"));
    let mode = CreateMode::Ephemeral.with_acls(zookeeper_client::Acls::anyone_all());
    squatter
        .create(
            zkr_connection::path::parent(&path).unwrap(),
            &[],
            &CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
    squatter.create(&path, b"theirs", &mode).await.unwrap();
    let node =
        PersistentNode::builder(&zk, &path, CreateMode::Ephemeral).data(b"ours").start().await.unwrap();
    assert_eq!(node.wait_for_initial_create_timeout(Duration::from_millis(500)).await.unwrap(), None);
    let why = node.creation_error();
    let Some(NodeError::NotCreated { held_by: Some(owner), .. }) = &why else { panic!("{why:?}") };
    assert_eq!(*owner, squatter.session_id().0);
    assert!(why.unwrap().to_string().contains("held by session"));
    assert_eq!(squatter.get_data(&path).await.unwrap().0, b"theirs", "their data is left alone");
    drop(squatter);
    node.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    let observer = raw(&server.connect_string()).await;
    assert_eq!(observer.get_data(&path).await.unwrap().0, b"ours");
    node.close().await;
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_is_sent() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let bad_path = PersistentNode::builder(&zk, "no-slash", CreateMode::Ephemeral).start().await;
    assert!(matches!(bad_path, Err(NodeError::InvalidArgument(_))), "{bad_path:?}");
    let ttl_ephemeral =
        PersistentNode::builder(&zk, "/x/y", CreateMode::Ephemeral).ttl(Duration::from_secs(1)).start().await;
    let Err(error) = ttl_ephemeral else { panic!("{ttl_ephemeral:?}") };
    assert_eq!(error.to_string(), "invalid argument: a TTL node must be Persistent or PersistentSequential");
    let reserved = PersistentNode::builder(&zk, "/zookeeper/x", CreateMode::Persistent).start().await;
    assert!(matches!(reserved, Err(NodeError::InvalidArgument(_))), "{reserved:?}");
    let bad_id = GroupMember::start(&zk, "/group", "a/b", b"").await;
    assert!(matches!(bad_id, Err(NodeError::InvalidArgument(_))), "{bad_id:?}");
}

#[tokio::test]
async fn ttl_nodes_are_created_and_a_server_with_them_off_says_so() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let path = format!("{}/ttl", unique_root("ttl-on"));
    zk.create_with_ttl(&path, b"x", CreateMode::Persistent, Duration::from_secs(30)).await.unwrap();
    // (Clients see 0 as a TTL node's ephemeralOwner; that it expires is the next test's.)
    assert_eq!(raw(&server.connect_string()).await.get_data(&path).await.unwrap().0, b"x");

    let off = TestingServer::with_options(ServerOptions::default().ttl_nodes(false)).await.unwrap();
    let zk_off = connect(&off.connect_string()).await;
    let refused = zk_off.create_with_ttl("/ttl", b"", CreateMode::Persistent, Duration::from_secs(30)).await;
    assert!(matches!(&refused, Err(ZkError::TtlDisabled { path }) if path == "/ttl"), "{refused:?}");
    let node = PersistentTtlNode::start(&zk_off, "/kept", Duration::from_secs(30), b"").await.unwrap();
    assert_eq!(node.wait_for_initial_create_timeout(Duration::from_secs(2)).await.unwrap(), None);
    let why = node.node().creation_error();
    let Some(NodeError::NotCreated { last: Some(last), .. }) = &why else { panic!("{why:?}") };
    let ZkError::TtlDisabled { .. } = **last else { panic!("{why:?}") };
    node.close().await;
}

#[tokio::test]
async fn a_ttl_node_lives_while_touched_and_expires_after_close() {
    let options = ServerOptions::default().container_check_interval(Duration::from_millis(100));
    let server = TestingServer::with_options(options).await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let observer = raw(&server.connect_string()).await;
    let ttl = Duration::from_millis(600);
    let node = PersistentTtlNode::start(&zk, "/job/running", ttl, b"host-1").await.unwrap();
    node.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    eventually("the touch child", || async {
        observer.check_stat("/job/running/touch").await.unwrap().is_some()
    })
    .await;
    // Several TTLs go by while the node is touched: it stays.
    let (_, watcher) = observer.check_and_watch_stat("/job/running").await.unwrap();
    let stayed = tokio::time::timeout(ttl * 4, watcher.changed()).await;
    assert!(stayed.is_err(), "the touched node changed or went: {stayed:?}");
    assert_eq!(observer.get_data("/job/running").await.unwrap().0, b"host-1");
    node.close().await;
    eventually("the node to expire after close", || async {
        observer.check_stat("/job/running").await.unwrap().is_none()
    })
    .await;

    // Issue 27 item 5: a sequential PersistentNode with a TTL was created without it (its
    // protected create dropped the TTL) and lived forever. It expires like a control node.
    zk.create_with_ttl("/job/control", b"", CreateMode::Persistent, ttl).await.unwrap();
    let sequential = PersistentNode::builder(&zk, "/job/seq-", CreateMode::PersistentSequential)
        .ttl(ttl)
        .delete_on_close(false)
        .start()
        .await
        .unwrap();
    let path =
        sequential.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    sequential.close().await;
    for expiring in ["/job/control", path.as_str()] {
        eventually(&format!("{expiring} to expire"), || async {
            observer.check_stat(expiring).await.unwrap().is_none()
        })
        .await;
    }
}

#[tokio::test]
async fn group_members_see_each_other_join_change_and_leave() {
    let server = shared_server().await.unwrap();
    let group = unique_root("group");
    let (zk_a, zk_b) = (connect(&server.connect_string()).await, connect(&server.connect_string()).await);
    let a = GroupMember::start(&zk_a, &group, "a", b"10.0.0.1").await.unwrap();
    let b = GroupMember::start(&zk_b, &group, "b", b"10.0.0.2").await.unwrap();
    a.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    assert!(a.current_members().contains_key("a"), "a member sees itself once created");
    b.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    let both = [("a".to_owned(), b"10.0.0.1".to_vec()), ("b".to_owned(), b"10.0.0.2".to_vec())];
    eventually("a sees both", || async { a.current_members().into_iter().eq(both.clone()) }).await;
    b.set_payload(b"10.0.0.3".to_vec()).await.unwrap();
    eventually("a sees b's new payload", || async {
        a.current_members().get("b").map(Vec::as_slice) == Some(b"10.0.0.3")
    })
    .await;
    b.close().await;
    eventually("a sees b leave", || async { a.current_members().keys().eq(["a"]) }).await;
    a.close().await;
}

#[tokio::test]
async fn a_group_is_shared_with_a_curator_group_member() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let group = unique_root("group-curator");
    let curator = zkr_testing::peers::CuratorTool::locate().unwrap();
    let mut java = curator.spawn(&["group-member", &cs, &group, "java", "jvm-payload"]).unwrap();
    java.expect_line("READY").await.unwrap();
    let zk = connect(&cs).await;
    let rust = GroupMember::start(&zk, &group, "rust", b"rust-payload").await.unwrap();
    rust.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    eventually("zkr sees Curator's member", || async {
        rust.current_members().get("java").map(Vec::as_slice) == Some(b"jvm-payload")
    })
    .await;
    let deadline = tokio::time::Instant::now() + timing().wait();
    loop {
        java.send_line("members").await.unwrap();
        let line = java.expect_line("MEMBERS").await.unwrap();
        if line == "MEMBERS java=jvm-payload,rust=rust-payload" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "Curator never saw zkr's member: {line}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    java.close_stdin();
    assert!(java.wait().await.unwrap().success());
    eventually("zkr sees Curator's member leave", || async { rust.current_members().keys().eq(["rust"]) })
        .await;
    rust.close().await;
}
