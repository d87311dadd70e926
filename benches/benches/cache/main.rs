//! Caches (issue 18): zkr's `CuratorCache` against Apache Curator's `CuratorCache` on the same
//! ZooKeeper server in one run.
//!
//! `cargo bench -p zkr-benches --bench cache [-- --quick | --reps N | --writes N | --caches N]`
//! `cargo bench -p zkr-benches --bench cache -- --parents 1000 --children 1000 --reps 1 --writer --load-only`
//! (a million nodes; `--writer`: a client sets one cached node throughout every zkr load, and the
//! cache must show a write made after it; `--load-only`: no propagation part, one warm-up load,
//! and one for Curator's JVM)
//! `cargo bench -p zkr-benches --bench cache -- --server-load [--caches N]` (the server's load of
//! N caches of the load tree and of changes to one of its nodes, zkr and Curator: `server_load.rs`)
//!
//! - initial load: a tree of 100 parents × 100 children (32 bytes each, 10,101 nodes with the
//!   root); the time from `start()` until the cache is initialized, for a new cache on a
//!   connection that is already up. The server is warmed up with 10 untimed zkr loads; then
//!   zkr and Curator alternate over 2 rounds of `--reps` loads each (default 7; Curator: a new
//!   JVM per round, after 3 untimed loads of its own); the median of the pooled loads;
//! - memory per node: zkr: bytes allocated and still live (a counting global allocator,
//!   `stats_alloc`) with a loaded cache minus before it started; Curator: used heap after
//!   `System.gc()` with a loaded cache minus before (approximate); both divided by the nodes
//!   cached. For each library, the full cache and one that keeps no data (`data_not_cached`,
//!   Curator's `CuratorCacheStorage.dataNotCached()`); for zkr also a selector that keeps every other parent's
//!   subtree (Curator's `CuratorCache` has no selector), divided by the nodes it keeps;
//! - propagation: `--caches` caches (default 50) of one subtree over 5 sessions; a writer sets a
//!   node `--writes` times (default 200), each once every cache has seen the one before; zkr and
//!   the baseline alternate over 8 rounds, each round after 20 untimed writes; latency from just before the `set` until each cache's event (times from
//!   `CLOCK_MONOTONIC`, which Java's `System.nanoTime` also reads). The baseline is the same
//!   number of raw `zookeeper-client` persistent recursive watches over 5 sessions, each event
//!   followed by a read, as a cache does.
//!
//! The counting allocator is active during zkr's load too, so zkr's load time includes its cost.
//! "Client CPU per load" is the client process's CPU time (all threads) over the timed loads,
//! divided by their number: the rest of a load is the server's work and the wait for it.

mod propagation;
mod server_load;

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use nix::time::{clock_gettime, ClockId};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use zkr_benches::{fmt_ratio, Table};
use zkr_connection::ZkClient;
use zkr_recipes::cache::CuratorCache;
use zkr_testing::peers::{parse_result, CuratorTool};
use zookeeper_client::{Acls, Client, CreateMode};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

const LOAD_ROOT: &str = "/bench-cache/load";
const DATA: &[u8; 32] = b"0123456789abcdef0123456789abcdef";
/// Untimed zkr loads before any timed one: the server's JIT compiles its read path meanwhile.
const SERVER_WARMUP_LOADS: usize = 10;
/// zkr and Curator alternate over this many rounds of loads.
const LOAD_ROUNDS: usize = 2;
/// Dropped caches stop in the background; this long lets their memory go before a measurement.
const SETTLE: Duration = Duration::from_secs(1);

/// The command line.
struct Options {
    reps: usize,
    writes: usize,
    caches: usize,
    parents: usize,
    children: usize,
    load_only: bool,
    writer: bool,
    server_load: bool,
}

impl Options {
    fn parse() -> anyhow::Result<Self> {
        let mut o = Options {
            reps: 7,
            writes: 200,
            caches: 50,
            parents: 100,
            children: 100,
            load_only: false,
            server_load: false,
            writer: false,
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let mut value = |name: &str| -> anyhow::Result<usize> {
                let v: usize =
                    args.next().context(format!("{name} N"))?.parse().context(format!("{name} N"))?;
                ensure!(v > 0, "{name} must be at least 1");
                Ok(v)
            };
            match arg.as_str() {
                "--quick" => (o.reps, o.writes) = (3, 50),
                "--reps" => o.reps = value("--reps")?,
                "--writes" => o.writes = value("--writes")?,
                "--caches" => o.caches = value("--caches")?,
                "--parents" => o.parents = value("--parents")?,
                "--children" => o.children = value("--children")?,
                "--load-only" => o.load_only = true,
                "--writer" => o.writer = true,
                "--server-load" => o.server_load = true,
                "--bench" => {}
                other => anyhow::bail!(
                    "unknown argument {other}; usage: --quick | --reps N | --writes N | --caches N | \
                     --parents N --children N | --load-only | --writer | --server-load"
                ),
            }
        }
        Ok(o)
    }
}

