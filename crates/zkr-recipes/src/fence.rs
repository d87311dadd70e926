//! [`SessionFence`]: what a recipe's hold (a lock node, a semaphore lease, a leader's node) was
//! taken on, and how it learns that the hold is lost, without asking ZooKeeper.

use zkr_connection::{Session, ZkClient};

/// Why a held lock counts as lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// The connection entered an error state under the manager's error policy (with the
    /// standard policy: `Suspended` or `Lost`). The node may still exist, but another client
    /// may hold the lock by now.
    ConnectionState,
    /// The session the lock node lived with has ended.
    SessionEnded,
    /// The lock node was deleted (by an administrator or another client).
    NodeDeleted,
}

impl LostReason {
    /// The reason as a metric label or log field: `connection_state`, `session_ended`,
    /// `node_deleted` (the `reason` label of `zkr_lock_losses_total`).
    ///
    /// ```
    /// use zkr_recipes::locks::LostReason;
    /// assert_eq!(LostReason::SessionEnded.label(), "session_ended");
    /// ```
    pub fn label(self) -> &'static str {
        match self {
            LostReason::ConnectionState => "connection_state",
            LostReason::SessionEnded => "session_ended",
            LostReason::NodeDeleted => "node_deleted",
        }
    }
}

impl std::fmt::Display for LostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LostReason::ConnectionState => "the connection entered an error state",
            LostReason::SessionEnded => "the session ended",
            LostReason::NodeDeleted => "the lock node was deleted",
        })
    }
}

/// A hold's session and the manager's error epoch when the hold was proved. The hold is lost
/// when the manager gives the session up or replaces it, closes, or (for recipes that count
/// connection trouble as a loss, Curator's error policy) enters an error state after the
/// proof.
#[derive(Debug, Clone)]
pub(crate) struct SessionFence {
    session: Session,
    error_epoch: u64,
}

impl SessionFence {
    /// A fence on `session`, proved while the manager's error epoch was `error_epoch`.
    pub(crate) fn new(session: Session, error_epoch: u64) -> Self {
        SessionFence { session, error_epoch }
    }

    /// The session the hold lives with.
    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// The session's current handle: the fenced one, or the same session's on a new connection
    /// when the manager re-attached it on new hosts (the fenced handle's requests go nowhere
    /// then).
    pub(crate) fn client(&self, zk: &ZkClient) -> zkr_connection::SessionClient {
        match zk.try_session().filter(|s| s.generation() == self.session.generation()) {
            Some(current) => current.client().clone(),
            None => self.session.client().clone(),
        }
    }

    /// The session's generation in the manager.
    pub(crate) fn generation(&self) -> u64 {
        self.session.generation()
    }

    /// Is the fenced session still the manager's current one? Not once the manager gave it up
    /// (it has no session until the next one, which `ZkClient::session_replaced` tells too).
    pub(crate) fn is_current(&self, zk: &ZkClient) -> bool {
        zk.try_session().is_some_and(|current| current.generation() == self.session.generation())
    }

    /// Has the session ended (replaced, given up, or the manager closed)? Connection trouble
    /// the session survives does not count.
    pub(crate) fn session_ended(&self, zk: &ZkClient) -> bool {
        if !self.is_current(zk) || zk.is_closed() {
            return true;
        }
        // The fenced handle ended: so did the session, unless the manager re-attached it on
        // new hosts (its connection is another now, and the old handle expires alone).
        self.session.is_ended()
            && zk.try_session().is_some_and(|s| s.connection() == self.session.connection())
    }

    /// Why the hold counts as lost now, if it does: the session ended, or the connection
    /// entered an error state after the proof.
    pub(crate) fn lost_reason(&self, zk: &ZkClient) -> Option<LostReason> {
        if self.session_ended(zk) {
            Some(LostReason::SessionEnded)
        } else if zk.error_epoch() != self.error_epoch {
            Some(LostReason::ConnectionState)
        } else {
            None
        }
    }

    /// Completes when the hold is lost as far as this process can tell: the connection enters
    /// an error state, or the manager gives up or replaces the session.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub(crate) async fn lost(&self, zk: &ZkClient) -> LostReason {
        let mut epochs = zk.error_epoch_watch();
        let epoch = self.error_epoch;
        tokio::select! {
            _ = epochs.wait_for(|e| *e != epoch) => LostReason::ConnectionState,
            () = zk.session_replaced(self.session.generation()) => LostReason::SessionEnded,
        }
    }
}

/// Completes when `zk` is not connected (at once if it is not now): where a release or a close
/// stops waiting for a server that cannot answer and leaves its delete to the background.
///
/// # Cancel safety
/// Cancel safe.
pub(crate) async fn disconnected(zk: &ZkClient) {
    let mut states = zk.state_watch();
    let _ = states.wait_for(|state| !state.is_some_and(|s| s.is_connected())).await;
}
