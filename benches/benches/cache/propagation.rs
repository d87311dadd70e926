//! Propagation to many caches: zkr's `CuratorCache`, raw persistent recursive watches with a
//! read after each event, and Curator's `CuratorCache` (see the bench's docs in `main.rs`).

use std::time::Duration;

use anyhow::{ensure, Context};
use futures::StreamExt as _;
use nix::time::{clock_gettime, ClockId};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use zkr_benches::{fmt_ratio, Setup, Table};
use zkr_connection::ZkClient;
use zkr_recipes::cache::{CacheEvent, CuratorCache};
use zkr_testing::peers::PeerProcess;
use zookeeper_client::{Acls, AddWatchMode, Client, CreateMode, EventType};

/// Sessions the caches (and the raw watches) are spread over.
pub const SESSIONS: usize = 5;
/// Writes before the measured ones, in every round.
const WARMUP_WRITES: u64 = 20;
/// zkr and the raw watches alternate over this many rounds, so that the machine's other work
/// (and the server speeding up as it runs) falls on both alike.
const ROUNDS: usize = 8;
/// How long one write may take to reach every cache.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Microseconds of `CLOCK_MONOTONIC`.
fn mono_us() -> i64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    t.tv_sec() * 1_000_000 + t.tv_nsec() / 1000
}

/// One cache (or watch) applied value `.1` at `.2` (µs).
pub type Seen = (usize, u64, i64);

/// Latencies of (write, cache) pairs, and per write until the last cache had it.
#[derive(Default)]
pub struct Outcome {
    each: Vec<Duration>,
    last: Vec<Duration>,
}

impl Outcome {
    /// How many writes were made (the untimed ones too).
    pub fn writes(&self) -> usize {
        self.last.len() + WARMUP_WRITES as usize
    }

    fn merge(&mut self, other: Outcome) {
        self.each.extend(other.each);
        self.last.extend(other.last);
    }
}

fn percentile(values: &[Duration], p: f64) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// Where each write's sightings come from.
pub trait Sightings {
    async fn next(&mut self) -> anyhow::Result<Seen>;
}

pub struct Channel(mpsc::UnboundedReceiver<Seen>);

impl Sightings for Channel {
    async fn next(&mut self) -> anyhow::Result<Seen> {
        self.0.recv().await.context("every cache task ended")
    }
}

/// `SEEN <i> <value> <t_us>` lines of `CuratorTool cache-propagation`.
pub struct Peer(pub PeerProcess);

impl Sightings for Peer {
    async fn next(&mut self) -> anyhow::Result<Seen> {
        loop {
            let line = self.0.next_line().await?.context("CuratorTool ended")?;
            if let ["SEEN", i, value, t] = line.split_whitespace().collect::<Vec<_>>().as_slice() {
                return Ok((i.parse()?, value.parse()?, t.parse()?));
            }
        }
    }
}

/// Sets `node` to 1, 2, ... (`WARMUP_WRITES` + `writes` times), each after all `n` caches saw
/// the one before.
pub async fn write(
    writer: &Client,
    node: &str,
    n: usize,
    writes: usize,
    seen: &mut impl Sightings,
) -> anyhow::Result<Outcome> {
    let mut outcome = Outcome::default();
    for value in 1..=WARMUP_WRITES + writes as u64 {
        let t0 = mono_us();
        writer.set_data(node, value.to_string().as_bytes(), None).await?;
        let mut caches = vec![false; n];
        let (mut count, mut worst) = (0, 0);
        let all = async {
            while count < n {
                let (i, v, t) = seen.next().await?;
                if v == value && !std::mem::replace(&mut caches[i], true) {
                    count += 1;
                    worst = worst.max(t - t0);
                    if value > WARMUP_WRITES {
                        outcome.each.push(Duration::from_micros((t - t0).max(0) as u64));
                    }
                }
            }
            Ok::<_, anyhow::Error>(())
        };
        tokio::time::timeout(WRITE_TIMEOUT, all).await.context("a write did not reach every cache")??;
        if value > WARMUP_WRITES {
            outcome.last.push(Duration::from_micros(worst.max(0) as u64));
        }
    }
    Ok(outcome)
}

/// A fresh subtree with one node; returns the node's path.
async fn subtree(writer: &Client, root: &str) -> anyhow::Result<String> {
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    writer.mkdir(root, &options).await?;
    let node = format!("{root}/node");
    writer.create(&node, b"0", &options).await?;
    Ok(node)
}

fn value_of(data: &[u8]) -> Option<u64> {
    std::str::from_utf8(data).ok()?.trim().parse().ok()
}

async fn zkr(cs: &str, writer: &Client, root: &str, n: usize, writes: usize) -> anyhow::Result<Outcome> {
    let node = subtree(writer, root).await?;
    let (tasks, mut seen) = zkr_caches(cs, root, n).await?;
    let outcome = write(writer, &node, n, writes, &mut seen).await;
    tasks.iter().for_each(JoinHandle::abort);
    outcome
}

