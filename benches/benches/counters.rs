//! Counters: zkr's `DistributedAtomicLong` against Apache Curator's, on the same ZooKeeper
//! server in one run.
//!
//! `cargo bench -p zkr-benches --bench counters [-- --seconds N | --quick]`
//!
//! For 1 and 8 sessions (each session its own client, one task or thread per session, all on
//! one counter), `increment()` in a loop after a 1 s warm-up; both libraries retry lost races
//! under `RetryNTimes(1000, 1 ms)`. Rates count increments that succeeded; the latency is per
//! increment, lost races included. Two alternating rounds, combined. The server's packets per
//! increment come from its `mntr` counters around each measurement.

use std::time::{Duration, Instant};

use anyhow::ensure;
use zkr_benches::{fmt_rate, fmt_ratio, Deployment, Latencies, Measurement, Span, Table, Window};
use zkr_connection::retry::RetryNTimes;
use zkr_connection::ZkClient;
use zkr_recipes::counters::DistributedAtomicLong;
use zkr_testing::peers::CuratorTool;

const ROUNDS: usize = 2;

async fn curator(
    tool: &CuratorTool,
    cs: &str,
    path: &str,
    sessions: usize,
    seconds: f64,
) -> anyhow::Result<Measurement> {
    let mut peer = tool.spawn(&["bench-counter", cs, path, &sessions.to_string(), &seconds.to_string()])?;
    peer.set_line_timeout(Duration::from_secs_f64(seconds + 60.0));
    let line = peer.expect_line("RESULT").await?;
    let status = peer.wait().await?;
    ensure!(status.success(), "CuratorTool bench-counter exited with {status}");
    Measurement::from_result_line(&line).map_err(anyhow::Error::msg)
}

async fn zkr(cs: &str, path: &str, sessions: usize, seconds: f64) -> anyhow::Result<Measurement> {
    let window = Window::after_warmup(seconds);
    let mut tasks = Vec::new();
    for _ in 0..sessions {
        let zk = ZkClient::connect(cs).await?;
        let counter =
            DistributedAtomicLong::new(&zk, path, RetryNTimes::new(1000, Duration::from_millis(1)))?;
        tasks.push(tokio::spawn(async move {
            let mut latencies = Latencies::default();
            while !window.is_over() {
                let start = Instant::now();
                let outcome = counter.increment().await?;
                let span = Span::since(start);
                if outcome.succeeded && window.counts(span) {
                    latencies.push(span.duration());
                }
            }
            zk.close().await;
            Ok::<_, anyhow::Error>(latencies)
        }));
    }
    let mut latencies = Latencies::default();
    for task in tasks {
        latencies.extend(task.await??);
    }
    Ok(latencies.measurement(seconds))
}

/// Runs `measure`, and the server's packets received per counted increment meanwhile
/// (warm-up included in the packets, so a slight overestimate for both).
async fn with_packets<F>(server: &Deployment, measure: F) -> anyhow::Result<(Measurement, f64)>
where
    F: std::future::Future<Output = anyhow::Result<Measurement>>,
{
    let before = server.packets_received().await?;
    let m = measure.await?;
    let after = server.packets_received().await?;
    let per = (after.saturating_sub(before)) as f64 / m.ops.max(1) as f64;
    Ok((m, per))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let seconds = zkr_benches::window_seconds(std::env::args().skip(1))?;
    let zkr_benches::Setup { server, connect_string: cs, curator: tool, zk } =
        zkr_benches::Setup::start().await?;
    zk.close().await;
    let mut table =
        Table::new(&["scenario", "increments/s", "vs Curator", "p50", "p99", "packets/increment"]);
    for sessions in [1, 8] {
        let mut runs: [(Vec<Measurement>, Vec<f64>); 2] = Default::default();
        for round in 0..ROUNDS {
            eprintln!("[counters bench] {sessions} session(s), round {} of {ROUNDS}", round + 1);
            let path = |lib: &str| format!("/bench-counters/s{sessions}-r{round}-{lib}");
            let (m, p) =
                with_packets(&server, curator(&tool, &cs, &path("curator"), sessions, seconds)).await?;
            runs[0].0.push(m);
            runs[0].1.push(p);
            let (m, p) = with_packets(&server, zkr(&cs, &path("zkr"), sessions, seconds)).await?;
            runs[1].0.push(m);
            runs[1].1.push(p);
        }
        let curator = Measurement::combine(&runs[0].0);
        for (name, (ms, packets)) in ["Curator", "zkr"].iter().zip(&runs) {
            let m = Measurement::combine(ms);
            table.row(vec![
                format!("{name}: {sessions} session(s)"),
                fmt_rate(m.per_second()),
                fmt_ratio(m.per_second(), curator.per_second()),
                zkr_benches::fmt_ms(m.p50),
                zkr_benches::fmt_ms(m.p99),
                format!("{:.2}", packets.iter().sum::<f64>() / packets.len() as f64),
            ]);
        }
    }
    zkr_benches::print_report(
        &format!("Counters: DistributedAtomicLong ({seconds} s windows, {ROUNDS} rounds)"),
        &table,
    );
    drop(server);
    Ok(())
}
