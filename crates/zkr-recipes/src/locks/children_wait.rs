//! Waiting on a directory's children with a watch: the one loop of the semaphores (Curator's
//! and kazoo's) that wait for room.

use zkr_connection::retry::SessionPause;
use zkr_connection::{Deadline, ZkClient};

use super::{LockError, LostReason};
use crate::fence::SessionFence;

/// Lists `dir` with a watch until `ready` says yes, waiting for a change between two looks:
/// `false` at the deadline. Connection losses the session survives are waited out; the end of
/// the fence's session is [`LockError::Lost`] for `what`. The caller bounds the whole call by its
/// deadline (a request to a server without a quorum can go unanswered for seconds).
pub(crate) async fn wait_for_children<F, Fut>(
    zk: &ZkClient,
    fence: &SessionFence,
    dir: &str,
    what: &str,
    deadline: Option<Deadline>,
    mut ready: F,
) -> Result<bool, LockError>
where
    F: FnMut(Vec<String>) -> Fut,
    Fut: std::future::Future<Output = Result<bool, LockError>>,
{
    let client = fence.client(zk);
    let lost = || LockError::Lost { path: what.to_owned(), reason: LostReason::SessionEnded };
    let mut pause = SessionPause::default();
    loop {
        let (children, _, watcher) = match client.get_and_watch_children(dir).await {
            Ok(listed) => listed,
            // A connection loss (a server restart, a leader election): wait for the connection,
            // bounded by the deadline, and look again. The session survives unless it expires.
            Err(e) if zkr_connection::is_retryable(&e) => {
                let bound = zk.connection_timeout();
                let _ = zk.wait_connected(deadline.map_or(bound, |d| d.remaining().min(bound))).await;
                if deadline.is_some_and(|d| d.has_passed()) {
                    return Ok(false);
                }
                // Connected again, or the wait ran out: look again shortly.
                pause.sleep().await;
                continue;
            }
            Err(e) if zkr_connection::is_session_error(&e) => return Err(lost()),
            Err(e) => return Err(e.into()),
        };
        if ready(children).await? {
            return Ok(true);
        }
        // A session the manager gives up never fires its watches: stop waiting on it.
        tokio::select! {
            _ = watcher.changed() => {}
            () = zk.session_replaced(fence.generation()) => return Err(lost()),
        }
    }
}
