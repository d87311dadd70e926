//! "Cancel safe", checked at every await: each public async fn whose docs say so and that
//! creates or deletes nodes is dropped after its first poll, then after its second, and so on
//! until a run completes (`zkr_testing::cancel_at_every_await`). After each drop, within a
//! bound, no node of ours is left; the run that completes shows the recipe still works.

use std::time::Duration;

use zkr_connection::ZkClient;
use zkr_integration_tests::{children, connect_with_session, eventually, timing, unique_root};
use zkr_recipes::barriers::DistributedDoubleBarrier;
use zkr_recipes::discovery::{ServiceDiscovery, ServiceInstance};
use zkr_recipes::leader::LeaderLatch;
use zkr_recipes::locks::{
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, LockInternals, MaxLeases,
    StandardLockInternalsDriver,
};
use zkr_recipes::nodes::{GroupMember, PersistentNode};
use zkr_recipes::queues::{DistributedQueue, Utf8};
use zkr_testing::{cancel_at_every_await, shared_server};
use zookeeper_client::{Client, CreateMode};

/// A client whose session outlives a busy machine's stalls, and a raw observer.
async fn clients() -> (ZkClient, Client) {
    let cs = shared_server().await.unwrap().connect_string();
    (connect_with_session(&cs, 30).await, Client::connect(&cs).await.expect("observer"))
}

/// Waits until `path` has no children (but those `keep` allows): what a dropped call left is
/// cleaned up in the background.
async fn cleaned(observer: &Client, path: &str, keep: impl Fn(&str) -> bool, k: usize) {
    let left = || async { children(observer, path).await.into_iter().all(|c| keep(&c)) };
    eventually(&format!("{path} clean after a drop at poll {k}"), left).await;
}

fn none(_: &str) -> bool {
    false
}

/// A semaphore's lease and lock directories are both clean after a drop at poll `k`.
async fn semaphore_cleaned(observer: &Client, leases: &str, locks: &str, k: usize) {
    cleaned(observer, leases, none, k).await;
    cleaned(observer, locks, none, k).await;
}

#[tokio::test]
async fn mutex_acquire_and_release() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-mutex");
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let cycle = || {
        let mutex = mutex.clone();
        async move { mutex.acquire().await?.release().await }
    };
    let (done, drops) = cancel_at_every_await(cycle, |k| cleaned(&observer, &path, none, k)).await;
    println!("dropped at {drops} awaits");
    done.unwrap();
    assert!(drops > 0);
    assert!(children(&observer, &path).await.is_empty());
}

/// The prompt hand-over's wait (a second watch, a listing when it fires): ours queues behind a
/// holder and a waiter of two other sessions, so it watches both.
#[tokio::test]
async fn prompt_mutex_acquire_behind_two_others_and_release() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-prompt");
    let cs = shared_server().await.unwrap().connect_string();
    let (holder_zk, waiter_zk) = (connect_with_session(&cs, 30).await, connect_with_session(&cs, 30).await);
    let holder = InterProcessMutex::new(&holder_zk, &path).unwrap();
    let waiter = InterProcessMutex::new(&waiter_zk, &path).unwrap();
    let internals = LockInternals::new(&zk, &path, "lock-", StandardLockInternalsDriver, 1).unwrap();
    let ours = InterProcessMutex::from_internals(internals.prompt_hand_over()).unwrap();
    let queued = |n: usize| {
        let (observer, path) = (&observer, &path);
        eventually(
            "the contenders to queue",
            move || async move { children(observer, path).await.len() == n },
        )
    };
    let cycle = || async {
        let held = holder.acquire().await?;
        let waiter = waiter.clone();
        // Not the cycle's: it goes on after a drop, and takes and frees the lock in turn.
        tokio::spawn(async move { waiter.acquire().await?.release().await });
        queued(2).await;
        let (guard, released) = tokio::join!(ours.acquire(), async {
            queued(3).await;
            held.release().await
        });
        released?;
        guard?.release().await
    };
    let (done, drops) = cancel_at_every_await(cycle, |k| cleaned(&observer, &path, none, k)).await;
    println!("dropped at {drops} awaits");
    done.unwrap();
    assert!(drops > 0);
}

