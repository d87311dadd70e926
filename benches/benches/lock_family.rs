//! The rest of the lock family against Apache Curator 5.4, on one ZooKeeper server in one run:
//! uncontended acquire+release cycles of the read side and the write side of
//! `InterProcessReadWriteLock`, `InterProcessSemaphoreV2` (4 leases) and
//! `InterProcessSemaphoreMutex`, one session each.
//!
//! `cargo bench -p zkr-benches --bench lock_family [-- --seconds N | --quick]`
//!
//! Each measurement has a 1 s warm-up and its own path; zkr and Curator alternate over two
//! rounds, which are combined. Curator runs in a peer JVM (`CuratorTool bench-family`).

use std::time::{Duration, Instant};

use anyhow::ensure;
use zkr_benches::{fmt_rate, fmt_ratio, run_loop, Measurement, Span, Table, Window};
use zkr_connection::ZkClient;
use zkr_recipes::locks::{
    InterProcessReadWriteLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2, LockError, MaxLeases,
};
use zkr_testing::peers::CuratorTool;

const ROUNDS: usize = 2;
/// The kinds, as `CuratorTool bench-family` names them, with their table labels.
const KINDS: [(&str, &str); 4] = [
    ("read", "read-write lock, read side"),
    ("write", "read-write lock, write side"),
    ("semaphore", "InterProcessSemaphoreV2 (4 leases)"),
    ("semaphore-mutex", "InterProcessSemaphoreMutex"),
];

async fn curator(
    tool: &CuratorTool,
    cs: &str,
    path: &str,
    kind: &str,
    seconds: f64,
) -> anyhow::Result<Measurement> {
    let mut peer = tool.spawn(&["bench-family", cs, path, kind, &seconds.to_string()])?;
    peer.set_line_timeout(Duration::from_secs_f64(seconds + 60.0));
    let line = peer.expect_line("RESULT").await?;
    let status = peer.wait().await?;
    ensure!(status.success(), "CuratorTool bench-family {kind} exited with {status}");
    Measurement::from_result_line(&line).map_err(anyhow::Error::msg)
}

async fn zkr(zk: &ZkClient, path: &str, kind: &str, seconds: f64) -> anyhow::Result<Measurement> {
    let window = Window::after_warmup(seconds);
    let latencies = match kind {
        "read" | "write" => {
            let lock = InterProcessReadWriteLock::new(zk, path)?;
            run_loop(window, || async {
                let start = Instant::now();
                if kind == "read" {
                    lock.read().await?.release().await?;
                } else {
                    lock.write().await?.release().await?;
                }
                Ok::<_, LockError>(Span::since(start))
            })
            .await?
        }
        "semaphore" => {
            let semaphore = InterProcessSemaphoreV2::new(zk, path, MaxLeases::Fixed(4))?;
            run_loop(window, || async {
                let start = Instant::now();
                semaphore.acquire().await?.release().await?;
                Ok::<_, LockError>(Span::since(start))
            })
            .await?
        }
        _ => {
            let mutex = InterProcessSemaphoreMutex::new(zk, path)?;
            run_loop(window, || async {
                let start = Instant::now();
                mutex.acquire().await?.release().await?;
                Ok::<_, LockError>(Span::since(start))
            })
            .await?
        }
    };
    Ok(latencies.measurement(seconds))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let seconds = zkr_benches::window_seconds(std::env::args().skip(1))?;
    let zkr_benches::Setup { server, connect_string: cs, curator: tool, zk } =
        zkr_benches::Setup::start().await?;
    eprintln!("[lock_family bench] warming up the server");
    zkr(&zk, "/bench-family/warmup", "write", 3.0).await?;

    let mut ours: Vec<Vec<Measurement>> = vec![Vec::new(); KINDS.len()];
    let mut theirs: Vec<Vec<Measurement>> = vec![Vec::new(); KINDS.len()];
    for round in 0..ROUNDS {
        for (i, (kind, _)) in KINDS.iter().enumerate() {
            eprintln!("[lock_family bench] round {} of {ROUNDS}: {kind}", round + 1);
            let p = |who: &str| format!("/bench-family/r{round}/{kind}-{who}");
            theirs[i].push(curator(&tool, &cs, &p("curator"), kind, seconds).await?);
            ours[i].push(zkr(&zk, &p("zkr"), kind, seconds).await?);
        }
    }

    let mut table = Table::new(&[
        "recipe",
        "zkr cycles/s",
        "Curator cycles/s",
        "zkr / Curator",
        "zkr p50",
        "Curator p50",
        "zkr p99",
        "Curator p99",
    ]);
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
    for (i, (_, label)) in KINDS.iter().enumerate() {
        let (z, c) = (Measurement::combine(&ours[i]), Measurement::combine(&theirs[i]));
        table.row(vec![
            label.to_string(),
            fmt_rate(z.per_second()),
            fmt_rate(c.per_second()),
            fmt_ratio(z.per_second(), c.per_second()),
            ms(z.p50),
            ms(c.p50),
            ms(z.p99),
            ms(c.p99),
        ]);
    }
    zkr_benches::print_report(
        &format!("The lock family, uncontended acquire+release ({seconds} s windows, {ROUNDS} rounds)"),
        &table,
    );
    drop(server);
    Ok(())
}
