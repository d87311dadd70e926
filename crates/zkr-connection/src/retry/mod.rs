//! Retry policies (Curator's, with their exact formulas), and with the `backon` feature an
//! adapter for the `backon` crate's backoffs (with the `backoff` feature, one for the
//! unmaintained `backoff` crate's). The retry loop itself is
//! [`ZkClient::retry`](crate::ZkClient::retry).

#[cfg(feature = "backoff")]
mod backoff;
#[cfg(feature = "backon")]
mod backon;
mod budget;
mod policies;

use std::fmt;
use std::time::Duration;

#[cfg(feature = "backoff")]
pub use self::backoff::BackoffRetry;
#[cfg(feature = "backon")]
pub use self::backon::BackonRetry;
pub use budget::{RetryBudget, SessionPause, Stop};
pub use policies::{
    BoundedExponentialBackoffRetry, ExponentialBackoffRetry, RetryForever, RetryNTimes, RetryOneTime,
    RetryUntilElapsed, SessionFailedRetryPolicy,
};

/// Decides whether and when to retry a failed ZooKeeper operation: Curator's `RetryPolicy`.
///
/// Object safe; the connection manager keeps one as `Arc<dyn RetryPolicy>`. Policies are shared
/// by every retry loop of a manager, so they hold no per-loop state: the loop passes the retry
/// count and the elapsed time.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::retry::RetryPolicy;
///
/// /// Retries three times, 10 ms apart, and never a NoAuth.
/// #[derive(Debug)]
/// struct ThreeQuick;
///
/// impl RetryPolicy for ThreeQuick {
///     fn allow_retry(&self, retry_count: u32, _elapsed: Duration) -> Option<Duration> {
///         (retry_count < 3).then_some(Duration::from_millis(10))
///     }
/// }
/// let policy: Box<dyn RetryPolicy> = Box::new(ThreeQuick);
/// assert_eq!(policy.allow_retry(2, Duration::ZERO), Some(Duration::from_millis(10)));
/// assert_eq!(policy.allow_retry(3, Duration::ZERO), None);
/// ```
pub trait RetryPolicy: Send + Sync + fmt::Debug {
    /// Called after a retryable failure. `retry_count` is the number of retries so far (0 after
    /// the first failure) and `elapsed` the time since the operation started. Returns the delay
    /// before the next attempt, or `None` to give up.
    fn allow_retry(&self, retry_count: u32, elapsed: Duration) -> Option<Duration>;

    /// Whether this kind of error may be retried at all. The default allows what
    /// [`is_retryable`](crate::is_retryable) names (connection loss, operation timeout, session
    /// moved, throttled) and the session errors of [`is_session_error`](crate::is_session_error);
    /// the retry loop retries the latter only when asked to carry on across sessions
    /// ([`RetryOptions::across_sessions`](crate::RetryOptions::across_sessions)).
    fn allow_retry_error(&self, error: &zookeeper_client::Error) -> bool {
        crate::kind::is_retryable(error) || crate::kind::is_session_error(error)
    }
}

impl<P: RetryPolicy + ?Sized> RetryPolicy for std::sync::Arc<P> {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration) -> Option<Duration> {
        (**self).allow_retry(retry_count, elapsed)
    }

    fn allow_retry_error(&self, error: &zookeeper_client::Error) -> bool {
        (**self).allow_retry_error(error)
    }
}
