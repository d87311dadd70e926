//! InterProcessReadWriteLock against real ZooKeeper servers: readers share, writers exclude,
//! queue order between them, downgrade, no upgrade, reentrancy, nothing left behind, and a
//! shared lock with Apache Curator's InterProcessReadWriteLock.

use std::time::Duration;

use zkr_integration_tests::{children, connect, connect_with_session, eventually, raw, timing, unique_root};
use zkr_recipes::locks::{InterProcessReadWriteLock, LockError};
use zkr_testing::shared_server;

const SHORT: Duration = Duration::from_millis(300);

/// `n` read-write locks at `path`, each on its own session of 30 s (scaled by `Timing`).
/// `zookeeper-client` gives a connection up after two fifths of the session timeout without a
/// reply, and the standard error policy counts that as a loss: with the tests' 3 s session, a
/// 1.2 s stall of a busy 2-core machine made a reader's `release` report `Lost {
/// ConnectionState }` (the 3.6.4 compatibility run, 2026-12-06). These tests are about
/// sharing and order; the sessions' losses have their own tests below and in `lock_mutex`.
async fn locks(
    cs: &str,
    path: &str,
    n: usize,
) -> (Vec<zkr_connection::ZkClient>, Vec<InterProcessReadWriteLock>) {
    let mut clients = Vec::new();
    let mut locks = Vec::new();
    for _ in 0..n {
        let zk = connect_with_session(cs, 30).await;
        locks.push(InterProcessReadWriteLock::new(&zk, path).unwrap());
        clients.push(zk);
    }
    (clients, locks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_a_writer_excludes_everyone() {
    let server = shared_server().await.unwrap();
    let path = unique_root("rw-share");
    let (_clients, l) = locks(&server.connect_string(), &path, 3).await;
    let a = l[0].read().await.unwrap();
    let b = l[1].read().await.unwrap();
    assert!(l[2].write_timeout(SHORT).await.unwrap().is_none(), "no writer while readers hold");
    a.release().await.unwrap();
    assert!(l[2].write_timeout(SHORT).await.unwrap().is_none(), "nor while one reader holds");
    b.release().await.unwrap();
    let w = l[2].write().await.unwrap();
    assert!(l[0].read_timeout(SHORT).await.unwrap().is_none(), "no reader while a writer holds");
    assert!(l[1].write_timeout(SHORT).await.unwrap().is_none(), "no second writer");
    w.release().await.unwrap();
    let observer = raw(&server.connect_string()).await;
    eventually("no node left", || async { children(&observer, &path).await.is_empty() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_queued_behind_a_writer_waits_for_it() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique_root("rw-order");
    let (_clients, l) = locks(&cs, &path, 3).await;
    let observer = raw(&cs).await;
    let reading = l[0].read().await.unwrap();
    let writer = tokio::spawn({
        let w = l[1].clone();
        async move {
            let g = w.write().await.unwrap();
            g.release().await.unwrap();
        }
    });
    eventually("the writer to queue", || async { children(&observer, &path).await.len() == 2 }).await;
    assert!(l[2].read_timeout(SHORT).await.unwrap().is_none(), "a reader behind a queued writer waits");
    assert!(!writer.is_finished());
    reading.release().await.unwrap();
    tokio::time::timeout(timing().wait(), writer).await.unwrap().unwrap();
    let later = l[2].read_timeout(timing().wait()).await.unwrap();
    assert!(later.is_some(), "the reader gets it after the writer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_downgrades_and_queued_writers_still_wait() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique_root("rw-downgrade");
    let (_clients, l) = locks(&cs, &path, 3).await;
    let observer = raw(&cs).await;
    let writing = l[0].write().await.unwrap();
    let other_writer = tokio::spawn({
        let w = l[1].clone();
        async move { w.write().await.unwrap().release().await.unwrap() }
    });
    eventually("the other writer to queue", || async { children(&observer, &path).await.len() == 2 }).await;
    // The downgrade: same task, read while holding write; granted at once, at the writer's place.
    let reading = tokio::time::timeout(SHORT, l[0].read()).await.expect("granted at once").unwrap();
    let sequence = |p: &str| p[p.len() - 10..].to_owned();
    assert_eq!(sequence(reading.node_path()), sequence(writing.node_path()));
    writing.release().await.unwrap();
    tokio::time::sleep(SHORT).await;
    assert!(!other_writer.is_finished(), "a queued writer still waits for the downgraded read lock");
    assert!(l[2].read_timeout(SHORT).await.unwrap().is_none(), "a reader behind the queued writer waits too");
    reading.release().await.unwrap();
    tokio::time::timeout(timing().wait(), other_writer).await.unwrap().unwrap();
    eventually("no node left", || async { children(&observer, &path).await.is_empty() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_upgrade_and_both_sides_are_reentrant() {
    let server = shared_server().await.unwrap();
    let path = unique_root("rw-upgrade");
    let (_clients, l) = locks(&server.connect_string(), &path, 1).await;
    let r1 = l[0].read().await.unwrap();
    let r2 = l[0].read().await.unwrap();
    assert_eq!(r2.hold_count(), 2);
    assert!(matches!(l[0].write().await, Err(LockError::IllegalState { .. })));
    assert!(matches!(l[0].write_timeout(SHORT).await, Err(LockError::IllegalState { .. })));
    r2.release().await.unwrap();
    r1.release().await.unwrap();
    let w1 = l[0].write().await.unwrap();
    let w2 = l[0].write().await.unwrap();
    assert_eq!(w2.hold_count(), 2);
    assert!(l[0].write_lock().is_owned_by_current_task());
    w2.release().await.unwrap();
    w1.release().await.unwrap();
    assert!(InterProcessReadWriteLock::new(&connect(&server.connect_string()).await, "/").is_err());
}

/// zkr and Curator read-write locks on one path exclude each other as the lock says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_zkr_share_a_read_write_lock() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique_root("rw-curator");
    let (_clients, l) = locks(&cs, &path, 1).await;
    let tool = zkr_testing::peers::CuratorTool::locate().unwrap();

    // Curator writes: zkr can neither read nor write.
    let mut java = tool.spawn(&["hold-rw", &cs, &path, "write"]).unwrap();
    java.expect_line("HELD").await.unwrap();
    assert!(l[0].read_timeout(SHORT).await.unwrap().is_none());
    assert!(l[0].write_timeout(SHORT).await.unwrap().is_none());
    java.send_line("release").await.unwrap();
    java.expect_line("RELEASED").await.unwrap();
    assert!(java.wait().await.unwrap().success());

    // zkr reads: Curator reads alongside, but cannot write until zkr lets go.
    let reading = l[0].read().await.unwrap();
    let mut java_reader = tool.spawn(&["hold-rw", &cs, &path, "read"]).unwrap();
    java_reader.expect_line("HELD").await.unwrap();
    java_reader.send_line("release").await.unwrap();
    java_reader.expect_line("RELEASED").await.unwrap();
    assert!(java_reader.wait().await.unwrap().success());
    let mut java_writer = tool.spawn(&["hold-rw", &cs, &path, "write"]).unwrap();
    java_writer.set_line_timeout(SHORT * 2);
    assert!(java_writer.expect_line("HELD").await.is_err(), "Curator's writer waits for zkr's reader");
    java_writer.set_line_timeout(timing().wait());
    reading.release().await.unwrap();
    java_writer.expect_line("HELD").await.unwrap();
    java_writer.send_line("release").await.unwrap();
    java_writer.expect_line("RELEASED").await.unwrap();
    assert!(java_writer.wait().await.unwrap().success());
}

/// A ZooKeeper leader kill in a 3-server ensemble, with a reader holding the read-write lock, a
/// writer queued behind it, a semaphore lease held and another waiting: exclusion holds
/// throughout, and once the holders let go the waiters get their turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_family_comes_through_a_zookeeper_leader_kill() {
    use zkr_recipes::locks::{InterProcessSemaphoreV2, MaxLeases};

    let cluster = zkr_testing::TestingCluster::start(3).await.unwrap();
    let cs = cluster.connect_string();
    let (_clients, l) = locks(&cs, "/family/rw", 2).await;
    let reading = l[0].read().await.unwrap();
    let writer = tokio::spawn({
        let w = l[1].clone();
        async move { w.write().await }
    });
    let (zk_c, zk_d) = (connect(&cs).await, connect(&cs).await);
    let c = InterProcessSemaphoreV2::new(&zk_c, "/family/sem", MaxLeases::Fixed(1)).unwrap();
    let d = InterProcessSemaphoreV2::new(&zk_d, "/family/sem", MaxLeases::Fixed(1)).unwrap();
    let lease = c.acquire().await.unwrap();
    let waiting = tokio::spawn(async move { d.acquire().await.map(|lease| (lease, d)) });

    let leader = cluster.leader().await.expect("a ZooKeeper leader");
    cluster.kill(leader).unwrap();
    tokio::time::sleep(SHORT).await;
    assert!(!writer.is_finished(), "the writer still waits for the reader");
    assert!(!waiting.is_finished(), "the second lease still waits");

    // Whatever the kill did to the holders' connections, letting go frees the waiters.
    let _ = reading.release().await;
    let written = tokio::time::timeout(timing().wait(), writer).await.unwrap().unwrap().unwrap();
    let _ = lease.release().await;
    let (second, _d) = tokio::time::timeout(timing().wait(), waiting).await.unwrap().unwrap().unwrap();
    written.release().await.unwrap();
    second.release().await.unwrap();
}

/// The writer's session expires: its guard reports the loss, and a queued reader gets in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_whose_session_expires_lets_readers_in() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique_root("rw-expiry");
    let (clients, l) = locks(&cs, &path, 2).await;
    let writing = l[0].write().await.unwrap();
    let reader = tokio::spawn({
        let r = l[1].clone();
        async move { r.read().await }
    });
    let observer = raw(&cs).await;
    eventually("the reader to queue", || async { children(&observer, &path).await.len() == 2 }).await;
    let session = clients[0].session().await.unwrap();
    zkr_testing::expire_session(session.client(), &cs).await.unwrap();
    let reading = tokio::time::timeout(timing().wait(), reader).await.unwrap().unwrap().unwrap();
    tokio::time::timeout(timing().wait(), writing.lost()).await.expect("the writer hears of its loss");
    assert!(matches!(writing.release().await, Err(LockError::Lost { .. })));
    reading.release().await.unwrap();
}

/// Issue 44, item 1, with flock's habits: readers through the read-write lock and the writer
/// through a plain mutex on one path would run at once. Each refuses a path that holds the
/// other's contenders, naming the layout it found.
#[tokio::test]
async fn a_plain_mutex_and_a_read_write_lock_refuse_each_others_path() {
    use zkr_recipes::locks::{InterProcessMutex, LockLayout};
    let cs = shared_server().await.unwrap().connect_string();
    let zk = connect(&cs).await;
    let path = unique_root("rw-vs-mutex");
    let rw = InterProcessReadWriteLock::new(&zk, &path).unwrap();
    let reading = rw.read_lock().acquire().await.unwrap();
    let writer = InterProcessMutex::new(&zk, &path).unwrap();
    let refused = writer.try_acquire().await.map(|held| held.is_some());
    assert!(
        matches!(refused, Err(LockError::LayoutConflict { found: LockLayout::CuratorReadWrite, .. })),
        "{refused:?}"
    );
    reading.release().await.unwrap();
    let other = unique_root("mutex-vs-rw");
    let held = InterProcessMutex::new(&zk, &other).unwrap().acquire().await.unwrap();
    let refused = InterProcessReadWriteLock::new(&zk, &other)
        .unwrap()
        .read_lock()
        .try_acquire()
        .await
        .map(|h| h.is_some());
    assert!(
        matches!(refused, Err(LockError::LayoutConflict { found: LockLayout::CuratorMutex, .. })),
        "{refused:?}"
    );
    held.release().await.unwrap();
}
