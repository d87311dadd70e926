//! The mutual-exclusion checker's CI run (`zkr_integration_tests::checker`): 3 worker
//! processes share one `InterProcessMutex` on a 3-server ensemble under each fault schedule
//! alone and all together. No lost update, no leaked lock node, no hung acquire, and every
//! fault is followed by a committed critical section, and the history of every acquire, read,
//! write and release is linearizable; the same run with the fence taken away fails. Then the
//! same for `LeaderLatch` leaders writing through their terms: one leader at a time. The report
//! table goes to stderr; the long run is
//! `cargo build -p zkr-integration-tests --bins && target/debug/zkr-checker --rounds N`
//! (`--recipe leader` for the leaders).

use std::time::Duration;

use zkr_integration_tests::checker::{run_all, CheckOptions, Fault, Peer, Report, Schedule};
use zkr_testing::TestingCluster;

/// One ensemble for both checks (each fault strikes all of its clients): the mutex's, then
/// the leaders'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_and_one_leader_at_a_time_hold_under_fault_schedules() {
    let cluster = zkr_integration_tests::faults::partitionable_cluster().await;
    mutual_exclusion_holds_under_every_fault_schedule(&cluster).await;
    one_leader_at_a_time_under_faults(&cluster).await;
    a_mixed_fleet_with_curator_or_kazoo_shares_the_lock_and_the_election(&cluster).await;
}

async fn mutual_exclusion_holds_under_every_fault_schedule(cluster: &TestingCluster) {
    let options = CheckOptions::new(env!("CARGO_BIN_EXE_zkr-mutex-worker"));
    // The usual schedules, and one drawn from a fixed seed (a failing one prints its replay).
    let mut schedules = Schedule::ci();
    schedules.push(Schedule::seeded(46, 3));
    for report in all_pass(cluster, &schedules, &options).await {
        assert!(report.faults > 0 || report.cancelled > 0, "schedule `{}` injected nothing", report.schedule);
    }
    // The same checker fails a lock whose holder writes without its fence: a holder blackholed
    // past its session writes after another took the lock. The history says where.
    let notes = unfenced_fails(cluster, "holder blackholed, writes unfenced", options).await;
    eprintln!("{}", notes[0]);
}

/// One leader at a time: `LeaderLatch` leaders write through their terms under the faults
/// aimed at the leader (blackholed past its session, its server cut off from the quorum) and
/// seeded ones; the same leaders writing without the term's fence fail the history.
async fn one_leader_at_a_time_under_faults(cluster: &TestingCluster) {
    let options = CheckOptions { leader: true, ..CheckOptions::new(env!("CARGO_BIN_EXE_zkr-mutex-worker")) };
    let named = [Fault::Blackhole.name(), Fault::IsolateServer.name()];
    let mut schedules: Vec<Schedule> =
        Schedule::ci().into_iter().filter(|s| named.contains(&s.name.as_str())).collect();
    schedules.push(Schedule::seeded(47, 3));
    for report in all_pass(cluster, &schedules, &options).await {
        assert!(report.replay.ends_with("--recipe leader"), "{}", report.replay);
    }
    unfenced_fails(cluster, "leader blackholed, writes unfenced", options).await;
}

/// Issue 46 item 3: one of the three workers is an Apache Curator process
/// (`InterProcessMutex`, then `LeaderLatch`, on the same path), then a kazoo process (`Lock`,
/// the zkr workers taking `InterProcessMutex::kazoo`), so that the history checks the layout
/// they share: the other library's acquire and zkr's never hold at once, under faults aimed at
/// the holder (whichever library it runs).
async fn a_mixed_fleet_with_curator_or_kazoo_shares_the_lock_and_the_election(cluster: &TestingCluster) {
    let fleets = [(Peer::Curator, false, 48), (Peer::Curator, true, 49), (Peer::Kazoo, false, 50)];
    for (peer, leader, seed) in fleets {
        let worker = env!("CARGO_BIN_EXE_zkr-mutex-worker");
        let options = CheckOptions { leader, peers: Some((peer, 1)), ..CheckOptions::new(worker) };
        for report in all_pass(cluster, &[Schedule::seeded(seed, 3)], &options).await {
            assert!(report.replay.ends_with(&format!("--{} 1", peer.name())), "{}", report.replay);
            eprintln!(
                "{}'s acquisitions: {} of {}",
                peer.name(),
                report.peer_acquisitions,
                report.acquisitions
            );
            let zkr = report.acquisitions - report.peer_acquisitions;
            assert!(report.peer_acquisitions > 0 && zkr > 0, "both libraries took turns: {report:?}");
        }
    }
}

/// Runs `schedules`; each must pass.
async fn all_pass(cluster: &TestingCluster, schedules: &[Schedule], options: &CheckOptions) -> Vec<Report> {
    let (reports, table) = run_all(cluster, schedules, options).await.unwrap();
    eprintln!("{table}");
    for report in &reports {
        assert!(
            report.passed(),
            "schedule `{}` failed: {}\n{:?}\nreplay: {}",
            report.schedule,
            report.row(),
            report.notes,
            report.replay
        );
    }
    reports
}

/// The holder blackholed past its session with `options`' workers writing unfenced: the
/// counter and the history must both fail it. Answers the history's notes.
async fn unfenced_fails(cluster: &TestingCluster, name: &str, options: CheckOptions) -> Vec<String> {
    let unfenced = CheckOptions { unfenced: true, ..options };
    let schedule = Schedule {
        name: name.to_owned(),
        faults: vec![Fault::Blackhole],
        rounds: 1,
        cancel_percent: 0,
        quiet_run: Duration::ZERO,
        seed: 0,
        replay_args: String::new(),
    };
    let (mut reports, table) = run_all(cluster, &[schedule], &unfenced).await.unwrap();
    eprintln!("{table}");
    let report = reports.remove(0);
    let history_notes: Vec<_> = report.notes.iter().filter(|n| n.starts_with("history:")).cloned().collect();
    assert!(report.violations > 0 && !history_notes.is_empty(), "{report:?}");
    history_notes
}
