//! Curator's retry policies, formula for formula.

use std::fmt;
use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::RetryPolicy;
use crate::error::{Error, Result};

/// Curator clamps `maxRetries` to this (`ExponentialBackoffRetry.MAX_RETRIES_LIMIT`): beyond it
/// `1 << (retryCount + 1)` would overflow an `int`.
const MAX_RETRIES_LIMIT: u32 = 29;
/// Curator's default `maxSleepMs`: `Integer.MAX_VALUE`.
const DEFAULT_MAX_SLEEP: Duration = Duration::from_millis(i32::MAX as u64);

/// Retries a set number of times with a growing, randomised sleep:
/// `base * max(1, rand(1 << (retry_count + 1)))`, capped at `max_sleep` (Curator's
/// `ExponentialBackoffRetry`, from Hadoop). `max_retries` is clamped to 29.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::retry::{ExponentialBackoffRetry, RetryPolicy};
///
/// // Curator's ExponentialBackoffRetry(1000, 3): the default policy of a ZkClient.
/// let policy = ExponentialBackoffRetry::new(Duration::from_secs(1), 3);
/// let sleep = policy.allow_retry(0, Duration::ZERO).unwrap();
/// assert_eq!(sleep, Duration::from_secs(1)); // max(1, rand(2)) is 1
/// assert!(policy.allow_retry(3, Duration::ZERO).is_none());
/// ```
pub struct ExponentialBackoffRetry {
    base: Duration,
    max_retries: u32,
    max_sleep: Duration,
    random: Mutex<StdRng>,
}

impl fmt::Debug for ExponentialBackoffRetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExponentialBackoffRetry")
            .field("base", &self.base)
            .field("max_retries", &self.max_retries)
            .field("max_sleep", &self.max_sleep)
            .finish()
    }
}

impl ExponentialBackoffRetry {
    /// `ExponentialBackoffRetry(baseSleepTimeMs, maxRetries)`.
    pub fn new(base: Duration, max_retries: u32) -> Self {
        Self::with_max_sleep(base, max_retries, DEFAULT_MAX_SLEEP)
    }

    /// `ExponentialBackoffRetry(baseSleepTimeMs, maxRetries, maxSleepMs)`.
    pub fn with_max_sleep(base: Duration, max_retries: u32, max_sleep: Duration) -> Self {
        let max_retries = if max_retries > MAX_RETRIES_LIMIT {
            tracing::warn!(max_retries, limit = MAX_RETRIES_LIMIT, "maxRetries too large; clamped");
            MAX_RETRIES_LIMIT
        } else {
            max_retries
        };
        ExponentialBackoffRetry { base, max_retries, max_sleep, random: Mutex::new(rand::make_rng()) }
    }

    /// Replaces the random source with a seeded one, for reproducible sleeps.
    #[must_use]
    pub fn seeded(self, seed: u64) -> Self {
        ExponentialBackoffRetry { random: Mutex::new(StdRng::seed_from_u64(seed)), ..self }
    }

    /// The base sleep.
    pub fn base(&self) -> Duration {
        self.base
    }

    /// The (clamped) number of retries.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// Curator's `getSleepTimeMs`.
    fn sleep_time(&self, retry_count: u32) -> Duration {
        let bound = 1u64 << (retry_count.min(MAX_RETRIES_LIMIT) + 1);
        let draw = self.random.lock().random_range(0..bound);
        let sleep = self.base.saturating_mul(draw.max(1) as u32);
        if sleep > self.max_sleep {
            tracing::warn!(?sleep, max = ?self.max_sleep, "sleep extension too large; capped");
            self.max_sleep
        } else {
            sleep
        }
    }
}

impl RetryPolicy for ExponentialBackoffRetry {
    fn allow_retry(&self, retry_count: u32, _elapsed: Duration) -> Option<Duration> {
        (retry_count < self.max_retries).then(|| self.sleep_time(retry_count))
    }
}

/// [`ExponentialBackoffRetry`] with every sleep capped at `max_sleep`. Mind the argument order,
/// Curator's: `BoundedExponentialBackoffRetry(baseSleepTimeMs, maxSleepTimeMs, maxRetries)`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::retry::{BoundedExponentialBackoffRetry, RetryPolicy};
///
/// let policy = BoundedExponentialBackoffRetry::new(Duration::from_millis(100), Duration::from_millis(250), 10);
/// for n in 0..10 {
///     assert!(policy.allow_retry(n, Duration::ZERO).unwrap() <= Duration::from_millis(250));
/// }
/// ```
#[derive(Debug)]
pub struct BoundedExponentialBackoffRetry {
    inner: ExponentialBackoffRetry,
    max_sleep: Duration,
}