/// `n` zkr caches of `root` over [`SESSIONS`] new sessions, each reporting the numbers it sees
/// created or changed; aborting the tasks drops the caches and the sessions.
pub async fn zkr_caches(cs: &str, root: &str, n: usize) -> anyhow::Result<(Vec<JoinHandle<()>>, Channel)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(ZkClient::connect(cs).await?);
    }
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    for i in 0..n {
        let cache = CuratorCache::builder(&sessions[i % SESSIONS], root).start().await?;
        let mut events = cache.events();
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            let _cache = cache;
            while let Some(event) = events.next().await {
                let node = match event {
                    CacheEvent::Created { node, .. } => node,
                    CacheEvent::Changed { new, .. } => new,
                    _ => continue,
                };
                if let Some(value) = value_of(node.data()) {
                    let _ = tx.send((i, value, mono_us()));
                }
            }
        }));
    }
    Ok((tasks, Channel(rx)))
}

async fn raw(cs: &str, writer: &Client, root: &str, n: usize, writes: usize) -> anyhow::Result<Outcome> {
    let node = subtree(writer, root).await?;
    let (tx, rx) = mpsc::unbounded_channel();
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(Client::connect(cs).await?);
    }
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    for i in 0..n {
        let client = sessions[i % SESSIONS].clone();
        let mut watcher = client.watch(root, AddWatchMode::PersistentRecursive).await?;
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let event = watcher.changed().await;
                if event.event_type == EventType::Session && event.session_state.is_terminated() {
                    return;
                }
                if matches!(event.event_type, EventType::NodeDataChanged | EventType::NodeCreated) {
                    if let Ok((data, _)) = client.get_data(&event.path).await {
                        if let Some(value) = value_of(&data) {
                            let _ = tx.send((i, value, mono_us()));
                        }
                    }
                }
            }
        }));
    }
    let outcome = write(writer, &node, n, writes, &mut Channel(rx)).await;
    tasks.iter().for_each(JoinHandle::abort);
    outcome
}

async fn curator(
    setup: &Setup,
    writer: &Client,
    root: &str,
    n: usize,
    writes: usize,
) -> anyhow::Result<Outcome> {
    let node = subtree(writer, root).await?;
    let args = ["cache-propagation", &setup.connect_string, root, &SESSIONS.to_string(), &n.to_string()];
    let mut peer = setup.curator.spawn(&args)?;
    peer.set_line_timeout(Duration::from_secs(300));
    peer.expect_line("READY").await?;
    let mut seen = Peer(peer);
    let outcome = write(writer, &node, n, writes, &mut seen).await?;
    let status = seen.0.wait().await?;
    ensure!(status.success(), "CuratorTool cache-propagation exited with {status}");
    Ok(outcome)
}

/// Runs the three and prints the table and the ratios.
pub async fn run(setup: &Setup, writer: &Client, n: usize, writes: usize) -> anyhow::Result<()> {
    let cs = setup.connect_string.as_str();
    let per_round = writes.div_ceil(ROUNDS);
    let (mut zkr_out, mut raw_out) = (Outcome::default(), Outcome::default());
    for round in 0..ROUNDS {
        for zkr_first in [round % 2 == 0, round % 2 != 0] {
            let root = format!("/bench-cache/prop/r{round}-{}", if zkr_first { "zkr" } else { "raw" });
            eprintln!("[cache bench] propagation round {}: {root}", round + 1);
            if zkr_first {
                zkr_out.merge(zkr(cs, writer, &root, n, per_round).await?);
            } else {
                raw_out.merge(raw(cs, writer, &root, n, per_round).await?);
            }
        }
    }
    eprintln!("[cache bench] propagation: Curator");
    let curator_out = curator(setup, writer, "/bench-cache/prop/curator", n, per_round * ROUNDS).await?;
    let mut table = Table::new(&["library", "p50", "p99", "p99 until the last cache", "samples"]);
    let rows = [
        ("zkr CuratorCache", &zkr_out),
        ("zookeeper-client persistent recursive watch + read", &raw_out),
        ("Curator CuratorCache", &curator_out),
    ];
    for (library, o) in rows {
        table.row(vec![
            library.to_string(),
            format!("{:.2} ms", percentile(&o.each, 0.50).as_secs_f64() * 1e3),
            format!("{:.2} ms", percentile(&o.each, 0.99).as_secs_f64() * 1e3),
            format!("{:.2} ms", percentile(&o.last, 0.99).as_secs_f64() * 1e3),
            o.each.len().to_string(),
        ]);
    }
    zkr_benches::print_report(
        &format!(
            "Cache propagation ({n} caches over {SESSIONS} sessions, {} writes; zkr and raw: {ROUNDS} \
             alternating rounds; {WARMUP_WRITES} untimed writes before each round)",
            per_round * ROUNDS
        ),
        &table,
    );
    let p99 = |o: &Outcome| percentile(&o.each, 0.99).as_secs_f64();
    println!(
        "- p99: zkr / raw = {} (target <= 1.2x); zkr / Curator = {}",
        fmt_ratio(p99(&zkr_out), p99(&raw_out)),
        fmt_ratio(p99(&zkr_out), p99(&curator_out))
    );
    Ok(())
}
