//! Distributed locks: [`InterProcessMutex`] (start here) and the machinery every lock recipe
//! shares, [`LockInternals`] with a pluggable [`LockInternalsDriver`].
//!
//! | Curator | zkr |
//! |---|---|
//! | `InterProcessMutex` | [`InterProcessMutex`] (reentrant per tokio task, guards) |
//! | `LockInternals` | [`LockInternals`] |
//! | `LockInternalsDriver`, `StandardLockInternalsDriver` | [`LockInternalsDriver`], [`StandardLockInternalsDriver`] |
//! | kazoo's `Lock` naming | [`KazooLockDriver`] |
//! | `InterProcessSemaphoreV2`, `InterProcessSemaphoreMutex` | [`InterProcessSemaphoreV2`], [`InterProcessSemaphoreMutex`] (leases not bound to a task) |
//! | `InterProcessMultiLock` | [`InterProcessMultiLock`] (all or nothing, released in reverse) |
//! | `InterProcessReadWriteLock` | [`InterProcessReadWriteLock`] (readers share, one writer, downgrade, no upgrade) |
//! | `makeRevocable(listener)`, `Revoker.attemptRevoke` | [`InterProcessMutexGuard::revoked`] on every guard, [`attempt_revoke`] |

mod children_wait;
mod driver;
mod error;
mod internals;
mod layout;
mod lease;
mod multi;
mod mutex;
mod owner;
mod read_write;
mod revoke;
mod semaphore;
mod view;

pub use crate::fence::LostReason;
pub(crate) use children_wait::wait_for_children;
pub use driver::{
    ContenderSpec, KazooLockDriver, LockInternalsDriver, PredicateResults, StandardLockInternalsDriver,
};
pub use error::LockError;
pub use internals::{LockInternals, LockNode, Wait};
pub use layout::LockLayout;
pub use multi::{Held, InterProcessMultiLock, Lockable, MultiLockGuard};
pub use mutex::{InterProcessMutex, InterProcessMutexGuard, LOCK_NAME};
pub use owner::LockOwner;
pub use read_write::{
    InterProcessReadWriteLock, ReadLockDriver, WriteLockDriver, KAZOO_READ_LOCK_NAME, KAZOO_WRITE_LOCK_NAME,
    READ_LOCK_NAME, WRITE_LOCK_NAME,
};
pub use revoke::{attempt_revoke, REVOKE_MESSAGE};
pub use semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, MaxLeases, LEASE_NAME};
