//! The ensemble tracker against a real reconfiguration: a client started with servers 1 to 3
//! follows `/zookeeper/config` while servers 4 and 5 join and 1 to 3 leave and stop; its
//! session moves to 4 or 5 after the disconnect, keeping its lock and its cache, and a new
//! session made from the list it learned works. With the tracker off, the client stays on the
//! hosts it was given. And a connection that dies before its session is set up, the window
//! that made the first test fail on a busy machine, is no reconnect.

use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zkr_connection::{ConnectionState, CreateMode, SessionConnectionStateErrorPolicy, ZkClient};
use zkr_integration_tests::{builder, eventually, timing, trace_from_env, unique_root};
use zkr_recipes::cache::CuratorCache;
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::{ServerOptions, TestingCluster};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_the_old_servers_follows_a_reconfiguration_with_its_lock_and_cache() {
    trace_from_env();
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

/// The cause of this binary's failure on a busy machine: the leaving server that the handle
/// reconnected to sent its connect reply and was stopped before the session was set up, and
/// the other dialed servers refused connections. `zookeeper-client` 0.11 then reports
/// `SyncConnected` and nothing more until it gives the session up at 1.4 times its timeout: zkr
/// said RECONNECTED, dropped its lost timer and its move to the new servers, and the session
/// expired. Here a port in front of the server relays a session, then answers the reconnect's
/// connect request and closes, and refuses connections from then on: the client must stay
/// SUSPENDED, say LOST before the server can expire the session, and its lock holder must know.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_dies_before_its_session_is_set_up_is_no_reconnect() {
    trace_from_env();
    let server = zkr_testing::shared_server().await.unwrap();
    let timeout = timing().multiple(Duration::from_secs(4));
    let (port, cut) = dies_in_the_next_handshake(server.connect_string()).await;
    let zk = builder(&port).session_timeout(timeout).ensemble_tracker(false).connect().await.unwrap();
    let lock = format!("{}/lock", unique_root("handshake"));
    let guard = InterProcessMutex::new(&zk, &lock).unwrap().acquire().await.unwrap();
    let mut states = zk.state_changes();
    let cut_at = Instant::now();
    cut.send(()).unwrap();
    let mut seen = Vec::new();
    while seen.last() != Some(&ConnectionState::Lost) {
        let next = tokio::time::timeout(2 * timeout, states.next()).await;
        seen.push(next.unwrap_or_else(|_| panic!("no LOST in {:?}: {seen:?}", 2 * timeout)).unwrap());
    }
    assert_eq!(seen, [ConnectionState::Suspended, ConnectionState::Lost], "a dead connection counted");
    assert!(
        cut_at.elapsed() < timeout,
        "LOST {:?} after the cut: the server may have expired it",
        cut_at.elapsed()
    );
    assert!(guard.is_lost(), "the holder goes on");
    // The server expires the session: the lock is another's.
    let other = builder(&server.connect_string()).connect().await.unwrap();
    let mutex = InterProcessMutex::new(&other, &lock).unwrap();
    assert!(mutex.acquire_timeout(3 * timeout).await.unwrap().is_some(), "the expired holder's node stayed");
    drop(guard);
    for client in [zk, other] {
        client.close().await;
    }
}

/// A port in front of `server`: its first connection is relayed whole until `cut` is sent;
/// the second gets the server's reply to its connect request and is closed, and the port with
/// it (later connections are refused), as a server stopped while a client re-attached.
async fn dies_in_the_next_handshake(server: String) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().to_string();
    let (cut, cutting) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut client, _) = listener.accept().await.unwrap();
        let mut upstream = TcpStream::connect(&server).await.unwrap();
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => panic!("the relay ended early"),
            _ = cutting => {}
        }
        drop((client, upstream));
        let (mut client, _) = listener.accept().await.unwrap();
        drop(listener);
        let mut upstream = TcpStream::connect(&server).await.unwrap();
        relay_frame(&mut client, &mut upstream).await;
        relay_frame(&mut upstream, &mut client).await;
    });
    (port, cut)
}

/// Relays one length-prefixed frame of ZooKeeper's protocol from `from` to `to`.
async fn relay_frame(from: &mut TcpStream, to: &mut TcpStream) {
    let length = from.read_u32().await.unwrap();
    let mut frame = vec![0; length as usize];
    from.read_exact(&mut frame).await.unwrap();
    to.write_u32(length).await.unwrap();
    to.write_all(&frame).await.unwrap();
}