/// Creates the load tree (many creates in flight at once).
async fn create_tree(client: &Client, parents: usize, children: usize) -> anyhow::Result<usize> {
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.mkdir(LOAD_ROOT, &options).await?;
    let mut count = 1;
    for p in 0..parents {
        let parent = format!("{LOAD_ROOT}/p{p:02}");
        client.create(&parent, DATA, &options).await?;
        let created = (0..children).map(|c| {
            let path = format!("{parent}/c{c:02}");
            let options = &options;
            async move { client.create(&path, DATA, options).await }
        });
        for created in futures::future::join_all(created).await {
            created?;
        }
        count += 1 + children;
    }
    Ok(count)
}

fn live_bytes() -> i64 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort_unstable();
    values[(values.len() - 1) / 2]
}

/// This process's CPU time (all threads, user and system).
fn process_cpu() -> Duration {
    let t = clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).expect("CLOCK_PROCESS_CPUTIME_ID");
    Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32)
}

/// What a library's loads took: wall times, and the client's CPU time over them.
#[derive(Default)]
struct Loads {
    times: Vec<Duration>,
    cpu: Duration,
}

impl Loads {
    fn merge(&mut self, other: Loads) {
        self.times.extend(other.times);
        self.cpu += other.cpu;
    }

    fn median(&self) -> Duration {
        median(self.times.clone())
    }

    fn cell(&self) -> String {
        let (min, max) = (self.times.iter().min(), self.times.iter().max());
        let (min, max) = (min.copied().unwrap_or_default(), max.copied().unwrap_or_default());
        format!("{} (min {}, max {})", ms(self.median()), ms(min), ms(max))
    }

    fn cpu_per_load(&self) -> Duration {
        self.cpu / self.times.len().max(1) as u32
    }
}

/// `reps` timed zkr loads; with `writer`, a client sets one cached node over and over
/// throughout each load, and the cache must show its last value afterwards.
async fn zkr_load(
    zk: &ZkClient,
    reps: usize,
    nodes: usize,
    writer: Option<&Client>,
) -> anyhow::Result<Loads> {
    let mut times = Vec::with_capacity(reps);
    let cpu0 = process_cpu();
    for rep in 0..reps {
        let writing = writer.map(|client| tokio::spawn(write_throughout(client.clone())));
        let t0 = Instant::now();
        let cache = CuratorCache::builder(zk, LOAD_ROOT).start().await?;
        times.push(t0.elapsed());
        ensure!(cache.snapshot().len() == nodes, "zkr cache has {} nodes", cache.snapshot().len());
        eprintln!("[cache bench] zkr load {rep}: {:?}", times[rep]);
        if let Some(writing) = writing {
            writing.abort();
            let _ = writing.await;
            catch_up(&cache, writer.expect("a writer")).await?;
        }
    }
    // Includes dropping each cache, as Curator's includes closing it.
    Ok(Loads { times, cpu: process_cpu() - cpu0 })
}

/// The node the writer sets.
fn written() -> String {
    format!("{LOAD_ROOT}/p00/c00")
}

/// Sets [`written`] to `w0`, `w1`, ... one write after the other until aborted.
async fn write_throughout(client: Client) -> anyhow::Result<()> {
    for n in 0u64.. {
        client.set_data(&written(), format!("w{n}").as_bytes(), None).await?;
    }
    Ok(())
}

/// After the writer stopped: one more write, and the time until the cache shows it (every
/// event of the load applied before it, in order).
async fn catch_up(cache: &CuratorCache, client: &Client) -> anyhow::Result<()> {
    let (data, stat) = client.get_data(&written()).await?;
    let last = format!("last-after-{}", stat.version);
    let t0 = Instant::now();
    client.set_data(&written(), last.as_bytes(), None).await?;
    let mut snapshots = cache.snapshots();
    loop {
        if snapshots.borrow_and_update().get(&written()).is_some_and(|n| n.data() == last.as_bytes()) {
            break;
        }
        tokio::time::timeout(Duration::from_secs(120), snapshots.changed()).await??;
    }
    eprintln!(
        "[cache bench] writer: {} writes during the load (last {}), the cache showed a write {:?} after it",
        stat.version,
        String::from_utf8_lossy(&data),
        t0.elapsed()
    );
    Ok(())
}

