//! Discovery at size (issue 32, item 3): one service with 10,000 instances (and one with 100, to
//! show what grows with the count), zkr's `ServiceCache` and `ServiceProvider` against Curator's
//! (`ZKR_CURATOR_VERSION`, else Debian's 5.4) on the same server in one run.
//!
//! `cargo bench -p zkr-benches --bench discovery [-- --counts 100,10000 --picks N]`
//!
//! Instances are registered by one zkr `ServiceDiscovery` (Curator's JSON, ephemeral, ids of 36
//! characters, a small payload), kept registered throughout. Then for each library:
//! - **load**: from building the cache until it holds every instance, parsed (zkr: `service_cache`
//!   until `instances()` has them all, its JSON parsed; Curator: `serviceCacheBuilder().build()`,
//!   `start()`, until `getInstances()` has them all);
//! - **memory**: zkr, the bytes allocated and not freed from before the cache was built to after
//!   the load (a counting allocator), the registrar's excluded; Curator, the heap in use after
//!   `System.gc()` before and after. zkr is measured twice on one connection: the first load
//!   also grows the connection's receive buffer to the service's listing (`zookeeper-client`
//!   keeps it; Java's client allocates a buffer per reply, which the collector frees), the
//!   second does not;
//! - **pick**: the mean time of a round-robin provider's `get_instance()` (`getInstance()`) over
//!   `--picks` calls (default 200,000) after as many untimed (Curator: at most 10 s of them,
//!   after at most 5 s untimed).

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use futures::StreamExt as _;
use serde_json::json;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use zkr_benches::{Deployment, Table};
use zkr_connection::ZkClient;
use zkr_recipes::discovery::{ProviderStrategy, ServiceDiscovery, ServiceInstance, ServiceProvider};
use zkr_testing::peers::{parse_result, CuratorTool};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

const BASE: &str = "/bench/discovery";

struct Options {
    counts: Vec<usize>,
    picks: usize,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options { counts: vec![100, 10_000], picks: 200_000 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {}
            "--counts" => {
                let list = args.next().context("--counts A,B")?;
                options.counts = list.split(',').map(str::parse).collect::<Result<_, _>>()?;
            }
            "--picks" => options.picks = args.next().context("--picks N")?.parse()?,
            other => anyhow::bail!("unknown argument {other}; usage: --counts A,B --picks N"),
        }
    }
    Ok(options)
}

