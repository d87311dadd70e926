//! The ID, counter, queue and barrier checkers (the `checker_ids` test binary runs them with
//! the seed of `ZKR_CHECKER_SEED`, `zkr-soak` with random seeds): for each generator kind,
//! three `zkr-id-worker` processes draw IDs from a 3-server ensemble while faults drawn from a
//! seed run one after another ([`faults::draw`]), and last a worker is killed with `SIGKILL`
//! and replaced. Every worker makes progress after every fault, no ID is handed out twice
//! across processes, and each process's IDs increase. The `counter` kind increments one
//! `DistributedAtomicLong`: every success has its own value, the final count is the successes
//! plus at most the outcomes the workers could not know, and the increments' history (with
//! their times) is linearizable as a counter. [`queue_under_faults`]: lock-safe queue
//! consumers (two per process, on one client) through a leader kill, a follower kill, a
//! consumer SIGKILLed mid-item and a consumer's session expired mid-item: every item is
//! completed exactly once. [`barrier_under_faults`]: a double barrier of four members on two
//! clients goes round with faults mid-round: no member hangs or passes early.
//!
//! A violation panics (these are checks, run by tests and by the soak, which catches it) with
//! the seed and the command that replays it.

use std::time::Duration;

use crate::id_worker::{check_runs, progress, IdWorker};
use crate::{faults, history, unique_root};
use zkr_testing::TestingCluster;

/// The workers' session timeout (set in `zkr-id-worker`).
const WORKER_SESSION: Duration = Duration::from_secs(4);

use super::{Peer, Summary};

fn binary(name: &str) -> std::path::PathBuf {
    super::bin_next_to_current_exe(name)
        .unwrap_or_else(|| panic!("no {name} next to this executable: build the package's binaries first"))
}

/// Three `zkr-id-worker` processes of generator `kind` (`sequential`, `segment`, `snowflake`,
/// `counter` or `kazoo-counter`) through the faults drawn from `seed`, then a worker SIGKILLed
/// and replaced. With `peers`, that many processes of another library increment the same
/// counter beside them, in the same history, the faults aimed at them too: Apache Curator's
/// `DistributedAtomicLong` on the `counter` kind (`CuratorTool checker-worker counter`),
/// kazoo's `Counter` on the `kazoo-counter` kind (`kazoo_tool.py checker-worker counter`).
///
/// # Panics
/// On a violation (a duplicate, an ID that went back, a worker that made no progress, a
/// counter history that is not linearizable), naming the seed; on peers for another kind, or
/// no peer library to run.
pub async fn kind_under_faults(
    cluster: &TestingCluster,
    kind: &str,
    seed: u64,
    peers: Option<(Peer, usize)>,
) -> Summary {
    let (peer, peer_count) = peers.map_or((None, 0), |(p, n)| (Some(p), n));
    let fits = match peer {
        None => true,
        Some(Peer::Curator) => kind == "counter",
        Some(Peer::Kazoo) => kind == "kazoo-counter",
    };
    assert!(fits, "{peers:?} do not increment a `{kind}`");
    let cs = cluster.connect_string();
    let path = format!("{}/{kind}", unique_root("checker-ids"));
    let mut workers = Vec::new();
    for i in 0..3 {
        workers.push(IdWorker::spawn(&binary("zkr-id-worker"), &cs, kind, &path, 0, &format!("w{i}")).await);
    }
    for _ in 0..peer_count {
        workers.push(peer_counter(peer.expect("a peer library"), &cs, &path).await);
    }
    let mut recoveries = Vec::new();
    recoveries.push(progress(&workers.iter().collect::<Vec<_>>(), 50, "start").await);

    // Every kind, `sequential` too: its IDs are checked against the path's high-water record
    // before they are handed out (issue 43 item 4), so an epoch counter that goes back cannot
    // make it step back.
    for (fault, target) in faults::draw(seed, workers.len()) {
        let mut what = String::new();
        fault.inject(cluster, workers[target].session(), WORKER_SESSION, |w| what = w).await.unwrap();
        let after = format!("after {what} (worker {target}; replay: ZKR_CHECKER_SEED={seed})");
        recoveries.push(progress(&workers.iter().collect::<Vec<_>>(), 50, &after).await);
    }

    let mut unknown = workers[2].unknown() + 1; // + the increment in flight when it was killed
    let (killed, mut increments) = workers.remove(2).kill_counting(2).await;
    workers.push(IdWorker::spawn(&binary("zkr-id-worker"), &cs, kind, &path, 0, "w2").await);
    recoveries.push(progress(&workers.iter().collect::<Vec<_>>(), 50, "after a worker SIGKILL").await);

    let mut runs = vec![killed];
    let (mut maybe, mut peer_successes) = (0, 0);
    // The killed worker was process 2; the others keep their places (the peers 3 on), its
    // replacement is last.
    for (process, worker) in (0..).filter(|p| *p != 2).zip(workers) {
        unknown += worker.unknown();
        maybe += worker.maybe();
        let (ids, more) = worker.finish_counting(process).await;
        if (3..3 + peer_count).contains(&process) {
            peer_successes += ids.len();
        }
        runs.push(ids);
        increments.extend(more);
    }
    let ids = check_runs(&runs);
    if kind.ends_with("counter") {
        check_count(&cs, &path, &ids, unknown).await;
        // The increments' history, with their times: linearizable as a counter.
        let checked = increments.len();
        let violation =
            tokio::task::spawn_blocking(move || history::counter::check(0, increments)).await.unwrap();
        assert!(violation.is_none(), "the counter's history: {}", violation.unwrap());
        eprintln!("[checker ids] counter: a history of {checked} increments, linearizable");
    }
    let slowest = recoveries.iter().max().copied().unwrap_or_default();
    let faults = recoveries.len() - 1;
    let peers = match peer {
        Some(peer) if peer_count > 0 => format!(
            " ({peer_count} {}'s, {peer_successes} successes; its writes without an answer: {maybe}, each one more increment it may have applied)",
            peer.name()
        ),
        _ => String::new(),
    };
    let line = format!(
        "{kind}: {} IDs from {} processes{peers}, {faults} faults, 0 duplicates, slowest progress after a fault {} ms",
        ids.len(),
        4 + peer_count,
        slowest.as_millis()
    );
    Summary { operations: ids.len(), faults, line }
}