impl BoundedExponentialBackoffRetry {
    /// `BoundedExponentialBackoffRetry(baseSleepTimeMs, maxSleepTimeMs, maxRetries)`.
    pub fn new(base: Duration, max_sleep: Duration, max_retries: u32) -> Self {
        BoundedExponentialBackoffRetry { inner: ExponentialBackoffRetry::new(base, max_retries), max_sleep }
    }

    /// Replaces the random source with a seeded one.
    #[must_use]
    pub fn seeded(self, seed: u64) -> Self {
        BoundedExponentialBackoffRetry { inner: self.inner.seeded(seed), ..self }
    }
}

impl RetryPolicy for BoundedExponentialBackoffRetry {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration) -> Option<Duration> {
        self.inner.allow_retry(retry_count, elapsed).map(|sleep| sleep.min(self.max_sleep))
    }
}

/// Retries `n` times with a constant sleep: Curator's `RetryNTimes(n, sleepMsBetweenRetries)`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::retry::{RetryNTimes, RetryPolicy};
///
/// let policy = RetryNTimes::new(2, Duration::from_millis(50));
/// assert_eq!(policy.allow_retry(1, Duration::ZERO), Some(Duration::from_millis(50)));
/// assert_eq!(policy.allow_retry(2, Duration::ZERO), None);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RetryNTimes {
    n: u32,
    sleep: Duration,
}

impl RetryNTimes {
    /// `RetryNTimes(n, sleepMsBetweenRetries)`.
    pub fn new(n: u32, sleep: Duration) -> Self {
        RetryNTimes { n, sleep }
    }
}

impl RetryPolicy for RetryNTimes {
    fn allow_retry(&self, retry_count: u32, _elapsed: Duration) -> Option<Duration> {
        (retry_count < self.n).then_some(self.sleep)
    }
}

/// Retries once: Curator's `RetryOneTime(sleepMsBetweenRetry)` = `RetryNTimes(1, sleep)`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::retry::{RetryOneTime, RetryPolicy};
///
/// let policy = RetryOneTime::new(Duration::from_millis(10));
/// assert!(policy.allow_retry(0, Duration::ZERO).is_some());
/// assert!(policy.allow_retry(1, Duration::ZERO).is_none());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RetryOneTime(RetryNTimes);

impl RetryOneTime {
    /// `RetryOneTime(sleepMsBetweenRetry)`.
    pub fn new(sleep: Duration) -> Self {
        RetryOneTime(RetryNTimes::new(1, sleep))
    }
}

impl RetryPolicy for RetryOneTime {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration) -> Option<Duration> {
        self.0.allow_retry(retry_count, elapsed)
    }
}

/// Retries with a constant sleep until `max_elapsed` has passed: Curator's
/// `RetryUntilElapsed(maxElapsedTimeMs, sleepMsBetweenRetries)`. As in Curator the elapsed time
/// tested is the one before the sleep.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::retry::{RetryPolicy, RetryUntilElapsed};
///
/// let policy = RetryUntilElapsed::new(Duration::from_secs(1), Duration::from_millis(100));
/// assert!(policy.allow_retry(50, Duration::from_millis(999)).is_some());
/// assert!(policy.allow_retry(0, Duration::from_secs(1)).is_none());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RetryUntilElapsed {
    max_elapsed: Duration,
    sleep: Duration,
}

impl RetryUntilElapsed {
    /// `RetryUntilElapsed(maxElapsedTimeMs, sleepMsBetweenRetries)`.
    pub fn new(max_elapsed: Duration, sleep: Duration) -> Self {
        RetryUntilElapsed { max_elapsed, sleep }
    }
}

impl RetryPolicy for RetryUntilElapsed {
    fn allow_retry(&self, _retry_count: u32, elapsed: Duration) -> Option<Duration> {
        (elapsed < self.max_elapsed).then_some(self.sleep)
    }
}

/// Retries forever with a constant interval: Curator's `RetryForever(retryIntervalMs)`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::retry::{RetryForever, RetryPolicy};
///
/// let policy = RetryForever::new(Duration::from_millis(200))?;
/// assert_eq!(policy.allow_retry(u32::MAX, Duration::MAX), Some(Duration::from_millis(200)));
/// assert!(RetryForever::new(Duration::ZERO).is_err());
/// # Ok::<(), zkr_connection::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RetryForever {
    interval: Duration,
}

impl RetryForever {
    /// `RetryForever(retryIntervalMs)`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero interval (Curator requires `retryIntervalMs > 0`).
    pub fn new(interval: Duration) -> Result<Self> {
        if interval.is_zero() {
            return Err(Error::InvalidArgument("RetryForever needs an interval above zero"));
        }
        Ok(RetryForever { interval })
    }
}

