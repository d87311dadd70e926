//! InterProcessMutex against real ZooKeeper servers: exclusion, reentrancy (Curator's
//! scenarios), timeouts, cancellation, session loss, server faults, lost replies, guarded
//! writes, fencing, drivers and bad input.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use zkr_connection::Classify as _;
use zkr_connection::ZkClient;
use zkr_integration_tests::{
    builder, children, connect, connect_with_session, eventually, mntr_counter, raw, timing, unique_root,
};
use zkr_recipes::locks::{
    ContenderSpec, InterProcessMutex, InterProcessMutexGuard, KazooLockDriver, LockError, LockInternals,
    LockInternalsDriver, LostReason, StandardLockInternalsDriver,
};
use zkr_testing::{expire_session, shared_server, FaultProxy, TestingCluster, TestingServer};
use zookeeper_client::{Client, CreateMode};

/// Two sessions of their own, each with a mutex at `path`.
async fn two_contenders(
    connect_string: &str,
    path: &str,
) -> (ZkClient, ZkClient, InterProcessMutex, InterProcessMutex) {
    let (zk_a, zk_b) = (connect(connect_string).await, connect(connect_string).await);
    let (a, b) = (InterProcessMutex::new(&zk_a, path).unwrap(), InterProcessMutex::new(&zk_b, path).unwrap());
    (zk_a, zk_b, a, b)
}

async fn no_nodes_left(observer: &Client, path: &str) {
    eventually("every lock node to be gone", || async { children(observer, path).await.is_empty() }).await;
}

