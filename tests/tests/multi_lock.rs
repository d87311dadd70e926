//! InterProcessMultiLock against a real ZooKeeper server: all or nothing, mixed lock kinds,
//! released in reverse, nothing left behind.

use std::time::Duration;

use zkr_integration_tests::{connect, eventually, unique_root};
use zkr_recipes::locks::{InterProcessMultiLock, InterProcessMutex, InterProcessSemaphoreMutex};
use zkr_testing::shared_server;
use zookeeper_client::Client;

const SHORT: Duration = Duration::from_millis(300);

async fn count(observer: &Client, path: &str) -> usize {
    match observer.list_children(path).await {
        Ok(children) => children.len(),
        Err(zookeeper_client::Error::NoNode) => 0,
        Err(e) => panic!("listing {path}: {e}"),
    }
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
