//! What the ensemble's servers can do, for recipes that use requests older servers lack.

use zookeeper_client::AddWatchMode;

use crate::error::{Error, Result};
use crate::session::client::ZkClient;

impl ZkClient {
    /// Whether the servers have persistent watches (`addWatch`, ZooKeeper 3.6 and later), and
    /// with them the other requests 3.6 added (multi-reads, `getEphemerals`). Recipes that
    /// keep a copy of a tree use one-shot watches where they are missing.
    ///
    /// Probed once per connection manager, on a session of its own: a 3.5 server answers a
    /// request it does not know by closing the connection, which would suspend the manager's
    /// own session (and with it every lock it holds). The answer is kept; a probe that cannot
    /// reach a server is not, and the next call tries again.
    ///
    /// # Errors
    /// [`Error::Zk`] when no server could be reached within the connection timeout;
    /// [`Error::Closed`] once the manager is closed.
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped probe leaves nothing kept, and its session is closed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// if !zk.has_persistent_watches().await? {
    ///     println!("ZooKeeper 3.5: caches re-read what changed on every event");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn has_persistent_watches(&self) -> Result<bool> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let shared = &self.shared;
        let probed = shared.persistent_watches.get_or_try_init(|| async {
            let client = shared.dial(shared.connector()).await?.into_client();
            let probe = tokio::time::timeout(
                shared.config.connection_timeout,
                client.watch("/", AddWatchMode::Persistent),
            );
            match probe.await {
                Ok(Ok(_)) => Ok(true),
                Ok(Err(zookeeper_client::Error::Unimplemented)) => Ok(false),
                Ok(Err(e)) if crate::kind::is_retryable(&e) => Err(e),
                // Known and refused (an ACL on "/", say): the server has the request.
                Ok(Err(_)) => Ok(true),
                Err(_) => Err(zookeeper_client::Error::Timeout),
            }
        });
        let found = probed.await.map_err(Error::Zk)?;
        tracing::debug!(persistent_watches = *found, "probed the servers' features");
        Ok(*found)
    }
}
