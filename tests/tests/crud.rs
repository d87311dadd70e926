//! The framework's reads and writes (`ZkClient::get_data`, `exists`, `get_children`,
//! `set_data`, `delete`, `delete_recursive`, `get_acl`, `set_acl`, `sync`) against a real
//! server: absent nodes are `None`, versions are checked, the namespace applies, two users of
//! one client racing on a version get one winner, and a versioned write whose reply is lost is
//! not sent again: it is applied once and its error says it may have been. The create builder
//! (`ZkClient::create_node`) in every mode, the multi-read and the session's ephemerals.

use std::time::Duration;
use zkr_connection::zookeeper_client::{AuthId, Permission};
use zkr_connection::{Acl, CreateMode, Error, Parents, ReadOp, ReadResult};
use zkr_integration_tests::{builder, children, eventually, timing, unique_root};

use zkr_connection::Classify as _;
use zkr_recipes::cache::CuratorCache;
use zkr_recipes::config::{ConfigWatcher, Gzip, Utf8};
use zkr_recipes::counters::SharedCount;
use zkr_recipes::locks::{InterProcessSemaphoreV2, MaxLeases};
use zkr_recipes::nodes::PersistentNode;
use zkr_testing::peers::{parse_result, CuratorTool};
use zkr_testing::{shared_server, FaultProxy, ServerOptions, TestingServer};
use zookeeper_client::Client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_writes_under_a_namespace_with_versions_and_absent_nodes() {
    let server = shared_server().await.unwrap();
    let ns = unique_root("crud").trim_start_matches('/').to_owned();
    let zk = builder(&server.connect_string()).namespace(&ns).connect().await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();

    assert_eq!(zk.get_data("/app/settings").await.unwrap(), None);
    assert_eq!(zk.exists("/app/settings").await.unwrap(), None);
    assert_eq!(zk.get_children("/app").await.unwrap(), None);
    assert_eq!(zk.get_acl("/app").await.unwrap(), None);
    assert!(zk.set_data("/app/settings", b"x", None).await.unwrap_err().is_no_node());
    assert!(zk.delete("/app/settings", None).await.unwrap_err().is_no_node());

    zk.create("/app/settings", b"v0", CreateMode::Persistent).await.unwrap();
    let (data, stat) = zk.get_data("/app/settings").await.unwrap().expect("the node");
    assert_eq!((data.as_slice(), stat.version), (&b"v0"[..], 0));
    assert_eq!(
        observer.get_data(&format!("/{ns}/app/settings")).await.unwrap().0,
        b"v0",
        "under the namespace"
    );
    let stat = zk.set_data("/app/settings", b"v1", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    let stale = zk.set_data("/app/settings", b"v2", Some(0)).await.unwrap_err();
    assert!(stale.is_bad_version() && !stale.is_ambiguous(), "{stale:?}");
    assert_eq!(zk.set_data("/app/settings", b"v2", None).await.unwrap().version, 2);
    assert_eq!(zk.exists("/app/settings").await.unwrap().map(|s| s.version), Some(2));
    let (children, parent) = zk.get_children("/app").await.unwrap().expect("the parent");
    assert_eq!((children, parent.num_children), (vec!["settings".to_owned()], 1));

    let read_only = [Acl::new(Permission::READ, AuthId::anyone())];
    zk.set_acl("/app/settings", &read_only, Some(0)).await.unwrap();
    let (acl, stat) = zk.get_acl("/app/settings").await.unwrap().expect("the node");
    assert_eq!((acl, stat.aversion), (read_only.to_vec(), 1));
    assert!(
        zk.set_data("/app/settings", b"v3", None).await.unwrap_err().zk()
            == Some(&zookeeper_client::Error::NoAuth)
    );
    zk.sync("/app/settings").await.unwrap();

    assert!(zk.delete("/app/settings", Some(7)).await.unwrap_err().is_bad_version());
    zk.delete("/app/settings", Some(2)).await.unwrap();
    assert_eq!(zk.exists("/app/settings").await.unwrap(), None);

    // A tree three deep goes, and nothing beside it.
    for path in ["/tree/a/x/1", "/tree/a/x/2", "/tree/a/y", "/tree/b", "/sibling"] {
        zk.create_parents(path).await.unwrap();
        zk.create(path, b"", CreateMode::Persistent).await.unwrap();
    }
    assert!(zk.delete_recursive("/tree").await.unwrap());
    assert_eq!(zk.exists("/tree").await.unwrap(), None);
    assert!(zk.exists("/sibling").await.unwrap().is_some());
    assert!(!zk.delete_recursive("/tree").await.unwrap(), "no node: false");
    assert!(matches!(zk.delete_recursive("/").await, Err(Error::InvalidPath { .. })));
    assert!(matches!(zk.get_data("no-slash").await, Err(Error::InvalidPath { .. })));
    zk.delete_recursive("/sibling").await.unwrap();
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_of_one_client_racing_on_a_version_get_one_winner() {
    let server = shared_server().await.unwrap();
    let zk = builder(&server.connect_string()).connect().await.unwrap();
    let path = unique_root("crud-race");
    zk.create(&path, b"0", CreateMode::Persistent).await.unwrap();
    let writers: Vec<_> = (0..2)
        .map(|i| {
            let (zk, path) = (zk.clone(), path.clone());
            tokio::spawn(async move { zk.set_data(&path, format!("from {i}").as_bytes(), Some(0)).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for writer in writers {
        outcomes.push(writer.await.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1, "{outcomes:?}");
    assert!(outcomes.iter().any(|o| o.as_ref().is_err_and(Error::is_bad_version)));
    assert_eq!(zk.exists(&path).await.unwrap().map(|s| s.version), Some(1));
    zk.delete(&path, None).await.unwrap();
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_versioned_write_whose_reply_is_lost_is_applied_once_and_says_it_may_have_been() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = builder(&proxy.connect_string()).connect().await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let path = unique_root("crud-lost");
    zk.create(&path, b"0", CreateMode::Persistent).await.unwrap();
    proxy.hold_replies();
    let writing = {
        let (zk, path) = (zk.clone(), path.clone());
        tokio::spawn(async move { zk.set_data(&path, b"1", Some(0)).await })
    };
    eventually("the write to reach the server", || async {
        observer.get_data(&path).await.unwrap().1.version == 1
    })
    .await;
    proxy.cut();
    proxy.heal();
    let error = writing.await.unwrap().expect_err("the reply was lost");
    assert!(error.is_ambiguous(), "{error:?}");
    let (data, stat) = observer.get_data(&path).await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"1"[..], 1), "applied once, not twice");
    zk.delete(&path, None).await.unwrap();
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_dropped_at_every_await_leave_the_client_answering() {
    let server = shared_server().await.unwrap();
    let zk = builder(&server.connect_string()).connect().await.unwrap();
    let path = unique_root("crud-cancel");
    zk.create(&path, b"v", CreateMode::Persistent).await.unwrap();
    let reads = || async {
        let data = zk.get_data(&path).await?.map(|(data, _)| data);
        let exists = zk.exists(&path).await?.is_some();
        let children = zk.get_children(&path).await?.map(|(names, _)| names.len());
        let acl = zk.get_acl(&path).await?.map(|(acl, _)| acl.len());
        zk.sync(&path).await?;
        Ok::<_, Error>((data, exists, children, acl))
    };
    let after_drop = |k: usize| {
        let (zk, path) = (zk.clone(), path.clone());
        async move { assert!(zk.exists(&path).await.unwrap().is_some(), "answers after a drop at poll {k}") }
    };
    let (done, drops) = zkr_testing::cancel_at_every_await(reads, after_drop).await;
    assert!(drops >= 5, "dropped at {drops} awaits");
    assert_eq!(done.unwrap(), (Some(b"v".to_vec()), true, Some(0), Some(1)));
    zk.delete(&path, None).await.unwrap();
    zk.close().await;
}

/// Deletes everything under the client's namespace.
async fn clear(zk: &zkr_connection::ZkClient) {
    for child in zk.get_children("/").await.unwrap().expect("the namespace").0 {
        zk.delete_recursive(&format!("/{child}")).await.unwrap();
    }
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_create_builder_makes_every_mode_with_its_parents_and_acl_under_a_namespace() {
    let server = shared_server().await.unwrap();
    let ns = unique_root("crud-create").trim_start_matches('/').to_owned();
    let zk = builder(&server.connect_string()).namespace(&ns).connect().await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let stat = |path: &str| {
        let path = format!("/{ns}{path}");
        let observer = &observer;
        async move { observer.check_stat(&path).await.unwrap().expect("the node") }
    };

    // Curator's plain create(): no parents.
    let missing = zk.create_node("/a/b").await.unwrap_err();
    assert!(missing.is_no_node(), "{missing:?}");
    let made = zk.create_node("/a/b").data(b"x").parents(Parents::Persistent).await.unwrap();
    assert_eq!((made.path.as_str(), made.sequence), ("/a/b", None));
    zk.create_node("/c/d").parents(Parents::Containers).await.unwrap();
    assert!(zk.create_node("/a/b").await.unwrap_err().is_node_exists());

    let first = zk.create_node("/c/job-").mode(CreateMode::PersistentSequential).await.unwrap();
    let second = zk.create_node("/c/job-").mode(CreateMode::PersistentSequential).await.unwrap();
    assert_eq!((first.path.as_str(), first.sequence), ("/c/job-0000000001", Some(1)));
    assert_eq!(second.sequence, Some(2));
    let session = zk.session().await.unwrap().id();
    let mine = zk.create_node("/c/mine").mode(CreateMode::Ephemeral).await.unwrap();
    assert_eq!((mine.stat.ephemeral_owner, stat("/c/mine").await.ephemeral_owner), (session, session));

    let read_only = vec![Acl::new(Permission::READ, AuthId::anyone())];
    zk.create_node("/ro").data(b"r").acl(read_only.clone()).await.unwrap();
    assert_eq!(observer.get_acl(&format!("/{ns}/ro")).await.unwrap().0, read_only);
    assert!(zk.set_data("/ro", b"w", None).await.unwrap_err().zk().is_some(), "NoAuth");

    let tagged = zk
        .create_node("/p/q/lease-")
        .mode(CreateMode::EphemeralSequential)
        .parents(Parents::Containers)
        .protected()
        .await
        .unwrap();
    let name = zkr_connection::path::node_name(&tagged.path);
    assert!(name.starts_with("_c_") && name.ends_with("lease-0000000000"), "{name}");
    assert_eq!(tagged.sequence, Some(0));
    assert_eq!(children(&observer, &format!("/{ns}/p/q")).await, [name]);

    let bad_ttl = zk.create_node("/t").mode(CreateMode::Ephemeral).ttl(std::time::Duration::from_secs(1));
    assert!(matches!(bad_ttl.await, Err(Error::InvalidArgument(_))));
    assert!(matches!(zk.create_node("no-slash").await, Err(Error::InvalidPath { .. })));
    clear(&zk).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequential_create_whose_reply_is_lost_is_not_sent_again() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = builder(&proxy.connect_string()).connect().await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let dir = unique_root("crud-seq-lost");
    zk.create(&dir, b"", CreateMode::Persistent).await.unwrap();
    proxy.hold_replies();
    let creating = {
        let (zk, dir) = (zk.clone(), dir.clone());
        tokio::spawn(async move {
            zk.create_node(&format!("{dir}/job-")).mode(CreateMode::PersistentSequential).await
        })
    };
    eventually("the create to reach the server", || async { children(&observer, &dir).await.len() == 1 })
        .await;
    proxy.cut();
    proxy.heal();
    let error = creating.await.unwrap().expect_err("the reply was lost");
    assert!(error.is_ambiguous(), "{error:?}");
    assert_eq!(children(&observer, &dir).await, ["job-0000000000"], "one node, not two");
    zk.delete_recursive(&dir).await.unwrap();
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_create_from_the_builder_dropped_at_every_await_leaves_nothing() {
    let server = shared_server().await.unwrap();
    let zk = builder(&server.connect_string()).connect().await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let dir = unique_root("crud-create-cancel");
    let node = format!("{dir}/worker-");
    let create = || async {
        let created = zk
            .create_node(&node)
            .mode(CreateMode::EphemeralSequential)
            .parents(Parents::Containers)
            .protected()
            .await?;
        zk.delete(&created.path, None).await
    };
    let after_drop = |k: usize| {
        let (observer, dir) = (&observer, &dir);
        async move {
            let gone = || async { children(observer, dir).await.is_empty() };
            eventually(&format!("nothing left after a drop at poll {k}"), gone).await;
        }
    };
    let (done, drops) = zkr_testing::cancel_at_every_await(create, after_drop).await;
    done.unwrap();
    assert!(drops >= 2, "dropped at {drops} awaits");
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_read_answers_each_read_and_the_session_lists_its_ephemerals() {
    let server = shared_server().await.unwrap();
    let ns = unique_root("crud-reads").trim_start_matches('/').to_owned();
    let zk = builder(&server.connect_string()).namespace(&ns).connect().await.unwrap();
    zk.create_node("/app/config").data(b"c").parents(Parents::Persistent).await.unwrap();
    // Two users of one client: one session, so one list of ephemerals.
    let (one, two) = (zk.clone(), zk.clone());
    let (a, b) = tokio::join!(
        one.create_node("/app/members/a").mode(CreateMode::Ephemeral).parents(Parents::Containers),
        two.create_node("/app/members/b").mode(CreateMode::Ephemeral).parents(Parents::Containers),
    );
    a.unwrap();
    b.unwrap();

    let reads = [
        ReadOp::Data("/app/config"),
        ReadOp::Data("/app/missing"),
        ReadOp::Children("/app/members"),
        ReadOp::Children("/nowhere"),
    ];
    let found = zk.multi_read(&reads).await.unwrap();
    assert!(matches!(&found[0], ReadResult::Data(Some((data, stat))) if data == b"c" && stat.version == 0));
    assert_eq!(found[1], ReadResult::Data(None));
    let ReadResult::Children(Some(mut members)) = found[2].clone() else { panic!("{:?}", found[2]) };
    members.sort();
    assert_eq!(members, ["a", "b"]);
    assert_eq!(found[3], ReadResult::Children(None));
    assert!(matches!(zk.multi_read(&[]).await, Err(Error::InvalidArgument(_))));
    assert!(matches!(zk.multi_read(&[ReadOp::Data("bad")]).await, Err(Error::InvalidPath { .. })));

    assert_eq!(zk.ephemerals("/").await.unwrap(), ["/app/members/a", "/app/members/b"]);
    assert_eq!(zk.ephemerals("/app/members/b").await.unwrap(), ["/app/members/b"]);
    assert!(zk.ephemerals("/app/config").await.unwrap().is_empty());
    clear(&zk).await;
}

/// Containers and TTL nodes look like persistent ones in a `Stat` (the server shows clients
/// no `ephemeralOwner` for them): what tells them apart is that the server deletes them. On a
/// server that checks every 100 ms, parents made as containers and a container go once
/// empty, a TTL node once its TTL is over, and persistent parents stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_create_builder_makes_containers_and_ttl_nodes_that_the_server_deletes() {
    let options = ServerOptions::default().container_check_interval(Duration::from_millis(100));
    let server = TestingServer::with_options(options).await.unwrap();
    let zk = builder(&server.connect_string()).connect().await.unwrap();
    zk.create_node("/kept/x").parents(Parents::Persistent).await.unwrap();
    zk.create_node("/gone/x").parents(Parents::Containers).await.unwrap();
    zk.create_node("/box").mode(CreateMode::Container).await.unwrap();
    zk.create_node("/box/x").await.unwrap();
    zk.create_node("/lease").ttl(Duration::from_millis(300)).await.unwrap();
    for child in ["/kept/x", "/gone/x", "/box/x"] {
        zk.delete(child, None).await.unwrap();
    }
    for gone in ["/gone", "/box", "/lease"] {
        eventually(&format!("the server to delete {gone}"), || async {
            zk.exists(gone).await.unwrap().is_none()
        })
        .await;
    }
    assert!(zk.exists("/kept").await.unwrap().is_some(), "a persistent parent stays");
    zk.close().await;
}

/// The calls that need ZooKeeper 3.6 say so on a 3.5 server, which would close the connection
/// on a request it does not know, and the client goes on working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_3_5_server_the_3_6_calls_say_unimplemented_and_the_client_goes_on() {
    let release: zkr_testing::Release = "3.5.10".parse().unwrap();
    let server = TestingServer::with_options(ServerOptions::default().release(release)).await.unwrap();
    let zk = builder(&server.connect_string()).connect().await.unwrap();
    let unimplemented = |e: &Error| matches!(e, Error::Zk(zookeeper_client::Error::Unimplemented));
    let read = zk.multi_read(&[ReadOp::Data("/")]).await.unwrap_err();
    assert!(unimplemented(&read), "{read:?}");
    let ephemerals = zk.ephemerals("/").await.unwrap_err();
    assert!(unimplemented(&ephemerals), "{ephemerals:?}");
    let watcher = zkr_recipes::cache::PersistentWatcher::start(&zk, "/", true).await.map(drop).unwrap_err();
    assert!(unimplemented(&watcher), "{watcher:?}");
    let node = zk.create_node("/still-works").mode(CreateMode::PersistentSequential).await.unwrap();
    assert_eq!(node.path, "/still-works0000000000");
    zk.close().await;
}

/// Curator's `GzipCompressionProvider` format both ways: Curator (`create().compressed()`,
/// `getData().decompressed()`) and a zkr client with compression on read each other's data;
/// the bytes on the server are gzip; a node written uncompressed is an error, not garbage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_zkr_read_each_others_compressed_data() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let zk = builder(&cs).compression(true).connect().await.unwrap();
    let plain = builder(&cs).connect().await.unwrap();
    let root = unique_root("crud-gzip");
    let curator = CuratorTool::locate().unwrap();
    let value = "compressed ".repeat(40);

    let ours = format!("{root}/zkr");
    zk.create_node(&ours).data(value.as_bytes()).parents(Parents::Persistent).await.unwrap();
    assert_eq!(curator_read(&curator, &cs, &ours).await, value, "Curator reads zkr's create");
    zk.set_data(&ours, b"changed", None).await.unwrap();
    assert_eq!(curator_read(&curator, &cs, &ours).await, "changed", "and zkr's set");
    let stored = plain.get_data(&ours).await.unwrap().unwrap().0;
    assert_eq!(&stored[..2], [0x1f, 0x8b], "gzip on the server");

    let theirs = format!("{root}/curator");
    let mut writer = curator.spawn(&["compressed-write", &cs, &theirs, &value]).unwrap();
    let line = writer.expect_line("RESULT").await.unwrap();
    assert!(writer.wait().await.unwrap().success());
    let (data, _) = zk.get_data(&theirs).await.unwrap().expect("Curator's node");
    assert_eq!(data, value.as_bytes(), "zkr reads Curator's compressed create");
    let raw = plain.get_data(&theirs).await.unwrap().unwrap().0;
    assert_eq!(parse_result(&line), [("stored".to_owned(), raw.len().to_string())]);
    assert!(raw.len() < value.len(), "{} bytes for {}", raw.len(), value.len());

    // A cache told so and a config watcher with the `Gzip` codec read Curator's node as written.
    let cache = CuratorCache::builder(&plain, &root).compressed(true).start().await.unwrap();
    assert_eq!(cache.get(&theirs).expect("cached").data(), value.as_bytes());
    let config = ConfigWatcher::builder(&plain, &theirs, Gzip(Utf8)).start().await.unwrap();
    assert_eq!(*config.get().expect("a value").value, value);
    // A node told so stores its data as Curator does with compression on.
    let kept = format!("{root}/node");
    let node = PersistentNode::builder(&plain, &kept, CreateMode::Persistent)
        .data(b"kept".to_vec())
        .compressed(true)
        .start()
        .await
        .unwrap();
    node.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    assert_eq!(curator_read(&curator, &cs, &kept).await, "kept");
    assert_eq!(node.data(), b"kept");
    node.close().await;
    // Recipes store their data as given on a compressing client.
    let count = SharedCount::start(&zk, &format!("{root}/count"), 7).await.unwrap();
    assert_eq!(count.get().unwrap(), 7);
    assert_eq!(plain.get_data(&format!("{root}/count")).await.unwrap().unwrap().0, 7i32.to_be_bytes());
    let semaphore = InterProcessSemaphoreV2::new(&zk, &format!("{root}/sem"), MaxLeases::Fixed(1))
        .unwrap()
        .with_node_data("holder")
        .unwrap();
    let lease = semaphore.acquire().await.unwrap();
    assert_eq!(lease.data().await.unwrap(), b"holder");
    lease.release().await.unwrap();
    count.close().await;

    let uncompressed = format!("{root}/plain");
    zk.create_node(&uncompressed).data(b"as is").compressed(false).await.unwrap();
    assert_eq!(plain.get_data(&uncompressed).await.unwrap().unwrap().0, b"as is");
    let error = zk.get_data(&uncompressed).await.unwrap_err();
    assert!(matches!(&error, Error::Decompress { path, .. } if *path == uncompressed), "{error:?}");
    zk.delete_recursive(&root).await.unwrap();
    zk.close().await;
    plain.close().await;
}

/// What a Curator process reads at `path` with `getData().decompressed()`.
async fn curator_read(curator: &CuratorTool, cs: &str, path: &str) -> String {
    let mut reader = curator.spawn(&["compressed-read", cs, path]).unwrap();
    let line = reader.expect_line("RESULT").await.unwrap();
    assert!(reader.wait().await.unwrap().success());
    line.strip_prefix("RESULT value=").expect("a value").to_owned()
}

/// Curator's `usingNamespace`: views of one client under other namespaces share its session,
/// carry recipes, make their namespace node, and follow the client onto a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn using_namespace_views_share_the_session_and_follow_it_through_an_expiry() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique_root("crud-views").trim_start_matches('/').to_owned();
    let zk = builder(&cs).namespace(format!("{root}/base")).connect().await.unwrap();
    let observer = Client::connect(&cs).await.unwrap();
    let a = zk.using_namespace(Some(&format!("{root}/a/deep"))).unwrap();
    let top = zk.using_namespace(None).unwrap();
    assert_eq!(a.namespace(), Some(format!("{root}/a/deep").as_str()));
    assert_eq!((top.namespace(), zk.namespace()), (None, Some(format!("{root}/base").as_str())));
    let session = zk.session().await.unwrap();
    assert_eq!(a.session().await.unwrap().id(), session.id(), "one session");

    a.create_node("/x").data(b"a").await.unwrap();
    zk.create_node("/x").data(b"base").await.unwrap();
    assert_eq!(observer.get_data(&format!("/{root}/a/deep/x")).await.unwrap().0, b"a");
    assert_eq!(top.get_data(&format!("/{root}/base/x")).await.unwrap().unwrap().0, b"base");
    let mutex = zkr_recipes::locks::InterProcessMutex::new(&a, "/lock").unwrap();
    let guard = mutex.acquire().await.unwrap();
    assert_eq!(children(&observer, &format!("/{root}/a/deep/lock")).await.len(), 1, "a recipe on the view");
    guard.release().await.unwrap();

    zkr_testing::expire_session(session.client(), &cs).await.unwrap();
    eventually("the view on the new session", || async {
        a.session().await.is_ok_and(|s| s.id() != session.id())
    })
    .await;
    a.create_node("/y").await.unwrap();
    assert!(observer.check_stat(&format!("/{root}/a/deep/y")).await.unwrap().is_some());
    assert_eq!(a.session().await.unwrap().id(), zk.session().await.unwrap().id());

    for bad in ["/lead", "", "a//b"] {
        assert!(zk.using_namespace(Some(bad)).is_err(), "{bad:?}");
    }
    top.delete_recursive(&format!("/{root}")).await.unwrap();
    zk.close().await;
}

/// `with_timeout`: while the server's replies are held, each framework call on the handle ends
/// with `DeadlineExceeded` naming the handle's timeout, the calls made of several requests
/// (`delete_recursive`, `multi_read`) bounded as a whole; once replies flow, the same handle
/// answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_with_a_timeout_bounds_each_framework_call_as_a_whole() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = builder(&proxy.connect_string()).connect().await.unwrap();
    let path = unique_root("crud-timeout");
    zk.create(&format!("{path}/a/b"), b"", CreateMode::Persistent).await.unwrap();
    let bound = Duration::from_millis(300);
    let quick = zk.with_timeout(bound);
    proxy.hold_replies();
    let child = format!("{path}/c");
    let calls: Vec<(&str, futures::future::BoxFuture<'_, zkr_connection::Result<()>>)> = vec![
        ("get_data", Box::pin(async { quick.get_data(&path).await.map(drop) })),
        ("exists", Box::pin(async { quick.exists(&path).await.map(drop) })),
        ("get_children", Box::pin(async { quick.get_children(&path).await.map(drop) })),
        ("set_data", Box::pin(async { quick.set_data(&path, b"x", None).await.map(drop) })),
        ("create_node", Box::pin(async { quick.create_node(&child).await.map(drop) })),
        ("delete_recursive", Box::pin(async { quick.delete_recursive(&path).await.map(drop) })),
        ("multi_read", Box::pin(async { quick.multi_read(&[ReadOp::Data(&path)]).await.map(drop) })),
        ("transaction", Box::pin(async { quick.transaction().check_exists(&path).commit().await.map(drop) })),
    ];
    for (name, call) in calls {
        // The outer timeout only keeps a hang from eating CI: the bound is what must fire.
        let outcome = tokio::time::timeout(timing().wait(), call).await;
        let error = outcome.unwrap_or_else(|_| panic!("{name} was not bounded")).expect_err(name);
        assert!(
            matches!(error, Error::DeadlineExceeded { deadline, .. } if deadline == bound),
            "{name}: {error:?}"
        );
    }
    proxy.heal();
    let answered = || async { quick.exists(&path).await.is_ok_and(|stat| stat.is_some()) };
    eventually("the bounded handle answers once replies flow", answered).await;
    zk.delete_recursive(&path).await.unwrap();
    zk.close().await;
}

/// 100 MiB of zeros, gzip-compressed (about 100 KiB), made without holding the 100 MiB.
fn gzip_bomb() -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..100 {
        encoder.write_all(&zeros).unwrap();
    }
    encoder.finish().unwrap()
}

/// Issue 43, item 9: a small node that inflates to 100 MiB is refused by a compressing
/// client's read with a typed error (not inflated), a compressing cache keeps it as stored, and
/// so does the `Gzip` codec; the cap is the client's setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_is_refused_not_inflated() {
    use zkr_connection::compression::DEFAULT_MAX_DECOMPRESSED_LEN;
    use zkr_recipes::config::{Codec as _, Raw};

    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let zk = builder(&cs).compression(true).connect().await.unwrap();
    let plain = builder(&cs).connect().await.unwrap();
    let root = unique_root("crud-bomb");
    let bomb = gzip_bomb();
    assert!(bomb.len() < 200 << 10, "{} bytes", bomb.len());
    let path = format!("{root}/bomb");
    plain.create_node(&path).data(&bomb).parents(Parents::Persistent).await.unwrap();

    let read = zk.get_data(&path).await;
    assert!(
        matches!(&read, Err(Error::DecompressedTooLarge { path: at, max: DEFAULT_MAX_DECOMPRESSED_LEN }) if *at == path),
        "{:?}",
        read.map(|found| found.map(|(data, _)| data.len()))
    );
    let decoded = Gzip(Raw).decode(&bomb).map(|value: Vec<u8>| value.len());
    let cause = decoded.as_ref().err().and_then(std::error::Error::source).map(ToString::to_string);
    assert!(cause.is_some_and(|c| c.contains("inflates to more than 16777216 bytes")), "{decoded:?}");

    // The cap is the client's: a lower one refuses what the default reads.
    let small = format!("{root}/small");
    zk.create_node(&small).data(&[b'a'; 4096]).await.unwrap();
    assert_eq!(zk.get_data(&small).await.unwrap().expect("the node").0, [b'a'; 4096]);
    let capped = builder(&cs).compression(true).max_decompressed_len(1024).connect().await.unwrap();
    let refused = capped.get_data(&small).await.unwrap_err();
    assert!(matches!(&refused, Error::DecompressedTooLarge { max: 1024, .. }), "{refused:?}");
    assert!(builder(&cs).max_decompressed_len(0).start().await.is_err(), "a cap of zero");

    // Caches keep what they cannot inflate as stored: under the default cap the bomb, under
    // the capped client's the small node too.
    let stored_small = plain.get_data(&small).await.unwrap().expect("the node").0;
    let cache = CuratorCache::builder(&plain, &root).compressed(true).start().await.unwrap();
    assert_eq!(cache.get(&path).expect("cached").data(), bomb, "kept as stored");
    assert_eq!(cache.get(&small).expect("cached").data(), [b'a'; 4096]);
    drop(cache);
    let cache = CuratorCache::builder(&capped, &root).start().await.unwrap();
    assert_eq!(cache.get(&small).expect("cached").data(), stored_small, "kept as stored");
    drop(cache);
    zk.delete_recursive(&root).await.unwrap();
    for zk in [zk, plain, capped] {
        zk.close().await;
    }
}
