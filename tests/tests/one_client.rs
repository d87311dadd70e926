//! "Two of everything": recipes used by two users of one `ZkClient`, who share its session, so
//! that a session id cannot tell them apart; and the defects of issue 27 that lost or doubled
//! work, each shown against a real ZooKeeper (every test here failed before its fix, as the
//! closing note of that issue says).

use std::time::Duration;

use zkr_connection::retry::RetryNTimes;
use zkr_connection::Classify as _;
use zkr_connection::ZkClient;
use zkr_integration_tests::{builder, children, connect_with_session, eventually, raw, timing, unique_root};
use zkr_recipes::barriers::DistributedDoubleBarrier;
use zkr_recipes::counters::{CounterError, DistributedAtomicLong};
use zkr_recipes::discovery::{ServiceDiscovery, ServiceInstance};
use zkr_recipes::leader::LeaderLatch;
use zkr_recipes::locks::{InterProcessMutex, InterProcessSemaphoreV2, MaxLeases};
use zkr_recipes::nodes::{GroupMember, PersistentNode};
use zkr_recipes::queues::{DistributedQueue, Utf8};
use zkr_testing::{shared_server, FaultProxy, Latency, TestingServer};
use zookeeper_client::CreateMode;

/// Polls `future` once (as a `select!` that another branch wins would) and drops it.
async fn poll_once_and_drop<F: std::future::Future>(future: F) {
    let mut future = Box::pin(future);
    assert!(futures::poll!(future.as_mut()).is_pending(), "done at its first poll: nothing to show");
}

/// Issue 27 item 1: two consumers on one client woke on one snapshot, the second found the
/// first one's item lock on its own session and took it too.
#[tokio::test]
async fn two_takes_on_one_client_before_one_put_give_the_item_to_exactly_one() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let root = unique_root("one-client-take");
    let (path, locks) = (format!("{root}/queue"), format!("{root}/locks"));
    for round in 0..10 {
        let queue =
            |zk: &ZkClient| DistributedQueue::builder(zk, &path, Utf8).lock_path(&locks).build().unwrap();
        let (first, second) = (queue(&zk.clone()), queue(&zk.clone()));
        let takes = [first, second].map(|q| tokio::spawn(async move { q.take().await.unwrap() }));
        // Both wait on their caches; one put wakes both on one snapshot.
        let producer = queue(&zk);
        producer.put(&format!("item-{round}")).await.unwrap();
        let (done, _, pending) = futures::future::select_all(takes).await;
        let item = done.unwrap();
        assert_eq!(item.values(), [format!("item-{round}")]);
        let other = pending.into_iter().next().unwrap();
        let second_take = tokio::time::timeout(Duration::from_millis(300), other).await;
        assert!(second_take.is_err(), "round {round}: the same item went to both consumers");
        item.ack().await.unwrap();
        assert!(children(&observer, &path).await.is_empty(), "round {round}");
        assert!(children(&observer, &locks).await.is_empty(), "round {round}: a lock left behind");
    }
}

/// Issue 27 item 1, through `DistributedIdQueue::remove`: it took the lock of an item that a
/// consumer on the same client held, and removed the item under it.
#[tokio::test]
async fn an_id_queue_remove_leaves_an_item_a_consumer_on_the_same_client_holds() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let root = unique_root("one-client-remove");
    let (path, locks) = (format!("{root}/queue"), format!("{root}/locks"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build_id().unwrap();
    queue.put(&"job".to_string(), "job-7").await.unwrap();
    let held = queue.take().await.unwrap();
    assert_eq!(queue.remove("job-7").await.unwrap(), 0, "held by a consumer: not removed");
    assert_eq!(children(&observer, &path).await.len(), 1);
    assert_eq!(held.ack().await.unwrap(), ["job"], "the consumer's ack still holds");
    assert!(children(&observer, &path).await.is_empty());
    assert!(children(&observer, &locks).await.is_empty());
}

/// Issue 27 item 2: `release()` disarmed its guard, then awaited the delete inline; dropped
/// after its first poll, it left the item locked until the session ended.
#[tokio::test]
async fn a_release_dropped_after_its_first_poll_still_gives_the_item_back() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, other_zk) = (connect_with_session(&cs, 30).await, connect_with_session(&cs, 30).await);
    let root = unique_root("release-dropped");
    let (path, locks) = (format!("{root}/queue"), format!("{root}/locks"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    let other = DistributedQueue::builder(&other_zk, &path, Utf8).lock_path(&locks).build().unwrap();
    queue.put(&"x".to_string()).await.unwrap();
    let item = queue.take().await.unwrap();
    poll_once_and_drop(item.release()).await;
    let again = other.take_timeout(Duration::from_secs(5)).await.unwrap().expect("the item back in 5 s");
    assert_eq!(again.ack().await.unwrap(), ["x"]);
}

/// Issue 27 item 3: `close()` took the engine's stop before its first await, so a dropped
/// close left the node (forever, in persistent mode).
#[tokio::test]
async fn a_close_dropped_after_its_first_poll_still_deletes_the_node_and_the_member() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let root = unique_root("close-dropped");
    let path = format!("{root}/static-instance");
    let node = PersistentNode::builder(&zk, &path, CreateMode::Persistent).data("up").start().await.unwrap();
    node.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    poll_once_and_drop(node.close()).await;
    let gone = || async { observer.check_stat(&path).await.unwrap().is_none() };
    eventually("the persistent node deleted", gone).await;

    let members = format!("{root}/members");
    let member = GroupMember::start(&zk, &members, "m-1", b"").await.unwrap();
    member.wait_for_initial_create_timeout(timing().wait()).await.unwrap().expect("created in time");
    poll_once_and_drop(member.close()).await;
    eventually("the member gone", || async { children(&observer, &members).await.is_empty() }).await;
}

