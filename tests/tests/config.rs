//! The config watchers and publisher against real ZooKeeper servers: convergence under
//! concurrent writers, delete and re-create, corrupt values, a blackholed connection, session
//! expiry, thousands of keys, atomic batches, one-shot watches, and a start with ZooKeeper down
//! from the last-known-good file.

use std::time::Duration;

use futures::StreamExt as _;
use zkr_connection::ConnectionState;
use zkr_integration_tests::{
    builder, connect, connect_with_session, eventually, raw, timing, unique_root, wait_for_state,
};
use zkr_recipes::config::{
    ConfigError, ConfigEvent, ConfigPublisher, ConfigTreeWatcher, ConfigWatcher, Json, Utf8, WatchMode,
};
use zkr_testing::{expire_session, shared_server, FaultProxy, TestingServer};
use zookeeper_client::{Client, CreateMode};

/// Waits until the watcher holds `value` at ZooKeeper's current version of `path`.
async fn holds_latest(watcher: &ConfigWatcher<u64>, observer: &Client, path: &str) -> u64 {
    let (data, stat) = observer.get_data(path).await.unwrap();
    let latest: u64 = serde_json::from_slice(&data).unwrap();
    eventually("the watcher to hold the latest value", || async {
        watcher.get().is_some_and(|v| *v.value == latest && v.mzxid == stat.mzxid)
    })
    .await;
    latest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reader_converges_under_concurrent_writers_and_versions_never_go_back() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/counter", unique_root("config-writers"));
    let zk = connect(&server.connect_string()).await;
    let publisher = ConfigPublisher::new(&zk, Json);
    publisher.set(&path, &0u64).await.unwrap();
    // Four readers, each on its own session.
    let mut readers = Vec::new();
    for _ in 0..4 {
        let session = connect(&server.connect_string()).await;
        let watcher = ConfigWatcher::<u64>::builder(&session, &path, Json).start().await.unwrap();
        assert_eq!(*watcher.get().unwrap().value, 0, "the initial value is there when start returns");
        assert!(!watcher.is_stale());
        readers.push((session, watcher));
    }
    let mut changes: Vec<_> = readers.iter().map(|(_, w)| w.changes()).collect();
    let writers: Vec<_> = (0..3u64)
        .map(|w| {
            let server_cs = server.connect_string();
            let path = path.clone();
            tokio::spawn(async move {
                let zk = connect(&server_cs).await;
                let publisher = ConfigPublisher::new(&zk, Json);
                for i in 0..60u64 {
                    publisher.set(&path, &(w * 1000 + i)).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let observer = raw(&server.connect_string()).await;
    for (_, watcher) in &readers {
        holds_latest(watcher, &observer, &path).await;
    }
    // Every reader's events carry strictly increasing mzxids.
    for stream in &mut changes {
        let mut last = 0;
        // (Awaited with a short timeout rather than polled once: tokio's cooperative budget
        // can make a single poll answer Pending with events queued.)
        while let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(200), stream.next()).await {
            if let ConfigEvent::Changed { new: Some(new), .. } = event {
                assert!(new.mzxid > last, "version went back: {} after {last}", new.mzxid);
                last = new.mzxid;
            }
        }
        assert!(last > 0, "changes were streamed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absent_created_deleted_and_recreated_are_all_seen() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/feature", unique_root("config-recreate"));
    let zk = connect(&server.connect_string()).await;
    let watcher = ConfigWatcher::<String>::builder(&zk, &path, Utf8).start().await.unwrap();
    assert!(watcher.get().is_none(), "absent at start");
    let publisher = ConfigPublisher::new(&zk, Utf8);
    publisher.set(&path, &"on".to_owned()).await.unwrap();
    eventually("the create to be seen", || async { watcher.get().is_some_and(|v| *v.value == "on") }).await;
    let first = watcher.get().unwrap();
    assert!(publisher.delete(&path, None).await.unwrap());
    eventually("the delete to be seen", || async { watcher.get().is_none() }).await;
    publisher.set(&path, &"off".to_owned()).await.unwrap();
    eventually("the re-create to be seen", || async { watcher.get().is_some_and(|v| *v.value == "off") })
        .await;
    let again = watcher.get().unwrap();
    assert_eq!(again.version, 0, "a re-created node starts at version 0 again");
    assert!(again.mzxid > first.mzxid, "but its mzxid is newer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_value_is_reported_and_the_last_good_one_kept() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/price", unique_root("config-corrupt"));
    let zk = connect(&server.connect_string()).await;
    let publisher = ConfigPublisher::new(&zk, Json);
    publisher.set(&path, &12u64).await.unwrap();
    let watcher = ConfigWatcher::<u64>::builder(&zk, &path, Json).start().await.unwrap();
    let mut changes = watcher.changes();
    let observer = raw(&server.connect_string()).await;
    observer.set_data(&path, b"twelve", None).await.unwrap();
    let failed = tokio::time::timeout(timing().wait(), async {
        loop {
            if let Some(ConfigEvent::DecodeFailed { version, error, .. }) = changes.next().await {
                break (version, error);
            }
        }
    })
    .await
    .expect("a DecodeFailed event");
    assert_eq!(failed.0, 1);
    assert_eq!(failed.1.format(), "JSON", "a typed error naming the format: {:?}", failed.1);
    assert!(std::error::Error::source(&failed.1).is_some(), "with serde_json's error as its cause");
    assert_eq!(*watcher.get().unwrap().value, 12, "the last good value stays");
    assert!(matches!(publisher.get(&path).await, Err(ConfigError::Decode { .. })));
    publisher.set(&path, &13u64).await.unwrap();
    eventually("the good value after the bad one", || async {
        watcher.get().is_some_and(|v| *v.value == 13)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_during_a_blackhole_are_picked_up_after_heal_and_later_ones_still_arrive() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/limit", unique_root("config-blackhole"));
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = connect_with_session(proxy.connect_string(), 6).await;
    let mut states = zk.state_changes();
    let observer = raw(&server.connect_string()).await;
    let direct = connect(&server.connect_string()).await;
    let publisher = ConfigPublisher::new(&direct, Json);
    publisher.set(&path, &1u64).await.unwrap();
    let watcher = ConfigWatcher::<u64>::builder(&zk, &path, Json).start().await.unwrap();
    proxy.blackhole();
    for v in 2..=20u64 {
        publisher.set(&path, &v).await.unwrap();
    }
    wait_for_state(&mut states, ConnectionState::Suspended).await;
    assert!(*watcher.get().unwrap().value < 20, "nothing arrives through the blackhole");
    proxy.heal();
    wait_for_state(&mut states, ConnectionState::Reconnected).await;
    assert_eq!(holds_latest(&watcher, &observer, &path).await, 20);
    // And the watch works on the new connection: zookeeper-client does not re-register
    // persistent watches after a reconnect, so the watcher must set its own again.
    for v in 21..=25u64 {
        publisher.set(&path, &v).await.unwrap();
    }
    assert_eq!(holds_latest(&watcher, &observer, &path).await, 25);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_follows_its_client_onto_a_new_session() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/mode", unique_root("config-expiry"));
    let zk = connect(&server.connect_string()).await;
    let observer = raw(&server.connect_string()).await;
    let publisher = ConfigPublisher::new(&connect(&server.connect_string()).await, Json);
    publisher.set(&path, &1u64).await.unwrap();
    let watcher = ConfigWatcher::<u64>::builder(&zk, &path, Json).start().await.unwrap();
    let session = zk.session().await.unwrap();
    let writer = tokio::spawn({
        let publisher = publisher.clone();
        let path = path.clone();
        async move {
            for v in 2..=40u64 {
                publisher.set(&path, &v).await.unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    });
    expire_session(session.client(), &server.connect_string()).await.unwrap();
    writer.await.unwrap();
    assert_eq!(holds_latest(&watcher, &observer, &path).await, 40);
    assert!(zk.generation() > session.generation());
    // And it keeps following on the new session.
    publisher.set(&path, &41u64).await.unwrap();
    assert_eq!(holds_latest(&watcher, &observer, &path).await, 41);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_of_thousands_of_keys_is_one_watch() {
    let server = shared_server().await.unwrap();
    let root = unique_root("config-tree");
    let zk = connect(&server.connect_string()).await;
    let observer = raw(&server.connect_string()).await;
    zk.create_parents(&format!("{root}/x")).await.unwrap();
    // 3000 keys in 30 services, each service one multi-op.
    let options = CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    for service in 0..30 {
        let mut writer = observer.new_multi_writer();
        writer.add_create(&format!("{root}/svc-{service}"), &[], &options).unwrap();
        for key in 0..100 {
            writer.add_create(&format!("{root}/svc-{service}/key-{key}"), b"\"v0\"", &options).unwrap();
        }
        writer.commit().await.unwrap();
    }
    let tree = ConfigTreeWatcher::<String>::builder(&zk, &root, Json).start().await.unwrap();
    assert_eq!(tree.snapshot().len(), 3000);
    assert_eq!(*tree.get("svc-7/key-42").unwrap().value, "v0");

    // An atomic batch of three keys, then a delete and a new key.
    let publisher = ConfigPublisher::new(&zk, Json);
    let v1 = "v1".to_owned();
    let keys = [format!("{root}/svc-1/key-1"), format!("{root}/svc-2/key-2"), format!("{root}/svc-3/new")];
    let batch: Vec<(&str, &String)> = keys.iter().map(|k| (k.as_str(), &v1)).collect();
    let stats = publisher.set_all(&batch).await.unwrap();
    assert_eq!(stats.len(), 3);
    assert_eq!(stats[0].mzxid, stats[1].mzxid, "one transaction");
    assert_eq!(stats[2].czxid, stats[0].mzxid, "the new key was created by it");
    observer.delete(&format!("{root}/svc-9/key-9"), None).await.unwrap();
    eventually("the batch and the delete to be seen", || async {
        let s = tree.snapshot();
        s.len() == 3000
            && ["svc-1/key-1", "svc-2/key-2", "svc-3/new"]
                .iter()
                .all(|k| s.get(k).is_some_and(|v| *v.value == "v1"))
    })
    .await;
    assert!(tree.get("svc-9/key-9").is_none());
    assert!(matches!(publisher.set_all(&[]).await, Err(ConfigError::InvalidArgument(_))));
    let dup = [(keys[0].as_str(), &v1), (keys[0].as_str(), &v1)];
    assert!(matches!(publisher.set_all(&dup).await, Err(ConfigError::InvalidArgument(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_watches_converge_too() {
    let server = shared_server().await.unwrap();
    let root = unique_root("config-oneshot");
    let zk = connect(&server.connect_string()).await;
    let publisher = ConfigPublisher::new(&zk, Json);
    publisher.set(&format!("{root}/a"), &1u64).await.unwrap();
    let tree = ConfigTreeWatcher::<u64>::builder(&zk, &root, Json)
        .watch_mode(WatchMode::OneShot)
        .start()
        .await
        .unwrap();
    let node = ConfigWatcher::<u64>::builder(&zk, &format!("{root}/a"), Json)
        .watch_mode(WatchMode::OneShot)
        .start()
        .await
        .unwrap();
    for v in 2..=30u64 {
        publisher.set(&format!("{root}/a"), &v).await.unwrap();
    }
    publisher.set(&format!("{root}/b/c"), &7u64).await.unwrap();
    eventually("one-shot watchers to converge", || async {
        tree.get("a").is_some_and(|v| *v.value == 30)
            && tree.get("b/c").is_some_and(|v| *v.value == 7)
            && node.get().is_some_and(|v| *v.value == 30)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishing_refuses_conflicts_oversized_values_and_bad_paths() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/doc", unique_root("config-publish"));
    let zk = connect(&server.connect_string()).await;
    let publisher = ConfigPublisher::new(&zk, Utf8);
    assert!(publisher.create_if_absent(&path, &"a".to_owned()).await.unwrap());
    assert!(!publisher.create_if_absent(&path, &"b".to_owned()).await.unwrap());
    let stat = publisher.set_if_version(&path, &"c".to_owned(), 0).await.unwrap();
    assert_eq!(stat.version, 1);
    assert!(matches!(
        publisher.set_if_version(&path, &"d".to_owned(), 0).await,
        Err(ConfigError::VersionConflict { expected: 0, .. })
    ));
    assert!(matches!(
        publisher.set_if_version(&format!("{path}-missing"), &"d".to_owned(), 0).await,
        Err(ConfigError::NotFound { .. })
    ));
    let huge = "x".repeat(1 << 20);
    assert!(matches!(
        publisher.set(&path, &huge).await,
        Err(ConfigError::InvalidArgument(ref why)) if why.contains("ZooKeeper accepts at most")
    ));
    assert!(publisher.set("no-slash", &"x".to_owned()).await.is_err());
    assert!(matches!(publisher.delete(&path, Some(0)).await, Err(ConfigError::VersionConflict { .. })));
    assert!(publisher.delete(&path, Some(1)).await.unwrap());
    assert!(!publisher.delete(&path, None).await.unwrap());
    assert!(ConfigWatcher::<String>::builder(&zk, "bad", Utf8).start().await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_from_the_last_known_good_file_when_zookeeper_is_down() {
    let server = TestingServer::start().await.unwrap();
    let cs = server.connect_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("price.json");
    let path = "/config/price";
    {
        let zk = connect(&cs).await;
        ConfigPublisher::new(&zk, Json).set(path, &99u64).await.unwrap();
        let watcher = ConfigWatcher::<u64>::builder(&zk, path, Json).cache_file(&file).start().await.unwrap();
        assert_eq!(*watcher.get().unwrap().value, 99);
        eventually("the file to be written", || async { file.exists() }).await;
        zk.close().await;
    }
    server.stop().unwrap();
    // No ZooKeeper, no file: a clear error.
    let zk = builder(&cs).connection_timeout(Duration::from_millis(500)).start().await.unwrap();
    let none = ConfigWatcher::<u64>::builder(&zk, path, Json)
        .initial_timeout(Duration::from_millis(300))
        .start()
        .await;
    assert!(matches!(none, Err(ConfigError::Unavailable { .. })), "{none:?}");
    // No ZooKeeper, with the file: the cached value, marked stale.
    let watcher = ConfigWatcher::<u64>::builder(&zk, path, Json)
        .cache_file(&file)
        .initial_timeout(Duration::from_millis(300))
        .start()
        .await
        .unwrap();
    assert!(watcher.is_stale());
    assert_eq!(*watcher.get().unwrap().value, 99);
    // ZooKeeper comes back with a newer value: live again.
    server.restart().await.unwrap();
    let direct = connect(&cs).await;
    ConfigPublisher::new(&direct, Json).set(path, &100u64).await.unwrap();
    eventually("the live value", || async {
        !watcher.is_stale() && watcher.get().is_some_and(|v| *v.value == 100)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_event_comes_after_the_snapshot_that_shows_it() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/ordered", unique_root("config-order"));
    let zk = connect(&server.connect_string()).await;
    let publisher = ConfigPublisher::new(&connect(&server.connect_string()).await, Json);
    publisher.set(&path, &0u64).await.unwrap();
    let watcher = ConfigWatcher::<u64>::builder(&zk, &path, Json).start().await.unwrap();
    let mut changes = watcher.changes();
    for v in 1..=20u64 {
        publisher.set(&path, &v).await.unwrap();
        let event = tokio::time::timeout(timing().wait(), changes.next()).await.expect("an event in time");
        let Some(ConfigEvent::Changed { new: Some(new), .. }) = event else { panic!("{event:?}") };
        // Whoever reacts to the event reads at least that version.
        let held = watcher.get().unwrap();
        assert!(held.mzxid >= new.mzxid, "get() lags its own event: {} < {}", held.mzxid, new.mzxid);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_writes_at_a_version_through_other_writers_and_a_lost_reply() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = format!("{}/value", unique_root("config-overwrite"));
    let zk = connect(&proxy.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let observer = raw(&server.connect_string()).await;
    let (mine, theirs) = (ConfigPublisher::new(&zk, Json), ConfigPublisher::new(&other, Json));
    let version = |stat: zookeeper_client::Stat| stat.version;
    assert_eq!(mine.set(&path, &1u64).await.map(version).unwrap(), 0, "created");
    assert_eq!(theirs.set(&path, &2u64).await.map(version).unwrap(), 1, "read, then written at 0");
    // Mine remembers version 0: refused there, it reads 1 and writes at it.
    assert_eq!(mine.set(&path, &3u64).await.map(version).unwrap(), 2);
    assert_eq!(observer.get_data(&path).await.unwrap().0, b"3");

    // A lost reply: the write is sent again at the same version, refused (its first send was
    // applied), and the node read back holds this value: done, applied once.
    proxy.hold_replies();
    let writing = {
        let (mine, path) = (mine.clone(), path.clone());
        tokio::spawn(async move { mine.set(&path, &4u64).await })
    };
    eventually("the write to reach the server", || async {
        observer.get_data(&path).await.unwrap().1.version == 3
    })
    .await;
    proxy.cut();
    proxy.heal();
    assert_eq!(writing.await.unwrap().map(version).unwrap(), 3);
    let (data, stat) = observer.get_data(&path).await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"4"[..], 3), "applied once");

    // The framework call: a missing node is NoNode, a hint past the node's version is read.
    let missing = format!("{path}-missing");
    assert!(zk.overwrite(&missing, b"x", None).await.unwrap_err().is_no_node());
    assert!(zk.overwrite(&missing, b"x", Some(7)).await.unwrap_err().is_no_node());
    assert_eq!(zk.overwrite(&path, b"5", Some(40)).await.unwrap().version, 4);
    assert!(matches!(
        zk.overwrite("no-slash", b"x", None).await,
        Err(zkr_connection::Error::InvalidPath { .. })
    ));
    other.close().await;
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_by_two_users_of_one_client_and_dropped_at_every_await() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/value", unique_root("config-set-twice"));
    let zk = connect(&server.connect_string()).await;
    let observer = raw(&server.connect_string()).await;
    let publisher = ConfigPublisher::new(&zk, Json);
    publisher.set(&path, &0u64).await.unwrap();

    // Two users of one client (one session, the publisher's remembered versions shared):
    // every set is applied once, at a version of its own.
    let user = |first: u64| {
        let (publisher, path) = (publisher.clone(), path.clone());
        tokio::spawn(async move {
            let mut versions = Vec::new();
            for value in first..first + 20 {
                versions.push(publisher.set(&path, &value).await.unwrap().version);
            }
            versions
        })
    };
    let (a, b) = (user(100), user(200));
    let mut versions = [a.await.unwrap(), b.await.unwrap()].concat();
    versions.sort_unstable();
    assert_eq!(versions, (1..=40).collect::<Vec<i32>>(), "40 writes, one version each");
    let last: u64 = serde_json::from_slice(&observer.get_data(&path).await.unwrap().0).unwrap();
    assert!(last == 119 || last == 219, "the last value of one of them, not {last}");

    // Dropped at every await: the value is written or not, and the next set still lands.
    let after_drop = |k: usize| {
        let (observer, path) = (observer.clone(), path.clone());
        async move {
            let held: u64 = serde_json::from_slice(&observer.get_data(&path).await.unwrap().0).unwrap();
            assert!(held == last || held == 7, "after a drop at poll {k}: {held}");
        }
    };
    let (done, drops) = zkr_testing::cancel_at_every_await(|| publisher.set(&path, &7u64), after_drop).await;
    assert!(drops >= 1, "dropped at {drops} awaits");
    done.unwrap();
    publisher.set(&path, &8u64).await.unwrap();
    assert_eq!(observer.get_data(&path).await.unwrap().0, b"8");
    zk.close().await;
}
