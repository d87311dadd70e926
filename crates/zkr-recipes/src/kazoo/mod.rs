//! kazoo's recipes in kazoo's layouts, for fleets that move from Python to Rust one service at
//! a time: a zkr process and a process using kazoo (2.x) on the same path share the recipe.
//!
//! | kazoo | zkr |
//! |---|---|
//! | `Lock(path, identifier)` | [`InterProcessMutex::with_driver(zk, path, KazooLockDriver)`](crate::locks::KazooLockDriver) |
//! | `ReadLock`, `WriteLock` | [`InterProcessReadWriteLock::kazoo`](crate::locks::InterProcessReadWriteLock::kazoo) |
//! | `Semaphore(path, identifier, max_leases)` | [`Semaphore`] |
//! | `Counter(path, default)` (`support_curator=True`: [`Counter::support_curator`]) | [`Counter`] |
//! | `Party`, `ShallowParty` | [`Party`], [`ShallowParty`] |
//! | `Election(path, identifier)` | [`Election`] |
//! | `NonBlockingLease`, `MultiNonBlockingLease` | [`NonBlockingLease`], [`MultiNonBlockingLease`] |
//! | `Queue` | [`SimpleDistributedQueue::kazoo`](crate::queues::SimpleDistributedQueue::kazoo) |
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
mod semaphore;

pub use counter::{Counter, KazooNumber};
pub use election::Election;
pub use lease::{MultiNonBlockingLease, NonBlockingLease};
pub use party::{Party, ShallowParty};
pub use semaphore::Semaphore;

use crate::locks::{InterProcessMutex, KazooLockDriver, LockError, LockInternals};
use zkr_connection::ZkClient;

/// kazoo's `Lock(path, identifier)`: its contender nodes hold the identifier.
pub(crate) fn kazoo_lock(
    zk: &ZkClient,
    path: &str,
    identifier: &str,
) -> Result<InterProcessMutex<KazooLockDriver>, LockError> {
    let internals = LockInternals::new(zk, path, KazooLockDriver::LOCK_NAME, KazooLockDriver, 1)?
        .with_node_data(identifier.as_bytes().to_vec())?;
    InterProcessMutex::from_internals(internals)
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
