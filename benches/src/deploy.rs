//! Where a benchmark's clients find ZooKeeper: one standalone server on loopback (the default),
//! or a 3-server ensemble with every client connection through a latency proxy, as production
//! clients sit 0.5-2 ms from their ensemble.
//!
//! Chosen by the environment, so every benchmark takes it the same way:
//! `ZKR_BENCH_DEPLOY=ensemble ZKR_BENCH_RTT_MS=2 cargo bench -p zkr-benches --bench ids`.
//! Curator's peer processes get the same connect string, so they go through the same proxies.

use std::time::Duration;

use anyhow::Context as _;
use zkr_testing::{FaultProxy, Latency, TestingCluster, TestingServer};

/// The servers of one benchmark run (stopped when dropped).
#[derive(Debug)]
pub enum Deployment {
    /// One standalone server; clients connect to it directly.
    Standalone(TestingServer),
    /// A 3-server ensemble; clients connect through one latency proxy per server.
    Ensemble {
        /// The servers.
        cluster: TestingCluster,
        /// One proxy in front of each server, each adding `rtt` to a round trip.
        proxies: Vec<FaultProxy>,
        /// The round trip each proxy adds.
        rtt: Duration,
    },
}

impl Deployment {
    /// The deployment `ZKR_BENCH_DEPLOY` (`standalone` or `ensemble`) and `ZKR_BENCH_RTT_MS`
    /// (the ensemble's added round trip in milliseconds, default 0) ask for.
    ///
    /// # Errors
    /// An unknown deployment or round trip, or servers that would not start.
    pub async fn from_env() -> anyhow::Result<Self> {
        let kind = std::env::var("ZKR_BENCH_DEPLOY").unwrap_or_default();
        let rtt_ms = std::env::var("ZKR_BENCH_RTT_MS").unwrap_or_default();
        let rtt_ms: f64 = if rtt_ms.trim().is_empty() {
            0.0
        } else {
            rtt_ms.trim().parse().with_context(|| format!("ZKR_BENCH_RTT_MS: not a number: `{rtt_ms}`"))?
        };
        anyhow::ensure!((0.0..=1000.0).contains(&rtt_ms), "ZKR_BENCH_RTT_MS must be in [0, 1000]");
        match kind.trim() {
            "" | "standalone" => {
                anyhow::ensure!(rtt_ms == 0.0, "ZKR_BENCH_RTT_MS needs ZKR_BENCH_DEPLOY=ensemble");
                Ok(Deployment::Standalone(
                    TestingServer::start().await.context("starting a ZooKeeper server")?,
                ))
            }
            "ensemble" => Self::ensemble(Duration::from_secs_f64(rtt_ms / 1000.0)).await,
            other => anyhow::bail!("ZKR_BENCH_DEPLOY: `{other}` is neither `standalone` nor `ensemble`"),
        }
    }

    /// A 3-server ensemble behind latency proxies of `rtt` each.
    ///
    /// # Errors
    /// The servers or the proxies would not start.
    pub async fn ensemble(rtt: Duration) -> anyhow::Result<Self> {
        let cluster = TestingCluster::start(3).await.context("starting a 3-server ensemble")?;
        let mut proxies = Vec::new();
        for index in 0..cluster.size() {
            let target = cluster.server_connect_string(index)?;
            proxies.push(FaultProxy::start_with_latency(&target, Latency::round_trip(rtt)).await?);
        }
        Ok(Deployment::Ensemble { cluster, proxies, rtt })
    }

    /// What every client of the run connects to.
    pub fn connect_string(&self) -> String {
        match self {
            Deployment::Standalone(server) => server.connect_string(),
            Deployment::Ensemble { proxies, .. } => {
                proxies.iter().map(FaultProxy::connect_string).collect::<Vec<_>>().join(",")
            }
        }
    }

    /// One line for the report: `one standalone server` or `a 3-server ensemble, 2 ms added
    /// to every client round trip`.
    pub fn describe(&self) -> String {
        match self {
            Deployment::Standalone(_) => "one standalone server on loopback".to_owned(),
            Deployment::Ensemble { rtt, .. } => format!(
                "a 3-server ensemble on loopback, every client connection through a proxy adding {} ms to each round trip",
                rtt.as_secs_f64() * 1000.0
            ),
        }
    }

