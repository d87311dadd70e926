//! `LeaderSelector`: runs your async work while leader, cancels it when leadership is lost.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{watch, Notify};
use zkr_connection::retry::SessionPause;
use zkr_connection::ZkClient;

use crate::locks::{
    InterProcessMutex, LockError, LockInternals, LostReason, StandardLockInternalsDriver, LOCK_NAME,
};

use super::{Leadership, Participant};

type Work = Arc<dyn Fn(Leadership) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Leader election that runs work: Apache Curator's `LeaderSelector`.
///
/// Participants queue for an [`InterProcessMutex`] at the path (Curator's `lock-` nodes with the
/// participant id as data, so Java `LeaderSelector`s on the same path take part). The leader
/// runs the work closure; leadership ends when the work returns, or when the lock is lost (the
/// error policy's connection state, the session's end, or the node's deletion), in which case
/// the work's future is dropped: cancelled at its next await, as Curator interrupts
/// `takeLeadership`. With [`auto_requeue`](LeaderSelectorBuilder::auto_requeue) the participant
/// queues again after each term.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use zkr_recipes::leader::LeaderSelector;
///
/// let selector = LeaderSelector::builder(&zk, "/services/scheduler/leader", "scheduler-1", |term| async move {
///     println!("leading with fencing token {}", term.fencing_token);
///     // ... run the schedule; return to give leadership up ...
/// })
/// .auto_requeue(true)
/// .start()
/// .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderSelector {
    inner: Arc<Inner>,
    _owner: Arc<Owner>,
}

impl std::fmt::Debug for LeaderSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelector").field("path", &self.path()).field("id", &self.inner.id).finish()
    }
}

struct Inner {
    mutex: InterProcessMutex,
    id: String,
    work: Work,
    auto_requeue: bool,
    /// `Some(term)` while leading.
    leading: watch::Sender<Option<Leadership>>,
    /// How many terms have ended.
    terms: watch::Sender<u64>,
    closing: Notify,
    /// Ends the current term ([`LeaderSelector::interrupt_leadership`]); no permit is kept.
    interrupt: Notify,
    closed: std::sync::atomic::AtomicBool,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

struct Owner(Arc<Inner>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.0.closing.notify_one();
    }
}

/// Builds a [`LeaderSelector`]: [`LeaderSelector::builder`].
#[must_use = "a selector joins the election only at start()"]
pub struct LeaderSelectorBuilder {
    zk: ZkClient,
    path: String,
    id: String,
    work: Work,
    auto_requeue: bool,
}

impl std::fmt::Debug for LeaderSelectorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelectorBuilder").field("path", &self.path).field("id", &self.id).finish()
    }
}

impl LeaderSelectorBuilder {
    /// Queue again after each term (default: one term only).
    pub fn auto_requeue(mut self, requeue: bool) -> Self {
        self.auto_requeue = requeue;
        self
    }

    /// Joins the election and returns the running selector (Curator's `start()`): it takes
    /// part in the background until [`close`](LeaderSelector::close).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an invalid path (or one in the reserved `/zookeeper`
    /// tree), an empty id or one over the data limit.
    ///
    /// # Cancel safety
    /// Cancel safe: it sends nothing itself; a dropped call started nothing.
    pub async fn start(self) -> Result<LeaderSelector, LockError> {
        super::latch::check_participant_id(&self.id)?;
        let internals = LockInternals::new(&self.zk, &self.path, LOCK_NAME, StandardLockInternalsDriver, 1)?
            .with_node_data(self.id.as_bytes().to_vec())?;
        let inner = Arc::new(Inner {
            mutex: InterProcessMutex::from_internals(internals)?,
            id: self.id,
            work: self.work,
            auto_requeue: self.auto_requeue,
            leading: watch::channel(None).0,
            terms: watch::channel(0).0,
            closing: Notify::new(),
            interrupt: Notify::new(),
            closed: std::sync::atomic::AtomicBool::new(false),
            task: Mutex::new(None),
        });
        *inner.task.lock() = Some(tokio::spawn(participate(inner.clone())));
        Ok(LeaderSelector { _owner: Arc::new(Owner(inner.clone())), inner })
    }
}

