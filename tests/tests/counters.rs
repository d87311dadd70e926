//! `SharedCount`, `SharedValue` and `DistributedAtomicLong`/`Integer` against real ZooKeeper
//! servers: instances that see each other's sets, stale versioned writes refused, a watcher
//! whose session expires, concurrent increments that add up exactly (optimistic and promoted to
//! a lock), corrupted nodes, writes whose replies are lost (reported, never applied twice), a
//! segment ID generator on the same counter, and a Curator 5.4 process counting and sharing a
//! count with zkr.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use zkr_connection::retry::RetryNTimes;
use zkr_connection::ZkClient;
use zkr_integration_tests::{builder, children, connect, eventually, raw, timing, unique_root};
use zkr_recipes::counters::{
    CounterError, DistributedAtomicInteger, DistributedAtomicLong, PromotedToLock, SharedCount, SharedValue,
    VersionedValue,
};
use zkr_recipes::id::{IdGenerator, SegmentIdGenerator, StepPolicy};
use zkr_testing::peers::{parse_result, CuratorTool, PeerProcess};
use zkr_testing::{expire_session, shared_server, FaultProxy};
use zookeeper_client::CreateMode;

/// Lost races retried often, without sleeping long.
fn busy_retry() -> RetryNTimes {
    RetryNTimes::new(10_000, Duration::from_millis(1))
}

/// Reads the stream until it yields `want`, failing after the test wait.
async fn until_count(
    changes: &mut (impl Stream<Item = Result<VersionedValue<i32>, CounterError>> + Unpin),
    want: i32,
) -> VersionedValue<i32> {
    let found = tokio::time::timeout(timing().wait(), async {
        while let Some(next) = changes.next().await {
            let next = next.expect("a count that decodes");
            if next.value == want {
                return Some(next);
            }
        }
        None
    });
    found.await.expect("the count in time").expect("the stream to go on")
}

async fn started_count(zk: &ZkClient, path: &str, seed: i32) -> SharedCount {
    let count = SharedCount::start(zk, path, seed).await.unwrap();
    count
}

#[tokio::test]
async fn shared_counts_see_each_others_sets_and_a_stale_try_set_fails() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk_a, zk_b, other) = (connect(&cs).await, connect(&cs).await, raw(&cs).await);
    let path = format!("{}/count", unique_root("shared-count"));
    let a = started_count(&zk_a, &path, 5).await;
    let b = started_count(&zk_b, &path, 99).await;
    assert_eq!((a.get().unwrap(), b.get().unwrap()), (5, 5), "the first start's seed wins");
    assert_eq!(other.get_data(&path).await.unwrap().0, 5i32.to_be_bytes(), "Curator's 4 bytes");

    let (mut a_changes, mut b_changes) = (a.changes(), b.changes());
    a.set(7).await.unwrap();
    until_count(&mut b_changes, 7).await;
    b.set(9).await.unwrap();
    until_count(&mut a_changes, 9).await;

    let seen = b.get_versioned().unwrap();
    other.set_data(&path, &20i32.to_be_bytes(), None).await.unwrap();
    assert!(!b.try_set(&seen, 21).await.unwrap(), "a stale version is refused");
    // Refused locally (the watch had the new value) or by the server (then read again): the
    // new value is held either way.
    let now = b.get_versioned().unwrap();
    assert_eq!((now.value, now.version), (20, seen.version + 1));
    until_count(&mut b_changes, 20).await;
    assert!(b.try_set(&now, 21).await.unwrap(), "the current version is taken");
    until_count(&mut a_changes, 21).await;
    assert!(!a.try_set(&seen, 22).await.unwrap(), "an old value is refused without a write");
    assert_eq!(other.get_data(&path).await.unwrap().0, 21i32.to_be_bytes());
    a.close().await;
    b.close().await;
    assert!(matches!(a.set(1).await, Err(CounterError::State { state: "closed", .. })));
}

