//! kazoo's recipes in kazoo's layouts, for fleets that move from Python to Rust one service at
//! a time: a zkr process and a process using kazoo (2.x) on the same path share the recipe.
//!
//! | kazoo | zkr |
//! |---|---|
//! | `Lock(path, identifier)` | [`InterProcessMutex::kazoo(zk, path, identifier)`](crate::locks::InterProcessMutex::kazoo) |
//! | `ReadLock`, `WriteLock` | [`InterProcessReadWriteLock::kazoo`](crate::locks::InterProcessReadWriteLock::kazoo) |
//! | `Semaphore(path, identifier, max_leases)` | [`Semaphore`] |
//! | `Counter(path, default)` (`support_curator=True`: [`Counter::support_curator`]) | [`Counter`] |
//! | `Party`, `ShallowParty` | [`Party`], [`ShallowParty`] |
//! | `Election(path, identifier)` | [`Election`] |
//! | `NonBlockingLease`, `MultiNonBlockingLease` | [`NonBlockingLease`], [`MultiNonBlockingLease`] |
//! | `Queue` | [`SimpleDistributedQueue::kazoo`](crate::queues::SimpleDistributedQueue::kazoo) |
//! | `LockingQueue` | [`LockingQueue`] |
//! | `Barrier(path)` | [`DistributedBarrier::kazoo`](crate::barriers::DistributedBarrier::kazoo) |
//! | `DoubleBarrier(path, num_clients, identifier)` | [`DistributedDoubleBarrier::kazoo`](crate::barriers::DistributedDoubleBarrier::kazoo) |
//! | `SetPartitioner` | [`SetPartitioner`](crate::partition::SetPartitioner) |
//!
//! Each is built on zkr's shared machinery (the lock internals, semaphore leases, the retried
//! compare-and-set of the counters, persistent nodes), so it keeps zkr's guarantees where
//! kazoo's recipe has none: a party member comes back after a session expiry, a dropped call
//! leaves nothing behind, and the read-write lock does not have kazoo 2.8's deadlock
//! (python-zk/kazoo#649).

mod counter;
mod election;
mod lease;
mod party;
mod queue;
mod semaphore;

pub use counter::{Counter, KazooNumber};
pub use election::Election;
pub use lease::{MultiNonBlockingLease, NonBlockingLease};
pub use party::{Party, ShallowParty};
pub use queue::LockingQueue;
pub use semaphore::Semaphore;

use crate::locks::{InterProcessMutex, KazooLockDriver, LockError, LockInternals};
use zkr_connection::ZkClient;

impl InterProcessMutex<KazooLockDriver> {
    /// kazoo's `Lock(path, identifier)`: a mutex in kazoo's layout whose contender node holds
    /// `identifier`, as kazoo's do, so that kazoo's `contenders()`, `zkr lock-info` and
    /// `zkr ui` name the holder. Shared with Python processes using kazoo's `Lock` (or
    /// `WriteLock`) on the same path.
    ///
    /// # Errors
    /// As [`InterProcessMutex::new`]; [`LockError::InvalidArgument`] for an identifier
    /// ZooKeeper cannot store.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
    /// use zkr_recipes::locks::InterProcessMutex;
    ///
    /// // kazoo: zk.Lock("/app/nightly", "report-writer-1")
    /// let lock = InterProcessMutex::kazoo(&zk, "/app/nightly", "report-writer-1")?;
    /// let guard = lock.acquire().await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn kazoo(zk: &ZkClient, path: &str, identifier: &str) -> Result<Self, LockError> {
        let internals = LockInternals::new(zk, path, KazooLockDriver::LOCK_NAME, KazooLockDriver, 1)?
            .with_node_data(identifier.as_bytes().to_vec())?;
        InterProcessMutex::from_internals(internals)
    }
}

/// kazoo's `ensure_path`: creates `path` holding `data` and its missing ancestors, all
/// persistent, as kazoo does (a container directory would be deleted once empty, and kazoo
/// checks its path only once); `false` when `path` exists.
pub(crate) async fn ensure_path(zk: &ZkClient, path: &str, data: &[u8]) -> zkr_connection::Result<bool> {
    let created = zk.create_node(path).data(data).parents(zkr_connection::Parents::Persistent).await;
    match created {
        Ok(_) => Ok(true),
        Err(e) if e.is_node_exists() => Ok(false),
        Err(e) => Err(e),
    }
}

/// A fresh kazoo node tag: a UUID's 32 hex digits (`uuid.uuid4().hex`).
pub(crate) fn uuid_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}
