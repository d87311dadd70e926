//! [`LockNode`]: a contender node that holds the lock, and how its loss is learnt.

use std::time::Duration;

use zkr_connection::{is_session_error, Session, ZkClient};
use zookeeper_client::{EventType, OneshotWatcher, Stat};

use super::report::LossReport;
use crate::fence::LostReason;
use crate::fence::SessionFence;
use crate::owned::Owned;

/// A contender node that holds the lock (or a lease of it).
#[derive(Debug, Clone)]
pub struct LockNode {
    /// The node, reachable only through the session that created it.
    pub(super) owned: Owned,
    pub(super) name: String,
    pub(super) stat: Stat,
    pub(super) loss: LossReport,
}

impl LockNode {
    /// The node at `path` (named `name`), created with `stat`, held on `fence`.
    pub(super) fn new(path: String, name: String, stat: Stat, fence: SessionFence) -> Self {
        LockNode { owned: Owned::created(path, fence), name, stat, loss: LossReport::start() }
    }

    /// The node's full path.
    pub fn path(&self) -> &str {
        self.owned.path()
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
        self.owned.session()
    }

    /// Why the lock counts as lost now, if it does; without a ZooKeeper call. Node deletion is
    /// noticed only by [`lost`](Self::lost) (which watches the node). The first loss learnt
    /// here or there is reported once: a `warn!` event and, with the `metrics` feature,
    /// `zkr_lock_losses_total`.
    pub fn lost_reason(&self, zk: &ZkClient) -> Option<LostReason> {
        let reason = self.owned.fence().lost_reason(zk);
        if let Some(reason) = reason {
            self.report_lost(reason);
        }
        reason
    }

    /// Reports the loss (a `warn!` event and `zkr_lock_losses_total`), once per hold however
    /// often it is learnt.
    pub(crate) fn report_lost(&self, reason: LostReason) {
        self.loss.once(self, reason);
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
        let reason = tokio::select! {
            reason = self.owned.fence().lost(zk) => reason,
            reason = node_gone(zk, self.session(), self.path()) => reason,
        };
        self.report_lost(reason);
        reason
    }

    /// Writes `data` to the node on the session that holds it (never on a later one: a node
    /// another holder made at the same path after ours went is not touched). `NoNode` when the
    /// node is gone; `SessionExpired` once its session ended.
    ///
    /// # Cancel safety
    /// As [`ZkClient::retry`]: a dropped write may have been applied.
    pub(crate) async fn set_data(&self, zk: &ZkClient, data: &[u8]) -> zkr_connection::Result<Stat> {
        let path = self.path();
        self.owned.retry(zk, |c| async move { c.set_data(path, data, None).await }).await
    }

    /// Completes when the lock is lost as this process can tell without asking ZooKeeper.
    pub(super) async fn lost_locally(&self, zk: &ZkClient) -> LostReason {
        self.owned.fence().lost(zk).await
    }
}

/// Completes when `path`, created on `session`, is gone: the session ends (or the manager
/// closes), or the node is deleted (watched with one ZooKeeper request when first polled).
/// Connection losses are ridden out. Shared by lock nodes and semaphore leases.
///
/// # Cancel safety
/// Cancel safe.
pub(crate) async fn node_gone(zk: &ZkClient, session: &Session, path: &str) -> LostReason {
    match follow_node(zk, session, path, false, |node| node.is_none().then_some(())).await {
        Ok(()) => LostReason::NodeDeleted,
        Err(SessionEnded) => LostReason::SessionEnded,
    }
}

/// `session` ended, or the manager closed.
#[derive(Debug)]
pub(crate) struct SessionEnded;

/// Reads `path` on `session` with a watch (its data when `data`, else only whether it
/// exists), and again after every change, until `check` answers for a read (`None`: no
/// node). Connection losses are ridden out; it ends with [`SessionEnded`] when the session
/// does.
///
/// # Cancel safety
/// Cancel safe.
pub(crate) async fn follow_node<T>(
    zk: &ZkClient,
    session: &Session,
    path: &str,
    data: bool,
    mut check: impl FnMut(Option<&[u8]>) -> Option<T>,
) -> Result<T, SessionEnded> {
    let generation = session.generation();
    if zk.generation() != generation || zk.is_closed() {
        return Err(SessionEnded);
    }
    let ended = zk.session_replaced(generation);
    let follow = async {
        let mut pause = zkr_connection::retry::SessionPause::default();
        let mut session = session.clone();
        loop {
            // The same session on a new connection (re-attached on new hosts): follow there.
            if let Some(current) = zk.try_session().filter(|s| s.generation() == generation) {
                session = current;
            }
            match read_watched(&session, path, data).await {
                Ok(None) => continue,
                Ok(Some((node, watcher))) => {
                    pause.reset();
                    if let Some(found) = check(node.as_deref()) {
                        return Ok(found);
                    }
                    let event = tokio::select! {
                        event = watcher.changed() => event,
                        () = zk.connection_replaced(session.connection()) => continue,
                    };
                    if event.event_type == EventType::Session && !moved(zk, &session) {
                        return Err(session_state_ended(&session).await);
                    }
                }
                Err(e) if is_session_error(&e) && !moved(zk, &session) => {
                    return Err(session_state_ended(&session).await)
                }
                // The connection is down: ask again once it may be back.
                Err(_) => pause.sleep().await,
            }
        }
    };
    tokio::select! {
        () = ended => Err(SessionEnded),
        outcome = follow => outcome,
    }
}

/// Is `session` on the manager under another connection now (re-attached on new hosts), so
/// that its old handle's end is not the session's?
fn moved(zk: &ZkClient, session: &Session) -> bool {
    zk.try_session()
        .is_some_and(|s| s.generation() == session.generation() && s.connection() != session.connection())
}

/// [`SessionEnded`], once `session`'s own state says so too: zookeeper-client wakes the
/// watchers just before it publishes the state, and a caller told of the loss must find the
/// hold's `is_lost()` true (bounded, in case the state never comes).
async fn session_state_ended(session: &Session) -> SessionEnded {
    let mut states = session.client().state_watcher();
    let ended = async {
        while !states.state().is_terminated() {
            states.changed().await;
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), ended).await;
    SessionEnded
}

/// One read of `path` with a watch on it: its data (empty unless `data`) or `None` when there
/// is no node; `Ok(None)` when it was created between the two reads a missing node takes.
async fn read_watched(
    session: &Session,
    path: &str,
    data: bool,
) -> Result<Option<(Option<Vec<u8>>, OneshotWatcher)>, zookeeper_client::Error> {
    let client = session.client();
    if data {
        match client.get_and_watch_data(path).await {
            Ok((bytes, _, watcher)) => return Ok(Some((Some(bytes), watcher))),
            Err(zookeeper_client::Error::NoNode) => {}
            Err(e) => return Err(e),
        }
    }
    match client.check_and_watch_stat(path).await? {
        (None, watcher) => Ok(Some((None, watcher))),
        (Some(_), watcher) if !data => Ok(Some((Some(Vec::new()), watcher))),
        (Some(_), _) => Ok(None),
    }
}

/// How long a timed-out acquire waits for its own node's delete before it returns and leaves
/// the delete to the background: a timeout must not stretch by a fault's length.
pub(crate) const TIMEOUT_CLEANUP_GRACE: Duration = Duration::from_millis(500);