#[tokio::test]
async fn shared_values_refuse_bad_input_and_use_before_start() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    for bad in ["", "relative", "/trailing/", "/", "/zookeeper/quota"] {
        let refused = SharedValue::start(&zk, bad, b"x".to_vec()).await.unwrap_err();
        assert!(matches!(refused, CounterError::InvalidArgument(_)), "{bad:?}: {refused}");
        assert!(DistributedAtomicLong::new(&zk, bad, busy_retry()).is_err(), "{bad:?}");
    }
    let too_big =
        SharedValue::start(&zk, "/big", vec![0; zkr_connection::MAX_DATA_LEN + 1]).await.unwrap_err();
    assert!(matches!(too_big, CounterError::InvalidArgument(_)), "{too_big}");
    let path = format!("{}/value", unique_root("shared-value"));
    let value = SharedValue::start(&zk, &path, b"seed".to_vec()).await.unwrap();
    let seeded = value.get_versioned();
    assert_eq!((seeded.value.as_slice(), seeded.version), (&b"seed"[..], 0), "started: created and read");
    value.set(b"next").await.unwrap();
    assert_eq!(value.get(), b"next", "its own write is seen at once");
    assert!(!value.try_set(&seeded, b"x").await.unwrap(), "a value from before the write is stale");
    value.close().await;
    assert!(matches!(value.set(b"x").await, Err(CounterError::State { state: "closed", .. })));
}

#[tokio::test]
async fn a_shared_count_of_the_wrong_width_is_the_typed_error_until_repaired() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let other = raw(&server.connect_string()).await;
    let path = format!("{}/count", unique_root("shared-count-corrupt"));
    let count = started_count(&zk, &path, 1).await;
    let mut changes = count.changes();
    other.set_data(&path, b"abc", None).await.unwrap();
    let seen = tokio::time::timeout(timing().wait(), changes.next()).await.unwrap().unwrap();
    assert!(
        matches!(&seen, Err(CounterError::CorruptValue { expected: 4, data, .. }) if data == b"abc"),
        "{seen:?}"
    );
    assert!(matches!(count.get(), Err(CounterError::CorruptValue { .. })));
    count.set(6).await.unwrap();
    until_count(&mut changes, 6).await;
    assert_eq!(count.get().unwrap(), 6);
    count.close().await;
}

#[tokio::test]
async fn a_shared_count_survives_an_expiry_of_its_watchers_session() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (watcher_zk, writer_zk) = (connect(&cs).await, connect(&cs).await);
    let path = format!("{}/count", unique_root("shared-count-expiry"));
    let watcher = started_count(&watcher_zk, &path, 1).await;
    let writer = started_count(&writer_zk, &path, 1).await;
    let mut changes = watcher.changes();
    let first = watcher_zk.session().await.unwrap();
    expire_session(first.client(), &cs).await.unwrap();
    writer.set(3).await.unwrap();
    until_count(&mut changes, 3).await;
    eventually("a new session", || async { watcher_zk.try_session().is_some_and(|s| s.id() != first.id()) })
        .await;
    writer.set(4).await.unwrap();
    until_count(&mut changes, 4).await;
    // Subscribed before the set: a stream made after the writer's copy already holds 5
    // would wait for a later change (the fresh-clone CI run lost this race once).
    let mut writer_changes = writer.changes();
    watcher.set(5).await.unwrap();
    until_count(&mut writer_changes, 5).await;
    watcher.close().await;
    writer.close().await;
}

#[tokio::test]
async fn eight_tasks_incrementing_one_long_reach_the_exact_total() {
    const TASKS: usize = 8;
    const N: usize = 25;
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = format!("{}/counter", unique_root("atomic-long"));
    let clients = [connect(&cs).await, connect(&cs).await];
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let counter = DistributedAtomicLong::new(&clients[t % 2], &path, busy_retry()).unwrap();
        tasks.push(tokio::spawn(async move {
            let mut posts = Vec::new();
            for _ in 0..N {
                let result = counter.increment().await.unwrap();
                assert!(result.succeeded, "{result:?}");
                assert_eq!(result.post_value, result.pre_value + 1);
                posts.push(result.post_value);
            }
            posts
        }));
    }
    let mut posts = BTreeSet::new();
    for task in tasks {
        posts.extend(task.await.unwrap());
    }
    let total = (TASKS * N) as i64;
    assert_eq!(posts, (1..=total).collect::<BTreeSet<_>>(), "every increment got its own value");
    let counter = DistributedAtomicLong::new(&clients[0], &path, busy_retry()).unwrap();
    assert_eq!(counter.get().await.unwrap().post_value, total);
}

