//! Curator's `PromotedToLock`: the lock an atomic value falls back to when its optimistic tries
//! run out.

use std::sync::Arc;
use std::time::Duration;

use zkr_connection::retry::{RetryNTimes, RetryPolicy};

/// Where and how long an atomic value waits for a lock when its optimistic tries run out, and
/// how often it tries again holding it: Curator's `PromotedToLock`.
///
/// Holding the lock, the value still writes with the version it read (Curator's protocol), so
/// writers that do not take the lock (other processes, or values without promotion) stay
/// correct; the lock only keeps the promoted writers from racing each other.
///
/// # Examples
///
/// ```no_run
/// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
/// use std::time::Duration;
/// use zkr_connection::retry::RetryNTimes;
/// use zkr_recipes::counters::{DistributedAtomicLong, PromotedToLock};
///
/// let promotion = PromotedToLock::new("/locks/visits")
///     .timeout(Duration::from_secs(5))
///     .retry_policy(RetryNTimes::new(3, Duration::from_millis(10)));
/// let visits = DistributedAtomicLong::new(&zk, "/counters/visits", RetryNTimes::new(2, Duration::ZERO))?
///     .promoted_to_lock(promotion)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a PromotedToLock does nothing until given to promoted_to_lock()"]
pub struct PromotedToLock {
    pub(crate) lock_path: String,
    pub(crate) timeout: Option<Duration>,
    pub(crate) retry_policy: Arc<dyn RetryPolicy>,
}

impl PromotedToLock {
    /// A promotion to an `InterProcessMutex` at `lock_path` (checked when it is given to
    /// [`promoted_to_lock`](crate::counters::DistributedAtomicValue::promoted_to_lock)).
    ///
    /// # Examples
    ///
    /// ```
    /// let promotion = zkr_recipes::counters::PromotedToLock::new("/locks/visits");
    /// assert_eq!(promotion.lock_path(), "/locks/visits");
    /// ```
    pub fn new(lock_path: impl Into<String>) -> Self {
        PromotedToLock {
            lock_path: lock_path.into(),
            timeout: None,
            retry_policy: Arc::new(RetryNTimes::new(0, Duration::ZERO)),
        }
    }

    /// How long to wait for the lock; when it passes, the operation ends without success.
    /// Defaults to no limit (Curator's default).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let promotion = zkr_recipes::counters::PromotedToLock::new("/locks/v").timeout(Duration::from_secs(2));
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How often to try again, holding the lock, when a try still loses (to a writer that
    /// does not take the lock). Defaults to `RetryNTimes(0, 0)`: one try (Curator's default).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zkr_connection::retry::RetryNTimes;
    /// let promotion = zkr_recipes::counters::PromotedToLock::new("/locks/v").retry_policy(RetryNTimes::new(5, Duration::from_millis(1)));
    /// ```
    pub fn retry_policy(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.retry_policy = Arc::new(policy);
        self
    }

    /// The lock's path.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zkr_recipes::counters::PromotedToLock::new("/locks/v").lock_path(), "/locks/v");
    /// ```
    pub fn lock_path(&self) -> &str {
        &self.lock_path
    }
}
