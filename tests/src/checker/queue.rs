//! The queue checker: lock-safe queue consumers in several processes work one queue through
//! faults drawn from a seed, and every item is completed exactly once ([`queue_under_faults`]).
//! With a Curator process among them, Curator's consumers take part in the same layout; their
//! one known way to complete an item twice (CURATOR-605) is told apart and counted.

use std::collections::BTreeMap;
use std::time::Duration;

use zkr_testing::peers::PeerProcess;
use zkr_testing::TestingCluster;

use super::{Peer, Summary};
use crate::{faults, unique_root};

/// The consumers' session timeout (`zkr-queue-worker`'s, and the Curator process's).
const SESSION: Duration = Duration::from_secs(3);

/// Who completed an item: a zkr consumer (in the transaction that acked it), or a Curator
/// consumer on the session it took the item on (`same`), or not known to be (`replaced`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    Zkr,
    Curator { same_session: bool },
}

/// The completions recorded under `done`: zkr's `<value>-<uuid>` and Curator's
/// `<value>-curator-<same|replaced>-<uuid>` (values have no `-`). One Curator completion may
/// have two records with one uuid, `same` and then `replaced` (its worker found that the item
/// was deleted after the session it was taken on was replaced): it counts once, as `replaced`.
/// The observer's read rides out its own session's loss under the faults (it holds nothing): a
/// lost observer session is no finding about the queue.
async fn completed(zk: &zkr_connection::ZkClient, done: &str) -> Vec<(String, By)> {
    let options = zkr_connection::RetryOptions::default().across_sessions(true);
    let listed = zk.retry_with(options, |s| async move { s.client().list_children(done).await });
    let names = listed.await.unwrap();
    let record = |name: &str| {
        let (value, rest) = name.split_once('-').unwrap_or((name, ""));
        let by = match rest.strip_prefix("curator-") {
            Some(how) => By::Curator { same_session: how.starts_with("same-") },
            None => By::Zkr,
        };
        (value.to_owned(), by)
    };
    let mut by_uuid = BTreeMap::<&str, (String, By)>::new();
    for name in &names {
        let uuid = name.rsplit_once('-').map_or(name.as_str(), |(_, uuid)| uuid);
        let (value, by) = record(name);
        let merged = match by_uuid.get(uuid) {
            Some((_, By::Curator { same_session: false })) => By::Curator { same_session: false },
            _ => by,
        };
        by_uuid.insert(uuid, (value, merged));
    }
    by_uuid.into_values().collect()
}

