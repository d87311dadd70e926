//! zkr's InterProcessMutex and the peers it claims to share locks with, each a real process:
//! Apache Curator 5.4's InterProcessMutex (Java) with the standard driver, and kazoo 2.8's Lock
//! (Python) with the kazoo driver.

use std::time::Duration;

use zkr_integration_tests::{connect, timing, unique_root};
use zkr_recipes::locks::{InterProcessMutex, KazooLockDriver, LockInternalsDriver};
use zkr_testing::peers::{CuratorTool, KazooTool, PeerProcess};
use zkr_testing::shared_server;

/// Microseconds of CLOCK_MONOTONIC, the clock the peers print (Java's nanoTime, Python's
/// monotonic_ns), so intervals from every process share one timeline.
fn monotonic_us() -> i64 {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    now.tv_sec() * 1_000_000 + now.tv_nsec() / 1000
}

enum Peer {
    Curator(CuratorTool),
    Kazoo(KazooTool),
}

impl Peer {
    fn spawn(&self, args: &[&str]) -> PeerProcess {
        match self {
            Peer::Curator(tool) => tool.spawn(args),
            Peer::Kazoo(tool) => tool.spawn(args),
        }
        .expect("spawn the peer")
    }
}

/// The peer holds the lock: zkr cannot take it; once the peer releases, zkr can; while zkr
/// holds it, the peer cannot; once zkr releases, the peer can.
async fn exclusion_both_ways<D: LockInternalsDriver + Default>(peer: Peer) {
    let server = shared_server().await.unwrap();
    let path = unique_root("interop");
    let cs = server.connect_string();
    let zk = connect(&cs).await;
    let mutex = InterProcessMutex::with_driver(&zk, &path, D::default()).unwrap();

    let mut holder = peer.spawn(&["hold", &cs, &path]);
    let held = holder.expect_line("HELD").await.unwrap();
    assert!(mutex.try_acquire().await.unwrap().is_none(), "zkr took a lock the peer holds ({held})");
    assert!(mutex.acquire_timeout(Duration::from_millis(300)).await.unwrap().is_none());
    holder.send_line("release").await.unwrap();
    holder.expect_line("RELEASED").await.unwrap();
    let guard = mutex.acquire_timeout(timing().wait()).await.unwrap().expect("free after the peer released");

    let mut tryer = peer.spawn(&["try", &cs, &path, "300"]);
    assert_eq!(tryer.next_line().await.unwrap().as_deref(), Some("NOT_ACQUIRED"));
    guard.release().await.unwrap();
    let mut tryer = peer.spawn(&["try", &cs, &path, "10000"]);
    assert_eq!(tryer.next_line().await.unwrap().as_deref(), Some("ACQUIRED"));
}

/// zkr and the peer each take the lock `rounds` times, holding it a few milliseconds: no zkr
/// interval overlaps a peer interval.
async fn rounds_never_overlap<D: LockInternalsDriver + Default>(peer: Peer, rounds: usize) {
    let server = shared_server().await.unwrap();
    let path = unique_root("interop-rounds");
    let cs = server.connect_string();
    let zk = connect(&cs).await;
    let mutex = InterProcessMutex::with_driver(&zk, &path, D::default()).unwrap();

    let rounds_arg = rounds.to_string();
    let mut other = peer.spawn(&["lock", &cs, &path, &rounds_arg, "2"]);
    other.set_line_timeout(timing().wait() * 4);
    // Start our rounds once the peer (a JVM or a Python process, slower to start) holds the lock
    // for the first time, so both really contend.
    let first = other.expect_line("ACQUIRED").await.unwrap();
    let ours = tokio::spawn(async move {
        let mut intervals = Vec::new();
        for _ in 0..rounds {
            let guard = mutex.acquire().await.unwrap();
            let start = monotonic_us();
            tokio::time::sleep(Duration::from_millis(2)).await;
            let end = monotonic_us();
            guard.release().await.unwrap();
            intervals.push((start, end));
        }
        intervals
    });
    let mut theirs = Vec::new();
    let mut start = first.split_whitespace().nth(2).map(|t| t.parse::<i64>().unwrap());
    loop {
        let line = other.next_line().await.unwrap().expect("the peer prints DONE");
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["ACQUIRED", _, t] => start = Some(t.parse::<i64>().unwrap()),
            ["RELEASING", _, t] => {
                theirs.push((start.take().expect("ACQUIRED first"), t.parse::<i64>().unwrap()))
            }
            ["DONE"] => break,
            _ => panic!("unexpected line {line:?}"),
        }
    }
    let ours = ours.await.unwrap();
    assert_eq!(theirs.len(), rounds);
    assert_eq!(ours.len(), rounds);
    for (s1, e1) in &ours {
        for (s2, e2) in &theirs {
            assert!(e1 <= s2 || e2 <= s1, "zkr held [{s1}, {e1}] while the peer held [{s2}, {e2}]");
        }
    }
    // They really contended: the lock changed hands between zkr and the peer many times.
    let mut timeline: Vec<(i64, bool)> =
        ours.iter().map(|(s, _)| (*s, true)).chain(theirs.iter().map(|(s, _)| (*s, false))).collect();
    timeline.sort();
    let handovers = timeline.windows(2).filter(|w| w[0].1 != w[1].1).count();
    assert!(
        handovers >= rounds / 4,
        "only {handovers} handovers between zkr and the peer in {rounds} rounds each"
    );
}

