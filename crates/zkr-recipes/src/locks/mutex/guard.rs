//! The proof of holding an [`InterProcessMutex`](super::InterProcessMutex): the guard, its fenced writes, its release
//! and the background release when it is dropped.

use std::sync::Arc;

use zkr_connection::{DropGuard, Session, Transaction};
use zookeeper_client::{CreateMode, MultiWriteResult, Stat};

use super::{Inner, OwnerSlot};
use crate::fence::LostReason;
use crate::locks::driver::{LockInternalsDriver, StandardLockInternalsDriver};
use crate::locks::error::LockError;
use crate::locks::internals::LockNode;
use crate::locks::owner::Holder;

/// Proof of holding an [`InterProcessMutex`](super::InterProcessMutex): one per successful acquire (reentrant acquires
/// get their own). Release it with [`release`](Self::release) to learn the outcome; dropping it
/// releases in the background. The lock node is deleted when the owner's last guard goes.
///
/// It is not `Clone`; it can be released from any task (the count it decrements is the
/// acquiring owner's), so it may be moved into a spawned task.
///
/// ```compile_fail
/// # async fn f(guard: zkr_recipes::locks::InterProcessMutexGuard) {
/// guard.release().await.unwrap();
/// guard.release().await.unwrap(); // releasing twice does not compile
/// # }
/// ```
#[must_use = "if unused the lock is released immediately"]
pub struct InterProcessMutexGuard<D: LockInternalsDriver = StandardLockInternalsDriver> {
    inner: Arc<Inner<D>>,
    pub(super) owner: Holder,
    slot: Arc<OwnerSlot>,
    pub(super) node: Arc<LockNode>,
    pub(super) released: bool,
}

impl<D: LockInternalsDriver> InterProcessMutexGuard<D> {
    pub(super) fn new(
        inner: Arc<Inner<D>>,
        owner: Holder,
        slot: Arc<OwnerSlot>,
        node: Arc<LockNode>,
    ) -> Self {
        InterProcessMutexGuard { inner, owner, slot, node, released: false }
    }

    /// The node this guard holds, shared (a leader's term fences its writes with it).
    pub(crate) fn shared_node(&self) -> &Arc<LockNode> {
        &self.node
    }

    /// Our lock node's full path.
    pub fn node_path(&self) -> &str {
        self.node.path()
    }

    /// The fencing token: our lock node's creation zxid, larger for every later holder of this
    /// lock across the ensemble. Pass it to the resource you protect and have it reject writes
    /// with a token lower than the highest it has seen.
    pub fn fencing_token(&self) -> i64 {
        self.node.fencing_token()
    }

    /// The session our lock node lives with.
    pub fn session(&self) -> &Session {
        self.node.session()
    }

    /// The lock node (path, `Stat`, session).
    pub fn lock_node(&self) -> &LockNode {
        &self.node
    }

    /// How many guards the owner holds (its reentrancy depth).
    pub fn hold_count(&self) -> usize {
        self.slot.hold().count
    }

    /// Has the lock been lost (connection error state under the error policy, or the session
    /// ended)? Answers without a ZooKeeper call; deletion of the node by someone else is seen
    /// by [`lost`](Self::lost) and by guarded writes.
    pub fn is_lost(&self) -> bool {
        self.node.lost_reason(self.inner.internals.zk()).is_some()
    }

