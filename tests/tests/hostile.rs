//! Hostile nodes planted by another client (one with the rights to create them) under the
//! paths of locks, elections, semaphores, ID generators and config trees: names that do not
//! parse are ignored, names that do parse count as what they claim to be (a contender ahead
//! of us, as in Curator), and data that does not decode is reported. Never a panic, never a
//! wrong holder.

use std::time::Duration;

use futures::StreamExt as _;
use zkr_integration_tests::{connect, timing, unique_root};
use zkr_recipes::config::{ConfigEvent, ConfigTreeWatcher, Json};
use zkr_recipes::id::{IdGenerator, SequentialIdGenerator};
use zkr_recipes::leader::LeaderLatch;
use zkr_recipes::locks::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, MaxLeases};
use zkr_testing::shared_server;
use zookeeper_client::{Acls, Client, CreateMode};

const SHORT: Duration = Duration::from_millis(300);

/// Names that no recipe's parser accepts as a contender (wrong suffix, not ten digits, empty,
/// non-ASCII, very long). ZooKeeper itself refuses control characters and surrogates.
fn junk_names() -> Vec<String> {
    vec![
        "lock-".to_owned(),
        "lock-abc".to_owned(),
        "lock-12".to_owned(),
        "latch-".to_owned(),
        "latch-x0000000001".to_owned(),
        "__READ__".to_owned(),
        "__WRIT__-1".to_owned(),
        "epoch-".to_owned(),
        "epoch-abcdefghij".to_owned(),
        "zzz".to_owned(),
        "ü-lock-\u{a0}000000001".to_owned(),
        "é-lock-１２３".to_owned(),
        "x".repeat(200),
    ]
}

async fn plant(observer: &Client, parent: &str, names: &[String], data: &[u8]) {
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    observer.mkdir(parent, &persistent).await.ok();
    for name in names {
        match observer.create(&format!("{parent}/{name}"), data, &persistent).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => panic!("planting {name:?} under {parent}: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_under_lock_paths_is_ignored_and_a_planted_contender_counts() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique_root("hostile-locks");
    let observer = Client::connect(&cs).await.unwrap();
    let zk = connect(&cs).await;

    // Mutex: junk is ignored; the lock is taken at once and we are the only participant.
    let mutex_path = format!("{root}/mutex");
    plant(&observer, &mutex_path, &junk_names(), b"\xff\xfe junk").await;
    let mutex = InterProcessMutex::new(&zk, &mutex_path).unwrap();
    let guard = mutex.acquire_timeout(timing().wait()).await.unwrap().expect("junk must not block the lock");
    let participants = mutex.participant_nodes().await.unwrap();
    assert_eq!(participants, vec![guard.node_path().to_owned()], "junk is no participant");
    guard.release().await.unwrap();

    // A planted node that parses as a contender with a lower sequence is ahead of us, as in
    // Curator: we wait (and time out), and get the lock once it goes.
    let planted = format!("{mutex_path}/_c_00000000-0000-0000-0000-000000000000-lock-0000000000");
    observer.create(&planted, b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    assert!(mutex.acquire_timeout(SHORT).await.unwrap().is_none(), "the planted contender holds the lock");
    observer.delete(&planted, None).await.unwrap();
    mutex.acquire_timeout(timing().wait()).await.unwrap().expect("free again").release().await.unwrap();

    // Read-write lock and semaphore: the same junk is ignored.
    let rw_path = format!("{root}/rw");
    plant(&observer, &rw_path, &junk_names(), b"").await;
    let rw = InterProcessReadWriteLock::new(&zk, &rw_path).unwrap();
    rw.write_timeout(timing().wait()).await.unwrap().expect("write lock").release().await.unwrap();
    rw.read_timeout(timing().wait()).await.unwrap().expect("read lock").release().await.unwrap();
    let semaphore_path = format!("{root}/semaphore");
    plant(&observer, &format!("{semaphore_path}/leases"), &junk_names(), b"").await;
    plant(&observer, &format!("{semaphore_path}/locks"), &junk_names(), b"").await;
    let semaphore = InterProcessSemaphoreV2::new(&zk, &semaphore_path, MaxLeases::Fixed(1)).unwrap();
    // Junk under leases/ is no lease: the one lease is free.
    let lease =
        semaphore.acquire_timeout(timing().wait()).await.unwrap().expect("junk must not fill the semaphore");
    assert_eq!(semaphore.participant_nodes().await.unwrap().len(), 1);
    assert!(semaphore.acquire_timeout(SHORT).await.unwrap().is_none(), "one lease only");
    lease.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_under_an_election_and_an_id_path_is_ignored() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique_root("hostile-leader-ids");
    let observer = Client::connect(&cs).await.unwrap();
    let zk = connect(&cs).await;

    let latch_path = format!("{root}/latch");
    plant(&observer, &latch_path, &junk_names(), b"\xff").await;
    let latch = LeaderLatch::start(&zk, &latch_path, "me").await.unwrap();
    tokio::time::timeout(timing().wait(), latch.await_leadership())
        .await
        .expect("junk must not block")
        .unwrap();
    let participants = latch.participants().await.unwrap();
    assert_eq!(participants.len(), 1, "{participants:?}");
    assert_eq!(participants[0].id, "me");
    latch.close().await;

    let ids_path = format!("{root}/ids");
    plant(&observer, &ids_path, &junk_names(), b"").await;
    let ids = SequentialIdGenerator::new(&zk, &ids_path).unwrap();
    let first = ids.next().await.unwrap();
    assert!(ids.next().await.unwrap() > first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_config_values_are_reported_and_the_rest_served() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique_root("hostile-config");
    let observer = Client::connect(&cs).await.unwrap();
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    observer.mkdir(&root, &persistent).await.unwrap();
    observer.create(&format!("{root}/good"), b"1", &persistent).await.unwrap();
    observer.create(&format!("{root}/binary"), b"\xff\xfe\x00", &persistent).await.unwrap();
    observer.create(&format!("{root}/deep"), br#"{"nested": [1, 2"#, &persistent).await.unwrap();

    let zk = connect(&cs).await;
    let watcher = ConfigTreeWatcher::<u64>::builder(&zk, &root, Json).start().await.unwrap();
    let mut changes = watcher.changes();
    assert_eq!(watcher.get("good").map(|v| *v.value), Some(1));
    assert!(watcher.get("binary").is_none() && watcher.get("deep").is_none());

    // A planted value over a good one: reported, and the last good value stays.
    observer.set_data(&format!("{root}/good"), b"\xff not json", None).await.unwrap();
    let reported = tokio::time::timeout(timing().wait(), async {
        while let Some(event) = changes.next().await {
            if let ConfigEvent::DecodeFailed { key, .. } = event {
                return key;
            }
        }
        String::new()
    })
    .await
    .unwrap();
    assert_eq!(reported, "good");
    assert_eq!(watcher.get("good").map(|v| *v.value), Some(1));
}
