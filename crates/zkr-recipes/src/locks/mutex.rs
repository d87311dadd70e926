//! [`InterProcessMutex`]: Curator's reentrant distributed lock, reentrant per tokio task.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use parking_lot::Mutex as SyncMutex;
use zkr_connection::{Deadline, ZkClient};

use super::driver::{LockInternalsDriver, StandardLockInternalsDriver};
use super::error::LockError;
use super::internals::{LockInternals, LockNode, Wait};
use super::owner::Holder;

mod debug;
mod guard;

pub use guard::InterProcessMutexGuard;

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
    /// Keyed by this process's task and call ids, which no one else picks: hashed with
    /// rustc's quick hash, not SipHash (an acquire + release hashes its key nine times).
    holders: DashMap<Holder, Arc<OwnerSlot>, rustc_hash::FxBuildHasher>,
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
///   only, in every process and inside one (a release wakes exactly one waiter). With
///   [`LockInternals::prompt_hand_over`] (through [`from_internals`](Self::from_internals)) a
///   waiter watches the node ahead of that one too, so that a hand-over among busy
///   processes needs no listing on its path, at one more watch and notification per acquire.
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
        Ok(InterProcessMutex { inner: Arc::new(Inner { internals, holders: DashMap::default() }) })
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
