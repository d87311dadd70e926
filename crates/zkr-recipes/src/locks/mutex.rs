//! [`InterProcessMutex`]: Curator's reentrant distributed lock, reentrant per tokio task.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use parking_lot::Mutex as SyncMutex;
use zkr_connection::{Deadline, DropGuard, Session, Transaction, ZkClient};
use zookeeper_client::{CreateMode, MultiWriteResult, Stat};

use super::driver::{LockInternalsDriver, StandardLockInternalsDriver};
use super::error::LockError;
use super::internals::{LockInternals, LockNode, Wait};
use super::owner::Holder;
use crate::fence::LostReason;

mod debug;

/// Curator's `InterProcessMutex.LOCK_NAME`.
pub use crate::layouts::LOCK_NAME;

/// What one owner (task or thread) holds: the node and how many guards are out.
#[derive(Debug, Default)]
struct Hold {
    node: Option<Arc<LockNode>>,
    count: usize,
    /// Acquires under way in this slot: it must stay in the map while one is (a guard released
    /// on another task would otherwise retire the slot under a re-acquire).
    acquiring: usize,
}

/// One owner's entry: a gate that serialises its acquisitions (so two futures of one task do
/// not both create nodes) and its hold.
#[derive(Debug, Default)]
struct OwnerSlot {
    gate: tokio::sync::Mutex<()>,
    hold: SyncMutex<Hold>,
}

impl OwnerSlot {
    fn hold(&self) -> parking_lot::MutexGuard<'_, Hold> {
        self.hold.lock()
    }
}

#[derive(Debug)]
struct Inner<D> {
    internals: LockInternals<D>,
    holders: DashMap<Holder, Arc<OwnerSlot>>,
}

impl<D> Inner<D> {
    /// Removes `owner`'s entry if it is still `slot` and holds nothing (task ids are reused once
    /// a task is gone, so empty entries must not linger).
    fn retire(&self, owner: Holder, slot: &Arc<OwnerSlot>) {
        self.holders.remove_if(&owner, |_, s| {
            let hold = s.hold();
            Arc::ptr_eq(s, slot) && hold.node.is_none() && hold.acquiring == 0
        });
    }
}

/// A distributed lock shared by every process that uses the same path: Curator's
/// `InterProcessMutex`, node for node (`_c_<uuid>-lock-<seq>` under the path), so Rust and Java
/// processes exclude each other.
///
/// - **Reentrant per tokio task**: the task that holds it can acquire it again with no
///   ZooKeeper call (a new guard, a higher count); the node is deleted when that task's last
///   guard is released. Two tasks sharing one `InterProcessMutex` exclude each other. Code
///   outside any task (directly in `block_on`, such as `#[tokio::main]`) is owned by its
///   thread. Futures joined inside one task share its ownership; see [`LockOwner`](super::LockOwner).
/// - **Fair and herd-free**: contenders queue by sequence; each waits on the node ahead of it
///   only, in every process and inside one (a release wakes exactly one waiter).
/// - **Lost signal and fencing**: the guard tells when the lock is lost
///   ([`lost`](InterProcessMutexGuard::lost), [`is_lost`](InterProcessMutexGuard::is_lost)),
///   carries a [`fencing_token`](InterProcessMutexGuard::fencing_token), and can write to
///   ZooKeeper only while the lock node exists (guarded writes).
/// - **Cancellation safe**: dropping an `acquire` future at any point leaves no node behind.
///
/// It is a cheap `Clone` handle; clones share the reentrancy bookkeeping.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zkr_connection::ZkClient;
/// use zkr_recipes::locks::InterProcessMutex;
///
/// let zk = ZkClient::connect("127.0.0.1:2181").await?;
/// let mutex = InterProcessMutex::new(&zk, "/locks/nightly-report")?;
/// match mutex.acquire_timeout(Duration::from_secs(5)).await? {
///     Some(guard) => {
///         println!("holding {} (token {})", guard.node_path(), guard.fencing_token());
///         tokio::select! {
///             _ = do_the_work() => {}
///             reason = guard.lost() => eprintln!("lock lost: {reason}; stopping"),
///         }
///         guard.release().await?;
///     }
///     None => println!("someone else is running the report"),
/// }
/// # Ok(()) }
/// # async fn do_the_work() {}
/// ```
pub struct InterProcessMutex<D = StandardLockInternalsDriver> {
    inner: Arc<Inner<D>>,
}

impl<D> Clone for InterProcessMutex<D> {
    fn clone(&self) -> Self {
        InterProcessMutex { inner: self.inner.clone() }
    }
}

impl InterProcessMutex {
    /// A mutex at `path` with Curator's naming.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for `/`, an invalid path (or one in the reserved `/zookeeper`
    /// tree).
    pub fn new(zk: &ZkClient, path: &str) -> Result<Self, LockError> {
        Self::with_driver(zk, path, StandardLockInternalsDriver)
    }
}