/// Runs `tasks` tasks that each take the lock `rounds` times, asserting nobody else is inside.
async fn hammer<D: LockInternalsDriver>(mutexes: Vec<InterProcessMutex<D>>, rounds: usize) -> usize {
    let inside = Arc::new(AtomicBool::new(false));
    let entered = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for mutex in mutexes {
        let inside = inside.clone();
        let entered = entered.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..rounds {
                let guard = mutex.acquire().await.unwrap();
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                entered.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
                inside.store(false, Ordering::SeqCst);
                guard.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    entered.load(Ordering::SeqCst)
}

#[tokio::test]
async fn tasks_sharing_one_mutex_exclude_each_other() {
    // Curator's testReentrantSingleLock: one mutex, ten tasks.
    let server = shared_server().await.unwrap();
    let path = unique_root("tasks");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    assert_eq!(hammer(vec![mutex.clone(); 10], 10).await, 100);
    assert!(!mutex.is_acquired_in_this_process());
    no_nodes_left(&raw(&server.connect_string()).await, &path).await;
}

#[tokio::test]
async fn sessions_exclude_each_other() {
    // Curator's test2Clients, with four sessions.
    let server = shared_server().await.unwrap();
    let path = unique_root("sessions");
    let mut mutexes = Vec::new();
    for _ in 0..4 {
        let zk = connect(&server.connect_string()).await;
        mutexes.push(InterProcessMutex::new(&zk, &path).unwrap());
    }
    assert_eq!(hammer(mutexes, 10).await, 40);
    no_nodes_left(&raw(&server.connect_string()).await, &path).await;
}

#[tokio::test]
async fn reentrant_acquires_nest_without_new_nodes() {
    // Curator's testReentrant: foo -> bar -> snafu.
    let server = shared_server().await.unwrap();
    let path = unique_root("reentrant");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let observer = raw(&server.connect_string()).await;

    let foo = mutex.acquire().await.unwrap();
    assert!(mutex.is_owned_by_current_task());
    let node = foo.node_path().to_string();
    let bar = mutex.acquire().await.unwrap();
    let snafu = mutex.acquire().await.unwrap();
    assert_eq!(snafu.hold_count(), 3);
    assert_eq!(bar.node_path(), node);
    assert_eq!(children(&observer, &path).await.len(), 1, "reentrant acquires create no nodes");

    snafu.release().await.unwrap();
    bar.release().await.unwrap();
    assert!(mutex.is_acquired_in_this_process(), "still held until the last release");
    assert!(observer.check_stat(&node).await.unwrap().is_some());
    foo.release().await.unwrap();
    assert!(!mutex.is_acquired_in_this_process());
    assert!(observer.check_stat(&node).await.unwrap().is_none());
}

#[tokio::test]
async fn a_second_task_waits_while_the_first_holds_reentrantly() {
    // Curator's testReentrant2Threads.
    let server = shared_server().await.unwrap();
    let path = unique_root("two-tasks");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();

    let (held_tx, held_rx) = tokio::sync::oneshot::channel();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let first = {
        let mutex = mutex.clone();
        tokio::spawn(async move {
            let a = mutex.acquire().await.unwrap();
            let b = mutex.acquire().await.unwrap();
            held_tx.send(()).unwrap();
            go_rx.await.unwrap();
            b.release().await.unwrap();
            a.release().await.unwrap();
        })
    };
    held_rx.await.unwrap();
    let second = {
        let mutex = mutex.clone();
        tokio::spawn(async move {
            assert!(!mutex.is_owned_by_current_task());
            assert!(mutex.acquire_timeout(Duration::from_millis(300)).await.unwrap().is_none());
            mutex.acquire().await.unwrap().release().await.unwrap();
        })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    go_tx.send(()).unwrap();
    first.await.unwrap();
    second.await.unwrap();
}

#[tokio::test]
async fn futures_joined_in_one_task_share_its_ownership() {
    let server = shared_server().await.unwrap();
    let path = unique_root("joined");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let task = tokio::spawn(async move {
        let (a, b) = tokio::join!(mutex.acquire(), mutex.acquire());
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.node_path(), b.node_path());
        assert_eq!(b.hold_count(), 2);
        a.release().await.unwrap();
        b.release().await.unwrap();
    });
    tokio::time::timeout(timing().wait(), task).await.expect("joined acquires deadlocked").unwrap();
}

#[tokio::test]
async fn a_guard_released_from_another_task_releases_its_owner() {
    let server = shared_server().await.unwrap();
    let path = unique_root("moved-guard");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    tokio::spawn(async move { guard.release().await.unwrap() }).await.unwrap();
    assert!(!mutex.is_acquired_in_this_process());
    let other = {
        let m = mutex.clone();
        tokio::spawn(async move { m.try_acquire().await.unwrap().is_some() })
    };
    assert!(other.await.unwrap());
}

#[tokio::test]
async fn a_timeout_or_failed_try_leaves_no_node() {
    let server = shared_server().await.unwrap();
    let path = unique_root("timeout");
    let (_holder_zk, _waiter_zk, holder, waiter) = two_contenders(&server.connect_string(), &path).await;
    let observer = raw(&server.connect_string()).await;
    let guard = holder.acquire().await.unwrap();

    assert!(waiter.acquire_timeout(Duration::from_millis(200)).await.unwrap().is_none());
    assert!(waiter.try_acquire().await.unwrap().is_none());
    eventually("the waiter's nodes to go", || async { children(&observer, &path).await.len() == 1 }).await;
    assert!(!waiter.is_acquired_in_this_process());
    guard.release().await.unwrap();
    let guard = waiter.try_acquire().await.unwrap().expect("free now");
    guard.release().await.unwrap();
    no_nodes_left(&observer, &path).await;
}

#[tokio::test]
async fn a_thousand_acquires_cancelled_at_random_points_leave_no_node() {
    let server = shared_server().await.unwrap();
    let path = unique_root("cancel");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let holder_zk = connect(&server.connect_string()).await;
    let holder = InterProcessMutex::new(&holder_zk, &path).unwrap();
    let observer = raw(&server.connect_string()).await;

    // Half the time someone holds the lock, so cancellations hit both creating and waiting.
    let mut rng = rand::rng();
    let mut held = None;
    for i in 0..1000 {
        if i % 100 == 0 {
            held = match held.take() {
                Some(guard) => {
                    zkr_recipes::locks::InterProcessMutexGuard::release(guard).await.unwrap();
                    None
                }
                None => Some(holder.acquire().await.unwrap()),
            };
        }
        let micros = rng.random_range(0..3000);
        let m = mutex.clone();
        let task = tokio::spawn(async move { m.acquire().await });
        tokio::time::sleep(Duration::from_micros(micros)).await;
        task.abort();
        if let Ok(Ok(guard)) = task.await {
            guard.release().await.unwrap();
        }
    }
    if let Some(guard) = held {
        guard.release().await.unwrap();
    }
    no_nodes_left(&observer, &path).await;
    let guard = mutex.acquire_timeout(timing().wait()).await.unwrap().expect("the lock still works");
    guard.release().await.unwrap();
    assert!(!mutex.is_acquired_in_this_process());
}

#[tokio::test]
async fn a_killed_session_while_holding_fires_lost_and_frees_the_lock() {
    // CURATOR-206 and Curator's testKilledSession: the other client gets the lock, and our
    // guard knows it lost it.
    let server = shared_server().await.unwrap();
    let path = unique_root("killed-holder");
    let zk = connect(&server.connect_string()).await;
    let other_zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let other = InterProcessMutex::new(&other_zk, &path).unwrap();

    let guard = mutex.acquire().await.unwrap();
    let waiting = {
        let o = other.clone();
        tokio::spawn(async move { o.acquire().await.unwrap() })
    };
    expire_session(guard.session().client(), &server.connect_string()).await.unwrap();
    let reason = tokio::time::timeout(timing().wait(), guard.lost()).await.expect("lost fires");
    assert!(matches!(reason, LostReason::ConnectionState | LostReason::SessionEnded), "{reason:?}");
    assert!(guard.is_lost());
    let theirs = tokio::time::timeout(timing().wait(), waiting)
        .await
        .expect("the other client gets the lock")
        .unwrap();
    assert!(guard.fencing_token() < theirs.fencing_token(), "the new holder's token is larger");
    assert!(matches!(guard.release().await, Err(LockError::Lost { .. })));
    theirs.release().await.unwrap();
    no_nodes_left(&raw(&server.connect_string()).await, &path).await;
}

#[tokio::test]
async fn a_killed_session_while_waiting_starts_over_and_gets_the_lock() {
    let server = shared_server().await.unwrap();
    let path = unique_root("killed-waiter");
    let (_holder_zk, waiter_zk, holder, waiter) = two_contenders(&server.connect_string(), &path).await;
    let observer = raw(&server.connect_string()).await;

    let guard = holder.acquire().await.unwrap();
    let waiting = {
        let w = waiter.clone();
        tokio::spawn(async move { w.acquire().await })
    };
    eventually("the waiter to queue", || async { children(&observer, &path).await.len() == 2 }).await;
    let old = waiter_zk.session().await.unwrap();
    expire_session(old.client(), &server.connect_string()).await.unwrap();
    eventually("the waiter to queue again on its new session", || async {
        waiter_zk.generation() > old.generation() && children(&observer, &path).await.len() == 2
    })
    .await;
    guard.release().await.unwrap();
    let theirs = tokio::time::timeout(timing().wait(), waiting).await.unwrap().unwrap().unwrap();
    assert_eq!(theirs.session().generation(), old.generation() + 1);
    theirs.release().await.unwrap();
    no_nodes_left(&observer, &path).await;
}

/// Two sessions of their own: one holds the lock at `path`, the other is queued behind it.
struct HolderAndWaiter {
    _clients: (ZkClient, ZkClient),
    guard: InterProcessMutexGuard,
    waiting: tokio::task::JoinHandle<Result<InterProcessMutexGuard, LockError>>,
}

async fn holder_and_waiter(connect_string: String, path: &str) -> HolderAndWaiter {
    let zk_a = connect_with_session(connect_string.clone(), 10).await;
    let zk_b = connect_with_session(connect_string.clone(), 10).await;
    let a = InterProcessMutex::new(&zk_a, path).unwrap();
    let b = InterProcessMutex::new(&zk_b, path).unwrap();
    let guard = a.acquire().await.unwrap();
    let waiting = tokio::spawn(async move { b.acquire().await });
    let observer = raw(&connect_string).await;
    eventually("the waiter to queue", || async { children(&observer, path).await.len() == 2 }).await;
    HolderAndWaiter { _clients: (zk_a, zk_b), guard, waiting }
}

#[tokio::test]
async fn server_restart_while_holding_and_waiting() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("restart");
    let HolderAndWaiter { _clients, guard, waiting } =
        holder_and_waiter(server.connect_string(), &path).await;

    server.restart().await.unwrap();
    // The standard error policy counts Suspended as losing the lock; the node survives, so b
    // still waits until a releases.
    tokio::time::timeout(timing().wait(), guard.lost()).await.expect("Suspended marks the lock lost");
    assert!(!waiting.is_finished());
    assert!(matches!(guard.release().await, Err(LockError::Lost { .. })));
    let theirs = tokio::time::timeout(timing().wait(), waiting).await.unwrap().unwrap().unwrap();
    // b got the lock after the restart; a reconnect flap of a freshly restarted server may
    // still mark it lost later (the standard policy), which release reports.
    match theirs.release().await {
        Ok(()) | Err(LockError::Lost { reason: LostReason::ConnectionState, .. }) => {}
        Err(e) => panic!("release failed: {e}"),
    }
    no_nodes_left(&raw(&server.connect_string()).await, &path).await;
}

#[tokio::test]
async fn leader_kill_while_holding_and_waiting() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let path = unique_root("leader-kill");
    let HolderAndWaiter { _clients, guard, waiting } =
        holder_and_waiter(cluster.connect_string(), &path).await;
    let observer = raw(&cluster.connect_string()).await;

    cluster.kill(cluster.leader().await.expect("a leader")).unwrap();
    let _ = tokio::time::timeout(timing().wait(), guard.lost()).await;
    let _ = guard.release().await;
    let theirs = tokio::time::timeout(timing().wait(), waiting).await.unwrap().unwrap().unwrap();
    theirs.release().await.unwrap();
    no_nodes_left(&observer, &path).await;
}

