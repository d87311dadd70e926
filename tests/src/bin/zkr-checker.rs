//! The mutual-exclusion checker as a soak run: `zkr-checker [--rounds N] [--servers 3|5]`
//! starts its own ensemble, runs every fault schedule of
//! [`zkr_integration_tests::checker`] N times over (default 5) and prints the report table.
//! Exit status 0 when every schedule passed, 1 when one did not, 2 for bad arguments.
//!
//! ```sh
//! cargo run -p zkr-integration-tests --bin zkr-checker -- --rounds 5
//! ```

use std::process::ExitCode;

use zkr_integration_tests::checker::{run_all, worker_next_to_current_exe, CheckOptions, Schedule};
use zkr_testing::TestingCluster;

fn usage() -> ExitCode {
    eprintln!("usage: zkr-checker [--rounds N] [--servers 3|5]");
    ExitCode::from(2)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let (mut rounds, mut servers) = (5usize, 3usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|v| v.parse().ok());
        match (arg.as_str(), value) {
            ("--rounds", Some(n)) if n > 0 => rounds = n,
            ("--servers", Some(n @ (3 | 5))) => servers = n,
            _ => return usage(),
        }
    }
    let Some(worker) = worker_next_to_current_exe() else {
        eprintln!("zkr-checker: no zkr-mutex-worker next to this binary; build the package's binaries first");
        return ExitCode::FAILURE;
    };
    let options = zkr_testing::ServerOptions::default().partitionable(true);
    let cluster = match TestingCluster::with_options(servers, options).await {
        Ok(cluster) => cluster,
        Err(e) => {
            eprintln!("zkr-checker: starting {servers} servers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let options = CheckOptions::new(worker);
    let started = std::time::Instant::now();
    match run_all(&cluster, &Schedule::soak(rounds), &options).await {
        Ok((reports, table)) => {
            println!(
                "{servers} servers, {} workers, {rounds} rounds, {:.0} s\n",
                options.workers,
                started.elapsed().as_secs_f64()
            );
            println!("{table}");
            let failed: Vec<_> = reports.iter().filter(|r| !r.passed()).collect();
            for r in &failed {
                println!("\nFAILED {}: {:?}", r.schedule, r.notes);
            }
            if failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("zkr-checker: {e}");
            ExitCode::FAILURE
        }
    }
}
