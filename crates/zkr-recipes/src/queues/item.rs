//! [`QueueItem`]: what a consumer takes, and in lock-safe mode the lock it holds on the item.

use std::fmt;
use std::sync::Arc;

use tracing::Instrument as _;
use zkr_connection::SessionClient;
use zkr_connection::{Transaction, ZkClient};
use zookeeper_client::{Acls, CreateMode, OneshotWatcher};

use super::QueueError;
use crate::fence::SessionFence;
use crate::owned::{self, Owned};
use crate::telemetry;
use zkr_connection::Classify as _;

/// One queue node taken by a consumer: its values (one, or several from a
/// [`put_multi`](super::DistributedQueue::put_multi)) and, in lock-safe mode, the lock on it.
///
/// Without lock safety the node is already deleted when the consumer gets it (Curator's
/// default: at most once), and [`ack`](Self::ack) only hands the values back. In lock-safe mode
/// (Curator's `lockPath`) the node stays in the queue, locked, until [`ack`](Self::ack) removes
/// it; dropping the item, or [`release`](Self::release), unlocks it so another consumer gets it,
/// and so does the end of this consumer's session (its process died).
///
/// # Examples
///
/// ```no_run
/// # async fn f(queue: zkr_recipes::queues::DistributedQueue<String>) -> Result<(), zkr_recipes::queues::QueueError> {
/// let item = queue.take().await?;
/// for value in item.values() {
///     println!("{value}");
/// }
/// item.ack().await?;
/// # Ok(()) }
/// ```
#[must_use = "a lock-safe item dropped without ack() goes back to the queue"]
pub struct QueueItem<T> {
    node: String,
    values: Vec<T>,
    lock: Option<ItemLock>,
}

impl<T: fmt::Debug> fmt::Debug for QueueItem<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueItem")
            .field("node", &self.node)
            .field("values", &self.values)
            .field("locked", &self.lock.is_some())
            .finish()
    }
}

impl<T> QueueItem<T> {
    pub(crate) fn new(node: String, values: Vec<T>, lock: Option<ItemLock>) -> Self {
        QueueItem { node, values, lock }
    }

    /// The item's values, in the order they were put.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The queue node the values came from (`<queue>/queue-0000000007`).
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Is the item locked (lock-safe mode) and still in the queue until [`ack`](Self::ack)?
    pub fn is_locked(&self) -> bool {
        self.lock.is_some()
    }

    /// The work is done: removes the item from the queue (lock-safe mode: deletes the item and
    /// its lock in one transaction, on the session that holds the lock) and hands back the
    /// values.
    ///
    /// # Errors
    /// [`QueueError::LockLost`] when this consumer's session ended (the item stays, and another
    /// consumer gets it); [`QueueError::ItemGone`] when something that takes no lock deleted
    /// the item; [`QueueError::Connection`] otherwise (the lock is released).
    ///
    /// # Cancel safety
    /// Cancel safe: the transaction was applied or not; if not, the item is released.
    pub async fn ack(self) -> Result<Vec<T>, QueueError> {
        self.finish(None).await
    }

    /// [`ack`](Self::ack), creating the persistent node `path` with `data` in the same
    /// transaction: a completion record that exists exactly when the item was removed, so work
    /// recorded in ZooKeeper is done exactly once. The record's parent must exist (a
    /// transaction creates no parents).
    ///
    /// # Errors
    /// As [`ack`](Self::ack); `NodeExists` for the record as [`QueueError::Connection`] (the
    /// item stays in the queue); [`QueueError::InvalidArgument`] without lock safety (the
    /// item was removed when it was taken).
    ///
    /// # Cancel safety
    /// As [`ack`](Self::ack).
    pub async fn ack_and_create(self, path: &str, data: &[u8]) -> Result<Vec<T>, QueueError> {
        self.ack_with(|txn| txn.create(path, data, CreateMode::Persistent)).await
    }

    /// [`ack`](Self::ack) with the caller's own operations in the same transaction: `ops` adds
    /// them (creates, sets, deletes, checks) to the transaction that removes the item, so the
    /// work's effects in ZooKeeper (a counter, a record, a status) are applied exactly when the
    /// item is removed, or not at all.
    ///
    /// # Errors
    /// As [`ack`](Self::ack); an operation of the caller's that the server refuses is
    /// [`QueueError::Connection`] with
    /// [`TransactionFailed`](zkr_connection::Error::TransactionFailed), which names the
    /// operation and its path (the item stays in the queue); [`QueueError::InvalidArgument`]
    /// for a bad path or data, or without lock safety (the item was removed when it was taken).
    ///
    /// # Cancel safety
    /// As [`ack`](Self::ack).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(item: zkr_recipes::queues::QueueItem<String>) -> Result<(), zkr_recipes::queues::QueueError> {
    /// use zkr_connection::CreateMode;
    ///
    /// let done = format!("/work/done/{}", item.values()[0]);
    /// item.ack_with(|txn| {
    ///     txn.create(&done, b"ok", CreateMode::Persistent).set_data("/work/stats/last", done.as_bytes(), None)
    /// })
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub async fn ack_with(self, ops: impl FnOnce(Transaction) -> Transaction) -> Result<Vec<T>, QueueError> {
        let own = self.lock.as_ref().map(|lock| ops(lock.zk.transaction()));
        match own {
            Some(own) => self.finish(Some(own)).await,
            None => Err(QueueError::InvalidArgument(
                "an ack with operations needs a lock-safe queue (lock_path): the item is gone already".into(),
            )),
        }
    }