/// Waits until the caches dropped have let their instances go (their watch tasks end after the
/// last handle): live bytes at most `bound`.
async fn released(bound: i64) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while live_bytes() > bound {
        ensure!(Instant::now() < deadline, "the dropped cache still holds {} bytes", live_bytes());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

fn live_bytes() -> i64 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

/// One library's figures for one service.
struct Figures {
    load: Duration,
    bytes: i64,
    pick: Duration,
}

async fn register(
    discovery: &ServiceDiscovery<serde_json::Value>,
    name: &str,
    count: usize,
) -> anyhow::Result<()> {
    let instances: Vec<_> = (0..count)
        .map(|i| {
            ServiceInstance::builder(name, json!({"zone": "eu-west-1a", "weight": 1}))
                .id(format!("{i:08x}-0000-4000-8000-{i:012x}"))
                .address("10.0.0.1")
                .port(8000 + (i % 1000) as u16)
                .build()
        })
        .collect();
    let mut registering =
        futures::stream::iter(&instances).map(|i| discovery.register(i)).buffer_unordered(256);
    while let Some(done) = registering.next().await {
        done?;
    }
    Ok(())
}

async fn zkr(zk: &ZkClient, name: &str, count: usize, picks: usize) -> anyhow::Result<Figures> {
    let discovery = ServiceDiscovery::<serde_json::Value>::new(zk, BASE)?;
    let before = live_bytes();
    let start = Instant::now();
    let cache = discovery.service_cache(name).await?;
    let mut changes = cache.changes();
    while cache.len() < count {
        changes.next().await.context("the cache stopped")?;
    }
    let load = start.elapsed();
    let bytes = live_bytes() - before;
    let provider = ServiceProvider::new(cache, ProviderStrategy::RoundRobin);
    let mut picked = 0usize;
    for _ in 0..picks {
        picked += usize::from(provider.get_instance().is_some());
    }
    let picking = Instant::now();
    for _ in 0..picks {
        picked += usize::from(std::hint::black_box(provider.get_instance()).is_some());
    }
    let pick = picking.elapsed() / picks.max(1) as u32;
    ensure!(picked == 2 * picks, "a pick found no instance");
    Ok(Figures { load, bytes, pick })
}

async fn curator(
    tool: &CuratorTool,
    cs: &str,
    name: &str,
    count: usize,
    picks: usize,
) -> anyhow::Result<Figures> {
    let args = ["discovery-bench", cs, BASE, name, &count.to_string(), &picks.to_string()];
    let mut peer = tool.spawn(&args)?;
    peer.set_line_timeout(Duration::from_secs(600));
    let line = peer.expect_line("RESULT").await?;
    ensure!(peer.wait().await?.success(), "CuratorTool discovery-bench failed");
    let fields = parse_result(&line);
    let field = |key: &str| -> anyhow::Result<i64> {
        let value = fields.iter().find(|(k, _)| k == key).with_context(|| format!("no {key} in {line}"))?;
        Ok(value.1.parse()?)
    };
    Ok(Figures {
        load: Duration::from_millis(field("load_ms")? as u64),
        bytes: (field("heap_kb")? - field("heap_before_kb")?) * 1024,
        pick: Duration::from_nanos(field("pick_ns")? as u64),
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = options()?;
    let deployment = Deployment::from_env().await?;
    let cs = deployment.connect_string();
    let tool = CuratorTool::locate().context("Apache Curator (libcurator-discovery-java)")?;
    let registrar = ZkClient::connect(cs.as_str()).await?;
    let discovery = ServiceDiscovery::<serde_json::Value>::new(&registrar, BASE)?;
    let reader = ZkClient::connect(cs.as_str()).await?;
    let mut table = Table::new(&["instances", "library", "load", "memory", "per instance", "pick"]);
    let mut ratios = Vec::new();
    for &count in &options.counts {
        let name = format!("service-{count}");
        eprintln!("[discovery] registering {count} instances of {name}");
        let start = Instant::now();
        register(&discovery, &name, count).await?;
        eprintln!("[discovery]   in {:.1} s", start.elapsed().as_secs_f64());
        eprintln!("[discovery] zkr, {count} instances");
        let baseline = live_bytes();
        let ours = zkr(&reader, &name, count, options.picks).await?;
        released(baseline + ours.bytes / 2).await?;
        // The same again, on a connection that has received the service's listing before: its
        // receive buffer (zookeeper-client keeps the largest frame's room, per connection, not
        // per cache) is no longer grown by the load.
        eprintln!("[discovery] zkr again, {count} instances");
        let again = zkr(&reader, &name, count, options.picks).await?;
        eprintln!("[discovery] Curator, {count} instances");
        let theirs = curator(&tool, &cs, &name, count, options.picks).await?;
        let curator = match tool.release() {
            "debian" => "Curator 5.4 (Debian)".to_string(),
            release => format!("Curator {release}"),
        };
        let rows = [("zkr", &ours), ("zkr, a used connection", &again), (curator.as_str(), &theirs)];
        for (label, f) in rows {
            table.row(vec![
                count.to_string(),
                label.to_string(),
                format!("{:.1} ms", f.load.as_secs_f64() * 1000.0),
                format!("{:.1} KiB", f.bytes as f64 / 1024.0),
                format!("{:.0} B", f.bytes as f64 / count as f64),
                format!("{} ns", f.pick.as_nanos()),
            ]);
        }
        ratios.push(format!(
            "RATIOS {count} instances, Curator / zkr: load {:.1}x, memory {:.1}x, pick {:.1}x",
            theirs.load.as_secs_f64() / ours.load.as_secs_f64(),
            theirs.bytes as f64 / ours.bytes as f64,
            theirs.pick.as_secs_f64() / ours.pick.as_secs_f64().max(1e-9),
        ));
    }
    zkr_benches::print_report(&format!("Discovery at size: {}", deployment.describe()), &table);
    for line in ratios {
        println!("{line}");
    }
    Ok(())
}
