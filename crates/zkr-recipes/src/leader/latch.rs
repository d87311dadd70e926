//! `LeaderLatch`: one leader among the participants on a path, Curator-compatible.

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use parking_lot::Mutex;
use tokio::sync::{watch, Notify};
use tokio_stream::wrappers::WatchStream;
use tracing::Instrument as _;
use zkr_connection::retry::SessionPause;
use zkr_connection::ZkClient;

use super::Leadership;
use crate::locks::{LockError, LockInternals, LockNode, StandardLockInternalsDriver, Wait};
use crate::telemetry;
use zkr_connection::Classify as _;

/// Curator's `LeaderLatch` node name: `_c_<uuid>-latch-<seq>`.
pub use crate::layouts::LATCH_NAME;

/// Where a latch stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LatchState {
    /// In the queue (or joining it), not the leader.
    Waiting,
    /// The leader.
    Leader(Leadership),
    /// Closed: out of the election for good.
    Closed,
}

/// A participant of the election, from [`LeaderLatch::participants`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// The id the participant joined with (its node's data).
    pub id: String,
    /// Its latch node.
    pub node: String,
    /// Is it the leader (the first in the queue)?
    pub is_leader: bool,
}

/// Leader election, Apache Curator's `LeaderLatch`: every participant queues an ephemeral
/// sequential `latch-` node under the path; the first is the leader.
///
/// Built on [`LockInternals`] with the standard driver and the lock name `latch-`, so it
/// shares its guarantees: one request to join when nobody else is there, a watch on the node
/// ahead only (no herd), nothing left behind on cancellation. Node names and data (the id) are
/// Curator's, so Java `LeaderLatch`es on the same path take part in the same election.
///
/// - Leadership is dropped as soon as the manager's error policy says the connection is in an
///   error state (with the standard policy: `Suspended`), when the session ends, or when our
///   node is deleted. The latch then deletes its node and joins again at the back: it regains
///   leadership only by being first again, never by a stale node after a session expiry
///   (CURATOR-696).
/// - [`close`](Self::close) hands leadership to the next participant at once (our node is
///   deleted before it returns); dropping every handle leaves the election in the background.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use zkr_recipes::leader::LeaderLatch;
///
/// let latch = LeaderLatch::start(&zk, "/services/billing/leader", "billing-1").await?;
/// let term = latch.await_leadership().await?;
/// println!("leading with fencing token {}", term.fencing_token);
/// // ... act as the primary until latch.has_leadership() turns false ...
/// latch.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LeaderLatch {
    inner: Arc<Inner>,
    /// Closes the latch when the last handle goes (the participation task holds `inner`).
    _owner: Arc<Owner>,
}

