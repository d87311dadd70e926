//! The lock benchmark: zkr's `InterProcessMutex` against Apache Curator 5.4's `InterProcessMutex`
//! (a peer JVM run by `zkr_testing::peers::CuratorTool`) and against `zookeeper-client`'s own
//! `Client::lock`, all on one ZooKeeper server started for the run (`zkr_testing::TestingServer`,
//! standalone, its defaults: `forceSync=yes`).
//!
//! ```sh
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
//! `zookeeper-client`'s lock is released by deleting its node explicitly and then forgetting the
//! `LockClient`: dropping it would send a second (failing) delete in the background each cycle.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure, Context as _};
use tokio::task::JoinSet;
use zkr_benches::{
    ensure_path, filesystem_of, fmt_mib, fmt_ms, fmt_rate, fmt_ratio, machine_facts, mntr_value,
    numeric_field, packets_received, peak_rss_kb, run_loop, BenchOptions, Latencies, Measurement, Span,
    Table, Window, USAGE, WARMUP,
};
use zkr_connection::ZkClient;
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::peers::{CuratorTool, PeerProcess};
use zkr_testing::TestingServer;
use zookeeper_client::{Acls, Client, CreateMode, LockClient, LockOptions, LockPrefix};

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

const ZKR: &str = "zkr InterProcessMutex";
const CURATOR: &str = "Curator 5.4 InterProcessMutex";
const ZKCLIENT: &str = "zookeeper-client 0.11.2 Client::lock";
const FLOOR: &str = "floor: create EPHEMERAL_SEQUENTIAL + delete";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(CHILD_FLAG) {
        return child_main(&args[1..]);
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
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("lock bench: cannot start a tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lock bench failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(options: BenchOptions) -> anyhow::Result<()> {
    println!("# Lock benchmark: zkr vs Apache Curator vs zookeeper-client\n");
    let mut command = String::from("cargo bench -p zkr-benches --bench lock");
    if !options.user_args.is_empty() {
        command.push_str(" -- ");
        command.push_str(&options.user_args.join(" "));
    }
    println!("- command: `{command}`");
    println!("- argv: `{}`", std::env::args().collect::<Vec<_>>().join(" "));
    if let Some(date) = command_output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]) {
        println!("- date: {date}");
    }
    if let Some(commit) =
        command_output("git", &["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short", "HEAD"])
    {
        let dirty = command_output("git", &["-C", env!("CARGO_MANIFEST_DIR"), "status", "--porcelain"])
            .is_some_and(|s| !s.is_empty());
        println!("- git: {commit}{}", if dirty { " (with uncommitted changes)" } else { "" });
    }
    for (key, value) in machine_facts() {
        println!("- {key}: {value}");
    }
    if cfg!(debug_assertions) {
        println!("- build: DEBUG ASSERTIONS ON: not an optimized build, numbers are not representative");
    } else {
        println!("- build: optimized (cargo bench profile)");
    }

    eprintln!("[lock bench] starting ZooKeeper");
    let server = TestingServer::start().await.context("starting a ZooKeeper server")?;
    let cs = server.connect_string();
    let mntr = server.four_letter_word("mntr").await.unwrap_or_default();
    // Debian's build reports `3.8.0-${mvngit.commit.id}, built on ...`: keep the version.
    let version = mntr_value(&mntr, "zk_version")
        .and_then(|v| v.split([',', '-']).next().map(str::to_string))
        .unwrap_or_else(|| "unknown version".to_string());
    let fs = filesystem_of(server.data_dir()).unwrap_or_else(|| "unknown file system".to_string());
    println!(
        "- server: ZooKeeper {version}, standalone, zkr_testing::TestingServer defaults (forceSync=yes, \
         tickTime 500 ms, maxSessionTimeout 60 s); data dir on {fs}"
    );
    let curator = CuratorTool::locate().map_err(|e| e.to_string());
    match &curator {
        Ok(_) => {
            let java = zkr_testing::Installation::detect()
                .ok()
                .and_then(|i| java_version(i.java()))
                .unwrap_or_else(|| "unknown".to_string());
            println!("- Curator: 5.4 (system jars), java: {java}");
        }
        Err(e) => println!("- Curator: UNAVAILABLE ({e}); its rows are skipped"),
    }
    println!(
        "- clients: every library asks for a {} s session; tokio multi-thread runtime with {} workers",
        SESSION_TIMEOUT.as_secs(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    println!(
        "- windows: {} s warm-up, then {} s measured per measurement; waiters: zkr N={} and N={}, \
         Curator and zookeeper-client N={}; requests: {} cycles",
        WARMUP.as_secs(),
        options.seconds,
        options.zkr_waiters(),
        options.peer_waiters(),
        options.peer_waiters(),
        REQUEST_CYCLES
    );

    // A fresh server JVM is about twice as slow until the JIT has compiled its request path:
    // without this, whichever library runs first pays for it.
    let server_warmup = if options.quick { 2.0 } else { 8.0 };
    eprintln!("[lock bench] warming up the server for {server_warmup} s");
    let _ = floor_uncontended(cs.clone(), "/zkr-bench-server-warmup".to_string(), server_warmup).await;
    println!(
        "- server warm-up: {server_warmup} s of create + delete churn (plus 1 s) before the first measurement, \
         so that no library measures a cold server JVM"
    );

    let mut bench = Bench { options, server, cs, curator, ratios: Vec::new() };
    if bench.options.runs("uncontended") {
        bench.uncontended().await;
    }
    if bench.options.runs("contended") {
        bench.contended().await;
    }
    if bench.options.runs("inprocess") {
        bench.inprocess().await;
    }
    if bench.options.runs("waiters") {
        bench.waiters().await;
    }
    if bench.options.runs("requests") {
        bench.requests().await;
    }
    println!("\n## RATIOS\n");
    println!("(zkr's value divided by the other's: above 1 is better for rates, below 1 for times, RSS, requests)\n");
    println!("```");
    for line in &bench.ratios {
        println!("{line}");
    }
    println!("```");
    Ok(())
}

/// The state of one run.
struct Bench {
    options: BenchOptions,
    server: TestingServer,
    cs: String,
    curator: Result<CuratorTool, String>,
    ratios: Vec<String>,
}

impl Bench {
    /// Runs one measurement, reporting progress on stderr and a failure on stdout.
    async fn step<T>(
        &self,
        scenario: &str,
        label: &str,
        work: impl Future<Output = anyhow::Result<T>>,
    ) -> Option<T> {
        eprintln!("[lock bench] {scenario}: {label}");
        match work.await {
            Ok(value) => Some(value),
            Err(e) => {
                println!("\nERROR {scenario} / {label}: {e:#}");
                None
            }
        }
    }

    fn curator_tool(&self) -> anyhow::Result<&CuratorTool> {
        self.curator.as_ref().map_err(|e| anyhow!("Curator unavailable: {e}"))
    }

    /// Measures every job in `ROUNDS` rounds of `seconds / ROUNDS` each, the order reversed in
    /// every other round, and combines each job's rounds: the server keeps getting faster for a
    /// while (JIT, caches), and a fixed order would hand that drift to whoever runs last.
    async fn alternating(&self, scenario: &str, jobs: Vec<(&'static str, Job)>) -> Vec<Option<Measurement>> {
        let per_round = self.options.seconds / ROUNDS as f64;
        let mut parts: Vec<Vec<Measurement>> = vec![Vec::new(); jobs.len()];
        let mut failed = vec![false; jobs.len()];
        for round in 0..ROUNDS {
            let order: Vec<usize> =
                if round % 2 == 0 { (0..jobs.len()).collect() } else { (0..jobs.len()).rev().collect() };
            for i in order {
                if failed[i] {
                    continue;
                }
                let (label, job) = &jobs[i];
                let label = format!("{label} (round {} of {ROUNDS})", round + 1);
                match self.step(scenario, &label, job(per_round)).await {
                    Some(m) => parts[i].push(m),
                    None => failed[i] = true,
                }
            }
        }
        parts
            .into_iter()
            .zip(failed)
            .map(|(p, failed)| if failed || p.is_empty() { None } else { Some(Measurement::combine(&p)) })
            .collect()
    }

    fn curator_job(&self, args: Vec<String>, seconds_index: usize) -> Job {
        let tool = self.curator.clone();
        Box::new(move |seconds| {
            let tool = tool.clone();
            let mut args = args.clone();
            args[seconds_index] = seconds.to_string();
            Box::pin(async move {
                let tool = tool.map_err(|e| anyhow!("Curator unavailable: {e}"))?;
                let argv: Vec<&str> = args.iter().map(String::as_str).collect();
                let mut peer = tool.spawn(&argv)?;
                peer.set_line_timeout(limit_for(seconds));
                let line = peer.expect_line("RESULT").await?;
                let status = peer.wait().await?;
                ensure!(status.success(), "CuratorTool exited with {status}");
                Measurement::from_result_line(&line).map_err(anyhow::Error::msg)
            })
        })
    }

    async fn uncontended(&mut self) {
        let scenario = "uncontended";
        let cs = self.cs.clone();
        let jobs: Vec<(&'static str, Job)> = vec![
            (ZKR, {
                let cs = cs.clone();
                Box::new(move |s| {
                    Box::pin(measure(
                        limit_for(s),
                        zkr_uncontended(cs.clone(), "/bench/uncontended/zkr".into(), s),
                    ))
                })
            }),
            (
                CURATOR,
                self.curator_job(
                    vec![
                        "bench-uncontended".into(),
                        cs.clone(),
                        "/bench/uncontended/curator".into(),
                        String::new(),
                    ],
                    3,
                ),
            ),
            (ZKCLIENT, {
                let cs = cs.clone();
                Box::new(move |s| {
                    Box::pin(measure(
                        limit_for(s),
                        zkclient_uncontended(cs.clone(), "/bench/uncontended/zkclient".into(), s),
                    ))
                })
            }),
            (FLOOR, {
                let cs = cs.clone();
                Box::new(move |s| {
                    Box::pin(measure(
                        limit_for(s),
                        floor_uncontended(cs.clone(), "/bench/uncontended/floor".into(), s),
                    ))
                })
            }),
        ];
        let mut results = self.alternating(scenario, jobs).await.into_iter();
        let (zkr, curator, zkclient, floor) = (
            results.next().flatten(),
            results.next().flatten(),
            results.next().flatten(),
            results.next().flatten(),
        );

        println!("\n## uncontended: one session, acquire + release cycles\n");
        let mut table = Table::new(&["library", "cycles/s", "p50 cycle", "p99 cycle", "cycles counted"]);
        for (label, m) in [(ZKR, &zkr), (CURATOR, &curator), (ZKCLIENT, &zkclient), (FLOOR, &floor)] {
            table.row(measurement_row(label, m.as_ref(), |m| {
                vec![fmt_rate(m.per_second()), fmt_ms(m.p50), fmt_ms(m.p99), m.ops.to_string()]
            }));
        }
        print!("{}", table.render());
        println!(
            "\nThe floor is two awaited requests on one `zookeeper_client::Client` (pairs/s): no lock logic."
        );
        if let Some(z) = &zkr {
            for (name, other) in [("curator", &curator), ("zookeeper-client", &zkclient), ("floor", &floor)] {
                if let Some(o) = other {
                    self.rate_ratio(scenario, name, "cycles/s", z, o);
                }
            }
            for (name, other) in [("curator", &curator), ("zookeeper-client", &zkclient)] {
                if let Some(o) = other {
                    self.time_ratio(&format!("{scenario} p50 cycle"), name, z.p50, o.p50);
                }
            }
        }
    }

    async fn contended(&mut self) {
        let scenario = "contended";
        let cs = self.cs.clone();
        let jobs: Vec<(&'static str, Job)> = vec![
            (ZKR, {
                let cs = cs.clone();
                Box::new(move |s| {
                    Box::pin(measure(
                        limit_for(s),
                        zkr_contended(cs.clone(), "/bench/contended/zkr".into(), CONTENDED_SESSIONS, s),
                    ))
                })
            }),
            (
                CURATOR,
                self.curator_job(
                    vec![
                        "bench-contended".into(),
                        cs.clone(),
                        "/bench/contended/curator".into(),
                        CONTENDED_SESSIONS.to_string(),
                        String::new(),
                    ],
                    4,
                ),
            ),
            (ZKCLIENT, {
                let cs = cs.clone();
                Box::new(move |s| {
                    Box::pin(measure(
                        limit_for(s),
                        zkclient_contended(
                            cs.clone(),
                            "/bench/contended/zkclient".into(),
                            CONTENDED_SESSIONS,
                            s,
                        ),
                    ))
                })
            }),
        ];
        let paths = ["/bench/contended/zkr", "/bench/contended/curator", "/bench/contended/zkclient"];
        let mut work = Vec::new();
        for ((label, job), path) in jobs.iter().zip(paths) {
            let step = format!("{label} (server work)");
            work.push((*label, self.step(scenario, &step, self.server_work(path, job)).await));
        }
        let mut results = self.alternating(scenario, jobs).await.into_iter();
        let (zkr, curator, zkclient) =
            (results.next().flatten(), results.next().flatten(), results.next().flatten());
        println!(
            "\n## contended: {CONTENDED_SESSIONS} sessions on one lock (one client and one task or thread per session)\n"
        );
        self.wait_table(&[(ZKR, &zkr), (CURATOR, &curator), (ZKCLIENT, &zkclient)]);
        self.wait_ratios(
            scenario,
            zkr.as_ref(),
            &[("curator", curator.as_ref()), ("zookeeper-client", zkclient.as_ref())],
        );
        println!("\n## contended: server work per acquisition\n");
        let mut table = Table::new(&[
            "library",
            "acquisitions",
            "packets received per acquisition",
            "packets sent per acquisition",
            "fsyncs per acquisition",
        ]);
        for (label, w) in &work {
            match w {
                Some(w) => {
                    let per = |n: u64| format!("{:.2}", n as f64 / w.acquisitions.max(1) as f64);
                    table.row(vec![
                        label.to_string(),
                        w.acquisitions.to_string(),
                        per(w.packets),
                        per(w.sent),
                        per(w.fsyncs),
                    ])
                }
                None => table.row(vec![label.to_string(), "failed (see above)".into()]),
            }
        }
        print!("{}", table.render());
        println!(
            "\nA separate {SERVER_WORK_SECONDS} s run of each library before the timed rounds, alone on the \
             server. Packets received (requests and pings): `zk_packets_received`; packets sent (replies and \
             watch notifications): `zk_packets_sent`; fsyncs: `zk_cnt_fsynctime` (`mntr`), before and after, so connecting and closing the {CONTENDED_SESSIONS} sessions count too. Acquisitions \
             are counted by the server: the lock node's child version moves by two per acquisition (a \
             create and a delete)."
        );
    }

    /// The server's packets and fsyncs while `job` runs [`SERVER_WORK_SECONDS`] on `path`, and
    /// the acquisitions the server saw.
    async fn server_work(&self, path: &str, job: &Job) -> anyhow::Result<ServerWork> {
        let counters = |mntr: &str| -> anyhow::Result<(u64, u64, u64)> {
            let packets = packets_received(mntr).ok_or_else(|| anyhow!("no zk_packets_received"))?;
            let number = |key: &str| {
                mntr_value(mntr, key).and_then(|v| v.parse().ok()).ok_or_else(|| anyhow!("no {key}"))
            };
            Ok((packets, number("zk_packets_sent")?, number("zk_cnt_fsynctime")?))
        };
        let first = self.cversion(path).await?;
        let before = counters(&self.server.four_letter_word("mntr").await?)?;
        job(SERVER_WORK_SECONDS).await?;
        tokio::time::sleep(SETTLE).await;
        let after = counters(&self.server.four_letter_word("mntr").await?)?;
        let changes = self.cversion(path).await? - first;
        ensure!(changes > 0 && changes % 2 == 0, "{path}'s cversion moved by {changes}");
        Ok(ServerWork {
            acquisitions: (changes / 2) as u64,
            packets: after.0.saturating_sub(before.0),
            sent: after.1.saturating_sub(before.1),
            fsyncs: after.2.saturating_sub(before.2),
        })
    }

    async fn inprocess(&mut self) {
        let scenario = "inprocess";
        let cs = self.cs.clone();
        let jobs: Vec<(&'static str, Job)> = vec![
            (ZKR, {
                let cs = cs.clone();
                Box::new(move |s| {
                    Box::pin(measure(
                        limit_for(s),
                        zkr_inprocess(cs.clone(), "/bench/inprocess/zkr".into(), INPROCESS_TASKS, s),
                    ))
                })
            }),
            (
                CURATOR,
                self.curator_job(
                    vec![
                        "bench-inprocess".into(),
                        cs.clone(),
                        "/bench/inprocess/curator".into(),
                        INPROCESS_TASKS.to_string(),
                        String::new(),
                    ],
                    4,
                ),
            ),
            (ZKCLIENT, {
                let cs = cs.clone();
                Box::new(move |s| {
                    Box::pin(measure(
                        limit_for(s),
                        zkclient_inprocess(
                            cs.clone(),
                            "/bench/inprocess/zkclient".into(),
                            INPROCESS_TASKS,
                            s,
                        ),
                    ))
                })
            }),
        ];
        let mut results = self.alternating(scenario, jobs).await.into_iter();
        let (zkr, curator, zkclient) =
            (results.next().flatten(), results.next().flatten(), results.next().flatten());
        println!(
            "\n## inprocess: {INPROCESS_TASKS} tasks (Curator: threads) sharing one mutex on one session\n"
        );
        self.wait_table(&[(ZKR, &zkr), (CURATOR, &curator), (ZKCLIENT, &zkclient)]);
        println!(
            "\nzookeeper-client has no shared mutex object: its row is {INPROCESS_TASKS} tasks each calling \
             `Client::lock` on one shared `Client` (one session)."
        );
        self.wait_ratios(
            scenario,
            zkr.as_ref(),
            &[("curator", curator.as_ref()), ("zookeeper-client", zkclient.as_ref())],
        );
    }

    fn wait_table(&self, rows: &[(&str, &Option<Measurement>)]) {
        let mut table = Table::new(&[
            "library",
            "acquisitions/s",
            "p50 acquire wait",
            "p99 acquire wait",
            "acquisitions counted",
        ]);
        for (label, m) in rows {
            table.row(measurement_row(label, m.as_ref(), |m| {
                vec![fmt_rate(m.per_second()), fmt_ms(m.p50), fmt_ms(m.p99), m.ops.to_string()]
            }));
        }
        print!("{}", table.render());
    }

    fn wait_ratios(
        &mut self,
        scenario: &str,
        zkr: Option<&Measurement>,
        others: &[(&str, Option<&Measurement>)],
    ) {
        let Some(z) = zkr else { return };
        for (name, other) in others {
            if let Some(o) = other {
                self.rate_ratio(scenario, name, "acquisitions/s", z, o);
            }
        }
        for (name, other) in others {
            if let Some(o) = other {
                self.time_ratio(&format!("{scenario} p99 wait"), name, z.p99, o.p99);
            }
        }
    }

    fn rate_ratio(&mut self, scenario: &str, other: &str, unit: &str, zkr: &Measurement, o: &Measurement) {
        self.ratios.push(format!(
            "{scenario} zkr/{other} {} ({unit}: zkr {}, {other} {})",
            fmt_ratio(zkr.per_second(), o.per_second()),
            fmt_rate(zkr.per_second()),
            fmt_rate(o.per_second())
        ));
    }

    fn time_ratio(&mut self, what: &str, other: &str, zkr: Duration, o: Duration) {
        self.ratios.push(format!(
            "{what} zkr/{other} {} (zkr {}, {other} {})",
            fmt_ratio(zkr.as_secs_f64(), o.as_secs_f64()),
            fmt_ms(zkr),
            fmt_ms(o)
        ));
    }

    async fn waiters(&mut self) {
        let scenario = "waiters";
        let cs = self.cs.clone();
        let (big, small) = (self.options.zkr_waiters(), self.options.peer_waiters());
        let mut runs: Vec<(String, Option<WaitersResult>)> = Vec::new();
        let zkr_big = self
            .step(
                scenario,
                &format!("{ZKR} N={big}"),
                rust_waiters("zkr", big, &cs, &format!("/bench/waiters/zkr-{big}")),
            )
            .await;
        runs.push((ZKR.to_string(), zkr_big.clone()));
        let zkr_small = if small == big {
            zkr_big.clone()
        } else {
            let r = self
                .step(
                    scenario,
                    &format!("{ZKR} N={small}"),
                    rust_waiters("zkr", small, &cs, &format!("/bench/waiters/zkr-{small}")),
                )
                .await;
            runs.push((ZKR.to_string(), r.clone()));
            r
        };
        let curator_base = self
            .step(
                scenario,
                &format!("{CURATOR} N=1 (baseline)"),
                self.curator_waiters(1, "/bench/waiters/curator-1"),
            )
            .await;
        let curator = self
            .step(
                scenario,
                &format!("{CURATOR} N={small}"),
                self.curator_waiters(small, &format!("/bench/waiters/curator-{small}")),
            )
            .await;
        let curator = curator.map(|mut r| {
            r.base_kb = curator_base.as_ref().map(|b| b.queued_kb);
            r
        });
        runs.push((CURATOR.to_string(), curator.clone()));
        let zkclient = self
            .step(
                scenario,
                &format!("{ZKCLIENT} N={small}"),
                rust_waiters("zkclient", small, &cs, &format!("/bench/waiters/zkclient-{small}")),
            )
            .await;
        runs.push((ZKCLIENT.to_string(), zkclient.clone()));

        println!("\n## waiters: N waiters queued behind a holder in one process, then drained\n");
        let mut table = Table::new(&[
            "library",
            "N",
            "peak RSS, all queued",
            "baseline RSS",
            "RSS per 1000 waiters",
            "drain",
            "drain per waiter",
            "peak RSS after drain",
        ]);
        let mut seen = Vec::new();
        for (label, result) in &runs {
            match result {
                Some(r) => {
                    if seen.contains(&(label.clone(), r.n)) {
                        continue;
                    }
                    seen.push((label.clone(), r.n));
                    table.row(vec![
                        label.clone(),
                        r.n.to_string(),
                        fmt_mib(r.queued_kb),
                        r.base_kb.map(fmt_mib).unwrap_or_else(|| "n/a".into()),
                        r.per_1000_kb().map(|kb| fmt_mib(kb as u64)).unwrap_or_else(|| "n/a".into()),
                        format!("{} ms", r.drain_ms),
                        format!("{:.3} ms", r.drain_ms as f64 / r.n.max(1) as f64),
                        fmt_mib(r.peak_kb),
                    ]);
                }
                None => table.row(vec![label.clone(), String::new(), "failed (see above)".into()]),
            }
        }
        print!("{}", table.render());
        println!(
            "\nPeak RSS is the process's VmHWM once all N contender nodes are in ZooKeeper (zkr and \
             zookeeper-client: a child process of this benchmark; Curator: its JVM). Baseline: zkr and \
             zookeeper-client: VmHWM after connecting and taking the lock, before the waiters start; \
             Curator: the same run with N=1. RSS per 1000 waiters = (peak - baseline) / N * 1000. \
             Drain: from the holder's release until every waiter has acquired and released once."
        );
        if let Some(z) = &zkr_small {
            for (name, other) in [("curator", &curator), ("zookeeper-client", &zkclient)] {
                let Some(o) = other else { continue };
                if let (Some(zp), Some(op)) = (z.per_1000_kb(), o.per_1000_kb()) {
                    self.ratios.push(format!(
                        "waiters RSS per 1000 waiters zkr/{name} {} (zkr {}, {name} {}; N={small}, over baseline)",
                        fmt_ratio(zp, op),
                        fmt_mib(zp as u64),
                        fmt_mib(op as u64)
                    ));
                }
                self.ratios.push(format!(
                    "waiters peak RSS N={small} zkr/{name} {} (zkr {}, {name} {})",
                    fmt_ratio(z.queued_kb as f64, o.queued_kb as f64),
                    fmt_mib(z.queued_kb),
                    fmt_mib(o.queued_kb)
                ));
                self.ratios.push(format!(
                    "waiters drain {small} zkr/{name} {} (zkr {} ms, {name} {} ms)",
                    fmt_ratio(z.drain_ms as f64, o.drain_ms as f64),
                    z.drain_ms,
                    o.drain_ms
                ));
            }
        }
        if big != small {
            if let (Some(z), Some(c)) = (&zkr_big, &curator) {
                if let (Some(zp), Some(cp)) = (z.per_1000_kb(), c.per_1000_kb()) {
                    self.ratios.push(format!(
                        "waiters RSS per 1000 waiters zkr N={big}/curator N={small} {} (zkr {}, curator {}; over baseline)",
                        fmt_ratio(zp, cp),
                        fmt_mib(zp as u64),
                        fmt_mib(cp as u64)
                    ));
                }
            }
            if let Some(z) = &zkr_big {
                self.ratios.push(format!(
                    "waiters zkr N={big}: peak RSS {}, drain {} ms ({:.3} ms per waiter)",
                    fmt_mib(z.queued_kb),
                    z.drain_ms,
                    z.drain_ms as f64 / z.n.max(1) as f64
                ));
            }
        }
    }

    async fn curator_waiters(&self, n: usize, path: &str) -> anyhow::Result<WaitersResult> {
        let peer = self.curator_tool()?.spawn(&["bench-waiters", &self.cs, path, &n.to_string()])?;
        read_waiters(peer).await
    }

    async fn requests(&mut self) {
        let scenario = "requests";
        let per_cycle = self.step(scenario, "cversion probe", self.cversion_per_cycle()).await;
        let zkr = self.step(scenario, ZKR, bounded(GRACE, self.count_requests("zkr", per_cycle))).await;
        let curator =
            self.step(scenario, CURATOR, bounded(GRACE, self.count_requests("curator", per_cycle))).await;
        let zkclient =
            self.step(scenario, ZKCLIENT, bounded(GRACE, self.count_requests("zkclient", per_cycle))).await;

        println!("\n## requests: ZooKeeper packets per uncontended acquire + release\n");
        let mut table = Table::new(&[
            "library",
            "cycles",
            "packets, whole run",
            "per cycle incl. session",
            "packets, session only",
            "per cycle net of session",
        ]);
        for (label, r) in [(ZKR, &zkr), (CURATOR, &curator), (ZKCLIENT, &zkclient)] {
            match r {
                Some(r) => table.row(vec![
                    label.to_string(),
                    r.cycles.to_string(),
                    r.packets.to_string(),
                    format!("{:.2}", r.per_cycle_gross()),
                    r.session_packets.to_string(),
                    format!("{:.2}", r.per_cycle_net()),
                ]),
                None => table.row(vec![label.to_string(), "failed (see above)".into()]),
            }
        }
        print!("{}", table.render());
        println!(
            "\nPackets: the server's `zk_packets_received` (`mntr`) before and after a run with no other \
             session open; a run is connect, the cycles, close. It includes session setup, close and any \
             pings. zkr and zookeeper-client run {REQUEST_CYCLES} cycles; Curator runs `bench-uncontended` \
             for its 1 s warm-up plus {CURATOR_REQUEST_SECONDS} s. Cycles are counted by the server (the lock \
             node's child version). \"Session only\" is the same run with no cycles (Curator: `lock ... 0 0`), \
             subtracted for the net column."
        );
        if let Some(z) = &zkr {
            for (name, other) in [("curator", &curator), ("zookeeper-client", &zkclient)] {
                if let Some(o) = other {
                    self.ratios.push(format!(
                        "requests per cycle zkr/{name} {} (net of session: zkr {:.2}, {name} {:.2})",
                        fmt_ratio(z.per_cycle_net(), o.per_cycle_net()),
                        z.per_cycle_net(),
                        o.per_cycle_net()
                    ));
                }
            }
        }
    }

    async fn packets(&self) -> anyhow::Result<u64> {
        let mntr = self.server.four_letter_word("mntr").await?;
        packets_received(&mntr).ok_or_else(|| anyhow!("no zk_packets_received in the mntr reply"))
    }

    /// The packets the server receives while `work` runs (and [`SETTLE`] after it).
    async fn count_packets(&self, work: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<u64> {
        let before = self.packets().await?;
        work.await?;
        tokio::time::sleep(SETTLE).await;
        let after = self.packets().await?;
        Ok(after.saturating_sub(before))
    }

    /// The child version (`cversion`) of `path`, read by a short-lived session.
    async fn cversion(&self, path: &str) -> anyhow::Result<i64> {
        let client = zk_connect(&self.cs).await?;
        ensure_path(&client, path).await?;
        let stat = client.check_stat(path).await?.ok_or_else(|| anyhow!("{path} vanished"))?;
        drop(client);
        tokio::time::sleep(SETTLE).await;
        Ok(i64::from(stat.cversion))
    }

    /// How much one create + delete of a child moves its parent's `cversion` (the server's count
    /// of child changes).
    async fn cversion_per_cycle(&self) -> anyhow::Result<i64> {
        let path = "/bench/requests/probe";
        let client = zk_connect(&self.cs).await?;
        ensure_path(&client, path).await?;
        let stat = |c: &Client| {
            let c = c.clone();
            async move { c.check_stat(path).await?.ok_or_else(|| anyhow!("{path} vanished")) }
        };
        let before = stat(&client).await?.cversion;
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let prefix = format!("{path}/n-");
        let (_, sequence) = client.create(&prefix, b"", &options).await?;
        client.delete(&format!("{prefix}{sequence}"), None).await?;
        let after = stat(&client).await?.cversion;
        let per_cycle = i64::from(after - before);
        ensure!(per_cycle > 0, "a create and a delete did not change {path}'s cversion");
        Ok(per_cycle)
    }

    async fn count_requests(&self, library: &str, per_cycle: Option<i64>) -> anyhow::Result<RequestCount> {
        let per_cycle = per_cycle.ok_or_else(|| anyhow!("the cversion probe failed"))?;
        let cs = self.cs.clone();
        let path = format!("/bench/requests/{library}");
        let first = self.cversion(&path).await?;
        let (session_packets, packets) = match library {
            "zkr" => {
                let session = self
                    .count_packets(async {
                        let zk = ZkClient::connect(cs.as_str()).await?;
                        zk.close().await;
                        Ok(())
                    })
                    .await?;
                let run = self
                    .count_packets(async {
                        let zk = ZkClient::connect(cs.as_str()).await?;
                        let mutex = InterProcessMutex::new(&zk, &path)?;
                        for _ in 0..REQUEST_CYCLES {
                            mutex.acquire().await?.release().await?;
                        }
                        zk.close().await;
                        Ok(())
                    })
                    .await?;
                (session, run)
            }
            "zkclient" => {
                let session = self
                    .count_packets(async {
                        drop(zk_connect(&cs).await?);
                        Ok(())
                    })
                    .await?;
                let run = self
                    .count_packets(async {
                        let client = zk_connect(&cs).await?;
                        let options = lock_options()?;
                        for _ in 0..REQUEST_CYCLES {
                            let lock = zkclient_acquire(&client, &path, &options).await?;
                            zkclient_release(&client, lock).await?;
                        }
                        drop(client);
                        Ok(())
                    })
                    .await?;
                (session, run)
            }
            "curator" => {
                let tool = self.curator_tool()?;
                let session = self
                    .count_packets(async {
                        let mut peer = tool.spawn(&["lock", &cs, &path, "0", "0"])?;
                        peer.set_line_timeout(GRACE);
                        peer.expect_line("DONE").await?;
                        let status = peer.wait().await?;
                        ensure!(status.success(), "CuratorTool lock exited with {status}");
                        Ok(())
                    })
                    .await?;
                let run = self
                    .count_packets(async {
                        let mut peer =
                            tool.spawn(&["bench-uncontended", &cs, &path, CURATOR_REQUEST_SECONDS])?;
                        peer.set_line_timeout(GRACE);
                        peer.expect_line("RESULT").await?;
                        let status = peer.wait().await?;
                        ensure!(status.success(), "CuratorTool bench-uncontended exited with {status}");
                        Ok(())
                    })
                    .await?;
                (session, run)
            }
            other => bail!("unknown library {other}"),
        };
        let last = self.cversion(&path).await?;
        let changes = last - first;
        ensure!(
            changes > 0 && changes % per_cycle == 0,
            "{path}'s cversion moved by {changes}, not a multiple of {per_cycle}"
        );
        let cycles = (changes / per_cycle) as u64;
        if library != "curator" && cycles != REQUEST_CYCLES {
            println!("\nWARNING requests / {library}: the server counted {cycles} cycles, expected {REQUEST_CYCLES}");
        }
        Ok(RequestCount { cycles, packets, session_packets })
    }
}

/// What the server did during one library's contended run.
#[derive(Debug, Clone, Copy)]
struct ServerWork {
    acquisitions: u64,
    /// Packets received: requests and pings.
    packets: u64,
    /// Packets sent: replies and watch notifications.
    sent: u64,
    fsyncs: u64,
}

/// One library's packet counts in the `requests` scenario.
#[derive(Debug, Clone, Copy)]
struct RequestCount {
    cycles: u64,
    packets: u64,
    session_packets: u64,
}

impl RequestCount {
    fn per_cycle_gross(&self) -> f64 {
        self.packets as f64 / self.cycles.max(1) as f64
    }

    fn per_cycle_net(&self) -> f64 {
        self.packets.saturating_sub(self.session_packets) as f64 / self.cycles.max(1) as f64
    }
}

/// A measurement row: the label and `cells`, or "failed".
fn measurement_row(
    label: &str,
    m: Option<&Measurement>,
    cells: impl Fn(&Measurement) -> Vec<String>,
) -> Vec<String> {
    let mut row = vec![label.to_string()];
    match m {
        Some(m) => row.extend(cells(m)),
        None => row.push("failed (see above)".to_string()),
    }
    row
}

/// Runs `work` as a task of its own, bounded by `limit` (the task is aborted when it runs out).
/// One library's measurement for a given window (seconds): a fresh future per round.
type Job =
    Box<dyn Fn(f64) -> Pin<Box<dyn Future<Output = anyhow::Result<Measurement>> + Send>> + Send + Sync>;

/// Rounds per scenario (the library order alternates between rounds).
const ROUNDS: usize = 2;

/// How long one measurement of `seconds` may take before it counts as failed.
fn limit_for(seconds: f64) -> Duration {
    WARMUP + Duration::from_secs_f64(seconds) + GRACE
}

async fn measure<T: Send + 'static>(
    limit: Duration,
    work: impl Future<Output = anyhow::Result<T>> + Send + 'static,
) -> anyhow::Result<T> {
    let task = tokio::spawn(work);
    let abort = task.abort_handle();
    match tokio::time::timeout(limit, task).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(anyhow!("the measurement task failed: {e}")),
        Err(_) => {
            abort.abort();
            Err(anyhow!("did not finish within {} s", limit.as_secs()))
        }
    }
}

/// Runs `work` in place, bounded by `limit`.
async fn bounded<T>(limit: Duration, work: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or_else(|_| Err(anyhow!("did not finish within {} s", limit.as_secs())))
}

/// Runs each loop as a task and merges their latencies; the first error aborts the rest.
async fn join_loops<F>(loops: impl IntoIterator<Item = F>) -> anyhow::Result<Latencies>
where
    F: Future<Output = anyhow::Result<Latencies>> + Send + 'static,
{
    let mut tasks = JoinSet::new();
    for work in loops {
        tasks.spawn(work);
    }
    let mut all = Latencies::default();
    while let Some(result) = tasks.join_next().await {
        all.extend(result??);
    }
    Ok(all)
}

// ---------------------------------------------------------------------------------------------
// zkr

async fn zkr_uncontended(cs: String, path: String, seconds: f64) -> anyhow::Result<Measurement> {
    let zk = ZkClient::connect(cs).await?;
    let mutex = InterProcessMutex::new(&zk, &path)?;
    let m = &mutex;
    let latencies = run_loop(Window::after_warmup(seconds), move || async move {
        let start = Instant::now();
        m.acquire().await?.release().await?;
        Ok::<_, anyhow::Error>(Span::since(start))
    })
    .await?;
    zk.close().await;
    Ok(latencies.measurement(seconds))
}

/// Acquires and releases `mutex` until `window` ends; records the waits in `acquire`.
async fn zkr_acquire_loop(mutex: InterProcessMutex, window: Window) -> anyhow::Result<Latencies> {
    let m = &mutex;
    run_loop(window, move || async move {
        let start = Instant::now();
        let guard = m.acquire().await?;
        let span = Span::since(start);
        guard.release().await?;
        Ok::<_, anyhow::Error>(span)
    })
    .await
}

async fn zkr_contended(
    cs: String,
    path: String,
    sessions: usize,
    seconds: f64,
) -> anyhow::Result<Measurement> {
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(ZkClient::connect(cs.as_str()).await?);
    }
    let mutexes =
        clients.iter().map(|zk| InterProcessMutex::new(zk, &path)).collect::<Result<Vec<_>, _>>()?;
    let window = Window::after_warmup(seconds);
    let latencies = join_loops(mutexes.into_iter().map(|m| zkr_acquire_loop(m, window))).await?;
    for zk in &clients {
        zk.close().await;
    }
    Ok(latencies.measurement(seconds))
}

