//! [`DistributedBarrier`]: waiters wait while a node exists.

use std::time::Duration;

use zkr_connection::{Deadline, ZkClient};
use zookeeper_client::CreateMode;

use super::{cache, finished, BarrierError};
use crate::cache::CacheMode;

/// Curator's `DistributedBarrier`: [`set_barrier`](Self::set_barrier) creates the node,
/// [`wait_on_barrier`](Self::wait_on_barrier) waits until it is gone, and
/// [`remove_barrier`](Self::remove_barrier) deletes it and lets every waiter go. The node is
/// persistent (a container parent is created when missing), so the barrier outlives the
/// process that set it, as in Curator.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::barriers::BarrierError> {
/// use std::time::Duration;
/// use zkr_recipes::barriers::DistributedBarrier;
///
/// let barrier = DistributedBarrier::new(&zk, "/deploys/freeze")?;
/// barrier.set_barrier().await?;
/// // elsewhere: workers wait until the freeze is lifted
/// if barrier.wait_on_barrier_timeout(Duration::from_secs(30)).await?.is_none() {
///     println!("still frozen after 30 s");
/// }
/// barrier.remove_barrier().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedBarrier {
    zk: ZkClient,
    path: String,
    /// kazoo's layout: the node and its missing parents are persistent (`ensure_path`).
    kazoo: bool,
}

impl DistributedBarrier {
    /// A barrier at `path`.
    ///
    /// # Errors
    /// [`BarrierError::InvalidArgument`] for a path ZooKeeper refuses, or one in `/zookeeper`.
    pub fn new(zk: &ZkClient, path: &str) -> Result<Self, BarrierError> {
        zk.validate_recipe_path(path)?;
        Ok(DistributedBarrier { zk: zk.clone(), path: path.to_owned(), kazoo: false })
    }

    /// kazoo's `Barrier(path)`: the same node, set with its missing parents made persistent
    /// (kazoo's `create()` is an `ensure_path`). kazoo processes share the barrier both ways:
    /// kazoo's `create()`, `remove()` and `wait(timeout)` are
    /// [`set_barrier`](Self::set_barrier), [`remove_barrier`](Self::remove_barrier) and
    /// [`wait_on_barrier_timeout`](Self::wait_on_barrier_timeout). Unlike kazoo's `wait`, the
    /// wait rides out disconnects and session expiries.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::barriers::BarrierError> {
    /// use zkr_recipes::barriers::DistributedBarrier;
    ///
    /// // kazoo: zk.Barrier("/deploys/freeze").wait()
    /// DistributedBarrier::kazoo(&zk, "/deploys/freeze")?.wait_on_barrier().await?;
    /// # Ok(()) }
    /// ```
    pub fn kazoo(zk: &ZkClient, path: &str) -> Result<Self, BarrierError> {
        Ok(DistributedBarrier { kazoo: true, ..DistributedBarrier::new(zk, path)? })
    }

    /// The barrier's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sets the barrier: creates its node (and missing parents as containers; persistent in
    /// [kazoo's layout](Self::kazoo)), unless it exists.
    ///
    /// # Errors
    /// [`BarrierError::Connection`] when ZooKeeper refuses or cannot be reached.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, the barrier may or may not be set.
    pub async fn set_barrier(&self) -> Result<(), BarrierError> {
        match self.kazoo {
            true => crate::kazoo::ensure_path(&self.zk, &self.path, &[]).await?,
            false => self.zk.create_if_absent(&self.path, &[], CreateMode::Persistent).await?,
        };
        Ok(())
    }

    /// Removes the barrier: deletes its node if it exists; every waiter goes on.
    ///
    /// # Errors
    /// As [`set_barrier`](Self::set_barrier); `NotEmpty` when someone created children under it.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, the barrier may or may not be removed.
    pub async fn remove_barrier(&self) -> Result<(), BarrierError> {
        self.zk.delete_if_present(&self.path).await?;
        Ok(())
    }

    /// Waits until the barrier is not set (at once when it is not).
    ///
    /// # Errors
    /// [`BarrierError::Connection`] when the first read cannot be made within the connection
    /// timeout; after that, disconnects and expiries are ridden out.
    ///
    /// # Cancel safety
    /// Cancel safe: waiting creates nothing.
    pub async fn wait_on_barrier(&self) -> Result<(), BarrierError> {
        self.wait(None).await.map(drop)
    }

    /// [`wait_on_barrier`](Self::wait_on_barrier) for at most `timeout` in all: `Ok(None)` when the
    /// barrier is still set then (Curator's `waitOnBarrier(maxWait, unit)`).
    ///
    /// # Errors
    /// As [`wait_on_barrier`](Self::wait_on_barrier).
    ///
    /// # Cancel safety
    /// Cancel safe: waiting creates nothing.
    pub async fn wait_on_barrier_timeout(&self, timeout: Duration) -> Result<Option<()>, BarrierError> {
        self.wait(Some(Deadline::after(timeout))).await.map(|done| done.then_some(()))
    }

    async fn wait(&self, deadline: Option<Deadline>) -> Result<bool, BarrierError> {
        let Some(cache) = cache(&self.zk, &self.path, CacheMode::Node, deadline).await? else {
            return Ok(false);
        };
        let gone = crate::cache::wait_confirmed(&mut cache.snapshots(), deadline, |s| {
            s.get(&self.path).is_none().then_some(())
        })
        .await;
        finished(gone, deadline).map(|gone| gone.is_some())
    }
}
