//! [`LockInternals`]: the lock algorithm every lock recipe shares.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;
use zkr_connection::protected::ProtectedCreate;
use zkr_connection::{is_retryable, is_session_error, path, RetryOptions, Session, ZkClient};
use zookeeper_client::{EventType, Stat};

use super::driver::LockInternalsDriver;
use super::error::{LockError, LostReason};
use super::lister::Lister;
use super::view::{ChildrenView, Turn, MAX_QUEUE};

/// How long [`LockInternals::attempt_lock`] may wait for the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Until the lock is ours (or an error).
    Forever,
    /// Until this instant; the time to create our node counts.
    Until(Instant),
    /// Not at all: take the lock if it is free after our node is created, else give up.
    NoWait,
}

/// A contender node that holds the lock (or a lease of it).
#[derive(Debug, Clone)]
pub struct LockNode {
    path: String,
    name: String,
    stat: Stat,
    session: Session,
    error_epoch: u64,
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
        &self.session
    }

    /// Why the lock counts as lost now, if it does; without a ZooKeeper call. Node deletion is
    /// noticed only by [`lost`](Self::lost) (which watches the node).
    pub fn lost_reason(&self, zk: &ZkClient) -> Option<LostReason> {
        if zk.generation() != self.session.generation() || zk.is_closed() || self.session.is_ended() {
            Some(LostReason::SessionEnded)
        } else if zk.error_epoch() != self.error_epoch {
            Some(LostReason::ConnectionState)
        } else {
            None
        }
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
            reason = self.lost_locally(zk) => reason,
            reason = node_gone(zk, &self.session, &self.path) => reason,
        }
    }

    /// Completes when the lock is lost as this process can tell without asking ZooKeeper: the
    /// connection enters an error state, or the manager gives up or replaces the session.
    async fn lost_locally(&self, zk: &ZkClient) -> LostReason {
        let mut epochs = zk.error_epoch_watch();
        let epoch = self.error_epoch;
        tokio::select! {
            _ = epochs.wait_for(|e| *e != epoch) => LostReason::ConnectionState,
            () = zk.session_replaced(self.session.generation()) => LostReason::SessionEnded,
        }
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
        loop {
            match session.client().check_and_watch_stat(path).await {
                Ok((None, _)) => return LostReason::NodeDeleted,
                Ok((Some(_), watcher)) => {
                    let event = watcher.changed().await;
                    match event.event_type {
                        EventType::NodeDeleted => return LostReason::NodeDeleted,
                        EventType::Session => return LostReason::SessionEnded,
                        _ => continue,
                    }
                }
                Err(e) if is_session_error(&e) => return LostReason::SessionEnded,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
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

/// Runs `future` to completion, or until `wait`'s deadline: `None` when the deadline came first.
async fn until<T>(wait: Wait, future: impl std::future::Future<Output = T>) -> Option<T> {
    let deadline = match wait {
        Wait::Until(deadline) => Some(deadline),
        _ => None,
    };
    zkr_connection::within(deadline, future).await
}

/// Deletes a contender node in the background unless disarmed: on timeout, error or a dropped
/// acquire, our node never stays behind to block the queue.
struct NodeCleanup {
    zk: ZkClient,
    path: Option<String>,
    generation: u64,
}

impl NodeCleanup {
    fn disarm(&mut self) {
        self.path = None;
    }

    /// Deletes the node now (one attempt on its own session), so that a caller told "not
    /// acquired" finds it gone; a failed attempt leaves the background delete to `Drop`.
    async fn delete_now(mut self, session: &Session) {
        let Some(path) = self.path.as_deref() else { return };
        if self.zk.generation() != self.generation {
            self.path = None;
            return;
        }
        if let Ok(()) | Err(zookeeper_client::Error::NoNode) = session.client().delete(path, None).await {
            self.path = None;
        }
    }
}

impl Drop for NodeCleanup {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                let _ = self.zk.guaranteed_delete(path, Some(self.generation));
            } else {
                tracing::warn!(%path, "no runtime to delete an abandoned lock node; it goes with its session");
            }
        }
    }
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

/// What an attempt knows about the queue when it starts waiting.
struct FirstLook {
    /// The sorted contenders, from the listing sent with the create or from the children view;
    /// `None`: list first.
    listing: Option<Arc<Vec<String>>>,
    /// The lister's mark taken before the create.
    not_before: u64,
    /// The manager's error epoch taken before the create.
    epoch: u64,
    /// The children view gave `listing` and can tell when our turn comes.
    via_view: bool,
}

enum WaitError {
    /// Our node is gone (session expired or deleted): start over.
    NodeMissing,
    Failed(LockError),
}

impl From<zkr_connection::Error> for WaitError {
    fn from(e: zkr_connection::Error) -> Self {
        WaitError::Failed(e.into())
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
    /// Nodes this process released while they held the lock. A local waiter whose node ahead
    /// is one of them knows it is now first without listing the queue again, so a local queue
    /// drains in one round trip per hand-over instead of one listing of the whole queue.
    released_heads: Mutex<VecDeque<String>>,
    /// The lock directory's children, kept live while this process is its only user.
    view: ChildrenView,
}

impl<D: LockInternalsDriver> LockInternals<D> {
    /// Lock internals for contenders named by `driver` under `base_path`.
    ///
    /// # Errors
    /// [`LockError::InvalidLockPath`] for `/`, [`LockError::Connection`] with
    /// [`InvalidPath`](zkr_connection::Error::InvalidPath) for an invalid path or lock name.
    pub fn new(
        zk: &ZkClient,
        base_path: &str,
        lock_name: &str,
        driver: D,
        max_leases: usize,
    ) -> Result<Self, LockError> {
        zk.validate_recipe_path(base_path)?;
        if base_path == "/" {
            return Err(LockError::InvalidLockPath {
                path: base_path.to_string(),
                reason: "a lock needs a path of its own, not the root",
            });
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
            released_heads: Mutex::new(VecDeque::new()),
            view: ChildrenView::new(base_path),
        })
    }

    /// Data stored in every contender node (for example who holds it). Defaults to empty.
    ///
    /// # Errors
    /// [`LockError::Connection`] with [`DataTooLarge`](zkr_connection::Error::DataTooLarge).
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

    fn sorter(&self) -> impl FnOnce(Vec<String>) -> Vec<String> + Send + 'static {
        let driver = self.driver.clone();
        let lock_name = self.lock_name.clone();
        move |children| driver.sort_children(&children, &lock_name)
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
    #[tracing::instrument(level = "debug", name = "lock.attempt", skip_all, fields(path = %self.base_path))]
    pub async fn attempt_lock(&self, wait: Wait) -> Result<Option<LockNode>, LockError> {
        let start = Instant::now();
        let policy = self.zk.retry_policy().clone();
        let mut retries = 0u32;
        let attempts = AttemptCount::enter(&self.attempts);
        loop {
            let error_epoch = self.zk.error_epoch();
            let spec = self.driver.contender(&self.lock_name);
            // Alone, the first listing goes just ahead of the create, in the same round trip
            // (`ProtectedCreate::list_siblings`; when our sequence cannot prove it complete,
            // `siblings` is `None` and `wait_for_lock` lists), or, while this process is the
            // lock's only user, the children view replaces it. With other local attempts under
            // way, share their listings instead: N waiters arriving at once must not each
            // download the whole queue.
            let alone = attempts.alone();
            let by_view = alone && self.view.is_live(&self.zk);
            let not_before = self.lister.mark();
            let mut request = ProtectedCreate::new(&self.base_path, &spec.name, spec.mode)
                .tag(spec.tag)
                .data(&self.node_data)
                .list_siblings(alone && !by_view);
            if let Wait::Until(deadline) = wait {
                let remaining = deadline.saturating_duration_since(Instant::now());
                request = request.retry_options(RetryOptions::default().deadline(remaining));
            }
            let mut node = match self.zk.create_protected_ext(request).await {
                Ok(node) => node,
                Err(zkr_connection::Error::DeadlineExceeded { .. }) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            let mut cleanup = NodeCleanup {
                zk: self.zk.clone(),
                path: Some(node.path.clone()),
                generation: node.session.generation(),
            };
            let mut siblings = node.siblings.take();
            if by_view {
                siblings = until(wait, self.view.children_with(&node.session, &node.name)).await.flatten();
            }
            let first_listing =
                siblings.map(|children| Arc::new(self.driver.sort_children(&children, &self.lock_name)));
            match first_listing.as_deref().map(Vec::len) {
                Some(n) if n > MAX_QUEUE => self.view.long_queue(),
                Some(_) if !by_view => self.view.short_queue(&self.zk, &node.session),
                _ => {}
            }
            // The view proved the first listing: it can also tell us when our turn comes.
            let via_view = by_view && first_listing.is_some();
            let first = FirstLook { listing: first_listing, not_before, epoch: error_epoch, via_view };
            match self.wait_for_lock(&node.session, &node.name, first, wait).await {
                Ok(Some(error_epoch)) => {
                    cleanup.disarm();
                    return Ok(Some(LockNode {
                        path: node.path,
                        name: node.name,
                        stat: node.stat,
                        session: node.session,
                        error_epoch,
                    }));
                }
                Ok(None) => {
                    // Bounded: past it, the delete goes on in the background (the cleanup's drop).
                    let _ =
                        tokio::time::timeout(TIMEOUT_CLEANUP_GRACE, cleanup.delete_now(&node.session)).await;
                    return Ok(None);
                }
                Err(WaitError::Failed(e)) => return Err(e),
                Err(WaitError::NodeMissing) => {
                    drop(cleanup);
                    let elapsed = start.elapsed();
                    let Some(sleep) = policy.allow_retry(retries, elapsed) else {
                        return Err(LockError::NodeVanished {
                            path: self.base_path.clone(),
                            node: node.name,
                        });
                    };
                    retries += 1;
                    tracing::debug!(node = %node.name, retries, "our lock node vanished while waiting; starting over");
                    if let Wait::Until(deadline) = wait {
                        if Instant::now() + sleep >= deadline {
                            return Ok(None);
                        }
                    }
                    tokio::time::sleep(sleep).await;
                }
            }
        }
    }

    /// Waits until we hold the lock: `Some(epoch)` with the manager's error epoch from before the
    /// listing that proved it (so a disruption during the wait does not count against the new
    /// holder, and one after that proof does), or `None` when the wait ran out.
    async fn wait_for_lock(
        &self,
        session: &Session,
        our_name: &str,
        first: FirstLook,
        wait: Wait,
    ) -> Result<Option<u64>, WaitError> {
        let client = session.client();
        let policy = self.zk.retry_policy().clone();
        let started = Instant::now();
        let mut retries = 0u32;
        let FirstLook { mut listing, mut not_before, epoch, mut via_view } = first;
        // A disruption before the listing that proves our place does not make the new holder's
        // lock doubtful (the session survived: the generation says so); one after it does.
        let mut epoch = if listing.is_some() { epoch } else { self.zk.error_epoch() };
        loop {
            if self.zk.generation() != session.generation() {
                return Err(WaitError::NodeMissing);
            }
            let step = async {
                let children = match listing.take() {
                    Some(children) => children,
                    // `not_before` and `epoch` were taken together, when we learnt we need a listing.
                    None => self.lister.list(session, &self.base_path, not_before, self.sorter()).await?,
                };
                let sorted = children;
                let predicate = match self.driver.gets_the_lock(&sorted, our_name, self.max_leases) {
                    Ok(p) => p,
                    Err(_) => return Ok(None),
                };
                if predicate.gets_the_lock {
                    return Ok(Some(true));
                }
                let Some(ahead) = predicate.path_to_watch else { return Ok(None) };
                if wait == Wait::NoWait {
                    return Ok(Some(false));
                }
                if std::mem::take(&mut via_view) {
                    // Wait on the children view rather than a watch on the node ahead: no
                    // listing when that node goes without having been the head.
                    let watched_at = self.zk.error_epoch();
                    let turn = self
                        .view
                        .wait_turn(session.generation(), our_name, |children| {
                            let sorted = self.driver.sort_children(&children, &self.lock_name);
                            self.driver
                                .gets_the_lock(&sorted, our_name, self.max_leases)
                                .is_ok_and(|p| p.gets_the_lock)
                        })
                        .await;
                    // Ours only if the connection was not disrupted meanwhile; otherwise (or
                    // when the view ended, or our node left it) list again to be sure.
                    if turn == Turn::Ours && self.zk.error_epoch() == watched_at {
                        epoch = watched_at;
                        return Ok(Some(true));
                    }
                    return Ok(None);
                }
                let shortcut = self.max_leases == 1 && self.driver.head_release_grants();
                let ahead_is_head = shortcut && sorted.first() == Some(&ahead);
                drop(sorted);
                // A data watch, not an exists watch: no watch is left on a node that is
                // already gone (CURATOR-107).
                let watched_at = self.zk.error_epoch();
                epoch = watched_at;
                not_before = self.lister.mark();
                let watcher = match client.get_and_watch_data(&path::join(&self.base_path, &ahead)).await {
                    Ok((_, _, watcher)) => watcher,
                    Err(zookeeper_client::Error::NoNode) => return Ok(Some(ahead_is_head).filter(|h| *h)),
                    Err(e) => return Err(e),
                };
                // A session the manager gives up never fires its watches: stop waiting on it.
                let event = tokio::select! {
                    event = watcher.changed() => event,
                    () = self.zk.session_replaced(session.generation()) => {
                        return Err(zookeeper_client::Error::SessionExpired);
                    }
                };
                epoch = self.zk.error_epoch();
                not_before = self.lister.mark();
                match event.event_type {
                    // The node ahead was the head: with it gone, we are first (unless the
                    // connection was disrupted meanwhile: then list again to be sure).
                    EventType::NodeDeleted
                        if (ahead_is_head || (shortcut && self.was_released_head(&ahead)))
                            && epoch == watched_at =>
                    {
                        Ok(Some(true))
                    }
                    EventType::Session => Err(zookeeper_client::Error::SessionExpired),
                    // Deleted (not the head) or changed: list again.
                    _ => Ok(None),
                }
            };
            // Every request of the wait counts against the deadline: a request to a server that
            // lost its quorum can go unanswered for seconds.
            let Some(step): Option<Result<Option<bool>, zookeeper_client::Error>> = until(wait, step).await
            else {
                return Ok(None);
            };
            match step {
                Ok(Some(true)) => return Ok(Some(epoch)),
                Ok(Some(false)) => return Ok(None),
                Ok(None) => {
                    // Re-list (the node ahead went, or our node is missing: the next listing
                    // tells which).
                    epoch = self.zk.error_epoch();
                    not_before = self.lister.mark();
                    let relist = self.lister.list(session, &self.base_path, not_before, self.sorter());
                    let Some(relisted) = until(wait, relist).await else { return Ok(None) };
                    let children = match relisted {
                        Ok(c) => c,
                        Err(e) => {
                            let retry = self.on_wait_error(e, session, &policy, &mut retries, started);
                            let Some(retry) = until(wait, retry).await else { return Ok(None) };
                            retry?;
                            continue;
                        }
                    };
                    if !children.iter().any(|c| c == our_name) {
                        return Err(WaitError::NodeMissing);
                    }
                    listing = Some(children);
                }
                Err(e) => {
                    let retry = self.on_wait_error(e, session, &policy, &mut retries, started);
                    let Some(retry) = until(wait, retry).await else { return Ok(None) };
                    retry?;
                }
            }
        }
    }

    async fn on_wait_error(
        &self,
        error: zookeeper_client::Error,
        session: &Session,
        policy: &std::sync::Arc<dyn zkr_connection::retry::RetryPolicy>,
        retries: &mut u32,
        started: Instant,
    ) -> Result<(), WaitError> {
        if is_session_error(&error) || self.zk.generation() != session.generation() {
            return Err(WaitError::NodeMissing);
        }
        if error == zookeeper_client::Error::NoNode {
            // The lock directory itself is gone: so is our node.
            return Err(WaitError::NodeMissing);
        }
        if !(is_retryable(&error) && policy.allow_retry_error(&error)) {
            return Err(WaitError::Failed(LockError::zk(error)));
        }
        let elapsed = started.elapsed();
        let Some(sleep) = policy.allow_retry(*retries, elapsed) else {
            return Err(WaitError::Failed(
                zkr_connection::Error::RetriesExhausted { attempts: *retries + 1, elapsed, last: error }
                    .into(),
            ));
        };
        *retries += 1;
        tokio::time::sleep(sleep).await;
        Ok(())
    }

    /// Deletes a held node. When the lock is lost (before or during the delete) or the
    /// connection fails, the delete goes to a background guaranteed delete and this returns
    /// `Ok` at once; once the node's session has ended there is nothing to do.
    ///
    /// # Errors
    /// [`LockError::Connection`] for an answer that retrying cannot fix (`NoAuth`).
    ///
    /// # Cancel safety
    /// Not cancel safe by itself: a dropped release may leave the node until its session ends.
    /// The lock guards call it so that a dropped release still deletes in the background.
    pub async fn release_lock(&self, node: &LockNode) -> Result<(), LockError> {
        if self.zk.generation() != node.session.generation() {
            return Ok(());
        }
        if self.max_leases == 1 {
            let mut heads = self.released_heads.lock();
            if heads.len() >= 1024 {
                heads.pop_front();
            }
            heads.push_back(node.name.clone());
        }
        // After a loss nothing blocks: the delete goes on in the background while the session
        // still allows it (a dead server would hold the delete until the retry policy gives up).
        if node.lost_reason(&self.zk).is_some() {
            self.delete_in_background(node);
            return Ok(());
        }
        let deleted = tokio::select! {
            deleted = node.session.client().delete(&node.path, None) => deleted,
            _ = node.lost_locally(&self.zk) => {
                self.delete_in_background(node);
                return Ok(());
            }
        };
        match deleted {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
            Err(e) if is_retryable(&e) => {
                self.delete_in_background(node);
                Ok(())
            }
            Err(e) if is_session_error(&e) => Ok(()),
            Err(e) => Err(LockError::zk(e)),
        }
    }

    fn delete_in_background(&self, node: &LockNode) {
        let _ = self.zk.guaranteed_delete(node.path.clone(), Some(node.session.generation()));
    }

    /// Was `name` released by this process while it held the lock (consumed by the asking
    /// waiter)?
    fn was_released_head(&self, name: &str) -> bool {
        if self.max_leases != 1 {
            return false;
        }
        let mut heads = self.released_heads.lock();
        match heads.iter().position(|h| h == name) {
            Some(i) => {
                heads.remove(i);
                true
            }
            None => false,
        }
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
