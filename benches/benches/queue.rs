//! Queues (issue 19): zkr's `DistributedQueue` against Apache Curator's on the same ZooKeeper
//! server in one run, and how a take slows down as the queue grows.
//!
//! `cargo bench -p zkr-benches --bench queue [-- --quick | --items N | --depths A,B,... | --bound S]`
//!
//! - throughput, one producer then one consumer: `--items` items (default 2000, `--quick` 500;
//!   each a 10-byte string) put one after the other, timed; then one consumer takes and acks
//!   them all, timed from its start (zkr: `take()` + `ack()`; Curator: `queue-bench`, a
//!   `DistributedQueue` with `putInBackground(false)` and a consumer callback). zkr and Curator
//!   alternate over 2 rounds on fresh paths; the better round of each is reported;
//! - depth: for each of `--depths` (default 1000,10000,50000,100000; `--quick` 1000,5000) a
//!   queue filled to that many items (pipelined raw creates, untimed), then the time a new
//!   consumer needs to start (its cache's first read) and the mean time of 200 `take()` +
//!   `ack()` calls; the same for Curator on a queue of its own filled alike
//!   (`queue-bench-depth`: from the consumer's `start()` to its first item, then the mean time
//!   per item over the next 200). Curator runs with the Java client's default `jute.maxbuffer`
//!   (1 MiB) first, bounded by `--bound S` (default 60 s); past about 52,000 items its listing
//!   is over that limit and it loses its connection again and again (CURATOR-690), so it runs
//!   again with `-Djute.maxbuffer` at 8 MiB for the figures, and the report says which.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use zkr_benches::wide::{curator_default_then_raised, fill, first_then_mean, CURATOR_ITEM};
use zkr_benches::{fmt_rate, fmt_ratio, Table};
use zkr_connection::ZkClient;
use zkr_recipes::queues::{DistributedQueue, Utf8};
use zkr_testing::peers::{parse_result, CuratorTool};
use zookeeper_client::{Acls, Client, CreateMode};

const ROUNDS: usize = 2;
const TAKES_AT_DEPTH: usize = 200;

struct Options {
    items: usize,
    depths: Vec<usize>,
    bound: Duration,
}

fn options() -> anyhow::Result<Options> {
    let mut options =
        Options { items: 2000, depths: vec![1000, 10_000, 50_000, 100_000], bound: Duration::from_secs(60) };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {}
            "--quick" => (options.items, options.depths) = (500, vec![1000, 5000]),
            "--bound" => options.bound = Duration::from_secs(args.next().context("--bound S")?.parse()?),
            "--items" => options.items = args.next().context("--items N")?.parse()?,
            "--depths" => {
                let list = args.next().context("--depths A,B")?;
                options.depths = list.split(',').map(str::parse).collect::<Result<_, _>>()?;
            }
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    Ok(options)
}

/// (puts per second, takes per second) for zkr.
async fn zkr_round(zk: &ZkClient, path: &str, items: usize) -> anyhow::Result<(f64, f64)> {
    let producer = DistributedQueue::builder(zk, path, Utf8).build()?;
    let start = Instant::now();
    for i in 0..items {
        producer.put(&format!("item-{i:05}")).await?;
    }
    let put = items as f64 / start.elapsed().as_secs_f64();
    let consumer = DistributedQueue::builder(zk, path, Utf8).build()?;
    let start = Instant::now();
    for _ in 0..items {
        consumer.take().await?.ack().await?;
    }
    let take = items as f64 / start.elapsed().as_secs_f64();
    Ok((put, take))
}

async fn curator_round(tool: &CuratorTool, cs: &str, path: &str, items: usize) -> anyhow::Result<(f64, f64)> {
    let mut peer = tool.spawn(&["queue-bench", cs, path, &items.to_string()])?;
    peer.set_line_timeout(Duration::from_secs(600));
    let line = peer.expect_line("RESULT").await?;
    ensure!(peer.wait().await?.success(), "CuratorTool queue-bench failed");
    let fields = parse_result(&line);
    let field = |k: &str| -> anyhow::Result<f64> {
        Ok(fields.iter().find(|(key, _)| key == k).context("a RESULT field")?.1.parse()?)
    };
    Ok((field("put_per_s")?, field("take_per_s")?))
}

