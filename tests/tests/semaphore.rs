//! InterProcessSemaphoreV2 and InterProcessSemaphoreMutex against real ZooKeeper servers: at
//! most N holders across sessions, a shared count changed at run time, timeouts and cancelled
//! acquires leave nothing behind, leases move between tasks, session expiry, and a shared
//! semaphore with Apache Curator's InterProcessSemaphoreV2.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zkr_integration_tests::{children, connect, eventually, raw, timing, unique_root};
use zkr_recipes::locks::{
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, LockError, LostReason, MaxLeases,
};
use zkr_testing::{expire_session, shared_server};
use zookeeper_client::{Client, CreateMode};

const SHORT: Duration = Duration::from_millis(300);

async fn leases(observer: &Client, root: &str) -> usize {
    children(observer, &format!("{root}/leases")).await.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_more_holders_than_leases() {
    let server = shared_server().await.unwrap();
    let root = unique_root("semaphore");
    let inside = Arc::new(AtomicUsize::new(0));
    // The most holders seen at once, watched: a holder waits (bounded) until two have held
    // together once, so that the run shows both leases in use on a busy machine too.
    let most = Arc::new(tokio::sync::watch::Sender::new(0_usize));
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let zk = connect(&server.connect_string()).await;
        let semaphore = InterProcessSemaphoreV2::new(&zk, &root, MaxLeases::Fixed(2)).unwrap();
        let (inside, most) = (inside.clone(), most.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                let lease = semaphore.acquire().await.unwrap();
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.send_modify(|most| *most = (*most).max(now));
                let _ =
                    tokio::time::timeout(timing().wait(), most.subscribe().wait_for(|most| *most >= 2)).await;
                tokio::time::sleep(Duration::from_millis(25)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                lease.release().await.unwrap();
            }
            zk
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let most = *most.borrow();
    assert!(most <= 2, "{most} holders at once");
    assert_eq!(most, 2, "two leases were in use together");
    let observer = raw(&server.connect_string()).await;
    eventually("no lease left", || async { leases(&observer, &root).await == 0 }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_and_dropped_acquires_leave_nothing_and_leases_move_between_tasks() {
    let server = shared_server().await.unwrap();
    let root = unique_root("semaphore-timeout");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessSemaphoreMutex::new(&zk, &root).unwrap();
    let held = mutex.acquire().await.unwrap();
    assert!(held.fencing_token() > 0);
    assert!(mutex.acquire_timeout(SHORT).await.unwrap().is_none(), "not reentrant: a second acquire waits");
    for i in 0..10u64 {
        let _ = tokio::time::timeout(Duration::from_millis(20 * i), mutex.acquire()).await;
    }
    let observer = raw(&server.connect_string()).await;
    eventually("only the held lease", || async { leases(&observer, &root).await == 1 }).await;
    // Released from another task.
    tokio::spawn(async move { held.release().await.unwrap() }).await.unwrap();
    let again = tokio::time::timeout(timing().wait(), mutex.acquire()).await.unwrap().unwrap();
    drop(again); // dropping returns it
    eventually("the dropped lease to go", || async { leases(&observer, &root).await == 0 }).await;
    assert!(InterProcessSemaphoreV2::new(&zk, &root, MaxLeases::Fixed(0)).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_count_changes_the_limit_at_run_time() {
    let server = shared_server().await.unwrap();
    let root = unique_root("semaphore-shared");
    let count = format!("{root}-count");
    let zk = connect(&server.connect_string()).await;
    zk.create(&count, &1i32.to_be_bytes(), CreateMode::Persistent).await.unwrap();
    let semaphore = InterProcessSemaphoreV2::new(&zk, &root, MaxLeases::Shared(count.clone())).unwrap();
    let first = semaphore.acquire().await.unwrap();
    assert!(semaphore.acquire_timeout(SHORT).await.unwrap().is_none(), "one lease while the count is 1");
    let observer = raw(&server.connect_string()).await;
    observer.set_data(&count, &2i32.to_be_bytes(), None).await.unwrap();
    let second = semaphore.acquire_timeout(timing().wait()).await.unwrap();
    assert!(second.is_some(), "two leases once the count is 2");
    drop((first, second));
    observer.set_data(&count, b"x", None).await.unwrap();
    assert!(matches!(semaphore.acquire().await, Err(LockError::IllegalState { .. })));
    eventually("no lease left", || async { leases(&observer, &root).await == 0 }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_is_lost_with_its_session() {
    let server = shared_server().await.unwrap();
    let root = unique_root("semaphore-expiry");
    let (zk_a, zk_b) = (connect(&server.connect_string()).await, connect(&server.connect_string()).await);
    let a = InterProcessSemaphoreMutex::new(&zk_a, &root).unwrap();
    let b = InterProcessSemaphoreMutex::new(&zk_b, &root).unwrap();
    let lease = a.acquire().await.unwrap();
    let waiting = tokio::spawn(async move { b.acquire().await.map(|l| (l, b)) });
    let session = zk_a.session().await.unwrap();
    expire_session(session.client(), &server.connect_string()).await.unwrap();
    let reason = tokio::time::timeout(timing().wait(), lease.lost()).await.unwrap();
    assert_eq!(reason, LostReason::SessionEnded);
    assert!(lease.is_lost());
    let (taken, _b) = tokio::time::timeout(timing().wait(), waiting).await.unwrap().unwrap().unwrap();
    assert!(matches!(lease.release().await, Err(LockError::Lost { .. })));

    // A lease whose node someone else deletes is lost too.
    let observer = raw(&server.connect_string()).await;
    let lost = taken.lost();
    tokio::pin!(lost);
    assert!(tokio::time::timeout(SHORT, &mut lost).await.is_err(), "a held lease is not lost");
    observer.delete(taken.node_path(), None).await.unwrap();
    assert_eq!(tokio::time::timeout(timing().wait(), lost).await.unwrap(), LostReason::NodeDeleted);
}

/// zkr and Curator semaphores on one path share its leases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_zkr_share_a_semaphore() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique_root("semaphore-curator");
    let zk = connect(&cs).await;
    let ours = InterProcessSemaphoreV2::new(&zk, &root, MaxLeases::Fixed(2)).unwrap();
    let tool = zkr_testing::peers::CuratorTool::locate().unwrap();
    let mut java = tool.spawn(&["semaphore-hold", &cs, &root, "2"]).unwrap();
    java.expect_line("HELD").await.unwrap();
    let one = ours.acquire().await.unwrap();
    assert!(ours.acquire_timeout(SHORT).await.unwrap().is_none(), "Curator's lease and ours fill both");
    let mut java_second = tool.spawn(&["semaphore-hold", &cs, &root, "2"]).unwrap();
    java_second.set_line_timeout(SHORT * 2);
    assert!(java_second.expect_line("HELD").await.is_err(), "Curator waits too");
    java_second.set_line_timeout(timing().wait());
    one.release().await.unwrap();
    java_second.expect_line("HELD").await.unwrap();
    for mut peer in [java, java_second] {
        peer.send_line("release").await.unwrap();
        peer.expect_line("RELEASED").await.unwrap();
        assert!(peer.wait().await.unwrap().success());
    }
    assert!(ours.acquire_timeout(timing().wait()).await.unwrap().is_some());
}

/// Several leases at once, all or none, with data on each lease node: two users of one client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_leases_at_once_all_or_none_with_data_on_each() {
    let server = shared_server().await.unwrap();
    let root = unique_root("semaphore-many");
    let observer = raw(&server.connect_string()).await;
    let zk = connect(&server.connect_string()).await;
    let semaphore = InterProcessSemaphoreV2::new(&zk, &root, MaxLeases::Fixed(4))
        .unwrap()
        .with_node_data("worker-1")
        .unwrap();
    let taken = semaphore.acquire_many(3).await.unwrap();
    assert_eq!((taken.len(), leases(&observer, &root).await), (3, 3));
    for lease in &taken {
        assert_eq!(lease.data().await.unwrap(), b"worker-1");
    }

    // Another user of the same client wants two of the one left: none are kept.
    let other = InterProcessSemaphoreV2::new(&zk, &root, MaxLeases::Fixed(4)).unwrap();
    assert!(other.acquire_many_timeout(2, SHORT).await.unwrap().is_none());
    eventually("the partial take returned", || async { leases(&observer, &root).await == 3 }).await;
    let one = other.acquire_many_timeout(1, SHORT).await.unwrap().expect("the fourth lease");
    assert_eq!(one[0].data().await.unwrap(), b"", "no data unless given");

    for qty in [0, 5] {
        let refused = semaphore.acquire_many(qty).await.unwrap_err();
        assert!(matches!(refused, LockError::InvalidArgument(_)), "{qty}: {refused:?}");
    }
    assert!(InterProcessSemaphoreV2::new(&zk, &root, MaxLeases::Fixed(1))
        .unwrap()
        .with_node_data(vec![0u8; 2 * 1024 * 1024])
        .is_err());
    for lease in taken.into_iter().chain(one) {
        lease.release().await.unwrap();
    }
    assert_eq!(leases(&observer, &root).await, 0);
    zk.close().await;
}

/// Callers whose quantities add up to more than the maximum take turns: with Curator's
/// `acquire(qty)` (the mutex released between leases) two callers of 3 on 4 leases could each
/// hold 2 and wait forever. Here several rounds of two users of one client and a third on
/// another session, each taking 3 and giving them back, all finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_of_several_leases_beyond_the_maximum_together_take_turns() {
    let server = shared_server().await.unwrap();
    let root = unique_root("semaphore-many-turns");
    let observer = raw(&server.connect_string()).await;
    let (zk, other) = (connect(&server.connect_string()).await, connect(&server.connect_string()).await);
    let hang = timing().multiple(Duration::from_secs(20));
    for round in 0..5 {
        let callers = [&zk, &zk, &other].map(|client| {
            let semaphore = InterProcessSemaphoreV2::new(client, &root, MaxLeases::Fixed(4)).unwrap();
            tokio::spawn(async move {
                let leases = semaphore.acquire_many(3).await?;
                tokio::task::yield_now().await;
                for lease in leases {
                    lease.release().await?;
                }
                Ok::<_, LockError>(())
            })
        });
        for caller in callers {
            let done = tokio::time::timeout(hang, caller).await;
            done.unwrap_or_else(|_| panic!("round {round}: a caller waits forever")).unwrap().unwrap();
        }
    }
    assert_eq!(leases(&observer, &root).await, 0);
    zk.close().await;
    other.close().await;
}

/// `try_acquire` (Curator's `acquire(0, unit)`): a free lease at once, `None` without waiting
/// and without a node left behind when every lease is out; two users of one client each count.
#[tokio::test]
async fn try_acquire_takes_a_free_lease_and_leaves_nothing_when_none_is() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let observer = raw(&server.connect_string()).await;
    let root = unique_root("sem-try");
    let first = InterProcessSemaphoreV2::new(&zk, &root, MaxLeases::Fixed(2)).unwrap();
    let second = InterProcessSemaphoreV2::new(&zk, &root, MaxLeases::Fixed(2)).unwrap();
    let a = first.try_acquire().await.unwrap().expect("a free lease");
    let b = second.try_acquire().await.unwrap().expect("the second lease, same client");
    assert_eq!(leases(&observer, &root).await, 2);
    assert!(first.try_acquire().await.unwrap().is_none(), "no third lease of 2");
    assert_eq!(leases(&observer, &root).await, 2, "the refused try left no node");
    // Someone queued for the acquirers' mutex: a try does not wait for it either.
    let queued = tokio::spawn({
        let second = second.clone();
        async move { second.acquire().await }
    });
    eventually("the waiter holds the acquirers' mutex", || async {
        !children(&observer, &format!("{root}/locks")).await.is_empty()
    })
    .await;
    let refused = tokio::time::timeout(timing().wait(), first.try_acquire()).await.expect("no wait");
    assert!(refused.unwrap().is_none());
    a.release().await.unwrap();
    let c = tokio::time::timeout(timing().wait(), queued).await.unwrap().unwrap().unwrap();
    b.release().await.unwrap();
    c.release().await.unwrap();
    assert_eq!(leases(&observer, &root).await, 0);
}

/// Acquires joined in one task share the task, not the acquirers' mutex: each takes its turn,
/// so no more lease nodes are made than can be granted, and every acquire returns. (With the
/// mutex reentrant per task, the 12 joined acquires below all made a lease and waited for
/// room that never came.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquires_joined_in_one_task_each_take_their_turn() {
    let server = shared_server().await.unwrap();
    let root = unique_root("semaphore");
    let zk = connect(&server.connect_string()).await;
    let semaphore = InterProcessSemaphoreV2::new(&zk, &root, MaxLeases::Fixed(3)).unwrap();
    let observer = raw(&server.connect_string()).await;
    let (inside, most, most_nodes) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    let one = || async {
        let lease = semaphore.acquire().await.unwrap();
        most.fetch_max(inside.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
        most_nodes.fetch_max(leases(&observer, &root).await, Ordering::SeqCst);
        inside.fetch_sub(1, Ordering::SeqCst);
        lease.release().await.unwrap();
    };
    let all = futures::future::join_all((0..12).map(|_| one()));
    tokio::time::timeout(timing().wait(), all).await.expect("every joined acquire returned");
    let (most, most_nodes) = (most.into_inner(), most_nodes.into_inner());
    assert!(most <= 3, "{most} holders at once");
    // A holder's listing sees the holders and at most one more: the acquirer holding the mutex.
    assert!(most_nodes <= 4, "{most_nodes} lease nodes at once");
    assert_eq!(leases(&observer, &root).await, 0);
}
