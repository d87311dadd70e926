//! The `waiters` scenario: N waiters queued behind a holder in one process (a child process of
//! this benchmark for the Rust libraries, a JVM for Curator), then drained. The child's side is
//! [`child_main`].

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure, Context as _};
use tokio::task::JoinSet;
use zkr_benches::{fmt_mib, fmt_ratio, numeric_field, peak_rss_kb, Table};
use zkr_testing::peers::PeerProcess;
use zookeeper_client::Client;

use crate::library::{ClientLock, Connection, Library, RustLock, ZkrMutex};
use crate::scenarios::Bench;
use crate::{CHILD_FLAG, POLL, QUEUE_TIMEOUT, WAITERS_TIMEOUT};

/// One waiters run: `QUEUED n= rss_kb= [base_kb=]` and `RESULT drained= millis= rss_kb=`.
#[derive(Debug, Clone)]
struct WaitersResult {
    n: u64,
    queued_kb: u64,
    base_kb: Option<u64>,
    drain_ms: u64,
    peak_kb: u64,
}

impl WaitersResult {
    /// kB of RSS per 1000 waiters over the baseline.
    fn per_1000_kb(&self) -> Option<f64> {
        let base = self.base_kb?;
        Some(self.queued_kb.saturating_sub(base) as f64 / self.n.max(1) as f64 * 1000.0)
    }

    fn drain_per_waiter_ms(&self) -> f64 {
        self.drain_ms as f64 / self.n.max(1) as f64
    }
}

impl Bench {
    pub async fn waiters(&mut self) {
        let (big, small) = (self.options.zkr_waiters(), self.options.peer_waiters());
        let zkr_big = self.waiters_run(Library::Zkr, big, "").await;
        let zkr_small =
            if small == big { zkr_big.clone() } else { self.waiters_run(Library::Zkr, small, "").await };
        let curator_base = self.waiters_run(Library::Curator, 1, " (baseline)").await;
        let curator = self.waiters_run(Library::Curator, small, "").await.map(|mut r| {
            r.base_kb = curator_base.as_ref().map(|b| b.queued_kb);
            r
        });
        let zkclient = self.waiters_run(Library::ZookeeperClient, small, "").await;

        let mut runs = vec![(Library::Zkr, &zkr_big)];
        if small != big {
            runs.push((Library::Zkr, &zkr_small));
        }
        runs.extend([(Library::Curator, &curator), (Library::ZookeeperClient, &zkclient)]);
        println!("\n## waiters: N waiters queued behind a holder in one process, then drained\n");
        print!("{}", waiters_table(&runs).render());
        println!(
            "\nPeak RSS is the process's VmHWM once all N contender nodes are in ZooKeeper (zkr and \
             zookeeper-client: a child process of this benchmark; Curator: its JVM). Baseline: zkr and \
             zookeeper-client: VmHWM after connecting and taking the lock, before the waiters start; \
             Curator: the same run with N=1. RSS per 1000 waiters = (peak - baseline) / N * 1000. \
             Drain: from the holder's release until every waiter has acquired and released once."
        );
        if let Some(z) = &zkr_small {
            for (library, other) in [(Library::Curator, &curator), (Library::ZookeeperClient, &zkclient)] {
                if let Some(o) = other {
                    self.like_for_like_ratios(small, z, library.ratio_name(), o);
                }
            }
        }
        if big != small {
            self.large_run_ratios((big, small), zkr_big.as_ref(), curator.as_ref());
        }
    }

    /// One waiters run of `library` with `n` waiters; `suffix` follows `N=n` in its label.
    async fn waiters_run(&self, library: Library, n: usize, suffix: &str) -> Option<WaitersResult> {
        let path = format!("/bench/waiters/{}-{n}", library.name());
        let work = async {
            let peer = if library == Library::Curator {
                self.curator_tool()?.spawn(&["bench-waiters", &self.cs, &path, &n.to_string()])?
            } else {
                let exe = std::env::current_exe().context("locating this benchmark's executable")?;
                let mut cmd = std::process::Command::new(exe);
                cmd.arg(CHILD_FLAG).arg(library.name()).arg(n.to_string()).arg(&self.cs).arg(&path);
                PeerProcess::spawn(format!("waiters child ({}, N={n})", library.name()), cmd)?
            };
            read_waiters(peer).await
        };
        self.step("waiters", &format!("{} N={n}{suffix}", library.label()), work).await
    }

    /// zkr against `name` (`o`), both with `small` waiters.
    fn like_for_like_ratios(&mut self, small: usize, z: &WaitersResult, name: &str, o: &WaitersResult) {
        if let (Some(zp), Some(op)) = (z.per_1000_kb(), o.per_1000_kb()) {
            self.ratios.push(format!(
                "waiters RSS per 1000 waiters zkr/{name} {} (zkr {}, {name} {}; N={small}, over baseline)",
                fmt_ratio(zp, op),
                fmt_mib(zp as u64),
                fmt_mib(op as u64)
            ));
        }
        self.ratios.push(format!(
            "waiters peak RSS N={small} zkr/{name} {} (zkr {}, {name} {})",
            fmt_ratio(z.queued_kb as f64, o.queued_kb as f64),
            fmt_mib(z.queued_kb),
            fmt_mib(o.queued_kb)
        ));
        self.ratios.push(format!(
            "waiters drain {small} zkr/{name} {} (zkr {} ms, {name} {} ms)",
            fmt_ratio(z.drain_ms as f64, o.drain_ms as f64),
            z.drain_ms,
            o.drain_ms
        ));
    }