/// (consumer start, mean take + ack) at `depth` items.
async fn at_depth(
    zk: &ZkClient,
    client: &Client,
    path: &str,
    depth: usize,
) -> anyhow::Result<(Duration, Duration)> {
    client.create(path, &[], &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
    fill(client, path, "queue-", CURATOR_ITEM, depth).await?;
    // The first take starts the consumer's cache: its first read of every item.
    let consumer = &DistributedQueue::builder(zk, path, Utf8).build()?;
    first_then_mean(TAKES_AT_DEPTH, || async move { Ok(consumer.take().await?.ack().await?) }).await
}

/// Curator's consumer at `depth` items: (what the default `jute.maxbuffer` did, and start and
/// mean time per item from the run that gave figures, with its limit).
async fn curator_at_depth(
    tool: &CuratorTool,
    cs: &str,
    client: &Client,
    path: &str,
    depth: usize,
    bound: Duration,
) -> anyhow::Result<(String, Option<(f64, f64, String)>)> {
    client.create(path, &[], &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
    fill(client, path, "queue-", CURATOR_ITEM, depth).await?;
    let takes = TAKES_AT_DEPTH.to_string();
    let (runs, figures) =
        curator_default_then_raised(tool, &["queue-bench-depth", cs, path, &takes], bound, None).await?;
    let figures = match figures {
        Some(run) => {
            Some((run.field("start_ms")?, run.field("take_ms")?, zkr_benches::wide::fmt_bytes(run.jute)))
        }
        None => None,
    };
    Ok((runs[0].outcome(), figures))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = options()?;
    let setup = zkr_benches::Setup::start().await?;
    let (cs, zk) = (setup.connect_string.clone(), setup.zk.clone());
    let release = setup.server.release().await?;
    let curator = zkr_benches::wide::curator_name(&setup.curator);
    println!("Server: {} ({release}); {curator}\n", setup.server.describe());
    let (mut zkr_best, mut curator_best) = ((0f64, 0f64), (0f64, 0f64));
    for round in 0..ROUNDS {
        let z = zkr_round(&zk, &format!("/bench-queue/zkr-{round}"), options.items).await?;
        let c = curator_round(&setup.curator, &cs, &format!("/bench-queue/curator-{round}"), options.items)
            .await?;
        zkr_best = (zkr_best.0.max(z.0), zkr_best.1.max(z.1));
        curator_best = (curator_best.0.max(c.0), curator_best.1.max(c.1));
    }
    let mut table = Table::new(&["one producer, then one consumer", "zkr", &curator, "zkr / Curator"]);
    table.row(vec![
        "puts/s".into(),
        fmt_rate(zkr_best.0),
        fmt_rate(curator_best.0),
        fmt_ratio(zkr_best.0, curator_best.0),
    ]);
    table.row(vec![
        "takes/s".into(),
        fmt_rate(zkr_best.1),
        fmt_rate(curator_best.1),
        fmt_ratio(zkr_best.1, curator_best.1),
    ]);
    zkr_benches::print_report(&format!("Queues: {} items", options.items), &table);

    let client = Client::connect(&cs).await?;
    let mut depths = Table::new(&[
        "items in the queue",
        "zkr consumer start",
        "zkr take + ack (mean of 200)",
        "Curator consumer start",
        "Curator per item (mean of 200)",
        "Curator / zkr per item",
        "Curator's jute.maxbuffer for these figures",
        "Curator with the default jute.maxbuffer",
    ]);
    for depth in &options.depths {
        let (started, take) = at_depth(&zk, &client, &format!("/bench-queue/depth-{depth}"), *depth).await?;
        let curator_path = format!("/bench-queue/curator-depth-{depth}");
        let (default, figures) =
            curator_at_depth(&setup.curator, &cs, &client, &curator_path, *depth, options.bound).await?;
        let take_ms = take.as_secs_f64() * 1e3;
        let (c_start, c_take, c_limit) = match figures {
            Some((start, take, limit)) => (format!("{start:.0} ms"), format!("{take:.2} ms"), (take, limit)),
            None => ("none".to_owned(), "none".to_owned(), (f64::NAN, "none gave figures".to_owned())),
        };
        depths.row(vec![
            depth.to_string(),
            format!("{:.0} ms", started.as_secs_f64() * 1e3),
            format!("{take_ms:.2} ms"),
            c_start,
            c_take,
            fmt_ratio(c_limit.0, take_ms),
            c_limit.1,
            default,
        ]);
    }
    println!("### Take at depth\n\n{}", depths.render());
    println!("Load average at the end (1, 5, 15 min): {}", zkr_benches::wide::load_average());
    Ok(())
}