impl LeaderSelector {
    /// A selector at `path` joining as `id`, running `work` while leader; it joins at
    /// [`start`](LeaderSelectorBuilder::start).
    pub fn builder<F, Fut>(zk: &ZkClient, path: &str, id: &str, work: F) -> LeaderSelectorBuilder
    where
        F: Fn(Leadership) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        LeaderSelectorBuilder {
            zk: zk.clone(),
            path: path.to_owned(),
            id: id.to_owned(),
            work: Arc::new(move |term| Box::pin(work(term))),
            auto_requeue: false,
        }
    }

    /// The election path.
    pub fn path(&self) -> &str {
        self.inner.mutex.path()
    }

    /// Are we the leader (running the work) now?
    pub fn has_leadership(&self) -> bool {
        self.inner.leading.borrow().is_some()
    }

    /// A receiver of our current term (`None` while not leading).
    pub fn leadership(&self) -> watch::Receiver<Option<Leadership>> {
        self.inner.leading.subscribe()
    }

    /// A receiver of how many terms have ended.
    pub fn terms_ended(&self) -> watch::Receiver<u64> {
        self.inner.terms.subscribe()
    }

    /// Every participant in queue order, the leader first, with its id.
    ///
    /// # Errors
    /// As [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// Cancel safe (read-only).
    pub async fn participants(&self) -> Result<Vec<Participant>, LockError> {
        let nodes = self.inner.mutex.participant_nodes().await?;
        super::latch::participants_of(self.inner.mutex.internals().zk(), nodes).await
    }

    /// The current leader, if any (Curator's `getLeader`): the first participant in queue order.
    ///
    /// # Errors
    /// As [`participants`](Self::participants).
    ///
    /// # Cancel safety
    /// Cancel safe (read-only).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(selector: zkr_recipes::leader::LeaderSelector) -> Result<(), zkr_recipes::locks::LockError> {
    /// if let Some(leader) = selector.leader().await? {
    ///     println!("{} leads", leader.id);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn leader(&self) -> Result<Option<Participant>, LockError> {
        Ok(self.participants().await?.into_iter().find(|p| p.is_leader))
    }

    /// Ends the current term, if we lead (Curator's `interruptLeadership`): the work's future is
    /// dropped, our node deleted, and the next participant leads; with
    /// [`auto_requeue`](LeaderSelectorBuilder::auto_requeue) we queue again. `false` when we did
    /// not lead.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(selector: zkr_recipes::leader::LeaderSelector) {
    /// if selector.interrupt_leadership() {
    ///     println!("handed leadership on");
    /// }
    /// # }
    /// ```
    pub fn interrupt_leadership(&self) -> bool {
        let leading = self.has_leadership();
        self.inner.interrupt.notify_waiters();
        leading
    }

    /// Queues for leadership again when we are not queued (Curator's `requeue`): after a term
    /// ended without [`auto_requeue`](LeaderSelectorBuilder::auto_requeue), or after an error
    /// stopped the participation. `false` when already queued or leading, or once closed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(selector: zkr_recipes::leader::LeaderSelector) {
    /// let queued_again = selector.requeue();
    /// # }
    /// ```
    pub fn requeue(&self) -> bool {
        let mut task = self.inner.task.lock();
        if is_closed(&self.inner) || task.as_ref().is_some_and(|t| !t.is_finished()) {
            return false;
        }
        *task = Some(tokio::spawn(participate(self.inner.clone())));
        true
    }

    /// Leaves the election: cancels the work if leading, deletes our node, stops. Idempotent.
    ///
    /// # Cancel safety
    /// Cancel safe: the participation task finishes leaving on its own.
    pub async fn close(&self) {
        self.inner.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.closing.notify_one();
        let task = self.inner.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

fn is_closed(inner: &Inner) -> bool {
    inner.closed.load(std::sync::atomic::Ordering::SeqCst)
}

async fn participate(inner: Arc<Inner>) {
    let path = inner.mutex.path().to_owned();
    // A failed join is tried again after 50 ms, doubling up to 5 s.
    let mut pause =
        SessionPause::new(std::time::Duration::from_millis(50), std::time::Duration::from_secs(5));
    while !is_closed(&inner) {
        let acquired = tokio::select! {
            acquired = inner.mutex.acquire() => acquired,
            () = inner.closing.notified() => return,
        };
        let guard = match acquired {
            Ok(guard) => guard,
            Err(LockError::Connection(zkr_connection::Error::Closed)) => return,
            Err(e) if super::retry_join(&path, &e, &mut pause, &inner.closing).await => continue,
            Err(_) => return,
        };
        pause.reset();
        let term = Leadership::new(inner.mutex.internals().zk(), &path, guard.shared_node().clone());
        // Listening before leadership is announced: an interrupt right after is not missed.
        let interrupted = inner.interrupt.notified();
        tokio::pin!(interrupted);
        interrupted.as_mut().enable();
        inner.leading.send_replace(Some(term.clone()));
        let leading = crate::telemetry::Leading::start(&path);
        let work = (inner.work)(term);
        let ended: Option<LostReason> = tokio::select! {
            () = work => None,
            reason = guard.lost() => Some(reason),
            () = inner.closing.notified() => None,
            () = &mut interrupted => None,
        };
        if let Some(reason) = ended {
            tracing::warn!(%path, %reason, "leadership lost; the work was cancelled");
        }
        inner.leading.send_replace(None);
        drop(leading);
        if let Err(e) = guard.release().await {
            tracing::debug!(%path, error = %e, "releasing leadership");
        }
        inner.terms.send_modify(|n| *n += 1);
        if !inner.auto_requeue {
            return;
        }
    }
}
