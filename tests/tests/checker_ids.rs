//! The ID checker: for each generator kind, three `zkr-id-worker` processes draw IDs from a
//! 3-server ensemble while the checker's faults run one after another: the ZooKeeper leader
//! killed and restarted, a follower serving a worker killed and restarted, the server of a
//! worker paused (`SIGSTOP`) longer than the session timeout, a worker's session expired, and
//! a worker killed with `SIGKILL` and replaced. Every worker makes progress after every fault,
//! no ID is handed out twice across processes, and each process's IDs increase. The per-kind
//! summary (IDs, faults, slowest recovery) goes to stderr. The same schedule runs three
//! processes incrementing one `DistributedAtomicLong`: every success has its own value, and the
//! final count is the successes plus at most the outcomes the workers could not know. Then
//! three lock-safe queue consumers through a leader kill, a follower kill and a consumer
//! SIGKILLed mid-item: every item is completed exactly once.

use std::path::Path;
use std::time::Duration;

use zkr_integration_tests::faults;
use zkr_integration_tests::id_worker::{check_runs, progress, IdWorker};
use zkr_integration_tests::unique_root;
use zkr_testing::TestingCluster;

/// The workers' session timeout (set in `zkr-id-worker`).
const WORKER_SESSION: Duration = Duration::from_secs(4);

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_zkr-id-worker"))
}

async fn kind_under_faults(cluster: &TestingCluster, kind: &str) {
    let cs = cluster.connect_string();
    let path = format!("{}/{kind}", unique_root("checker-ids"));
    let mut workers = Vec::new();
    for i in 0..3 {
        workers.push(IdWorker::spawn(binary(), &cs, kind, &path, 0, &format!("w{i}")).await);
    }
    let mut recoveries = Vec::new();
    recoveries.push(progress(&workers.iter().collect::<Vec<_>>(), 50, "start").await);

    let victim = faults::leader(cluster).await.unwrap();
    faults::kill_and_restart(cluster, victim, Duration::from_secs(1)).await.unwrap();
    recoveries.push(progress(&workers.iter().collect::<Vec<_>>(), 50, "after a leader kill").await);

    let sessions: Vec<i64> = workers.iter().map(IdWorker::session).collect();
    let victim = faults::follower_serving(cluster, &sessions).await.unwrap();
    faults::kill_and_restart(cluster, victim, Duration::from_secs(1)).await.unwrap();
    recoveries.push(progress(&workers.iter().collect::<Vec<_>>(), 50, "after a follower kill").await);

    let server = faults::server_serving(cluster, workers[0].session()).await.unwrap();
    faults::pause_for(cluster, server, WORKER_SESSION + Duration::from_secs(1)).await.unwrap();
    recoveries.push(progress(&workers.iter().collect::<Vec<_>>(), 50, "after a server pause").await);

    zkr_testing::expire_session_id(workers[1].session(), WORKER_SESSION, &cs).await.unwrap();
    recoveries.push(progress(&workers.iter().collect::<Vec<_>>(), 50, "after a session expiry").await);

    let mut unknown = workers[2].unknown() + 1; // + the increment in flight when it was killed
    let killed = workers.remove(2).kill().await;
    workers.push(IdWorker::spawn(binary(), &cs, kind, &path, 0, "w2").await);
    recoveries.push(progress(&workers.iter().collect::<Vec<_>>(), 50, "after a worker SIGKILL").await);

    let mut runs = vec![killed];
    for worker in workers {
        unknown += worker.unknown();
        runs.push(worker.finish().await);
    }
    let ids = check_runs(&runs);
    if kind == "counter" {
        check_count(&cs, &path, &ids, unknown).await;
    }
    let slowest = recoveries.iter().max().copied().unwrap_or_default();
    eprintln!(
        "[checker ids] {kind}: {} IDs from 4 processes, 5 faults, 0 duplicates, slowest progress after a fault {} ms",
        ids.len(),
        slowest.as_millis()
    );
}

