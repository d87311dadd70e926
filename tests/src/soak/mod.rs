//! `make soak`: every checker again and again with random seeds on one ensemble for as long as
//! asked, while a resident process (`zkr-soak-resident`, [`resident`]) keeps every recipe
//! family working on one long-lived client through all of their faults and one fault of its
//! own after each check. Every 10 s the resident's and the soak's own memory, open files,
//! sockets and tasks are sampled, with the ensemble's node and ephemeral counts. At the end:
//! no check failed, no resident workload broke a promise or stalled, the resident's memory did
//! not grow after the warm-up, it left no node on its live session, and once closed it has no
//! task or socket left, and no ephemeral node is left in the ensemble. Each failure prints the
//! command that replays its seed.

pub mod resident;
pub mod sample;

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};
use zkr_testing::TestingCluster;

use crate::checker::{self, CheckOptions, Peer, Schedule, Summary};
use crate::faults::ClientFault;

/// Every check the soak runs, by name.
pub const CHECKS: [&str; 15] = [
    "mutex",
    "leader",
    "curator-mutex",
    "curator-leader",
    "kazoo-mutex",
    "sequential",
    "segment",
    "snowflake",
    "counter",
    "curator-counter",
    "kazoo-counter",
    "queue",
    "curator-queue",
    "barrier",
    "config",
];

/// The longest a check may take before it counts as hung.
pub const CHECK_BOUND: Duration = Duration::from_secs(15 * 60);

/// Runs check `name` on `cluster` with its faults drawn from `seed`. A panic of the check, a failed mutex schedule and
/// a check that does not end within [`CHECK_BOUND`] are `Err`, with what it said.
///
/// # Errors
/// The check failed; an unknown name.
pub async fn run_check(cluster: &Arc<TestingCluster>, name: &str, seed: u64) -> Result<Summary, String> {
    let (cluster, owned) = (cluster.clone(), name.to_owned());
    let task = tokio::spawn(async move {
        let cluster = cluster.as_ref();
        match owned.as_str() {
            "mutex" => mutex(cluster, seed, false, None).await,
            "leader" => mutex(cluster, seed, true, None).await,
            // A mixed fleet: one of the three workers is a Curator (or kazoo) process.
            "curator-mutex" => mutex(cluster, seed, false, Some((Peer::Curator, 1))).await,
            "curator-leader" => mutex(cluster, seed, true, Some((Peer::Curator, 1))).await,
            "kazoo-mutex" => mutex(cluster, seed, false, Some((Peer::Kazoo, 1))).await,
            "queue" => Ok(checker::queue::queue_under_faults(cluster, seed, None).await),
            // Curator's consumers beside zkr's on one queue.
            "curator-queue" => {
                Ok(checker::queue::queue_under_faults(cluster, seed, Some((Peer::Curator, 1))).await)
            }
            "barrier" => Ok(checker::barrier::barrier_under_faults(cluster, seed).await),
            "config" => Ok(checker::config::config_under_faults(cluster, seed).await),
            kind @ ("sequential" | "segment" | "snowflake" | "counter") => {
                Ok(checker::ids::kind_under_faults(cluster, kind, seed, None).await)
            }
            // The counter with a Curator (or kazoo) process incrementing beside the workers.
            "curator-counter" => {
                Ok(checker::ids::kind_under_faults(cluster, "counter", seed, Some((Peer::Curator, 1))).await)
            }
            "kazoo-counter" => {
                Ok(checker::ids::kind_under_faults(cluster, "kazoo-counter", seed, Some((Peer::Kazoo, 1)))
                    .await)
            }
            other => Err(format!("no check named {other}; the checks: {}", CHECKS.join(", "))),
        }
    });
    let abort = task.abort_handle();
    match tokio::time::timeout(CHECK_BOUND, task).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) if e.is_panic() => Err(panic_message(e.into_panic())),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => {
            abort.abort();
            Err(format!("hung: no end within {CHECK_BOUND:?}"))
        }
    }
}

/// The mutual-exclusion checker, its workers holding the mutex or (`leader`) leading, `peers`
/// of them another library's processes.
async fn mutex(
    cluster: &TestingCluster,
    seed: u64,
    leader: bool,
    peers: Option<(Peer, usize)>,
) -> Result<Summary, String> {
    let worker =
        checker::worker_next_to_current_exe().ok_or("no zkr-mutex-worker next to this executable")?;
    let root = crate::unique_root(if leader { "soak-leader" } else { "soak-mutex" });
    let options = CheckOptions { leader, peers, ..CheckOptions::new(worker) };
    let report = checker::run_schedule(cluster, &root, &Schedule::seeded(seed, 4), &options).await?;
    if report.passed() {
        Ok(Summary { operations: report.history.0, faults: report.faults, line: report.row() })
    } else {
        Err(format!("{}: {:?}", report.row(), report.notes))
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload.downcast::<&str>().map_or_else(|_| "a panic".to_owned(), |s| (*s).to_owned()),
    }
}

/// The fault the soak aims at the resident after a check of `seed`: drawn from the seed, so
/// that a replay injects it again.
pub fn resident_fault(seed: u64) -> ClientFault {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed_0f2e_51de_2700);
    ClientFault::ALL[rng.random_range(0..ClientFault::ALL.len())]
}

/// The command that runs check `name` with `seed` again on `cluster`'s release (with the
/// resident, as in the soak).
pub fn replay(cluster: &TestingCluster, name: &str, seed: u64) -> String {
    let release = cluster.release().version();
    format!(
        "cargo build -p zkr-integration-tests --bins && ZKR_ZK_VERSION={release} target/debug/zkr-soak --check {name} --seed {seed}"
    )
}

/// After a failed check: every member resumed, joined and serving again (restarted if it is
/// not), so that the next check starts on a whole ensemble.
pub async fn recover(cluster: &TestingCluster) {
    for i in 0..cluster.size() {
        let _ = cluster.resume(i);
        let _ = cluster.heal(i);
        if cluster.wait_serving(i, Duration::from_secs(30)).await.is_err() {
            let _ = cluster.restart(i).await;
        }
    }
}

/// The ensemble's `zk_znode_count` and `zk_ephemerals_count`, from the first member that
/// answers `mntr` (every member holds the whole tree).
pub async fn tree_counts(cluster: &TestingCluster) -> Option<(u64, u64)> {
    for i in 0..cluster.size() {
        let Ok(Ok(mntr)) =
            tokio::time::timeout(Duration::from_secs(2), cluster.four_letter_word(i, "mntr")).await
        else {
            continue;
        };
        let pairs = zkr_testing::parse_mntr(&mntr);
        let get = |key: &str| pairs.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.parse().ok());
        if let (Some(nodes), Some(ephemerals)) = (get("zk_znode_count"), get("zk_ephemerals_count")) {
            return Some((nodes, ephemerals));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resident_fault_is_the_seeds_and_every_kind_is_drawn() {
        assert_eq!(resident_fault(7), resident_fault(7));
        let drawn: std::collections::BTreeSet<_> =
            (0..200).map(|s| format!("{:?}", resident_fault(s))).collect();
        assert_eq!(drawn.len(), ClientFault::ALL.len(), "{drawn:?}");
    }

    #[test]
    fn a_panic_says_what_it_said() {
        let said = std::panic::catch_unwind(|| panic!("lost {}", 3)).unwrap_err();
        assert_eq!(panic_message(said), "lost 3");
        let said = std::panic::catch_unwind(|| panic!("static")).unwrap_err();
        assert_eq!(panic_message(said), "static");
    }
}