    /// zkr's large run, against Curator's like-for-like run and alone.
    fn large_run_ratios(
        &mut self,
        (big, small): (usize, usize),
        zkr: Option<&WaitersResult>,
        curator: Option<&WaitersResult>,
    ) {
        let Some(z) = zkr else { return };
        if let Some((zp, cp)) = z.per_1000_kb().zip(curator.and_then(WaitersResult::per_1000_kb)) {
            self.ratios.push(format!(
                "waiters RSS per 1000 waiters zkr N={big}/curator N={small} {} (zkr {}, curator {}; over baseline)",
                fmt_ratio(zp, cp),
                fmt_mib(zp as u64),
                fmt_mib(cp as u64)
            ));
        }
        self.ratios.push(format!(
            "waiters zkr N={big}: peak RSS {}, drain {} ms ({:.3} ms per waiter)",
            fmt_mib(z.queued_kb),
            z.drain_ms,
            z.drain_per_waiter_ms()
        ));
    }
}

fn waiters_table(runs: &[(Library, &Option<WaitersResult>)]) -> Table {
    let mut table = Table::new(&[
        "library",
        "N",
        "peak RSS, all queued",
        "baseline RSS",
        "RSS per 1000 waiters",
        "drain",
        "drain per waiter",
        "peak RSS after drain",
    ]);
    for (library, result) in runs {
        let label = library.label().to_string();
        let Some(r) = result else {
            table.row(vec![label, String::new(), "failed (see above)".into()]);
            continue;
        };
        table.row(vec![
            label,
            r.n.to_string(),
            fmt_mib(r.queued_kb),
            r.base_kb.map(fmt_mib).unwrap_or_else(|| "n/a".into()),
            r.per_1000_kb().map(|kb| fmt_mib(kb as u64)).unwrap_or_else(|| "n/a".into()),
            format!("{} ms", r.drain_ms),
            format!("{:.3} ms", r.drain_per_waiter_ms()),
            fmt_mib(r.peak_kb),
        ]);
    }
    table
}

async fn read_waiters(mut peer: PeerProcess) -> anyhow::Result<WaitersResult> {
    peer.set_line_timeout(WAITERS_TIMEOUT);
    let queued = peer.expect_line("QUEUED").await?;
    let result = peer.expect_line("RESULT").await?;
    let status = peer.wait().await?;
    ensure!(status.success(), "the waiters process exited with {status}");
    let field = |line: &str, key: &str| numeric_field(line, key).map_err(anyhow::Error::msg);
    Ok(WaitersResult {
        n: field(&queued, "n")?,
        queued_kb: field(&queued, "rss_kb")?,
        base_kb: numeric_field(&queued, "base_kb").ok(),
        drain_ms: field(&result, "millis")?,
        peak_kb: field(&result, "rss_kb")?,
    })
}

/// A waiters child: `zkr|zkclient N CONNECT PATH`. Prints `QUEUED n= rss_kb= base_kb=` once the
/// N waiters are queued, then `RESULT drained= millis= rss_kb=` once they have all had the lock.
pub fn child_main(args: &[String]) -> ExitCode {
    let [library, n, cs, path] = args else {
        eprintln!("usage: {CHILD_FLAG} zkr|zkclient N CONNECT PATH");
        return ExitCode::from(2);
    };
    let Ok(n) = n.parse::<usize>() else {
        eprintln!("{CHILD_FLAG}: N must be a number, not `{n}`");
        return ExitCode::from(2);
    };
    exit_with_parent();
    let work = async {
        match library.as_str() {
            "zkr" => queue_and_drain::<ZkrMutex>(n, cs, path).await,
            "zkclient" => queue_and_drain::<ClientLock>(n, cs, path).await,
            other => Err(anyhow!("unknown library `{other}`")),
        }
    };
    crate::block_on("", "waiters child failed", work)
}

/// Exits the child when the benchmark that started it goes away.
fn exit_with_parent() {
    let parent = std::os::unix::process::parent_id();
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(500));
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(3);
        }
    });
}

/// Takes the lock, queues `n` waiters behind it, reports, releases, and waits for all of them
/// to have had the lock once.
async fn queue_and_drain<L: RustLock>(n: usize, cs: &str, path: &str) -> anyhow::Result<()> {
    let session = L::Session::connect_to(cs).await?;
    let lock = L::open(&session, path).await?;
    let holder = lock.acquire().await?;
    let poll = session.poll_client().await?;
    let base_kb = peak_rss_kb().unwrap_or(0);
    let mut tasks = JoinSet::new();
    for _ in 0..n {
        let lock = lock.clone();
        tasks.spawn(async move {
            let held = lock.acquire().await?;
            lock.release(held).await
        });
    }
    wait_queued(&poll, path, n + 1, &mut tasks).await?;
    println!("QUEUED n={n} rss_kb={} base_kb={base_kb}", peak_rss_kb().unwrap_or(0));
    let start = Instant::now();
    lock.release(holder).await?;
    while let Some(result) = tasks.join_next().await {
        result??;
    }
    let millis = start.elapsed().as_millis();
    println!("RESULT drained={n} millis={millis} rss_kb={}", peak_rss_kb().unwrap_or(0));
    drop(poll);
    session.disconnect().await;
    Ok(())
}

/// Polls the children of `path` every [`POLL`] until there are `target`.
async fn wait_queued(
    client: &Client,
    path: &str,
    target: usize,
    tasks: &mut JoinSet<anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + QUEUE_TIMEOUT;
    loop {
        let count = client.list_children(path).await?.len();
        if count >= target {
            return Ok(());
        }
        if let Some(done) = tasks.try_join_next() {
            done??;
            bail!("a waiter got the lock while it was held");
        }
        if Instant::now() > deadline {
            bail!("only {count} of {target} contender nodes queued within {} s", QUEUE_TIMEOUT.as_secs());
        }
        tokio::time::sleep(POLL).await;
    }
}