impl RetryPolicy for RetryForever {
    fn allow_retry(&self, _retry_count: u32, _elapsed: Duration) -> Option<Duration> {
        Some(self.interval)
    }
}

/// Wraps a policy and refuses to retry an expired session: Curator's
/// `SessionFailedRetryPolicy`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::retry::{RetryForever, RetryPolicy, SessionFailedRetryPolicy};
/// use zkr_connection::zookeeper_client::Error;
///
/// let policy = SessionFailedRetryPolicy::new(RetryForever::new(Duration::from_millis(5))?);
/// assert!(policy.allow_retry_error(&Error::ConnectionLoss));
/// assert!(!policy.allow_retry_error(&Error::SessionExpired));
/// # Ok::<(), zkr_connection::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SessionFailedRetryPolicy<P> {
    delegate: P,
}

impl<P: RetryPolicy> SessionFailedRetryPolicy<P> {
    /// Wraps `delegate`.
    pub fn new(delegate: P) -> Self {
        SessionFailedRetryPolicy { delegate }
    }
}

impl<P: RetryPolicy> RetryPolicy for SessionFailedRetryPolicy<P> {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration) -> Option<Duration> {
        self.delegate.allow_retry(retry_count, elapsed)
    }

    fn allow_retry_error(&self, error: &zookeeper_client::Error) -> bool {
        !matches!(error, zookeeper_client::Error::SessionExpired) && self.delegate.allow_retry_error(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BASE: Duration = Duration::from_millis(10);

    #[test]
    fn exponential_follows_curators_formula_with_a_seeded_random() {
        // The same seed replays the same sleeps; each is base * max(1, k) with k < 2^(n+1).
        let a = ExponentialBackoffRetry::new(BASE, 10).seeded(7);
        let b = ExponentialBackoffRetry::new(BASE, 10).seeded(7);
        for n in 0..10 {
            let sa = a.allow_retry(n, Duration::ZERO).unwrap();
            assert_eq!(sa, b.allow_retry(n, Duration::ZERO).unwrap());
            let k = (sa.as_millis() / BASE.as_millis()) as u64;
            assert!((1..(1u64 << (n + 1))).contains(&k), "retry {n}: k = {k}");
            assert_eq!(sa.as_millis() % BASE.as_millis(), 0);
        }
        assert!(a.allow_retry(10, Duration::ZERO).is_none());
    }

    #[test]
    fn exponential_reaches_the_top_of_its_range() {
        // rand(1 << 4) draws 0..=15; over many draws 15 must appear and nothing above it.
        let policy = ExponentialBackoffRetry::new(BASE, 5).seeded(1);
        let max = (0..2000).map(|_| policy.allow_retry(3, Duration::ZERO).unwrap()).max().unwrap();
        assert_eq!(max, BASE * 15);
    }

    #[test]
    fn exponential_clamps_retries_and_sleep() {
        assert_eq!(ExponentialBackoffRetry::new(BASE, 100).max_retries(), 29);
        let capped = ExponentialBackoffRetry::with_max_sleep(BASE, 29, Duration::from_millis(35)).seeded(3);
        for n in 0..29 {
            assert!(capped.allow_retry(n, Duration::ZERO).unwrap() <= Duration::from_millis(35));
        }
        // The largest shift does not overflow.
        let _ = ExponentialBackoffRetry::new(Duration::from_millis(1), 29).allow_retry(28, Duration::ZERO);
    }

    #[test]
    fn until_elapsed_tests_the_elapsed_time_before_sleeping() {
        let policy = RetryUntilElapsed::new(Duration::from_millis(100), Duration::from_millis(60));
        assert!(policy.allow_retry(0, Duration::from_millis(99)).is_some());
        assert!(policy.allow_retry(0, Duration::from_millis(100)).is_none());
    }

    fn _object_safe(_: &dyn RetryPolicy) {}

    proptest! {
        #[test]
        fn bounded_never_exceeds_its_bound(seed: u64, n in 0u32..29, base_ms in 1u64..1000, max_ms in 1u64..5000) {
            let policy = BoundedExponentialBackoffRetry::new(
                Duration::from_millis(base_ms), Duration::from_millis(max_ms), 29).seeded(seed);
            let sleep = policy.allow_retry(n, Duration::ZERO).unwrap();
            prop_assert!(sleep <= Duration::from_millis(max_ms));
            prop_assert!(sleep >= Duration::from_millis(base_ms.min(max_ms)));
        }

        #[test]
        fn n_times_allows_exactly_n(n in 0u32..100, count in 0u32..200) {
            let policy = RetryNTimes::new(n, Duration::from_millis(1));
            prop_assert_eq!(policy.allow_retry(count, Duration::ZERO).is_some(), count < n);
        }
    }
}
