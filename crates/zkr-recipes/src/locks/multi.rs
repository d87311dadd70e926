//! `InterProcessMultiLock`: several locks taken as one, all or nothing.

use std::time::Duration;

use zkr_connection::Deadline;

use super::{
    InterProcessMutex, InterProcessMutexGuard, InterProcessSemaphoreMutex, Lease, LockError,
    LockInternalsDriver, LostReason,
};

/// A lock that [`InterProcessMultiLock`] can take: Curator's `InterProcessLock`. Object safe
/// (`async-trait`), so one multi-lock mixes kinds.
#[async_trait::async_trait]
pub trait Lockable: Send + Sync + std::fmt::Debug {
    /// Takes the lock, waiting at most until `deadline` (forever without one): `Ok(None)` when
    /// the deadline passed.
    ///
    /// # Errors
    /// The lock's own errors.
    ///
    /// # Cancel safety
    /// Cancel safe for every implementation in zkr.
    async fn lock_until(&self, deadline: Option<Deadline>) -> Result<Option<Box<dyn Held>>, LockError>;
}

/// A held lock inside an [`InterProcessMultiLock`].
#[async_trait::async_trait]
pub trait Held: Send + Sync + std::fmt::Debug {
    /// Has it been lost? Answers without a ZooKeeper call.
    fn is_lost(&self) -> bool;

    /// Completes when it is lost, with the reason.
    ///
    /// # Cancel safety
    /// Cancel safe.
    async fn lost(&self) -> LostReason;

    /// Releases it.
    ///
    /// # Errors
    /// The lock's own release errors.
    ///
    /// # Cancel safety
    /// Cancel safe for every implementation in zkr (a dropped release finishes in the
    /// background).
    async fn release(self: Box<Self>) -> Result<(), LockError>;
}

#[async_trait::async_trait]
impl<D: LockInternalsDriver> Lockable for InterProcessMutex<D> {
    async fn lock_until(&self, deadline: Option<Deadline>) -> Result<Option<Box<dyn Held>>, LockError> {
        let guard = self.acquire_until(deadline).await?;
        Ok(guard.map(|g| Box::new(g) as Box<dyn Held>))
    }
}

#[async_trait::async_trait]
impl<D: LockInternalsDriver> Held for InterProcessMutexGuard<D> {
    fn is_lost(&self) -> bool {
        InterProcessMutexGuard::is_lost(self)
    }

    async fn lost(&self) -> LostReason {
        InterProcessMutexGuard::lost(self).await
    }

    async fn release(self: Box<Self>) -> Result<(), LockError> {
        (*self).release().await
    }
}

#[async_trait::async_trait]
impl Lockable for InterProcessSemaphoreMutex {
    async fn lock_until(&self, deadline: Option<Deadline>) -> Result<Option<Box<dyn Held>>, LockError> {
        let lease = self.acquire_until(deadline).await?;
        Ok(lease.map(|l| Box::new(l) as Box<dyn Held>))
    }
}

#[async_trait::async_trait]
impl Held for Lease {
    fn is_lost(&self) -> bool {
        Lease::is_lost(self)
    }

    async fn lost(&self) -> LostReason {
        Lease::lost(self).await
    }

    async fn release(self: Box<Self>) -> Result<(), LockError> {
        (*self).release().await
    }
}

/// Several locks taken as one: Apache Curator's `InterProcessMultiLock`. They are taken in
/// the order given; if one cannot be taken (an error, or the deadline), the ones already held
/// are released, in reverse order, and nothing is held. [`MultiLockGuard::release`] releases
/// in reverse order too. Give every process the same order to avoid deadlocks.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use zkr_recipes::locks::{InterProcessMultiLock, InterProcessMutex};
///
/// let both = InterProcessMultiLock::new(vec![
///     Box::new(InterProcessMutex::new(&zk, "/locks/account-17")?),
///     Box::new(InterProcessMutex::new(&zk, "/locks/account-42")?),
/// ]);
/// let held = both.acquire().await?;
/// // ... move money between the two accounts ...
/// held.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct InterProcessMultiLock {
    locks: Vec<Box<dyn Lockable>>,
}

/// Every lock of an [`InterProcessMultiLock`], held.
#[derive(Debug)]
#[must_use = "dropping the guard releases every lock in the background"]
pub struct MultiLockGuard {
    held: Vec<Box<dyn Held>>,
}

impl InterProcessMultiLock {
    /// A multi-lock over `locks`, taken in this order.
    pub fn new(locks: Vec<Box<dyn Lockable>>) -> Self {
        InterProcessMultiLock { locks }
    }

    /// Takes every lock, waiting as long as it takes.
    ///
    /// # Errors
    /// The first error of a lock; every lock taken before it is released first.
    ///
    /// # Cancel safety
    /// Cancel safe: locks already taken are released in the background.
    pub async fn acquire(&self) -> Result<MultiLockGuard, LockError> {
        match self.acquire_until(None).await? {
            Some(guard) => Ok(guard),
            None => Err(LockError::IllegalState {
                path: String::new(),
                reason: "a multi-lock without a deadline timed out",
            }),
        }
    }

    /// Takes every lock within `timeout` in all (not each): `Ok(None)`, holding nothing, when
    /// that is not possible.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<MultiLockGuard>, LockError> {
        self.acquire_until(Some(Deadline::after(timeout))).await
    }

    async fn acquire_until(&self, deadline: Option<Deadline>) -> Result<Option<MultiLockGuard>, LockError> {
        let mut guard = MultiLockGuard { held: Vec::with_capacity(self.locks.len()) };
        for lock in &self.locks {
            match lock.lock_until(deadline).await {
                Ok(Some(held)) => guard.held.push(held),
                Ok(None) => {
                    guard.release().await?;
                    return Ok(None);
                }
                Err(e) => {
                    let _ = guard.release().await;
                    return Err(e);
                }
            }
        }
        Ok(Some(guard))
    }
}

impl MultiLockGuard {
    /// How many locks are held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// None held?
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Has any of the locks been lost? Answers without a ZooKeeper call.
    pub fn is_lost(&self) -> bool {
        self.held.iter().any(|h| h.is_lost())
    }

    /// Completes when the first of the locks is lost, with its reason: the multi-lock no
    /// longer holds everything, so the work it protects must stop. Never completes for an
    /// empty guard.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) -> LostReason {
        if self.held.is_empty() {
            return std::future::pending().await;
        }
        futures::future::select_all(self.held.iter().map(|h| h.lost())).await.0
    }

    /// Releases every lock, the last taken first. All are released even when one fails; the
    /// first error is returned.
    ///
    /// # Errors
    /// The first release error.
    ///
    /// # Cancel safety
    /// Cancel safe: the rest are released in the background (each guard's drop).
    pub async fn release(mut self) -> Result<(), LockError> {
        let mut first_error = None;
        while let Some(held) = self.held.pop() {
            if let Err(e) = held.release().await {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for MultiLockGuard {
    fn drop(&mut self) {
        // Each held lock's own drop releases it in the background; drop in reverse order.
        while let Some(held) = self.held.pop() {
            drop(held);
        }
    }
}