    /// Lock-safe mode: gives the item back to the queue now (dropping it does the same in the
    /// background). Nothing to do without lock safety.
    ///
    /// The delete is awaited while the connection holds; once this consumer's session ended or
    /// its connection is suspended it returns at once, and the delete goes on in the
    /// background (an ended session took the lock with it).
    ///
    /// # Errors
    /// None today; the signature leaves room for reporting a failed release.
    ///
    /// # Cancel safety
    /// Cancel safe: the delete runs in a task of its own from the first poll, so a dropped
    /// release still unlocks the item.
    pub async fn release(mut self) -> Result<(), QueueError> {
        if let Some(lock) = self.lock.take() {
            lock.release().await;
        }
        Ok(())
    }

    /// Lock-safe mode: deletes the item with its lock (and `own`) in a `queue.ack` span.
    async fn finish(mut self, own: Option<Transaction>) -> Result<Vec<T>, QueueError> {
        if let Some(mut lock) = self.lock.take() {
            let span = telemetry::operation_span!("queue.ack", self.node.as_str());
            let started = tokio::time::Instant::now();
            let committed = lock.commit(&self.node, own).instrument(span.clone()).await;
            telemetry::ended(&span, started, committed.as_ref().map(|()| "acked").map_err(QueueError::kind));
            committed?;
        }
        Ok(std::mem::take(&mut self.values))
    }
}

/// Did `error` end with the session (so did every ephemeral node of it)?
fn session_ended(error: &zkr_connection::Error) -> bool {
    match error {
        zkr_connection::Error::SessionExpired { .. } => true,
        zkr_connection::Error::Zk(e) => zkr_connection::is_session_error(e),
        _ => false,
    }
}

/// A lock-safe consumer's lock on one item: Curator's `<lockPath>/<item name>`, an ephemeral
/// node of `session` holding `token`. Dropped armed, it is deleted in the background.
///
/// Every consumer on one [`ZkClient`] shares its session, so the session cannot tell whose lock
/// a node is: the token, random per acquire, does. A consumer takes a lock as its own (a create
/// whose reply was lost) and deletes one only when the node holds its token.
pub(crate) struct ItemLock {
    zk: ZkClient,
    lock: Owned,
    token: Arc<[u8]>,
    armed: bool,
}

impl Drop for ItemLock {
    fn drop(&mut self) {
        if self.armed {
            zkr_connection::spawn_cleanup("a queue item's lock", self.delete());
        }
    }
}

/// Deletes the lock at `path` if it is the one holding `token` on `session`, trying for as long
/// as that session lives; errors mean the session (and the node with it) is gone.
async fn delete_owned(zk: ZkClient, lock: Owned, token: Arc<[u8]>) {
    let (owner, path) = (lock.session().id(), lock.path());
    let deleted = lock.retry_while_alive(&zk, |client| {
        let token = token.clone();
        async move {
            match owned_version(&client, path, owner, &token).await? {
                Some(version) => match client.delete(path, Some(version)).await {
                    Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
                    Err(e) => Err(e),
                },
                None => Ok(()),
            }
        }
    });
    if let Err(error) = deleted.await {
        tracing::debug!(lock = %lock.path(), %error, "queue item lock not deleted; it ends with its session");
    }
}

