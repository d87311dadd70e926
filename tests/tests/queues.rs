//! Queues against real ZooKeeper servers: FIFO, priority, delay and id order with several
//! producers and consumers (every item delivered exactly once, nothing left behind), bounded
//! puts, lock-safe consumption through dropped items, a session expiry and consumer processes
//! SIGKILLed mid-item (nothing lost, nothing completed twice), corrupt nodes, and Curator 5.4
//! processes putting and consuming on the same queues, byte for byte.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use zkr_connection::Classify as _;
use zkr_connection::ZkClient;
use zkr_integration_tests::{builder, children, connect_with_session, eventually, raw, timing, unique_root};
use zkr_recipes::queues::{
    DistributedPriorityQueue, DistributedQueue, QueueError, SimpleDistributedQueue, Utf8,
};
use zkr_testing::peers::{CuratorTool, KazooTool, PeerProcess};
use zkr_testing::{expire_session, shared_server, FaultProxy};
use zookeeper_client::CreateMode;

fn strings(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// Takes from `queue` until `n` items came, acking each; their values in order.
async fn take_n(queue: &DistributedQueue<String>, n: usize) -> Vec<String> {
    let mut values = Vec::new();
    while values.len() < n {
        let item = queue.take_timeout(timing().wait()).await.unwrap().expect("an item in time");
        values.extend(item.ack().await.unwrap());
    }
    values
}

/// Asserts that every value of `want` was seen exactly once.
fn exactly_once(seen: &[String], want: &[String]) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for value in seen {
        *counts.entry(value).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    let missing: Vec<_> = want.iter().filter(|w| !counts.contains_key(w.as_str())).collect();
    assert!(missing.is_empty(), "never delivered: {missing:?}");
    assert_eq!(seen.len(), want.len());
}

#[tokio::test]
async fn simple_queue_is_fifo_and_several_consumers_take_every_item_once() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let path = format!("{}/simple", unique_root("queue-simple"));
    let queue = SimpleDistributedQueue::new(&zk, &path).unwrap();
    assert_eq!(queue.poll().await.unwrap(), None, "an empty queue polls nothing");
    assert_eq!(queue.peek().await.unwrap(), None);
    assert!(queue.element().await.is_err());
    assert_eq!(queue.take_timeout(Duration::from_millis(50)).await.unwrap(), None);

    for value in strings("a", 5) {
        queue.offer(value.as_bytes()).await.unwrap();
    }
    assert_eq!(queue.peek().await.unwrap().unwrap(), b"a-0");
    assert_eq!(queue.element().await.unwrap(), b"a-0", "peek leaves the head");
    let mut firsts = vec![queue.poll().await.unwrap().unwrap()];
    for _ in 0..4 {
        firsts.push(queue.take().await.unwrap());
    }
    assert_eq!(firsts, strings("a", 5).iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>(), "FIFO");
    let names = children(&observer, &path).await;
    assert!(names.is_empty(), "{names:?}");

    // Two producers and three consumers on their own sessions, until every item is taken.
    let want: Vec<String> = [strings("p", 20), strings("q", 20)].concat();
    let taken = Arc::new(AtomicUsize::new(0));
    let mut consumers = Vec::new();
    for _ in 0..3 {
        let queue = SimpleDistributedQueue::new(&connect_with_session(&cs, 30).await, &path).unwrap();
        let (taken, total) = (taken.clone(), want.len());
        consumers.push(tokio::spawn(async move {
            let mut got = Vec::new();
            while taken.load(Ordering::SeqCst) < total {
                if let Some(data) = queue.take_timeout(Duration::from_millis(100)).await.unwrap() {
                    taken.fetch_add(1, Ordering::SeqCst);
                    got.push(String::from_utf8(data).unwrap());
                }
            }
            got
        }));
    }
    for prefix in ["p", "q"] {
        let queue = SimpleDistributedQueue::new(&connect_with_session(&cs, 30).await, &path).unwrap();
        tokio::spawn(async move {
            for value in strings(prefix, 20) {
                queue.offer(value.as_bytes()).await.unwrap();
            }
        });
    }
    let mut seen = Vec::new();
    for consumer in consumers {
        let got = consumer.await.unwrap();
        for prefix in ["p-", "q-"] {
            let mine: Vec<usize> = got.iter().filter_map(|v| v.strip_prefix(prefix)?.parse().ok()).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "one producer's items in order: {mine:?}");
        }
        seen.extend(got);
    }
    exactly_once(&seen, &want);
    assert!(children(&observer, &path).await.is_empty());
}