async fn zkr_inprocess(cs: String, path: String, tasks: usize, seconds: f64) -> anyhow::Result<Measurement> {
    let zk = ZkClient::connect(cs).await?;
    let mutex = InterProcessMutex::new(&zk, &path)?;
    let window = Window::after_warmup(seconds);
    let latencies = join_loops((0..tasks).map(|_| zkr_acquire_loop(mutex.clone(), window))).await?;
    zk.close().await;
    Ok(latencies.measurement(seconds))
}

// ---------------------------------------------------------------------------------------------
// zookeeper-client

async fn zk_connect(cs: &str) -> anyhow::Result<Client> {
    Ok(Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(cs).await?)
}

/// `Client::lock`'s options for a Curator-style lock whose missing parents become containers.
fn lock_options() -> anyhow::Result<LockOptions<'static>> {
    Ok(LockOptions::new(Acls::anyone_all())
        .with_ancestor_options(CreateMode::Container.with_acls(Acls::anyone_all()))?)
}

async fn zkclient_acquire<'c>(
    client: &'c Client,
    dir: &str,
    options: &LockOptions<'static>,
) -> anyhow::Result<LockClient<'c>> {
    let prefix = LockPrefix::new_curator(dir, LOCK_NAME)?;
    Ok(client.lock(prefix, b"", options.clone()).await?)
}

