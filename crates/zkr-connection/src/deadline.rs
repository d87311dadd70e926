//! [`within`]: the one home of "bounded by the caller's deadline".

use std::future::Future;

use tokio::time::Instant;

/// Runs `future` to completion, or until `deadline` when there is one: `None` when the
/// deadline came first (the future is dropped then). Every recipe bounds its waits and
/// requests with it, so that a deadline bounds the whole call.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
/// use tokio::time::Instant;
///
/// let soon = Some(Instant::now() + Duration::from_millis(10));
/// assert_eq!(zkr_connection::within(soon, std::future::pending::<()>()).await, None);
/// assert_eq!(zkr_connection::within(None, async { 7 }).await, Some(7));
/// # }
/// ```
///
/// # Cancel safety
/// As cancel safe as `future`.
pub async fn within<T>(deadline: Option<Instant>, future: impl Future<Output = T>) -> Option<T> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, future).await.ok(),
        None => Some(future.await),
    }
}