impl<D: LockInternalsDriver> InterProcessMutex<D> {
    /// A mutex at `path` whose contender nodes the given driver names and orders (for example
    /// [`KazooLockDriver`](super::KazooLockDriver) to share a lock with kazoo).
    ///
    /// # Errors
    /// As [`new`](InterProcessMutex::new).
    pub fn with_driver(zk: &ZkClient, path: &str, driver: D) -> Result<Self, LockError> {
        let lock_name = driver.lock_name().to_owned();
        Self::with_lock_name(zk, path, &lock_name, driver)
    }

    /// A mutex at `path` whose contender nodes carry `lock_name` instead of the driver's
    /// (`lock-` for Curator's naming): `_c_<uuid>-<lock_name><sequence>` with the standard
    /// driver. Every process sharing the lock must use the same name; contenders under
    /// another name are not seen.
    ///
    /// # Errors
    /// As [`new`](InterProcessMutex::new), and [`LockError::InvalidArgument`] for an empty
    /// lock name or one ZooKeeper cannot take in a node name (a `/`, a control character).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
    /// use zkr_recipes::locks::{InterProcessMutex, StandardLockInternalsDriver};
    ///
    /// let lock = InterProcessMutex::with_lock_name(&zk, "/jobs/nightly", "job-", StandardLockInternalsDriver)?;
    /// let guard = lock.acquire().await?; // holds /jobs/nightly/_c_<uuid>-job-0000000000
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_lock_name(zk: &ZkClient, path: &str, lock_name: &str, driver: D) -> Result<Self, LockError> {
        Self::from_internals(LockInternals::new(zk, path, lock_name, driver, 1)?)
    }

    /// A mutex on prepared [`LockInternals`] (a custom lock name, node data).
    ///
    /// # Errors
    /// None today; the `Result` keeps room for validation.
    pub fn from_internals(internals: LockInternals<D>) -> Result<Self, LockError> {
        Ok(InterProcessMutex { inner: Arc::new(Inner { internals, holders: DashMap::new() }) })
    }

    /// Acquires the lock, waiting as long as it takes.
    ///
    /// # Errors
    /// [`LockError::Connection`] when ZooKeeper cannot be reached within the retry policy or
    /// the manager is closed; [`LockError::NodeVanished`] when our node kept vanishing.
    ///
    /// # Cancel safety
    /// Cancel safe: if the future is dropped, the caller loses its place in the queue and no
    /// node is left in ZooKeeper (a background task deletes it). A reentrant acquire (the task
    /// already holds the lock) completes at once.
    pub async fn acquire(&self) -> Result<InterProcessMutexGuard<D>, LockError> {
        // `Wait::Forever` never yields `Ok(None)` (that needs a deadline or `NoWait`); should it
        // ever, report it as the manager closing rather than panic.
        self.acquire_inner(Wait::Forever).await?.ok_or(LockError::Connection(zkr_connection::Error::Closed))
    }

    /// Acquires the lock if it can within `timeout`, which bounds everything: creating our
    /// node, waiting, and retries. `Ok(None)` when it could not; our node is then deleted.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<InterProcessMutexGuard<D>>, LockError> {
        self.acquire_inner(Wait::timeout(timeout)).await
    }

    /// Acquires the lock before `deadline` (forever without one): a step of a caller's call
    /// whose timeout began earlier, so that errors name the caller's timeout.
    pub(crate) async fn acquire_until(
        &self,
        deadline: Option<Deadline>,
    ) -> Result<Option<InterProcessMutexGuard<D>>, LockError> {
        self.acquire_inner(Wait::until(deadline)).await
    }

    /// Takes the lock only if nobody holds it: creates our node and, unless it is first,
    /// deletes it again. `Ok(None)` when the lock is held.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<InterProcessMutexGuard<D>>, LockError> {
        self.acquire_inner(Wait::NoWait).await
    }

    /// As [`acquire_until`](Self::acquire_until), for this call alone: not reentrant, even
    /// for futures joined in the caller's task.
    pub(crate) async fn acquire_alone(
        &self,
        wait: Wait,
    ) -> Result<Option<InterProcessMutexGuard<D>>, LockError> {
        self.acquire_as(Holder::call(), wait).await
    }

    async fn acquire_inner(&self, wait: Wait) -> Result<Option<InterProcessMutexGuard<D>>, LockError> {
        self.acquire_as(Holder::current(), wait).await
    }

    async fn acquire_as(
        &self,
        owner: Holder,
        wait: Wait,
    ) -> Result<Option<InterProcessMutexGuard<D>>, LockError> {
        loop {
            let slot = self.inner.holders.entry(owner).or_default().clone();
            // Retires the entry if we leave (error, timeout, cancellation) without a hold.
            let mut retire = RetireOnExit { inner: &self.inner, owner, slot: &slot, acquiring: false };
            let Some(_gate) = zkr_connection::within(wait.deadline(), slot.gate.lock()).await else {
                return Ok(None);
            };
            // Checked and marked under the map's lock, so no retire slips in between.
            let current = self.inner.holders.get(&owner).is_some_and(|s| {
                Arc::ptr_eq(&s, &slot) && {
                    slot.hold().acquiring += 1;
                    true
                }
            });
            retire.acquiring = current;
            if !current {
                // The entry was retired while we waited for its gate: take a fresh one.
                drop(retire);
                continue;
            }
            {
                let mut hold = slot.hold();
                if let Some(node) = hold.node.clone() {
                    hold.count += 1;
                    drop(hold);
                    drop(retire);
                    return Ok(Some(InterProcessMutexGuard::new(
                        self.inner.clone(),
                        owner,
                        slot.clone(),
                        node,
                    )));
                }
            }
            let node = self.inner.internals.attempt_lock(wait).await?;
            let Some(node) = node else { return Ok(None) };
            let node = Arc::new(node);
            {
                let mut hold = slot.hold();
                hold.node = Some(node.clone());
                hold.count = 1;
            }
            drop(retire);
            return Ok(Some(InterProcessMutexGuard::new(self.inner.clone(), owner, slot.clone(), node)));
        }
    }

    /// Does any task or thread of this process hold the lock through this mutex (or a clone)?
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.inner.holders.iter().any(|e| e.value().hold().node.is_some())
    }

    /// The name of the lock node the current task holds, if it holds the lock.
    pub fn owned_node_name(&self) -> Option<String> {
        self.inner
            .holders
            .get(&Holder::current())
            .and_then(|s| s.hold().node.as_ref().map(|n| n.name().to_owned()))
    }

    /// Does the current task (or thread, outside tasks) hold the lock?
    pub fn is_owned_by_current_task(&self) -> bool {
        self.inner.holders.get(&Holder::current()).is_some_and(|s| s.hold().node.is_some())
    }

    /// Every contender's full path in queue order, the holder first.
    ///
    /// # Errors
    /// As [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// Cancel safe (read-only).
    pub async fn participant_nodes(&self) -> Result<Vec<String>, LockError> {
        self.inner.internals.participant_nodes().await
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        self.inner.internals.base_path()
    }

    /// The shared lock machinery.
    pub fn internals(&self) -> &LockInternals<D> {
        &self.inner.internals
    }
}

