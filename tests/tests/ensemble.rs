//! The ensemble tracker against a real reconfiguration: a client started with servers 1 to 3
//! follows `/zookeeper/config` while servers 4 and 5 join and 1 to 3 leave and stop; its
//! session moves to 4 or 5 after the disconnect, keeping its lock and its cache, and a new
//! session made from the list it learned works. With the tracker off, the client stays on the
//! hosts it was given.

use std::time::Duration;

use zkr_connection::{CreateMode, SessionConnectionStateErrorPolicy, ZkClient};
use zkr_integration_tests::{builder, eventually, unique_root};
use zkr_recipes::cache::CuratorCache;
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::{ServerOptions, TestingCluster};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_the_old_servers_follows_a_reconfiguration_with_its_lock_and_cache() {
    let mut cluster =
        TestingCluster::with_options(3, ServerOptions::default().reconfigurable()).await.unwrap();
    let old = cluster.connect_string();
    let zk = builder(&old)
        .session_timeout(Duration::from_secs(10))
        .error_policy(SessionConnectionStateErrorPolicy)
        .connect()
        .await
        .unwrap();
    let untracked = builder(&old).ensemble_tracker(false).connect().await.unwrap();
    let root = unique_root("ensemble");
    let mutex = InterProcessMutex::new(&zk, &format!("{root}/lock")).unwrap();
    let guard = mutex.acquire().await.unwrap();
    let cache = CuratorCache::builder(&zk, &format!("{root}/tree")).start().await.unwrap();
    let session = zk.session().await.unwrap();
    assert_eq!(zk.status().servers.len(), 3, "{:?}", zk.status().servers);
    dialed_by_name_stays_on_its_handle(&cluster).await;

    let added = cluster.add_servers(2).await.unwrap();
    let new_hosts: Vec<String> = added.iter().map(|&i| cluster.server_connect_string(i).unwrap()).collect();
    eventually("the tracker lists servers 4 and 5", || async { zk.status().servers.len() == 5 }).await;
    assert_eq!(untracked.status().servers.len(), 3, "the tracker is off");

    cluster.remove_servers(&[0, 1, 2]).await.unwrap();
    // The servers the client knew stop: it must move to 4 or 5 (a new connection).
    eventually("the session is back, on 4 or 5", || async {
        let on_new_connection = zk.try_session().is_some_and(|s| s.connection() > session.connection());
        on_new_connection && zk.is_connected() && zk.status().servers == new_hosts
    })
    .await;
    let moved = zk.session().await.unwrap();
    assert_eq!((moved.id(), moved.generation()), (session.id(), session.generation()), "the same session");

    // The lock is still ours: not lost, and no other owner gets it.
    assert!(!guard.is_lost());
    let other = InterProcessMutex::new(&zk, &format!("{root}/lock")).unwrap();
    assert!(other.try_acquire().await.unwrap().is_none(), "a second owner got a held lock");

    // A new session from the list the tracker learned works, and the moved cache follows it.
    let fresh = ZkClient::builder(zk.status().servers.join(",")).connect().await.unwrap();
    fresh.create(&format!("{root}/tree/after"), b"moved", CreateMode::Persistent).await.unwrap();
    let path = format!("{root}/tree/after");
    eventually("the cache sees a write made after the move", || async { cache.get(&path).is_some() }).await;

    guard.release().await.unwrap();
    assert!(mutex.try_acquire().await.unwrap().is_some(), "released, and ours again");
    for client in [zk, fresh, untracked] {
        client.close().await;
    }
}

/// Issue 43, item 7: a client that dialed the servers by a name (`localhost`) while
/// `/zookeeper/config` lists their addresses keeps its one handle through a disconnect: its
/// server is killed and restarted twice, and the session is never re-attached through a
/// second connection (before, the names never matched the addresses, every dialed server
/// counted as gone from the first read, and each disconnect made a second handle).
async fn dialed_by_name_stays_on_its_handle(cluster: &TestingCluster) {
    let named = builder(&cluster.connect_string().replace("127.0.0.1", "localhost"))
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let session = named.session().await.unwrap();
    eventually("the tracker read the addresses", || async {
        named.status().servers.iter().all(|s| s.starts_with("127.0.0.1:"))
    })
    .await;
    for _ in 0..2 {
        let server = cluster.server_of_session(session.id()).await.expect("the session's server");
        cluster.kill(server).unwrap();
        eventually("the session on another server", || async {
            named.is_connected() && cluster.server_of_session(session.id()).await.is_some_and(|s| s != server)
        })
        .await;
        cluster.restart(server).await.unwrap();
    }
    let now = named.session().await.unwrap();
    assert_eq!(
        (now.id(), now.connection()),
        (session.id(), session.connection()),
        "a second handle took the session"
    );
    named.close().await;
}