    /// Completes when the lock is lost, with the reason. Select on it beside the work the lock
    /// protects and stop the work when it fires.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) -> LostReason {
        self.node.lost(self.inner.internals.zk()).await
    }

    /// Completes when someone asks this holder to release the lock (Curator's revocation:
    /// [`attempt_revoke`](crate::locks::attempt_revoke), or a Curator process's
    /// `Revoker.attemptRevoke`, wrote [`REVOKE_MESSAGE`](crate::locks::REVOKE_MESSAGE) into our node).
    /// Cooperative: the holder decides; select on it beside [`lost`](Self::lost) and release
    /// when it fires. Never completes once the lock is lost. Every guard can be asked; the
    /// watch costs one request when first polled.
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(mutex: zkr_recipes::locks::InterProcessMutex) -> Result<(), zkr_recipes::locks::LockError> {
    /// let guard = mutex.acquire().await?;
    /// tokio::select! {
    ///     () = guard.revoked() => println!("asked to let go"),
    ///     reason = guard.lost() => println!("lost: {reason}"),
    ///     () = tokio::time::sleep(std::time::Duration::from_secs(60)) => println!("done"),
    /// }
    /// guard.release().await
    /// # }
    /// ```
    pub async fn revoked(&self) {
        crate::locks::revoke::revocation_requested(
            self.inner.internals.zk(),
            self.node.session(),
            self.node.path(),
        )
        .await
    }

    /// A [`Transaction`] that applies only while our lock node exists: its first operation
    /// checks the node. Add operations and commit it; [`commit`](Self::commit) maps a lost lock
    /// to [`LockError::Lost`]. It is sent once, not retried: after a lost reply the commit fails
    /// with an error whose [`is_ambiguous`](zkr_connection::Classify::is_ambiguous) is true, and the caller
    /// looks at ZooKeeper to learn whether it was applied.
    ///
    /// # Errors
    /// [`LockError::Lost`] once the guard knows the lock is lost ([`is_lost`](Self::is_lost)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(guard: zkr_recipes::locks::InterProcessMutexGuard) -> Result<(), zkr_recipes::locks::LockError> {
    /// let txn = guard.transaction()?.set_data("/stock/apples", b"41", Some(7)).create(
    ///     "/sales/sale-",
    ///     b"apples",
    ///     zkr_connection::zookeeper_client::CreateMode::PersistentSequential,
    /// );
    /// guard.commit(txn).await?;
    /// # Ok(()) }
    /// ```
    pub fn transaction(&self) -> Result<Transaction, LockError> {
        self.node.fenced_transaction(self.inner.internals.zk(), self.inner.internals.base_path())
    }

    /// Commits a transaction made by [`transaction`](Self::transaction) and answers the results
    /// of the operations added after the lock check.
    ///
    /// # Errors
    /// [`LockError::Lost`] when the guard knew the lock was lost before sending (nothing was
    /// sent), or with [`LostReason::NodeDeleted`] when the server found our node gone (nothing
    /// was applied); the other failures as [`LockError::Connection`] (a refused operation as
    /// [`zkr_connection::Error::TransactionFailed`], its index counting the check). A lost
    /// reply, or the session ending while the commit was in flight, gives an error whose
    /// [`is_ambiguous`](zkr_connection::Classify::is_ambiguous) is true: it may have been applied.
    ///
    /// # Cancel safety
    /// The multi-op is atomic; dropped, it was applied entirely or not at all.
    pub async fn commit(&self, transaction: Transaction) -> Result<Vec<MultiWriteResult>, LockError> {
        self.node
            .commit_fenced(self.inner.internals.zk(), self.inner.internals.base_path(), transaction)
            .await
    }

    /// Sets `path`'s data only while we hold the lock (a multi-op behind a check of our node).
    ///
    /// # Errors
    /// As [`commit`](Self::commit).
    ///
    /// # Cancel safety
    /// The write is atomic; if the future is dropped it may or may not have been applied.
    pub async fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<Stat, LockError> {
        let (zk, base) = (self.inner.internals.zk(), self.inner.internals.base_path());
        self.node.fenced_set_data(zk, base, (path, data, expected_version)).await
    }

    /// Creates a node only while we hold the lock; returns its path (with the sequence for
    /// sequential modes) and `Stat`.
    ///
    /// # Errors
    /// As [`commit`](Self::commit).
    ///
    /// # Cancel safety
    /// As [`set_data`](Self::set_data).
    pub async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat), LockError> {
        let (zk, base) = (self.inner.internals.zk(), self.inner.internals.base_path());
        self.node.fenced_create(zk, base, (path, data, mode)).await
    }

    /// Deletes a node only while we hold the lock.
    ///
    /// # Errors
    /// As [`commit`](Self::commit).
    ///
    /// # Cancel safety
    /// As [`set_data`](Self::set_data).
    pub async fn delete(&self, path: &str, expected_version: Option<i32>) -> Result<(), LockError> {
        let (zk, base) = (self.inner.internals.zk(), self.inner.internals.base_path());
        self.node.fenced_delete(zk, base, (path, expected_version)).await
    }

    /// Takes this guard's share of the hold away; `Some(node)` when it was the owner's last,
    /// so the node must be deleted.
    fn unhold(&mut self) -> Option<Arc<LockNode>> {
        if self.released {
            return None;
        }
        self.released = true;
        let last = {
            let mut hold = self.slot.hold();
            hold.count = hold.count.saturating_sub(1);
            if hold.count == 0 {
                hold.node.take()
            } else {
                None
            }
        };
        if last.is_some() {
            self.inner.retire(self.owner, &self.slot);
        }
        last
    }

    /// Releases this guard. When it is the owner's last, the lock node is deleted (a connection
    /// failure hands the delete to a background task that keeps trying).
    ///
    /// # Errors
    /// [`LockError::Lost`] when the lock had been lost while held (the node is cleaned up all
    /// the same), as known before the release or as its delete found it: the node already gone
    /// (deleted by someone else, or with an expired session nobody had noticed yet), or the
    /// session ended with the delete in flight. (Curator's `release()` ignores a node already
    /// gone.) [`LockError::Connection`] for a ZooKeeper answer such as `NoAuth`.
    ///
    /// # Cancel safety
    /// Cancel safe: the hold is given up at the first poll, and if the future is dropped before
    /// the delete is answered, the node is deleted in the background.
    pub async fn release(mut self) -> Result<(), LockError> {
        let lost = self.node.lost_reason(self.inner.internals.zk());
        let Some(node) = self.unhold() else {
            return match lost {
                Some(reason) => {
                    Err(LockError::Lost { path: self.inner.internals.base_path().to_string(), reason })
                }
                None => Ok(()),
            };
        };
        // The delete's reply is awaited in place; dropped mid-way, the rest goes on (and
        // retries if it must) in the background.
        let sent = self.inner.internals.send_release(&node);
        let inner = self.inner.clone();
        let found =
            zkr_connection::detach_on_drop(async move { inner.internals.finish_release(&node, sent).await })
                .await?;
        match lost.or(found) {
            Some(reason) => {
                Err(LockError::Lost { path: self.inner.internals.base_path().to_string(), reason })
            }
            None => Ok(()),
        }
    }
}

/// Releases `node` in the background: the delete is sent now, its reply awaited when the guard
/// is dropped.
fn background_release<D: LockInternalsDriver>(inner: Arc<Inner<D>>, node: Arc<LockNode>) -> DropGuard {
    // The delete is sent now, so it goes ahead of whatever this task sends next (the next
    // acquire's create); only its reply is awaited in the background.
    let sent = inner.internals.send_release(&node);
    DropGuard::new("a dropped lock guard", async move {
        if let Err(e) = inner.internals.finish_release(&node, sent).await {
            tracing::warn!(node = %node.path(), error = %e, "releasing a dropped lock guard failed");
        }
    })
}

impl<D: LockInternalsDriver> Drop for InterProcessMutexGuard<D> {
    fn drop(&mut self) {
        if let Some(node) = self.unhold() {
            // Dropped armed: the release goes on in the background.
            drop(background_release(self.inner.clone(), node));
        }
    }
}
