//! The rest of the lock family against Apache Curator 5.4, on one ZooKeeper server in one run:
//! uncontended acquire+release cycles of the read side and the write side of
//! `InterProcessReadWriteLock`, `InterProcessSemaphoreV2` (4 leases) and
//! `InterProcessSemaphoreMutex`, one session each.
//!
//! `cargo bench -p zkr-benches --bench lock_family [-- --seconds N | --quick]`
//!
//! Each measurement has a 1 s warm-up and its own path; zkr and Curator alternate over two
//! rounds, which are combined. Curator runs in a peer JVM (`CuratorTool bench-family`).
//!
//! `--server-load` runs, instead, the lock family's rows of the server's load (issue 47 item
//! 3): 1,000 waiters at once on one `InterProcessMutex` in one process (one session, then 8
//! sessions, waiter i on session i mod 8) and on one `InterProcessSemaphoreV2` of 10 leases
//! (one session); each waiter acquires once and releases. zkr's waiters are tasks in this
//! process, Curator's threads in one JVM (`CuratorTool lock-load`). From `mntr`, from after the
//! sessions connected until the last release (their closes not counted): the most watches the
//! server held at once (sampled every 20 ms) and the packets it sent and received per waiter.

use std::time::{Duration, Instant};

use anyhow::ensure;
use zkr_benches::{fmt_rate, fmt_ratio, run_loop, Deployment, Load, Measurement, Span, Table, Window};
use zkr_connection::ZkClient;
use zkr_recipes::locks::{
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2,
    LockError, MaxLeases,
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

/// One row of the server's load: `waiters` at once on one lock of `kind` (`mutex`, or a
/// `semaphore` of `leases`), spread over `sessions`.
#[derive(Debug, Clone, Copy)]
struct LoadRow {
    kind: &'static str,
    waiters: usize,
    sessions: usize,
    leases: usize,
}

const LOAD_ROWS: [LoadRow; 3] = [
    LoadRow { kind: "mutex", waiters: 1000, sessions: 1, leases: 1 },
    LoadRow { kind: "mutex", waiters: 1000, sessions: 8, leases: 1 },
    LoadRow { kind: "semaphore", waiters: 1000, sessions: 1, leases: 10 },
];

/// A zkr lock of either kind.
#[derive(Clone)]
enum ZkrLock {
    Mutex(InterProcessMutex),
    Semaphore(InterProcessSemaphoreV2),
}

impl ZkrLock {
    fn new(zk: &ZkClient, path: &str, row: LoadRow) -> Result<Self, LockError> {
        Ok(match row.kind {
            "mutex" => ZkrLock::Mutex(InterProcessMutex::new(zk, path)?),
            _ => ZkrLock::Semaphore(InterProcessSemaphoreV2::new(zk, path, MaxLeases::Fixed(row.leases))?),
        })
    }

    /// Acquires once and releases.
    async fn turn(self) -> Result<(), LockError> {
        match self {
            ZkrLock::Mutex(mutex) => mutex.acquire().await?.release().await,
            ZkrLock::Semaphore(semaphore) => semaphore.acquire().await?.release().await,
        }
    }
}

async fn zkr_load(server: &Deployment, path: &str, row: LoadRow) -> anyhow::Result<Load> {
    let mut sessions = Vec::new();
    for _ in 0..row.sessions {
        sessions.push(ZkClient::connect(&server.connect_string()).await?);
    }
    let locks = sessions.iter().map(|zk| ZkrLock::new(zk, path, row)).collect::<Result<Vec<_>, _>>()?;
    // Each waiter a task of its own: futures joined in one task share its ownership of a lock.
    let load = server
        .load(async {
            let mut waiters = tokio::task::JoinSet::new();
            for i in 0..row.waiters {
                waiters.spawn(locks[i % row.sessions].clone().turn());
            }
            while let Some(waiter) = waiters.join_next().await {
                waiter??;
            }
            Ok(())
        })
        .await?;
    for zk in sessions {
        zk.close().await;
    }
    Ok(load)
}

async fn curator_load(
    server: &Deployment,
    tool: &CuratorTool,
    path: &str,
    row: LoadRow,
) -> anyhow::Result<Load> {
    let (waiters, sessions, leases) =
        (row.waiters.to_string(), row.sessions.to_string(), row.leases.to_string());
    let cs = server.connect_string();
    server.peer_load(tool.spawn(&["lock-load", row.kind, &cs, path, &waiters, &sessions, &leases])?).await
}

/// `--server-load`: every row of [`LOAD_ROWS`], zkr then Curator, each on a server that holds no
/// watch.
async fn server_load(server: &Deployment, tool: &CuratorTool) -> anyhow::Result<()> {
    let curator = zkr_benches::wide::curator_name(tool);
    let mut table = Table::new(&[
        "waiters at once",
        "library",
        "watches the server held at most",
        "packets sent / waiter",
        "packets received / waiter",
        "all done in",
    ]);
    for (r, row) in LOAD_ROWS.iter().enumerate() {
        let what = match row.kind {
            "mutex" => format!("{} on a mutex over {} session(s)", row.waiters, row.sessions),
            _ => format!(
                "{} on a semaphore of {} leases, {} session(s)",
                row.waiters, row.leases, row.sessions
            ),
        };
        for (i, library) in ["zkr", curator.as_str()].into_iter().enumerate() {
            server.quiet().await?;
            eprintln!("[lock_family bench] server load: {what}, {library}");
            let path = format!("/bench-family/load-{r}-{i}");
            let load = match i {
                0 => zkr_load(server, &path, *row).await?,
                _ => curator_load(server, tool, &path, *row).await?,
            };
            let (sent, received) = load.per_operation(row.waiters);
            table.row(vec![
                what.clone(),
                library.to_owned(),
                load.peak_watches.to_string(),
                sent,
                received,
                load.took_ms(),
            ]);
        }
    }
    zkr_benches::print_report(
        &format!("The server's load: many waiters at once, on {}", server.describe()),
        &table,
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let (load, args): (Vec<String>, Vec<String>) =
        std::env::args().skip(1).partition(|a| a == "--server-load");
    let seconds = zkr_benches::window_seconds(args)?;
    let zkr_benches::Setup { server, connect_string: cs, curator: tool, zk } =
        zkr_benches::Setup::start().await?;
    if !load.is_empty() {
        return server_load(&server, &tool).await;
    }
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
