//! The global connection options every ZooKeeper subcommand shares.

use std::time::Duration;

use anyhow::Context as _;
use zkr_connection::ZkClient;

/// How to reach ZooKeeper.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ConnectArgs {
    /// ZooKeeper hosts, `host:port[,host:port...][/chroot]`.
    #[arg(long = "connect", env = "ZK_CONNECT", default_value = "127.0.0.1:2181", global = true)]
    pub(crate) connect: String,
    /// A namespace: every path is relative to /NAMESPACE.
    #[arg(long, global = true)]
    pub(crate) namespace: Option<String>,
    /// Session timeout (for example 10s, 1m).
    #[arg(long, default_value = "30s", value_parser = parse_duration, global = true)]
    pub(crate) session_timeout: Duration,
    /// Digest auth, `digest:USER:PASS`.
    #[arg(long, env = "ZKR_AUTH", global = true, hide_env_values = true)]
    pub(crate) auth: Option<String>,
}

/// Parses `10s`, `500ms`, `2m`, `1h 30m`.
pub(crate) fn parse_duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value)
        .map_err(|e| format!("{value:?} is not a duration (like 10s or 500ms): {e}"))
}

impl ConnectArgs {
    /// Connects, waiting at most 15 s.
    pub(crate) async fn connect(&self) -> anyhow::Result<ZkClient> {
        let mut builder = ZkClient::builder(&self.connect).session_timeout(self.session_timeout);
        if let Some(ns) = &self.namespace {
            builder = builder.namespace(ns);
        }
        if let Some(auth) = &self.auth {
            let (scheme, credentials) = auth.split_once(':').context("--auth takes digest:USER:PASS")?;
            anyhow::ensure!(scheme == "digest", "--auth supports the digest scheme, not {scheme:?}");
            builder = builder.auth("digest", credentials.as_bytes());
        }
        builder.connect().await.with_context(|| format!("connecting to ZooKeeper at {}", self.connect))
    }
}
