//! [`Deadline`] and [`within`]: the one home of "bounded by the caller's deadline".

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// When a call must end, and the timeout its caller asked for (ordered by when it ends). One value goes down a whole
/// call (a lock's `acquire_timeout`, a queue's `take_timeout`, a retry loop, the waits and
/// requests inside them), so that every step ends with the call and every error names the
/// caller's timeout, not what was left of it.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
/// use zkr_connection::Deadline;
///
/// let deadline = Deadline::after(Duration::from_secs(2));
/// assert_eq!(deadline.timeout(), Duration::from_secs(2));
/// assert!(deadline.remaining() <= Duration::from_secs(2));
/// assert!(!deadline.has_passed());
/// // A timeout too long for the clock is a deadline that never comes, not a panic.
/// assert!(!Deadline::after(Duration::MAX).has_passed());
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Deadline {
    at: Instant,
    timeout: Duration,
}

/// How far ahead a deadline too long for the clock is put (about thirty years).
const FAR: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

impl Deadline {
    /// `timeout` from now.
    pub fn after(timeout: Duration) -> Deadline {
        Deadline::since(Instant::now(), timeout)
    }

    /// `timeout` after `start` (the start of the caller's call, which may lie in the past).
    pub fn since(start: Instant, timeout: Duration) -> Deadline {
        let at = start.checked_add(timeout).unwrap_or_else(|| start + FAR);
        Deadline { at, timeout }
    }

    /// The instant the call must end by.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// The timeout the caller asked for (what errors name).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The time left (zero once it passed).
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether it passed.
    pub fn has_passed(&self) -> bool {
        Instant::now() >= self.at
    }

    /// The earlier of this deadline and `bound`.
    pub fn or_sooner(&self, bound: Instant) -> Instant {
        self.at.min(bound)
    }
}

/// Runs `future` to completion, or until `deadline` when there is one: `None` when the
/// deadline came first (the future is dropped then). Every recipe bounds its waits and
/// requests with it, so that a deadline bounds the whole call.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
/// use zkr_connection::{within, Deadline};
///
/// let soon = Some(Deadline::after(Duration::from_millis(10)));
/// assert_eq!(within(soon, std::future::pending::<()>()).await, None);
/// assert_eq!(within(None, async { 7 }).await, Some(7));
/// # }
/// ```
///
/// # Cancel safety
/// As cancel safe as `future`.
pub fn within<F: Future>(deadline: Option<Deadline>, future: F) -> Within<F> {
    Within { future, sleep: None, deadline: deadline.map(|d| d.instant()) }
}

pin_project_lite::pin_project! {
    /// The future of [`within`]: `future` and, once polled, a timer for the deadline. It holds
    /// `future` once (an `async fn` holding it would keep room for it twice: its argument and
    /// the timeout around it), which matters to every waiting lock attempt built on it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let bounded: zkr_connection::Within<_> = zkr_connection::within(None, async { 7 });
    /// assert_eq!(bounded.await, Some(7));
    /// # }
    /// ```
    #[derive(Debug)]
    #[must_use = "futures do nothing unless awaited"]
    pub struct Within<F> {
        #[pin]
        future: F,
        #[pin]
        sleep: Option<tokio::time::Sleep>,
        deadline: Option<Instant>,
    }
}

impl<F: Future> Future for Within<F> {
    type Output = Option<F::Output>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let mut this = self.project();
        if let std::task::Poll::Ready(value) = this.future.poll(cx) {
            return std::task::Poll::Ready(Some(value));
        }
        // The timer starts at the first poll, inside the runtime.
        if let Some(at) = this.deadline.take() {
            this.sleep.set(Some(tokio::time::sleep_until(at)));
        }
        match this.sleep.as_pin_mut() {
            Some(sleep) => sleep.poll(cx).map(|()| None),
            None => std::task::Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_deadline_from_a_past_start_names_the_callers_timeout_and_ends_with_the_call() {
        let began = Instant::now();
        tokio::time::advance(Duration::from_millis(150)).await;
        let deadline = Deadline::since(began, Duration::from_millis(250));
        assert_eq!(deadline.timeout(), Duration::from_millis(250));
        assert_eq!(deadline.remaining(), Duration::from_millis(100));
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(deadline.has_passed());
        assert_eq!(deadline.remaining(), Duration::ZERO);
    }
}