#[tokio::test]
async fn compare_and_set_initialize_and_arithmetic_follow_curator() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let other = raw(&server.connect_string()).await;
    let root = unique_root("atomic-ops");
    let counter = DistributedAtomicLong::new(&zk, &format!("{root}/long"), busy_retry()).unwrap();
    assert_eq!(counter.get().await.unwrap().post_value, 0, "a missing node reads as 0");
    assert!(!counter.compare_and_set(0, 1).await.unwrap().succeeded, "CAS never creates");
    assert!(counter.initialize(10).await.unwrap());
    assert!(!counter.initialize(11).await.unwrap(), "only if absent");

    let wrong = counter.compare_and_set(5, 6).await.unwrap();
    assert!(!wrong.succeeded);
    assert_eq!((wrong.pre_value, wrong.post_value), (10, 10), "pre is the actual value");
    let right = counter.compare_and_set(10, 6).await.unwrap();
    assert!(right.succeeded);
    assert_eq!((right.pre_value, right.post_value), (10, 6));

    assert_eq!(counter.add(10).await.unwrap().post_value, 16);
    assert_eq!(counter.subtract(20).await.unwrap().post_value, -4);
    assert_eq!(counter.decrement().await.unwrap().post_value, -5);
    assert_eq!(counter.try_set(100).await.unwrap().post_value, 100);
    counter.force_set(i64::MAX).await.unwrap();
    let overflow = counter.increment().await.unwrap_err();
    assert!(matches!(overflow, CounterError::Overflow { value: i64::MAX, .. }), "{overflow}");
    assert_eq!(counter.get().await.unwrap().post_value, i64::MAX, "nothing written");

    let int_path = format!("{root}/int");
    let integer = DistributedAtomicInteger::new(&zk, &int_path, busy_retry()).unwrap();
    assert_eq!(integer.add(-3).await.unwrap().post_value, -3, "created by the first add");
    assert_eq!(other.get_data(&int_path).await.unwrap().0, (-3i32).to_be_bytes());
    let forced = format!("{root}/forced/deep");
    DistributedAtomicInteger::new(&zk, &forced, busy_retry()).unwrap().force_set(7).await.unwrap();
    assert_eq!(other.get_data(&forced).await.unwrap().0, 7i32.to_be_bytes(), "parents made");
}

#[tokio::test]
async fn a_corrupted_value_gives_the_typed_error_and_is_left_alone() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let path = format!("{}/counter", unique_root("atomic-corrupt"));
    zk.create(&path, b"foo", CreateMode::Persistent).await.unwrap();
    let counter = DistributedAtomicLong::new(&zk, &path, busy_retry()).unwrap();
    let error = counter.get().await.unwrap_err();
    match &error {
        CounterError::CorruptValue { path: p, data, expected } => {
            assert_eq!((p.as_str(), data.as_slice(), *expected), (path.as_str(), b"foo".as_slice(), 8));
        }
        other => panic!("{other}"),
    }
    assert!(error.to_string().contains("[0x66, 0x6f, 0x6f]"), "{error}");
    assert!(matches!(counter.increment().await, Err(CounterError::CorruptValue { .. })));
    assert!(matches!(counter.try_set(1).await, Err(CounterError::CorruptValue { .. })));
    let (data, stat) = raw(&server.connect_string()).await.get_data(&path).await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (b"foo".as_slice(), 0), "never overwritten");
}

#[tokio::test]
async fn promoted_to_lock_without_optimistic_retries_still_counts_exactly() {
    const TASKS: usize = 6;
    const N: usize = 10;
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique_root("atomic-promoted");
    let (path, lock_path) = (format!("{root}/counter"), format!("{root}/lock"));
    let clients = [connect(&cs).await, connect(&cs).await, connect(&cs).await];
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        // Under the lock, a try can still lose to another task's optimistic first try.
        let promotion = PromotedToLock::new(&lock_path).timeout(timing().wait()).retry_policy(busy_retry());
        let counter = DistributedAtomicLong::new(&clients[t % 3], &path, RetryNTimes::new(0, Duration::ZERO))
            .unwrap()
            .promoted_to_lock(promotion)
            .unwrap();
        tasks.push(tokio::spawn(async move {
            let mut promoted = 0;
            for _ in 0..N {
                let result = counter.increment().await.unwrap();
                assert!(result.succeeded, "{result:?}");
                assert_eq!(result.stats.optimistic_tries, 1, "no optimistic retries");
                promoted += result.stats.promoted_tries;
                if result.stats.promoted_tries > 0 {
                    assert!(result.stats.promoted_time > Duration::ZERO);
                }
            }
            promoted
        }));
    }
    let mut promoted = 0;
    for task in tasks {
        promoted += task.await.unwrap();
    }
    let counter = DistributedAtomicLong::new(&clients[0], &path, busy_retry()).unwrap();
    assert_eq!(counter.get().await.unwrap().post_value, (TASKS * N) as i64);
    assert!(promoted > 0, "contention promoted some increments to the lock");
    let observer = raw(&cs).await;
    assert!(children(&observer, &lock_path).await.is_empty(), "every lock node released");
}

