//! What `zkr lock` holds while the command runs: the mutex (Curator's `InterProcessMutex`), a
//! read or write lock (`InterProcessReadWriteLock`, `--shared`/`--exclusive`), or a lease of a
//! semaphore (`InterProcessSemaphoreV2`, `-n N`). One face for the supervisor.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use zkr_connection::ZkClient;
use zkr_recipes::leader::{LatchState, LeaderLatch, Leadership};
use zkr_recipes::locks::{
    InterProcessMutex, InterProcessMutexGuard, InterProcessReadWriteLock, InterProcessSemaphoreV2, Lease,
    LockError, LostReason, MaxLeases, ReadLockDriver, WriteLockDriver,
};

/// Which recipe `zkr lock` takes at the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `InterProcessMutex` (the default).
    Mutex,
    /// The read side of `InterProcessReadWriteLock` (`--shared`).
    Read,
    /// The write side of `InterProcessReadWriteLock` (`--exclusive`).
    Write,
    /// One of N leases of `InterProcessSemaphoreV2` (`-n N`).
    Leases(usize),
}

/// A held lock or lease.
pub(crate) enum Held {
    Mutex(InterProcessMutexGuard),
    Read(InterProcessMutexGuard<ReadLockDriver>),
    Write(InterProcessMutexGuard<WriteLockDriver>),
    /// A lease, and the client's error epoch when it was taken: a lease counts connection
    /// trouble as a loss only through this (as the client's error policy says for locks).
    Lease(Lease, u64),
    /// Leadership of a `LeaderLatch` election (`zkr elect`), and the term.
    Leader(LeaderLatch, Leadership),
}

/// How long an acquire may wait: `--try`, a deadline, or forever.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    Try,
    Until(Instant),
    Forever,
}

/// Takes `kind` at `path` as `wait` allows: `None` when not acquired in time (or held, for
/// `Wait::Try`).
pub(crate) async fn acquire(
    zk: &ZkClient,
    path: &str,
    kind: Kind,
    wait: Wait,
) -> Result<Option<Held>, LockError> {
    match kind {
        Kind::Mutex => {
            let mutex = InterProcessMutex::new(zk, path)?;
            Ok(on(&mutex, wait).await?.map(Held::Mutex))
        }
        Kind::Read => {
            Ok(on(InterProcessReadWriteLock::new(zk, path)?.read_lock(), wait).await?.map(Held::Read))
        }
        Kind::Write => {
            Ok(on(InterProcessReadWriteLock::new(zk, path)?.write_lock(), wait).await?.map(Held::Write))
        }
        Kind::Leases(n) => {
            let semaphore = InterProcessSemaphoreV2::new(zk, path, MaxLeases::Fixed(n))?;
            let epoch = zk.error_epoch();
            let lease = match wait {
                Wait::Try => semaphore.try_acquire().await?,
                Wait::Until(deadline) => bounded(deadline, semaphore.acquire_timeout(left(deadline))).await?,
                Wait::Forever => Some(semaphore.acquire().await?),
            };
            Ok(lease.map(|lease| Held::Lease(lease, epoch)))
        }
    }
}

/// Acquires a lock as `wait` allows.
async fn on<D>(
    lock: &InterProcessMutex<D>,
    wait: Wait,
) -> Result<Option<InterProcessMutexGuard<D>>, LockError>
where
    D: zkr_recipes::locks::LockInternalsDriver,
{
    match wait {
        Wait::Try => lock.try_acquire().await,
        Wait::Until(deadline) => bounded(deadline, lock.acquire_timeout(left(deadline))).await,
        Wait::Forever => lock.acquire().await.map(Some),
    }
}

fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// The deadline holds from outside too, even while the acquire waits for a connection.
async fn bounded<T>(
    deadline: Instant,
    acquire: impl std::future::Future<Output = Result<Option<T>, LockError>>,
) -> Result<Option<T>, LockError> {
    tokio::time::timeout(left(deadline), acquire).await.unwrap_or(Ok(None))
}

impl Held {
    /// What is held, for messages: `lock`, `lease` or `leadership of`.
    pub(crate) fn what(&self) -> &'static str {
        match self {
            Held::Mutex(_) | Held::Read(_) | Held::Write(_) => "lock",
            Held::Lease(..) => "lease of",
            Held::Leader(..) => "leadership of",
        }
    }

    /// The lock or lease node.
    pub(crate) fn node_path(&self) -> &str {
        match self {
            Held::Mutex(g) => g.node_path(),
            Held::Read(g) => g.node_path(),
            Held::Write(g) => g.node_path(),
            Held::Lease(l, _) => l.node_path(),
            Held::Leader(_, term) => &term.node,
        }
    }

    /// The node's czxid: grows with every new holder.
    pub(crate) fn fencing_token(&self) -> i64 {
        match self {
            Held::Mutex(g) => g.fencing_token(),
            Held::Read(g) => g.fencing_token(),
            Held::Write(g) => g.fencing_token(),
            Held::Lease(l, _) => l.fencing_token(),
            Held::Leader(_, term) => term.fencing_token,
        }
    }

    /// Completes when the hold is lost.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub(crate) async fn lost(&self, zk: &ZkClient) -> LostReason {
        match self {
            Held::Mutex(g) => g.lost().await,
            Held::Read(g) => g.lost().await,
            Held::Write(g) => g.lost().await,
            Held::Lease(l, epoch) => {
                let mut epochs = zk.error_epoch_watch();
                tokio::select! {
                    reason = l.lost() => reason,
                    _ = epochs.wait_for(|e| e > epoch) => LostReason::ConnectionState,
                }
            }
            Held::Leader(latch, term) => {
                let mut states = latch.state_changes();
                while let Some(state) = states.next().await {
                    if !matches!(&state, LatchState::Leader(t) if t == term) {
                        break;
                    }
                }
                LostReason::ConnectionState
            }
        }
    }

    /// Has the hold been lost already?
    pub(crate) fn is_lost(&self, zk: &ZkClient) -> bool {
        match self {
            Held::Mutex(g) => g.is_lost(),
            Held::Read(g) => g.is_lost(),
            Held::Write(g) => g.is_lost(),
            Held::Lease(l, epoch) => l.is_lost() || zk.error_epoch() > *epoch,
            Held::Leader(latch, term) => !matches!(latch.state(), LatchState::Leader(t) if t == *term),
        }
    }

    /// Lets go.
    ///
    /// # Cancel safety
    /// Cancel safe: each release goes on in the background once started.
    pub(crate) async fn release(self) -> Result<(), LockError> {
        match self {
            Held::Mutex(g) => g.release().await,
            Held::Read(g) => g.release().await,
            Held::Write(g) => g.release().await,
            Held::Lease(l, _) => l.release().await,
            Held::Leader(latch, _) => {
                latch.close().await;
                Ok(())
            }
        }
    }
}
