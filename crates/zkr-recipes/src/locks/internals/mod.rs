//! [`LockInternals`]: the lock algorithm every lock recipe shares. The wait is in `wait.rs`,
//! the ways of learning our turn in `turn.rs`.

mod cleanup;
mod fenced;
mod heads;
mod lister;
mod node;
mod report;
mod turn;
mod wait;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument as _;
use zkr_connection::protected::{ProtectedCreate, ProtectedNode};
use zkr_connection::retry::RetryBudget;
use zkr_connection::{is_retryable, is_session_error, path, Deadline, RetryOptions, ZkClient};

use super::driver::LockInternalsDriver;
use super::error::LockError;
use super::layout::is_ours;
use super::layout::LayoutCheck;
use super::view::{ChildrenView, MAX_QUEUE};
use crate::fence::LostReason;
use crate::fence::SessionFence;
use cleanup::NodeCleanup;

/// A delete sent by [`LockInternals::send_release`], awaiting its reply.
pub(crate) type Deleting =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), zookeeper_client::Error>> + Send>>;

/// A release [`LockInternals::send_release`] began: its `lock.release` span (the delete went
/// under it), and the delete sent or what became of the node.
pub(crate) struct Release {
    span: tracing::Span,
    sent: Result<Deleting, &'static str>,
}
use heads::ReleasedHeads;
use lister::Lister;
pub use node::LockNode;
pub(crate) use node::{follow_node, node_gone, TIMEOUT_CLEANUP_GRACE};
use wait::{Look, WaitError};

/// How long [`LockInternals::attempt_lock`] may wait for the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Until the lock is ours (or an error).
    Forever,
    /// Until the caller's deadline: the time to create our node counts, and an error that
    /// names the bound names the caller's timeout.
    Until(Deadline),
    /// Not at all: take the lock if it is free after our node is created, else give up.
    NoWait,
}

/// Counts this process's attempts on one lock that are under way.
struct AttemptCount<'a> {
    count: &'a AtomicUsize,
    before: usize,
}

impl<'a> AttemptCount<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        let before = count.fetch_add(1, Ordering::SeqCst);
        AttemptCount { count, before }
    }

    fn alone(&self) -> bool {
        self.before == 0 && self.count.load(Ordering::SeqCst) == 1
    }
}

