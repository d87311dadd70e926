//! ID generators against the seeds' method (one ephemeral-sequential create per ID) as Apache
//! Curator users write it, on the same ZooKeeper server in one run.
//!
//! `cargo bench -p zkr-benches --bench ids [-- --seconds N | --quick]`
//!
//! Measurements (each after a 1 s warm-up):
//! - `curator create/ID`: `CuratorTool bench-ids`, one `create().withMode(EPHEMERAL_SEQUENTIAL)`
//!   per ID, one thread;
//! - `zookeeper-client create/ID`: the same in Rust with the raw client;
//! - `zkr sequential`: [`SequentialIdGenerator`] with one caller, 64 concurrent callers, and
//!   `next_batch(100)`;
//! - `zkr segment` and `zkr snowflake`: one task calling `next()` in a loop; the rate is
//!   measured without per-ID timing, the latency percentiles in a second, timed pass.
//!
//! The server-bound measurements run in two alternating rounds and are combined.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::ensure;
use zkr_benches::{fmt_rate, fmt_ratio, Latencies, Measurement, Span, Table, Window};
use zkr_connection::ZkClient;
use zkr_recipes::id::{IdGenerator, SegmentIdGenerator, SequentialIdGenerator, SnowflakeIdGenerator};
use zkr_testing::peers::CuratorTool;
use zookeeper_client::{Client, CreateMode};

const ROUNDS: usize = 2;

async fn curator(tool: &CuratorTool, cs: &str, path: &str, seconds: f64) -> anyhow::Result<Measurement> {
    let mut peer = tool.spawn(&["bench-ids", cs, path, &seconds.to_string()])?;
    peer.set_line_timeout(Duration::from_secs_f64(seconds + 60.0));
    let line = peer.expect_line("RESULT").await?;
    let status = peer.wait().await?;
    ensure!(status.success(), "CuratorTool bench-ids exited with {status}");
    Measurement::from_result_line(&line).map_err(anyhow::Error::msg)
}

async fn raw_create(cs: &str, path: &str, seconds: f64) -> anyhow::Result<Measurement> {
    let client = Client::connect(cs).await?;
    client.mkdir(path, &CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all())).await.ok();
    let prefix = format!("{path}/id-");
    let options = CreateMode::EphemeralSequential.with_acls(zookeeper_client::Acls::anyone_all());
    let window = Window::after_warmup(seconds);
    let mut latencies = Latencies::default();
    let mut last = -1i64;
    while !window.is_over() {
        let start = Instant::now();
        let (_, sequence) = client.create(&prefix, &[], &options).await?;
        let span = Span::since(start);
        ensure!(sequence.into_i64() > last, "sequence went backwards");
        last = sequence.into_i64();
        if window.counts(span) {
            latencies.push(span.duration());
        }
    }
    Ok(latencies.measurement(seconds))
}

/// `tasks` tasks calling `next_batch(batch)` until the window ends; counts IDs, times calls.
async fn zkr_sequential(
    zk: &ZkClient,
    path: &str,
    tasks: usize,
    batch: usize,
    seconds: f64,
) -> anyhow::Result<Measurement> {
    let ids = Arc::new(SequentialIdGenerator::new(zk, path)?);
    let window = Window::after_warmup(seconds);
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let ids = ids.clone();
        handles.push(tokio::spawn(async move {
            let mut latencies = Latencies::default();
            let mut count = 0u64;
            while !window.is_over() {
                let start = Instant::now();
                let got = if batch == 1 { vec![ids.next().await?] } else { ids.next_batch(batch).await? };
                let span = Span::since(start);
                if window.counts(span) {
                    latencies.push(span.duration());
                    count += got.len() as u64;
                }
            }
            Ok::<_, anyhow::Error>((latencies, count))
        }));
    }
    let mut latencies = Latencies::default();
    let mut count = 0;
    for handle in handles {
        let (l, c) = handle.await??;
        latencies.extend(l);
        count += c;
    }
    let mut m = latencies.measurement(seconds);
    m.ops = count;
    Ok(m)
}