/// Creates the ephemeral lock `path` holding `token` on session `owner`: `None` when it is
/// ours (created now, or found by a retried create whose reply was lost), else a watch on
/// another consumer's lock, which fires when that lock changes or goes.
async fn create_or_watch(
    client: &SessionClient,
    path: &str,
    token: &[u8],
    acls: &[zookeeper_client::Acl],
    owner: i64,
) -> Result<Option<OneshotWatcher>, zookeeper_client::Error> {
    let options = CreateMode::Ephemeral.with_acls(Acls::new(acls));
    loop {
        match client.create(path, token, &options).await {
            Ok(_) => return Ok(None),
            Err(zookeeper_client::Error::NodeExists) => match client.get_and_watch_data(path).await {
                Ok((data, stat, _)) if stat.ephemeral_owner == owner && data == token => return Ok(None),
                Ok((_, _, holder)) => return Ok(Some(holder)),
                // Released between the create and the read: try again.
                Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        }
    }
}

/// Another consumer holds an item's lock. A cache of the lock directory is no way to wait
/// for it: a lock created and deleted between two of the cache's reads never shows in it, so
/// [`released`](Self::released) follows the lock itself.
pub(crate) struct Busy(Option<OneshotWatcher>);

impl Busy {
    /// Resolves when the holder's lock changed or went; never when the session ended (the
    /// queue's views change when they follow the next one).
    pub(crate) async fn released(self) {
        match self.0 {
            Some(holder) => drop(holder.changed().await),
            None => std::future::pending().await,
        }
    }
}

/// The version of the lock at `path` when it is ours: an ephemeral node of session `owner`
/// holding `token`; `None` when it is missing or another consumer's.
async fn owned_version(
    client: &SessionClient,
    path: &str,
    owner: i64,
    token: &[u8],
) -> Result<Option<i32>, zookeeper_client::Error> {
    let read = crate::errors::present(client.get_data(path).await)?;
    Ok(read.and_then(|(data, stat)| (stat.ephemeral_owner == owner && data == token).then_some(stat.version)))
}

impl ItemLock {
    /// Takes the lock `path` on a current session: [`Busy`] when another consumer holds it,
    /// whether in another process or on this client.
    pub(crate) async fn acquire(zk: &ZkClient, path: &str) -> Result<Result<ItemLock, Busy>, QueueError> {
        let session = zk.session().await?;
        let mut lock = ItemLock {
            zk: zk.clone(),
            // Owned from here on: until the create is known not applied, the node may be ours.
            lock: Owned::created(path, SessionFence::new(session, zk.error_epoch())),
            token: uuid::Uuid::new_v4().simple().to_string().into_bytes().into(),
            armed: false,
        };
        // Dropped mid-create, the node may exist: delete it if it is ours.
        let mut guard = zkr_connection::DropGuard::new("a queue item lock being created", lock.delete());
        let acls = zk.acl_for_path(path);
        let (owner, token) = (lock.lock.session().id(), &lock.token);
        let created = owned::on_session(zk, lock.lock.session(), |client| {
            let acls = acls.clone();
            async move { create_or_watch(&client, path, token, &acls, owner).await }
        });
        match created.await {
            Ok(None) => {
                guard.disarm();
                lock.armed = true;
                Ok(Ok(lock))
            }
            Ok(Some(holder)) => {
                guard.disarm();
                Ok(Err(Busy(Some(holder))))
            }
            // The views go stale with the session and change when they follow the next one.
            Err(e) if session_ended(&e) => Ok(Err(Busy(None))),
            // Unknown outcome: the guard deletes a create that may have been applied.
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes the lock if it is still ours (the background half of a release).
    fn delete(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        delete_owned(self.zk.clone(), self.lock.clone(), self.token.clone())
    }

    /// Gives the lock up: awaited while the hold is not known lost, in the background after.
    async fn release(mut self) {
        self.armed = false;
        let delete = self.delete();
        if self.lock.fence().lost_reason(&self.zk).is_some() {
            zkr_connection::spawn_cleanup("a released queue item's lock", delete);
            return;
        }
        let _ = zkr_connection::run_detached(delete, self.lock.fence().lost(&self.zk)).await;
    }

    /// Reads the item `node` on the lock's session, after the lock was taken: `None` when it
    /// is gone (another consumer removed it before we locked it).
    pub(crate) async fn read(&self, node: &str) -> Result<Option<Vec<u8>>, QueueError> {
        let read = self.lock.retry(&self.zk, |client| async move {
            Ok(crate::errors::present(client.get_data(node).await)?.map(|(data, _)| data))
        });
        match read.await {
            Ok(data) => Ok(data),
            Err(e) if session_ended(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes `node` and the lock in one transaction on the lock's own session, checked
    /// against the lock, with the caller's own operations after them. On another session the
    /// same path may be another consumer's lock: once the lock's session was given up, this
    /// sends nothing and answers `LockLost`.
    pub(crate) async fn commit(&mut self, node: &str, own: Option<Transaction>) -> Result<(), QueueError> {
        let mut txn = self.lock.transaction(&self.zk).delete(node, None).delete(self.lock.path(), None);
        if let Some(own) = own {
            txn = txn.append(own);
        }
        match txn.commit().await {
            Ok(_) => {
                self.armed = false;
                Ok(())
            }
            // The lock is gone: a lost reply of our own applied commit, or our session ended.
            Err(zkr_connection::Error::TransactionFailed { index: 0, retried: true, .. })
                if self.applied(node).await? =>
            {
                self.armed = false;
                Ok(())
            }
            Err(zkr_connection::Error::TransactionFailed { index: 0, .. }) => {
                Err(QueueError::LockLost { node: node.to_owned() })
            }
            Err(zkr_connection::Error::TransactionFailed { index: 1, .. }) => {
                Err(QueueError::ItemGone { node: node.to_owned() })
            }
            Err(e) if session_ended(&e) => Err(QueueError::LockLost { node: node.to_owned() }),
            Err(e) => Err(e.into()),
        }
    }

    /// After a retried commit found the lock gone: was the first attempt applied? It was when
    /// the item is gone: nobody but the lock's holder deletes a locked item.
    async fn applied(&self, node: &str) -> Result<bool, QueueError> {
        let check = self.lock.retry(&self.zk, |client| async move { client.check_stat(node).await });
        match check.await {
            Ok(stat) => Ok(stat.is_none()),
            Err(e) if session_ended(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}