#[tokio::test]
async fn read_write_lock_read_and_write() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-rw");
    let lock = InterProcessReadWriteLock::new(&zk, &path).unwrap();
    let cycle = || async {
        lock.read().await?.release().await?;
        lock.write().await?.release().await
    };
    let (done, drops) = cancel_at_every_await(cycle, |k| cleaned(&observer, &path, none, k)).await;
    println!("dropped at {drops} awaits");
    done.unwrap();
}

#[tokio::test]
async fn semaphore_acquire_and_release() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-semaphore");
    let semaphore = InterProcessSemaphoreV2::new(&zk, &path, MaxLeases::Fixed(1)).unwrap();
    let (leases, locks) = (format!("{path}/leases"), format!("{path}/locks"));
    let cycle = || async { semaphore.acquire().await?.release().await };
    let after = |k| semaphore_cleaned(&observer, &leases, &locks, k);
    let (done, drops) = cancel_at_every_await(cycle, after).await;
    println!("dropped at {drops} awaits");
    done.unwrap();
    // Still works: the one lease is free.
    let lease = tokio::time::timeout(timing().wait(), semaphore.acquire()).await.unwrap().unwrap();
    lease.release().await.unwrap();
}

#[tokio::test]
async fn semaphore_acquire_many_and_release() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-semaphore-many");
    let semaphore = InterProcessSemaphoreV2::new(&zk, &path, MaxLeases::Fixed(3)).unwrap();
    let (leases, locks) = (format!("{path}/leases"), format!("{path}/locks"));
    let cycle = || async {
        for lease in semaphore.acquire_many(2).await? {
            lease.release().await?;
        }
        Ok::<_, zkr_recipes::locks::LockError>(())
    };
    let after = |k| semaphore_cleaned(&observer, &leases, &locks, k);
    let (done, drops) = cancel_at_every_await(cycle, after).await;
    println!("dropped at {drops} awaits");
    done.unwrap();
    assert!(drops > 2);
    let all = tokio::time::timeout(timing().wait(), semaphore.acquire_many(3)).await.unwrap().unwrap();
    assert_eq!(all.len(), 3, "every lease was returned");
}

#[tokio::test]
async fn leader_latch_start_lead_and_close() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-latch");
    let cycle = || {
        let (zk, path) = (zk.clone(), path.clone());
        async move {
            let latch = LeaderLatch::start(&zk, &path, "me").await?;
            latch.await_leadership().await?;
            latch.close().await;
            Ok::<_, zkr_recipes::locks::LockError>(())
        }
    };
    let (done, drops) = cancel_at_every_await(cycle, |k| cleaned(&observer, &path, none, k)).await;
    println!("dropped at {drops} awaits");
    done.unwrap();
    assert!(children(&observer, &path).await.is_empty());
}