#[tokio::test]
async fn distributed_queue_delivers_multi_puts_together_and_many_consumers_take_each_once() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let path = format!("{}/queue", unique_root("queue-distributed"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).build().unwrap();
    queue.put(&"one".to_string()).await.unwrap();
    queue.put_multi(&strings("multi", 3)).await.unwrap();
    assert!(matches!(queue.put_multi(&[]).await, Err(QueueError::InvalidArgument(_))));
    let first = queue.take().await.unwrap();
    assert!(!first.is_locked(), "without a lock path the item is gone when taken");
    assert_eq!(first.values(), ["one"]);
    assert_eq!(first.ack().await.unwrap(), ["one"]);
    assert_eq!(queue.take().await.unwrap().ack().await.unwrap(), strings("multi", 3), "one node, together");

    let want: Vec<String> = (0..3).flat_map(|p| strings(&format!("p{p}"), 15)).collect();
    let (all_taken, done) = tokio::sync::watch::channel(false);
    let taken = Arc::new(AtomicUsize::new(0));
    let mut consumers = Vec::new();
    for _ in 0..3 {
        let queue =
            DistributedQueue::builder(&connect_with_session(&cs, 30).await, &path, Utf8).build().unwrap();
        let (taken, total, all_taken, mut done) =
            (taken.clone(), want.len(), all_taken.clone(), done.clone());
        consumers.push(tokio::spawn(async move {
            let mut items = Box::pin(queue.consume());
            let mut got = Vec::new();
            loop {
                let item = tokio::select! {
                    item = items.next() => item.expect("the stream goes on").unwrap(),
                    _ = done.wait_for(|d| *d) => break,
                };
                got.extend(item.ack().await.unwrap());
                if taken.fetch_add(1, Ordering::SeqCst) + 1 == total {
                    all_taken.send_replace(true);
                }
            }
            got
        }));
    }
    drop(all_taken);
    for p in 0..3 {
        let queue =
            DistributedQueue::builder(&connect_with_session(&cs, 30).await, &path, Utf8).build().unwrap();
        tokio::spawn(async move {
            for value in strings(&format!("p{p}"), 15) {
                queue.put(&value).await.unwrap();
            }
        });
    }
    let mut seen = Vec::new();
    for consumer in consumers {
        seen.extend(consumer.await.unwrap());
    }
    exactly_once(&seen, &want);
    assert!(children(&observer, &path).await.is_empty(), "nothing left behind");
}

#[tokio::test]
async fn a_bounded_put_waits_for_room_and_its_timeout_leaves_nothing() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let path = format!("{}/bounded", unique_root("queue-bounded"));
    assert!(matches!(
        DistributedQueue::builder(&zk, &path, Utf8).max_items(0).build(),
        Err(QueueError::InvalidArgument(_))
    ));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).max_items(3).build().unwrap();
    for value in strings("b", 3) {
        queue.put(&value).await.unwrap();
    }
    let started = tokio::time::Instant::now();
    assert!(
        queue.put_timeout(&"late".to_string(), Duration::from_millis(300)).await.unwrap().is_none(),
        "full"
    );
    assert!(started.elapsed() >= Duration::from_millis(300), "it waited");
    assert_eq!(children(&observer, &path).await.len(), 3, "the timed-out put created nothing");

    let waiting = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.put(&"b-3".to_string()).await })
    };
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished());
    assert_eq!(queue.take().await.unwrap().ack().await.unwrap(), ["b-0"]);
    tokio::time::timeout(timing().wait(), waiting).await.expect("put once there is room").unwrap().unwrap();
    assert_eq!(take_n(&queue, 3).await, ["b-1", "b-2", "b-3"]);
    assert!(children(&observer, &path).await.is_empty());
}

