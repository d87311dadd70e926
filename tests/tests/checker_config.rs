//! The config checker: three subscribers (`ConfigWatcher`s, each on its own session) follow one
//! value while a writer raises it every few milliseconds and the checker's faults run on a
//! 3-server ensemble: the ZooKeeper leader killed and restarted, a follower serving a client
//! killed and restarted, a client's server paused (`SIGSTOP`) longer than the session timeout,
//! a client's session expired, a client's server cut off from the quorum, and a follower paused
//! while the leader is killed. Their order and the client each one aims at (a subscriber or the
//! writer) are drawn from a seed (`ZKR_CHECKER_SEED`, 46 by default; a failure prints the
//! command that replays it); each fault starts once the writer has written 20 values since the
//! last one. No subscriber ever sees the value go back, and
//! once the faults stop every subscriber converges to the last write.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zkr_connection::ZkClient;
use zkr_integration_tests::{faults, timing, unique_root};
use zkr_recipes::config::{ConfigPublisher, ConfigWatcher, Json};

const SESSION: Duration = Duration::from_secs(3);

async fn client(cs: &str) -> ZkClient {
    ZkClient::builder(cs).session_timeout(SESSION).connect().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subscriber_converges_to_the_last_write_after_faults() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let cluster = faults::partitionable_cluster().await;
    let cs = cluster.connect_string();
    let path = format!("{}/value", unique_root("checker-config"));
    let writer_zk = client(&cs).await;
    let publisher = ConfigPublisher::<u64>::new(&writer_zk, Json);
    publisher.set(&path, &0).await.unwrap();

    let mut subscribers = Vec::new();
    let mut went_back = Vec::new();
    for _ in 0..3 {
        let zk = client(&cs).await;
        let watcher = ConfigWatcher::<u64>::builder(&zk, &path, Json).start().await.unwrap();
        // Every published snapshot: the value never goes back. What it saw is kept for the
        // failure message: (value, mzxid, stale) of the latest snapshots, None for no value.
        let mut snapshots = watcher.snapshots();
        let back = Arc::new(std::sync::Mutex::new(None::<String>));
        let flag = back.clone();
        tokio::spawn(async move {
            let (mut last, mut seen) = (0, std::collections::VecDeque::new());
            while snapshots.changed().await.is_ok() {
                let snapshot = snapshots.borrow_and_update().clone();
                let held = snapshot.get("").map(|v| (*v.value, v.mzxid));
                seen.push_back((held, snapshot.is_stale()));
                if seen.len() > 12 {
                    seen.pop_front();
                }
                if let Some((value, _)) = held {
                    if value < last {
                        flag.lock().unwrap().get_or_insert_with(|| format!("{value} after {last}: {seen:?}"));
                    }
                    last = value;
                }
            }
        });
        went_back.push(back);
        subscribers.push((zk, watcher));
    }

    // The writer raises the value until told to stop; a failed write is tried again with the
    // same value. Every attempt is kept (value, session, ms from the start to its send and to
    // its answer, the answer) for the failure message: a value that goes back shows when its
    // writes were sent and answered.
    let stop = Arc::new(AtomicBool::new(false));
    let started = std::time::Instant::now();
    let attempts = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let (written_tx, mut written) = tokio::sync::watch::channel(0u64);
    let writer = {
        let (stop, path, attempts) = (stop.clone(), path.clone(), attempts.clone());
        let writer_zk = writer_zk.clone();
        tokio::spawn(async move {
            let mut next = 1u64;
            while !stop.load(Ordering::SeqCst) {
                let session = writer_zk.try_session().map(|s| format!("{:#x}", s.id()));
                let sent = started.elapsed().as_millis();
                let result = publisher.set(&path, &next).await;
                let answered = started.elapsed().as_millis();
                let answer =
                    result.as_ref().map(|stat| format!("mzxid {:#x}", stat.mzxid)).map_err(|e| e.to_string());
                attempts
                    .lock()
                    .unwrap()
                    .push(format!("{next} on {session:?}: {sent}..{answered} ms {answer:?}"));
                if result.is_ok() {
                    written_tx.send_replace(next);
                    next += 1;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (publisher, next)
        })
    };

    // Each fault's start goes to the attempts too, so that a failure shows the timeline; the
    // next fault starts once the writer has written again, so that every fault meets writes
    // (back to back, a writer whose session each fault ended could go through all of them
    // with no write at all).
    let seed = faults::seed();
    let mut clients: Vec<&ZkClient> = subscribers.iter().map(|(zk, _)| zk).collect();
    clients.push(&writer_zk);
    for (fault, target) in faults::draw(seed, clients.len()) {
        let session = clients[target].session().await.unwrap().id();
        let mark = |what: String| {
            let at = started.elapsed().as_millis();
            attempts.lock().unwrap().push(format!("{at} ms: {what} (client {target}: {session:#x})"));
        };
        fault.inject(&cluster, session, SESSION, mark).await.unwrap();
        wrote_again(&mut written, &attempts, seed).await;
    }
    attempts.lock().unwrap().push(format!("{} ms: faults over", started.elapsed().as_millis()));

    stop.store(true, Ordering::SeqCst);
    let (publisher, next) = writer.await.unwrap();
    let last = next + 1000;
    publisher.set(&path, &last).await.unwrap();
    let converged = std::time::Instant::now();
    for (i, (_, watcher)) in subscribers.iter().enumerate() {
        let mut snapshots = watcher.snapshots();
        let reached = tokio::time::timeout(
            timing().wait(),
            snapshots.wait_for(|s| s.get("").map(|v| *v.value) == Some(last)),
        )
        .await;
        assert!(
            reached.is_ok(),
            "subscriber {i} holds {:?}, not the last write {last}; its manager: {:?}, session {:?}",
            watcher.get().map(|v| *v.value),
            subscribers[i].0.state(),
            subscribers[i].0.try_session().map(|s| (s.generation(), format!("{:#x}", s.id()))),
        );
    }
    for (i, back) in went_back.iter().enumerate() {
        let back = back.lock().unwrap().clone();
        let Some(back) = back else { continue };
        // The writer's attempts at the value that came back, and the last ones.
        let stale = back.split_whitespace().next().unwrap_or_default().to_owned();
        let attempts = attempts.lock().unwrap();
        let of_stale: Vec<_> = attempts.iter().filter(|a| a.starts_with(&format!("{stale} on"))).collect();
        let timeline = timeline(&attempts);
        // The servers' data (transaction logs: every transaction's session, cxid, zxid and
        // time) kept for `java org.apache.zookeeper.server.persistence.TxnLogToolkit`.
        let kept = std::env::temp_dir().join(format!("zkr-checker-config-{}", std::process::id()));
        let copied = std::process::Command::new("cp").arg("-r").arg(cluster.root_dir()).arg(&kept).status();
        panic!(
            "subscriber {i} saw the value go back: {back}\nthe writer's attempts at {stale}: {of_stale:#?}\n\
             the faults and the failed or slow (over 1 s) attempts: {timeline:#?}\nthe servers' data copied to {} ({copied:?})\n\
             replay: {}",
            kept.display(),
            replay(seed)
        );
    }
    let attempts = attempts.lock().unwrap();
    let timeline = timeline(&attempts);
    eprintln!(
        "[checker config] seed {seed}: 3 subscribers, 6 faults, {} writes, all converged within {} ms of the last \
         write; the faults and the failed or slow (over 1 s) attempts: {timeline:#?}",
        last - 1000,
        converged.elapsed().as_millis()
    );
}

/// The command that runs the faults of `seed` again.
fn replay(seed: u64) -> String {
    format!("ZKR_CHECKER_SEED={seed} cargo test -p zkr-integration-tests --test checker_config -- every_subscriber")
}

/// How many writes the writer makes after a fault before the next one starts.
const PROGRESS: u64 = 20;

/// Waits until the writer has written [`PROGRESS`] more values; fails the test with the
/// timeline of faults and attempts when it does not within the test wait.
async fn wrote_again(
    written: &mut tokio::sync::watch::Receiver<u64>,
    attempts: &std::sync::Mutex<Vec<String>>,
    seed: u64,
) {
    let target = *written.borrow() + PROGRESS;
    let wrote = tokio::time::timeout(timing().wait(), written.wait_for(|n| *n >= target)).await;
    if wrote.is_err() {
        let attempts = attempts.lock().unwrap();
        let timeline = timeline(&attempts);
        panic!(
            "the writer did not write {PROGRESS} values within {:?} of a fault: {timeline:#?}\nreplay: {}",
            timing().wait(),
            replay(seed)
        );
    }
}

/// The faults and the writer's failed or slow attempts, in order.
fn timeline(attempts: &[String]) -> Vec<&String> {
    attempts.iter().filter(|a| notable(a)).collect()
}

/// Whether a line of the writer's log is a fault, a failed attempt, or one that took over 1 s
/// (`"{value} on {session}: {sent}..{answered} ms {answer}"`).
fn notable(line: &str) -> bool {
    let took = line.split_once(": ").and_then(|(_, rest)| rest.split_once(" ms")).and_then(|(span, _)| {
        let (sent, answered) = span.split_once("..")?;
        Some(answered.parse::<u128>().ok()? - sent.parse::<u128>().ok()?)
    });
    line.contains(" ms: ") || !line.contains("Ok(") || took.is_some_and(|took| took > 1000)
}

/// How many writes keep the leader busy when the cut-off server rejoins.
const BURST: usize = 3000;

/// What the checker above found, made deterministic: a write sent to a server that is cut off
/// from the quorum is held there; the client's session comes back to that server (a stale
/// reconnect, also held) after moving to another server and writing again; when the server
/// rejoins, ZooKeeper applies the held write after the newer one. A write conditional on the
/// version it was sent at (as `ZkClient::overwrite`, and so `ConfigPublisher::set`, sends
/// every write) is refused instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_write_lands_after_a_newer_one_unless_it_is_conditional() {
    use zkr_connection::zookeeper_client::{Client, CreateMode as RawMode, EventType, SessionState};
    let cluster = faults::partitionable_cluster().await;
    let leader = faults::leader(&cluster).await.unwrap();
    let (held_at, moved_to) = ((leader + 1) % 3, (leader + 2) % 3);
    let at = |i: usize| cluster.server_connect_string(i).unwrap();
    let root = unique_root("late-write");
    let (plain, conditional) = (format!("{root}-plain"), format!("{root}-conditional"));
    let timeout = Duration::from_secs(10);
    let writer = Client::connector().with_session_timeout(timeout).connect(&at(held_at)).await.unwrap();
    let options = RawMode::Persistent.with_acls(zkr_connection::zookeeper_client::Acls::anyone_all());
    for path in [&plain, &conditional] {
        writer.create(path, b"first", &options).await.unwrap();
    }
    let session = writer.session().clone();
    let observer = Client::connector().connect(&cluster.connect_string()).await.unwrap();
    let (_, _, plain_changed) = observer.get_and_watch_data(&plain).await.unwrap();

    // Cut off: the writer's two writes (at version 0, and unconditional) are held.
    cluster.isolate(held_at).unwrap();
    let held = tokio::spawn({
        let (writer, plain, conditional) = (writer.clone(), plain.clone(), conditional.clone());
        async move {
            let conditional = writer.set_data(&conditional, b"held", Some(0));
            let plain = writer.set_data(&plain, b"held", None);
            tokio::join!(conditional, plain)
        }
    });
    // Both read by the server, which waits for the quorum's answer...
    let outstanding = tokio::time::timeout(timing().wait(), async {
        loop {
            let mntr = cluster.four_letter_word(held_at, "mntr").await.unwrap_or_default();
            if mntr
                .lines()
                .any(|line| line.split_whitespace().collect::<Vec<_>>() == ["zk_outstanding_requests", "2"])
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    assert!(outstanding.await.is_ok(), "the cut-off server never held both writes");
    // ... when the session comes back to it (its revalidation is held too)...
    let stale = tokio::spawn({
        let (session, server) = (session.clone(), at(held_at));
        async move {
            Client::connector().with_session(session).with_session_timeout(timeout).connect(&server).await
        }
    });
    // The server closes the writer's connection when the same session reconnects to it.
    let mut states = writer.state_watcher();
    let closed = tokio::time::timeout(timing().wait(), async {
        while writer.state() == SessionState::SyncConnected {
            states.changed().await;
        }
    });
    assert!(closed.await.is_ok(), "the cut-off server never saw the session come back");
    // ... after moving to another server, where it writes again (the same version for the
    // conditional write: its retry).
    let moved = Client::connector()
        .with_session(session)
        .with_session_timeout(timeout)
        .connect(&at(moved_to))
        .await
        .unwrap();
    moved.set_data(&conditional, b"newer", Some(0)).await.unwrap();
    moved.set_data(&plain, b"newer", None).await.unwrap();
    // The leader busy with other writes when the held bytes arrive, as in the checker: the
    // held request then waits in its queue while the revalidation (handled at once) gives the
    // session back to the cut-off server.
    let busy = Client::connector().connect(&at(leader)).await.unwrap();
    let scratch = format!("{root}-scratch");
    busy.create(&scratch, b"", &options).await.unwrap();
    let mut burst: futures::stream::FuturesOrdered<_> =
        (0..BURST).map(|_| busy.set_data(&scratch, b"x", None)).collect();
    let first = futures::StreamExt::next(&mut burst).await;
    assert!(matches!(first, Some(Ok(_))), "{first:?}");
    cluster.heal(held_at).unwrap();
    let burst = tokio::spawn(futures::StreamExt::collect::<Vec<_>>(burst));

    // The unconditional write lands after the newer one; by then the conditional one, sent
    // before it on the same session, was refused.
    let first = tokio::time::timeout(timing().wait(), plain_changed.changed()).await.unwrap();
    assert_eq!(first.event_type, EventType::NodeDataChanged);
    let landed = tokio::time::timeout(timing().wait(), async {
        loop {
            observer.sync(&plain).await.unwrap();
            let (data, _) = observer.get_data(&plain).await.unwrap();
            if data != b"newer" {
                return data;
            }
            let (_, _, changed) = observer.get_and_watch_data(&plain).await.unwrap();
            changed.changed().await;
        }
    })
    .await;
    let (data, stat) = observer.get_data(&conditional).await.unwrap();
    let burst = burst.await.unwrap();
    eprintln!("[late write] burst: {} of {BURST} ok", 1 + burst.iter().filter(|r| r.is_ok()).count());
    eprintln!(
        "[late write] plain: {:?}; conditional: {:?} at version {}; the held writes answered {:?}; the stale reconnect {:?}",
        landed.as_ref().map(|d| String::from_utf8_lossy(d).into_owned()),
        String::from_utf8_lossy(&data),
        stat.version,
        tokio::time::timeout(Duration::from_secs(1), held).await.map(|r| r.map(|(c, p)| (c.map(drop), p.map(drop)))),
        tokio::time::timeout(Duration::from_secs(1), stale).await.map(|r| r.map(|c| c.map(drop))),
    );
    assert_eq!(
        landed.ok(),
        Some(b"held".to_vec()),
        "ZooKeeper did not apply the held write late: the schedule no longer shows the hazard"
    );
    assert_eq!((&data[..], stat.version), (&b"newer"[..], 1), "the held conditional write was applied");
}
