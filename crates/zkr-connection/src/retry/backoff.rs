//! [`BackoffRetry`]: a `backoff` crate backoff as a retry policy (feature `backoff`).
//!
//! `backoff` is unmaintained (RUSTSEC-2025-0012), and so is the `instant` crate it depends on
//! (RUSTSEC-2024-0384): the feature is for code that has `backoff` policies already. New code
//! should use the `backon` feature's [`BackonRetry`](super::BackonRetry).

use std::fmt;
use std::time::Duration;

use backoff::backoff::Backoff;
use parking_lot::Mutex;

use super::RetryPolicy;

/// Uses a [`backoff`] backoff as a retry policy: `BackoffRetry::new(ExponentialBackoff::default())`.
///
/// Policies are shared by concurrent retry loops and hold no per-loop state, so for retry `n`
/// the adapter resets the backoff and takes its `n`-th delay (under a lock held that long). The
/// end of the backoff gives up. A backoff's own elapsed-time limit (`max_elapsed_time`)
/// counts from that reset, so it never ends a loop: bound the loop with the retry loop's
/// deadline instead.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use backoff::backoff::Constant;
/// use zkr_connection::retry::{BackoffRetry, RetryPolicy};
///
/// let policy = BackoffRetry::new(Constant::new(Duration::from_millis(30)));
/// assert_eq!(policy.allow_retry(5, Duration::ZERO), Some(Duration::from_millis(30)));
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "backoff")))]
pub struct BackoffRetry<B> {
    backoff: Mutex<B>,
}

impl<B> fmt::Debug for BackoffRetry<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackoffRetry").finish_non_exhaustive()
    }
}

impl<B: Backoff + Send> BackoffRetry<B> {
    /// Adapts `backoff`.
    pub fn new(backoff: B) -> Self {
        BackoffRetry { backoff: Mutex::new(backoff) }
    }
}

impl<B: Backoff + Send> RetryPolicy for BackoffRetry<B> {
    fn allow_retry(&self, retry_count: u32, _elapsed: Duration) -> Option<Duration> {
        let mut backoff = self.backoff.lock();
        backoff.reset();
        let mut delay = backoff.next_backoff();
        for _ in 0..retry_count.min(1024) {
            delay = backoff.next_backoff();
        }
        delay
    }
}

#[cfg(test)]
mod tests {
    use backoff::backoff::Constant;
    use backoff::ExponentialBackoffBuilder;

    use super::*;

    #[test]
    fn the_nth_retry_takes_the_nth_delay_from_a_reset_copy() {
        let exponential = ExponentialBackoffBuilder::new()
            .with_initial_interval(Duration::from_millis(100))
            .with_multiplier(2.0)
            .with_randomization_factor(0.0)
            .with_max_elapsed_time(None)
            .build();
        let policy = BackoffRetry::new(exponential);
        assert_eq!(policy.allow_retry(0, Duration::ZERO), Some(Duration::from_millis(100)));
        assert_eq!(policy.allow_retry(2, Duration::ZERO), Some(Duration::from_millis(400)));
        assert_eq!(policy.allow_retry(2, Duration::ZERO), Some(Duration::from_millis(400)), "no state kept");
        let constant = BackoffRetry::new(Constant::new(Duration::from_millis(7)));
        assert_eq!(constant.allow_retry(1000, Duration::from_secs(60)), Some(Duration::from_millis(7)));
    }
}
