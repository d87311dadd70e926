//! [`ZkClient::status`]: what the manager is doing, at a glance (deadpool's `Pool::status()`).

use std::time::Duration;

use crate::session::client::ZkClient;
use crate::session::state::ConnectionState;

/// A point-in-time view of a [`ZkClient`], for health checks, logs and admin endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Status {
    /// The latest connection state (`None` before the first connection).
    pub state: Option<ConnectionState>,
    /// How long ago that state was entered.
    pub in_state_for: Duration,
    /// The current session's id, while there is one.
    pub session_id: Option<i64>,
    /// The current session's generation (1 for the first session, one more per rebuild; 0
    /// before the first).
    pub generation: u64,
    /// The session timeout the server granted, while there is a session.
    pub negotiated_timeout: Option<Duration>,
    /// The servers the manager connects to (`host:port`): the connect string's, or the
    /// ensemble's as `/zookeeper/config` lists it once the tracker has read it.
    pub servers: Vec<String>,
    /// Whether the manager has been closed.
    pub closed: bool,
}

impl ZkClient {
    /// The manager's status now: state and for how long, session id and generation, the
    /// negotiated session timeout, the servers.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) {
    /// let status = zk.status();
    /// println!("{:?} for {:?}, session {:?}", status.state, status.in_state_for, status.session_id.map(|id| format!("{id:#x}")));
    /// # }
    /// ```
    pub fn status(&self) -> Status {
        let shared = &self.shared;
        let session = shared.session.borrow().clone();
        Status {
            state: *shared.state.borrow(),
            in_state_for: shared.state_since.lock().elapsed(),
            session_id: session.as_ref().map(crate::session::client::Session::id),
            generation: self.generation(),
            negotiated_timeout: session.as_ref().map(|s| s.client().session_timeout()),
            servers: shared.ensemble.hosts(),
            closed: self.is_closed(),
        }
    }
}