#[tokio::test]
async fn lock_safe_queue_take_and_ack() {
    let (zk, observer) = clients().await;
    let root = unique_root("cancel-queue");
    let (path, locks) = (format!("{root}/queue"), format!("{root}/locks"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    queue.put(&"job".to_string()).await.unwrap();
    let cycle = || async { queue.take().await?.ack().await };
    let after = |k| {
        let (queue, observer, path, locks) = (&queue, &observer, &path, &locks);
        async move {
            cleaned(observer, locks, none, k).await;
            // A dropped ack may have been applied: then the next run needs an item.
            if children(observer, path).await.is_empty() {
                queue.put(&"job".to_string()).await.unwrap();
            }
        }
    };
    let (done, drops) = cancel_at_every_await(cycle, after).await;
    println!("dropped at {drops} awaits");
    assert_eq!(done.unwrap(), ["job"]);
    assert!(children(&observer, &path).await.is_empty());
}

#[tokio::test]
async fn lock_safe_queue_take_and_ack_with_own_operations() {
    let (zk, observer) = clients().await;
    let root = unique_root("cancel-queue-ack-with");
    let (path, locks, marker) = (format!("{root}/queue"), format!("{root}/locks"), format!("{root}/marker"));
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    queue.put(&"job".to_string()).await.unwrap();
    zk.create_if_absent(&marker, b"todo", CreateMode::Persistent).await.unwrap();
    let cycle = || async { queue.take().await?.ack_with(|txn| txn.set_data(&marker, b"done", None)).await };
    let after = |k| {
        let (queue, observer, path, locks, marker) = (&queue, &observer, &path, &locks, &marker);
        async move {
            cleaned(observer, locks, none, k).await;
            // A dropped ack was applied whole or not at all: the item is gone exactly when the
            // consumer's own write is there.
            let applied = children(observer, path).await.is_empty();
            let written = observer.get_data(marker).await.unwrap().0 == b"done";
            assert_eq!(applied, written, "after a drop at poll {k}: the ack applied in part");
            if applied {
                observer.set_data(marker, b"todo", None).await.unwrap();
                queue.put(&"job".to_string()).await.unwrap();
            }
        }
    };
    let (done, drops) = cancel_at_every_await(cycle, after).await;
    println!("dropped at {drops} awaits");
    assert_eq!(done.unwrap(), ["job"]);
    assert!(children(&observer, &path).await.is_empty());
    assert_eq!(observer.get_data(&marker).await.unwrap().0, b"done");
}

#[tokio::test]
async fn double_barrier_enter_and_leave() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-barrier");
    double_barrier_cycle(&observer, &path, || DistributedDoubleBarrier::new(&zk, &path, 1).unwrap()).await;
    let path = unique_root("cancel-kazoo-barrier");
    double_barrier_cycle(&observer, &path, || {
        DistributedDoubleBarrier::kazoo(&zk, &path, 1, "rust").unwrap()
    })
    .await;
}

/// A member made by `member` (of a barrier of one at `path`) enters and leaves, dropped at
/// every await.
async fn double_barrier_cycle(observer: &Client, path: &str, member: impl Fn() -> DistributedDoubleBarrier) {
    let cycle = || {
        let mut barrier = member();
        async move {
            barrier.enter().await?;
            barrier.leave().await
        }
    };
    // `ready` belongs to the barrier, not to a member: only member nodes must go.
    let (done, drops) = cancel_at_every_await(cycle, |k| cleaned(observer, path, |c| c == "ready", k)).await;
    println!("{path}: dropped at {drops} awaits");
    done.unwrap();
    assert!(drops > 0);
}

#[tokio::test]
async fn persistent_node_and_group_member_close() {
    let (zk, observer) = clients().await;
    let root = unique_root("cancel-nodes");
    let cycle = || {
        let node = PersistentNode::builder(&zk, &format!("{root}/static"), CreateMode::Persistent).start();
        async move {
            let node = node.await?;
            node.wait_for_initial_create_timeout(timing().wait()).await?;
            node.close().await;
            Ok::<_, zkr_recipes::nodes::NodeError>(())
        }
    };
    let (done, drops) = cancel_at_every_await(cycle, |k| cleaned(&observer, &root, none, k)).await;
    println!("dropped at {drops} awaits");
    done.unwrap();

    let members = format!("{root}/members");
    let cycle = || async {
        let member = GroupMember::start(&zk, &members, "m-1", b"").await?;
        member.wait_for_initial_create_timeout(timing().wait()).await?;
        member.close().await;
        Ok::<_, zkr_recipes::nodes::NodeError>(())
    };
    let (done, drops) = cancel_at_every_await(cycle, |k| cleaned(&observer, &members, none, k)).await;
    println!("dropped at {drops} awaits");
    done.unwrap();
}

#[tokio::test]
async fn discovery_register_and_unregister() {
    let (zk, observer) = clients().await;
    let base = unique_root("cancel-discovery");
    let discovery = ServiceDiscovery::<()>::new(&zk, &base).unwrap();
    let instance = ServiceInstance::builder("api", ()).id("i-1").build();
    let instances = format!("{base}/api");
    let cycle = || async {
        discovery.register(&instance).await?;
        discovery.unregister(&instance).await
    };
    // A dropped register stays registered, as documented: unregister is what removes it.
    let after = |k| {
        let (discovery, instance, observer, instances) = (&discovery, &instance, &observer, &instances);
        async move {
            discovery.unregister(instance).await.unwrap();
            cleaned(observer, instances, none, k).await;
        }
    };
    let (done, drops) = cancel_at_every_await(cycle, after).await;
    println!("dropped at {drops} awaits");
    done.unwrap();
    assert!(children(&observer, &instances).await.is_empty());
    // Still works.
    discovery.register(&instance).await.unwrap();
    let found = discovery.query_for_instances("api").await.unwrap();
    assert_eq!(found.len(), 1);
    discovery.close().await;
    let gone = || async { children(&observer, &instances).await.is_empty() };
    tokio::time::timeout(Duration::from_secs(5), async { eventually("closed", gone).await }).await.unwrap();
}

/// `ZkClient::has_persistent_watches` dropped at each await keeps no answer and leaves no probe
/// session open on the server; the run that completes answers (3.6+: true) and keeps it.
#[tokio::test]
async fn the_feature_probe_dropped_at_any_point_leaves_no_session() {
    let server = zkr_testing::TestingServer::start().await.unwrap();
    let zk = connect_with_session(&server.connect_string(), 30).await;
    let connections = || zkr_integration_tests::mntr_counter(&server, "zk_num_alive_connections");
    let alone = connections().await;
    let probe = || {
        let zk = zk.clone();
        async move { zk.has_persistent_watches().await }
    };
    let left = |k| async move {
        eventually(&format!("no probe session after drop {k}"), || async { connections().await == alone })
            .await;
    };
    let (answer, drops) = cancel_at_every_await(probe, left).await;
    println!("dropped at {drops} awaits");
    assert!(drops > 0);
    assert_eq!(answer.unwrap(), server.release().at_least(3, 6));
    // Kept: asking again opens no session.
    assert!(zk.has_persistent_watches().await.unwrap() == server.release().at_least(3, 6));
    eventually("the probe's session closed", || async { connections().await == alone }).await;
    zk.close().await;
}

/// Two tasks of one client probing at once get one answer and leave no probe session.
#[tokio::test]
async fn two_feature_probes_at_once_agree_and_leave_no_session() {
    let server = zkr_testing::TestingServer::start().await.unwrap();
    let zk = connect_with_session(&server.connect_string(), 30).await;
    let connections = || zkr_integration_tests::mntr_counter(&server, "zk_num_alive_connections");
    let alone = connections().await;
    let (a, b) = tokio::join!(
        tokio::spawn({
            let zk = zk.clone();
            async move { zk.has_persistent_watches().await }
        }),
        tokio::spawn({
            let zk = zk.clone();
            async move { zk.has_persistent_watches().await }
        })
    );
    let expected = server.release().at_least(3, 6);
    assert_eq!((a.unwrap().unwrap(), b.unwrap().unwrap()), (expected, expected));
    eventually("the probe's session closed", || async { connections().await == alone }).await;
    zk.close().await;
}

#[tokio::test]
async fn kazoo_semaphore_election_and_lease() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-kazoo");
    let (semaphore_path, lock_path) = (format!("{path}/semaphore"), format!("{path}/semaphore-__lock__"));
    let semaphore = zkr_recipes::kazoo::Semaphore::new(&zk, &semaphore_path, "rust", 1).unwrap();
    let cycle = || async { semaphore.acquire().await?.release().await };
    let after = |k| semaphore_cleaned(&observer, &semaphore_path, &lock_path, k);
    let (done, drops) = cancel_at_every_await(cycle, after).await;
    println!("semaphore: dropped at {drops} awaits");
    done.unwrap();
    assert!(drops > 0);

    let election_path = format!("{path}/election");
    let election = zkr_recipes::kazoo::Election::new(&zk, &election_path, "rust").unwrap();
    let cycle = || election.run(tokio::task::yield_now);
    let (done, drops) = cancel_at_every_await(cycle, |k| cleaned(&observer, &election_path, none, k)).await;
    println!("election: dropped at {drops} awaits");
    done.unwrap();

    // A dropped lease leaves no lock node (the holder node is the lease itself).
    let lease_path = format!("{path}/lease");
    let hour = Duration::from_secs(3600);
    let cycle = || zkr_recipes::kazoo::NonBlockingLease::obtain(&zk, &lease_path, hour, "rust");
    let keep = |c: &str| c == "lease_holder";
    let (done, drops) = cancel_at_every_await(cycle, |k| cleaned(&observer, &lease_path, keep, k)).await;
    println!("lease: dropped at {drops} awaits");
    assert!(done.unwrap().obtained());
}

