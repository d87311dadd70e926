//! InterProcessMultiLock against a real ZooKeeper server: all or nothing, mixed lock kinds,
//! released in reverse, nothing left behind, a session expiry under one of its locks, and
//! Apache Curator's InterProcessMultiLock on the same paths.

use std::time::Duration;

use zkr_integration_tests::{children, connect, eventually, timing, unique_root};
use zkr_recipes::locks::{
    InterProcessMultiLock, InterProcessMutex, InterProcessSemaphoreMutex, LockError, LostReason,
};
use zkr_testing::{expire_session, shared_server};
use zookeeper_client::Client;

const SHORT: Duration = Duration::from_millis(300);

async fn count(observer: &Client, path: &str) -> usize {
    children(observer, path).await.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_or_nothing_across_lock_kinds() {
    let server = shared_server().await.unwrap();
    let root = unique_root("multi");
    let (first, second) = (format!("{root}/mutex"), format!("{root}/semaphore"));
    let (zk_a, zk_b) = (connect(&server.connect_string()).await, connect(&server.connect_string()).await);
    let multi = InterProcessMultiLock::new(vec![
        Box::new(InterProcessMutex::new(&zk_a, &first).unwrap()),
        Box::new(InterProcessSemaphoreMutex::new(&zk_a, &second).unwrap()),
    ]);
    let other_mutex = InterProcessMutex::new(&zk_b, &first).unwrap();
    let other_semaphore = InterProcessSemaphoreMutex::new(&zk_b, &second).unwrap();

    // The second lock is taken elsewhere: the multi-lock gets nothing, and lets the first go.
    let blocking = other_semaphore.acquire().await.unwrap();
    assert!(multi.acquire_timeout(SHORT).await.unwrap().is_none());
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    eventually("the first lock to be free again", || async { count(&observer, &first).await == 0 }).await;
    let probe = other_mutex.try_acquire().await.unwrap().expect("the first lock is free");
    probe.release().await.unwrap();
    blocking.release().await.unwrap();

    // Now both: nobody else gets either.
    let held = multi.acquire().await.unwrap();
    assert_eq!(held.len(), 2);
    assert!(other_mutex.try_acquire().await.unwrap().is_none());
    assert!(other_semaphore.acquire_timeout(SHORT).await.unwrap().is_none());
    held.release().await.unwrap();
    assert!(other_mutex.try_acquire().await.unwrap().is_some());
    eventually("no lease left", || async { count(&observer, &format!("{second}/leases")).await == 0 }).await;
}

/// One of the locks' sessions expires: the guard says the multi-lock is lost, another client
/// takes that lock, and releasing gives back the rest and reports the loss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_expiry_under_one_lock_is_reported_and_the_rest_released() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique_root("multi-expiry");
    let (first, second) = (format!("{root}/mutex"), format!("{root}/semaphore"));
    let (zk_a, zk_b, zk_other) = (connect(&cs).await, connect(&cs).await, connect(&cs).await);
    let multi = InterProcessMultiLock::new(vec![
        Box::new(InterProcessMutex::new(&zk_a, &first).unwrap()),
        Box::new(InterProcessSemaphoreMutex::new(&zk_b, &second).unwrap()),
    ]);
    let held = multi.acquire().await.unwrap();
    assert!(!held.is_lost());

    let session = zk_b.session().await.unwrap();
    expire_session(session.client(), &cs).await.unwrap();
    let reason = tokio::time::timeout(timing().wait(), held.lost()).await.unwrap();
    assert_eq!(reason, LostReason::SessionEnded);
    assert!(held.is_lost());
    let other_semaphore = InterProcessSemaphoreMutex::new(&zk_other, &second).unwrap();
    let taken = other_semaphore.acquire_timeout(timing().wait()).await.unwrap();
    assert!(taken.is_some(), "the expired lease is free for others");
    let other_mutex = InterProcessMutex::new(&zk_other, &first).unwrap();
    assert!(other_mutex.try_acquire().await.unwrap().is_none(), "the mutex is still held");

    assert!(matches!(held.release().await, Err(LockError::Lost { .. })), "the loss is reported");
    let observer = Client::connect(&cs).await.unwrap();
    eventually("the mutex node to be gone", || async { count(&observer, &first).await == 0 }).await;
    assert!(other_mutex.try_acquire().await.unwrap().is_some());
}

/// zkr's and Curator's multi-locks over the same two mutex paths exclude each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_zkr_multi_locks_exclude_each_other() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique_root("multi-curator");
    let (first, second) = (format!("{root}/a"), format!("{root}/b"));
    let zk = connect(&cs).await;
    let ours = InterProcessMultiLock::new(vec![
        Box::new(InterProcessMutex::new(&zk, &first).unwrap()),
        Box::new(InterProcessMutex::new(&zk, &second).unwrap()),
    ]);
    let tool = zkr_testing::peers::CuratorTool::locate().unwrap();
    let paths = format!("{first},{second}");

    let mut java = tool.spawn(&["multi-hold", &cs, &paths]).unwrap();
    java.expect_line("HELD").await.unwrap();
    assert!(ours.acquire_timeout(SHORT).await.unwrap().is_none(), "Curator holds both");
    java.send_line("release").await.unwrap();
    java.expect_line("RELEASED").await.unwrap();
    assert!(java.wait().await.unwrap().success());

    let held = ours.acquire_timeout(timing().wait()).await.unwrap().expect("free after Curator released");
    let mut java = tool.spawn(&["multi-hold", &cs, &paths]).unwrap();
    java.set_line_timeout(SHORT * 2);
    assert!(java.expect_line("HELD").await.is_err(), "zkr holds both, so Curator waits");
    java.set_line_timeout(timing().wait());
    held.release().await.unwrap();
    java.expect_line("HELD").await.unwrap();
    java.close_stdin();
    java.expect_line("RELEASED").await.unwrap();
    assert!(java.wait().await.unwrap().success());
    let observer = Client::connect(&cs).await.unwrap();
    assert_eq!(count(&observer, &first).await + count(&observer, &second).await, 0);
}
