//! [`cancel_at_every_await`]: drops a future at each of its await points in turn, the way a
//! `select!` or a timeout does, so a test can check a "cancel safe" claim at every one of them.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;

/// How many polls [`cancel_at_every_await`] tries before it calls a future endless.
pub const MAX_POLLS: usize = 10_000;

/// How long one run of [`cancel_at_every_await`] may take before it is called hung.
pub const RUN_BOUND: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs `make()` and drops its future right after its `k`-th poll returned `Pending`, for
/// `k = 1, 2, …`, awaiting `after_drop(k)` after each drop (where a test checks that nothing
/// was left behind and the recipe still works), until a run completes within `k` polls. Returns
/// that run's output and how many drops came before it.
///
/// A poll is one step from an await point to the next, so every await the future reaches is
/// a point where it was dropped once. (Dropping with `tokio::time::timeout(Duration::ZERO, ..)`
/// does not show this: the timer fires at its next tick, after the inner future may have been
/// polled again.)
///
/// # Panics
/// When the future is still pending after [`MAX_POLLS`] polls, or when one run takes longer
/// than [`RUN_BOUND`] (a hang, reported as one instead of a test that never ends).
///
/// # Cancel safety
/// Cancel safe: dropped, the future it was polling is dropped too.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use zkr_testing::cancel_at_every_await;
///
/// let (output, drops) = cancel_at_every_await(
///     || async {
///         tokio::task::yield_now().await;
///         tokio::task::yield_now().await;
///         7
///     },
///     |k| async move { println!("dropped after poll {k}") },
/// )
/// .await;
/// assert_eq!((output, drops), (7, 2));
/// # }
/// ```
pub async fn cancel_at_every_await<F, Fut, A, AFut>(mut make: F, mut after_drop: A) -> (Fut::Output, usize)
where
    F: FnMut() -> Fut,
    Fut: Future,
    A: FnMut(usize) -> AFut,
    AFut: Future<Output = ()>,
{
    for k in 1..=MAX_POLLS {
        if let Some(output) = poll_at_most(make(), k).await {
            return (output, k - 1);
        }
        after_drop(k).await;
    }
    panic!("the future was still pending after {MAX_POLLS} polls");
}

/// Polls `future` at most `polls` times: its output, or `None` when it was dropped still
/// pending after the last poll.
async fn poll_at_most<Fut: Future>(future: Fut, polls: usize) -> Option<Fut::Output> {
    let mut future = pin!(future);
    let mut done = 0;
    let run = std::future::poll_fn(|cx| {
        done += 1;
        match future.as_mut().poll(cx) {
            Poll::Ready(output) => Poll::Ready(Some(output)),
            Poll::Pending if done >= polls => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    });
    match tokio::time::timeout(RUN_BOUND, run).await {
        Ok(output) => output,
        Err(_) => panic!("the run of at most {polls} polls hung: not done within {RUN_BOUND:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drops_after_each_poll_in_turn_and_returns_the_first_complete_run() {
        let mut dropped_at = Vec::new();
        let (output, drops) = cancel_at_every_await(
            || async {
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                "done"
            },
            |k| {
                dropped_at.push(k);
                async {}
            },
        )
        .await;
        assert_eq!(output, "done");
        assert_eq!(drops, 3);
        assert_eq!(dropped_at, [1, 2, 3]);
    }

    #[tokio::test]
    async fn a_ready_future_is_never_dropped() {
        let (output, drops) = cancel_at_every_await(|| async { 1 }, |_| async { panic!("no drop") }).await;
        assert_eq!((output, drops), (1, 0));
    }
}