#[tokio::test]
async fn kazoo_party_join_and_leave() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-kazoo-party");
    let party = zkr_recipes::kazoo::Party::new(&zk, &path, "rust").unwrap();
    // A dropped join stays joined (its node is created in the background); a leave undoes it,
    // and a dropped leave still leaves.
    let cycle = || async {
        party.join().await?;
        party.leave().await;
        Ok::<_, zkr_recipes::nodes::NodeError>(())
    };
    let after = |k| {
        let party = &party;
        let observer = &observer;
        let path = &path;
        async move {
            party.leave().await;
            cleaned(observer, path, none, k).await;
        }
    };
    let (done, drops) = cancel_at_every_await(cycle, after).await;
    println!("party: dropped at {drops} awaits");
    done.unwrap();
    assert!(drops > 0);
    assert!(children(&observer, &path).await.is_empty());
}

/// A typed model's `set` (create, or set the data) and `delete`, dropped at every await, from
/// an empty tree and onto an existing node: after each drop the node is absent or holds a model
/// that was sent, and nothing else appears under the root; the run that completes stores, then
/// deletes.
#[tokio::test]
async fn model_set_and_delete() {
    use std::sync::Mutex;
    use zkr_recipes::codec::Utf8;
    use zkr_recipes::model::{ModelSpec, ModeledFramework, ZPath};

    let (zk, observer) = clients().await;
    let root = unique_root("cancel-model");
    let template = ZPath::parse(&format!("{root}/notes/{{id}}")).unwrap();
    let note = ModeledFramework::new(&zk, ModelSpec::builder(template, Utf8).build().unwrap())
        .resolved(&["n"])
        .unwrap();
    let path = format!("{root}/notes/n");
    let sent = Mutex::new(vec!["seed".to_owned()]);
    let cycle = || {
        let value = {
            let mut sent = sent.lock().unwrap();
            let value = format!("v{}", sent.len());
            sent.push(value.clone());
            value
        };
        let note = note.clone();
        async move {
            note.set(&value).await?;
            note.delete().await
        }
    };
    // Checks what a drop at poll `k` left, then sets the stage for the next run (on the same
    // session, so after anything the dropped run sent): no tree at all, or the node holding
    // the seed.
    let check = |k: usize, existing: bool| {
        let (observer, root, path, sent, zk, note) = (&observer, &root, &path, &sent, &zk, &note);
        async move {
            let notes = children(observer, &format!("{root}/notes")).await;
            assert!(notes.iter().all(|c| c == "n"), "after a drop at poll {k}: {notes:?}");
            assert!(children(observer, root).await.iter().all(|c| c == "notes"));
            if let Ok((data, _)) = observer.get_data(path).await {
                let data = String::from_utf8(data).unwrap();
                assert!(sent.lock().unwrap().contains(&data), "after a drop at poll {k}: {data:?}");
            }
            match existing {
                true => drop(note.set(&"seed".to_owned()).await.unwrap()),
                false => drop(zk.delete_recursive(root).await.unwrap()),
            }
        }
    };
    let (done, drops) = cancel_at_every_await(cycle, |k| check(k, false)).await;
    println!("model set and delete from nothing: dropped at {drops} awaits");
    assert!(done.unwrap(), "the complete run deleted its node");
    assert!(drops >= 3, "a create that makes parents, then a delete: {drops}");

    note.set(&"seed".to_owned()).await.unwrap();
    let (done, drops) = cancel_at_every_await(cycle, |k| check(k, true)).await;
    println!("model set and delete onto a node: dropped at {drops} awaits");
    assert!(done.unwrap());
    assert!(drops >= 2, "a create that finds the node, a set, then a delete: {drops}");
    assert_eq!(note.read().await.unwrap(), None);
}

