//! The run's state ([`Bench`]), the bounds every measurement shares, the timed scenarios
//! (`uncontended`, `contended`, `inprocess`: rounds of one measurement per library, then a table
//! and the ratios) and `requests`.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::{anyhow, bail, ensure};
use zkr_benches::{ensure_path, fmt_ratio, BenchOptions, Deployment, Measurement, Table, WARMUP};
use zkr_testing::peers::CuratorTool;
use zookeeper_client::Client;

use crate::library::{
    rust_job, ClientLock, Connection, Floor, FloorPipelined, Library, Load, RustLock, ZkrMutex, ZkrMutexDrop,
    ZkrMutexPrompt,
};
use crate::report::library_table;
use crate::{
    CONTENDED_SESSIONS, CURATOR_REQUEST_SECONDS, GRACE, INPROCESS_TASKS, REQUEST_CYCLES, SERVER_WORK_SECONDS,
    SETTLE,
};

/// One library's measurement for a given window (seconds): a fresh future per round.
pub type Job =
    Box<dyn Fn(f64) -> Pin<Box<dyn Future<Output = anyhow::Result<Measurement>> + Send>> + Send + Sync>;

/// Rounds per scenario (the library order alternates between rounds).
const ROUNDS: usize = 2;

/// The state of one run.
pub struct Bench {
    pub options: BenchOptions,
    pub server: Deployment,
    pub cs: String,
    pub curator: Result<CuratorTool, String>,
    pub ratios: Vec<String>,
}

/// A scenario measured in alternating rounds, one measurement per library.
#[derive(Debug, Clone, Copy)]
struct Timed {
    name: &'static str,
    load: Load,
    libraries: &'static [Library],
}

const LOCKS: [Library; 3] = [Library::Zkr, Library::Curator, Library::ZookeeperClient];
const UNCONTENDED: Timed = Timed {
    name: "uncontended",
    load: Load::Cycles,
    libraries: &[
        Library::Zkr,
        Library::ZkrDrop,
        Library::Curator,
        Library::ZookeeperClient,
        Library::Floor,
        Library::FloorPipelined,
    ],
};
const CONTENDED: Timed = Timed {
    name: "contended",
    load: Load::Sessions(CONTENDED_SESSIONS),
    libraries: &[Library::Zkr, Library::ZkrPrompt, Library::Curator, Library::ZookeeperClient],
};
const INPROCESS: Timed = Timed { name: "inprocess", load: Load::Tasks(INPROCESS_TASKS), libraries: &LOCKS };

impl Timed {
    /// The library's lock path in this scenario.
    fn path(self, library: Library) -> String {
        format!("/bench/{}/{}", self.name, library.name())
    }

    /// `CuratorTool bench-<scenario> CONNECT PATH [COUNT]` (the window follows).
    fn curator_args(self, cs: &str, path: &str) -> Vec<String> {
        let mut args = vec![format!("bench-{}", self.name), cs.to_string(), path.to_string()];
        if let Load::Sessions(n) | Load::Tasks(n) = self.load {
            args.push(n.to_string());
        }
        args
    }
}