/// Issue 27 item 9: an unregister while a register of the same instance was still in flight
/// left that register's handle to the node alive; when it went, its drop deleted the node
/// registered again since on the same session (which then came back).
#[tokio::test]
async fn a_register_still_in_flight_at_unregister_does_not_delete_the_next_registration() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let base = unique_root("register-again");
    let discovery = ServiceDiscovery::<()>::new(&zk, &base).unwrap();
    let instance = ServiceInstance::builder("api", ()).id("i-1").build();
    let node = format!("{base}/api/i-1");
    let mut in_flight = Box::pin(discovery.register(&instance));
    assert!(futures::poll!(in_flight.as_mut()).is_pending());
    discovery.unregister(&instance).await.unwrap();
    let gone = || async { observer.check_stat(&node).await.unwrap().is_none() };
    eventually("the first registration gone", gone).await;
    discovery.register(&instance).await.unwrap();
    let (stat, watcher) = observer.check_and_watch_stat(&node).await.unwrap();
    assert!(stat.is_some());
    drop(in_flight);
    // Nothing is to happen: the node stays as long as it is not unregistered.
    let changed = tokio::time::timeout(Duration::from_secs(1), watcher.changed()).await;
    assert!(changed.is_err(), "the registration changed: {changed:?}");
    discovery.unregister(&instance).await.unwrap();
    assert!(gone().await, "unregister deletes it");
}

/// Issue 27 item 10: with the server gone and a mutex guard on the same client already lost,
/// a lease's release waited about 3 s for the manager to give the session up.
#[tokio::test]
async fn a_lease_whose_loss_is_known_is_released_at_once() {
    let server = TestingServer::start().await.unwrap();
    let zk = connect_with_session(server.connect_string(), 30).await;
    let root = unique_root("lease-loss");
    let semaphore = InterProcessSemaphoreV2::new(&zk, &format!("{root}/sem"), MaxLeases::Fixed(2)).unwrap();
    let mutex = InterProcessMutex::new(&zk, &format!("{root}/lock")).unwrap();
    let (lease, guard) = (semaphore.acquire().await.unwrap(), mutex.acquire().await.unwrap());
    server.stop().unwrap();
    tokio::time::timeout(timing().wait(), guard.lost()).await.expect("the guard learns the loss");
    let released = tokio::time::timeout(Duration::from_millis(500), lease.release()).await;
    assert!(released.is_ok(), "the lease's release waited for the session");
    let released = tokio::time::timeout(Duration::from_millis(500), guard.release()).await;
    assert!(released.is_ok(), "the guard's release waited");
}

/// Issue 27 item 8: a counter write whose reply was lost came back as `Connection`, which a
/// caller retries, counting twice.
#[tokio::test]
async fn a_counter_write_whose_reply_is_lost_is_indeterminate_and_counts_once() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let proxy = FaultProxy::start(&cs).await.unwrap();
    // A short connection timeout and one retry: the test waits for the policy to give up.
    let zk = builder(&proxy.connect_string())
        .connection_timeout(Duration::from_secs(1))
        .retry_policy(RetryNTimes::new(1, Duration::from_millis(100)))
        .connect()
        .await
        .unwrap();
    let observer = raw(&cs).await;
    let path = format!("{}/n", unique_root("counter-lost-reply"));
    let counter = DistributedAtomicLong::new(&zk, &path, RetryNTimes::new(3, Duration::ZERO)).unwrap();
    assert!(counter.initialize(0).await.unwrap());
    // Slow enough to see the write applied before its reply gets back.
    proxy.set_latency(Latency::one_way(Duration::from_millis(400)));
    let incrementing = tokio::spawn(async move { counter.increment().await });
    let value = || async { observer.get_data(&path).await.map(|(d, _)| d).unwrap_or_default() };
    eventually("the increment applied", || async { value().await == 1i64.to_be_bytes() }).await;
    proxy.blackhole();
    let outcome = tokio::time::timeout(timing().wait() * 3, incrementing).await.expect("an answer").unwrap();
    assert!(matches!(&outcome, Err(CounterError::Indeterminate { .. })), "{outcome:?}");
    assert!(outcome.unwrap_err().is_ambiguous());
    proxy.heal();
    assert_eq!(value().await, 1i64.to_be_bytes(), "applied once");
}