#[tokio::test]
async fn a_lock_safe_item_comes_back_when_dropped_and_ack_removes_it_with_its_lock() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let root = unique_root("queue-locked");
    let (path, locks) = (format!("{root}/queue"), format!("{root}/locks"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    let other = DistributedQueue::builder(&connect_with_session(&cs, 30).await, &path, Utf8)
        .lock_path(&locks)
        .build()
        .unwrap();
    queue.put(&"x".to_string()).await.unwrap();
    queue.put(&"y".to_string()).await.unwrap();

    let held = queue.take().await.unwrap();
    assert!(held.is_locked());
    assert_eq!(held.values(), ["x"]);
    let name = zkr_connection::path::node_name(held.node()).to_owned();
    assert_eq!(children(&observer, &locks).await, [name], "Curator's lock node: <lockPath>/<item>");
    // The other consumer skips the locked head.
    assert_eq!(other.take().await.unwrap().ack().await.unwrap(), ["y"]);
    assert!(other.take_timeout(Duration::from_millis(200)).await.unwrap().is_none(), "x is locked");
    drop(held); // released in the background: x comes back
    let again = other.take_timeout(timing().wait()).await.unwrap().expect("x again");
    assert_eq!(again.values(), ["x"]);
    again.release().await.unwrap();
    let last = queue.take().await.unwrap();
    last.ack_and_create(&format!("{root}/done-x"), b"ok").await.unwrap();
    assert!(children(&observer, &path).await.is_empty());
    assert!(children(&observer, &locks).await.is_empty());
    assert_eq!(
        observer.get_data(&format!("{root}/done-x")).await.unwrap().0,
        b"ok",
        "record in the same commit"
    );

    let plain = DistributedQueue::builder(&zk, &path, Utf8).build().unwrap();
    plain.put(&"z".to_string()).await.unwrap();
    let item = plain.take().await.unwrap();
    assert!(matches!(
        item.ack_and_create(&format!("{root}/r"), b"").await,
        Err(QueueError::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn an_ack_with_the_consumers_own_operations_applies_them_with_the_delete_or_not_at_all() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let root = unique_root("queue-ack-with");
    let (path, locks, last) = (format!("{root}/queue"), format!("{root}/locks"), format!("{root}/last"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    queue.put(&"job".to_string()).await.unwrap();
    zk.create_if_absent(&last, b"none", CreateMode::Persistent).await.unwrap();

    // One operation of the consumer's is refused (its parent does not exist): nothing is
    // applied, the error names the operation and its path, and the item comes back.
    let item = queue.take().await.unwrap();
    let orphan = format!("{root}/no-parent/record");
    let refused = item
        .ack_with(|txn| txn.set_data(&last, b"job", None).create(&orphan, b"", CreateMode::Persistent))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains(&format!("create {orphan}")), "{refused}");
    assert_eq!(refused.kind(), zkr_connection::ErrorKind::Absent, "{refused:?}");
    assert_eq!(observer.get_data(&last).await.unwrap().0, b"none", "nothing applied");
    let again = queue.take_timeout(timing().wait()).await.unwrap().expect("the item back");

    let done = format!("{root}/done");
    again
        .ack_with(|txn| txn.set_data(&last, b"job", None).create(&done, b"ok", CreateMode::Persistent))
        .await
        .unwrap();
    assert_eq!(observer.get_data(&last).await.unwrap().0, b"job");
    assert_eq!(observer.get_data(&done).await.unwrap().0, b"ok");
    assert!(children(&observer, &path).await.is_empty(), "the item went with the same commit");
    assert!(children(&observer, &locks).await.is_empty());
}

/// Two lock-safe consumers of one queue, on `zk_a` and `zk_b` (one client, or two), with one
/// item put and an empty `done` directory for completion records: (queue path, lock path,
/// done path, consumer A, consumer B).
/// An item dropped while its connection breaks, on a session that outlives the break: its lock
/// goes once the client is connected again, whatever the retry policy allows (none here). The
/// background delete gave up under the policy before and left the lock on the live session,
/// so the item stayed locked for as long as the session lived (the soak found one on 3.5.10,
/// after a fault just before the end).
#[tokio::test]
async fn a_lock_safe_item_dropped_as_its_connection_breaks_is_unlocked_on_the_same_session() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = ZkClient::builder(proxy.connect_string())
        .session_timeout(Duration::from_secs(30))
        .retry_policy(zkr_connection::retry::RetryNTimes::new(0, Duration::from_millis(100)))
        .connect()
        .await
        .unwrap();
    let observer = raw(&server.connect_string()).await;
    let root = unique_root("queue-drop-break");
    let (path, locks) = (format!("{root}/queue"), format!("{root}/locks"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    queue.put(&"x".to_string()).await.unwrap();
    let held = queue.take().await.unwrap();
    let session = zk.session().await.unwrap().id();
    // The background delete's first request goes into the blackhole, and the cut fails it.
    proxy.blackhole();
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    proxy.cut();
    proxy.heal();
    eventually("the dropped item's lock to go", || async { children(&observer, &locks).await.is_empty() })
        .await;
    assert_eq!(zk.session().await.unwrap().id(), session, "the session outlived the break");
    assert_eq!(queue.take().await.unwrap().ack().await.unwrap(), ["x"]);
    zk.close().await;
}

async fn two_consumers(
    observer: &zookeeper_client::Client,
    name: &str,
    zk_a: &ZkClient,
    zk_b: &ZkClient,
) -> (String, String, String, DistributedQueue<String>, DistributedQueue<String>) {
    let root = unique_root(name);
    let (path, locks, done) = (format!("{root}/queue"), format!("{root}/locks"), format!("{root}/done"));
    let a = DistributedQueue::builder(zk_a, &path, Utf8).lock_path(&locks).build().unwrap();
    let b = DistributedQueue::builder(zk_b, &path, Utf8).lock_path(&locks).build().unwrap();
    a.put(&"job".to_string()).await.unwrap();
    let options = CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    observer.create(&done, &[], &options).await.unwrap();
    (path, locks, done, a, b)
}

#[tokio::test]
async fn a_consumer_whose_session_expired_mid_item_cannot_ack_it_after_another_took_it() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let observer = raw(&cs).await;
    let (zk_a, zk_b) = (connect_with_session(&cs, 30).await, connect_with_session(&cs, 30).await);
    let (path, locks, done, a, b) = two_consumers(&observer, "queue-expiry", &zk_a, &zk_b).await;

    let held_by_a = a.take().await.unwrap();
    expire_session(&zk_a.client().await.unwrap(), &cs).await.unwrap();
    // A's lock went with its session: B gets the item and completes it.
    let taken_by_b = b.take_timeout(timing().wait()).await.unwrap().expect("the item for B");
    taken_by_b.ack_and_create(&format!("{done}/job-b"), b"").await.unwrap();
    // A finishes late: its ack must not count (Curator's consumer would delete the item again).
    let late = held_by_a.ack_and_create(&format!("{done}/job-a"), b"").await;
    assert!(matches!(late, Err(QueueError::LockLost { .. })), "{late:?}");
    assert_eq!(children(&observer, &done).await, ["job-b"], "completed once");
    assert!(children(&observer, &path).await.is_empty());
    assert!(children(&observer, &locks).await.is_empty());
}

/// Issue 43, item 1: two users of one client. A's session expires with A's item lock; B, on
/// the client's next session, takes the item and holds a lock at the very same path. A's late
/// ack must not pass the lock check on B's lock: it answers `LockLost` and writes nothing,
/// and B's ack succeeds (before, A's ack deleted the item and B's lock on the new session).
#[tokio::test]
async fn an_ack_after_the_session_ended_never_commits_on_the_next_session() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let observer = raw(&cs).await;
    let zk = connect_with_session(&cs, 30).await;
    let (path, locks, done, a, b) = two_consumers(&observer, "queue-next-session", &zk, &zk).await;
    let held_by_a = a.take().await.unwrap();
    expire_session(&zk.client().await.unwrap(), &cs).await.unwrap();
    let taken_by_b = b.take_timeout(timing().wait()).await.unwrap().expect("the item for B");
    assert_eq!(children(&observer, &locks).await.len(), 1, "B's lock, at the path A's had");
    let late = held_by_a.ack_and_create(&format!("{done}/job-a"), b"").await;
    assert!(matches!(late, Err(QueueError::LockLost { .. })), "{late:?}");
    assert!(children(&observer, &done).await.is_empty(), "A's late ack wrote nothing");
    assert_eq!(children(&observer, &path).await.len(), 1, "the item is still B's");
    taken_by_b.ack_and_create(&format!("{done}/job-b"), b"").await.unwrap();
    assert_eq!(children(&observer, &done).await, ["job-b"], "completed once");
    assert!(children(&observer, &path).await.is_empty());
    assert!(children(&observer, &locks).await.is_empty());
}

/// Spawns a lock-safe consumer process.
fn worker(cs: &str, path: &str, locks: &str, done: &str, work_ms: u64) -> PeerProcess {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zkr-queue-worker"));
    cmd.args([cs, path, locks, done, &work_ms.to_string()]);
    PeerProcess::spawn("zkr-queue-worker", cmd).unwrap()
}

#[tokio::test]
async fn lock_safe_consumers_sigkilled_mid_item_lose_nothing_and_complete_nothing_twice() {
    const N: usize = 40;
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let root = unique_root("queue-sigkill");
    let (path, locks, done) = (format!("{root}/queue"), format!("{root}/locks"), format!("{root}/done"));
    zk.create(&done, &[], CreateMode::Persistent).await.unwrap();
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    let want = strings("item", N);
    for value in &want {
        queue.put(value).await.unwrap();
    }

    // Kill three workers, each right after it printed TAKEN: mid-item, its lock held.
    let mut killed_mid_item = Vec::new();
    for _ in 0..3 {
        let mut victim = worker(&cs, &path, &locks, &done, 400);
        victim.expect_line("session").await.unwrap();
        let taken = victim.expect_line("TAKEN").await.unwrap();
        drop(victim); // SIGKILL to its process group
        killed_mid_item.push(taken.trim_start_matches("TAKEN ").to_owned());
    }
    // Two workers that live finish the queue (the killed ones' items come back when their
    // sessions expire).
    let survivors = [worker(&cs, &path, &locks, &done, 5), worker(&cs, &path, &locks, &done, 5)];
    let records = |names: Vec<String>| -> Vec<String> {
        names.iter().map(|n| n.rsplit_once('-').map_or(n.clone(), |(v, _)| v.to_owned())).collect()
    };
    let deadline = tokio::time::Instant::now() + timing().wait() * 2;
    loop {
        let seen = records(children(&observer, &done).await);
        if seen.len() >= N {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "only {} of {N} done", seen.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = records(children(&observer, &done).await);
    exactly_once(&seen, &want);
    for value in &killed_mid_item {
        assert!(seen.contains(value), "{value} (killed mid-item) was completed by another");
    }
    assert!(children(&observer, &path).await.is_empty(), "nothing left in the queue");
    eventually("no lock left", || async { children(&observer, &locks).await.is_empty() }).await;
    drop(survivors);
}

#[tokio::test]
async fn a_corrupt_node_is_reported_removed_and_does_not_block_the_queue() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let path = format!("{}/queue", unique_root("queue-corrupt"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).build().unwrap();
    zk.create(&format!("{path}/queue-"), b"not framed", CreateMode::PersistentSequential).await.unwrap();
    zk.create(&format!("{path}/foreign"), b"", CreateMode::Persistent).await.unwrap();
    queue.put(&"good".to_string()).await.unwrap();
    assert!(matches!(queue.take().await, Err(QueueError::Corrupt { .. })));
    assert_eq!(queue.take().await.unwrap().ack().await.unwrap(), ["good"]);
    assert_eq!(children(&observer, &path).await, ["foreign"], "foreign nodes are left alone");
}

#[tokio::test]
async fn priority_delay_and_id_queues_order_as_curator_names_say() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let root = unique_root("queue-kinds");

    let prio = DistributedQueue::builder(&zk, &format!("{root}/prio"), Utf8).build_priority().unwrap();
    for (value, priority) in [("c", 5), ("a", -3), ("d", 5), ("b", 0), ("e", i32::MAX)] {
        prio.put(&value.to_string(), priority).await.unwrap();
    }
    let mut order = Vec::new();
    for _ in 0..5 {
        let item = prio.take().await.unwrap();
        assert!(DistributedPriorityQueue::<String>::priority_of(item.node()).is_some());
        order.extend(item.ack().await.unwrap());
    }
    assert_eq!(order, ["a", "b", "c", "d", "e"], "by priority, then put order");

    let delay = DistributedQueue::builder(&zk, &format!("{root}/delay"), Utf8).build_delay().unwrap();
    assert!(matches!(
        delay.put(&"x".to_string(), SystemTime::UNIX_EPOCH).await,
        Err(QueueError::InvalidArgument(_))
    ));
    let now = SystemTime::now();
    delay.put(&"late".to_string(), now + Duration::from_millis(900)).await.unwrap();
    delay.put(&"soon".to_string(), now + Duration::from_millis(400)).await.unwrap();
    delay.put(&"now".to_string(), now).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let item = delay.take_timeout(timing().wait()).await.unwrap().expect("due in time");
        let due = zkr_recipes::queues::DistributedDelayQueue::<String>::due_of(item.node());
        assert!(SystemTime::now() >= due, "handed out before its time");
        got.extend(item.ack().await.unwrap());
    }
    assert_eq!(got, ["now", "soon", "late"]);

    let ids = DistributedQueue::builder(&zk, &format!("{root}/ids"), Utf8).build_id().unwrap();
    assert!(matches!(ids.put(&"x".to_string(), "").await, Err(QueueError::InvalidArgument(_))));
    ids.put(&"keep-1".to_string(), "keep").await.unwrap();
    ids.put(&"drop-1".to_string(), "a/b|c").await.unwrap();
    ids.put(&"drop-2".to_string(), "a/b|c").await.unwrap();
    ids.put(&"keep-2".to_string(), "keep").await.unwrap();
    assert_eq!(ids.remove("a/b|c").await.unwrap(), 2);
    assert_eq!(ids.remove("missing").await.unwrap(), 0);
    let first = ids.take().await.unwrap();
    assert_eq!(
        zkr_recipes::queues::DistributedIdQueue::<String>::id_of(first.node()).as_deref(),
        Some("keep")
    );
    assert_eq!(first.ack().await.unwrap(), ["keep-1"]);
    assert_eq!(ids.take().await.unwrap().ack().await.unwrap(), ["keep-2"]);
    for queue in ["prio", "delay", "ids"] {
        assert!(children(&observer, &format!("{root}/{queue}")).await.is_empty(), "{queue}");
    }
}

/// The `ITEM` values a Curator (or kazoo) consumer printed, then its RESULT.
async fn curator_items(peer: &mut PeerProcess, n: usize) -> Vec<String> {
    let mut items = Vec::new();
    for _ in 0..n {
        items.push(peer.expect_line("ITEM").await.unwrap().trim_start_matches("ITEM ").to_owned());
    }
    assert_eq!(peer.expect_line("RESULT").await.unwrap(), format!("RESULT count={n}"));
    items
}

#[tokio::test]
async fn curator_and_zkr_share_distributed_and_priority_queues_byte_for_byte() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let curator = CuratorTool::locate().unwrap();
    let root = unique_root("queue-interop");
    let path = format!("{root}/queue");
    let queue = DistributedQueue::builder(&zk, &path, Utf8).build().unwrap();

    // zkr puts, Curator consumes: same order, same bytes.
    queue.put(&"z-0".to_string()).await.unwrap();
    queue.put_multi(&strings("zm", 2)).await.unwrap();
    queue.put(&"z-ü".to_string()).await.unwrap();
    let mut consumer = curator.spawn(&["queue-consume", &cs, &path, "4"]).unwrap();
    assert_eq!(curator_items(&mut consumer, 4).await, ["z-0", "zm-0", "zm-1", "z-ü"]);

    // Curator puts (one by one, then multi), zkr consumes.
    curator.spawn(&["queue-put", &cs, &path, "c", "3"]).unwrap().expect_line("RESULT").await.unwrap();
    curator.spawn(&["queue-put-multi", &cs, &path, "cm", "2"]).unwrap().expect_line("RESULT").await.unwrap();
    assert_eq!(take_n(&queue, 5).await, [strings("c", 3), strings("cm", 2)].concat());
    assert!(children(&observer, &path).await.is_empty());

    // Priority: Curator's names sort for zkr, and zkr's for Curator.
    let prio_path = format!("{root}/prio");
    let prio = DistributedQueue::builder(&zk, &prio_path, Utf8).build_priority().unwrap();
    curator
        .spawn(&["priority-put", &cs, &prio_path, "cp", "3"])
        .unwrap()
        .expect_line("RESULT")
        .await
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        got.extend(prio.take().await.unwrap().ack().await.unwrap());
    }
    assert_eq!(got, ["cp-2", "cp-1", "cp-0"], "Curator's priorities N-1-i");
    for (value, priority) in [("zp-hi", 9), ("zp-lo", -9), ("zp-mid", 0)] {
        prio.put(&value.to_string(), priority).await.unwrap();
    }
    let mut consumer = curator.spawn(&["priority-consume", &cs, &prio_path, "3"]).unwrap();
    assert_eq!(curator_items(&mut consumer, 3).await, ["zp-lo", "zp-mid", "zp-hi"]);

    // Lock-safe: Curator's consumer respects zkr's item lock (and the other way round).
    let locks = format!("{root}/locks");
    let safe = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    for value in strings("l", 3) {
        safe.put(&value).await.unwrap();
    }
    let held = safe.take().await.unwrap();
    assert_eq!(held.values(), ["l-0"]);
    let mut consumer = curator.spawn(&["queue-consume-locked", &cs, &path, &locks, "2"]).unwrap();
    assert_eq!(curator_items(&mut consumer, 2).await, ["l-1", "l-2"], "Curator skipped the locked item");
    held.ack().await.unwrap();
    assert!(children(&observer, &path).await.is_empty());
}

#[tokio::test]
async fn curator_and_zkr_share_a_simple_queue() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let curator = CuratorTool::locate().unwrap();
    let path = format!("{}/simple", unique_root("queue-simple-interop"));
    let queue = SimpleDistributedQueue::new(&zk, &path).unwrap();
    curator.spawn(&["simple-offer", &cs, &path, "c", "3"]).unwrap().expect_line("RESULT").await.unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(String::from_utf8(queue.take().await.unwrap()).unwrap());
    }
    assert_eq!(got, strings("c", 3));
    for value in strings("z", 3) {
        queue.offer(value.as_bytes()).await.unwrap();
    }
    let names = children(&observer, &path).await;
    assert!(names.iter().all(|n| n.starts_with("qn-") && n.len() == 13), "{names:?}");
    let mut consumer = curator.spawn(&["simple-take", &cs, &path, "3"]).unwrap();
    assert_eq!(curator_items(&mut consumer, 3).await, strings("z", 3));
    let left: BTreeSet<String> = children(&observer, &path).await.into_iter().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn bad_arguments_are_errors_before_anything_is_sent() {
    let server = shared_server().await.unwrap();
    let zk: ZkClient = connect_with_session(server.connect_string(), 30).await;
    assert!(matches!(SimpleDistributedQueue::new(&zk, "no-slash"), Err(QueueError::InvalidArgument(_))));
    let same = DistributedQueue::builder(&zk, "/q", Utf8).lock_path("/q").build();
    assert!(matches!(same, Err(QueueError::InvalidArgument(_))));
    let big = SimpleDistributedQueue::new(&zk, &format!("{}/big", unique_root("queue-big"))).unwrap();
    assert!(big.offer(&vec![0u8; 2 << 20]).await.is_err(), "too large for a znode");
}

#[tokio::test]
async fn lost_replies_never_duplicate_a_put_and_a_lost_ack_reply_is_an_ack() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = builder(&proxy.connect_string()).start().await.unwrap();
    let observer = raw(&server.connect_string()).await;
    let root = unique_root("queue-lost-reply");
    let (path, locks) = (format!("{root}/queue"), format!("{root}/locks"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    queue.put(&"first".to_string()).await.unwrap();

    // The create reaches the server, its reply is held, the connection is cut: not repeated.
    proxy.hold_replies();
    let putting = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.put(&"second".to_string()).await })
    };
    eventually("the put to reach the server", || async { children(&observer, &path).await.len() == 2 }).await;
    proxy.cut();
    proxy.heal();
    let outcome = putting.await.unwrap();
    assert!(matches!(outcome, Err(QueueError::Indeterminate { .. })), "{outcome:?}");
    assert_eq!(children(&observer, &path).await.len(), 2, "applied once, not twice");

    // The ack's transaction is applied and its reply lost: the retry sees its own effect.
    let item = queue.take().await.unwrap();
    assert_eq!(item.values(), ["first"]);
    proxy.hold_replies();
    let acking = tokio::spawn(async move { item.ack_and_create(&format!("{root}/done"), b"").await });
    eventually("the ack to reach the server", || async { children(&observer, &path).await.len() == 1 }).await;
    proxy.cut();
    proxy.heal();
    assert_eq!(acking.await.unwrap().unwrap(), ["first"], "acknowledged");
    assert!(children(&observer, &locks).await.is_empty());
    assert_eq!(queue.take().await.unwrap().ack().await.unwrap(), ["second"]);
}