#[tokio::test]
async fn semaphore_try_acquire_and_release() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-semaphore-try");
    let semaphore = InterProcessSemaphoreV2::new(&zk, &path, MaxLeases::Fixed(1)).unwrap();
    let (leases, locks) = (format!("{path}/leases"), format!("{path}/locks"));
    let cycle = || async {
        let lease = semaphore.try_acquire().await?.expect("the one lease is free");
        lease.release().await
    };
    let after = |k| semaphore_cleaned(&observer, &leases, &locks, k);
    let (done, drops) = cancel_at_every_await(cycle, after).await;
    println!("dropped at {drops} awaits");
    done.unwrap();
    assert!(drops > 0);
}

/// kazoo's `LockingQueue`: a get dropped at any await leaves no lock in `taken` (the entry goes
/// back to the queue); an ack (kazoo's `consume`) dropped at any await was applied whole or
/// not at all; a `put_all` dropped at any await put all its entries or none.
#[tokio::test]
async fn kazoo_locking_queue_get_consume_and_put_all() {
    let (zk, observer) = clients().await;
    let path = unique_root("cancel-kazoo-queue");
    let (entries, taken) = (format!("{path}/entries"), format!("{path}/taken"));
    let queue = zkr_recipes::kazoo::LockingQueue::new(&zk, &path).unwrap();
    queue.put(b"job").await.unwrap();
    let cycle = || async { queue.get().await?.ack().await };
    let after = |k| {
        let (queue, observer, entries, taken) = (&queue, &observer, &entries, &taken);
        async move {
            cleaned(observer, taken, none, k).await;
            // A dropped ack may have been applied: then the next run needs an entry.
            if children(observer, entries).await.is_empty() {
                queue.put(b"job").await.unwrap();
            }
        }
    };
    let (done, drops) = cancel_at_every_await(cycle, after).await;
    println!("get and consume: dropped at {drops} awaits");
    assert_eq!(done.unwrap(), [b"job".to_vec()]);
    assert!(drops > 0);
    assert!(children(&observer, &entries).await.is_empty());

    let cycle = || queue.put_all(&[b"a", b"b"], 7);
    let after = |k| {
        let observer = &observer;
        let entries = &entries;
        async move {
            let n = children(observer, entries).await.len();
            assert_eq!(n % 2, 0, "after a drop at poll {k}: {n} entries, a transaction applied in part");
        }
    };
    let (done, drops) = cancel_at_every_await(cycle, after).await;
    println!("put_all: dropped at {drops} awaits");
    done.unwrap();
    assert!(children(&observer, &entries).await.len() >= 2);
}

/// A snowflake generator's start and close dropped at every await leave no lease behind: a
/// lease node created before the drop, or whose create was in flight, is deleted in the
/// background (there was no guard: it stayed until the session ended), and so is the lease of a
/// close dropped while it recorded the last timestamp (close had taken the lease from the
/// generator, so nothing deleted it).
#[tokio::test]
async fn snowflake_start_and_close() {
    use zkr_recipes::id::SnowflakeIdGenerator;
    let (zk, observer) = clients().await;
    let root = unique_root("cancel-snowflake");
    let leases = format!("{root}/leases");
    let cycle = || {
        let (zk, root) = (zk.clone(), root.clone());
        async move {
            let ids = SnowflakeIdGenerator::builder(&zk, &root).identity("cancel").start().await?;
            ids.close().await;
            Ok::<_, zkr_recipes::id::IdError>(())
        }
    };
    let (done, drops) = cancel_at_every_await(cycle, |k| cleaned(&observer, &leases, none, k)).await;
    done.unwrap();
    assert!(drops > 0);
    // The run that completed closed its generator: no lease is left.
    assert!(children(&observer, &leases).await.is_empty());
}