impl Bench {
    /// Runs one measurement, reporting progress on stderr and a failure on stdout.
    pub async fn step<T>(
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

    pub fn curator_tool(&self) -> anyhow::Result<&CuratorTool> {
        self.curator.as_ref().map_err(|e| anyhow!("Curator unavailable: {e}"))
    }

    /// Measures every library of `scenario` in `ROUNDS` rounds of `seconds / ROUNDS` each, the
    /// order reversed in every other round, and combines each library's rounds: the server keeps
    /// getting faster for a while (JIT, caches), and a fixed order would hand that drift to
    /// whoever runs last.
    async fn alternating(&self, scenario: Timed) -> Vec<(Library, Option<Measurement>)> {
        let libraries = scenario.libraries;
        let jobs: Vec<Job> = libraries.iter().map(|&library| self.job(library, scenario)).collect();
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
                let label = format!("{} (round {} of {ROUNDS})", libraries[i].label(), round + 1);
                match self.step(scenario.name, &label, jobs[i](per_round)).await {
                    Some(m) => {
                        eprintln!(
                            "[lock bench]   {} ops in {:.2} s, p50 {:?}, p99 {:?}",
                            m.ops, m.seconds, m.p50, m.p99
                        );
                        parts[i].push(m);
                    }
                    None => failed[i] = true,
                }
            }
        }
        let combined = parts
            .into_iter()
            .zip(failed)
            .map(|(p, failed)| (!failed && !p.is_empty()).then(|| Measurement::combine(&p)));
        libraries.iter().copied().zip(combined).collect()
    }

    fn job(&self, library: Library, scenario: Timed) -> Job {
        let (cs, path, load) = (self.cs.clone(), scenario.path(library), scenario.load);
        match library {
            Library::Zkr => rust_job::<ZkrMutex>(cs, path, load),
            Library::ZkrDrop => rust_job::<ZkrMutexDrop>(cs, path, load),
            Library::ZkrPrompt => rust_job::<ZkrMutexPrompt>(cs, path, load),
            Library::ZookeeperClient => rust_job::<ClientLock>(cs, path, load),
            Library::Floor => rust_job::<Floor>(cs, path, load),
            Library::FloorPipelined => rust_job::<FloorPipelined>(cs, path, load),
            Library::Curator => self.curator_job(scenario.curator_args(&cs, &path)),
        }
    }

    /// `CuratorTool` with `args` and the window, its `RESULT` line parsed.
    fn curator_job(&self, args: Vec<String>) -> Job {
        let tool = self.curator.clone();
        Box::new(move |seconds| {
            let tool = tool.clone();
            let mut args = args.clone();
            args.push(seconds.to_string());
            Box::pin(async move {
                let tool = tool.map_err(|e| anyhow!("Curator unavailable: {e}"))?;
                let argv: Vec<&str> = args.iter().map(String::as_str).collect();
                let (line, status) = run_curator(&tool, &argv, "RESULT", limit_for(seconds)).await?;
                ensure!(status.success(), "CuratorTool exited with {status}");
                Measurement::from_result_line(&line).map_err(anyhow::Error::msg)
            })
        })
    }

    /// Measures `scenario`, prints its table under `heading` and records its ratios.
    async fn timed(&mut self, scenario: Timed, heading: &str) {
        let results = self.alternating(scenario).await;
        println!("\n## {heading}\n");
        print!("{}", crate::report::measurement_table(scenario.load, &results).render());
        self.measurement_ratios(scenario.name, scenario.load, &results);
    }

    pub async fn uncontended(&mut self) {
        self.timed(UNCONTENDED, "uncontended: one session, acquire + release cycles").await;
        println!(
            "\nThe floor is two awaited requests on one `zookeeper_client::Client` (pairs/s): no lock logic."
        );
    }

    pub async fn contended(&mut self) {
        let scenario = CONTENDED;
        let mut work = Vec::new();
        for &library in scenario.libraries {
            let (job, path) = (self.job(library, scenario), scenario.path(library));
            let step = format!("{} (server work)", library.label());
            work.push((library, self.step(scenario.name, &step, self.server_work(&path, &job)).await));
        }
        let heading = format!(
            "contended: {CONTENDED_SESSIONS} sessions on one lock (one client and one task or thread per session)"
        );
        self.timed(scenario, &heading).await;
        println!("\n## contended: server work per acquisition\n");
        print!("{}", server_work_table(&work).render());
        println!(
            "\nA separate {SERVER_WORK_SECONDS} s run of each library before the timed rounds, alone on the \
             server. Packets received (requests and pings): `zk_packets_received`; packets sent (replies and \
             watch notifications): `zk_packets_sent`; fsyncs: `zk_cnt_fsynctime` (`mntr`), before and after, so connecting and closing the {CONTENDED_SESSIONS} sessions count too. Acquisitions \
             are counted by the server: the lock node's child version moves by two per acquisition (a \
             create and a delete)."
        );
    }

    pub async fn inprocess(&mut self) {
        let heading =
            format!("inprocess: {INPROCESS_TASKS} tasks (Curator: threads) sharing one mutex on one session");
        self.timed(INPROCESS, &heading).await;
        println!(
            "\nzookeeper-client has no shared mutex object: its row is {INPROCESS_TASKS} tasks each calling \
             `Client::lock` on one shared `Client` (one session)."
        );
    }

    /// The server's packets and fsyncs while `job` runs [`SERVER_WORK_SECONDS`] on `path`, and
    /// the acquisitions the server saw.
    async fn server_work(&self, path: &str, job: &Job) -> anyhow::Result<ServerWork> {
        let counters = async || -> anyhow::Result<(u64, u64, u64)> {
            let sum = |key| self.server.mntr_sum(key);
            Ok((
                sum("zk_packets_received").await?,
                sum("zk_packets_sent").await?,
                sum("zk_cnt_fsynctime").await?,
            ))
        };
        let first = self.cversion(path).await?;
        let before = counters().await?;
        job(SERVER_WORK_SECONDS).await?;
        tokio::time::sleep(SETTLE).await;
        let after = counters().await?;
        let changes = self.cversion(path).await? - first;
        ensure!(changes > 0 && changes % 2 == 0, "{path}'s cversion moved by {changes}");
        Ok(ServerWork {
            acquisitions: (changes / 2) as u64,
            packets: after.0.saturating_sub(before.0),
            sent: after.1.saturating_sub(before.1),
            fsyncs: after.2.saturating_sub(before.2),
        })
    }

    /// The child version (`cversion`) of `path`, read by a short-lived session.
    async fn cversion(&self, path: &str) -> anyhow::Result<i64> {
        let client = Client::connect_to(&self.cs).await?;
        ensure_path(&client, path).await?;
        let cversion = cversion_of(&client, path).await?;
        drop(client);
        tokio::time::sleep(SETTLE).await;
        Ok(i64::from(cversion))
    }
}