#[tokio::test]
async fn kazoo_and_zkr_share_a_kazoo_queue() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let kazoo = KazooTool::locate().unwrap();
    let path = format!("{}/kazoo", unique_root("queue-kazoo"));
    let queue = SimpleDistributedQueue::kazoo(&zk, &path).unwrap();
    assert!(matches!(queue.offer_with_priority(b"x", 1000).await, Err(QueueError::InvalidArgument(_))));
    let plain = SimpleDistributedQueue::new(&zk, &path).unwrap();
    assert!(matches!(plain.offer_with_priority(b"x", 1).await, Err(QueueError::InvalidArgument(_))));

    kazoo.spawn(&["queue-put", &cs, &path, "k", "3"]).unwrap().expect_line("RESULT").await.unwrap();
    queue.offer_with_priority(b"z-first", 5).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(String::from_utf8(queue.take().await.unwrap()).unwrap());
    }
    assert_eq!(got, ["z-first", "k-0", "k-1", "k-2"], "kazoo's order: priority, then put order");
    for value in strings("z", 2) {
        queue.offer(value.as_bytes()).await.unwrap();
    }
    let names = children(&observer, &path).await;
    assert!(names.iter().all(|n| n.starts_with("entry-100-")), "{names:?}");
    let mut consumer = kazoo.spawn(&["queue-get", &cs, &path, "2"]).unwrap();
    assert_eq!(curator_items(&mut consumer, 2).await, strings("z", 2));
    assert!(children(&observer, &path).await.is_empty());
}

