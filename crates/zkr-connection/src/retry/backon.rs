//! [`BackonRetry`]: a `backon` backoff as a retry policy (feature `backon`).

use std::fmt;
use std::time::Duration;

use super::RetryPolicy;

/// Uses a [`backon`] backoff as a retry policy: `BackonRetry::new(ExponentialBuilder::default())`.
///
/// Policies are shared by concurrent retry loops and hold no per-loop state, so the adapter
/// keeps the builder: for retry `n` it builds a fresh backoff and takes its `n`-th delay (for a
/// jittered backoff, a draw from the distribution of its `n`-th delay). The end of the backoff
/// gives up. A backoff's own total-delay limit counts only the delays it hands out to this one
/// call; bound the loop with the retry loop's deadline instead.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use backon::{ConstantBuilder, ExponentialBuilder};
/// use zkr_connection::retry::{BackonRetry, RetryPolicy};
///
/// let policy = BackonRetry::new(ConstantBuilder::default().with_delay(Duration::from_millis(30)).with_max_times(3));
/// assert_eq!(policy.allow_retry(2, Duration::ZERO), Some(Duration::from_millis(30)));
/// assert_eq!(policy.allow_retry(3, Duration::ZERO), None);
///
/// let exponential = BackonRetry::new(ExponentialBuilder::default().with_min_delay(Duration::from_millis(100)));
/// assert_eq!(exponential.allow_retry(0, Duration::ZERO), Some(Duration::from_millis(100)));
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "backon")))]
#[derive(Clone)]
pub struct BackonRetry<B> {
    builder: B,
}

impl<B> fmt::Debug for BackonRetry<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackonRetry").finish_non_exhaustive()
    }
}

impl<B: backon::BackoffBuilder + Clone> BackonRetry<B> {
    /// Adapts the backoffs `builder` builds.
    pub fn new(builder: B) -> Self {
        BackonRetry { builder }
    }
}

impl<B: backon::BackoffBuilder + Clone> RetryPolicy for BackonRetry<B> {
    fn allow_retry(&self, retry_count: u32, _elapsed: Duration) -> Option<Duration> {
        self.builder.clone().build().nth(retry_count.min(1024) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backon::ExponentialBuilder;

    #[test]
    fn the_nth_retry_sleeps_the_backoffs_nth_delay_and_its_end_gives_up() {
        let policy = BackonRetry::new(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(100))
                .with_factor(2.0)
                .with_max_times(3),
        );
        // (backon computes in floating point: 200.000003 ms.)
        let ms = |n| policy.allow_retry(n, Duration::ZERO).map(|d| d.as_millis());
        assert_eq!([ms(0), ms(1), ms(2), ms(3)], [Some(100), Some(200), Some(400), None]);
        // Each call builds afresh: asking again gives the same delays.
        assert_eq!(ms(1), Some(200));
    }

    #[test]
    fn it_is_a_policy_the_manager_can_take() {
        let _: std::sync::Arc<dyn RetryPolicy> =
            std::sync::Arc::new(BackonRetry::new(ExponentialBuilder::default()));
    }
}