/// The child version of `path`.
async fn cversion_of(client: &Client, path: &str) -> anyhow::Result<i32> {
    Ok(client.check_stat(path).await?.ok_or_else(|| anyhow!("{path} vanished"))?.cversion)
}

/// Runs `CuratorTool` with `args` until it prints a line starting with `expect`: that line and
/// the tool's exit status.
async fn run_curator(
    tool: &CuratorTool,
    args: &[&str],
    expect: &str,
    timeout: Duration,
) -> anyhow::Result<(String, ExitStatus)> {
    let mut peer = tool.spawn(args)?;
    peer.set_line_timeout(timeout);
    let line = peer.expect_line(expect).await?;
    Ok((line, peer.wait().await?))
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

fn server_work_table(work: &[(Library, Option<ServerWork>)]) -> Table {
    let headers = [
        "library",
        "acquisitions",
        "packets received per acquisition",
        "packets sent per acquisition",
        "fsyncs per acquisition",
    ];
    library_table(&headers, work, |w| {
        let per = |n: u64| format!("{:.2}", n as f64 / w.acquisitions.max(1) as f64);
        vec![w.acquisitions.to_string(), per(w.packets), per(w.sent), per(w.fsyncs)]
    })
}

/// How long one measurement of `seconds` may take before it counts as failed.
pub fn limit_for(seconds: f64) -> Duration {
    WARMUP + Duration::from_secs_f64(seconds) + GRACE
}

/// Runs `work` as a task of its own, bounded by `limit` (the task is aborted when it runs out).
pub async fn measure<T: Send + 'static>(
    limit: Duration,
    work: impl Future<Output = anyhow::Result<T>> + Send + 'static,
) -> anyhow::Result<T> {
    let task = tokio::spawn(work);
    let abort = task.abort_handle();
    let result =
        bounded(limit, async { task.await.map_err(|e| anyhow!("the measurement task failed: {e}"))? }).await;
    abort.abort(); // a no-op unless the task ran out of time
    result
}

/// Runs `work` in place, bounded by `limit`.
async fn bounded<T>(limit: Duration, work: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or_else(|_| Err(anyhow!("did not finish within {} s", limit.as_secs())))
}

// ---------------------------------------------------------------------------------------------
// requests: ZooKeeper packets per uncontended acquire + release, from the server's `mntr`
// counters; cycles are counted by the server (the lock node's `cversion`).

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

impl Bench {
    pub async fn requests(&mut self) {
        let scenario = "requests";
        let per_cycle = self.step(scenario, "cversion probe", self.cversion_per_cycle()).await;
        let mut results = Vec::new();
        for library in [Library::Zkr, Library::Curator, Library::ZookeeperClient] {
            let count = bounded(GRACE, self.count_requests(library, per_cycle));
            results.push((library, self.step(scenario, library.label(), count).await));
        }

        println!("\n## requests: ZooKeeper packets per uncontended acquire + release\n");
        print!("{}", requests_table(&results).render());
        println!(
            "\nPackets: the server's `zk_packets_received` (`mntr`) before and after a run with no other \
             session open; a run is connect, the cycles, close. It includes session setup, close and any \
             pings. zkr and zookeeper-client run {REQUEST_CYCLES} cycles; Curator runs `bench-uncontended` \
             for its 1 s warm-up plus {CURATOR_REQUEST_SECONDS} s. Cycles are counted by the server (the lock \
             node's child version). \"Session only\" is the same run with no cycles (Curator: `lock ... 0 0`), \
             subtracted for the net column."
        );
        let Some((_, Some(z))) = results.first() else { return };
        for (library, other) in &results[1..] {
            let Some(o) = other else { continue };
            let name = library.ratio_name();
            self.ratios.push(format!(
                "requests per cycle zkr/{name} {} (net of session: zkr {:.2}, {name} {:.2})",
                fmt_ratio(z.per_cycle_net(), o.per_cycle_net()),
                z.per_cycle_net(),
                o.per_cycle_net()
            ));
        }
    }

