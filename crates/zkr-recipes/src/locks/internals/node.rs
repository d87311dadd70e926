//! [`LockNode`]: a contender node that holds the lock, and how its loss is learnt.

use std::time::Duration;

use zkr_connection::{is_session_error, Session, ZkClient};
use zookeeper_client::{EventType, Stat};

use crate::fence::SessionFence;
use crate::locks::LostReason;

/// A contender node that holds the lock (or a lease of it).
#[derive(Debug, Clone)]
pub struct LockNode {
    pub(super) path: String,
    pub(super) name: String,
    pub(super) stat: Stat,
    pub(super) fence: SessionFence,
}

impl LockNode {
    /// The node's full path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The node's creation zxid: a fencing token that grows with every new holder across the
    /// ensemble (every node created later has a larger `czxid`).
    pub fn fencing_token(&self) -> i64 {
        self.stat.czxid
    }

    /// The node's `Stat` at creation.
    pub fn stat(&self) -> &Stat {
        &self.stat
    }

    /// The session the node lives with.
    pub fn session(&self) -> &Session {
        self.fence.session()
    }

    /// Why the lock counts as lost now, if it does; without a ZooKeeper call. Node deletion is
    /// noticed only by [`lost`](Self::lost) (which watches the node).
    pub fn lost_reason(&self, zk: &ZkClient) -> Option<LostReason> {
        self.fence.lost_reason(zk)
    }

    /// Completes when the lock is lost: the connection enters an error state under the
    /// manager's error policy, the session ends, or the node is deleted (watched with one
    /// ZooKeeper request when first polled).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self, zk: &ZkClient) -> LostReason {
        if let Some(reason) = self.lost_reason(zk) {
            return reason;
        }
        tokio::select! {
            reason = self.fence.lost(zk) => reason,
            reason = node_gone(zk, self.session(), &self.path) => reason,
        }
    }

    /// Completes when the lock is lost as this process can tell without asking ZooKeeper.
    pub(super) async fn lost_locally(&self, zk: &ZkClient) -> LostReason {
        self.fence.lost(zk).await
    }
}

/// Completes when `path`, created on `session`, is gone: the session ends (or the manager
/// closes), or the node is deleted (watched with one ZooKeeper request when first polled).
/// Connection losses are ridden out. Shared by lock nodes and semaphore leases.
///
/// # Cancel safety
/// Cancel safe.
pub(crate) async fn node_gone(zk: &ZkClient, session: &Session, path: &str) -> LostReason {
    let generation = session.generation();
    if zk.generation() != generation || zk.is_closed() {
        return LostReason::SessionEnded;
    }
    let ended = zk.session_replaced(generation);
    let deleted = async {
        let mut pause = zkr_connection::retry::SessionPause::default();
        loop {
            match session.client().check_and_watch_stat(path).await {
                Ok((None, _)) => return LostReason::NodeDeleted,
                Ok((Some(_), watcher)) => {
                    pause.reset();
                    let event = watcher.changed().await;
                    match event.event_type {
                        EventType::NodeDeleted => return LostReason::NodeDeleted,
                        EventType::Session => return LostReason::SessionEnded,
                        _ => continue,
                    }
                }
                Err(e) if is_session_error(&e) => return LostReason::SessionEnded,
                // The connection is down: ask again once it may be back.
                Err(_) => pause.sleep().await,
            }
        }
    };
    tokio::select! {
        () = ended => LostReason::SessionEnded,
        reason = deleted => reason,
    }
}

/// How long a timed-out acquire waits for its own node's delete before it returns and leaves
/// the delete to the background: a timeout must not stretch by a fault's length.
pub(crate) const TIMEOUT_CLEANUP_GRACE: Duration = Duration::from_millis(500);