/// The counter's final value counts every increment that reported success once, and the
/// others only when they could not know: successes <= final <= successes + unknown outcomes.
/// (`check_runs` has already shown that no two successes got the same value.)
async fn check_count(cs: &str, path: &str, successes: &[u64], unknown: usize) {
    let observer = zookeeper_client::Client::connect(cs).await.unwrap();
    let (data, _) = observer.get_data(path).await.unwrap();
    let total = u64::try_from(i64::from_be_bytes(data.try_into().expect("8 bytes"))).unwrap();
    let known = successes.len() as u64;
    assert!(total >= known, "the counter is {total} but {known} increments succeeded");
    assert!(
        total <= known + unknown as u64,
        "the counter is {total}: more than {known} successes and {unknown} unknown"
    );
    assert!(successes.iter().all(|v| (1..=total).contains(v)), "a success's value is beyond the count");
    eprintln!("[checker ids] counter: {total} counted, {known} increments reported success, {unknown} could not know");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_id_is_handed_out_twice_under_faults() {
    let cluster = TestingCluster::start(3).await.unwrap();
    for kind in ["sequential", "segment", "snowflake"] {
        kind_under_faults(&cluster, kind).await;
    }
}

/// The completion records under `done` (`<value>-<uuid>`), as values.
async fn completed(zk: &zkr_connection::ZkClient, done: &str) -> Vec<String> {
    let names = zk.retry(|s| async move { s.client().list_children(done).await }).await.unwrap();
    names.iter().map(|n| n.rsplit_once('-').map_or(n.clone(), |(v, _)| v.to_owned())).collect()
}

/// Waits until `at_least` items are completed, naming `stage` when they are not in time.
async fn completes(zk: &zkr_connection::ZkClient, done: &str, at_least: usize, stage: &str) {
    let deadline = tokio::time::Instant::now() + zkr_integration_tests::timing().wait() * 2;
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
async fn queue_under_faults(cluster: &TestingCluster) {
    use zkr_recipes::queues::{DistributedQueue, Utf8};
    const N: usize = 600;
    let cs = cluster.connect_string();
    let root = unique_root("checker-queue");
    let (path, locks, done) = (format!("{root}/queue"), format!("{root}/locks"), format!("{root}/done"));
    let zk = zkr_integration_tests::connect_with_session(cs.as_str(), 30).await;
    zk.create(&done, &[], zookeeper_client::CreateMode::Persistent).await.unwrap();
    let queue = DistributedQueue::builder(&zk, &path, Utf8).lock_path(&locks).build().unwrap();
    let want: Vec<String> = (0..N).map(|i| format!("item{i}")).collect();
    for value in &want {
        queue.put(value).await.unwrap();
    }
    let spawn = || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zkr-queue-worker"));
        cmd.args([cs.as_str(), &path, &locks, &done, "60", "2"]);
        zkr_testing::peers::PeerProcess::spawn("zkr-queue-worker", cmd).unwrap()
    };
    let mut workers: Vec<_> = (0..3).map(|_| spawn()).collect();

    // First, while the queue is full: a consumer SIGKILLed mid-item, and replaced.
    let mut victim = workers.remove(0);
    let (taken, _) = tokio::time::timeout(zkr_integration_tests::timing().wait(), mid_item(&mut victim))
        .await
        .expect("a consumer mid-item in time");
    drop(victim); // SIGKILL, mid-item: its lock goes with its session
    workers.push(spawn());
    completes(&zk, &done, 10, "after a consumer SIGKILL").await;

    // A consumer's session expires mid-item: its two consumers' locks go with it.
    let (_, session) =
        tokio::time::timeout(zkr_integration_tests::timing().wait(), mid_item(&mut workers[0]))
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
    eprintln!(
        "[checker ids] queue: {N} items completed exactly once through 4 faults, 4 processes of 2 consumers"
    );
}

/// Issue 19's checkers: several processes increment one `DistributedAtomicLong`, then
/// lock-safe queue consumers work a queue, through the same kinds of faults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_increment_or_queue_item_is_counted_twice_or_lost_under_faults() {
    let cluster = TestingCluster::start(3).await.unwrap();
    kind_under_faults(&cluster, "counter").await;
    queue_under_faults(&cluster).await;
}