/// Deletes the lock node and waits for the answer. The `LockClient` is then forgotten: dropping
/// it would send a second delete in the background (a failing request the server still logs).
/// Forgetting leaks its path string, a few dozen bytes per cycle.
async fn zkclient_release(client: &Client, lock: LockClient<'_>) -> anyhow::Result<()> {
    client.delete(lock.lock_path(), None).await?;
    std::mem::forget(lock);
    Ok(())
}

async fn zkclient_uncontended(cs: String, dir: String, seconds: f64) -> anyhow::Result<Measurement> {
    let client = zk_connect(&cs).await?;
    let options = lock_options()?;
    let (c, d, o) = (&client, dir.as_str(), &options);
    let latencies = run_loop(Window::after_warmup(seconds), move || async move {
        let start = Instant::now();
        let lock = zkclient_acquire(c, d, o).await?;
        zkclient_release(c, lock).await?;
        Ok::<_, anyhow::Error>(Span::since(start))
    })
    .await?;
    Ok(latencies.measurement(seconds))
}

/// Locks and unlocks with `client` until `window` ends; records the waits in `Client::lock`.
async fn zkclient_acquire_loop(client: Client, dir: String, window: Window) -> anyhow::Result<Latencies> {
    let options = lock_options()?;
    let (c, d, o) = (&client, dir.as_str(), &options);
    run_loop(window, move || async move {
        let start = Instant::now();
        let lock = zkclient_acquire(c, d, o).await?;
        let span = Span::since(start);
        zkclient_release(c, lock).await?;
        Ok::<_, anyhow::Error>(span)
    })
    .await
}