/// Waits until `at_least` items are completed, naming `stage` and showing the consumers'
/// stderr when they are not in time.
async fn completes(
    zk: &zkr_connection::ZkClient,
    done: &str,
    at_least: usize,
    stage: &str,
    workers: &[Worker],
) {
    let deadline = tokio::time::Instant::now() + crate::timing().wait() * 2;
    loop {
        let count = completed(zk, done).await.len();
        if count >= at_least {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            let stderr: Vec<String> = workers.iter().map(|w| w.process.stderr_tail()).collect();
            panic!("{stage}: {count} of {at_least} items completed; the consumers' stderr: {stderr:#?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A consumer process and the last session it announced (`session <id>`).
struct Worker {
    process: PeerProcess,
    session: Option<i64>,
}

impl Worker {
    /// Reads the consumer's lines until it has taken an item and is working on it (no line for
    /// 5 ms after its `TAKEN`; the work takes 60 ms); that `TAKEN` line's value.
    async fn mid_item(&mut self) -> String {
        // The items taken and not done yet (a process may run several consumers).
        let mut taken = std::collections::BTreeSet::new();
        loop {
            match tokio::time::timeout(Duration::from_millis(5), self.process.next_line()).await {
                Ok(line) => {
                    let line = line.unwrap().expect("the consumer runs");
                    if let Some(value) = line.strip_prefix("TAKEN ") {
                        taken.insert(value.to_owned());
                    } else if let Some(value) = line.strip_prefix("DONE ") {
                        taken.remove(value);
                    } else if let Some(id) = line.strip_prefix("session ") {
                        self.session = id.trim().parse().ok();
                    }
                }
                Err(_) => {
                    if let Some(value) = taken.pop_first() {
                        return value;
                    }
                }
            }
        }
    }
}

/// A consumer process: zkr's `zkr-queue-worker` or `peer`'s, two consumers on one session.
fn consumer(peer: Option<Peer>, args: [&str; 4]) -> Worker {
    let [cs, path, locks, done] = args;
    let mut command = match peer {
        None => {
            let mut cmd =
                std::process::Command::new(super::bin_next_to_current_exe("zkr-queue-worker").expect(
                    "no zkr-queue-worker next to this executable: build the package's binaries first",
                ));
            cmd.args([cs, path, locks, done, "60", "2"]);
            cmd
        }
        Some(Peer::Curator) => {
            let tool = zkr_testing::peers::CuratorTool::locate().unwrap_or_else(|e| panic!("curator: {e}"));
            tool.command(&["checker-worker", "queue", cs, path, locks, done, "60", "2"])
        }
        Some(Peer::Kazoo) => panic!("kazoo's queues have a layout of their own: no kazoo consumer here"),
    };
    command.env("ZKR_PEER_SESSION_MS", SESSION.as_millis().to_string());
    let process = PeerProcess::spawn(peer.map_or("zkr-queue-worker", Peer::name), command).unwrap();
    Worker { process, session: None }
}

/// Three processes of two lock-safe queue consumers each on one client (`zkr-queue-worker`, 3 s
/// sessions, 60 ms per item), and with `peers` that many processes of two Curator consumers
/// (`CuratorTool checker-worker queue`), work a queue kept at 200 items or more until the last fault: first a zkr consumer
/// drawn from `seed` is SIGKILLed mid-item and replaced, then every fault drawn from `seed`
/// ([`faults::draw`]) lands while the consumer it is aimed at is mid-item. Every item is
/// completed, and completed once (each zkr completion record is created in the transaction
/// that acks the item), though two consumers share every session. An item completed twice is
/// excused only when all but one of its completions are a Curator consumer's whose session was
/// not the one it took the item on (CURATOR-605: Curator's consumer cannot learn that its lock
/// went, and finishes the item); those are counted in the summary.
///
/// # Panics
/// On a violation (an item completed twice or lost, a stage not completed in time), with the
/// seed; on kazoo peers (kazoo's queues have a layout of their own).
pub async fn queue_under_faults(
    cluster: &TestingCluster,
    seed: u64,
    peers: Option<(Peer, usize)>,
) -> Summary {
    use zkr_recipes::queues::{DistributedQueue, Utf8};
    let cs = cluster.connect_string();
    let root = unique_root("checker-queue");
    let (path, locks, done) = (format!("{root}/queue"), format!("{root}/locks"), format!("{root}/done"));
    let zk = crate::connect_with_session(cs.as_str(), 30).await;
    zk.create(&done, &[], zookeeper_client::CreateMode::Persistent).await.unwrap();
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    let mut want = Put::default();
    top_up(&zk, &queue, &mut want).await;
    let args = [cs.as_str(), path.as_str(), locks.as_str(), done.as_str()];
    let (peer, peer_count) = peers.map_or((None, 0), |(p, n)| (Some(p), n));
    let mut workers: Vec<_> = (0..3).map(|_| consumer(None, args)).collect();
    workers.extend((0..peer_count).map(|_| consumer(peer, args)));
    let stage = |what: &str| format!("seed {seed}: {what}");

    // First, while the queue is full: a zkr consumer SIGKILLed mid-item, and replaced (a
    // Curator consumer's record and its item's delete are not one transaction).
    let killed = usize::try_from(seed % 3).unwrap_or(0);
    let mut victim = workers.remove(killed);
    let taken = busy(&zk, &queue, &mut want, &mut victim, &stage("the consumer to kill")).await;
    drop(victim); // SIGKILL, mid-item: its lock goes with its session
    workers.insert(killed, consumer(None, args));
    let so_far = completed(&zk, &done).await.len();
    completes(&zk, &done, so_far + 10, &stage("after a consumer SIGKILL"), &workers).await;

    for (fault, target) in faults::draw(seed, workers.len()) {
        let worker = &mut workers[target];
        busy(&zk, &queue, &mut want, worker, &stage(&format!("consumer {target}"))).await;
        let session = worker.session.expect("a consumer says its session before its first item");
        let mark = |what: String| {
            eprintln!("[checker queue] seed {seed}: {what} (consumer {target}, session {session:#x})")
        };
        fault.inject(cluster, session, SESSION, mark).await.unwrap();
        // Work after the fault: the queue may have run dry meanwhile.
        top_up(&zk, &queue, &mut want).await;
        let so_far = completed(&zk, &done).await.len();
        completes(
            &zk,
            &done,
            so_far + 10,
            &stage(&format!("after {fault:?} at consumer {target}")),
            &workers,
        )
        .await;
    }
    // Every item is gone from the queue once its completion is recorded (zkr's in the ack's
    // transaction, Curator's before its delete).
    let drained = stage("after the faults: the queue drained");
    completes(&zk, &done, want.sure.len(), &drained, &workers).await;
    let queue_path = path.as_str();
    let items = || zk.retry(|s| async move { s.client().list_children(queue_path).await });
    let deadline = tokio::time::Instant::now() + crate::timing().wait();
    while !items().await.unwrap().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "{drained}: items left: {:?}", items().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Let a Curator consumer still finishing an item it lost finish it, before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let seen = completed(&zk, &done).await;
    let curator_605 = check_completions(&want, &seen).unwrap_or_else(|violation| {
        let peers: Vec<String> = workers[3..].iter().map(|w| w.process.stderr_tail()).collect();
        panic!("seed {seed}: {violation}; the peers' stderr: {peers:#?}")
    });
    assert!(
        seen.iter().any(|(value, _)| *value == taken),
        "seed {seed}: the item the killed consumer had taken was completed by another"
    );
    drop(workers);
    let peers = match peer {
        Some(peer) if peer_count > 0 => format!(
            " and {peer_count} {}'s; none completed twice but {curator_605} that it finished after its session \
             was replaced mid-item (CURATOR-605)",
            peer.name()
        ),
        _ => "; none completed twice".to_owned(),
    };
    let line = format!(
        "queue, seed {seed}: {} items completed ({} puts without an answer) through 7 faults, \
         4 zkr processes of 2 consumers{peers}",
        want.sure.len(),
        want.maybe.len()
    );
    Summary { operations: want.sure.len(), faults: 7, line }
}

/// Waits until `worker` is mid-item, keeping the queue topped up meanwhile; the item's value.
async fn busy(
    zk: &zkr_connection::ZkClient,
    queue: &zkr_recipes::queues::DistributedQueue<String>,
    put: &mut Put,
    worker: &mut Worker,
    who: &str,
) -> String {
    let deadline = tokio::time::Instant::now() + crate::timing().wait();
    loop {
        top_up(zk, queue, put).await;
        // Cancelled, `mid_item` forgets the items it saw taken: the next call waits for another.
        if let Ok(value) = tokio::time::timeout(Duration::from_secs(2), worker.mid_item()).await {
            return value;
        }
        let stderr = worker.process.stderr_tail();
        assert!(tokio::time::Instant::now() < deadline, "{who}: not mid-item in time; its stderr:\n{stderr}");
    }
}

/// The items put: those put for sure, and those whose put failed, which may be in the queue
/// or not (a put without an answer may have been applied).
#[derive(Default)]
struct Put {
    sure: Vec<String>,
    maybe: Vec<String>,
}

impl Put {
    fn len(&self) -> usize {
        self.sure.len() + self.maybe.len()
    }
}

/// Puts items (`item<i>`, numbered on) until the queue holds 200, so that no fault finds it
/// empty (8 consumers take about 130 items a second). The check's own client rides the faults
/// too: a put that fails is not tried again (it may have been applied), it is a maybe.
async fn top_up(
    zk: &zkr_connection::ZkClient,
    queue: &zkr_recipes::queues::DistributedQueue<String>,
    put: &mut Put,
) {
    let path = queue.path();
    let listed = zk.retry(|s| async move { s.client().list_children(path).await }).await;
    for _ in listed.map_or(0, |items| items.len())..200 {
        let value = format!("item{}", put.len());
        match queue.put(&value).await {
            Ok(_) => put.sure.push(value),
            Err(e) => {
                eprintln!("[checker queue] put {value}: {e}");
                put.maybe.push(value);
            }
        }
    }
}

/// Every item of `want` completed (those put for sure; the maybes at most once), none twice but
/// for Curator's replaced-session completions (see [`queue_under_faults`]); how many items
/// those completed twice, or what was wrong.
fn check_completions(want: &Put, seen: &[(String, By)]) -> Result<usize, String> {
    let mut by_item = BTreeMap::<&str, Vec<By>>::new();
    for (value, by) in seen {
        by_item.entry(value).or_default().push(*by);
    }
    let lost: Vec<_> = want.sure.iter().filter(|w| !by_item.contains_key(w.as_str())).collect();
    if !lost.is_empty() {
        return Err(format!("items lost: {lost:?}"));
    }
    let mut curator_605 = 0;
    for (value, by) in &by_item {
        let fenced = by.iter().filter(|b| **b != By::Curator { same_session: false }).count();
        if fenced > 1 {
            return Err(format!("{value} completed more than once: {by:?}"));
        }
        curator_605 += usize::from(by.len() > 1);
    }
    Ok(curator_605)
}
