//! Config propagation: how long after a `set` every subscriber session holds the new value,
//! for zkr's `ConfigWatcher`, raw persistent watches with `zookeeper-client` (watch event,
//! then a read), and Apache Curator's `CuratorCache`, against the same servers in one run (the
//! deployment comes from the environment: `zkr_benches::Deployment::from_env`).
//!
//! `cargo bench -p zkr-benches --bench config [-- --quick | --subscribers N ... | --updates N]`
//! `ZKR_BENCH_DEPLOY=ensemble ZKR_BENCH_RTT_MS=2 cargo bench -p zkr-benches --bench config`
//!
//! For each subscriber count (default 50 and 500) and each library: N sessions subscribe to one
//! node holding a number; a writer sets 1, 2, ... every 20 ms; an update's latency is from just
//! before its `set` until the last of the N subscribers holds that value or a newer one (times
//! from `CLOCK_MONOTONIC`, which Java's `System.nanoTime` also reads). zkr and the raw watches
//! also run subscribed at once to the same updates (N sessions each), so that a slow fsync or a
//! busy moment lands on both and their ratio is one run's. Reported: p50 and p99
//! over the updates, and how many subscribers end on a stale value (2 s after the last set);
//! and the server's side (issue 47 item 3), for the first run of each library alone: the
//! watches it held once the subscribers were subscribed (`mntr` `zk_watch_count`) and the
//! packets it sent and received per update from then until the updates settled (the writer's
//! set and its reply included).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{ensure, Context};
use nix::time::{clock_gettime, ClockId};
use tokio::sync::oneshot;
use zkr_benches::{Deployment, Table};
use zkr_connection::ZkClient;
use zkr_recipes::config::{ConfigPublisher, ConfigWatcher, Json};
use zkr_testing::peers::CuratorTool;
use zookeeper_client::{AddWatchMode, Client, EventType};

const ZKR: &str = "zkr ConfigWatcher";
const RAW: &str = "zookeeper-client persistent watch + read";
const CURATOR: &str = "Curator CuratorCache";
const ZKR_TOGETHER: &str = "zkr ConfigWatcher, subscribed with the raw watchers at once";
const RAW_TOGETHER: &str = "zookeeper-client persistent watch + read, at once with zkr";
const ROUNDS: usize = 4;
const INTERVAL: Duration = Duration::from_millis(20);
const SETTLE: Duration = Duration::from_secs(2);

/// Microseconds of `CLOCK_MONOTONIC`.
fn mono_us() -> i64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    t.tv_sec() * 1_000_000 + t.tv_nsec() / 1000
}

/// What each subscriber saw: `(value, t_us)` whenever it came to hold a larger value.
type Seen = Arc<Mutex<Vec<Vec<(u64, i64)>>>>;

fn record(seen: &Seen, subscriber: usize, value: u64) {
    let t = mono_us();
    let mut seen = seen.lock().unwrap();
    let list = &mut seen[subscriber];
    if list.last().is_none_or(|(v, _)| value > *v) {
        list.push((value, t));
    }
}

#[derive(Default)]
struct Outcome {
    /// Per update: until every subscriber held it.
    latencies: Vec<Duration>,
    stale: usize,
    missing: usize,
    /// The server's side of the first run measured (issue 47 item 3).
    load: Option<Load>,
}

/// What the server did for the subscribers of one run: the watches it held once they were
/// subscribed (`zk_watch_count`), and the packets it sent and received from then until the
/// updates settled (`zk_packets_sent`, `zk_packets_received`; the writer's set and its reply,
/// one packet each way per update, count too), summed over the servers.
#[derive(Debug, Clone)]
struct Load {
    watches: u64,
    /// Per update.
    sent: String,
    /// Per update.
    received: String,
}