/// `reps` timed Curator loads (in a new JVM, after its own warm-up loads).
async fn curator_load(tool: &CuratorTool, cs: &str, o: &Options, nodes: usize) -> anyhow::Result<Loads> {
    let (reps, warmups) = (o.reps.to_string(), if o.load_only { "1" } else { "3" });
    let mut peer = tool.spawn(&["cache-load", cs, LOAD_ROOT, &reps, warmups])?;
    peer.set_line_timeout(curator_bound(nodes));
    let mut times = Vec::new();
    let line = loop {
        let line = peer.expect_line("").await?;
        if let ["LOAD", _, micros, _] = line.split_whitespace().collect::<Vec<_>>().as_slice() {
            times.push(Duration::from_micros(micros.parse()?));
        } else if line.starts_with("RESULT") {
            break line;
        }
    };
    ensure!(peer.wait().await?.success(), "CuratorTool cache-load failed");
    eprintln!("[cache bench] Curator: {line}");
    let cached = field(&line, "nodes")? as usize;
    ensure!(cached == nodes, "Curator cached {cached} of {nodes} nodes");
    let cpu = Duration::from_micros(field(&line, "cpu_us_per_load")?) * o.reps as u32;
    Ok(Loads { times, cpu })
}

/// How long Curator may take for one line (a load, or a load and five collections): enough
/// for a million nodes (Curator 5.9 took over 75 s a load), so that its time is measured, not
/// cut.
fn curator_bound(nodes: usize) -> Duration {
    Duration::from_secs(300) + Duration::from_millis(nodes as u64)
}

/// What a measured cache keeps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Keeps {
    Everything,
    NoData,
    /// The subtrees of the even-numbered parents (zkr only).
    HalfTheParents,
}

impl Keeps {
    fn label(self) -> &'static str {
        match self {
            Keeps::Everything => "everything",
            Keeps::NoData => "no data (data_not_cached / dataNotCached storage)",
            Keeps::HalfTheParents => "every other parent's subtree (a selector)",
        }
    }
}

fn field(line: &str, key: &str) -> anyhow::Result<u64> {
    let fields = parse_result(line);
    let value = fields.iter().find(|(k, _)| k == key).with_context(|| format!("no {key}= in {line}"))?;
    value.1.parse().with_context(|| format!("{key}= in {line}"))
}

/// A cache of the load tree keeping what `keeps` says.
async fn start_keeping(zk: &ZkClient, keeps: Keeps) -> anyhow::Result<CuratorCache> {
    let builder = CuratorCache::builder(zk, LOAD_ROOT);
    let builder = match keeps {
        Keeps::Everything => builder,
        Keeps::NoData => builder.data_not_cached(),
        Keeps::HalfTheParents => builder.selector(|path: &str| {
            let parent = path.strip_prefix(LOAD_ROOT).and_then(|p| p.split('/').nth(1)).unwrap_or("");
            parent.strip_prefix('p').and_then(|n| n.parse::<u32>().ok()).is_none_or(|n| n % 2 == 0)
        }),
    };
    Ok(builder.start().await?)
}

/// zkr's live bytes per cached node, on a fresh connection.
async fn zkr_memory(cs: &str, keeps: Keeps) -> anyhow::Result<(f64, usize)> {
    let zk = ZkClient::connect(cs).await?;
    drop(start_keeping(&zk, keeps).await?); // connection buffers grow once
    tokio::time::sleep(SETTLE).await;
    let before = live_bytes();
    let cache = start_keeping(&zk, keeps).await?;
    let after = live_bytes();
    let nodes = cache.snapshot().len();
    drop(cache);
    tokio::time::sleep(SETTLE).await;
    eprintln!(
        "[cache bench] zkr live bytes: before {before}, loaded {after}, {} after dropping it",
        live_bytes()
    );
    Ok(((after - before) as f64 / nodes as f64, nodes))
}

async fn curator_memory(
    tool: &CuratorTool,
    cs: &str,
    keeps: Keeps,
    nodes: usize,
) -> anyhow::Result<(f64, usize)> {
    let mut args = vec!["cache-memory", cs, LOAD_ROOT];
    if keeps == Keeps::NoData {
        args.push("no-data");
    }
    let mut peer = tool.spawn(&args)?;
    peer.set_line_timeout(curator_bound(nodes));
    let line = peer.expect_line("RESULT").await?;
    ensure!(peer.wait().await?.success(), "CuratorTool cache-memory failed");
    eprintln!("[cache bench] Curator: {line}");
    let nodes = field(&line, "nodes")? as f64;
    let heap = field(&line, "heap_after")? as f64 - field(&line, "heap_before")? as f64;
    Ok((heap / nodes, nodes as usize))
}