#[tokio::test]
async fn a_lock_safe_take_cancelled_at_any_point_leaves_the_item_and_no_lock() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let root = unique_root("queue-cancel");
    let (path, locks) = (format!("{root}/queue"), format!("{root}/locks"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    queue.put(&"only".to_string()).await.unwrap();
    let mut cancelled = 0;
    for round in 0..30u64 {
        // From 0 to 2.9 ms: before, during and after the lock's create and the item's read.
        let budget = Duration::from_micros(round * 100);
        match tokio::time::timeout(budget, queue.take()).await {
            Ok(item) => drop(item.unwrap()), // taken in time: dropped, released
            Err(_) => cancelled += 1,
        }
        eventually("the lock gone", || async { children(&observer, &locks).await.is_empty() }).await;
        assert_eq!(children(&observer, &path).await.len(), 1, "the item stays (round {round})");
    }
    assert!(cancelled > 0, "some takes were cancelled");
    assert_eq!(queue.take().await.unwrap().ack().await.unwrap(), ["only"]);
    assert!(children(&observer, &path).await.is_empty());
}

#[tokio::test]
async fn curators_delay_and_id_queue_nodes_read_as_zkr_expects() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let curator = CuratorTool::locate().unwrap();
    let root = unique_root("queue-curator-kinds");

    // Curator's delays: item i due 300 * (3 - i) ms after the put; the last is due first.
    let delay_path = format!("{root}/delay");
    let delay = DistributedQueue::builder(&zk, &delay_path, Utf8).build_delay().unwrap();
    curator
        .spawn(&["delay-put", &cs, &delay_path, "d", "3", "300"])
        .unwrap()
        .expect_line("RESULT")
        .await
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let item = delay.take_timeout(timing().wait()).await.unwrap().expect("due in time");
        let due = zkr_recipes::queues::DistributedDelayQueue::<String>::due_of(item.node());
        assert!(due > SystemTime::UNIX_EPOCH, "Curator's due time parsed from {}", item.node());
        assert!(SystemTime::now() >= due, "handed out before its time");
        got.extend(item.ack().await.unwrap());
    }
    assert_eq!(got, ["d-2", "d-1", "d-0"]);

    // Curator's ids, fixed as Curator fixes them; removable by the id as given.
    let id_path = format!("{root}/ids");
    let ids = DistributedQueue::builder(&zk, &id_path, Utf8).build_id().unwrap();
    curator.spawn(&["id-put", &cs, &id_path, "i", "3"]).unwrap().expect_line("RESULT").await.unwrap();
    assert_eq!(ids.remove("id/1|x").await.unwrap(), 1);
    let first = ids.take().await.unwrap();
    assert_eq!(
        zkr_recipes::queues::DistributedIdQueue::<String>::id_of(first.node()).as_deref(),
        Some("id_0_x")
    );
    assert_eq!(first.ack().await.unwrap(), ["i-0"]);
    assert_eq!(ids.take().await.unwrap().ack().await.unwrap(), ["i-2"]);
    assert!(children(&observer, &delay_path).await.is_empty());
    assert!(children(&observer, &id_path).await.is_empty());
}