#[tokio::test]
async fn a_lost_create_reply_leaves_exactly_one_node_and_the_lock_is_taken() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = unique_root("lost-reply");
    let zk = builder(&proxy.connect_string()).connect().await.unwrap();
    zk.create_parents(&format!("{path}/x")).await.unwrap();
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let observer = raw(&server.connect_string()).await;

    proxy.hold_replies();
    let acquiring = {
        let m = mutex.clone();
        tokio::spawn(async move { m.acquire().await })
    };
    eventually("the create to reach the server", || async { !children(&observer, &path).await.is_empty() })
        .await;
    proxy.cut();
    proxy.heal();
    let guard = tokio::time::timeout(timing().wait(), acquiring).await.unwrap().unwrap().unwrap();
    assert_eq!(
        children(&observer, &path).await,
        vec![zkr_connection::path::node_name(guard.node_path()).to_string()]
    );
    guard.release().await.unwrap();
    no_nodes_left(&observer, &path).await;
}

#[tokio::test]
async fn guarded_writes_stop_when_the_lock_node_is_gone() {
    let server = shared_server().await.unwrap();
    let path = unique_root("guarded");
    let data = format!("{path}-data");
    let zk = connect(&server.connect_string()).await;
    zk.create(&data, b"0", CreateMode::Persistent).await.unwrap();
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    guard.set_data(&data, b"1", None).await.unwrap();
    let (created, _) = guard.create(&format!("{data}/child"), b"", CreateMode::Persistent).await.unwrap();
    assert_eq!(created, format!("{data}/child"));
    let txn = guard.transaction().unwrap().set_data(&data, b"1b", Some(1)).delete(&created, None);
    let results = guard.commit(txn).await.unwrap();
    assert_eq!(results.len(), 2, "the results of our operations, not the lock check's: {results:?}");
    let stale = guard.transaction().unwrap().set_data(&data, b"1c", Some(1));
    let err = guard.commit(stale).await.unwrap_err();
    assert!(
        matches!(&err, LockError::Connection(e @ zkr_connection::Error::TransactionFailed { index: 1, .. }) if e.is_bad_version()),
        "{err:?}"
    );

    // Someone deletes our lock node (an operator "breaking" the lock).
    raw(&server.connect_string()).await.delete(guard.node_path(), None).await.unwrap();
    let reason = tokio::time::timeout(timing().wait(), guard.lost()).await.unwrap();
    assert_eq!(reason, LostReason::NodeDeleted);
    let err = guard.set_data(&data, b"2", None).await.unwrap_err();
    assert!(matches!(err, LockError::Lost { reason: LostReason::NodeDeleted, .. }), "{err}");
    let (value, _) = zk
        .retry(|s| {
            let d = data.clone();
            async move { s.client().get_data(&d).await }
        })
        .await
        .unwrap();
    assert_eq!(value, b"1b", "the guarded write after the loss was not applied");
    let _ = guard.release().await;
}