impl Load {
    /// Runs `updates` through `write`, counting what the server does meanwhile.
    async fn around<T>(
        server: &Deployment,
        updates: usize,
        write: impl std::future::Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<(T, Load)> {
        let before = server.counters().await?;
        let written = write.await?;
        let after = server.counters().await?;
        let (sent, received) = after.per_operation(&before, updates);
        Ok((written, Load { watches: before.watches, sent, received }))
    }
}

impl Outcome {
    fn merge(&mut self, other: Outcome) {
        self.load = self.load.take().or(other.load);
        self.latencies.extend(other.latencies);
        self.stale += other.stale;
        self.missing += other.missing;
    }

    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        sorted[((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
    }
}

/// Per update, the time until every subscriber held it (or newer); percentiles over updates.
fn outcome(seen: &[Vec<(u64, i64)>], sets: &[i64]) -> Outcome {
    let last = sets.len() as u64;
    let mut latencies = Vec::new();
    let mut missing = 0;
    for (i, t0) in sets.iter().enumerate() {
        let value = i as u64 + 1;
        let mut worst = 0i64;
        let mut all = true;
        for list in seen {
            match list.iter().find(|(v, _)| *v >= value) {
                Some((_, t)) => worst = worst.max(t - t0),
                None => all = false,
            }
        }
        if all {
            latencies.push(Duration::from_micros(worst.max(0) as u64));
        } else {
            missing += 1;
        }
    }
    let stale = seen.iter().filter(|l| l.last().is_none_or(|(v, _)| *v != last)).count();
    Outcome { latencies, stale, missing, load: None }
}

/// Sets 1..=updates every 20 ms; returns the time just before each set.
async fn write(publisher: &ConfigPublisher<u64>, path: &str, updates: usize) -> anyhow::Result<Vec<i64>> {
    let mut sets = Vec::with_capacity(updates);
    let mut tick = tokio::time::interval(INTERVAL);
    for value in 1..=updates as u64 {
        tick.tick().await;
        sets.push(mono_us());
        publisher.set(path, &value).await?;
    }
    tokio::time::sleep(SETTLE).await;
    Ok(sets)
}

/// A Rust subscriber library.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Zkr,
    Raw,
}

impl Kind {
    /// Subscriber `i` on `path`, recording into `seen`; aborted to stop.
    async fn start(
        self,
        cs: &str,
        path: &str,
        i: usize,
        seen: Seen,
    ) -> anyhow::Result<tokio::task::JoinHandle<()>> {
        match self {
            Kind::Zkr => {
                let zk = ZkClient::connect(cs).await?;
                let watcher = ConfigWatcher::<u64>::builder(&zk, path, Json).start().await?;
                let mut snapshots = watcher.snapshots();
                Ok(tokio::spawn(async move {
                    let _keep = (zk, watcher);
                    loop {
                        let value = snapshots.borrow_and_update().get("").map(|v| *v.value);
                        if let Some(value) = value {
                            record(&seen, i, value);
                        }
                        if snapshots.changed().await.is_err() {
                            return;
                        }
                    }
                }))
            }
            Kind::Raw => {
                let client = Client::connect(cs).await?;
                let mut watcher = client.watch(path, AddWatchMode::Persistent).await?;
                Ok(tokio::spawn(async move {
                    loop {
                        let event = watcher.changed().await;
                        if event.event_type == EventType::Session && event.session_state.is_terminated() {
                            return;
                        }
                        if event.event_type == EventType::NodeDataChanged {
                            if let Ok((data, _)) = client.get_data(&event.path).await {
                                if let Ok(value) = serde_json::from_slice::<u64>(&data) {
                                    record(&seen, i, value);
                                }
                            }
                        }
                    }
                }))
            }
        }
    }
}

/// Starts `n` subscribers of every kind in `kinds` on `path` (each kind records into its own
/// `Seen`), runs the writer once, stops them, and measures each kind against the same updates:
/// with two kinds, a slow fsync or a busy moment hits both alike.
async fn subscribed(
    server: &Deployment,
    kinds: &[Kind],
    cs: &str,
    n: usize,
    publisher: &ConfigPublisher<u64>,
    path: &str,
    updates: usize,
) -> anyhow::Result<Vec<Outcome>> {
    let seens: Vec<Seen> = kinds.iter().map(|_| Arc::new(Mutex::new(vec![Vec::new(); n]))).collect();
    server.quiet().await?;
    let mut keep = Vec::new();
    for i in 0..n {
        for (kind, seen) in kinds.iter().zip(&seens) {
            keep.push(kind.start(cs, path, i, seen.clone()).await?);
        }
    }
    let (sets, load) = Load::around(server, updates, write(publisher, path, updates)).await?;
    for task in &keep {
        task.abort();
    }
    let mut outcomes: Vec<Outcome> = seens.iter().map(|seen| outcome(&seen.lock().unwrap(), &sets)).collect();
    if let [alone] = outcomes.as_mut_slice() {
        alone.load = Some(load);
    }
    Ok(outcomes)
}

async fn zkr(
    server: &Deployment,
    cs: &str,
    path: &str,
    n: usize,
    publisher: &ConfigPublisher<u64>,
    updates: usize,
) -> anyhow::Result<Outcome> {
    Ok(subscribed(server, &[Kind::Zkr], cs, n, publisher, path, updates).await?.remove(0))
}

async fn raw(
    server: &Deployment,
    cs: &str,
    path: &str,
    n: usize,
    publisher: &ConfigPublisher<u64>,
    updates: usize,
) -> anyhow::Result<Outcome> {
    Ok(subscribed(server, &[Kind::Raw], cs, n, publisher, path, updates).await?.remove(0))
}

async fn curator(
    server: &Deployment,
    tool: &CuratorTool,
    cs: &str,
    path: &str,
    n: usize,
    publisher: &ConfigPublisher<u64>,
    updates: usize,
) -> anyhow::Result<Outcome> {
    server.quiet().await?;
    let mut peer = tool.spawn(&["config-subscribers", cs, path, &n.to_string()])?;
    peer.set_line_timeout(Duration::from_secs(300));
    peer.expect_line("READY").await?;
    let (stop, stopped) = oneshot::channel::<()>();
    let reader = tokio::spawn(async move {
        let mut seen = vec![Vec::new(); n];
        let mut stopped = stopped;
        let mut closing = false;
        loop {
            let line = tokio::select! {
                line = peer.next_line() => line?,
                _ = &mut stopped, if !closing => {
                    closing = true;
                    peer.close_stdin();
                    continue;
                }
            };
            let Some(line) = line else { break };
            let fields: Vec<&str> = line.split_whitespace().collect();
            if let ["SEEN", i, value, t] = fields.as_slice() {
                let list: &mut Vec<(u64, i64)> = &mut seen[i.parse::<usize>()?];
                list.push((value.parse()?, t.parse()?));
            }
        }
        let status = peer.wait().await?;
        ensure!(status.success(), "CuratorTool config-subscribers exited with {status}");
        Ok::<_, anyhow::Error>(seen)
    });
    let (sets, load) = Load::around(server, updates, write(publisher, path, updates)).await?;
    let _ = stop.send(());
    let seen = reader.await??;
    Ok(Outcome { load: Some(load), ..outcome(&seen, &sets) })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut counts = Vec::new();
    let mut updates = 100;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => {
                counts = vec![50];
                updates = 30;
            }
            "--subscribers" => counts.push(args.next().context("--subscribers N")?.parse()?),
            "--updates" => updates = args.next().context("--updates N")?.parse()?,
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    if counts.is_empty() {
        counts = vec![50, 500];
    }
    let server = Deployment::from_env().await?;
    eprintln!("[config bench] on {}", server.describe());
    let cs = server.connect_string();
    let tool = CuratorTool::locate().context("Apache Curator (libcurator-recipes-java)")?;
    let zk = ZkClient::connect(cs.as_str()).await?;
    let publisher = ConfigPublisher::new(&zk, Json);
    let mut table = Table::new(&[
        "subscribers",
        "library",
        "p50",
        "p99",
        "stale at end",
        "updates not reached by all",
        "server: watches",
        "packets sent / update",
        "packets received / update",
    ]);
    // The JVM serves faster once warm: one throwaway round of each before measuring.
    eprintln!("[config bench] warming up");
    publisher.set("/bench-config/warmup", &0).await?;
    raw(&server, &cs, "/bench-config/warmup", 50, &publisher, 100).await?;
    publisher.set("/bench-config/warmup", &0).await?;
    zkr(&server, &cs, "/bench-config/warmup", 50, &publisher, 100).await?;
    let mut ratios = Vec::new();
    for &n in &counts {
        // zkr and the raw client alternate over ROUNDS rounds (the server drifts faster while
        // it runs, and a fixed order would hand that to whoever runs second); Curator runs once.
        let mut results: Vec<(&str, Outcome)> = vec![(ZKR, Outcome::default()), (RAW, Outcome::default())];
        for round in 0..ROUNDS {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let library = results[i].0;
                let path = format!("/bench-config/{n}/r{round}-{i}");
                publisher.set(&path, &0).await?;
                eprintln!("[config bench] {n} subscribers, round {}: {library}", round + 1);
                let outcome = if i == 0 {
                    zkr(&server, &cs, &path, n, &publisher, updates).await?
                } else {
                    raw(&server, &cs, &path, n, &publisher, updates).await?
                };
                results[i].1.merge(outcome);
            }
        }
        let path = format!("/bench-config/{n}/curator");
        publisher.set(&path, &0).await?;
        eprintln!("[config bench] {n} subscribers: {CURATOR}");
        results.push((CURATOR, curator(&server, &tool, &cs, &path, n, &publisher, updates).await?));
        // Both subscribed at once to the same updates, ROUNDS times: a ratio per run that
        // server hiccups (a slow fsync lands on both) do not decide.
        let mut together = [Outcome::default(), Outcome::default()];
        for round in 0..ROUNDS {
            let path = format!("/bench-config/{n}/together-{round}");
            publisher.set(&path, &0).await?;
            eprintln!("[config bench] {n} subscribers, round {}: zkr and raw at once", round + 1);
            let outcomes =
                subscribed(&server, &[Kind::Zkr, Kind::Raw], &cs, n, &publisher, &path, updates).await?;
            for (sum, outcome) in together.iter_mut().zip(outcomes) {
                sum.merge(outcome);
            }
        }
        let [zkr_together, raw_together] = together;
        results.push((ZKR_TOGETHER, zkr_together));
        results.push((RAW_TOGETHER, raw_together));
        for (library, result) in &results {
            table.row(vec![
                n.to_string(),
                library.to_string(),
                format!("{:.1} ms", result.percentile(0.50).as_secs_f64() * 1e3),
                format!("{:.1} ms", result.percentile(0.99).as_secs_f64() * 1e3),
                result.stale.to_string(),
                result.missing.to_string(),
                result.load.as_ref().map_or("-".into(), |l| l.watches.to_string()),
                result.load.as_ref().map_or("-".into(), |l| l.sent.clone()),
                result.load.as_ref().map_or("-".into(), |l| l.received.clone()),
            ]);
        }
        let p99 = |i: usize| results[i].1.percentile(0.99).as_secs_f64();
        ratios.push((n, p99(0) / p99(1), p99(0) / p99(2), p99(3) / p99(4)));
    }
    zkr_benches::print_report(
        &format!(
            "Config propagation ({updates} updates, {} ms apart; zkr and raw: {ROUNDS} alternating rounds; on {})",
            INTERVAL.as_millis(),
            server.describe()
        ),
        &table,
    );
    for (n, vs_raw, vs_curator, together) in ratios {
        println!(
            "- {n} subscribers: zkr p99 / raw p99 = {vs_raw:.2}x (subscribed at once: {together:.2}x); zkr p99 / Curator p99 = {vs_curator:.3}x"
        );
    }
    Ok(())
}
