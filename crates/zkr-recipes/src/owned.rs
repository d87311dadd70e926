//! [`Owned`]: a node that stands for a hold (a lock contender, a semaphore lease, a queue
//! item's lock, a latch node, a group member, a barrier member), reachable only through the
//! session that created it.
//!
//! Every user of one `ZkClient` shares its session, and after an expiry the next session may
//! hold a node at the very same path for another holder (a queue item's lock is named after
//! the item). A check, write or delete of a hold's node on whatever session is current would
//! act on that other holder's node: the defect this type exists to rule out. An `Owned` is
//! made only where its node was created, carries the creating session, and offers no way to
//! reach the node but through that session: [`transaction`](Owned::transaction) and
//! [`retry`](Owned::retry) are pinned to it ([`RetryOptions::on_session`]), so they fail with
//! `SessionExpired`, sending nothing, once the manager has given that session up.

use std::future::Future;
use std::time::Duration;

use zkr_connection::retry::RetryForever;
use zkr_connection::{RetryOptions, Session, SessionClient, Transaction, ZkClient};

use crate::fence::SessionFence;

/// A hold's node and the session (with its fence) it was created on.
#[derive(Debug, Clone)]
pub(crate) struct Owned {
    path: String,
    fence: SessionFence,
}

impl Owned {
    /// `path`, just created on `fence`'s session.
    pub(crate) fn created(path: impl Into<String>, fence: SessionFence) -> Self {
        Owned { path: path.into(), fence }
    }

    /// The node's path (to show, watch or compare; writes go through the methods below).
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The fence of the session the node lives with.
    pub(crate) fn fence(&self) -> &SessionFence {
        &self.fence
    }

    /// The session the node lives with.
    pub(crate) fn session(&self) -> &Session {
        self.fence.session()
    }

    /// A transaction that commits only on the node's session and only while the node exists
    /// there (its first operation checks it).
    pub(crate) fn transaction(&self, zk: &ZkClient) -> Transaction {
        zk.transaction().on_session(self.session()).check_exists(&self.path)
    }

    /// Sends the node's delete on its session now (a request is sent when it is made, so a
    /// delete sent before the next create goes first); the reply comes with the future.
    pub(crate) fn send_delete(
        &self,
        zk: &ZkClient,
    ) -> impl Future<Output = Result<(), zookeeper_client::Error>> + Send + 'static {
        self.fence.client(zk).delete(&self.path, None)
    }

    /// Deletes the node in the background, on its session for as long as that lives
    /// ([`ZkClient::guaranteed_delete`] with the session's generation: once the session ended,
    /// the node went with it and nothing is sent).
    pub(crate) fn guaranteed_delete(&self, zk: &ZkClient) -> zkr_connection::GuaranteedDelete {
        zk.guaranteed_delete(self.path.clone(), Some(self.fence.generation()))
    }

    /// `op` on the node's session under the retry policy; `SessionExpired` once it ended,
    /// never a call on its successor.
    ///
    /// # Cancel safety
    /// As [`ZkClient::retry`].
    pub(crate) async fn retry<T, F, Fut>(&self, zk: &ZkClient, op: F) -> zkr_connection::Result<T>
    where
        F: FnMut(SessionClient) -> Fut,
        Fut: Future<Output = Result<T, zookeeper_client::Error>>,
    {
        on_session(zk, self.session(), op).await
    }

    /// `op` on the node's session, tried again after every connection loss for as long as
    /// that session lives: the background half of a release, which must not give up on a node
    /// that would outlive it (a retry policy's limit would leave it behind on a live session).
    /// Ends with `SessionExpired` once the manager gave the session up (the node went with
    /// it), or `Closed` with the manager.
    ///
    /// # Cancel safety
    /// As [`ZkClient::retry`].
    pub(crate) async fn retry_while_alive<T, F, Fut>(&self, zk: &ZkClient, op: F) -> zkr_connection::Result<T>
    where
        F: FnMut(SessionClient) -> Fut,
        Fut: Future<Output = Result<T, zookeeper_client::Error>>,
    {
        let forever = RetryForever::new(Duration::from_millis(200))?;
        with_options(zk, RetryOptions::default().on_session(self.session()).policy(forever), op).await
    }
}

/// `op` on `session` under the retry policy: the shared home of a call that must not move to
/// another session (an [`Owned`] node's, or the create that makes one).
///
/// # Cancel safety
/// As [`ZkClient::retry`].
pub(crate) async fn on_session<T, F, Fut>(
    zk: &ZkClient,
    session: &Session,
    op: F,
) -> zkr_connection::Result<T>
where
    F: FnMut(SessionClient) -> Fut,
    Fut: Future<Output = Result<T, zookeeper_client::Error>>,
{
    with_options(zk, RetryOptions::default().on_session(session), op).await
}

/// `op` on a session's client under `options` (pinned to a session by the callers): the one
/// retry loop of [`on_session`] and [`Owned::retry_while_alive`].
async fn with_options<T, F, Fut>(zk: &ZkClient, options: RetryOptions, mut op: F) -> zkr_connection::Result<T>
where
    F: FnMut(SessionClient) -> Fut,
    Fut: Future<Output = Result<T, zookeeper_client::Error>>,
{
    zk.retry_with(options, |s| op(s.client().clone())).await
}