    /// The servers' release as their `mntr` reports it (`3.9.5-<commit>, built on ...`).
    ///
    /// # Errors
    /// A server did not answer `mntr`.
    pub async fn release(&self) -> anyhow::Result<String> {
        let mntr = self.mntrs().await?.concat();
        Ok(crate::mntr_value(&mntr, "zk_version").unwrap_or_default())
    }

    /// Every server's `mntr` reply.
    ///
    /// # Errors
    /// A server did not answer `mntr`.
    pub async fn mntrs(&self) -> anyhow::Result<Vec<String>> {
        match self {
            Deployment::Standalone(server) => Ok(vec![server.four_letter_word("mntr").await?]),
            Deployment::Ensemble { cluster, .. } => {
                let mut all = Vec::new();
                for index in 0..cluster.size() {
                    all.push(cluster.four_letter_word(index, "mntr").await?);
                }
                Ok(all)
            }
        }
    }

    /// A numeric `mntr` key summed over the servers (`zk_packets_received`, `zk_cnt_fsynctime`).
    ///
    /// # Errors
    /// A server did not answer `mntr`, or a reply lacks the key.
    pub async fn mntr_sum(&self, key: &str) -> anyhow::Result<u64> {
        let mut sum = 0;
        for mntr in self.mntrs().await? {
            let value = crate::mntr_value(&mntr, key).and_then(|v| v.parse::<u64>().ok());
            sum += value.with_context(|| format!("no {key} in a server's mntr reply"))?;
        }
        Ok(sum)
    }

    /// The packets the servers have received (`mntr`'s `zk_packets_received`, summed).
    ///
    /// # Errors
    /// A server did not answer `mntr`.
    pub async fn packets_received(&self) -> anyhow::Result<u64> {
        self.mntr_sum("zk_packets_received").await
    }

    /// The watches the servers hold and the packets they have sent and received so far
    /// (`zk_watch_count`, `zk_packets_sent`, `zk_packets_received`, each summed).
    ///
    /// # Errors
    /// A server did not answer `mntr`.
    pub async fn counters(&self) -> anyhow::Result<ServerCounters> {
        Ok(ServerCounters {
            watches: self.mntr_sum("zk_watch_count").await?,
            sent: self.mntr_sum("zk_packets_sent").await?,
            received: self.mntr_sum("zk_packets_received").await?,
        })
    }

    /// Runs `work` while sampling the servers' watch count every 20 ms: its output, and the
    /// most watches seen (at its end too).
    ///
    /// # Errors
    /// A server did not answer `mntr`.
    pub async fn peak_watches_during<F: std::future::Future>(
        &self,
        work: F,
    ) -> anyhow::Result<(F::Output, u64)> {
        let mut peak = 0;
        let mut every = tokio::time::interval(Duration::from_millis(20));
        tokio::pin!(work);
        loop {
            tokio::select! {
                out = &mut work => return Ok((out, peak.max(self.mntr_sum("zk_watch_count").await?))),
                _ = every.tick() => peak = peak.max(self.mntr_sum("zk_watch_count").await?),
            }
        }
    }

    /// Waits until the servers hold no watch: the sessions of the run before are gone.
    ///
    /// # Errors
    /// Watches still set after 30 s, or a server that did not answer `mntr`.
    pub async fn quiet(&self) -> anyhow::Result<()> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while self.mntr_sum("zk_watch_count").await? > 0 {
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "the last run's watches are still set after 30 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// Where the (first) server keeps its data, for the report's file system line.
    pub fn data_dir(&self) -> &std::path::Path {
        match self {
            Deployment::Standalone(server) => server.data_dir(),
            Deployment::Ensemble { cluster, .. } => cluster.root_dir(),
        }
    }
}

/// What the servers' `mntr` counted at one moment (issue 47 item 3: the server's load).
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerCounters {
    /// Watches held (`zk_watch_count`; a persistent watch counts twice).
    pub watches: u64,
    /// Packets sent (`zk_packets_sent`).
    pub sent: u64,
    /// Packets received (`zk_packets_received`).
    pub received: u64,
}

impl ServerCounters {
    /// The packets sent and received from `earlier` until these, each divided by `operations`
    /// (one decimal).
    pub fn per_operation(&self, earlier: &ServerCounters, operations: usize) -> (String, String) {
        let per = |count: u64| format!("{:.1}", count as f64 / operations.max(1) as f64);
        (per(self.sent.saturating_sub(earlier.sent)), per(self.received.saturating_sub(earlier.received)))
    }
}