    /// The packets the server receives while `work` runs (and [`SETTLE`] after it).
    async fn count_packets(&self, work: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<u64> {
        let packets = async || self.server.packets_received().await;
        let before = packets().await?;
        work.await?;
        tokio::time::sleep(SETTLE).await;
        let after = packets().await?;
        Ok(after.saturating_sub(before))
    }

    /// How much one create + delete of a child moves its parent's `cversion` (the server's count
    /// of child changes).
    async fn cversion_per_cycle(&self) -> anyhow::Result<i64> {
        let path = "/bench/requests/probe";
        let client = Client::connect_to(&self.cs).await?;
        let floor = <Floor>::open(&client, path).await?;
        let before = cversion_of(&client, path).await?;
        floor.release(floor.acquire().await?).await?;
        let after = cversion_of(&client, path).await?;
        let per_cycle = i64::from(after - before);
        ensure!(per_cycle > 0, "a create and a delete did not change {path}'s cversion");
        Ok(per_cycle)
    }

    async fn count_requests(&self, library: Library, per_cycle: Option<i64>) -> anyhow::Result<RequestCount> {
        let per_cycle = per_cycle.ok_or_else(|| anyhow!("the cversion probe failed"))?;
        let path = format!("/bench/requests/{}", library.name());
        let first = self.cversion(&path).await?;
        let (session_packets, packets) = match library {
            Library::Zkr => self.rust_packets::<ZkrMutex>(&path).await?,
            Library::ZookeeperClient => self.rust_packets::<ClientLock>(&path).await?,
            Library::Curator => self.curator_packets(&path).await?,
            Library::Floor | Library::FloorPipelined | Library::ZkrDrop | Library::ZkrPrompt => {
                bail!("unknown library {}", library.name())
            }
        };
        let changes = self.cversion(&path).await? - first;
        ensure!(
            changes > 0 && changes % per_cycle == 0,
            "{path}'s cversion moved by {changes}, not a multiple of {per_cycle}"
        );
        let cycles = (changes / per_cycle) as u64;
        if library != Library::Curator && cycles != REQUEST_CYCLES {
            let name = library.name();
            println!(
                "\nWARNING requests / {name}: the server counted {cycles} cycles, expected {REQUEST_CYCLES}"
            );
        }
        Ok(RequestCount { cycles, packets, session_packets })
    }

    /// The packets of a session alone, then of a session with [`REQUEST_CYCLES`] cycles.
    async fn rust_packets<L: RustLock>(&self, path: &str) -> anyhow::Result<(u64, u64)> {
        let session = self
            .count_packets(async {
                L::Session::connect_to(&self.cs).await?.disconnect().await;
                Ok(())
            })
            .await?;
        let run = self
            .count_packets(async {
                let session = L::Session::connect_to(&self.cs).await?;
                let lock = L::open(&session, path).await?;
                for _ in 0..REQUEST_CYCLES {
                    lock.release(lock.acquire().await?).await?;
                }
                session.disconnect().await;
                Ok(())
            })
            .await?;
        Ok((session, run))
    }

    /// The packets of `CuratorTool lock ... 0 0` (a session alone), then of a short
    /// `bench-uncontended` run.
    async fn curator_packets(&self, path: &str) -> anyhow::Result<(u64, u64)> {
        let (tool, cs) = (self.curator_tool()?, self.cs.as_str());
        let session = self.count_packets(curator_once(tool, &["lock", cs, path, "0", "0"], "DONE")).await?;
        let args = ["bench-uncontended", cs, path, CURATOR_REQUEST_SECONDS];
        let run = self.count_packets(curator_once(tool, &args, "RESULT")).await?;
        Ok((session, run))
    }
}

/// Runs `CuratorTool` with `args` until it prints `expect`; a failed exit is an error.
async fn curator_once(tool: &CuratorTool, args: &[&str], expect: &str) -> anyhow::Result<()> {
    let (_, status) = run_curator(tool, args, expect, GRACE).await?;
    ensure!(status.success(), "CuratorTool {} exited with {status}", args[0]);
    Ok(())
}

fn requests_table(results: &[(Library, Option<RequestCount>)]) -> Table {
    let headers = [
        "library",
        "cycles",
        "packets, whole run",
        "per cycle incl. session",
        "packets, session only",
        "per cycle net of session",
    ];
    library_table(&headers, results, |r| {
        vec![
            r.cycles.to_string(),
            r.packets.to_string(),
            format!("{:.2}", r.per_cycle_gross()),
            r.session_packets.to_string(),
            format!("{:.2}", r.per_cycle_net()),
        ]
    })
}