#[tokio::test]
async fn a_release_that_finds_its_node_gone_says_the_lock_was_lost() {
    // Nobody asked `lost()`, so the guard cannot know before its release: the delete finds the
    // node gone (an operator broke the lock, or an expiry nobody had noticed yet took it), and
    // the holder is told, where Curator's release ignores it. The mutual-exclusion checker's
    // history counts a hold up to its release's answer unless the holder was told.
    let server = shared_server().await.unwrap();
    let path = unique_root("release-finds-gone");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    raw(&server.connect_string()).await.delete(guard.node_path(), None).await.unwrap();
    let err = guard.release().await.unwrap_err();
    assert!(matches!(err, LockError::Lost { reason: LostReason::NodeDeleted, .. }), "{err}");
    // The lock is free and works on.
    let again = mutex.acquire().await.unwrap();
    again.release().await.unwrap();
    no_nodes_left(&raw(&server.connect_string()).await, &path).await;
}

#[tokio::test]
async fn fencing_tokens_grow_with_every_holder() {
    let server = shared_server().await.unwrap();
    let path = unique_root("fencing");
    let mut last = i64::MIN;
    for _ in 0..5 {
        let zk = connect(&server.connect_string()).await;
        let mutex = InterProcessMutex::new(&zk, &path).unwrap();
        let guard = mutex.acquire().await.unwrap();
        assert!(guard.fencing_token() > last);
        last = guard.fencing_token();
        guard.release().await.unwrap();
    }
}

#[tokio::test]
async fn the_kazoo_driver_names_nodes_like_kazoo_and_excludes() {
    let server = shared_server().await.unwrap();
    let path = unique_root("kazoo-driver");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::with_driver(&zk, &path, KazooLockDriver).unwrap();
    let guard = mutex.acquire().await.unwrap();
    let name = zkr_connection::path::node_name(guard.node_path()).to_string();
    assert_eq!(name.len(), 32 + "__lock__".len() + 10, "{name}");
    assert!(
        name[..32].bytes().all(|b| b.is_ascii_hexdigit()) && name[32..].starts_with("__lock__0"),
        "{name}"
    );
    guard.release().await.unwrap();
    let mutexes = (0..4)
        .map(|_| InterProcessMutex::with_driver(&zk, &path, KazooLockDriver).unwrap())
        .collect::<Vec<_>>();
    let inside = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for m in mutexes {
        let inside = inside.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                let g = m.acquire().await.unwrap();
                assert!(!inside.swap(true, Ordering::SeqCst));
                tokio::task::yield_now().await;
                inside.store(false, Ordering::SeqCst);
                g.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test]
async fn planted_nodes_never_become_the_holder() {
    let server = shared_server().await.unwrap();
    let path = unique_root("planted");
    let observer = raw(&server.connect_string()).await;
    let zk = connect(&server.connect_string()).await;
    zk.create_parents(&format!("{path}/x")).await.unwrap();
    for name in ["0000000000", "lock-", "aaa", "lock-99999999999", "_c_-lock-x"] {
        observer
            .create(
                &format!("{path}/{name}"),
                b"",
                &CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()),
            )
            .await
            .unwrap();
    }
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let guard = tokio::time::timeout(timing().wait(), mutex.acquire())
        .await
        .expect("planted nodes do not block")
        .unwrap();
    assert_eq!(mutex.participant_nodes().await.unwrap(), vec![guard.node_path().to_string()]);
    guard.release().await.unwrap();
}

#[tokio::test]
async fn bad_input_gives_typed_errors() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    assert!(matches!(InterProcessMutex::new(&zk, "/"), Err(LockError::InvalidArgument(_))));
    for bad in ["", "relative", "/a/", "/a//b", "/a/../b"] {
        let err = InterProcessMutex::new(&zk, bad).unwrap_err();
        assert!(matches!(err, LockError::InvalidArgument(_)), "{bad:?}: {err}");
        assert_eq!(err.kind(), zkr_connection::ErrorKind::Usage);
    }
}

#[tokio::test]
async fn participant_nodes_list_the_holder_first() {
    let server = shared_server().await.unwrap();
    let path = unique_root("participants");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    assert!(mutex.participant_nodes().await.unwrap().is_empty());
    let guard = mutex.acquire().await.unwrap();
    let waiter = {
        let m = mutex.clone();
        tokio::spawn(async move { m.acquire().await.unwrap().release().await.unwrap() })
    };
    let observer = raw(&server.connect_string()).await;
    eventually("the waiter to queue", || async { children(&observer, &path).await.len() == 2 }).await;
    let participants = mutex.participant_nodes().await.unwrap();
    assert_eq!(participants.len(), 2);
    assert_eq!(participants[0], guard.node_path());
    guard.release().await.unwrap();
    waiter.await.unwrap();
}

