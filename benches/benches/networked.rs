//! Networked, without the server stall (issue 32, item 6): zkr's `InterProcessMutex` on a
//! 3-server ensemble behind latency proxies (2 ms round trip by default; the default server
//! release, 3.9.5, has no ZOOKEEPER-4537 stall), against the raw `zookeeper-client` floors.
//!
//! ```sh
//! cargo bench -p zkr-benches --bench networked [-- --cycles N --seconds S --rtt-ms R]
//! ```
//!
//! 1. **uncontended tail**: `--cycles` (default 10,000) acquire + release cycles on one
//!    session, each timed: p50, p99, p99.9 and the worst, for zkr and for the floor (an
//!    ephemeral sequential create and its delete, each awaited);
//! 2. **hand-over**: 8 sessions (one task each) on one lock for `--seconds` (default 10, in 2
//!    alternating rounds): acquisitions per second of zkr against the raw hand-over floor, in
//!    which each session creates an ephemeral sequential node, lists the directory once,
//!    watches its predecessor (`exists`) and holds the lock when that watch fires (no second
//!    listing: nobody abandons in this run), then deletes its node at once. A hand-over is
//!    then a delete seen by the next waiter's watch; each acquisition adds its create. zkr
//!    runs twice: as by default, and with the prompt hand-over
//!    (`LockInternals::prompt_hand_over`).

use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::task::JoinSet;
use zkr_benches::{ensure_path, fmt_ratio, Deployment, Latencies, Table};
use zkr_connection::ZkClient;
use zkr_recipes::locks::{InterProcessMutex, LockInternals, StandardLockInternalsDriver};
use zookeeper_client::{Acls, Client, CreateMode};

const SESSIONS: usize = 8;
const ROUNDS: usize = 2;

struct Options {
    cycles: usize,
    seconds: f64,
    rtt: Duration,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options { cycles: 10_000, seconds: 10.0, rtt: Duration::from_millis(2) };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--bench" => {}
            "--cycles" => options.cycles = value("--cycles")?.parse()?,
            "--seconds" => options.seconds = value("--seconds")?.parse()?,
            "--rtt-ms" => options.rtt = Duration::from_secs_f64(value("--rtt-ms")?.parse::<f64>()? / 1000.0),
            other => anyhow::bail!("unknown argument {other}; usage: --cycles N --seconds S --rtt-ms R"),
        }
    }
    Ok(options)
}

/// One uncontended cycle's latencies, `cycles` of them (after 200 untimed).
async fn zkr_cycles(cs: &str, path: &str, cycles: usize) -> anyhow::Result<Latencies> {
    let zk = ZkClient::connect(cs).await?;
    let mutex = InterProcessMutex::new(&zk, path)?;
    let mut latencies = Latencies::default();
    for i in 0..200 + cycles {
        let start = Instant::now();
        mutex.acquire().await?.release().await?;
        if i >= 200 {
            latencies.push(start.elapsed());
        }
    }
    zk.close().await;
    Ok(latencies)
}

async fn floor_cycles(cs: &str, path: &str, cycles: usize) -> anyhow::Result<Latencies> {
    let client = Client::connect(cs).await?;
    ensure_path(&client, path).await?;
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let prefix = format!("{path}/n-");
    let mut latencies = Latencies::default();
    for i in 0..200 + cycles {
        let start = Instant::now();
        let (_, sequence) = client.create(&prefix, b"", &options).await?;
        client.delete(&format!("{prefix}{sequence}"), None).await?;
        if i >= 200 {
            latencies.push(start.elapsed());
        }
    }
    Ok(latencies)
}

/// Acquisitions by 8 sessions of zkr in `seconds`, with the prompt hand-over or without.
async fn zkr_hand_overs(cs: &str, path: &str, seconds: f64, prompt: bool) -> anyhow::Result<u64> {
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(ZkClient::connect(cs).await?);
    }
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let mut tasks = JoinSet::new();
    for zk in &sessions {
        let internals = LockInternals::new(zk, path, "lock-", StandardLockInternalsDriver, 1)?;
        let mutex =
            InterProcessMutex::from_internals(if prompt { internals.prompt_hand_over() } else { internals })?;
        tasks.spawn(async move {
            let mut n = 0u64;
            while Instant::now() < end {
                mutex.acquire().await?.release().await?;
                n += 1;
            }
            anyhow::Ok(n)
        });
    }
    let total = join(tasks).await?;
    for zk in sessions {
        zk.close().await;
    }
    Ok(total)
}

/// Acquisitions by 8 sessions of the raw hand-over floor in `seconds`.
async fn floor_hand_overs(cs: &str, path: &str, seconds: f64) -> anyhow::Result<u64> {
    let setup = Client::connect(cs).await?;
    ensure_path(&setup, path).await?;
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let mut tasks = JoinSet::new();
    for _ in 0..SESSIONS {
        let client = Client::connect(cs).await?;
        let dir = path.to_string();
        tasks.spawn(async move {
            let mut n = 0u64;
            while Instant::now() < end {
                let node = floor_acquire(&client, &dir).await?;
                client.delete(&node, None).await?;
                n += 1;
            }
            anyhow::Ok(n)
        });
    }
    join(tasks).await
}

