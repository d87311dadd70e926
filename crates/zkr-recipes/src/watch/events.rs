//! What the watch engine reads between its reads: the events already delivered (a burst, and
//! what came behind it), the manager's next session, and the sync before a resync.

use std::future::Future;

use futures::stream::FuturesUnordered;
use futures::FutureExt as _;
use zkr_connection::{Session, ZkClient};
use zookeeper_client::{EventType, PersistentWatcher, WatchedEvent};

use super::ZkResult;

/// A full read replaced the copy of `root` on `session`, with `queued` events on top.
pub(super) fn resynced(root: &str, session: &Session, queued: usize) {
    tracing::debug!(root, generation = session.generation(), queued, "watch resynced");
    crate::telemetry::watch_resync();
}

/// Waits for a sync sent before a read; a failed one only costs the guarantee it would give.
pub(super) async fn settle(sync: Option<impl Future<Output = ZkResult<()>>>) {
    if let Some(Err(error)) = futures::future::OptionFuture::from(sync).await {
        tracing::debug!(%error, "sync before the resync failed; reading anyway");
    }
}

/// How many rounds of "apply, then take what came behind" one burst may take before it is
/// published all the same (a writer that never pauses must not hold the copy back).
pub(super) const MAX_BURST_ROUNDS: usize = 8;

/// The node events already delivered behind a burst, up to a session event (left in
/// `carried`, after which the watcher is not polled).
pub(super) fn behind(
    watcher: &mut PersistentWatcher,
    carried: &mut Option<WatchedEvent>,
) -> Vec<WatchedEvent> {
    let mut nodes = Vec::new();
    while let Some(event) = watcher.changed().now_or_never() {
        if event.event_type == EventType::Session {
            *carried = Some(event);
            break;
        }
        nodes.push(event);
    }
    nodes
}

/// The events already delivered, at least one: a burst. It stops at a terminal session event,
/// after which the watcher must not be polled.
pub(super) async fn burst(watcher: &mut PersistentWatcher) -> Vec<WatchedEvent> {
    let mut burst = vec![watcher.changed().await];
    while !burst.last().is_some_and(|e| e.session_state.is_terminated()) {
        match watcher.changed().now_or_never() {
            Some(event) => burst.push(event),
            None => break,
        }
    }
    burst
}

/// The manager's current session if its connection is newer than `after`, else the next one;
/// `None` once the manager is closed.
pub(super) async fn next_session(zk: &ZkClient, after: Option<u64>) -> Option<Session> {
    let mut sessions = zk.session_watch();
    loop {
        let current = sessions.borrow_and_update().clone();
        if let Some(s) = current.filter(|s| after.is_none_or(|c| s.connection() > c)) {
            return Some(s);
        }
        if zk.is_closed() || sessions.changed().await.is_err() {
            return None;
        }
    }
}

/// `future` as a stream of its one output, polled only when its own waker fired (a
/// `FuturesUnordered` of one): a `select!` branch beside a busy one sleeps for free.
pub(super) fn when_woken<F: Future>(future: F) -> FuturesUnordered<F> {
    FuturesUnordered::from_iter([future])
}