#[tokio::test]
async fn curator_and_zkr_exclude_each_other() {
    exclusion_both_ways::<zkr_recipes::locks::StandardLockInternalsDriver>(Peer::Curator(
        CuratorTool::locate().unwrap(),
    ))
    .await;
}

#[tokio::test]
async fn curator_and_zkr_rounds_never_overlap() {
    rounds_never_overlap::<zkr_recipes::locks::StandardLockInternalsDriver>(
        Peer::Curator(CuratorTool::locate().unwrap()),
        100,
    )
    .await;
}

#[tokio::test]
async fn kazoo_and_zkr_exclude_each_other() {
    exclusion_both_ways::<KazooLockDriver>(Peer::Kazoo(KazooTool::locate().unwrap())).await;
}

#[tokio::test]
async fn kazoo_and_zkr_rounds_never_overlap() {
    rounds_never_overlap::<KazooLockDriver>(Peer::Kazoo(KazooTool::locate().unwrap()), 100).await;
}

#[tokio::test]
async fn a_curator_process_revokes_a_zkr_lock_and_zkr_revokes_a_curator_lock() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let zk = connect(&cs).await;
    let tool = CuratorTool::locate().unwrap();

    // Curator asks zkr's holder to release.
    let path = unique_root("revoke-zkr");
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    {
        let revoked = guard.revoked();
        tokio::pin!(revoked);
        assert!(futures::poll!(revoked.as_mut()).is_pending(), "nobody asked yet");
        let mut revoker = tool.spawn(&["revoke", &cs, guard.node_path()]).unwrap();
        revoker.expect_line("RESULT").await.unwrap();
        tokio::time::timeout(timing().wait(), revoked)
            .await
            .expect("the holder learns it was asked to release");
    }
    assert!(!guard.is_lost(), "a revocation request is not a loss");
    guard.release().await.unwrap();

    // zkr asks a Curator holder (made revocable) to release, and then gets the lock.
    let path = unique_root("revoke-curator");
    let mut holder = tool.spawn(&["revocable-hold", &cs, &path]).unwrap();
    let node = holder.expect_line("ACQUIRED").await.unwrap();
    let node = node.trim_start_matches("ACQUIRED ").to_owned();
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    assert!(mutex.try_acquire().await.unwrap().is_none());
    assert_eq!(mutex.participant_nodes().await.unwrap().first(), Some(&node));
    zkr_recipes::locks::attempt_revoke(&zk, &node).await.unwrap();
    holder.expect_line("REVOKE_REQUESTED").await.unwrap();
    holder.expect_line("RELEASED").await.unwrap();
    let guard = mutex
        .acquire_timeout(timing().wait())
        .await
        .unwrap()
        .expect("free after the revoked holder released");
    guard.release().await.unwrap();

    // A node that is gone is no error, and a bad path is refused.
    zkr_recipes::locks::attempt_revoke(&zk, &node).await.unwrap();
    assert!(zkr_recipes::locks::attempt_revoke(&zk, "no-slash").await.is_err());
}

#[tokio::test]
async fn a_revoked_future_never_fires_for_a_lost_lock_and_each_holder_is_asked_alone() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let path = unique_root("revoke-alone");
    let (a, b) = (
        InterProcessMutex::new(&zk, &format!("{path}/a")).unwrap(),
        InterProcessMutex::new(&zk, &format!("{path}/b")).unwrap(),
    );
    let (ga, gb) = (a.acquire().await.unwrap(), b.acquire().await.unwrap());
    zkr_recipes::locks::attempt_revoke(&zk, ga.node_path()).await.unwrap();
    tokio::time::timeout(timing().wait(), ga.revoked()).await.unwrap();
    // b's holder was not asked: its revoked() is still pending after a's fired and after a
    // round trip on the same session.
    {
        let revoked_b = gb.revoked();
        tokio::pin!(revoked_b);
        assert!(futures::poll!(revoked_b.as_mut()).is_pending());
        zk.retry(|s| async move { s.client().sync("/").await }).await.unwrap();
        assert!(futures::poll!(revoked_b.as_mut()).is_pending());

        // b's node deleted by an operator: lost, and revoked() does not fire for it.
        let raw = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
        raw.delete(gb.node_path(), None).await.unwrap();
        assert_eq!(
            tokio::time::timeout(timing().wait(), gb.lost()).await.unwrap(),
            zkr_recipes::locks::LostReason::NodeDeleted
        );
        assert!(futures::poll!(revoked_b.as_mut()).is_pending());
    }
    let _ = gb.release().await;
    ga.release().await.unwrap();
}
