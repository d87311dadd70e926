//! The ID and counter checkers (the `checker_ids` test binary runs them with the seed of
//! `ZKR_CHECKER_SEED`, `zkr-soak` with random seeds): for each generator kind, three
//! `zkr-id-worker` processes draw IDs from a 3-server ensemble while faults drawn from a seed
//! run one after another ([`faults::draw`]), and last a worker is killed with `SIGKILL` and
//! replaced. Every worker makes progress after every fault, no ID is handed out twice across
//! processes, and each process's IDs increase. The `counter` kind increments one
//! `DistributedAtomicLong`: every success has its own value, the final count is the successes
//! plus at most the outcomes the workers could not know, and the increments' history (with
//! their times) is linearizable as a counter. The queue and the barrier have checkers of their
//! own ([`super::queue`], [`super::barrier`]).
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