/// The memory table by what the cache keeps (the full caches' figures measured already).
async fn memory_by_what_is_kept(
    setup: &zkr_benches::Setup,
    cs: &str,
    nodes: usize,
    (zkr_full, curator_full): (f64, f64),
) -> anyhow::Result<()> {
    let mut table =
        Table::new(&["the cache keeps", "zkr per kept node", "Curator per kept node", "zkr / Curator"]);
    for keeps in [Keeps::Everything, Keeps::NoData, Keeps::HalfTheParents] {
        let ((zkr, kept), curator) = match keeps {
            Keeps::Everything => ((zkr_full, nodes), Some(curator_full)),
            Keeps::NoData => {
                let curator = curator_memory(&setup.curator, cs, keeps, nodes).await?.0;
                (zkr_memory(cs, keeps).await?, Some(curator))
            }
            Keeps::HalfTheParents => (zkr_memory(cs, keeps).await?, None),
        };
        table.row(vec![
            format!("{} ({kept} nodes)", keeps.label()),
            format!("{zkr:.0} B"),
            curator.map_or("(no selector)".into(), |c| format!("{c:.0} B")),
            curator.map_or("".into(), |c| fmt_ratio(zkr, c)),
        ]);
    }
    zkr_benches::print_report(&format!("Cache memory by what it keeps ({nodes} nodes in the tree)"), &table);
    Ok(())
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let o = Options::parse()?;
    let setup = zkr_benches::Setup::start().await?;
    let cs = setup.connect_string.clone();
    let writer = Client::connect(&cs).await?;
    eprintln!("[cache bench] creating {} x {} nodes", o.parents, o.children);
    let nodes = create_tree(&writer, o.parents, o.children).await?;
    if o.server_load {
        return server_load::run(&setup, &writer, o.caches, nodes).await;
    }

    // The server compiles its hot paths during the first loads: warm it up, then alternate.
    let warmups = if o.load_only { 1 } else { SERVER_WARMUP_LOADS };
    eprintln!("[cache bench] {warmups} untimed loads to warm the server up");
    for _ in 0..warmups {
        drop(CuratorCache::builder(&setup.zk, LOAD_ROOT).start().await?);
    }
    let (mut zkr, mut curator) = (Loads::default(), Loads::default());
    for round in 0..LOAD_ROUNDS {
        for zkr_turn in [round % 2 == 0, round % 2 != 0] {
            if zkr_turn {
                zkr.merge(zkr_load(&setup.zk, o.reps, nodes, o.writer.then_some(&writer)).await?);
            } else {
                curator.merge(curator_load(&setup.curator, &cs, &o, nodes).await?);
            }
        }
    }
    let (zkr_bytes, _) = zkr_memory(&cs, Keeps::Everything).await?;
    let (curator_bytes, _) = curator_memory(&setup.curator, &cs, Keeps::Everything, nodes).await?;

    let mut table =
        Table::new(&["library", "initial load (median)", "client CPU per load", "memory per node"]);
    table.row(vec![
        "zkr CuratorCache".into(),
        zkr.cell(),
        ms(zkr.cpu_per_load()),
        format!("{zkr_bytes:.0} B (live heap)"),
    ]);
    table.row(vec![
        "Curator CuratorCache".into(),
        curator.cell(),
        ms(curator.cpu_per_load()),
        format!("{curator_bytes:.0} B (JVM heap after GC, approx.)"),
    ]);
    zkr_benches::print_report(
        &format!(
            "Cache initial load and memory ({nodes} nodes, {} bytes each; {LOAD_ROUNDS} alternating rounds of {} loads)",
            DATA.len(),
            o.reps
        ),
        &table,
    );
    println!(
        "- load: Curator / zkr = {} (target >= 3x); memory: zkr / Curator = {} (target <= 0.5)\n",
        fmt_ratio(curator.median().as_secs_f64(), zkr.median().as_secs_f64()),
        fmt_ratio(zkr_bytes, curator_bytes)
    );

    memory_by_what_is_kept(&setup, &cs, nodes, (zkr_bytes, curator_bytes)).await?;
    if o.load_only {
        return Ok(());
    }
    propagation::run(&setup, &writer, o.caches, o.writes).await
}