async fn zkclient_contended(
    cs: String,
    dir: String,
    sessions: usize,
    seconds: f64,
) -> anyhow::Result<Measurement> {
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(zk_connect(&cs).await?);
    }
    let window = Window::after_warmup(seconds);
    let latencies =
        join_loops(clients.into_iter().map(|c| zkclient_acquire_loop(c, dir.clone(), window))).await?;
    Ok(latencies.measurement(seconds))
}

async fn zkclient_inprocess(
    cs: String,
    dir: String,
    tasks: usize,
    seconds: f64,
) -> anyhow::Result<Measurement> {
    let client = zk_connect(&cs).await?;
    let window = Window::after_warmup(seconds);
    let latencies =
        join_loops((0..tasks).map(|_| zkclient_acquire_loop(client.clone(), dir.clone(), window))).await?;
    Ok(latencies.measurement(seconds))
}

/// The floor: an ephemeral sequential create and its delete, each awaited, on one `Client`.
async fn floor_uncontended(cs: String, dir: String, seconds: f64) -> anyhow::Result<Measurement> {
    let client = zk_connect(&cs).await?;
    ensure_path(&client, &dir).await?;
    let prefix = format!("{dir}/n-");
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (c, p, o) = (&client, prefix.as_str(), &options);
    let latencies = run_loop(Window::after_warmup(seconds), move || async move {
        let start = Instant::now();
        let (_, sequence) = c.create(p, b"", o).await?;
        c.delete(&format!("{p}{sequence}"), None).await?;
        Ok::<_, anyhow::Error>(Span::since(start))
    })
    .await?;
    Ok(latencies.measurement(seconds))
}

