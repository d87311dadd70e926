//! Digest auth and ACLs end to end against a real server: with credentials and creator-only
//! ACLs, an anonymous client and a client with other credentials can neither steal a lock
//! (delete its node, or queue in front), nor read or write a protected config value, nor
//! rewind an ID counter. Each refusal is a typed error, never a hang or a panic, and nothing
//! is left behind by the refused attempts.

use std::time::Duration;

use zkr_connection::ZkClient;
use zkr_integration_tests::{builder, timing, unique_root};
use zkr_recipes::config::{ConfigError, ConfigPublisher, ConfigWatcher, Utf8};
use zkr_recipes::id::{IdGenerator, SegmentIdGenerator, SequentialIdGenerator};
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::shared_server;
use zookeeper_client::{Client, Error as ZkError};

/// A manager with `user`'s digest credentials whose nodes are creator-only.
async fn owner(cs: &str, user: &str) -> ZkClient {
    builder(cs).digest_auth(user, "s3cret").creator_only_acl().connect().await.expect("connect")
}

/// Raw clients: one anonymous, one with other credentials.
async fn intruders(cs: &str) -> [Client; 2] {
    let anonymous = Client::connect(cs).await.unwrap();
    let mallory = Client::connect(cs).await.unwrap();
    mallory.auth("digest", b"mallory:guess").await.unwrap();
    [anonymous, mallory]
}

fn no_auth<T: std::fmt::Debug>(result: Result<T, ZkError>, what: &str) {
    assert!(matches!(result, Err(ZkError::NoAuth)), "{what}: expected NoAuth, got {result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creator_only_lock_cannot_be_stolen_or_jumped() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = format!("{}/orders", unique_root("acl-lock"));
    let alice = owner(&cs, "alice").await;
    let mutex = InterProcessMutex::new(&alice, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    let node = guard.node_path().to_owned();

    for intruder in intruders(&cs).await {
        no_auth(intruder.delete(&node, None).await, "deleting the holder's node");
        no_auth(intruder.list_children(&path).await.map(|_| ()), "listing the queue");
        no_auth(
            intruder
                .create(
                    &format!("{path}/_c_00000000-0000-0000-0000-000000000000-lock-"),
                    b"",
                    &zookeeper_client::CreateMode::EphemeralSequential
                        .with_acls(zookeeper_client::Acls::anyone_all()),
                )
                .await
                .map(|_| ()),
            "queueing a contender",
        );
    }

    // A zkr client with other credentials gets a typed error at once, and leaves nothing.
    let bob = owner(&cs, "bob").await;
    let other = InterProcessMutex::new(&bob, &path).unwrap();
    let refused = tokio::time::timeout(timing().wait(), other.acquire_timeout(Duration::from_secs(1)))
        .await
        .expect("a refused acquire must not hang");
    let error = refused.expect_err("bob has no CREATE right on alice's lock");
    assert!(error.to_string().to_lowercase().contains("auth"), "{error}");

    assert!(!guard.is_lost(), "alice still holds the lock");
    guard.release().await.unwrap();
    let left = alice.client().await.unwrap().list_children(&path).await.unwrap();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_config_value_can_be_neither_read_nor_written() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = format!("{}/db-password", unique_root("acl-config"));
    let alice = owner(&cs, "alice").await;
    let publisher = ConfigPublisher::new(&alice, Utf8);
    publisher.set(&path, &"hunter2".to_owned()).await.unwrap();
    let watcher = ConfigWatcher::builder(&alice, &path, Utf8).start().await.unwrap();
    assert_eq!(watcher.get().map(|v| v.value.to_string()).as_deref(), Some("hunter2"));

    for intruder in intruders(&cs).await {
        no_auth(intruder.get_data(&path).await.map(|_| ()), "reading the value");
        no_auth(intruder.set_data(&path, b"owned", None).await.map(|_| ()), "writing the value");
        no_auth(intruder.delete(&path, None).await, "deleting the value");
    }

    // zkr clients with other credentials: typed errors, no hang.
    let bob = owner(&cs, "bob").await;
    let bobs = ConfigPublisher::new(&bob, Utf8);
    assert!(matches!(bobs.get(&path).await, Err(ConfigError::Connection(_))));
    assert!(matches!(bobs.set(&path, &"owned".to_owned()).await, Err(ConfigError::Connection(_))));
    let start = ConfigWatcher::builder(&bob, &path, Utf8).initial_timeout(Duration::from_secs(2)).start();
    let started =
        tokio::time::timeout(timing().wait(), start).await.expect("a refused watcher must not hang");
    assert!(started.is_err(), "bob cannot subscribe to alice's value");
    assert_eq!(
        watcher.get().map(|v| v.value.to_string()).as_deref(),
        Some("hunter2"),
        "the value is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_id_counters_cannot_be_rewound_or_drawn() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique_root("acl-ids");
    let alice = owner(&cs, "alice").await;
    let segment = SegmentIdGenerator::new(&alice, &format!("{root}/segment")).unwrap();
    let first = segment.next().await.unwrap();
    let sequential = SequentialIdGenerator::new(&alice, &format!("{root}/sequential")).unwrap();
    sequential.next().await.unwrap();

    for intruder in intruders(&cs).await {
        no_auth(
            intruder.set_data(&format!("{root}/segment"), &0i64.to_be_bytes(), None).await.map(|_| ()),
            "rewinding the segment counter",
        );
        no_auth(intruder.delete(&format!("{root}/sequential"), None).await, "deleting the epoch root");
    }
    let bob = owner(&cs, "bob").await;
    let bobs = SegmentIdGenerator::new(&bob, &format!("{root}/segment")).unwrap();
    let drawn =
        tokio::time::timeout(timing().wait(), bobs.next()).await.expect("a refused draw must not hang");
    assert!(drawn.is_err(), "bob cannot claim a range: {drawn:?}");
    let bobs_sequence = SequentialIdGenerator::new(&bob, &format!("{root}/sequential")).unwrap();
    let drawn = tokio::time::timeout(timing().wait(), bobs_sequence.next()).await.expect("no hang");
    assert!(drawn.is_err(), "bob cannot draw sequential IDs: {drawn:?}");
    assert!(segment.next().await.unwrap() > first, "alice's generator goes on");
}
