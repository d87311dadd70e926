//! [`RetryBudget`]: the one retry core every loop of the workspace counts its tries with.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::RetryPolicy;
use crate::deadline::Deadline;
use crate::error::Error;

/// One retry loop's account: its policy, when it started, how many retries it took, and the
/// caller's deadline. It says how long to sleep before the next try, or why to stop; the loop
/// around it decides what a failure is. [`ZkClient::retry`](crate::ZkClient::retry), the
/// protected create and the lock recipes count their tries with it.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use zkr_connection::retry::{RetryBudget, RetryNTimes};
///
/// let mut budget = RetryBudget::new(Arc::new(RetryNTimes::new(2, Duration::from_millis(5))));
/// assert_eq!(budget.next_sleep().unwrap(), Duration::from_millis(5));
/// assert_eq!(budget.next_sleep().unwrap(), Duration::from_millis(5));
/// let stop = budget.next_sleep().unwrap_err();
/// assert!(!stop.is_deadline());
/// assert_eq!(budget.retries(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct RetryBudget {
    policy: Arc<dyn RetryPolicy>,
    start: Instant,
    retries: u32,
    deadline: Option<Deadline>,
}

/// Why a [`RetryBudget`] says stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    attempts: u32,
    elapsed: Duration,
    /// The deadline's length when it, not the policy, stopped the loop.
    deadline: Option<Duration>,
}

impl RetryBudget {
    /// A budget under `policy`, starting now, with no deadline.
    pub fn new(policy: Arc<dyn RetryPolicy>) -> Self {
        RetryBudget { policy, start: Instant::now(), retries: 0, deadline: None }
    }

    /// Bounds the loop by `deadline` (none: the policy alone decides): a sleep that would end
    /// at or past it stops the loop instead, and the error names the deadline's timeout.
    #[must_use]
    pub fn until(mut self, deadline: Option<Deadline>) -> Self {
        self.deadline = deadline;
        self
    }

    /// The deadline, if there is one.
    pub fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// Whether the policy retries this kind of error at all.
    pub fn allows(&self, error: &zookeeper_client::Error) -> bool {
        self.policy.allow_retry_error(error)
    }

    /// Retries taken so far.
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// Time since the loop started.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Counts a retry and says how long to sleep before it, or why to stop: the policy gave up,
    /// or the sleep would end at or past the deadline.
    ///
    /// # Errors
    /// [`Stop`] when the loop must not try again.
    pub fn next_sleep(&mut self) -> Result<Duration, Stop> {
        let elapsed = self.start.elapsed();
        let stop = |deadline| Stop { attempts: self.retries + 1, elapsed, deadline };
        let Some(sleep) = self.policy.allow_retry(self.retries, elapsed) else { return Err(stop(None)) };
        if let Some(deadline) = self.deadline {
            if sleep >= deadline.remaining() {
                return Err(stop(Some(deadline.timeout())));
            }
        }
        self.retries += 1;
        Ok(sleep)
    }

    /// [`next_sleep`](Self::next_sleep), then sleeps that long.
    ///
    /// # Errors
    /// As [`next_sleep`](Self::next_sleep).
    ///
    /// # Cancel safety
    /// Cancel safe (the retry counts as taken).
    pub async fn pause(&mut self) -> Result<(), Stop> {
        let sleep = self.next_sleep()?;
        tokio::time::sleep(sleep).await;
        Ok(())
    }
}

impl Stop {
    /// Did the deadline, not the policy, stop the loop?
    pub fn is_deadline(&self) -> bool {
        self.deadline.is_some()
    }

    /// The loop's error after `last` failed: [`Error::DeadlineExceeded`] or
    /// [`Error::RetriesExhausted`] (`Error::Closed` when there was no failure to name).
    pub fn into_error(self, last: Option<zookeeper_client::Error>) -> Error {
        match (self.deadline, last) {
            (Some(deadline), last) => Error::DeadlineExceeded { deadline, last },
            (None, Some(last)) => {
                Error::RetriesExhausted { attempts: self.attempts, elapsed: self.elapsed, last }
            }
            (None, None) => Error::Closed,
        }
    }
}

/// The pause between tries of a wait bound to one session (a watch to set again, a node to
/// delete, a lease to renew): it never gives up by itself (the session's end stops the
/// wait), starts short and doubles up to a bound (by default 20 ms to a second).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::retry::SessionPause;
///
/// let mut pause = SessionPause::default();
/// assert_eq!(pause.next_delay(), Duration::from_millis(20));
/// assert_eq!(pause.next_delay(), Duration::from_millis(40));
/// pause.reset();
/// assert_eq!(pause.next_delay(), Duration::from_millis(20));
/// ```
#[derive(Debug, Clone)]
pub struct SessionPause {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl SessionPause {
    /// A pause that starts at `first` and doubles up to `max`.
    pub fn new(first: Duration, max: Duration) -> Self {
        SessionPause { first, max, next: first }
    }

    /// The next delay; the one after it is twice as long, up to the maximum.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    /// Sleeps the next delay.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn sleep(&mut self) {
        tokio::time::sleep(self.next_delay()).await;
    }

    /// Starts again from the shortest delay (after a try that worked).
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

impl Default for SessionPause {
    /// 20 ms, doubling up to a second.
    fn default() -> Self {
        SessionPause::new(Duration::from_millis(20), Duration::from_secs(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::RetryForever;

    #[tokio::test(start_paused = true)]
    async fn a_sleep_past_the_deadline_stops_the_loop_and_says_so() {
        let policy = Arc::new(RetryForever::new(Duration::from_millis(100)).unwrap());
        let mut budget = RetryBudget::new(policy).until(Some(Deadline::after(Duration::from_millis(250))));
        budget.pause().await.unwrap();
        budget.pause().await.unwrap();
        let stop = budget.next_sleep().unwrap_err();
        assert!(stop.is_deadline());
        let error = stop.into_error(Some(zookeeper_client::Error::ConnectionLoss));
        assert!(
            matches!(error, Error::DeadlineExceeded { deadline, .. } if deadline == Duration::from_millis(250))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_from_the_callers_start_ends_with_the_call_and_names_its_timeout() {
        let call_began = Instant::now();
        tokio::time::advance(Duration::from_millis(150)).await;
        let policy = Arc::new(RetryForever::new(Duration::from_millis(100)).unwrap());
        let deadline = Deadline::since(call_began, Duration::from_millis(250));
        let mut budget = RetryBudget::new(policy).until(Some(deadline));
        assert_eq!(budget.deadline(), Some(deadline));
        let stop = budget.next_sleep().unwrap_err();
        let error = stop.into_error(None);
        assert!(
            matches!(error, Error::DeadlineExceeded { deadline, .. } if deadline == Duration::from_millis(250)),
            "{error:?}"
        );
    }

    #[test]
    fn a_policy_that_gives_up_names_the_attempts() {
        let policy = Arc::new(crate::retry::RetryNTimes::new(1, Duration::ZERO));
        let mut budget = RetryBudget::new(policy);
        budget.next_sleep().unwrap();
        let error =
            budget.next_sleep().unwrap_err().into_error(Some(zookeeper_client::Error::ConnectionLoss));
        assert!(matches!(error, Error::RetriesExhausted { attempts: 2, .. }));
    }

    #[test]
    fn the_session_pause_doubles_to_a_second() {
        let mut pause = SessionPause::default();
        let delays: Vec<_> = (0..8).map(|_| pause.next_delay().as_millis()).collect();
        assert_eq!(delays, [20, 40, 80, 160, 320, 640, 1000, 1000]);
    }
}
