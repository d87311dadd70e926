//! Races inside one process that only show under many interleavings.

use std::time::Duration;

use rand::Rng;
use zkr_integration_tests::{connect, timing, unique_root};
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::shared_server;

/// Issue 16 item 13: task A moves its guard to task B; B's release clears the slot's node; A's
/// acquire sees no node and takes the lock; B then retired the slot, so A's new hold lived in a
/// slot no longer in the map: A did not own the lock as far as the mutex knew, and its
/// reentrant acquire queued behind itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_released_on_another_task_does_not_orphan_a_reacquire() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &unique_root("moved-guard")).unwrap();
    let hang = timing().multiple(Duration::from_secs(10));
    for round in 0..200 {
        let first = mutex.acquire().await.unwrap();
        let spins = rand::rng().random_range(0..8);
        let releaser = tokio::spawn(async move {
            for _ in 0..spins {
                tokio::task::yield_now().await;
            }
            first.release().await.unwrap();
        });
        let again = tokio::time::timeout(hang, mutex.acquire()).await.expect("re-acquire hung").unwrap();
        releaser.await.unwrap();
        assert!(mutex.is_owned_by_current_task(), "round {round}: the holder does not own the lock");
        let reentrant = tokio::time::timeout(hang, mutex.acquire())
            .await
            .unwrap_or_else(|_| panic!("round {round}: the reentrant acquire queued behind itself"))
            .unwrap();
        assert_eq!(reentrant.hold_count(), 2, "round {round}");
        reentrant.release().await.unwrap();
        again.release().await.unwrap();
        assert!(!mutex.is_acquired_in_this_process(), "round {round}");
    }
}
