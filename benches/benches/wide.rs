//! Wide directories (issue 32 item 2): one parent with 100,000 children, and zkr's cache, children
//! view, lock and queue on it against Apache Curator's, on the same ZooKeeper server in one run.
//!
//! `cargo bench -p zkr-benches --bench wide [-- --children N | --bound S | --skip-curator |
//! --creates N | --takes N]`
//!
//! The parent is filled with `--children` (default 100,000) queue items in Curator's framing
//! (`queue-0000000000`, 14 bytes of data each; pipelined raw creates, 500 in flight, timed but
//! not compared): a listing of it is a 2 MB reply. Then, in this order, each library on the same
//! parent:
//!
//! - a cache of the parent (zkr: `CuratorCache`, tree mode; Curator: `CuratorCache`): from the
//!   start to initialized, the memory it holds (zkr: heap bytes live, counted by `stats_alloc`,
//!   and RSS growth; Curator: the JVM's RSS growth), then `--creates` (default 100) children
//!   created one at a time, each timed until the cache holds it (then deleted);
//! - the children view (zkr: `CuratorCache` in `CacheMode::Children`; Curator: `PathChildrenCache`
//!   with data, `POST_INITIALIZED_EVENT`): the same;
//! - a lock whose directory is the parent: 100,000 children that are not lock nodes, so every
//!   listing the lock makes is 2 MB. The first acquire + release, then the mean of 20 more;
//! - the queue: a new consumer's first `take()` + `ack()` (Curator: its `start()` until its
//!   first item), then the mean of the next `--takes` (default 200; zkr first, then Curator,
//!   so Curator's queue holds that many and one fewer).
//!
//! Curator runs first with the Java client's default `jute.maxbuffer` (1 MiB), bounded by
//! `--bound` (default 60 s): the listing is over it, and the report shows what it did (its
//! connection losses, counted from `STATE SUSPENDED` lines); then with `-Djute.maxbuffer` at
//! 8 MiB for the figures.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use zkr_benches::wide::{curator_default_then_raised, fill, first_then_mean, CuratorRun, CURATOR_ITEM};
use zkr_benches::{fmt_mib, fmt_ratio, Table};
use zkr_connection::ZkClient;
use zkr_recipes::cache::{CacheMode, CuratorCache};
use zkr_recipes::locks::InterProcessMutex;
use zkr_recipes::queues::{DistributedQueue, Utf8};
use zkr_testing::proc_status_kib;
use zookeeper_client::{Acls, Client, CreateMode};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

const DIR: &str = "/bench-wide/dir";
const CYCLES: usize = 20;

struct Options {
    children: usize,
    bound: Duration,
    skip_curator: bool,
    creates: usize,
    takes: usize,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options {
        children: 100_000,
        bound: Duration::from_secs(60),
        skip_curator: false,
        creates: 100,
        takes: 200,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {}
            "--children" => options.children = args.next().context("--children N")?.parse()?,
            "--bound" => options.bound = Duration::from_secs(args.next().context("--bound S")?.parse()?),
            "--skip-curator" => options.skip_curator = true,
            "--creates" => options.creates = args.next().context("--creates N")?.parse::<usize>()?.max(1),
            "--takes" => options.takes = args.next().context("--takes N")?.parse::<usize>()?.max(1),
            other => {
                anyhow::bail!("unknown argument {other}; usage: --children N | --bound S | --skip-curator | --creates N | --takes N")
            }
        }
    }
    Ok(options)
}

fn live_bytes() -> i64 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One row: what, zkr's figure, Curator's, Curator / zkr, and the default-limit outcome.
fn row(table: &mut Table, what: &str, zkr: f64, curator: Option<f64>, unit: &str, default: &str) {
    let fmt = |v: f64| if v >= 100.0 { format!("{v:.0} {unit}") } else { format!("{v:.2} {unit}") };
    table.row(vec![
        what.to_owned(),
        fmt(zkr),
        curator.map_or_else(|| "none".to_owned(), fmt),
        curator.map_or_else(|| "n/a".to_owned(), |c| fmt_ratio(c, zkr)),
        default.to_owned(),
    ]);
}

/// zkr's cache of `DIR` in `mode`: (start to initialized, nodes, heap bytes held, RSS growth in
/// kB, mean create-to-seen).
async fn zkr_cache(
    zk: &ZkClient,
    client: &Client,
    mode: CacheMode,
    creates: usize,
) -> anyhow::Result<(Duration, usize, i64, i64, Duration)> {
    let (heap0, rss0) = (live_bytes(), proc_status_kib("self", "VmRSS").unwrap_or(0) as i64);
    let start = Instant::now();
    let cache = CuratorCache::builder(zk, DIR).mode(mode).start().await?;
    let init = start.elapsed();
    let nodes = cache.snapshot().len();
    let (heap, rss) = (live_bytes() - heap0, proc_status_kib("self", "VmRSS").unwrap_or(0) as i64 - rss0);
    let mut snapshots = cache.snapshots();
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let mut seen = Duration::ZERO;
    for i in 0..creates {
        let child = format!("{DIR}/zkr-new-{i}");
        let t0 = Instant::now();
        client.create(&child, &[], &options).await?;
        snapshots.wait_for(|s| s.get(&child).is_some()).await?;
        seen += t0.elapsed();
        client.delete(&child, None).await?;
    }
    Ok((init, nodes, heap, rss, seen / creates as u32))
}

/// zkr's lock on `DIR`: (the first acquire + release, the mean of `CYCLES` more).
async fn zkr_lock(zk: &ZkClient) -> anyhow::Result<(Duration, Duration)> {
    let mutex = &InterProcessMutex::new(zk, DIR)?;
    first_then_mean(CYCLES, || async move { Ok(mutex.acquire().await?.release().await?) }).await
}

