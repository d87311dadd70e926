//! The mutual-exclusion checker as a soak run: `zkr-checker [--rounds N] [--servers 3|5]`
//! starts its own ensemble, runs every fault schedule of
//! [`zkr_integration_tests::checker`] N times over (default 5) and prints the report table.
//!
//! - `--seed S --faults N`: only the schedule of N faults drawn from seed S
//!   ([`Schedule::seeded`]): what a failing seeded run prints to replay it;
//! - `--seeds K [--faults N]`: K seeded schedules of N faults (default 4), their seeds drawn
//!   from the system's entropy and printed;
//! - `--schedule NAME`: only the named schedule of the usual set (with `--rounds`, default 1:
//!   the length `make test` runs);
//! - `--recipe leader`: the workers take turns as `LeaderLatch` leaders writing through their
//!   terms instead of `InterProcessMutex` holders (`--recipe mutex`, the default);
//! - `--curator N`: N of the 3 workers are Apache Curator processes on the same lock or
//!   election (a mixed fleet; default 0);
//! - `--kazoo N`: N of the 3 workers are kazoo processes on the same lock, the others taking
//!   `InterProcessMutex::kazoo` (kazoo's layout; the mutex only).
//!
//! Exit status 0 when every schedule passed, 1 when one did not, 2 for bad arguments. A failed
//! schedule prints the command that replays it.
//!
//! ```sh
//! cargo build -p zkr-integration-tests --bins && target/debug/zkr-checker --rounds 5
//! ```

use std::process::ExitCode;

use zkr_integration_tests::checker::{run_all, worker_next_to_current_exe, CheckOptions, Peer, Schedule};
use zkr_testing::TestingCluster;

fn usage() -> ExitCode {
    eprintln!(
        "usage: zkr-checker [--rounds N] [--servers 3|5] [--recipe mutex|leader] [--curator N | --kazoo N] [--seed S --faults N | --seeds K [--faults N] | --schedule NAME]"
    );
    ExitCode::from(2)
}

/// What the command line asks for.
struct Plan {
    schedules: Vec<Schedule>,
    servers: usize,
    leader: bool,
    peers: Option<(Peer, usize)>,
}

/// What to run, from the command line; `None` for bad arguments.
fn schedules(args: &[String]) -> Option<Plan> {
    let (mut rounds, mut servers, mut faults, mut leader, mut peers) = (None, 3usize, None, false, None);
    let (mut seed, mut seeds, mut name) = (None, None, None);
    for pair in args.chunks(2) {
        let [flag, value] = pair else { return None };
        let n = value.parse::<u64>().ok();
        match (flag.as_str(), n) {
            ("--rounds", Some(n @ 1..)) => rounds = Some(n as usize),
            ("--servers", Some(n @ (3 | 5))) => servers = n as usize,
            ("--faults", Some(n @ 1..)) => faults = Some(n as usize),
            ("--seed", Some(s)) => seed = Some(s),
            ("--seeds", Some(k @ 1..)) => seeds = Some(k),
            ("--schedule", _) => name = Some(value.clone()),
            ("--recipe", _) if value == "mutex" || value == "leader" => leader = value == "leader",
            ("--curator", Some(n @ 0..=3)) => peers = Some((Peer::Curator, n as usize)),
            ("--kazoo", Some(n @ 0..=3)) => peers = Some((Peer::Kazoo, n as usize)),
            _ => return None,
        }
    }
    let chosen = match (seed, seeds, name) {
        (Some(seed), None, None) => vec![Schedule::seeded(seed, faults?)],
        (None, Some(k), None) => {
            (0..k).map(|_| Schedule::seeded(rand::random(), faults.unwrap_or(4))).collect()
        }
        (None, None, Some(name)) => {
            Schedule::soak(rounds.unwrap_or(1)).into_iter().filter(|s| s.name == name).collect::<Vec<_>>()
        }
        (None, None, None) if faults.is_none() => Schedule::soak(rounds.unwrap_or(5)),
        _ => return None,
    };
    (!chosen.is_empty()).then_some(Plan { schedules: chosen, servers, leader, peers })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(Plan { schedules, servers, leader, peers }) = schedules(&args) else { return usage() };
    let Some(worker) = worker_next_to_current_exe() else {
        eprintln!("zkr-checker: no zkr-mutex-worker next to this binary; build the package's binaries first");
        return ExitCode::FAILURE;
    };
    let options = zkr_testing::ServerOptions::default().network_namespaces(true);
    let cluster = match TestingCluster::with_options(servers, options).await {
        Ok(cluster) => cluster,
        Err(e) => {
            eprintln!("zkr-checker: starting {servers} servers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let options = CheckOptions { leader, peers, ..CheckOptions::new(worker) };
    let (peer, n) = peers.map_or(("peer", 0), |(p, n)| (p.name(), n));
    let started = std::time::Instant::now();
    match run_all(&cluster, &schedules, &options).await {
        Ok((reports, table)) => {
            println!(
                "{servers} servers, {} workers ({}, {n} of them {peer}'s), {} schedules, {:.0} s\n",
                options.workers,
                if leader { "LeaderLatch leaders" } else { "InterProcessMutex holders" },
                schedules.len(),
                started.elapsed().as_secs_f64()
            );
            println!("{table}");
            if n > 0 {
                let by: Vec<String> = reports.iter().map(|r| r.peer_acquisitions.to_string()).collect();
                println!("\nacquisitions by the {peer} workers, per schedule: {}", by.join(", "));
            }
            let failed: Vec<_> = reports.iter().filter(|r| !r.passed()).collect();
            for r in &failed {
                println!("\nFAILED {}: {:?}\nreplay: {}", r.schedule, r.notes, r.replay);
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
