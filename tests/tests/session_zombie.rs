//! Investigation (not part of the suite): a session closed by a second connection can leave
//! its client connected to a server that goes on serving the dead session.
//!
//! Found through CI's `cache_faults` (stop 53: "no new session in time" after the fourth
//! expiry). One manager on a 3-server ensemble, with a cache of a small tree, has its session
//! closed by `zkr_testing::expire_session_id` (an intruder attaches to the session and sends
//! `CloseSession`), over and over. Almost always the manager has a new session within a few
//! hundred milliseconds. About once in 1,000 it has none after two session timeouts: its handle
//! says `SyncConnected`, the manager `Reconnected`, on the old session; a read and a `sync` on
//! it are answered, a write is refused with `SessionExpired` (which ends the handle's session,
//! and the manager builds a new one). `zkr_testing::probe_session` is that write; the expiry
//! helpers of the suite send it when no expiry came, and say so.
//!
//! What was tried and did not help: a second connect request for the session to every server
//! after the close (a server closes a session's older connection when a new one arrives, but
//! not that one); confirming each reconnect with a write only the leader answers (the
//! reconnect was confirmed before the close).
//!
//! Run by hand: `cargo test -p zkr-integration-tests --test session_zombie -- --ignored --nocapture`.
//! Result against 3.9.5 (2026-12-04, 2-core machine): 5 such sessions in 3,000 expiries (57 s);
//! the same loop in a scratch program, three runs of 3,000: 3, 3 and 1. Every time, a read and
//! a `sync` on the old session were answered, the write was refused with `SessionExpired`, and
//! a new session followed.

use std::time::{Duration, Instant};

use zkr_connection::ZkClient;
use zkr_recipes::cache::{CacheMode, CuratorCache};
use zkr_testing::{expire_session_id, probe_session, TestingCluster};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "an investigation, run by hand"]
async fn a_closed_session_can_stay_served_until_its_first_write() {
    const EXPIRIES: usize = 3_000;
    let timeout = Duration::from_secs(3);
    let cluster = TestingCluster::start(3).await.unwrap();
    let cs = cluster.connect_string();
    let zk = ZkClient::builder(cs.as_str()).session_timeout(timeout).connect().await.unwrap();
    let root = zkr_integration_tests::unique_root("zombie");
    zk.create_parents(&format!("{root}/x")).await.unwrap();
    let _cache =
        CuratorCache::builder(&zk, &root).mode(CacheMode::Tree { max_depth: None }).start().await.unwrap();
    let (started, mut zombies) = (Instant::now(), 0);
    for round in 0..EXPIRIES {
        let session = zk.session().await.unwrap();
        expire_session_id(session.id(), session.client().session_timeout(), &cs).await.unwrap();
        let mut sessions = zk.session_watch();
        let renewed =
            sessions.wait_for(|s| s.as_ref().is_some_and(|s| s.generation() > session.generation()));
        tokio::pin!(renewed);
        if tokio::time::timeout(timeout * 2, &mut renewed).await.is_ok() {
            continue;
        }
        zombies += 1;
        let raw = session.client().raw();
        let (handle, manager) = (raw.state(), zk.status().state);
        let read = raw.check_stat(&root).await.map(|s| s.is_some());
        let sync = raw.sync(&root).await;
        let write = probe_session(raw).await;
        println!(
            "expiry {round}: no new session after {:?}; the handle {handle:?}, the manager {manager:?}; \
             on the old session a read {read:?}, a sync {sync:?}, a write {write:?}",
            timeout * 2
        );
        assert_eq!(
            write,
            Err(zookeeper_client::Error::SessionExpired),
            "the session lives: the close failed"
        );
        let renewed =
            tokio::time::timeout(timeout * 4, renewed).await.expect("a new session after the write");
        renewed.expect("the manager runs");
    }
    println!(
        "{EXPIRIES} expiries in {:?}: {zombies} left the handle on the closed session",
        started.elapsed()
    );
}