impl Drop for AttemptCount<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The lock algorithm (Curator's `LockInternals`), shared by the lock recipes; the
/// [`LockInternalsDriver`] supplies the policy.
///
/// To acquire: create our contender node (protected, so a lost reply is found again, with the
/// first children listing sent just ahead of it: one round trip when the lock is free, and the
/// server answers the listing before it writes the create); sort the contenders; if we are among
/// the first `max_leases` we hold it; otherwise set a data watch on the contender `max_leases`
/// ahead of us (only that one: no herd, across processes or inside one) and wait for it to go.
/// When the node we watched was the head of the queue its deletion means we hold the lock
/// (sequence numbers only grow), without listing again.
///
/// While this process uses the lock and its queue is short, a live copy of the children (kept by
/// a persistent watch, `locks/view.rs`) replaces both the listing and the watch on the node
/// ahead: the acquire is the create alone, and a waiter holds the lock when the copy shows
/// nobody ahead, with no listing per hand-over, at the price of a bounded number of
/// notifications.
///
/// If our node vanishes (the session expired while we waited) we start over on the new session
/// as the retry policy allows. On timeout, error or cancellation our node is deleted in the
/// background.
#[derive(Debug)]
pub struct LockInternals<D> {
    zk: ZkClient,
    base_path: String,
    lock_name: String,
    driver: Arc<D>,
    max_leases: usize,
    node_data: Vec<u8>,
    lister: Lister,
    attempts: AtomicUsize,
    released_heads: ReleasedHeads,
    /// The lock directory's children, kept live while this process is its only user.
    view: ChildrenView,
    /// What the latest listing showed of another layout's contenders.
    layout: Arc<LayoutCheck>,
    /// Whether a lone attempt may send its first listing with its create (one round trip
    /// less, one request more: see [`listing_after_create`](Self::listing_after_create)).
    list_with_create: bool,
    /// A waiter also watches the contender ahead of the one it waits on ([`prompt_hand_over`](Self::prompt_hand_over)).
    prompt: bool,
}

impl<D: LockInternalsDriver> LockInternals<D> {
    /// Lock internals for contenders named by `driver` under `base_path`.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for `/`, an invalid path or lock name.
    pub fn new(
        zk: &ZkClient,
        base_path: &str,
        lock_name: &str,
        driver: D,
        max_leases: usize,
    ) -> Result<Self, LockError> {
        zk.validate_recipe_path(base_path)?;
        if base_path == "/" {
            return Err(LockError::InvalidArgument(format!(
                "invalid lock path {base_path:?}: a lock needs a path of its own, not the root"
            )));
        }
        path::validate_name(lock_name)?;
        Ok(LockInternals {
            zk: zk.clone(),
            base_path: base_path.to_string(),
            lock_name: lock_name.to_string(),
            driver: Arc::new(driver),
            max_leases: max_leases.max(1),
            node_data: Vec::new(),
            lister: Lister::default(),
            attempts: AtomicUsize::new(0),
            released_heads: ReleasedHeads::default(),
            view: ChildrenView::new(base_path),
            layout: Arc::default(),
            list_with_create: true,
            prompt: false,
        })
    }

    /// Every attempt lists the directory after its create, as Curator's recipes do (create,
    /// list, watch the node ahead: three requests), never with it (list, create and the
    /// parent's `Stat`, one round trip less). For recipes that join once and many at a time,
    /// such as the leader latch: 100 participants joining at once made the server handle
    /// 9.2 packets each way per join with the listing sent along, against Curator's 5.5.
    pub(crate) fn listing_after_create(mut self) -> Self {
        self.list_with_create = false;
        self
    }

    /// A prompt hand-over: a waiter among other processes' waiters watches the contender
    /// ahead of the one it waits on as well, and lists the queue when that one goes, so that
    /// when its own turn comes it already knows, with no listing between the holder's delete
    /// and the new holder. By default (as in Curator's recipe) it lists after the node ahead
    /// goes, unless it saw that node lead: one round trip on the hand-over's path when the
    /// queue is more than two deep.
    ///
    /// The price is paid by the server: one more watch per waiter (a request and its reply)
    /// and one more notification per hand-over (`docs/benchmarks.md`, "The prompt
    /// hand-over"). It changes nothing while the lock's children view serves the waiters (a
    /// process that is the lock's only user, or one of three). Locks of one lease whose
    /// head's release grants the next (the mutex, the leader latch); others ignore it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
    /// use zkr_recipes::locks::{InterProcessMutex, LockInternals, StandardLockInternalsDriver};
    ///
    /// let internals = LockInternals::new(&zk, "/locks/orders", "lock-", StandardLockInternalsDriver, 1)?;
    /// let mutex = InterProcessMutex::from_internals(internals.prompt_hand_over())?;
    /// mutex.acquire().await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn prompt_hand_over(mut self) -> Self {
        self.prompt = true;
        self
    }

    /// Data stored in every contender node (for example who holds it). Defaults to empty.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for data over ZooKeeper's limit.
    pub fn with_node_data(mut self, data: Vec<u8>) -> Result<Self, LockError> {
        path::validate_data(&self.base_path, &data)?;
        self.node_data = data;
        Ok(self)
    }

    /// The connection manager.
    pub fn zk(&self) -> &ZkClient {
        &self.zk
    }

    /// The lock path (parent of the contender nodes).
    pub fn base_path(&self) -> &str {
        &self.base_path
    }

    /// The lock name passed to the driver.
    pub fn lock_name(&self) -> &str {
        &self.lock_name
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.driver
    }

    /// Sorts a listing of the directory, looking at it for other layouts on the way.
    fn sorter(&self) -> impl FnOnce(Vec<String>) -> Vec<String> + Send + 'static {
        let driver = self.driver.clone();
        let lock_name = self.lock_name.clone();
        let layout = self.layout.clone();
        move |children| {
            layout.observe(&children, |name| is_ours(&*driver, &lock_name, name));
            driver.sort_children(&children, &lock_name)
        }
    }

    /// How many contenders hold the lock at once.
    pub fn max_leases(&self) -> usize {
        self.max_leases
    }

    /// Tries to take the lock, waiting as `wait` says. `Ok(None)` when the wait ran out.
    ///
    /// # Errors
    /// [`LockError::Connection`] (connection failures the retry policy gave up on, a deadline
    /// during node creation, a closed manager), [`LockError::NodeVanished`].
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped attempt leaves no node behind.
    pub async fn attempt_lock(&self, wait: Wait) -> Result<Option<LockNode>, LockError> {
        let span = report::acquiring(&self.base_path);
        let started = Instant::now();
        let result = self.attempt(wait).instrument(span.clone()).await;
        report::attempt(&span, &result, started);
        result
    }

    /// [`attempt_lock`](Self::attempt_lock) without its report.
    async fn attempt(&self, wait: Wait) -> Result<Option<LockNode>, LockError> {
        let mut budget = RetryBudget::new(self.zk.retry_policy().clone()).until(wait.deadline());
        let attempts = AttemptCount::enter(&self.attempts);
        loop {
            let error_epoch = self.zk.error_epoch();
            let not_before = self.lister.mark();
            // With other local attempts under way, share their listings instead of one sent
            // with our create: N waiters arriving at once must not each download the queue.
            let alone = attempts.alone();
            let by_view = alone && self.view.is_live(&self.zk);
            let list = self.list_with_create && alone && !by_view && !self.view.others_busy();
            let Some(mut node) = self.create_contender(wait, list).await? else {
                return Ok(None);
            };
            let mut cleanup = NodeCleanup::new(&self.zk, &node.path, node.session.generation());
            let first = self.first_look(&mut node, by_view, wait, not_before, error_epoch).await;
            // Another layout's contenders in the listing: joining would make two holders.
            if let Err(conflict) = self.layout.conflict(&self.base_path) {
                let _ =
                    tokio::time::timeout(TIMEOUT_CLEANUP_GRACE, cleanup.delete_now(&self.zk, &node.session))
                        .await;
                return Err(conflict);
            }
            match self.wait_for_lock(&node.session, &node.name, first, wait, &mut budget).await {
                Ok(error_epoch) => {
                    cleanup.disarm();
                    let fence = SessionFence::new(node.session, error_epoch);
                    return Ok(Some(LockNode::new(node.path, node.name, node.stat, fence)));
                }
                Err(WaitError::NotAcquired) => {
                    // Bounded: past it, the delete goes on in the background (the cleanup's guard).
                    let _ = tokio::time::timeout(
                        TIMEOUT_CLEANUP_GRACE,
                        cleanup.delete_now(&self.zk, &node.session),
                    )
                    .await;
                    return Ok(None);
                }
                // Refused: our node goes before the caller hears it, as a timed-out one does.
                Err(WaitError::Failed(e @ LockError::LayoutConflict { .. })) => {
                    let deleting = cleanup.delete_now(&self.zk, &node.session);
                    let _ = tokio::time::timeout(TIMEOUT_CLEANUP_GRACE, deleting).await;
                    return Err(e);
                }
                Err(WaitError::Failed(e)) => return Err(e),
                Err(WaitError::NodeMissing) => {
                    drop(cleanup);
                    match budget.next_sleep() {
                        Ok(sleep) => {
                            tracing::debug!(node = %node.name, retries = budget.retries(), "our lock node vanished while waiting; starting over");
                            tokio::time::sleep(sleep).await;
                        }
                        Err(stop) if stop.is_deadline() => return Ok(None),
                        Err(_) => {
                            return Err(LockError::NodeVanished {
                                path: self.base_path.clone(),
                                node: node.name,
                            })
                        }
                    }
                }
            }
        }
    }

    /// Creates our contender node (protected); with `list`, the first listing goes just ahead
    /// of the create, in the same round trip (`ProtectedCreate::list_siblings`). `None` when
    /// the deadline passed.
    async fn create_contender(&self, wait: Wait, list: bool) -> Result<Option<ProtectedNode>, LockError> {
        let spec = self.driver.contender(&self.lock_name);
        let mut request = ProtectedCreate::new(&self.base_path, &spec.name, spec.mode)
            .tag(spec.tag)
            .data(&self.node_data)
            .parents(self.driver.parents())
            .list_siblings(list);
        if let Wait::Until(deadline) = wait {
            request = request.retry_options(RetryOptions::default().deadline(Some(deadline)));
        }
        match self.zk.create_protected_ext(request).await {
            Ok(node) => Ok(Some(node)),
            Err(zkr_connection::Error::DeadlineExceeded { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// What the wait starts from: the listing sent with the create (when our sequence proves
    /// it complete), or, while this process is the lock's only user, the children view's.
    async fn first_look(
        &self,
        node: &mut ProtectedNode,
        by_view: bool,
        wait: Wait,
        not_before: u64,
        epoch: u64,
    ) -> Look {
        let mut siblings = node.siblings.take();
        if by_view {
            let from_view = self.view.children_with(&node.session, &node.name);
            siblings = zkr_connection::within(wait.deadline(), from_view).await.flatten();
        }
        let listing = siblings.map(|children| Arc::new(self.sorter()(children)));
        self.view.record(node.sequence);
        match listing.as_deref().map(Vec::len) {
            Some(n) if n > MAX_QUEUE => self.view.long_queue(),
            Some(_) if !by_view => self.view.short_queue(&self.zk, &node.session),
            _ => {}
        }
        // Without a listing, the first one is sent from the wait: a disruption before it does
        // not make the new holder's lock doubtful (the session survived), one after it does.
        let epoch = if listing.is_some() { epoch } else { self.zk.error_epoch() };
        // The view proved the first listing: it can also tell us when our turn comes.
        let via_view = by_view && listing.is_some();
        Look { listing, not_before, epoch, via_view }
    }

    /// Deletes a held node. When the lock is lost (before or during the delete) or the
    /// connection fails, the delete goes to a background guaranteed delete and this returns
    /// `Ok` at once; once the node's session has ended there is nothing to do. `Ok(Some(reason))`
    /// when the delete found that the hold had already ended without the holder being told (the
    /// node gone, or the session ended with the delete in flight): the loss is reported then.
    ///
    /// # Errors
    /// [`LockError::Connection`] for an answer that retrying cannot fix (`NoAuth`).
    ///
    /// # Cancel safety
    /// Not cancel safe by itself: a dropped release may leave the node until its session ends.
    /// The lock guards call it so that a dropped release still deletes in the background.
    pub async fn release_lock(&self, node: &LockNode) -> Result<Option<LostReason>, LockError> {
        let sent = self.send_release(node);
        self.finish_release(node, sent).await
    }

    /// The first half of [`release_lock`](Self::release_lock), synchronous: the delete of a
    /// held node is sent before this returns (zookeeper-client sends a request when it is
    /// made), so a guard dropped before the next acquire has its delete ahead of that
    /// acquire's create. `Err` says what became of the node when there is nothing to await
    /// (it went with its session, or the lock was lost and the delete goes on in the
    /// background).
    pub(crate) fn send_release(&self, node: &LockNode) -> Release {
        let span = report::releasing(node, &self.base_path);
        let sent = span.in_scope(|| self.send_delete(node));
        Release { span, sent }
    }

    /// [`send_release`](Self::send_release) in its span.
    fn send_delete(&self, node: &LockNode) -> Result<Deleting, &'static str> {
        // Asked first, so that a loss nobody asked about is still reported.
        let lost = node.lost_reason(&self.zk);
        if !node.owned.fence().is_current(&self.zk) {
            return Err("already_gone");
        }
        if self.max_leases == 1 {
            self.released_heads.remember(&node.name);
        }
        // After a loss nothing blocks: the delete goes on in the background while the session
        // still allows it (a dead server would hold the delete until the retry policy gives up).
        if lost.is_some() {
            self.delete_in_background(node);
            return Err("in_background");
        }
        Ok(Box::pin(node.owned.send_delete(&self.zk)))
    }

    /// The second half of [`release_lock`](Self::release_lock): awaits what
    /// [`send_release`](Self::send_release) sent, and reports the release.
    ///
    /// # Errors
    /// As [`release_lock`](Self::release_lock).
    pub(crate) async fn finish_release(
        &self,
        node: &LockNode,
        release: Release,
    ) -> Result<Option<LostReason>, LockError> {
        let Release { span, sent } = release;
        async move {
            let result = match sent {
                Ok(deleting) => self.await_delete(node, deleting).await,
                Err(how) => Ok((how, None)),
            };
            report::released(node, result.as_ref().map_or("failed", |(how, _)| how));
            let (_, found) = result?;
            if let Some(reason) = found {
                node.report_lost(reason);
            }
            Ok(found)
        }
        .instrument(span)
        .await
    }

    /// The reply to our delete; `Ok` says what became of the node, and why the hold had
    /// ended before it, if it had: the node was gone (our delete is sent once, so a `NoNode` is
    /// not our own retry's), or the session ended with the delete in flight (which may have
    /// been applied first: the holder is told the worse).
    async fn await_delete(
        &self,
        node: &LockNode,
        deleting: Deleting,
    ) -> Result<(&'static str, Option<LostReason>), LockError> {
        let deleted = tokio::select! {
            deleted = deleting => deleted,
            reason = node.lost_locally(&self.zk) => {
                self.delete_in_background(node);
                return Ok(("in_background", Some(reason)));
            }
        };
        match deleted {
            Ok(()) => Ok(("deleted", None)),
            Err(zookeeper_client::Error::NoNode) => Ok(("already_gone", Some(LostReason::NodeDeleted))),
            Err(e) if is_retryable(&e) => {
                self.delete_in_background(node);
                Ok(("in_background", None))
            }
            Err(e) if is_session_error(&e) => Ok(("already_gone", Some(LostReason::SessionEnded))),
            Err(e) => Err(LockError::zk(e)),
        }
    }

    fn delete_in_background(&self, node: &LockNode) {
        let _ = node.owned.guaranteed_delete(&self.zk);
    }

    /// Every contender's full path, in lock order (the holder first): Curator's
    /// `getParticipantNodes`.
    ///
    /// # Errors
    /// As [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// Cancel safe (read-only).
    pub async fn participant_nodes(&self) -> Result<Vec<String>, LockError> {
        let base = self.base_path.as_str();
        let children = match self.zk.retry(|s| async move { s.client().list_children(base).await }).await {
            Ok(children) => children,
            Err(e) if e.is_no_node() => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        Ok(self
            .driver
            .sort_children(&children, &self.lock_name)
            .into_iter()
            .map(|c| path::join(base, &c))
            .collect())
    }
}
