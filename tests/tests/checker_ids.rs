//! The ID checker: for each generator kind, three `zkr-id-worker` processes draw IDs from a
//! 3-server ensemble while the checker's faults run one after another: the ZooKeeper leader
//! killed and restarted, a follower serving a worker killed and restarted, the server of a
//! worker paused (`SIGSTOP`) longer than the session timeout, a worker's session expired, and
//! a worker killed with `SIGKILL` and replaced. Every worker makes progress after every fault,
//! no ID is handed out twice across processes, and each process's IDs increase. The per-kind
//! summary (IDs, faults, slowest recovery) goes to stderr. The same schedule runs three
//! processes incrementing one `DistributedAtomicLong`: every success has its own value, and the
//! final count is the successes plus at most the outcomes the workers could not know.

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

/// Issue 19's counter checker: several processes increment one `DistributedAtomicLong`
/// through the same faults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_increment_is_counted_twice_or_lost_under_faults() {
    let cluster = TestingCluster::start(3).await.unwrap();
    kind_under_faults(&cluster, "counter").await;
}