#[tokio::test]
async fn acquire_timeout_is_a_real_deadline_even_with_the_server_down() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("deadline");
    let zk = connect_with_session(server.connect_string(), 20).await;
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    server.stop().unwrap();
    let started = std::time::Instant::now();
    let outcome = mutex.acquire_timeout(Duration::from_millis(800)).await;
    let took = started.elapsed();
    assert!(matches!(outcome, Ok(None)), "{outcome:?}");
    // The bound holds within scheduling noise, not within the 20 s session or retry sleeps.
    assert!(took < Duration::from_secs(5), "acquire_timeout(800ms) took {took:?}");
    server.restart().await.unwrap();
    let guard = mutex.acquire_timeout(timing().wait()).await.unwrap().expect("works again");
    guard.release().await.unwrap();
    no_nodes_left(&raw(&server.connect_string()).await, &path).await;
}

/// The acquire's fast path rests on this server behaviour: a sequential child is numbered by
/// its parent's count of child creates, and the parent's `Stat` gives that count as
/// `(cversion + num_children) / 2` (`cversion` counts creates and deletes). A listing sent just
/// before our create therefore proves itself complete when our number equals that count.
#[tokio::test]
async fn sequence_numbers_count_the_creates_the_parents_stat_reports() {
    let server = shared_server().await.unwrap();
    let path = unique_root("cversion");
    let client = raw(&server.connect_string()).await;
    client
        .create(&path, b"", &CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()))
        .await
        .unwrap();
    let child = format!("{path}/lock-");
    let options = CreateMode::EphemeralSequential.with_acls(zookeeper_client::Acls::anyone_all());
    let mut kept = Vec::new();
    for round in 0..8 {
        let (_, before) = client.get_children(&path).await.unwrap();
        let (_, seq) = client.create(&child, b"", &options).await.unwrap();
        let creates = (before.cversion + before.num_children) / 2;
        assert_eq!(seq.into_i64(), i64::from(creates), "round {round}: {before:?}");
        // Keep every third node, delete the rest, and delete an old one now and then.
        if round % 3 == 0 {
            kept.push(format!("{child}{seq}"));
        } else {
            client.delete(&format!("{child}{seq}"), None).await.unwrap();
        }
        if round == 4 {
            client.delete(&kept.remove(0), None).await.unwrap();
        }
    }
    assert_eq!(children(&client, &path).await.len(), kept.len());
}

/// Acquire + release cycles on `mutex`.
async fn cycles(mutex: &InterProcessMutex, n: usize) {
    for _ in 0..n {
        mutex.acquire().await.unwrap().release().await.unwrap();
    }
}

/// While `holder` holds the lock, `other` does not get it within `wait`.
async fn assert_excluded(holder: &InterProcessMutex, other: &InterProcessMutex, wait: Duration) {
    let held = holder.acquire().await.unwrap();
    assert!(other.acquire_timeout(wait).await.unwrap().is_none(), "both held the lock");
    held.release().await.unwrap();
}

/// The packets a server has received.
async fn packets_received(server: &TestingServer) -> u64 {
    mntr_counter(server, "zk_packets_received").await
}

#[tokio::test]
async fn a_lock_this_process_uses_alone_costs_one_create_and_one_delete_per_cycle() {
    // A server of its own: the packet count must be ours alone.
    let server = TestingServer::start().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, "/alone").unwrap();
    // A few quiet acquires (each with its listing) set the children view up; give its
    // watch and listing a moment to be answered.
    cycles(&mutex, 10).await;
    let before = packets_received(&server).await;
    cycles(&mutex, 50).await;
    let sent = packets_received(&server).await - before;
    // Two requests per cycle (create, delete), a ping or two; with a listing it would be 150.
    assert!((100..=105).contains(&sent), "{sent} packets for 50 cycles");
    zk.close().await;
}

#[tokio::test]
async fn the_children_view_never_grants_a_lock_another_session_holds() {
    let server = shared_server().await.unwrap();
    let path = unique_root("view-race");
    let (zk_a, zk_b, a, b) = two_contenders(&server.connect_string(), &path).await;
    let inside = Arc::new(AtomicBool::new(false));
    let holder = |mutex: InterProcessMutex, inside: Arc<AtomicBool>| async move {
        let guard = mutex.acquire().await.unwrap();
        assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
        tokio::task::yield_now().await;
        inside.store(false, Ordering::SeqCst);
        guard.release().await.unwrap();
    };
    for _ in 0..30 {
        // Alone for a while (the view goes live), then both at once: b's create races a's.
        cycles(&a, 5).await;
        let (ra, rb) = tokio::join!(
            tokio::spawn(holder(a.clone(), inside.clone())),
            tokio::spawn(holder(b.clone(), inside.clone()))
        );
        ra.unwrap();
        rb.unwrap();
        // And b holding while a, on its view, tries.
        assert_excluded(&b, &a, Duration::from_millis(20)).await;
    }
    no_nodes_left(&raw(&server.connect_string()).await, &path).await;
    zk_a.close().await;
    zk_b.close().await;
}