/// Two barrier members on one client: each counts as one member, and both pass and leave.
#[tokio::test]
async fn two_double_barrier_members_on_one_client_pass_and_leave_together() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let path = format!("{}/b", unique_root("one-client-barrier"));
    let member = |zk: &ZkClient| DistributedDoubleBarrier::new(zk, &path, 2).unwrap();
    let (mut a, mut b) = (member(&zk), member(&zk.clone()));
    assert!(a.enter_timeout(Duration::from_millis(200)).await.unwrap().is_none(), "one member is not two");
    let (a_in, b_in) = tokio::join!(a.enter_timeout(timing().wait()), b.enter_timeout(timing().wait()));
    assert!(a_in.unwrap().is_some() && b_in.unwrap().is_some());
    let (a_out, b_out) = tokio::join!(a.leave_timeout(timing().wait()), b.leave_timeout(timing().wait()));
    assert!(a_out.unwrap().is_some() && b_out.unwrap().is_some());
    assert!(children(&observer, &path).await.iter().all(|c| c == "ready"));
}

/// Two counters on one client, contending: every increment counts once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_counters_on_one_client_count_every_increment_once() {
    let server = shared_server().await.unwrap();
    let zk = connect_with_session(server.connect_string(), 30).await;
    let path = format!("{}/n", unique_root("one-client-counter"));
    let counting = (0..2).map(|_| {
        let counter =
            DistributedAtomicLong::new(&zk.clone(), &path, RetryNTimes::new(1000, Duration::ZERO)).unwrap();
        tokio::spawn(async move {
            for _ in 0..50 {
                assert!(counter.increment().await.unwrap().succeeded);
            }
        })
    });
    for task in counting.collect::<Vec<_>>() {
        task.await.unwrap();
    }
    let counter = DistributedAtomicLong::new(&zk, &path, RetryNTimes::new(1, Duration::ZERO)).unwrap();
    assert_eq!(counter.get().await.unwrap().post_value, 100);
}

/// Two latches on one client: one leads at a time, and the other takes over when it closes.
#[tokio::test]
async fn two_leader_latches_on_one_client_lead_one_at_a_time() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let (zk, observer) = (connect_with_session(&cs, 30).await, raw(&cs).await);
    let path = unique_root("one-client-latch");
    let a = LeaderLatch::start(&zk, &path, "a").await.unwrap();
    let b = LeaderLatch::start(&zk.clone(), &path, "b").await.unwrap();
    let first = tokio::select! {
        led = a.await_leadership() => { led.unwrap(); &a }
        led = b.await_leadership() => { led.unwrap(); &b }
    };
    let second = if std::ptr::eq(first, &a) { &b } else { &a };
    assert!(first.has_leadership() && !second.has_leadership(), "two leaders on one session");
    assert_eq!(first.leader().await.unwrap().map(|p| p.id), Some(first.id().to_owned()));
    first.close().await;
    tokio::time::timeout(timing().wait(), second.await_leadership()).await.expect("a new leader").unwrap();
    assert!(second.has_leadership());
    second.close().await;
    assert!(children(&observer, &path).await.is_empty());
}

/// Two snowflake generators of one identity on one client share its session: the session
/// cannot tell their lease nodes apart, the token in each does. Before it, the second took the
/// first's worker ID as its own (a lease node of its session at its identity's preferred ID).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_snowflake_generators_on_one_client_never_share_a_worker_id() {
    use zkr_recipes::id::{IdGenerator as _, SnowflakeIdGenerator};
    let server = shared_server().await.unwrap();
    let root = unique_root("snowflake-one-client");
    let zk = connect_with_session(server.connect_string(), 30).await;
    let start = || {
        SnowflakeIdGenerator::builder(&zk, &root)
            .identity("same")
            .reclaim_wait(Duration::from_secs(1))
            .start()
    };
    let a = start().await.unwrap();
    // Before the token the second start never returned: it took the first's lease and waited
    // for a watermark that the first kept moving ahead.
    let b = tokio::time::timeout(timing().wait(), start()).await.expect("the second start hung").unwrap();
    assert_ne!(a.worker_id(), b.worker_id(), "two generators on one session took one worker ID");
    let draw = |ids: SnowflakeIdGenerator| tokio::spawn(async move { ids.next_batch(20_000).await.unwrap() });
    let (from_a, from_b) = (draw(a.clone()), draw(b.clone()));
    let all = zkr_integration_tests::id_worker::check_runs(&[from_a.await.unwrap(), from_b.await.unwrap()]);
    assert_eq!(all.len(), 40_000);
    // Closed and started again, the identity takes back the worker ID it had.
    let worker_b = b.worker_id();
    b.close().await;
    let again = start().await.unwrap();
    assert_eq!(again.worker_id(), worker_b);
    assert_ne!(again.worker_id(), a.worker_id());
    let observer = raw(&server.connect_string()).await;
    assert_eq!(children(&observer, &format!("{root}/leases")).await.len(), 2);
    again.close().await;
    a.close().await;
    assert!(children(&observer, &format!("{root}/leases")).await.is_empty());
}
