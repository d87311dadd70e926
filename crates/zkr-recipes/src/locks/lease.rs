//! [`Lease`]: one lease of a semaphore (Curator's `InterProcessSemaphoreV2`, kazoo's
//! `Semaphore`), its node reachable only through the session that created it.

use zkr_connection::ZkClient;

use super::internals::node_gone;
use super::{LockError, LostReason};
use crate::fence::SessionFence;
use crate::owned::Owned;

/// One lease of a semaphore: hold it to keep your place; [`release`](Self::release) it (or
/// drop it) to give it back.
#[derive(Debug)]
#[must_use = "dropping a Lease returns it at once"]
pub struct Lease {
    pub(super) zk: ZkClient,
    /// The lease node, reachable only through the session that created it.
    pub(super) node: Owned,
    /// Not released yet: a drop deletes the node.
    pub(super) armed: bool,
    fencing_token: i64,
}

impl Lease {
    /// The lease of `node` on `fence`'s session, before its node is created: from here on a
    /// drop deletes the node (if it came to exist) in the background.
    pub(crate) fn pending(zk: &ZkClient, node: String, fence: SessionFence) -> Lease {
        Lease { zk: zk.clone(), node: Owned::created(node, fence), armed: true, fencing_token: 0 }
    }

    /// The lease node was created with `czxid`.
    pub(crate) fn created(&mut self, czxid: i64) {
        self.fencing_token = czxid;
    }

    /// The lease node's path.
    pub fn node_path(&self) -> &str {
        self.node.path()
    }

    /// What the lease node holds (Curator's `Lease.getData()`): the data the semaphore was given
    /// with [`with_node_data`](crate::locks::InterProcessSemaphoreV2::with_node_data).
    ///
    /// # Errors
    /// As [`ZkClient::get_data`]; `NoNode` (as [`LockError::Connection`]) when the lease is gone.
    ///
    /// # Cancel safety
    /// Cancel safe (a read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(lease: zkr_recipes::locks::Lease) -> Result<(), zkr_recipes::locks::LockError> {
    /// let holder = lease.data().await?;
    /// # Ok(()) }
    /// ```
    pub async fn data(&self) -> Result<Vec<u8>, LockError> {
        // As stored: the client's compression is for the framework calls, not recipe nodes.
        let node = self.node_path();
        Ok(self.node.retry(&self.zk, |client| async move { client.get_data(node).await }).await?.0)
    }

    /// The lease node's creation zxid: grows with every new lease.
    pub fn fencing_token(&self) -> i64 {
        self.fencing_token
    }

    /// Has the lease's session ended (and the lease node with it)?
    pub fn is_lost(&self) -> bool {
        self.node.fence().session_ended(&self.zk)
    }

    /// Completes when the lease is lost: its session ends or its node is deleted by someone
    /// else. Connection losses the session survives do not count (a lease rides them out).
    /// Select on it beside the work the lease protects.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(lease: zkr_recipes::locks::Lease) {
    /// tokio::select! {
    ///     reason = lease.lost() => eprintln!("lease lost: {reason}"),
    ///     () = tokio::time::sleep(std::time::Duration::from_secs(5)) => {}
    /// }
    /// # }
    /// ```
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) -> LostReason {
        match self.armed {
            true => node_gone(&self.zk, self.node.session(), self.node.path()).await,
            false => LostReason::NodeDeleted,
        }
    }

    /// Returns the lease.
    ///
    /// The delete is awaited while connected. Without a connection (now, or when it drops
    /// while deleting) this returns at once and the delete goes on in the background while
    /// the session lives, as a lock guard's release does: a dead server never holds the
    /// caller. (A lease rides out connection trouble, so that is not a loss.)
    ///
    /// # Errors
    /// [`LockError::Lost`] when the lease's session had ended, or ends while deleting.
    ///
    /// # Cancel safety
    /// Cancel safe: the delete runs in a task of its own from the first poll, so a dropped
    /// release still returns the lease.
    pub async fn release(mut self) -> Result<(), LockError> {
        if !std::mem::take(&mut self.armed) {
            return Ok(());
        }
        let path = self.node.path().to_owned();
        if self.is_lost() {
            return Err(LockError::Lost { path, reason: LostReason::SessionEnded });
        }
        // The delete runs in a task of its own (a guaranteed delete) from here on.
        let done = self.node.guaranteed_delete(&self.zk);
        tokio::select! {
            _ = done.wait() => Ok(()),
            () = self.zk.session_replaced(self.node.fence().generation()) => {
                Err(LockError::Lost { path, reason: LostReason::SessionEnded })
            }
            // No server to answer now: the lease is given back; the delete goes on in the
            // background while the session lives (and the node goes with it if it ends).
            () = crate::fence::disconnected(&self.zk) => Ok(()),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if std::mem::take(&mut self.armed) {
            let (zk, node) = (self.zk.clone(), self.node.clone());
            zkr_connection::spawn_cleanup("a dropped semaphore lease", async move {
                node.guaranteed_delete(&zk).wait().await;
            });
        }
    }
}