/// A process of `peer` incrementing the counter at `path` with `zkr-id-worker`'s lines
/// (`checker-worker counter`), on the workers' session timeout.
async fn peer_counter(peer: Peer, cs: &str, path: &str) -> IdWorker {
    let args = ["checker-worker", "counter", cs, path];
    let command = match peer {
        Peer::Curator => zkr_testing::peers::CuratorTool::locate().map(|t| t.command(&args)),
        Peer::Kazoo => zkr_testing::peers::KazooTool::locate().map(|t| t.command(&args)),
    };
    let mut command =
        tokio::process::Command::from(command.unwrap_or_else(|e| panic!("{}: {e}", peer.name())));
    command.env("ZKR_PEER_SESSION_MS", WORKER_SESSION.as_millis().to_string());
    IdWorker::start(command).await
}

/// The counter's final value counts every increment that reported success once, and the
/// others only when they could not know: successes <= final <= successes + unknown outcomes.
/// (`check_runs` has already shown that no two successes got the same value.)
async fn check_count(cs: &str, path: &str, successes: &[u64], unknown: usize) {
    let observer = zookeeper_client::Client::connect(cs).await.unwrap();
    let (data, _) = observer.get_data(path).await.unwrap();
    // Curator's 8 bytes big-endian, or kazoo's text.
    let total = match <[u8; 8]>::try_from(data.as_slice()) {
        Ok(bytes) => u64::try_from(i64::from_be_bytes(bytes)).unwrap(),
        Err(_) => std::str::from_utf8(&data).ok().and_then(|t| t.parse().ok()).expect("a kazoo count"),
    };
    let known = successes.len() as u64;
    assert!(total >= known, "the counter is {total} but {known} increments succeeded");
    assert!(
        total <= known + unknown as u64,
        "the counter is {total}: more than {known} successes and {unknown} unknown"
    );
    assert!(successes.iter().all(|v| (1..=total).contains(v)), "a success's value is beyond the count");
    eprintln!("[checker ids] counter: {total} counted, {known} increments reported success, {unknown} could not know");
}