/// Ends an acquire's claim on its slot: unmarks it (when it was marked as acquiring) and
/// retires it if it holds nothing then.
struct RetireOnExit<'a, D> {
    inner: &'a Inner<D>,
    owner: Holder,
    slot: &'a Arc<OwnerSlot>,
    acquiring: bool,
}

impl<D> Drop for RetireOnExit<'_, D> {
    fn drop(&mut self) {
        if self.acquiring {
            self.slot.hold().acquiring -= 1;
        }
        self.inner.retire(self.owner, self.slot);
    }
}

/// Proof of holding an [`InterProcessMutex`]: one per successful acquire (reentrant acquires
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
    owner: Holder,
    slot: Arc<OwnerSlot>,
    node: Arc<LockNode>,
    released: bool,
}

impl<D: LockInternalsDriver> InterProcessMutexGuard<D> {
    fn new(inner: Arc<Inner<D>>, owner: Holder, slot: Arc<OwnerSlot>, node: Arc<LockNode>) -> Self {
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
    /// [`attempt_revoke`](super::attempt_revoke), or a Curator process's
    /// `Revoker.attemptRevoke`, wrote [`REVOKE_MESSAGE`](super::REVOKE_MESSAGE) into our node).
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
        super::revoke::revocation_requested(self.inner.internals.zk(), self.node.session(), self.node.path())
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
        // The delete is answered in a task of its own, which goes on (and retries in the
        // background if it must) when this future is dropped mid-way.
        let sent = self.inner.internals.send_release(&node);
        let inner = self.inner.clone();
        let finishing = tokio::spawn(async move { inner.internals.finish_release(&node, sent).await });
        let found = finishing
            .await
            .map_err(|e| LockError::zk(zookeeper_client::Error::UnexpectedError(e.to_string())))??;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 16 item 13, step by step: a guard released on another task clears the node and
    /// retires the slot while the owner's new acquire is under way in it. The slot must stay
    /// in the map, or the new hold lives where `is_owned_by_current_task` and reentrant
    /// acquires cannot see it.
    #[tokio::test]
    async fn a_release_elsewhere_does_not_retire_a_slot_an_acquire_is_using() {
        let zk = ZkClient::builder("127.0.0.1:1").start().await.unwrap();
        let mutex = InterProcessMutex::new(&zk, "/t-slot").unwrap();
        let owner = Holder::current();
        let slot = mutex.inner.holders.entry(owner).or_default().clone();
        // The owner's acquire has checked the slot and marked it (as acquire_inner does under
        // the map's lock); the released guard's retire runs now.
        let acquire = RetireOnExit { inner: &mutex.inner, owner, slot: &slot, acquiring: true };
        slot.hold().acquiring += 1;
        mutex.inner.retire(owner, &slot);
        assert!(mutex.inner.holders.get(&owner).is_some_and(|s| Arc::ptr_eq(&s, &slot)));
        // The acquire gives up without a hold: then the slot goes.
        drop(acquire);
        assert!(mutex.inner.holders.get(&owner).is_none());
    }
}