// ---------------------------------------------------------------------------------------------
// waiters

/// One waiters run: `QUEUED n= rss_kb= [base_kb=]` and `RESULT drained= millis= rss_kb=`.
#[derive(Debug, Clone)]
struct WaitersResult {
    n: u64,
    queued_kb: u64,
    base_kb: Option<u64>,
    drain_ms: u64,
    peak_kb: u64,
}

impl WaitersResult {
    /// kB of RSS per 1000 waiters over the baseline.
    fn per_1000_kb(&self) -> Option<f64> {
        let base = self.base_kb?;
        Some(self.queued_kb.saturating_sub(base) as f64 / self.n.max(1) as f64 * 1000.0)
    }
}

/// Runs a waiters child process of this benchmark (`--child-waiters`).
async fn rust_waiters(library: &str, n: usize, cs: &str, path: &str) -> anyhow::Result<WaitersResult> {
    let exe = std::env::current_exe().context("locating this benchmark's executable")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg(CHILD_FLAG).arg(library).arg(n.to_string()).arg(cs).arg(path);
    let child = PeerProcess::spawn(format!("waiters child ({library}, N={n})"), cmd)?;
    read_waiters(child).await
}

async fn read_waiters(mut peer: PeerProcess) -> anyhow::Result<WaitersResult> {
    peer.set_line_timeout(WAITERS_TIMEOUT);
    let queued = peer.expect_line("QUEUED").await?;
    let result = peer.expect_line("RESULT").await?;
    let status = peer.wait().await?;
    ensure!(status.success(), "the waiters process exited with {status}");
    let field = |line: &str, key: &str| numeric_field(line, key).map_err(anyhow::Error::msg);
    Ok(WaitersResult {
        n: field(&queued, "n")?,
        queued_kb: field(&queued, "rss_kb")?,
        base_kb: numeric_field(&queued, "base_kb").ok(),
        drain_ms: field(&result, "millis")?,
        peak_kb: field(&result, "rss_kb")?,
    })
}