/// zkr's queue consumer on `DIR`: (first take + ack, the mean of `takes` more).
async fn zkr_queue(zk: &ZkClient, takes: usize) -> anyhow::Result<(Duration, Duration)> {
    let consumer = &DistributedQueue::builder(zk, DIR, Utf8).build()?;
    first_then_mean(takes, || async move { Ok(consumer.take().await?.ack().await?) }).await
}

/// Curator's run of `args` (default limit, then raised), or nothing with `--skip-curator`.
async fn curator(
    setup: &zkr_benches::Setup,
    options: &Options,
    args: &[&str],
    nodes: Option<usize>,
) -> anyhow::Result<(String, Option<CuratorRun>)> {
    if options.skip_curator {
        return Ok(("skipped".to_owned(), None));
    }
    let (runs, figures) = curator_default_then_raised(&setup.curator, args, options.bound, nodes).await?;
    let outcomes = CuratorRun::outcomes(&runs);
    eprintln!("[bench] Curator {}: {outcomes}", args[0]);
    Ok((outcomes, figures))
}

fn field(run: &Option<CuratorRun>, key: &str) -> Option<f64> {
    run.as_ref().and_then(|r| r.field(key).ok())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = options()?;
    let setup = zkr_benches::Setup::start().await?;
    let (cs, zk) = (setup.connect_string.clone(), setup.zk.clone());
    let release = setup.server.release().await?;
    let client = Client::connect(&cs).await?;
    zkr_benches::ensure_path(&client, DIR).await?;
    let start = Instant::now();
    fill(&client, DIR, "queue-", CURATOR_ITEM, options.children).await?;
    let filled = start.elapsed();
    eprintln!("[bench] {} children in {:.1} s", options.children, filled.as_secs_f64());

    let start = Instant::now();
    let (names, _) = zk.get_children(DIR).await?.context("the parent")?;
    let listed = start.elapsed();
    let reply: usize = names.iter().map(|n| n.len() + 4).sum();

    let curator_name = zkr_benches::wide::curator_name(&setup.curator);
    let mut table = Table::new(&[
        "what",
        "zkr",
        &curator_name,
        "Curator / zkr",
        "Curator's runs (figures from the last)",
    ]);
    for (mode, name, java_mode) in [
        (CacheMode::Tree { max_depth: None }, "cache", "tree"),
        (CacheMode::Children, "children view", "children"),
    ] {
        let (init, nodes, heap, rss, seen) = zkr_cache(&zk, &client, mode, options.creates).await?;
        eprintln!("[bench] zkr {name}: {nodes} nodes in {:.0} ms", ms(init));
        let creates = options.creates.to_string();
        let (default, run) =
            curator(&setup, &options, &["wide-cache", &cs, DIR, java_mode, &creates], Some(options.children))
                .await?;
        let c_rss = field(&run, "rss_kb").zip(field(&run, "rss_before_kb")).map(|(a, b)| (a - b) / 1024.0);
        row(
            &mut table,
            &format!("{name}: start to initialized"),
            ms(init),
            field(&run, "init_ms"),
            "ms",
            &default,
        );
        let c_nodes = field(&run, "nodes").map_or("none".to_owned(), |n| format!("{n:.0}"));
        table.row(vec![
            format!("{name}: nodes held"),
            nodes.to_string(),
            c_nodes,
            String::new(),
            String::new(),
        ]);
        row(&mut table, &format!("{name}: RSS growth"), rss as f64 / 1024.0, c_rss, "MiB", "");
        table.row(vec![
            format!("{name}: heap held (zkr, stats_alloc)"),
            fmt_mib((heap.max(0) / 1024) as u64),
            String::new(),
            String::new(),
            String::new(),
        ]);
        row(
            &mut table,
            &format!("{name}: a new child seen (mean of {})", options.creates),
            ms(seen),
            field(&run, "seen_ms"),
            "ms",
            "",
        );
    }

    let (first, cycle) = zkr_lock(&zk).await?;
    let cycles = CYCLES.to_string();
    let (default, run) = curator(&setup, &options, &["wide-lock", &cs, DIR, &cycles], None).await?;
    row(&mut table, "lock: first acquire + release", ms(first), field(&run, "first_ms"), "ms", &default);
    row(
        &mut table,
        &format!("lock: acquire + release (mean of {CYCLES} more)"),
        ms(cycle),
        field(&run, "mean_ms"),
        "ms",
        "",
    );

    let (first, take) = zkr_queue(&zk, options.takes).await?;
    let takes = options.takes.to_string();
    let (default, run) = curator(&setup, &options, &["queue-bench-depth", &cs, DIR, &takes], None).await?;
    row(&mut table, "queue: consumer start (first item)", ms(first), field(&run, "start_ms"), "ms", &default);
    row(
        &mut table,
        &format!("queue: take + ack (mean of {} more)", options.takes),
        ms(take),
        field(&run, "take_ms"),
        "ms",
        "",
    );

    let title = format!("Wide directories: {} children under one parent", options.children);
    zkr_benches::print_report(&title, &table);
    println!("Server: {} ({release}); {curator_name}", setup.server.describe());
    println!(
        "Filled in {:.1} s; one getChildren through zkr: {:.0} ms, {} names, a {:.1} MB reply",
        filled.as_secs_f64(),
        ms(listed),
        names.len(),
        reply as f64 / 1e6
    );
    println!("Load average at the end (1, 5, 15 min): {}", zkr_benches::wide::load_average());
    Ok(())
}