/// Increments joined in one task, each promoted to the lock, hold it one after the other: the
/// promotion lock is held per call, not per task, so one try under it always succeeds. (Held
/// per task, the joined calls shared it and lost each other's tries under it.)
#[tokio::test]
async fn increments_joined_in_one_task_hold_the_promotion_lock_in_turn() {
    const N: usize = 8;
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let root = unique_root("atomic-joined");
    let (path, lock_path) = (format!("{root}/counter"), format!("{root}/lock"));
    let once = || RetryNTimes::new(0, Duration::ZERO);
    let promotion = PromotedToLock::new(&lock_path).timeout(timing().wait()).retry_policy(once());
    let counter =
        DistributedAtomicLong::new(&zk, &path, once()).unwrap().promoted_to_lock(promotion).unwrap();
    let results = futures::future::join_all((0..N).map(|_| counter.increment())).await;
    let results: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    assert!(results.iter().any(|r| r.stats.promoted_tries > 0), "some increments were promoted");
    assert!(results.iter().all(|r| r.succeeded), "{results:#?}");
    assert_eq!(counter.get().await.unwrap().post_value, N as i64);
}

#[tokio::test]
async fn segment_ranges_and_atomic_adds_on_one_counter_never_overlap() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = format!("{}/counter", unique_root("atomic-segment"));
    let (zk_ids, zk_adds) = (connect(&cs).await, connect(&cs).await);
    let ids = SegmentIdGenerator::builder(&zk_ids, &path)
        .step(StepPolicy::Fixed(7))
        .prefetch(false)
        .build()
        .unwrap();
    let ids: Arc<dyn IdGenerator> = Arc::new(ids);
    let drawing = tokio::spawn(async move {
        let mut got = Vec::new();
        for _ in 0..150 {
            got.push(ids.next().await.unwrap());
        }
        got
    });
    let counter = DistributedAtomicLong::new(&zk_adds, &path, busy_retry()).unwrap();
    let mut taken = Vec::new();
    for i in 0..40 {
        let added = counter.add(1 + i % 3).await.unwrap();
        assert!(added.succeeded);
        taken.extend((added.pre_value + 1..=added.post_value).map(|v| v as u64));
    }
    let drawn = drawing.await.unwrap();
    let mut all = BTreeSet::new();
    for id in drawn.iter().chain(&taken) {
        assert!(all.insert(*id), "{id} handed out twice");
    }
    let last = counter.get().await.unwrap().post_value as u64;
    assert!(all.iter().all(|id| *id <= last), "everything below the counter's value");
}

#[tokio::test]
async fn writes_whose_replies_are_lost_are_reported_indeterminate_not_applied_twice() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = builder(&proxy.connect_string()).start().await.unwrap();
    let observer = raw(&server.connect_string()).await;
    let root = unique_root("atomic-lost-reply");
    let (count_path, long_path) = (format!("{root}/count"), format!("{root}/long"));
    let count = started_count(&zk, &count_path, 1).await;
    zk.create_parents(&long_path).await.unwrap();
    let seen = count.get_versioned().unwrap();

    // The request reaches the server, its reply is held, then the connection is cut: the
    // retried write finds the version it wrote itself.
    proxy.hold_replies();
    let writing = tokio::spawn(async move { count.try_set(&seen, 2).await });
    eventually("the versioned write to reach the server", || async {
        observer.get_data(&count_path).await.unwrap().0 == 2i32.to_be_bytes()
    })
    .await;
    proxy.cut();
    proxy.heal();
    let outcome = writing.await.unwrap();
    assert!(matches!(outcome, Err(CounterError::Indeterminate { .. })), "{outcome:?}");

    let counter = DistributedAtomicLong::new(&zk, &long_path, busy_retry()).unwrap();
    proxy.hold_replies();
    let creating = tokio::spawn(async move { counter.initialize(5).await });
    eventually("the create to reach the server", || async {
        observer.check_stat(&long_path).await.unwrap().is_some()
    })
    .await;
    proxy.cut();
    proxy.heal();
    let outcome = creating.await.unwrap();
    assert!(matches!(outcome, Err(CounterError::Indeterminate { .. })), "{outcome:?} (Curator: false)");
    assert_eq!(observer.get_data(&long_path).await.unwrap().0, 5i64.to_be_bytes());
}