/// A waiters child: `zkr|zkclient N CONNECT PATH`. Prints `QUEUED n= rss_kb= base_kb=` once the
/// N waiters are queued, then `RESULT drained= millis= rss_kb=` once they have all had the lock.
fn child_main(args: &[String]) -> ExitCode {
    let [library, n, cs, path] = args else {
        eprintln!("usage: {CHILD_FLAG} zkr|zkclient N CONNECT PATH");
        return ExitCode::from(2);
    };
    let Ok(n) = n.parse::<usize>() else {
        eprintln!("{CHILD_FLAG}: N must be a number, not `{n}`");
        return ExitCode::from(2);
    };
    exit_with_parent();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cannot start a tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match library.as_str() {
            "zkr" => zkr_waiters(n, cs, path).await,
            "zkclient" => zkclient_waiters(n, cs, path).await,
            other => Err(anyhow!("unknown library `{other}`")),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("waiters child failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Exits the child when the benchmark that started it goes away.
fn exit_with_parent() {
    let parent = std::os::unix::process::parent_id();
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(500));
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(3);
        }
    });
}

async fn zkr_waiters(n: usize, cs: &str, path: &str) -> anyhow::Result<()> {
    let zk = ZkClient::connect(cs).await?;
    let mutex = InterProcessMutex::new(&zk, path)?;
    let holder = mutex.acquire().await?;
    let poll = zk.client().await?;
    let base_kb = peak_rss_kb().unwrap_or(0);
    let mut tasks = JoinSet::new();
    for _ in 0..n {
        let mutex = mutex.clone();
        tasks.spawn(async move {
            mutex.acquire().await?.release().await?;
            Ok::<_, anyhow::Error>(())
        });
    }
    wait_queued(&poll, path, n + 1, &mut tasks).await?;
    println!("QUEUED n={n} rss_kb={} base_kb={base_kb}", peak_rss_kb().unwrap_or(0));
    let start = Instant::now();
    holder.release().await?;
    join_all(&mut tasks).await?;
    let millis = start.elapsed().as_millis();
    println!("RESULT drained={n} millis={millis} rss_kb={}", peak_rss_kb().unwrap_or(0));
    drop(poll);
    zk.close().await;
    Ok(())
}