/// The floor's acquire: create, one listing, a watch on the predecessor; held when it fires.
async fn floor_acquire(client: &Client, dir: &str) -> anyhow::Result<String> {
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (_, sequence) = client.create(&format!("{dir}/n-"), b"", &options).await?;
    let ours = sequence.into_i64();
    let sequence_of = |name: &str| name.strip_prefix("n-").and_then(|s| s.parse::<i64>().ok());
    loop {
        let children = client.list_children(dir).await?;
        let predecessor = children
            .iter()
            .filter(|c| sequence_of(c).is_some_and(|s| s < ours))
            .max_by_key(|c| sequence_of(c));
        let Some(predecessor) = predecessor else { return Ok(format!("{dir}/n-{sequence}")) };
        let (stat, watcher) = client.check_and_watch_stat(&format!("{dir}/{predecessor}")).await?;
        if stat.is_some() {
            watcher.changed().await;
            return Ok(format!("{dir}/n-{sequence}"));
        }
    }
}

async fn join(mut tasks: JoinSet<anyhow::Result<u64>>) -> anyhow::Result<u64> {
    let mut total = 0;
    while let Some(done) = tasks.join_next().await {
        total += done??;
    }
    Ok(total)
}

fn percentiles(latencies: &Latencies) -> [Duration; 4] {
    [0.5, 0.99, 0.999, 1.0].map(|p| latencies.percentile(p))
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = options()?;
    let deployment = Deployment::ensemble(options.rtt).await?;
    let cs = deployment.connect_string();
    eprintln!("[networked] {}", deployment.describe());
    let mut tails = Table::new(&["library", "cycles", "p50", "p99", "p99.9", "worst", "p99.9 / p50"]);
    for (label, zkr) in [("zkr InterProcessMutex", true), ("floor: create + delete, awaited", false)] {
        eprintln!("[networked] uncontended: {label}, {} cycles", options.cycles);
        let path = format!("/bench/networked/uncontended-{}", if zkr { "zkr" } else { "floor" });
        let latencies = if zkr {
            zkr_cycles(&cs, &path, options.cycles).await?
        } else {
            floor_cycles(&cs, &path, options.cycles).await?
        };
        let [p50, p99, p999, worst] = percentiles(&latencies);
        let ratio = p999.as_secs_f64() / p50.as_secs_f64();
        tails.row(vec![
            label.into(),
            latencies.len().to_string(),
            ms(p50),
            ms(p99),
            ms(p999),
            ms(worst),
            format!("{ratio:.2}x"),
        ]);
    }
    let mut counts = [0u64; 3];
    let per_round = options.seconds / ROUNDS as f64;
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
        for i in order {
            let path = format!("/bench/networked/contended-{round}-{i}");
            let name = ["zkr", "floor", "zkr, prompt hand-over"][i];
            eprintln!("[networked] hand-over, round {} of {ROUNDS}: {name}", round + 1);
            counts[i] += match i {
                0 => zkr_hand_overs(&cs, &path, per_round, false).await?,
                1 => floor_hand_overs(&cs, &path, per_round).await?,
                _ => zkr_hand_overs(&cs, &path, per_round, true).await?,
            };
        }
    }
    let rate = |n: u64| n as f64 / options.seconds;
    let mut hand_overs = Table::new(&["8 sessions on one lock", "acquisitions/s"]);
    hand_overs.row(vec!["zkr InterProcessMutex".into(), format!("{:.1}", rate(counts[0]))]);
    hand_overs.row(vec!["zkr InterProcessMutex, prompt hand-over".into(), format!("{:.1}", rate(counts[2]))]);
    hand_overs.row(vec![
        "floor: create, one listing, exists watch on the predecessor, delete".into(),
        format!("{:.1}", rate(counts[1])),
    ]);
    let version = deployment.release().await?;
    let version = version.split('-').next().unwrap_or("unknown").to_string();
    let title = format!("Networked: ZooKeeper {version}, {}; uncontended cycles", deployment.describe());
    zkr_benches::print_report(&title, &tails);

    println!(
        "### Hand-over, {SESSIONS} sessions, {} s in {ROUNDS} alternating rounds\n\n{}",
        options.seconds,
        hand_overs.render()
    );
    println!("RATIOS zkr/floor hand-over rate: {}", fmt_ratio(rate(counts[0]), rate(counts[1])));
    println!("RATIOS zkr prompt/floor hand-over rate: {}", fmt_ratio(rate(counts[2]), rate(counts[1])));
    Ok(())
}