/// The completion records under `done` (`<value>-<uuid>`), as values. The observer's read
/// rides out its own session's loss under the faults (it holds nothing): a lost observer
/// session is no finding about the queue.
async fn completed(zk: &zkr_connection::ZkClient, done: &str) -> Vec<String> {
    let options = zkr_connection::RetryOptions::default().across_sessions(true);
    let listed = zk.retry_with(options, |s| async move { s.client().list_children(done).await });
    let names = listed.await.unwrap();
    names.iter().map(|n| n.rsplit_once('-').map_or(n.clone(), |(v, _)| v.to_owned())).collect()
}

/// Waits until `at_least` items are completed, naming `stage` when they are not in time.
async fn completes(zk: &zkr_connection::ZkClient, done: &str, at_least: usize, stage: &str) {
    let deadline = tokio::time::Instant::now() + crate::timing().wait() * 2;
    loop {
        let count = completed(zk, done).await.len();
        if count >= at_least {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{stage}: {count} of {at_least} items completed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Reads a consumer's lines until it has taken an item and is working on it (no line for 5 ms
/// after its `TAKEN`; the work takes 60 ms); that `TAKEN` line's value, and the last session
/// the consumer announced (`session <id>`) in the lines read.
async fn mid_item(worker: &mut zkr_testing::peers::PeerProcess) -> (String, Option<i64>) {
    // The items taken and not done yet (a process may run several consumers).
    let (mut taken, mut session) = (std::collections::BTreeSet::new(), None);
    loop {
        match tokio::time::timeout(Duration::from_millis(5), worker.next_line()).await {
            Ok(line) => {
                let line = line.unwrap().expect("the consumer runs");
                if let Some(value) = line.strip_prefix("TAKEN ") {
                    taken.insert(value.to_owned());
                } else if let Some(value) = line.strip_prefix("DONE ") {
                    taken.remove(value);
                } else if let Some(id) = line.strip_prefix("session ") {
                    session = id.trim().parse().ok();
                }
            }
            Err(_) => {
                if let Some(value) = taken.pop_first() {
                    return (value, session);
                }
            }
        }
    }
}

/// Three processes of two lock-safe queue consumers each on one client (`zkr-queue-worker`, 3 s
/// sessions, 60 ms per item) through a consumer SIGKILLed mid-item and replaced, a leader kill,
/// a follower kill and a consumer's session expired mid-item: every item is completed once
/// (each completion record is created in the transaction that acks the item), though two
/// consumers share every session.
///
/// # Panics
/// On a violation (an item completed twice or lost, a stage not completed in time).
pub async fn queue_under_faults(cluster: &TestingCluster) -> Summary {
    use zkr_recipes::queues::{DistributedQueue, Utf8};
    const N: usize = 600;
    let cs = cluster.connect_string();
    let root = unique_root("checker-queue");
    let (path, locks, done) = (format!("{root}/queue"), format!("{root}/locks"), format!("{root}/done"));
    let zk = crate::connect_with_session(cs.as_str(), 30).await;
    zk.create(&done, &[], zookeeper_client::CreateMode::Persistent).await.unwrap();
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    let want: Vec<String> = (0..N).map(|i| format!("item{i}")).collect();
    for value in &want {
        queue.put(value).await.unwrap();
    }
    let spawn = || {
        let mut cmd = std::process::Command::new(binary("zkr-queue-worker"));
        cmd.args([cs.as_str(), &path, &locks, &done, "60", "2"]);
        zkr_testing::peers::PeerProcess::spawn("zkr-queue-worker", cmd).unwrap()
    };
    let mut workers: Vec<_> = (0..3).map(|_| spawn()).collect();

    // First, while the queue is full: a consumer SIGKILLed mid-item, and replaced.
    let mut victim = workers.remove(0);
    let (taken, _) = tokio::time::timeout(crate::timing().wait(), mid_item(&mut victim))
        .await
        .expect("a consumer mid-item in time");
    drop(victim); // SIGKILL, mid-item: its lock goes with its session
    workers.push(spawn());
    completes(&zk, &done, 10, "after a consumer SIGKILL").await;

    // A consumer's session expires mid-item: its two consumers' locks go with it.
    let (_, session) = tokio::time::timeout(crate::timing().wait(), mid_item(&mut workers[0]))
        .await
        .expect("a consumer mid-item in time");
    let session = session.expect("the consumer announced its session");
    zkr_testing::expire_session_id(session, Duration::from_secs(3), &cs).await.unwrap();
    let so_far = completed(&zk, &done).await.len();
    completes(&zk, &done, (so_far + 10).min(N), "after a consumer's session expired").await;

    let victim = faults::leader(cluster).await.unwrap();
    faults::kill_and_restart(cluster, victim, Duration::from_secs(1)).await.unwrap();
    let so_far = completed(&zk, &done).await.len();
    completes(&zk, &done, (so_far + 10).min(N), "after a leader kill").await;

    let (_, session) = tokio::time::timeout(crate::timing().wait(), mid_item(&mut workers[1]))
        .await
        .expect("a consumer mid-item in time");
    let server = faults::server_serving(cluster, session.expect("an announced session")).await.unwrap();
    faults::isolate_for(cluster, server, Duration::from_secs(4)).await.unwrap();
    let so_far = completed(&zk, &done).await.len();
    completes(&zk, &done, (so_far + 10).min(N), "after a consumer's server was cut off").await;

    faults::leader_kill_during_pause(cluster).await.unwrap();
    let so_far = completed(&zk, &done).await.len();
    completes(&zk, &done, (so_far + 10).min(N), "after overlapping faults").await;

    let victim = (faults::leader(cluster).await.unwrap() + 1) % cluster.size();
    faults::kill_and_restart(cluster, victim, Duration::from_secs(1)).await.unwrap();
    completes(&zk, &done, N, "after a follower kill").await;

    let seen = completed(&zk, &done).await;
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for value in &seen {
        *counts.entry(value).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "completed more than once: {twice:?}");
    assert!(want.iter().all(|w| counts.contains_key(w.as_str())), "an item was lost");
    assert!(seen.contains(&taken), "the item the killed consumer had taken was completed by another");
    let queue_path = path.as_str();
    let left = zk.retry(|s| async move { s.client().list_children(queue_path).await }).await.unwrap();
    assert!(left.is_empty(), "items left: {left:?}");
    drop(workers);
    let line =
        format!("queue: {N} items completed exactly once through 6 faults, 4 processes of 2 consumers");
    Summary { operations: N, faults: 6, line }
}

/// What one double-barrier member saw in a round: when it started to enter, passed, started
/// to leave and left.
#[derive(Debug, Clone, Copy)]
struct Passage {
    entering: tokio::time::Instant,
    passed: tokio::time::Instant,
    leaving: tokio::time::Instant,
    left: tokio::time::Instant,
}

/// One member's round: enter, a moment's work, leave, each within `bound`; which one hung.
async fn passage(
    member: &mut zkr_recipes::barriers::DistributedDoubleBarrier,
    bound: Duration,
) -> Result<Passage, String> {
    use tokio::time::Instant;
    let entering = Instant::now();
    let name = member.member_path().to_owned();
    let hung = |what: &str| format!("member {name} hung {what}");
    if member.enter_timeout(bound).await.expect("enter").is_none() {
        return Err(hung("entering"));
    }
    let passed = Instant::now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let leaving = Instant::now();
    if member.leave_timeout(bound).await.expect("leave").is_none() {
        return Err(hung("leaving"));
    }
    Ok(Passage { entering, passed, leaving, left: Instant::now() })
}

/// The barrier's nodes as ZooKeeper has them: name, czxid, ephemeral owner, data.
async fn barrier_nodes(cs: &str, path: &str) -> String {
    let observer = crate::connect_with_session(cs, 30).await;
    let listed = observer.retry(|s| async move { s.client().list_children(path).await }).await;
    let mut out = String::new();
    for name in listed.unwrap_or_default() {
        let node = format!("{path}/{name}");
        let node = node.as_str();
        let read = observer.retry(|s| async move { s.client().get_data(node).await }).await;
        if let Ok((data, stat)) = read {
            let data = String::from_utf8_lossy(&data);
            out.push_str(&format!(
                "\n  {name} czxid {} owner {:#x} data {data:?}",
                stat.czxid, stat.ephemeral_owner
            ));
        }
    }
    observer.close().await;
    out
}

/// A double barrier of four members, two on each of two clients (each pair shares a session),
/// round after round while faults land mid-round: a leader kill, a follower kill, and one
/// client's session expired while the others wait to enter. No member hangs, and in every
/// round no member passes before the last one started to enter, nor leaves before the last one
/// started to leave.
///
/// # Panics
/// On a violation (a member that hung, passed early or left early).
pub async fn barrier_under_faults(cluster: &TestingCluster) -> Summary {
    use zkr_recipes::barriers::DistributedDoubleBarrier;
    let cs = cluster.connect_string();
    let path = format!("{}/barrier", unique_root("checker-barrier"));
    let clients = [
        crate::connect_with_session(cs.as_str(), 4).await,
        crate::connect_with_session(cs.as_str(), 4).await,
    ];
    let bound = crate::timing().wait() * 4;
    let faults_by_round =
        ["none", "leader kill", "follower kill", "session expiry", "server cut off", "overlapping", "none"];
    for (round, fault) in faults_by_round.iter().enumerate() {
        let (started, generations) =
            (tokio::time::Instant::now(), clients.each_ref().map(|c| c.generation()));
        let mut members: Vec<_> =
            (0..4).map(|i| DistributedDoubleBarrier::new(&clients[i % 2], &path, 4).unwrap()).collect();
        let last = members.pop().expect("four members");
        let mut running: Vec<_> = members
            .into_iter()
            .map(|mut m| tokio::spawn(async move { passage(&mut m, bound).await }))
            .collect();
        // Three wait in `enter` while the fault lands; then the fourth comes.
        tokio::time::sleep(Duration::from_millis(200)).await;
        match *fault {
            "leader kill" => {
                let victim = faults::leader(cluster).await.unwrap();
                faults::kill_and_restart(cluster, victim, Duration::from_secs(1)).await.unwrap();
            }
            "follower kill" => {
                let victim = (faults::leader(cluster).await.unwrap() + 1) % cluster.size();
                faults::kill_and_restart(cluster, victim, Duration::from_secs(1)).await.unwrap();
            }
            "server cut off" => {
                let session = clients[1].session().await.unwrap().id();
                let server = faults::server_serving(cluster, session).await.unwrap();
                faults::isolate_for(cluster, server, Duration::from_secs(5)).await.unwrap();
            }
            "overlapping" => faults::leader_kill_during_pause(cluster).await.unwrap(),
            "session expiry" => {
                let session = clients[0].session().await.unwrap();
                let timeout = session.client().session_timeout();
                zkr_testing::expire_session_id(session.id(), timeout, &cs).await.unwrap();
            }
            _ => {}
        }
        let mut last = last;
        running.push(tokio::spawn(async move { passage(&mut last, bound).await }));
        let mut passages = Vec::new();
        for member in running {
            match member.await.unwrap_or_else(|e| panic!("round {round} ({fault}): {e}")) {
                Ok(passage) => passages.push(passage),
                Err(hung) => {
                    let sessions =
                        [clients[0].try_session(), clients[1].try_session()].map(|s| s.map(|s| s.id()));
                    let nodes = barrier_nodes(&cs, &path).await;
                    panic!("round {round} ({fault}): {hung}; the clients' sessions {sessions:x?}; the barrier:{nodes}")
                }
            }
        }
        let all_in = passages.iter().map(|p| p.entering).max().unwrap();
        let all_leaving = passages.iter().map(|p| p.leaving).max().unwrap();
        // What a failure shows: each member's times, and whether a client's session was
        // replaced during the round (a member between sessions looks like one that left).
        let said = || {
            let ms = |at: tokio::time::Instant| (at - started).as_millis();
            let times: Vec<_> = passages
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let (e, pa, l, le) = (ms(p.entering), ms(p.passed), ms(p.leaving), ms(p.left));
                    format!(
                        "member {i} (client {}): entering {e}, passed {pa}, leaving {l}, left {le} ms",
                        i % 2
                    )
                })
                .collect();
            let sessions = clients.each_ref().map(|c| c.generation());
            format!("{times:#?}; the clients' session generations {generations:?} at the start, {sessions:?} at the end")
        };
        assert!(
            passages.iter().all(|p| p.passed >= all_in),
            "round {round} ({fault}): passed early: {}",
            said()
        );
        assert!(
            passages.iter().all(|p| p.left >= all_leaving),
            "round {round} ({fault}): left early: {}",
            said()
        );
    }
    let rounds = faults_by_round.len();
    let line = format!(
        "double barrier: {rounds} rounds of 4 members on 2 clients, 5 faults, no member hung or early"
    );
    Summary { operations: rounds * 4, faults: 5, line }
}
