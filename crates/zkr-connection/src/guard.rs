//! [`DropGuard`], [`detach_on_drop`] and [`spawn_cleanup`]: the one home of "clean up in the
//! background when a future is dropped or a handle goes".

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// Spawns `cleanup` on the current tokio runtime; outside one, logs a warning naming `what`
/// and drops it (whatever it would have deleted goes with its session). For `Drop` impls,
/// which must not block and may run anywhere.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// zkr_connection::spawn_cleanup("an example", async { /* delete something */ });
/// # }
/// ```
pub fn spawn_cleanup(what: &'static str, cleanup: impl Future<Output = ()> + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn(cleanup)),
        Err(_) => tracing::warn!(what, "no runtime to clean up in the background; it goes with its session"),
    }
}

/// Runs `work` in place until `give_up` completes: `Some` with its output when it finished
/// first, `None` when `give_up` did (a loss is known, so the caller returns at once). The rest
/// of the work goes on in the background then, and also when this future is dropped (see
/// [`detach_on_drop`]): a release or a close built on it is cancel safe without a guard to
/// disarm.
///
/// # Cancel safety
/// Cancel safe: dropped, the work goes on in the background.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let done = zkr_connection::run_detached(async { 7 }, std::future::pending::<()>()).await;
/// assert_eq!(done, Some(7));
/// let given_up = zkr_connection::run_detached(std::future::pending::<()>(), async {}).await;
/// assert_eq!(given_up, None);
/// # }
/// ```
pub async fn run_detached<T: Send + 'static>(
    work: impl Future<Output = T> + Send + 'static,
    give_up: impl Future,
) -> Option<T> {
    let mut work = detach_on_drop(work);
    tokio::select! {
        biased;
        done = &mut work => Some(done),
        _ = give_up => None,
    }
}

/// `work`, run in place by the returned future, whose drop before `work` finished spawns the
/// rest of `work` on the current runtime ([`spawn_cleanup`]): the one-task way of a request
/// that must end whatever its caller does (a lock's release), without a task spawned, woken
/// and joined for every call.
///
/// # Cancel safety
/// Cancel safe: dropped, the work goes on in the background (outside a runtime it is dropped
/// with a warning, as [`spawn_cleanup`] does).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (tx, rx) = tokio::sync::oneshot::channel();
/// let work = zkr_connection::detach_on_drop(async move {
///     tokio::task::yield_now().await;
///     let _ = tx.send("finished");
/// });
/// drop(work); // before it finished: it goes on in a task of its own
/// assert_eq!(rx.await, Ok("finished"));
/// # }
/// ```
pub fn detach_on_drop<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> Detached<T> {
    Detached { work: Some(Box::pin(work)) }
}

/// The future of [`detach_on_drop`]: `work`'s output; dropped before it, the rest of `work`
/// goes on in the background.
#[must_use = "dropping it at once runs the whole work in the background"]
pub struct Detached<T: Send + 'static> {
    work: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
}

impl<T: Send + 'static> Future for Detached<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<T> {
        let Some(work) = self.work.as_mut() else { return std::task::Poll::Pending };
        let done = std::task::ready!(work.as_mut().poll(cx));
        self.work = None;
        std::task::Poll::Ready(done)
    }
}

impl<T: Send + 'static> fmt::Debug for Detached<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Detached").field("finished", &self.work.is_none()).finish()
    }
}

impl<T: Send + 'static> Drop for Detached<T> {
    fn drop(&mut self) {
        if let Some(work) = self.work.take() {
            spawn_cleanup("detached work", async move { drop(work.await) });
        }
    }
}

/// Runs a cleanup in the background when dropped, unless [`disarm`](Self::disarm)ed: a create
/// whose caller gives up, times out or is cancelled never leaves its node behind.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use zkr_connection::DropGuard;
///
/// let mut guard = DropGuard::new("the example node", async { /* delete it */ });
/// // ... the step the cleanup protects succeeded:
/// guard.disarm();
/// assert!(!guard.is_armed());
/// # }
/// ```
#[must_use = "dropping the guard runs the cleanup at once"]
pub struct DropGuard {
    what: &'static str,
    cleanup: Option<MakeCleanup>,
}

/// What an armed [`DropGuard`] holds: the maker of its cleanup.
type MakeCleanup = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

impl DropGuard {
    /// A guard that spawns `cleanup` when dropped; `what` names it in the warning logged when
    /// there is no runtime to spawn on.
    pub fn new(what: &'static str, cleanup: impl Future<Output = ()> + Send + 'static) -> Self {
        Self::deferred(what, move || cleanup)
    }

    /// A guard that makes its cleanup with `make` only when dropped armed: until then it holds
    /// `make`'s captures, not the cleanup future's whole state (which can be far larger, and
    /// every pending create pays for it).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let node = String::from("/locks/a/_c_1-lock-0000000007");
    /// let mut guard = zkr_connection::DropGuard::deferred("the example node", move || async move {
    ///     let _ = node; // delete it
    /// });
    /// guard.disarm();
    /// # }
    /// ```
    pub fn deferred<F, Fut>(what: &'static str, make: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let make = move || -> Pin<Box<dyn Future<Output = ()> + Send>> { Box::pin(make()) };
        DropGuard { what, cleanup: Some(Box::new(make)) }
    }

    /// Dropping the guard no longer cleans up.
    pub fn disarm(&mut self) {
        self.cleanup = None;
    }

    /// Will dropping the guard clean up?
    pub fn is_armed(&self) -> bool {
        self.cleanup.is_some()
    }
}

impl fmt::Debug for DropGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DropGuard").field("what", &self.what).field("armed", &self.is_armed()).finish()
    }
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if let Some(make) = self.cleanup.take() {
            spawn_cleanup(self.what, make());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use super::*;

    fn flagged() -> (Arc<AtomicBool>, impl Future<Output = ()> + Send + 'static) {
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        (ran, async move { flag.store(true, Ordering::SeqCst) })
    }

    #[tokio::test]
    async fn an_armed_guard_cleans_up_in_the_background_and_a_disarmed_one_does_not() {
        let (ran, cleanup) = flagged();
        drop(DropGuard::new("armed", cleanup));
        tokio::task::yield_now().await;
        assert!(ran.load(Ordering::SeqCst));

        let (ran, cleanup) = flagged();
        let mut guard = DropGuard::new("disarmed", cleanup);
        guard.disarm();
        drop(guard);
        tokio::task::yield_now().await;
        assert!(!ran.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn detached_work_runs_in_place_and_its_rest_goes_on_when_dropped() {
        let (ran, work) = flagged();
        detach_on_drop(work).await;
        assert!(ran.load(Ordering::SeqCst));

        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (ran, flag) = flagged();
        let mut work = detach_on_drop(async move {
            let _ = rx.await;
            flag.await;
        });
        assert!(futures::poll!(&mut work).is_pending());
        drop(work);
        tx.send(()).unwrap();
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(ran.load(Ordering::SeqCst), "the dropped work's rest did not run");
    }

    #[test]
    fn outside_a_runtime_the_cleanup_is_dropped_without_a_panic() {
        let (ran, cleanup) = flagged();
        drop(DropGuard::new("no runtime", cleanup));
        assert!(!ran.load(Ordering::SeqCst));
    }
}
