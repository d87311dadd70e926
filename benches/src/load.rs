//! The server's load of one workload (issue 47 item 3): the most watches the servers held at
//! once and the packets they sent and received, from after the workload's sessions connected
//! until it was done (their connects and closes not counted), for a workload in this process
//! ([`Deployment::load`]) or in a peer process ([`Deployment::peer_load`]).

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use zkr_testing::peers::{parse_result, PeerProcess};

use crate::{Deployment, ServerCounters};

/// What one workload cost the servers.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// The most watches the servers held at once (sampled every 20 ms and at the end).
    pub peak_watches: u64,
    /// The counters when the workload started.
    pub before: ServerCounters,
    /// The counters when it was done.
    pub after: ServerCounters,
    /// How long it took.
    pub took: Duration,
}

impl Load {
    /// The packets sent and received per operation, as [`ServerCounters::per_operation`].
    pub fn per_operation(&self, operations: usize) -> (String, String) {
        self.after.per_operation(&self.before, operations)
    }

    /// How long it took, in whole milliseconds.
    pub fn took_ms(&self) -> String {
        format!("{:.0} ms", self.took.as_secs_f64() * 1e3)
    }
}

impl Deployment {
    /// Runs `work` (its sessions already connected) and measures what it cost the servers.
    ///
    /// # Errors
    /// `work` failed, or a server did not answer `mntr`.
    pub async fn load(&self, work: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<Load> {
        let before = self.counters().await?;
        let start = Instant::now();
        let (done, peak_watches) = self.peak_watches_during(work).await?;
        done?;
        let took = start.elapsed();
        Ok(Load { peak_watches, before, after: self.counters().await?, took })
    }

    /// Measures a peer process's workload: the peer prints `CONNECTED` once its sessions are
    /// up, starts at a `go` line on its stdin, prints `DRAINED ... millis=<ms>` when done, and
    /// closes its sessions and ends at stdin EOF (`CuratorTool queue-load`, `lock-load`).
    ///
    /// # Errors
    /// The peer failed or said something else, or a server did not answer `mntr`.
    pub async fn peer_load(&self, mut peer: PeerProcess) -> anyhow::Result<Load> {
        peer.set_line_timeout(Duration::from_secs(600));
        peer.expect_line("CONNECTED").await?;
        let before = self.counters().await?;
        peer.send_line("go").await?;
        let (line, peak_watches) = self.peak_watches_during(peer.expect_line("DRAINED")).await?;
        let line = line?;
        let after = self.counters().await?;
        peer.close_stdin();
        ensure!(peer.wait().await?.success(), "the peer failed after `{line}`");
        let millis: f64 = parse_result(&line)
            .into_iter()
            .find(|(key, _)| key == "millis")
            .with_context(|| format!("no millis in `{line}`"))?
            .1
            .parse()?;
        Ok(Load { peak_watches, before, after, took: Duration::from_secs_f64(millis / 1e3) })
    }
}
