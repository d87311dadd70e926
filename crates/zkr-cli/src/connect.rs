//! The connection options of the subcommands that talk to ZooKeeper, and argument parsers
//! they share.

use std::time::Duration;

use anyhow::Context as _;
use zkr_connection::{ConnectionStateErrorPolicy, StandardConnectionStateErrorPolicy, ZkClient};

/// How to reach ZooKeeper. Flattened into each subcommand that connects (not `server` or
/// `demo`), after its name: `zkr lock --connect zk1:2181 /x -- cmd`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Connection")]
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
    /// How long to wait for a first session before giving up (exit 7); `lock --timeout` bounds
    /// it too.
    #[arg(long, default_value = "15s", value_parser = parse_positive_duration, global = true)]
    pub(crate) connect_timeout: Duration,
    /// Digest auth, `digest:USER:PASS`.
    #[arg(long, env = "ZKR_AUTH", global = true, hide_env_values = true)]
    pub(crate) auth: Option<String>,
}

/// Parses `10s`, `500ms`, `2m`, `1h 30m`.
pub(crate) fn parse_duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value)
        .map_err(|e| format!("{value:?} is not a duration (like 10s or 500ms): {e}"))
}

/// As [`parse_duration`], refusing zero.
pub(crate) fn parse_positive_duration(value: &str) -> Result<Duration, String> {
    match parse_duration(value)? {
        d if d.is_zero() => Err(format!("{value:?} must be above zero")),
        d => Ok(d),
    }
}

/// A ZooKeeper path argument, checked before anything connects (a bad one is a usage error).
pub(crate) fn parse_path(value: &str) -> Result<String, String> {
    zkr_connection::path::check_path(value).map_err(|e| format!("{value:?}: {e}"))?;
    Ok(value.to_owned())
}

impl ConnectArgs {
    /// Connects with the standard error policy, waiting at most `--connect-timeout`.
    pub(crate) async fn connect(&self) -> anyhow::Result<ZkClient> {
        self.connect_with(StandardConnectionStateErrorPolicy, None).await
    }

    /// Connects with `policy` (what counts as losing a lock), waiting for the first session at
    /// most `--connect-timeout` or `limit`, whichever is shorter.
    pub(crate) async fn connect_with(
        &self,
        policy: impl ConnectionStateErrorPolicy + 'static,
        limit: Option<Duration>,
    ) -> anyhow::Result<ZkClient> {
        let mut builder = ZkClient::builder(&self.connect)
            .session_timeout(self.session_timeout)
            .connection_timeout(self.connect_timeout)
            .error_policy(policy);
        if let Some(ns) = &self.namespace {
            builder = builder.namespace(ns);
        }
        if let Some(auth) = &self.auth {
            let (scheme, credentials) = auth.split_once(':').ok_or_else(|| bad_auth("digest:USER:PASS"))?;
            if scheme != "digest" {
                return Err(bad_auth(&format!("the digest scheme, not {scheme:?}")));
            }
            builder = builder.auth("digest", credentials.as_bytes());
        }
        let zk = builder.build()?;
        let wait = limit.map_or(self.connect_timeout, |l| l.min(self.connect_timeout));
        if let Err(e) = zk.wait_connected(wait).await {
            zk.close().await;
            return Err(e).with_context(|| format!("connecting to ZooKeeper at {}", self.connect));
        }
        Ok(zk)
    }
}

fn bad_auth(wanted: &str) -> anyhow::Error {
    crate::exit::Failure::error(crate::exit::Exit::Usage, format!("--auth takes {wanted}"))
}
