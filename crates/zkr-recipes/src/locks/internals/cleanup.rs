//! The contender node's cleanup: on timeout, error or a dropped acquire, our node never stays
//! behind to block the queue.

use zkr_connection::{DropGuard, Session, ZkClient};

/// Deletes our contender node in the background unless disarmed.
pub(super) struct NodeCleanup {
    path: String,
    guard: DropGuard,
}

impl NodeCleanup {
    /// Guards `path`, created on session `generation`.
    pub(super) fn new(zk: &ZkClient, path: &str, generation: u64) -> Self {
        let (zk, owned) = (zk.clone(), path.to_owned());
        let guard = DropGuard::new("an abandoned lock node", async move {
            zk.guaranteed_delete(owned, Some(generation)).wait().await;
        });
        NodeCleanup { path: path.to_owned(), guard }
    }

    /// The node is ours to keep (we hold the lock).
    pub(super) fn disarm(&mut self) {
        self.guard.disarm();
    }

    /// Deletes the node now (one attempt on its own session), so that a caller told "not
    /// acquired" finds it gone; a failed attempt leaves the background delete to the guard.
    pub(super) async fn delete_now(mut self, zk: &ZkClient, session: &Session) {
        if zk.generation() != session.generation() {
            // The node went with its session.
            return self.disarm();
        }
        if let Ok(()) | Err(zookeeper_client::Error::NoNode) = session.client().delete(&self.path, None).await
        {
            self.disarm();
        }
    }
}