/// Curator's known defect, beside zkr's test above: its `DistributedAtomicLong` resends a write
/// whose reply was lost (its client's retry), counts the BadVersion the resend gets as a lost
/// race and adds once more, so that one `increment()` moves the counter by two and the value
/// between is handed to no one (`docs/migrating-from-curator.md`, "Counters"; the unsafe
/// resend of writes is CURATOR-584). zkr says `Indeterminate` for the same loss.
#[tokio::test]
async fn a_curator_increment_whose_reply_is_lost_counts_twice_where_zkr_says_indeterminate() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let observer = raw(&server.connect_string()).await;
    let path = format!("{}/long", unique_root("curator-lost-reply"));
    zk.create_parents(&path).await.unwrap();
    zk.create(&path, &0i64.to_be_bytes(), CreateMode::Persistent).await.unwrap();
    let curator = CuratorTool::locate().unwrap();
    let mut java = curator.spawn(&["atomic-long-add", &proxy.connect_string(), &path, "1"]).unwrap();
    java.expect_line("READY").await.unwrap();

    // Its read goes through; its versioned write reaches the server and the reply is held.
    proxy.hold_replies_from_request(5);
    java.send_line("go").await.unwrap();
    eventually("Curator's versioned write to reach the server", || async {
        observer.get_data(&path).await.unwrap().0 == 1i64.to_be_bytes()
    })
    .await;
    proxy.cut();
    proxy.heal();
    let result = java.expect_line("RESULT").await.unwrap();
    finish(java).await;
    assert_eq!(field(&result, "succeeded"), 1, "{result}");
    assert_eq!(field(&result, "post"), 2, "one increment, told 2: {result}");
    assert_eq!(observer.get_data(&path).await.unwrap().0, 2i64.to_be_bytes(), "the counter moved by two");
}

async fn finish(peer: PeerProcess) {
    let status = peer.wait().await.unwrap();
    assert!(status.success(), "{status}");
}

fn field(line: &str, key: &str) -> i64 {
    let fields = parse_result(line);
    let value = fields.iter().find(|(k, _)| k == key).unwrap_or_else(|| panic!("no {key} in {line}"));
    value.1.parse().unwrap()
}

#[tokio::test]
async fn zkr_and_curator_increment_one_counter_to_the_exact_total() {
    const CURATOR_N: i64 = 100;
    const ZKR_TASKS: i64 = 2;
    const ZKR_N: i64 = 50;
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = format!("{}/counter", unique_root("atomic-curator"));
    let curator = CuratorTool::locate().unwrap();
    let mut java = curator.spawn(&["atomic-long-add", &cs, &path, &CURATOR_N.to_string()]).unwrap();
    java.expect_line("READY").await.unwrap();
    let zk = connect(&cs).await;
    java.send_line("go").await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..ZKR_TASKS {
        let counter = DistributedAtomicLong::new(&zk, &path, busy_retry()).unwrap();
        tasks.push(tokio::spawn(async move {
            for _ in 0..ZKR_N {
                assert!(counter.increment().await.unwrap().succeeded);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let result = java.expect_line("RESULT").await.unwrap();
    finish(java).await;
    let total = CURATOR_N + ZKR_TASKS * ZKR_N;
    assert_eq!(field(&result, "succeeded"), CURATOR_N, "{result}");
    assert!(field(&result, "post") <= total, "{result}");
    let counter = DistributedAtomicLong::new(&zk, &path, busy_retry()).unwrap();
    assert_eq!(counter.get().await.unwrap().post_value, total);
}

#[tokio::test]
async fn a_zkr_shared_count_and_curators_see_each_others_sets() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = format!("{}/count", unique_root("shared-count-curator"));
    let zk = connect(&cs).await;
    let count = started_count(&zk, &path, 1).await;
    let mut changes = count.changes();
    let curator = CuratorTool::locate().unwrap();
    let mut watcher = curator.spawn(&["shared-count-watch", &cs, &path]).unwrap();
    assert_eq!(watcher.expect_line("COUNT").await.unwrap(), "COUNT 1", "Curator reads zkr's seed");
    count.set(2).await.unwrap();
    watcher.expect_line("COUNT 2").await.unwrap();
    let setter = curator.spawn(&["shared-count-set", &cs, &path, "-3"]).unwrap();
    let mut setter = setter;
    assert_eq!(field(&setter.expect_line("RESULT").await.unwrap(), "count"), -3);
    finish(setter).await;
    until_count(&mut changes, -3).await;
    watcher.expect_line("COUNT -3").await.unwrap();
    let seen = count.get_versioned().unwrap();
    assert!(count.try_set(&seen, 40).await.unwrap());
    watcher.expect_line("COUNT 40").await.unwrap();
    watcher.close_stdin();
    finish(watcher).await;
    count.close().await;
}