async fn zkclient_waiters(n: usize, cs: &str, path: &str) -> anyhow::Result<()> {
    let client = zk_connect(cs).await?;
    let options = lock_options()?;
    let holder = zkclient_acquire(&client, path, &options).await?;
    let base_kb = peak_rss_kb().unwrap_or(0);
    let mut tasks = JoinSet::new();
    for _ in 0..n {
        let (client, dir, options) = (client.clone(), path.to_string(), options.clone());
        tasks.spawn(async move {
            let lock = zkclient_acquire(&client, &dir, &options).await?;
            zkclient_release(&client, lock).await
        });
    }
    wait_queued(&client, path, n + 1, &mut tasks).await?;
    println!("QUEUED n={n} rss_kb={} base_kb={base_kb}", peak_rss_kb().unwrap_or(0));
    let start = Instant::now();
    zkclient_release(&client, holder).await?;
    join_all(&mut tasks).await?;
    let millis = start.elapsed().as_millis();
    println!("RESULT drained={n} millis={millis} rss_kb={}", peak_rss_kb().unwrap_or(0));
    Ok(())
}

/// Polls the children of `path` every [`POLL`] until there are `target`.
async fn wait_queued(
    client: &Client,
    path: &str,
    target: usize,
    tasks: &mut JoinSet<anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + QUEUE_TIMEOUT;
    loop {
        let count = client.list_children(path).await?.len();
        if count >= target {
            return Ok(());
        }
        if let Some(done) = tasks.try_join_next() {
            done??;
            bail!("a waiter got the lock while it was held");
        }
        if Instant::now() > deadline {
            bail!("only {count} of {target} contender nodes queued within {} s", QUEUE_TIMEOUT.as_secs());
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn join_all(tasks: &mut JoinSet<anyhow::Result<()>>) -> anyhow::Result<()> {
    while let Some(result) = tasks.join_next().await {
        result??;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// facts

/// The first line of a command's stdout, if it runs and succeeds.
fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = std::process::Command::new(program).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&output.stdout).lines().next().unwrap_or("").trim().to_string())
}

/// The first line of `java -version` (which prints to stderr).
fn java_version(java: &std::path::Path) -> Option<String> {
    let output = std::process::Command::new(java).arg("-version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stderr);
    text.lines().next().map(|l| l.trim().to_string())
}
