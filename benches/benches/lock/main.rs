//! The lock benchmark: zkr's `InterProcessMutex` against Apache Curator's `InterProcessMutex`
//! (a peer JVM run by `zkr_testing::peers::CuratorTool`) and against `zookeeper-client`'s own
//! `Client::lock`, all on the servers started for the run: one standalone
//! `zkr_testing::TestingServer` (its defaults: `forceSync=yes`), or a 3-server ensemble behind
//! latency proxies (`zkr_benches::Deployment::from_env`).
//!
//! ```sh
//! ZKR_BENCH_DEPLOY=ensemble ZKR_BENCH_RTT_MS=2 cargo bench -p zkr-benches --bench lock -- --only uncontended,contended
//! cargo bench -p zkr-benches --bench lock                     # 5 s measurement windows
//! cargo bench -p zkr-benches --bench lock -- --quick          # 1 s windows, small sizes
//! cargo bench -p zkr-benches --bench lock -- --only contended --seconds 10
//! cargo bench -p zkr-benches --bench lock -- --only waiters --zkr-waiters 5000 --peer-waiters 500
//! ```
//!
//! Scenarios (each measurement has a 1 s warm-up and its own lock path):
//!
//! 1. `uncontended`: one session, acquire+release cycles: zkr, Curator, `Client::lock`, and the
//!    floor (`create` of an ephemeral sequential node + `delete`, each awaited);
//! 2. `contended`: 8 sessions (8 clients, one task or thread each) on one lock;
//! 3. `inprocess`: 32 tasks (threads for Curator) sharing one mutex on one session;
//! 4. `waiters`: N waiters queued behind a holder in one process (a child process per run, so
//!    the peak RSS is the library's alone), then the time for all of them to get the lock once;
//! 5. `requests`: ZooKeeper packets per uncontended cycle, from the server's `mntr` counters.
//!
//! Results go to stdout as markdown (tables, then a `RATIOS` section); progress goes to stderr.
//! A failed measurement is reported and the run goes on.
//!
//! Layout: [`library`] (the libraries, the one lock abstraction of the Rust ones, and their
//! measurement), [`scenarios`] (the run's state, the bounds, and every scenario but the waiters),
//! [`waiters`] (the waiters scenario and its child process), and [`report`] (the facts, the
//! tables and the `RATIOS` lines).

mod library;
mod report;
mod scenarios;
mod waiters;

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use zkr_benches::{BenchOptions, Deployment, SCENARIOS, USAGE};
use zkr_testing::peers::CuratorTool;

use crate::library::{measure_lock, Floor, Load};
use crate::scenarios::Bench;

/// The first argument of a waiters child process (`--child-waiters zkr|zkclient N CONNECT PATH`).
const CHILD_FLAG: &str = "--child-waiters";
/// Curator's lock node name.
const LOCK_NAME: &str = "lock-";
/// The session timeout every library asks for (Curator's and zkr's default).
const SESSION_TIMEOUT: Duration = Duration::from_secs(60);
const CONTENDED_SESSIONS: usize = 8;
const INPROCESS_TASKS: usize = 32;
/// Uncontended cycles per library in the `requests` scenario.
const REQUEST_CYCLES: u64 = 200;
/// The measurement window of Curator's run in the `requests` scenario (after its 1 s warm-up).
const CURATOR_REQUEST_SECONDS: &str = "0.5";
/// How long a measurement may run beyond its warm-up and window before it counts as hung.
const GRACE: Duration = Duration::from_secs(120);
/// How long a waiters run (queueing and draining) may take.
const WAITERS_TIMEOUT: Duration = Duration::from_secs(1200);
/// How long the waiters may take to queue.
const QUEUE_TIMEOUT: Duration = Duration::from_secs(600);
/// The queue length is polled this often.
const POLL: Duration = Duration::from_millis(50);
/// A pause before reading the server's counters, for a closing session's last packet to arrive.
const SETTLE: Duration = Duration::from_millis(300);
/// The window of the contended scenario's server-work run (plus the usual warm-up).
const SERVER_WORK_SECONDS: f64 = 2.0;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(CHILD_FLAG) {
        return waiters::child_main(&args[1..]);
    }
    let options = match BenchOptions::parse(args) {
        Ok(options) => options,
        Err(message) if message == "help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("lock bench: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    block_on("lock bench: ", "lock bench failed", run(options))
}

/// Runs `work` on a multi-thread tokio runtime; `prefix` and `failed` begin its error messages.
fn block_on(prefix: &str, failed: &str, work: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{prefix}cannot start a tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{failed}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(options: BenchOptions) -> anyhow::Result<()> {
    report::print_run_facts(&options);
    eprintln!("[lock bench] starting ZooKeeper");
    let server = Deployment::from_env().await?;
    let cs = server.connect_string();
    let curator = CuratorTool::locate().map_err(|e| e.to_string());
    report::print_setup(&options, &server, &curator).await;

    // A fresh server JVM is about twice as slow until the JIT has compiled its request path:
    // without this, whichever library runs first pays for it.
    let server_warmup = if options.quick { 2.0 } else { 8.0 };
    eprintln!("[lock bench] warming up the server for {server_warmup} s");
    let _ = measure_lock::<Floor>(cs.clone(), "/zkr-bench-server-warmup".into(), Load::Cycles, server_warmup)
        .await;
    println!(
        "- server warm-up: {server_warmup} s of create + delete churn (plus 1 s) before the first measurement, \
         so that no library measures a cold server JVM"
    );

    let scenarios: Vec<&str> = SCENARIOS.into_iter().filter(|s| options.runs(s)).collect();
    let mut bench = Bench { options, server, cs, curator, ratios: Vec::new() };
    for scenario in scenarios {
        match scenario {
            "uncontended" => bench.uncontended().await,
            "contended" => bench.contended().await,
            "inprocess" => bench.inprocess().await,
            "waiters" => bench.waiters().await,
            "requests" => bench.requests().await,
            other => unreachable!("unknown scenario {other}"),
        }
    }
    bench.print_ratios();
    Ok(())
}