#[tokio::test]
async fn changes_missed_while_disconnected_do_not_fool_the_children_view() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = unique_root("view-disconnect");
    let zk_a = connect_with_session(proxy.connect_string(), 30).await;
    let a = InterProcessMutex::new(&zk_a, &path).unwrap();
    let zk_b = connect(&server.connect_string()).await;
    let b = InterProcessMutex::new(&zk_b, &path).unwrap();
    cycles(&a, 10).await;
    // a hears nothing while b takes the lock, then a's connection is reset and comes back
    // on the same session.
    proxy.blackhole();
    let held = b.acquire().await.unwrap();
    let generation = zk_a.generation();
    proxy.cut();
    proxy.heal();
    assert!(a.acquire_timeout(Duration::from_secs(1)).await.unwrap().is_none(), "a took b's lock");
    assert_eq!(zk_a.generation(), generation, "the session survived");
    held.release().await.unwrap();
    a.acquire().await.unwrap().release().await.unwrap();
    // Quiet again: the view comes back and still excludes.
    cycles(&a, 10).await;
    assert_excluded(&b, &a, Duration::from_millis(200)).await;
    no_nodes_left(&raw(&server.connect_string()).await, &path).await;
    zk_a.close().await;
    zk_b.close().await;
}

#[tokio::test]
async fn the_children_view_ends_when_the_leader_dies() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let path = unique_root("view-leader-kill");
    let zk_a = connect_with_session(cluster.connect_string(), 30).await;
    let a = InterProcessMutex::new(&zk_a, &path).unwrap();
    cycles(&a, 10).await;
    let generation = zk_a.generation();
    // Every follower drops its clients when the leader goes; a reconnects on the same session.
    cluster.kill(cluster.leader().await.expect("a leader")).unwrap();
    let zk_b = connect_with_session(cluster.connect_string(), 30).await;
    let b = InterProcessMutex::new(&zk_b, &path).unwrap();
    let held = b.acquire().await.unwrap();
    assert!(a.acquire_timeout(Duration::from_secs(2)).await.unwrap().is_none(), "a took b's lock");
    assert_eq!(zk_a.generation(), generation, "the session survived");
    held.release().await.unwrap();
    cycles(&a, 10).await;
    assert_excluded(&b, &a, Duration::from_millis(200)).await;
    no_nodes_left(&raw(&cluster.connect_string()).await, &path).await;
    zk_a.close().await;
    zk_b.close().await;
}

#[tokio::test]
async fn two_sessions_hand_the_lock_over_without_listing() {
    // A server of its own: the packet count must be ours alone.
    let server = TestingServer::start().await.unwrap();
    let mut sessions = Vec::new();
    for _ in 0..2 {
        sessions.push(connect(&server.connect_string()).await);
    }
    let mutexes: Vec<InterProcessMutex> =
        sessions.iter().map(|zk| InterProcessMutex::new(zk, "/handover").unwrap()).collect();
    // A few acquires that meet a short queue and one other user set both children views up.
    assert_eq!(hammer(mutexes.clone(), 10).await, 20);
    let before = packets_received(&server).await;
    let acquisitions = hammer(mutexes, 30).await as u64;
    let sent = packets_received(&server).await - before;
    // A create and a delete per acquisition (120), and a few pings or listings where a view was
    // late. Waiting on the node ahead instead costs a listing and a watch more: about 4
    // requests per acquisition.
    assert_eq!(acquisitions, 60);
    assert!(sent <= acquisitions * 5 / 2, "{sent} packets for {acquisitions} acquisitions");
    for zk in &sessions {
        zk.close().await;
    }
}

#[tokio::test]
async fn eight_sessions_wait_on_the_node_ahead_not_on_children_views() {
    // A server of its own: the packet count must be ours alone.
    let server = TestingServer::start().await.unwrap();
    let mut sessions = Vec::new();
    for _ in 0..8 {
        sessions.push(connect(&server.connect_string()).await);
    }
    let mutexes: Vec<InterProcessMutex> =
        sessions.iter().map(|zk| InterProcessMutex::new(zk, "/busy").unwrap()).collect();
    assert_eq!(hammer(mutexes.clone(), 5).await, 40);
    let before = mntr_counter(&server, "zk_packets_sent").await;
    let acquisitions = hammer(mutexes, 20).await as u64;
    let sent = mntr_counter(&server, "zk_packets_sent").await - before;
    // Waiting on the node ahead: about five replies and one notification per acquisition.
    // With a children view each, every create and delete would go to all eight sessions: 18.
    assert_eq!(acquisitions, 160);
    assert!(sent <= acquisitions * 8, "{sent} packets sent for {acquisitions} acquisitions");
    for zk in &sessions {
        zk.close().await;
    }
}

#[tokio::test]
async fn a_waiter_on_the_children_view_still_gets_the_lock_after_missing_the_release() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = unique_root("view-waiter-disconnect");
    let observer = raw(&server.connect_string()).await;
    let zk_a = connect(&server.connect_string()).await;
    let a = InterProcessMutex::new(&zk_a, &path).unwrap();
    let zk_b = connect_with_session(proxy.connect_string(), 30).await;
    let b = InterProcessMutex::new(&zk_b, &path).unwrap();
    let zk_c = connect(&server.connect_string()).await;
    let c = InterProcessMutex::new(&zk_c, &path).unwrap();
    // Both meet a short queue a few times: b's view goes live.
    hammer(vec![a.clone(), b.clone()], 10).await;
    let held = a.acquire().await.unwrap();
    let waiter = tokio::spawn(async move { b.acquire().await.map(|guard| (b, guard)) });
    eventually("b to queue", || async { children(&observer, &path).await.len() == 2 }).await;
    // b hears nothing of a's release, then its connection is reset and comes back on the
    // same session. c queues behind b meanwhile.
    let generation = zk_b.generation();
    proxy.blackhole();
    held.release().await.unwrap();
    let third = tokio::spawn(async move { c.acquire().await.map(|guard| (c, guard)) });
    eventually("c to queue", || async { children(&observer, &path).await.len() == 2 }).await;
    proxy.cut();
    proxy.heal();
    let (b, guard) = waiter.await.unwrap().unwrap();
    assert_eq!(zk_b.generation(), generation, "the session survived");
    assert!(!third.is_finished(), "c took b's lock");
    guard.release().await.unwrap();
    let (c, guard) = third.await.unwrap().unwrap();
    guard.release().await.unwrap();
    assert_excluded(&c, &b, Duration::from_millis(200)).await;
    no_nodes_left(&observer, &path).await;
    for zk in [zk_a, zk_b, zk_c] {
        zk.close().await;
    }
}

