//! The mutual-exclusion checker's CI run (`zkr_integration_tests::checker`): 3 worker
//! processes share one `InterProcessMutex` on a 3-server ensemble under each fault schedule
//! alone and all together. No lost update, no leaked lock node, no hung acquire, and every
//! fault is followed by a committed critical section. The report table goes to stderr; the
//! long run is `cargo run -p zkr-integration-tests --bin zkr-checker -- --rounds N`.

use zkr_integration_tests::checker::{run_all, CheckOptions, Schedule};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_holds_under_every_fault_schedule() {
    let cluster = zkr_integration_tests::faults::partitionable_cluster().await;
    let options = CheckOptions::new(env!("CARGO_BIN_EXE_zkr-mutex-worker"));
    let (reports, table) = run_all(&cluster, &Schedule::ci(), &options).await.unwrap();
    eprintln!("{table}");
    for report in &reports {
        assert!(
            report.passed(),
            "schedule `{}` failed: {}\n{:?}",
            report.schedule,
            report.row(),
            report.notes
        );
        assert!(report.faults > 0 || report.cancelled > 0, "schedule `{}` injected nothing", report.schedule);
    }
}
