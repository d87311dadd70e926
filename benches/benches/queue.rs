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
//!   again with `-Djute.maxbuffer` at 8 MiB for the figures, and the report says which;
//! - the server's load (issue 47 item 3; `--load-only` runs it alone): a queue of 10,000 items
//!   (filled beforehand, uncounted) drained by 8 consumers, each on a session of its own (zkr: 8
//!   `ZkClient`s in this process, each a `DistributedQueue` taking and acking until all are
//!   taken; Curator: `CuratorTool queue-load`, 8 `CuratorFramework`s in one JVM, each a
//!   `DistributedQueue` with a consumer). From `mntr`: the most watches the server held at once
//!   (sampled every 20 ms) and the packets it sent and received per item, from after the
//!   sessions connected until the last item was taken (their closes not counted).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use zkr_benches::wide::{curator_default_then_raised, fill, first_then_mean, CURATOR_ITEM};
use zkr_benches::{fmt_rate, fmt_ratio, Deployment, Load, Table};
use zkr_connection::ZkClient;
use zkr_recipes::queues::{DistributedQueue, Utf8};
use zkr_testing::peers::{parse_result, CuratorTool};
use zookeeper_client::{Acls, Client, CreateMode};

const ROUNDS: usize = 2;
const TAKES_AT_DEPTH: usize = 200;
/// The server's load: items in the queue, and the consumers (each its own session).
const LOAD_ITEMS: usize = 10_000;
const LOAD_CONSUMERS: usize = 8;

struct Options {
    items: usize,
    depths: Vec<usize>,
    bound: Duration,
    load_only: bool,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options {
        items: 2000,
        depths: vec![1000, 10_000, 50_000, 100_000],
        bound: Duration::from_secs(60),
        load_only: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {}
            "--quick" => (options.items, options.depths) = (500, vec![1000, 5000]),
            "--load-only" => options.load_only = true,
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

/// A queue of [`LOAD_ITEMS`] at `path`, filled (uncounted).
async fn filled(server: &Deployment, path: &str) -> anyhow::Result<()> {
    let client = Client::connect(&server.connect_string()).await?;
    client.mkdir(path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
    fill(&client, path, "queue-", CURATOR_ITEM, LOAD_ITEMS).await
}

/// zkr's consumers: until all [`LOAD_ITEMS`] are taken and acked.
async fn zkr_load(server: &Deployment, path: &str) -> anyhow::Result<Load> {
    let mut sessions = Vec::new();
    for _ in 0..LOAD_CONSUMERS {
        sessions.push(ZkClient::connect(&server.connect_string()).await?);
    }
    let queues = sessions
        .iter()
        .map(|zk| DistributedQueue::builder(zk, path, Utf8).build())
        .collect::<Result<Vec<_>, _>>()?;
    let taken = Arc::new(AtomicUsize::new(0));
    let (all_taken, _) = tokio::sync::watch::channel(false);
    // Each consumer a task of its own, as separate consumers are.
    let consume = |queue: DistributedQueue<String>| {
        let (taken, all_taken, mut over) = (taken.clone(), all_taken.clone(), all_taken.subscribe());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = async { drop(over.wait_for(|over| *over).await) } => return anyhow::Ok(()),
                    item = queue.take() => {
                        item?.ack().await?;
                        if taken.fetch_add(1, Ordering::SeqCst) + 1 == LOAD_ITEMS {
                            all_taken.send_replace(true);
                        }
                    }
                }
            }
        })
    };
    let load = server
        .load(async {
            for consumer in queues.into_iter().map(consume).collect::<Vec<_>>() {
                consumer.await??;
            }
            Ok(())
        })
        .await?;
    for zk in sessions {
        zk.close().await;
    }
    Ok(load)
}

/// Curator's consumers (`CuratorTool queue-load`).
async fn curator_load(server: &Deployment, tool: &CuratorTool, path: &str) -> anyhow::Result<Load> {
    let (consumers, items) = (LOAD_CONSUMERS.to_string(), LOAD_ITEMS.to_string());
    server.peer_load(tool.spawn(&["queue-load", &server.connect_string(), path, &consumers, &items])?).await
}

/// The server's load of a drain by several consumers, zkr then Curator.
async fn server_load(server: &Deployment, tool: &CuratorTool, curator: &str) -> anyhow::Result<()> {
    let mut table = Table::new(&[
        "library",
        "watches the server held at most",
        "packets sent / item",
        "packets received / item",
        "drain",
    ]);
    for (i, library) in ["zkr", curator].into_iter().enumerate() {
        server.quiet().await?;
        let path = format!("/bench-queue/load-{i}");
        filled(server, &path).await?;
        eprintln!("[queue bench] server load: {LOAD_ITEMS} items, {LOAD_CONSUMERS} consumers, {library}");
        let load = match i {
            0 => zkr_load(server, &path).await?,
            _ => curator_load(server, tool, &path).await?,
        };
        let (sent, received) = load.per_operation(LOAD_ITEMS);
        table.row(vec![library.into(), load.peak_watches.to_string(), sent, received, load.took_ms()]);
    }
    zkr_benches::print_report(
        &format!(
            "The server's load: a queue of {LOAD_ITEMS} items drained by {LOAD_CONSUMERS} consumers, each its own session, on {}",
            server.describe()
        ),
        &table,
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = options()?;
    let setup = zkr_benches::Setup::start().await?;
    let (cs, zk) = (setup.connect_string.clone(), setup.zk.clone());
    let release = setup.server.release().await?;
    let curator = zkr_benches::wide::curator_name(&setup.curator);
    println!("Server: {} ({release}); {curator}\n", setup.server.describe());
    if options.load_only {
        return server_load(&setup.server, &setup.curator, &curator).await;
    }
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
    server_load(&setup.server, &setup.curator, &curator).await?;
    println!("Load average at the end (1, 5, 15 min): {}", zkr_benches::wide::load_average());
    Ok(())
}
