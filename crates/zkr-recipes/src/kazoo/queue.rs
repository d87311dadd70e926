//! [`LockingQueue`]: kazoo's lock-safe queue, on zkr's queue core and its item locks.

use std::sync::Arc;
use std::time::Duration;

use zkr_connection::{path, Deadline, ZkClient};

use crate::queues::core::{Core, Order, Taken};
use crate::queues::{QueueError, QueueItem};

/// kazoo's `LockingQueue(path)`: entries `<path>/entries/entry-<priority>-<sequence>`, taken
/// lowest priority first and then in put order, each locked while worked by an ephemeral
/// `<path>/taken/<entry>` and removed only when its consumer acks it (kazoo's `consume`).
/// Python processes using kazoo's `LockingQueue` on the same path share the queue both ways.
///
/// | kazoo | zkr |
/// |---|---|
/// | `put(value, priority=100)` | [`put`](Self::put), [`put_with_priority`](Self::put_with_priority) |
/// | `put_all(values, priority)` | [`put_all`](Self::put_all) |
/// | `get(timeout)` | [`get`](Self::get), [`get_timeout`](Self::get_timeout) |
/// | `consume()` | [`QueueItem::ack`] (or `ack_with` and `ack_and_create`) |
/// | `release()` | [`QueueItem::release`], or dropping the item |
/// | `holds_lock()` | [`QueueItem::ack`] answers [`QueueError::LockLost`] |
/// | `len(queue)` | [`len`](Self::len) |
///
/// An item is zkr's lock-safe [`QueueItem`], with its guarantees where kazoo's has none: the
/// ack deletes the entry and its lock in one transaction on the session that holds the lock, so
/// once that session ended it deletes nothing (kazoo's `consume` checks the lock's data, then
/// deletes both unchecked: a lock another consumer took in between goes with them); a take whose
/// create lost its reply finds its own lock again (kazoo's reports the entry taken and leaves
/// the lock until its session ends); two consumers on one [`ZkClient`] never share an entry
/// (each take's lock holds a token of its own; kazoo's holds the queue's id). The directories
/// are persistent, as kazoo's `ensure_path` makes them. Cheap to clone.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::queues::QueueError> {
/// use zkr_recipes::kazoo::LockingQueue;
///
/// // kazoo: queue = zk.LockingQueue("/jobs/resize"); queue.put(b"img-17", priority=10)
/// let queue = LockingQueue::new(&zk, "/jobs/resize")?;
/// queue.put_with_priority(b"img-17", 10).await?;
/// let item = queue.get().await?; // kazoo: queue.get()
/// println!("resizing {:?}", item.values()[0]);
/// item.ack().await?; // kazoo: queue.consume()
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LockingQueue {
    path: String,
    core: Arc<Core>,
}

/// kazoo's `LockingQueue.entries`, `.lock` and `.entry`.
const ENTRIES: &str = "entries";
const TAKEN: &str = "taken";
const PREFIX: &str = crate::layouts::KAZOO_QUEUE_PREFIX;
/// kazoo's default priority, and its largest.
const DEFAULT_PRIORITY: u16 = 100;
const MAX_PRIORITY: u16 = 999;

impl LockingQueue {
    /// The queue at `path` (made on the first put or get, with its missing parents).
    ///
    /// # Errors
    /// [`QueueError::InvalidArgument`] for a path ZooKeeper refuses, or one in `/zookeeper`.
    pub fn new(zk: &ZkClient, path: &str) -> Result<Self, QueueError> {
        zk.validate_recipe_path(path)?;
        let (entries, taken) = (path::join(path, ENTRIES), path::join(path, TAKEN));
        let core = Core::new(zk, &entries, PREFIX, Order::Name, Some(taken), None)?.persistent_parents();
        Ok(LockingQueue { path: path.to_owned(), core: Arc::new(core) })
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Adds `value` at kazoo's default priority, 100.
    ///
    /// # Errors
    /// `DataTooLarge` as [`QueueError::Connection`]; [`QueueError::Indeterminate`] when the
    /// create's reply was lost (it is not sent again, so it never duplicates the entry).
    ///
    /// # Cancel safety
    /// Dropped after the create was sent, the entry may be in the queue.
    pub async fn put(&self, value: &[u8]) -> Result<(), QueueError> {
        self.put_with_priority(value, DEFAULT_PRIORITY).await
    }

    /// Adds `value` at `priority` (0 to 999; lower is taken first).
    ///
    /// # Errors
    /// [`QueueError::InvalidArgument`] for a priority above 999; otherwise as [`put`](Self::put).
    ///
    /// # Cancel safety
    /// As [`put`](Self::put).
    pub async fn put_with_priority(&self, value: &[u8], priority: u16) -> Result<(), QueueError> {
        self.core.put(&infix(priority)?, value, None).await.map(drop)
    }

    /// Adds every value at `priority` in one transaction: all of them, in order, or none.
    ///
    /// # Errors
    /// As [`put_with_priority`](Self::put_with_priority); a value ZooKeeper refuses fails the
    /// whole put.
    ///
    /// # Cancel safety
    /// Dropped after the transaction was sent, the entries may be in the queue (all or none).
    pub async fn put_all(&self, values: &[&[u8]], priority: u16) -> Result<(), QueueError> {
        self.core.put_all(&infix(priority)?, values).await
    }

    /// Locks the first entry no one holds and returns it, waiting for one. The entry stays in
    /// the queue until the item is [acked](QueueItem::ack); dropped or
    /// [released](QueueItem::release), it goes back to the queue.
    ///
    /// # Errors
    /// [`QueueError::Connection`] (`Closed` once the manager closed).
    ///
    /// # Cancel safety
    /// Cancel safe: a lock taken by a dropped get is deleted in the background.
    pub async fn get(&self) -> Result<QueueItem<Vec<u8>>, QueueError> {
        loop {
            if let Some(item) = self.get_by(None).await? {
                return Ok(item);
            }
        }
    }

    /// [`get`](Self::get) for at most `timeout` in all: `Ok(None)` when no entry could be
    /// locked in time.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    ///
    /// # Cancel safety
    /// As [`get`](Self::get).
    pub async fn get_timeout(&self, timeout: Duration) -> Result<Option<QueueItem<Vec<u8>>>, QueueError> {
        self.get_by(Some(Deadline::after(timeout))).await
    }

    /// How many entries the queue holds, locked ones included (kazoo's `len(queue)`).
    ///
    /// # Errors
    /// [`QueueError::Connection`].
    ///
    /// # Cancel safety
    /// Cancel safe: a read.
    pub async fn len(&self) -> Result<usize, QueueError> {
        Ok(self.core.listing().await?.len())
    }

    /// Does the queue hold no entry?
    ///
    /// # Errors
    /// As [`len`](Self::len).
    ///
    /// # Cancel safety
    /// Cancel safe: a read.
    pub async fn is_empty(&self) -> Result<bool, QueueError> {
        Ok(self.len().await? == 0)
    }

    async fn get_by(&self, deadline: Option<Deadline>) -> Result<Option<QueueItem<Vec<u8>>>, QueueError> {
        Ok(self
            .core
            .take_by(deadline)
            .await?
            .map(|Taken { node, data, lock }| QueueItem::new(node, vec![data], lock)))
    }
}

/// The name part after `entry-`: the priority in three digits and a dash.
fn infix(priority: u16) -> Result<String, QueueError> {
    match priority <= MAX_PRIORITY {
        true => Ok(format!("{priority:03}-")),
        false => Err(QueueError::InvalidArgument(format!("kazoo's priorities are 0 to 999, not {priority}"))),
    }
}