/// The server's count of watches.
async fn watch_count(server: &TestingServer) -> u64 {
    mntr_counter(server, "zk_watch_count").await
}

#[tokio::test]
async fn a_queue_longer_than_sixteen_drops_the_children_view_and_its_watch() {
    // A server of its own: the watch count must be ours alone.
    let server = TestingServer::start().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, "/long").unwrap();
    assert_eq!(watch_count(&server).await, 0);
    // What one persistent recursive watch counts: 2 (data and children) before 3.9, 1 after.
    let view = {
        let probe = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
        let _watch =
            probe.watch("/probe", zookeeper_client::AddWatchMode::PersistentRecursive).await.unwrap();
        let count = watch_count(&server).await;
        drop(probe);
        eventually("the probe's watch gone", || async { watch_count(&server).await == 0 }).await;
        count
    };
    assert!(view >= 1);
    cycles(&mutex, 10).await;
    eventually("the children view's watch", || async { watch_count(&server).await == view }).await;
    // 17 other sessions queue up, one holding and 16 waiting, each waiter with a data watch on
    // the node ahead: with the view still on there would be 18 watches.
    let mut others = Vec::new();
    for _ in 0..17 {
        others.push(connect(&server.connect_string()).await);
    }
    let held = InterProcessMutex::new(&others[0], "/long").unwrap().acquire().await.unwrap();
    let mut queued = Vec::new();
    for zk in &others[1..] {
        let m = InterProcessMutex::new(zk, "/long").unwrap();
        queued.push(tokio::spawn(async move { m.acquire().await.unwrap().release().await.unwrap() }));
    }
    eventually("16 waiters' watches and no view", || async { watch_count(&server).await == 16 }).await;
    held.release().await.unwrap();
    for q in queued {
        q.await.unwrap();
    }
    // Quiet again: the view comes back.
    cycles(&mutex, 10).await;
    eventually("the children view's watch again", || async { watch_count(&server).await == view }).await;
    for zk in others.iter().chain([&zk]) {
        zk.close().await;
    }
}

/// The future of a waiting acquire is what each of 10,000 waiters in one process pays for
/// (docs/benchmarks.md, "10,000 waiters again": 5,896 bytes when it had regressed, 3,184 after;
/// a little more here, with the metrics feature on).
#[tokio::test]
async fn the_waiting_acquire_future_stays_small() {
    let zk = zkr_connection::ZkClient::builder("127.0.0.1:1").start().await.unwrap();
    let mutex = InterProcessMutex::new(&zk, "/size").unwrap();
    let size = std::mem::size_of_val(&mutex.acquire());
    assert!(size <= 4096, "a waiting acquire takes {size} bytes");
}

/// The driver the docs show (`LockInternalsDriver`'s example): persistent contender nodes,
/// otherwise standard.
#[derive(Debug, Default)]
struct PersistentLockDriver(StandardLockInternalsDriver);

impl LockInternalsDriver for PersistentLockDriver {
    fn contender(&self, lock_name: &str) -> ContenderSpec {
        ContenderSpec { mode: CreateMode::PersistentSequential, ..self.0.contender(lock_name) }
    }
    fn fix_for_sorting<'a>(&self, name: &'a str, lock_name: &str) -> Option<&'a str> {
        self.0.fix_for_sorting(name, lock_name)
    }
}

/// A user-written driver and a lock name of our own (`job-`), against a real server: two
/// users of one client and a third session exclude each other; the contender nodes carry the
/// name and the driver's create mode (persistent: no ephemeral owner), and none is left.
/// A bad lock name is refused before anything is sent (issue 49 item 7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_written_driver_and_lock_name_run_against_a_real_server() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique_root("user-driver");
    let (zk_a, zk_b) = (connect(&cs).await, connect(&cs).await);
    let mutex = |zk: &ZkClient| {
        InterProcessMutex::with_lock_name(zk, &path, "job-", PersistentLockDriver::default()).unwrap()
    };
    let observer = raw(&cs).await;
    let held = mutex(&zk_a).acquire().await.unwrap();
    let names = children(&observer, &path).await;
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].starts_with("_c_") && names[0].contains("-job-0000000000"), "{names:?}");
    let (_, stat) = observer.get_data(&format!("{path}/{}", names[0])).await.unwrap();
    assert_eq!(stat.ephemeral_owner, 0, "the driver's mode: persistent");
    held.release().await.unwrap();
    assert_eq!(hammer(vec![mutex(&zk_a), mutex(&zk_a), mutex(&zk_b)], 5).await, 15);
    no_nodes_left(&observer, &path).await;

    let standard =
        InterProcessMutex::with_lock_name(&zk_a, &path, "job-", StandardLockInternalsDriver).unwrap();
    let guard = standard.acquire().await.unwrap();
    assert!(children(&observer, &path).await[0].contains("-job-"));
    guard.release().await.unwrap();
    for bad in ["", "a/b", "x\u{1}"] {
        let refused = InterProcessMutex::with_lock_name(&zk_a, &path, bad, StandardLockInternalsDriver);
        assert!(matches!(refused, Err(LockError::InvalidArgument(_))), "{bad:?}: {refused:?}");
    }
    no_nodes_left(&observer, &path).await;
}