#[derive(Debug)]
struct Owner(Arc<Inner>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[derive(Debug)]
struct Inner {
    internals: LockInternals<StandardLockInternalsDriver>,
    id: String,
    state: watch::Sender<LatchState>,
    closing: Notify,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Why the latch stopped by itself (the path holds another layout's contenders).
    failed: Mutex<Option<LockError>>,
    /// Our node while we lead: what [`LeaderLatch::proclaim`] writes to.
    leading: Mutex<Option<LockNode>>,
}

impl Inner {
    /// Stops the latch for good with `error`, which [`LeaderLatch::await_leadership`] answers.
    fn fail(&self, error: LockError) {
        tracing::error!(path = %self.internals.base_path(), %error, "the leader latch stopped");
        *self.failed.lock() = Some(error);
        self.close();
    }

    /// Marks the latch closed (announced once) and wakes the participation task.
    fn close(&self) {
        self.state.send_if_modified(|state| {
            let changed = *state != LatchState::Closed;
            *state = LatchState::Closed;
            changed
        });
        self.closing.notify_one();
    }
}

impl LeaderLatch {
    /// Joins the election at `path` as `id` (stored in our node, shown by
    /// [`participants`](Self::participants)) and returns the running latch (Curator's
    /// constructor and `start()`): it takes part in the background until
    /// [`close`](Self::close).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an invalid path (or one in the reserved `/zookeeper`
    /// tree), an empty id or one over ZooKeeper's data limit.
    ///
    /// # Cancel safety
    /// Cancel safe: it sends nothing itself; a dropped call started nothing.
    pub async fn start(zk: &ZkClient, path: &str, id: &str) -> Result<Self, LockError> {
        check_participant_id(id)?;
        let internals = LockInternals::new(zk, path, LATCH_NAME, StandardLockInternalsDriver, 1)?
            .with_node_data(id.as_bytes().to_vec())?
            .listing_after_create();
        let inner = Arc::new(Inner {
            internals,
            id: id.to_owned(),
            state: watch::channel(LatchState::Waiting).0,
            closing: Notify::new(),
            task: Mutex::new(None),
            failed: Mutex::new(None),
            leading: Mutex::new(None),
        });
        *inner.task.lock() = Some(tokio::spawn(participate(inner.clone())));
        Ok(LeaderLatch { _owner: Arc::new(Owner(inner.clone())), inner })
    }

    /// The election path.
    pub fn path(&self) -> &str {
        self.inner.internals.base_path()
    }

    /// The id this participant joined with.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Are we the leader now? Not once the term's session ended, or the connection entered an
    /// error state after the term began, even before [`state`](Self::state) says so (the latch
    /// moves on in a task of its own).
    pub fn has_leadership(&self) -> bool {
        matches!(*self.inner.state.borrow(), LatchState::Leader(_)) && self.term_holds()
    }

    /// Does the node of the current term still stand for leadership, as far as this process
    /// can tell?
    fn term_holds(&self) -> bool {
        let zk = self.inner.internals.zk();
        self.inner.leading.lock().as_ref().is_some_and(|node| node.lost_reason(zk).is_none())
    }

    /// Where the latch stands now.
    pub fn state(&self) -> LatchState {
        self.inner.state.borrow().clone()
    }

    /// Every change of [`state`](Self::state), starting with the current one.
    pub fn state_changes(&self) -> impl Stream<Item = LatchState> + Send + Unpin + 'static {
        WatchStream::new(self.inner.state.subscribe())
    }

    /// Waits until we are the leader. A term already lost (its session ended, or the
    /// connection entered an error state after it began) is not reported, even while
    /// [`state`](Self::state) still shows it: the wait goes on to the next term.
    ///
    /// # Errors
    /// [`LockError::IllegalState`] if the latch is (or gets) closed first ("the latch was
    /// closed"): a follower that never led lost nothing. [`LockError::LayoutConflict`] when
    /// the path holds another layout's contenders (a kazoo `Election`): the latch stopped
    /// rather than lead beside that layout's leader.
    ///
    /// # Cancel safety
    /// Cancel safe: waiting changes nothing.
    pub async fn await_leadership(&self) -> Result<Leadership, LockError> {
        let mut states = self.inner.state.subscribe();
        loop {
            match &*states.borrow_and_update() {
                LatchState::Leader(term) if self.term_holds() => return Ok(term.clone()),
                LatchState::Closed => return Err(self.not_running("the latch was closed")),
                LatchState::Leader(_) | LatchState::Waiting => {}
            }
            if states.changed().await.is_err() {
                return Err(self.not_running("the latch was closed"));
            }
        }
    }

    /// [`await_leadership`](Self::await_leadership), for at most `timeout`: `Ok(None)` if we
    /// are not the leader by then.
    ///
    /// # Errors
    /// As [`await_leadership`](Self::await_leadership).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn await_leadership_timeout(&self, timeout: Duration) -> Result<Option<Leadership>, LockError> {
        match tokio::time::timeout(timeout, self.await_leadership()).await {
            Ok(result) => result.map(Some),
            Err(_) => Ok(None),
        }
    }

    fn not_running(&self, reason: &'static str) -> LockError {
        let failed = self.inner.failed.lock().clone();
        failed.unwrap_or_else(|| LockError::IllegalState { path: self.path().to_owned(), reason })
    }

    /// Publishes `value` as the leader's without giving leadership up (etcd's `Proclaim`): it
    /// becomes our node's data, which is what Curator's `getLeader().getId()`,
    /// [`participants`](Self::participants), a [`LeaderObserver`](crate::leader::LeaderObserver) and `zkr elect --observe`
    /// show for the leader (its address, its epoch). Written on the session that holds our
    /// node, so a term that ended never writes to a later one. A later term (leadership lost
    /// and won again) starts with the latch's [`id`](Self::id) again.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty value or one over ZooKeeper's data limit;
    /// [`LockError::IllegalState`] when we do not lead ("not the leader"); a
    /// [`LockError::Connection`] error of kind [`Lost`](zkr_connection::ErrorKind::Lost) or a
    /// `NoNode` when leadership ended during the write (nothing was written then).
    ///
    /// # Cancel safety
    /// Cancel safe as far as leadership goes; a dropped call may or may not have written the
    /// value.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
    /// use zkr_recipes::leader::LeaderLatch;
    ///
    /// let latch = LeaderLatch::start(&zk, "/services/billing/leader", "billing-1").await?;
    /// latch.await_leadership().await?;
    /// latch.proclaim("10.0.0.7:8080 epoch=42").await?; // observers see it as the leader's
    /// # Ok(()) }
    /// ```
    pub async fn proclaim(&self, value: &str) -> Result<(), LockError> {
        check_participant_id(value)?;
        zkr_connection::path::validate_data(self.path(), value.as_bytes())?;
        let node = self.inner.leading.lock().clone();
        let node = node.ok_or_else(|| LockError::IllegalState {
            path: self.path().to_owned(),
            reason: "not the leader: only the leader proclaims",
        })?;
        node.set_data(self.inner.internals.zk(), value.as_bytes()).await?;
        Ok(())
    }

    /// Every participant in queue order, the leader first, with the id each joined with
    /// (Curator's `getParticipants`).
    ///
    /// # Errors
    /// As [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// Cancel safe (read-only).
    pub async fn participants(&self) -> Result<Vec<Participant>, LockError> {
        let nodes = self.inner.internals.participant_nodes().await?;
        participants_of(self.inner.internals.zk(), nodes).await
    }

    /// The current leader, if any (Curator's `getLeader`).
    ///
    /// # Errors
    /// As [`participants`](Self::participants).
    ///
    /// # Cancel safety
    /// Cancel safe (read-only).
    pub async fn leader(&self) -> Result<Option<Participant>, LockError> {
        Ok(self.participants().await?.into_iter().find(|p| p.is_leader))
    }

    /// Leaves the election and stops. As the leader, our node is deleted before this returns,
    /// so the next participant leads at once; while waiting, our node is deleted in the
    /// background right after. Idempotent.
    ///
    /// # Cancel safety
    /// Cancel safe: the participation task finishes leaving on its own.
    pub async fn close(&self) {
        self.inner.close();
        let task = self.inner.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

/// The participation loop: join, wait to be first, lead until leadership is lost, leave, join
/// again; until closed or every handle is dropped.
async fn participate(inner: Arc<Inner>) {
    let path = inner.internals.base_path().to_owned();
    // A failed join is tried again after 50 ms, doubling up to 5 s.
    let mut pause = SessionPause::new(Duration::from_millis(50), Duration::from_secs(5));
    loop {
        if *inner.state.borrow() == LatchState::Closed {
            return;
        }
        let span = telemetry::operation_span!("leader.elect", path.as_str());
        let started = tokio::time::Instant::now();
        let attempt = tokio::select! {
            attempt = inner.internals.attempt_lock(Wait::Forever).instrument(span.clone()) => attempt,
            () = inner.closing.notified() => return,
        };
        let outcome = attempt.as_ref().map(|node| if node.is_some() { "elected" } else { "not_elected" });
        telemetry::ended(&span, started, outcome.map_err(LockError::kind));
        let node = match attempt {
            Ok(Some(node)) => node,
            Ok(None) => continue,
            Err(LockError::Connection(zkr_connection::Error::Closed)) => {
                // The connection manager was closed: no session will come back.
                inner.close();
                return;
            }
            // Joining would make two leaders, each unseen by the other: stop, and say why.
            Err(e @ LockError::LayoutConflict { .. }) => return inner.fail(e),
            Err(e) if super::retry_join(&path, &e, &mut pause, &inner.closing).await => continue,
            Err(_) => return,
        };
        pause.reset();
        lead(&inner, &node).await;
        // Leave: the node goes before we queue again, so no stale node can lead for us.
        if let Err(e) = inner.internals.release_lock(&node).await {
            tracing::warn!(%path, error = %e, "could not delete our latch node; the session end will");
        }
    }
}

/// Holds leadership until it is lost or the latch closes.
async fn lead(inner: &Inner, node: &LockNode) {
    let path = inner.internals.base_path();
    let term = Leadership::new(inner.internals.zk(), path, Arc::new(node.clone()));
    // Before the state says we lead, so that a proclaim right after `await_leadership` finds it.
    *inner.leading.lock() = Some(node.clone());
    let _term = Cleared(&inner.leading);
    inner.state.send_if_modified(|state| {
        if *state == LatchState::Closed {
            return false;
        }
        *state = LatchState::Leader(term);
        true
    });
    if *inner.state.borrow() == LatchState::Closed {
        return;
    }
    tracing::info!(path, node = node.name(), "leadership taken");
    let _leading = crate::telemetry::Leading::start(path);
    tokio::select! {
        reason = node.lost(inner.internals.zk()) => {
            tracing::warn!(path, %reason, "leadership lost");
            inner.state.send_if_modified(|state| {
                if *state == LatchState::Closed {
                    return false;
                }
                *state = LatchState::Waiting;
                true
            });
        }
        () = inner.closing.notified() => {}
    }
}

/// Clears the node [`LeaderLatch::proclaim`] writes to when a term ends, however it ends.
struct Cleared<'a>(&'a Mutex<Option<LockNode>>);

impl Drop for Cleared<'_> {
    fn drop(&mut self) {
        *self.0.lock() = None;
    }
}