/// One task calling `next()`: the rate untimed, then the latency percentiles over a timed pass
/// of the same length.
async fn in_memory(generator: &dyn IdGenerator, seconds: f64) -> anyhow::Result<Measurement> {
    let window = Window::after_warmup(seconds);
    let mut count = 0u64;
    let mut last = 0;
    // The clock is read once per 256 IDs so that it does not dominate.
    loop {
        for _ in 0..256 {
            let id = generator.next().await?;
            ensure!(id > last, "IDs went backwards: {last} then {id}");
            last = id;
        }
        let now = Instant::now();
        if now >= window.end {
            break;
        }
        if now >= window.start {
            count += 256;
        }
    }
    let timed = Window::after_warmup(seconds);
    let mut latencies = Vec::new();
    while !timed.is_over() {
        for _ in 0..256 {
            let start = Instant::now();
            generator.next().await?;
            latencies.push(start.elapsed().as_nanos() as u32);
        }
    }
    latencies.sort_unstable();
    let pick = |p: f64| {
        Duration::from_nanos(u64::from(
            latencies[((p * latencies.len() as f64) as usize).min(latencies.len() - 1)],
        ))
    };
    Ok(Measurement { ops: count, seconds, p50: pick(0.50), p99: pick(0.99) })
}

/// Milliseconds, or microseconds below one.
fn fmt_latency(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.3} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.3} ms", d.as_secs_f64() * 1e3)
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let seconds = zkr_benches::window_seconds(std::env::args().skip(1))?;
    let zkr_benches::Setup { server, connect_string: cs, curator: tool, zk } =
        zkr_benches::Setup::start().await?;
    eprintln!("[ids bench] warming up the server for 5 s");
    raw_create(&cs, "/bench-ids/warmup", 4.0).await?;

    type Row = (&'static str, Vec<Measurement>);
    let mut rows: Vec<Row> = vec![
        ("curator: create per ID (seeds' method)", vec![]),
        ("zookeeper-client: create per ID", vec![]),
        ("zkr sequential: 1 caller", vec![]),
        ("zkr sequential: 64 callers", vec![]),
        ("zkr sequential: next_batch(100)", vec![]),
    ];
    for round in 0..ROUNDS {
        eprintln!("[ids bench] round {} of {ROUNDS}", round + 1);
        let p = |name: &str| format!("/bench-ids/r{round}/{name}");
        rows[0].1.push(curator(&tool, &cs, &p("curator"), seconds).await?);
        rows[1].1.push(raw_create(&cs, &p("raw"), seconds).await?);
        rows[2].1.push(zkr_sequential(&zk, &p("seq1"), 1, 1, seconds).await?);
        rows[3].1.push(zkr_sequential(&zk, &p("seq64"), 64, 1, seconds).await?);
        rows[4].1.push(zkr_sequential(&zk, &p("seqbatch"), 1, 100, seconds).await?);
    }
    let mut results: Vec<(&str, Measurement)> =
        rows.iter().map(|(n, m)| (*n, Measurement::combine(m))).collect();

    eprintln!("[ids bench] segment and snowflake");
    let segment = SegmentIdGenerator::new(&zk, "/bench-ids/segment")?;
    segment.next().await?;
    results.push(("zkr segment: 1 task, next()", in_memory(&segment, seconds).await?));
    let snowflake = SnowflakeIdGenerator::builder(&zk, "/bench-ids/snowflake").start().await?;
    results.push(("zkr snowflake: 1 task, next()", in_memory(&snowflake, seconds).await?));
    snowflake.close().await;

    let baseline = results[0].1.per_second();
    let mut table = Table::new(&["generator", "IDs/s", "vs Curator", "p50", "p99"]);
    for (name, m) in &results {
        table.row(vec![
            name.to_string(),
            fmt_rate(m.per_second()),
            fmt_ratio(m.per_second(), baseline),
            fmt_latency(m.p50),
            fmt_latency(m.p99),
        ]);
    }
    zkr_benches::print_report(
        &format!(
            "ID generators ({seconds} s windows, {ROUNDS} rounds for the server-bound rows, {})",
            server.describe()
        ),
        &table,
    );
    println!(
        "p50/p99 are per call: per ID, except `next_batch(100)` (per batch of 100); segment and \
         snowflake latencies come from a separate timed pass."
    );
    drop(server);
    Ok(())
}
