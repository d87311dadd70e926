//! The mutual-exclusion checker's CI run (`zkr_integration_tests::checker`): 3 worker
//! processes share one `InterProcessMutex` on a 3-server ensemble under each fault schedule
//! alone and all together. No lost update, no leaked lock node, no hung acquire, and every
//! fault is followed by a committed critical section, and the history of every acquire, read,
//! write and release is linearizable; the same run with the fence taken away fails. The report
//! table goes to stderr; the long run is
//! `cargo build -p zkr-integration-tests --bins && target/debug/zkr-checker --rounds N`.

use std::time::Duration;

use zkr_integration_tests::checker::{run_all, CheckOptions, Fault, Schedule};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_holds_under_every_fault_schedule() {
    let cluster = zkr_integration_tests::faults::partitionable_cluster().await;
    let options = CheckOptions::new(env!("CARGO_BIN_EXE_zkr-mutex-worker"));
    // The usual schedules, and one drawn from a fixed seed (a failing one prints its replay).
    let mut schedules = Schedule::ci();
    schedules.push(Schedule::seeded(46, 3));
    let (reports, table) = run_all(&cluster, &schedules, &options).await.unwrap();
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
        assert!(report.faults > 0 || report.cancelled > 0, "schedule `{}` injected nothing", report.schedule);
    }

    // The same checker fails a lock whose holder writes without its fence: a holder blackholed
    // past its session writes after another took the lock. The history says where.
    let unfenced = CheckOptions { unfenced: true, ..options };
    let schedule = Schedule {
        name: "holder blackholed, writes unfenced".to_owned(),
        faults: vec![Fault::Blackhole],
        rounds: 1,
        cancel_percent: 0,
        quiet_run: Duration::ZERO,
        seed: 0,
        replay_args: String::new(),
    };
    let (reports, table) = run_all(&cluster, &[schedule], &unfenced).await.unwrap();
    eprintln!("{table}");
    let history_notes: Vec<_> = reports[0].notes.iter().filter(|n| n.starts_with("history:")).collect();
    assert!(reports[0].violations > 0 && !history_notes.is_empty(), "{:?}", reports[0]);
    eprintln!("{}", history_notes[0]);
}