/// Refuses an empty participant id: such participants cannot be told apart in
/// [`LeaderLatch::participants`] or Curator's `getParticipants` (Curator's default id is `""`).
pub(crate) fn check_participant_id(id: &str) -> Result<(), LockError> {
    if id.is_empty() {
        return Err(LockError::InvalidArgument("a participant id must not be empty".into()));
    }
    Ok(())
}

/// The participants of the `LeaderLatch` election at `path` in queue order, the leader first,
/// without taking part: an observer's view (what `zkr elect --observe` prints). Curator and zkr
/// latches alike.
///
/// # Errors
/// [`LockError::InvalidArgument`] for a bad path; otherwise as [`ZkClient::retry`].
///
/// # Cancel safety
/// Cancel safe (read-only).
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// let leader = zkr_recipes::leader::latch_participants(&zk, "/services/billing/leader").await?.into_iter().find(|p| p.is_leader);
/// println!("leader: {:?}", leader.map(|p| p.id));
/// # Ok(()) }
/// ```
pub async fn latch_participants(zk: &ZkClient, path: &str) -> Result<Vec<Participant>, LockError> {
    let internals = LockInternals::new(zk, path, LATCH_NAME, StandardLockInternalsDriver, 1)?;
    participants_of(zk, internals.participant_nodes().await?).await
}

/// The participants behind `nodes` (in queue order): each node's data is its id. A node that
/// went between the listing and the read is no participant any more; the first that remains
/// leads.
pub(crate) async fn participants_of(
    zk: &ZkClient,
    nodes: Vec<String>,
) -> Result<Vec<Participant>, LockError> {
    let mut participants: Vec<Participant> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let n = node.as_str();
        if let Some((data, _)) = crate::errors::read_node(zk, n).await? {
            let is_leader = participants.is_empty();
            participants.push(Participant {
                id: String::from_utf8_lossy(&data).into_owned(),
                node,
                is_leader,
            });
        }
    }
    Ok(participants)
}