/// Forty tasks of one process queued on one mutex, too long a queue for the children view (each
/// waits on the node ahead), drain in about one request per hand-over, the release's delete: a
/// waiter whose node ahead this process released while it held the lock knows it is first
/// without listing the queue (the lock internals' `ReleasedHeads`, which remembers a release
/// only while a local waiter watches that node): 42 packets for 41 hand-overs when measured.
/// Listing again at each hand-over costs a listing more: 81 packets when `ReleasedHeads` was
/// switched off.
#[tokio::test]
async fn a_long_local_queue_drains_without_listing_at_each_hand_over() {
    // A server of its own: the packet count must be ours alone.
    let server = TestingServer::start().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let observer = raw(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, "/local").unwrap();
    let held = mutex.acquire().await.unwrap();
    let mut queued = Vec::new();
    for _ in 0..40 {
        let m = mutex.clone();
        queued.push(tokio::spawn(async move { m.acquire().await.unwrap().release().await.unwrap() }));
    }
    eventually("40 waiters queued", || async { children(&observer, "/local").await.len() == 41 }).await;
    eventually("each waiter's watch on the node ahead", || async { watch_count(&server).await >= 40 }).await;
    let before = packets_received(&server).await;
    held.release().await.unwrap();
    for q in queued {
        q.await.unwrap();
    }
    let received = packets_received(&server).await - before;
    assert!(received <= 41 * 3 / 2, "{received} packets for 41 hand-overs");
    no_nodes_left(&observer, "/local").await;
    zk.close().await;
}

/// A mutex at `path` on `zk` with the prompt hand-over.
fn prompt_mutex(zk: &ZkClient, path: &str) -> InterProcessMutex {
    let internals = LockInternals::new(zk, path, "lock-", StandardLockInternalsDriver, 1).unwrap();
    InterProcessMutex::from_internals(internals.prompt_hand_over()).unwrap()
}

#[tokio::test]
async fn a_prompt_hand_over_excludes_across_sessions_and_tasks() {
    // Five sessions, two tasks on each: waiters queue up to nine deep, most watching two nodes.
    let server = shared_server().await.unwrap();
    let path = unique_root("prompt");
    let mut mutexes = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..5 {
        let zk = connect(&server.connect_string()).await;
        let mutex = prompt_mutex(&zk, &path);
        mutexes.extend([mutex.clone(), mutex]);
        clients.push(zk);
    }
    assert_eq!(hammer(mutexes, 6).await, 60);
    no_nodes_left(&raw(&server.connect_string()).await, &path).await;
}

#[tokio::test]
async fn a_prompt_waiter_whose_nodes_ahead_go_without_holding_waits_its_turn() {
    // Holder, then waiters one, two and three on sessions of their own: three watches two and
    // one. One's session expires: three lists and finds two still behind the holder. Then two
    // gives up: three must not take the lock while the holder holds. The lock then goes to
    // three, and to one (queued again on its new session) last.
    let server = shared_server().await.unwrap();
    let path = unique_root("prompt-expiry");
    let observer = raw(&server.connect_string()).await;
    let mut clients = Vec::new();
    let mut mutexes = Vec::new();
    for _ in 0..4 {
        let zk = connect(&server.connect_string()).await;
        mutexes.push(prompt_mutex(&zk, &path));
        clients.push(zk);
    }
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let holder = mutexes[0].acquire().await.unwrap();
    let mut waiting = Vec::new();
    for (i, mutex) in mutexes.iter().enumerate().skip(1) {
        let (mutex, order) = (mutex.clone(), order.clone());
        waiting.push(tokio::spawn(async move {
            let guard = mutex.acquire().await.unwrap();
            order.lock().unwrap().push(i);
            tokio::task::yield_now().await;
            guard.release().await.unwrap();
        }));
        eventually("the waiter to queue", || async { children(&observer, &path).await.len() == i + 1 }).await;
    }
    let one = clients[1].session().await.unwrap();
    expire_session(one.client(), &server.connect_string()).await.unwrap();
    eventually("one to queue again on its new session", || async {
        clients[1].generation() > one.generation() && children(&observer, &path).await.len() == 4
    })
    .await;
    // Two gives up: its node goes (in the background) while the holder holds.
    waiting.remove(1).abort();
    eventually("two's node to go", || async { children(&observer, &path).await.len() <= 3 }).await;
    // No event says that something did not happen: three is given time to act on two's going.
    tokio::time::sleep(timing().multiple(Duration::from_millis(500))).await;
    assert!(
        order.lock().unwrap().is_empty(),
        "{:?} took the lock while the holder held it",
        order.lock().unwrap()
    );
    holder.release().await.unwrap();
    for task in waiting {
        tokio::time::timeout(timing().wait(), task).await.unwrap().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![3, 1]);
    no_nodes_left(&observer, &path).await;
}