/// The requests the server has read on `zk`'s session so far (`cons`'s `recved`).
async fn requests_read(server: &zkr_testing::TestingServer, zk: &ZkClient) -> u64 {
    let ours = format!("sid=0x{:x},", zk.session().await.unwrap().id());
    let cons = server.four_letter_word("cons").await.unwrap();
    let line = cons.lines().find(|line| line.contains(&ours)).expect("our connection in cons");
    line.split(['(', ',', ')']).find_map(|f| f.strip_prefix("recved=")).unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_consumer_starts_with_one_listing_however_many_items_wait() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let observer = raw(&cs).await;
    let path = format!("{}/waiting", unique_root("queue-start"));
    let producer = connect_with_session(&cs, 30).await;
    SimpleDistributedQueue::new(&producer, &path).unwrap().offer(b"item-0").await.unwrap();
    let puts: Vec<_> = (1..1000)
        .map(|i| {
            let data = format!("item-{i}");
            let options = CreateMode::PersistentSequential.with_acls(zookeeper_client::Acls::anyone_all());
            let node = format!("{path}/qn-");
            let observer = observer.clone();
            async move { observer.create(&node, data.as_bytes(), &options).await.unwrap() }
        })
        .collect();
    futures::future::join_all(puts).await;
    let zk = connect_with_session(&cs, 30).await;
    let queue = SimpleDistributedQueue::new(&zk, &path).unwrap();
    let before = requests_read(server, &zk).await;
    assert_eq!(queue.take().await.unwrap(), b"item-0");
    let requests = requests_read(server, &zk).await - before;
    // The queue's node made sure of, the watch, one listing, the first item's read and delete
    // (5; a ping or two more at most). A cache of the items reads them all first: in multi-reads
    // of 64, 16 more.
    assert!(requests <= 8, "{requests} requests to start and take one item of 1000");
    assert_eq!(children(&observer, &path).await.len(), 999);
}

#[tokio::test]
async fn an_item_the_consumer_cannot_read_stays_in_the_queue() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let observer = raw(&cs).await;
    let root = unique_root("queue-unreadable");
    let path = format!("{root}/q");
    // An open queue node; alice's items are hers alone to read (a creator-only ACL).
    for node in [&root, &path] {
        let options = CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
        observer.create(node, b"", &options).await.unwrap();
    }
    let alice = builder(&cs).digest_auth("alice", "s3cret").creator_only_acl().connect().await.unwrap();
    SimpleDistributedQueue::new(&alice, &path).unwrap().offer(b"alice's").await.unwrap();
    let zk = connect_with_session(&cs, 30).await;
    let queue = SimpleDistributedQueue::new(&zk, &path).unwrap();
    // The read is refused; the item must not be deleted unread (the parent lets anyone delete).
    assert!(queue.poll().await.is_err(), "an unreadable item is an error, not a take");
    assert_eq!(children(&observer, &path).await.len(), 1, "the unreadable item is still there");
    let alices = SimpleDistributedQueue::new(&alice, &path).unwrap();
    assert_eq!(alices.poll().await.unwrap().as_deref(), Some(&b"alice's"[..]));
}
