//! The config checker: three subscribers (`ConfigWatcher`s, each on its own session) follow one
//! value while a writer raises it every few milliseconds and faults drawn from a seed
//! ([`faults::draw`]) run on a 3-server ensemble, each aimed at a subscriber or the writer and
//! started once the writer has written 20 values since the last one. Every write and every
//! value a subscriber is given goes to a history checked as a register
//! ([`crate::history::register`]: no subscriber sees a value before its write was invoked, or the
//! value go back), and once the faults stop every subscriber converges to the last write.
//! The `checker_config` test binary runs it with the seed of `ZKR_CHECKER_SEED`, `zkr-soak`
//! with random seeds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zkr_connection::ZkClient;
use zkr_recipes::config::{ConfigPublisher, ConfigWatcher, Json};
use zkr_testing::TestingCluster;

use super::Summary;
use crate::history::now;
use crate::history::register::{self, Register, RegisterOperation};
use crate::{faults, timing, unique_root};

/// How many subscribers follow the value.
const SUBSCRIBERS: usize = 3;

/// Every client's session timeout.
const SESSION: Duration = Duration::from_secs(3);

async fn client(cs: &str) -> ZkClient {
    ZkClient::builder(cs).session_timeout(SESSION).connect().await.unwrap()
}

/// The config checker (see the module) on `cluster`, its faults drawn from `seed`.
///
/// # Panics
/// On a violation (a history that is not a register's, a subscriber that did not converge, a
/// writer that made no progress after a fault), with the timeline of faults and slow or failed
/// writes and the command that replays the seed; for the history, the servers' data is copied to
/// the temporary directory first.
pub async fn config_under_faults(cluster: &TestingCluster, seed: u64) -> Summary {
    let cs = cluster.connect_string();
    let path = format!("{}/value", unique_root("checker-config"));
    let writer_zk = client(&cs).await;
    let publisher = ConfigPublisher::<u64>::new(&writer_zk, Json);
    publisher.set(&path, &0).await.unwrap();

    // Every write and every value a subscriber is given, for the history check.
    let history = Arc::new(std::sync::Mutex::new(Vec::<RegisterOperation>::new()));
    let mut subscribers = Vec::new();
    for i in 0..SUBSCRIBERS {
        let zk = client(&cs).await;
        let watcher = ConfigWatcher::<u64>::builder(&zk, &path, Json).start().await.unwrap();
        let mut snapshots = watcher.snapshots();
        let history = history.clone();
        tokio::spawn(async move {
            while snapshots.changed().await.is_ok() {
                let value = snapshots.borrow_and_update().get("").map(|v| *v.value);
                if let Some(value) = value {
                    history.lock().unwrap().push(register::read(i, value, now()));
                }
            }
        });
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
        let (stop, path, attempts, history) = (stop.clone(), path.clone(), attempts.clone(), history.clone());
        let writer_zk = writer_zk.clone();
        tokio::spawn(async move {
            let mut next = 1u64;
            while !stop.load(Ordering::SeqCst) {
                let session = writer_zk.try_session().map(|s| format!("{:#x}", s.id()));
                let sent = started.elapsed().as_millis();
                let invoked = now();
                let result = publisher.set(&path, &next).await;
                let returned = result.is_ok().then(now);
                history.lock().unwrap().push(register::write(SUBSCRIBERS, next, invoked, returned));
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
    let mut clients: Vec<&ZkClient> = subscribers.iter().map(|(zk, _)| zk).collect();
    clients.push(&writer_zk);
    for (fault, target) in faults::draw(seed, clients.len()) {
        let session = clients[target].session().await.unwrap().id();
        let mark = |what: String| {
            let at = started.elapsed().as_millis();
            attempts.lock().unwrap().push(format!("{at} ms: {what} (client {target}: {session:#x})"));
        };
        fault.inject(cluster, session, SESSION, mark).await.unwrap();
        wrote_again(&mut written, &attempts, seed).await;
    }
    attempts.lock().unwrap().push(format!("{} ms: faults over", started.elapsed().as_millis()));

    stop.store(true, Ordering::SeqCst);
    let (publisher, last) = writer.await.unwrap();
    // The value the writer was at (its last try may have had no answer), written for good.
    let invoked = now();
    publisher.set(&path, &last).await.unwrap();
    history.lock().unwrap().push(register::write(SUBSCRIBERS, last, invoked, Some(now())));
    let converged = std::time::Instant::now();
    for (i, (zk, watcher)) in subscribers.iter().enumerate() {
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
            zk.state(),
            zk.try_session().map(|s| (s.generation(), format!("{:#x}", s.id()))),
        );
    }
    let converged = converged.elapsed().as_millis();
    let operations = history.lock().unwrap().clone();
    let reads = operations.len() - operations.iter().filter(|o| o.process == SUBSCRIBERS).count();
    let initial = Register { highest: 0, seen: vec![0; SUBSCRIBERS] };
    let violation = tokio::task::spawn_blocking(move || register::check(initial, operations)).await.unwrap();
    if let Some(violation) = violation {
        let attempts = attempts.lock().unwrap();
        let timeline = timeline(&attempts);
        // The servers' data (transaction logs: every transaction's session, cxid, zxid and
        // time) kept for `java org.apache.zookeeper.server.persistence.TxnLogToolkit`.
        let kept = std::env::temp_dir().join(format!("zkr-checker-config-{}", std::process::id()));
        let copied = std::process::Command::new("cp").arg("-r").arg(cluster.root_dir()).arg(&kept).status();
        panic!(
            "the value's history is not a register's (subscribers 0..{SUBSCRIBERS}, the writer is worker \
             {SUBSCRIBERS}): {violation}\nthe faults and the failed or slow (over 1 s) attempts: {timeline:#?}\n\
             the servers' data copied to {} ({copied:?})\nreplay: {}",
            kept.display(),
            replay(seed)
        );
    }
    let attempts = attempts.lock().unwrap();
    let timeline = timeline(&attempts);
    let writes = usize::try_from(last).unwrap_or(usize::MAX);
    let line = format!(
        "config, seed {seed}: {SUBSCRIBERS} subscribers, 6 faults, {writes} writes and {reads} reads, a register's \
         history, all converged within {converged} ms of the last write; the faults and the failed or slow (over \
         1 s) attempts: {timeline:#?}"
    );
    Summary { operations: writes + reads, faults: 6, line }
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
