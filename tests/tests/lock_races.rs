//! Races inside one process that only show under many interleavings.

use std::time::Duration;

use rand::RngExt;
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

/// Issue 16 item 11, with the server's own `Stat`s: the listing sent ahead of our create saw a
/// directory whose count of creates matches our sequence, but between the two the container
/// was deleted (as ZooKeeper's container manager does once it is empty) and recreated by a
/// contender whose node took sequence 0. The sequence alone would prove the listing complete,
/// and it shows nobody ahead of us: two holders. The directory's creation zxid tells.
#[tokio::test]
async fn a_listing_of_a_deleted_and_recreated_lock_directory_proves_nothing() {
    use zookeeper_client::{Acls, CreateMode};
    let server = shared_server().await.unwrap();
    let client = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
    let dir = unique_root("recreated");
    let container = CreateMode::Container.with_acls(Acls::anyone_all());
    let contender = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let child = format!("{dir}/lock-");
    client.create(&dir, b"", &container).await.unwrap();
    let (_, seq) = client.create(&child, b"", &contender).await.unwrap();
    client.delete(&format!("{child}{seq}"), None).await.unwrap();
    // Our listing, just ahead of our create: one create so far, so we expect sequence 1.
    let (listed_children, listed) = client.get_children(&dir).await.unwrap();
    assert!(listed_children.is_empty());
    // In between: the empty container goes, a contender recreates it and takes sequence 0.
    client.delete(&dir, None).await.unwrap();
    client.create(&dir, b"", &container).await.unwrap();
    let (_, foreign) = client.create(&child, b"", &contender).await.unwrap();
    assert_eq!(foreign.into_i64(), 0);
    let (_, ours) = client.create(&child, b"", &contender).await.unwrap();
    let after = client.check_stat(&dir).await.unwrap().unwrap();
    let creates_at_listing = i64::from((listed.cversion + listed.num_children) / 2);
    assert_eq!(ours.into_i64(), creates_at_listing, "the sequence alone is fooled");
    assert!(!zkr_connection::protected::listing_is_complete(&listed, ours.into_i64(), &after));
    // Without the recreation the same check passes.
    let (_, relisted) = client.get_children(&dir).await.unwrap();
    let (_, next) = client.create(&child, b"", &contender).await.unwrap();
    let after = client.check_stat(&dir).await.unwrap().unwrap();
    assert!(zkr_connection::protected::listing_is_complete(&relisted, next.into_i64(), &after));
}

/// A guard dropped just before the next acquire sends its delete first: the server applies
/// the delete before the new create, so the new node never queues behind our old one (a
/// hand-over in one round trip; see docs/benchmarks.md, "Over a network"). An observer's
/// recursive watch sees the two in the server's order.
#[tokio::test]
async fn a_dropped_guard_deletes_its_node_ahead_of_the_next_acquire() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let path = unique_root("drop-order");
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let observer = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
    let mut guard = mutex.acquire().await.unwrap();
    let mut events =
        observer.watch(&path, zookeeper_client::AddWatchMode::PersistentRecursive).await.unwrap();
    for round in 0..20 {
        let old = guard.node_path().to_owned();
        drop(guard);
        guard = mutex.acquire().await.unwrap();
        let new = guard.node_path().to_owned();
        let mut seen = Vec::new();
        while seen.len() < 2 {
            let event = tokio::time::timeout(timing().wait(), events.changed()).await.expect("no event");
            if event.path == old || event.path == new {
                seen.push((event.event_type, event.path));
            }
        }
        use zookeeper_client::EventType::{NodeCreated, NodeDeleted};
        assert_eq!(seen, vec![(NodeDeleted, old), (NodeCreated, new)], "round {round}");
    }
    guard.release().await.unwrap();
}

/// The hang of a CI run (lock-safe queue, `cancel` test): a consumer's lock create found
/// another's item lock (`NodeExists`), so it set the item aside until the queue's view of the
/// lock directory changed. But a lock created and deleted between two of that cache's reads
/// never shows in it: nothing changed, and `take` waited forever beside a free item. Here
/// another client flaps the item's lock (create and delete sent back to back, so the cache
/// mostly reads neither) while `take` runs, then stops: `take` gets the item.
#[tokio::test]
async fn a_lock_safe_take_beside_a_lock_that_came_and_went_unseen_gets_the_item() {
    use zkr_recipes::queues::{DistributedQueue, Utf8};
    use zookeeper_client::{Acls, CreateMode};
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let other = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
    let root = unique_root("flapping-item-lock");
    let (path, locks) = (format!("{root}/queue"), format!("{root}/locks"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    queue.put(&"job".to_string()).await.unwrap();
    let item = queue.take().await.unwrap(); // the caches are up; the lock's name is known
    let lock = format!("{locks}/{}", zkr_connection::path::node_name(item.node()));
    item.release().await.unwrap();
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let hang = timing().multiple(Duration::from_secs(10));
    for round in 0..100 {
        let flaps = rand::rng().random_range(1..20);
        let flapper = async {
            for _ in 0..flaps {
                let (created, deleted) = (other.create(&lock, b"x", &ephemeral), other.delete(&lock, None));
                let _ = futures::join!(created, deleted);
            }
        };
        let (taken, ()) = futures::join!(tokio::time::timeout(hang, queue.take()), flapper);
        let taken = taken.unwrap_or_else(|_| panic!("take hung beside a free item in round {round}"));
        taken.unwrap().release().await.unwrap();
    }
}
