//! [`PersistentTtlNode`]: Curator's `PersistentTtlNode`.

use std::time::Duration;

use tokio::task::JoinHandle;
use zkr_connection::{path, ZkClient};
use zookeeper_client::CreateMode;

use super::{NodeError, PersistentNode};

/// The child Curator's `PersistentTtlNode` touches (`DEFAULT_CHILD_NODE_NAME`).
pub const TOUCH_NODE_NAME: &str = "touch";

/// A TTL node that lives as long as this process does, and `ttl` longer (Curator's
/// `PersistentTtlNode`, same layout): a [`PersistentNode`] created with a TTL, and a `touch`
/// child, also with the TTL, whose data is set every `ttl / 2`. While the child is touched the
/// node has a child and stays; once nobody touches it, the child expires, then the node.
///
/// [`close`](Self::close) stops touching and leaves the node to expire, as Curator's does. The
/// server must have TTL nodes on (`zookeeper.extendedTypesEnabled=true`); otherwise
/// [`wait_for_initial_create_timeout`](Self::wait_for_initial_create_timeout) runs out and
/// [`PersistentNode::creation_error`] names [`TtlDisabled`](zkr_connection::Error::TtlDisabled)
/// as its cause.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::nodes::NodeError> {
/// use std::time::Duration;
/// use zkr_recipes::nodes::PersistentTtlNode;
///
/// let node = PersistentTtlNode::start(&zk, "/jobs/nightly/running", Duration::from_secs(60), b"host-1").await?;
/// node.wait_for_initial_create_timeout(Duration::from_secs(5)).await?;
/// // ... the job runs; if this process dies, the node is gone a minute or two later ...
/// node.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PersistentTtlNode {
    node: PersistentNode,
    _toucher: Toucher,
}

impl PersistentTtlNode {
    /// Starts keeping a TTL node at `path` with `data`, touched every `ttl / 2`.
    ///
    /// # Errors
    /// [`NodeError::InvalidArgument`] for a bad path, a TTL out of range, or a call outside a
    /// tokio runtime.
    ///
    /// # Cancel safety
    /// Cancel safe: it awaits nothing, so a future dropped before it is polled starts nothing.
    pub async fn start(zk: &ZkClient, path: &str, ttl: Duration, data: &[u8]) -> Result<Self, NodeError> {
        let node = PersistentNode::builder(zk, path, CreateMode::Persistent)
            .ttl(ttl)
            .data(data)
            .delete_on_close(false)
            .start()
            .await?;
        let toucher =
            tokio::spawn(touch(zk.clone(), node.path_watch(), path::join(path, TOUCH_NODE_NAME), ttl));
        Ok(PersistentTtlNode { node, _toucher: Toucher(toucher) })
    }

    /// As [`PersistentNode::wait_for_initial_create_timeout`].
    ///
    /// # Errors
    /// As [`PersistentNode::wait_for_initial_create_timeout`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for_initial_create_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<String>, NodeError> {
        self.node.wait_for_initial_create_timeout(timeout).await
    }

    /// The node itself.
    pub fn node(&self) -> &PersistentNode {
        &self.node
    }

    /// As [`PersistentNode::set_data`].
    ///
    /// # Errors
    /// As [`PersistentNode::set_data`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn set_data(&self, data: impl Into<Vec<u8>>) -> Result<(), NodeError> {
        self.node.set_data(data).await
    }

    /// Stops touching; the node expires by its TTL.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn close(self) {
        let PersistentTtlNode { node, _toucher } = self;
        drop(_toucher);
        node.close().await;
    }
}

/// Stops the touching when the node's handle goes.
#[derive(Debug)]
struct Toucher(JoinHandle<()>);

impl Drop for Toucher {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Every `ttl / 2`, while the node exists: sets the touch child's data, creating it (with the
/// TTL) when it is missing. Only while the node exists, so the touch never creates the node
/// as a plain parent.
async fn touch(
    zk: ZkClient,
    mut node: tokio::sync::watch::Receiver<Option<String>>,
    child: String,
    ttl: Duration,
) {
    let mut ticks = tokio::time::interval((ttl / 2).max(Duration::from_millis(1)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if node.wait_for(Option::is_some).await.is_err() {
            return;
        }
        let touched = zk.retry(|s| {
            let child = child.clone();
            async move { s.client().set_data(&child, &[], None).await }
        });
        let result = match touched.await {
            Err(e) if e.is_no_node() => {
                zk.create_with_ttl(&child, &[], CreateMode::Persistent, ttl).await.map(drop)
            }
            other => other.map(drop),
        };
        match result {
            Ok(()) => {}
            Err(e) if e.is_node_exists() => {}
            Err(error) => tracing::debug!(child = %child, %error, "could not touch a TTL node"),
        }
    }
}
