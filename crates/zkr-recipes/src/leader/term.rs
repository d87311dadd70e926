//! [`Leadership`]: a participant's term as leader, and the writes it fences.

use std::fmt;
use std::sync::Arc;

use zkr_connection::{Transaction, ZkClient};
use zookeeper_client::{CreateMode, MultiWriteResult, Stat};

use crate::locks::{LockError, LockNode};

/// This participant's term as leader, from [`LeaderLatch::await_leadership`](super::LeaderLatch::await_leadership)
/// or a [`LeaderSelector`](super::LeaderSelector)'s work.
///
/// Its writes ([`set_data`](Self::set_data), [`create`](Self::create),
/// [`delete`](Self::delete), [`transaction`](Self::transaction)) apply only while the term
/// lasts: each is a multi-op whose first operation checks the term's election node, on the
/// session that created it, so a deposed leader's write is refused by ZooKeeper itself, even
/// when the leader has not yet learnt that it was deposed (a pause, a partition). A leader that
/// reads, decides and writes this way never overwrites a later leader's work. For a resource
/// outside ZooKeeper, pass [`fencing_token`](Self::fencing_token) instead. Curator has no
/// such writes: a Java leader checks `hasLeadership()`, which a paused leader still believes.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use zkr_recipes::leader::LeaderLatch;
///
/// let latch = LeaderLatch::start(&zk, "/services/billing/leader", "billing-1").await?;
/// let term = latch.await_leadership().await?;
/// // Applied only while this term lasts; a later leader's state is never overwritten.
/// term.set_data("/services/billing/primary", b"billing-1", None).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct Leadership {
    /// Our election node.
    pub node: String,
    /// The node's creation zxid: grows with every new leader, so resources can refuse a
    /// deposed leader's writes (a fencing token).
    pub fencing_token: i64,
    fence: Arc<Fence>,
}

/// What a term's writes are checked against.
struct Fence {
    zk: ZkClient,
    /// The election path (for errors).
    base: String,
    node: Arc<LockNode>,
}

impl Leadership {
    pub(super) fn new(zk: &ZkClient, base: &str, node: Arc<LockNode>) -> Self {
        Leadership {
            node: node.path().to_owned(),
            fencing_token: node.fencing_token(),
            fence: Arc::new(Fence { zk: zk.clone(), base: base.to_owned(), node }),
        }
    }

    /// Is the term known to be over (the connection in an error state under the manager's
    /// error policy, or the session ended)? Answers without a ZooKeeper call: deletion of our
    /// node is seen by the fenced writes. A `false` is no promise; a fenced write is.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(term: zkr_recipes::leader::Leadership) {
    /// if term.is_lost() {
    ///     println!("no longer the leader");
    /// }
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.fence.node.lost_reason(&self.fence.zk).is_some()
    }

    /// A [`Transaction`] that applies only while this term lasts: its first operation checks
    /// our election node. Add operations and [`commit`](Self::commit) it. It is sent once, not
    /// retried: after a lost reply the commit fails with an error whose
    /// [`is_ambiguous`](zkr_connection::Classify::is_ambiguous) is true.
    ///
    /// # Errors
    /// [`LockError::Lost`] once the term is known to be over.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(term: zkr_recipes::leader::Leadership) -> Result<(), zkr_recipes::locks::LockError> {
    /// let txn = term.transaction()?.set_data("/jobs/next", b"42", Some(3)).delete("/jobs/41", None);
    /// term.commit(txn).await?;
    /// # Ok(()) }
    /// ```
    pub fn transaction(&self) -> Result<Transaction, LockError> {
        self.fence.node.fenced_transaction(&self.fence.zk, &self.fence.base)
    }

    /// Commits a transaction made by [`transaction`](Self::transaction); answers the results of
    /// the operations added after the check.
    ///
    /// # Errors
    /// [`LockError::Lost`] when the term was known to be over before sending (nothing was
    /// sent), or when the server found our node gone (nothing was applied); other failures as
    /// [`LockError::Connection`]. A lost reply, or the session ending with the commit in
    /// flight, gives an ambiguous error: it may have been applied.
    ///
    /// # Cancel safety
    /// The multi-op is atomic; dropped, it was applied entirely or not at all.
    pub async fn commit(&self, transaction: Transaction) -> Result<Vec<MultiWriteResult>, LockError> {
        self.fence.node.commit_fenced(&self.fence.zk, &self.fence.base, transaction).await
    }

    /// Sets `path`'s data only while this term lasts.
    ///
    /// # Errors
    /// As [`commit`](Self::commit).
    ///
    /// # Cancel safety
    /// The write is atomic; dropped, it may or may not have been applied.
    pub async fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<Stat, LockError> {
        self.fence
            .node
            .fenced_set_data(&self.fence.zk, &self.fence.base, (path, data, expected_version))
            .await
    }

    /// Creates `path` only while this term lasts; returns its path (with the sequence for
    /// sequential modes) and `Stat`.
    ///
    /// # Errors
    /// As [`commit`](Self::commit).
    ///
    /// # Cancel safety
    /// As [`set_data`](Self::set_data).
    pub async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat), LockError> {
        self.fence.node.fenced_create(&self.fence.zk, &self.fence.base, (path, data, mode)).await
    }

    /// Deletes `path` only while this term lasts.
    ///
    /// # Errors
    /// As [`commit`](Self::commit).
    ///
    /// # Cancel safety
    /// As [`set_data`](Self::set_data).
    pub async fn delete(&self, path: &str, expected_version: Option<i32>) -> Result<(), LockError> {
        self.fence.node.fenced_delete(&self.fence.zk, &self.fence.base, (path, expected_version)).await
    }
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("node", &self.node)
            .field("fencing_token", &self.fencing_token)
            .finish()
    }
}

/// Two terms are the same term when they are of the same node.
impl PartialEq for Leadership {
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node && self.fencing_token == other.fencing_token
    }
}

impl Eq for Leadership {}
