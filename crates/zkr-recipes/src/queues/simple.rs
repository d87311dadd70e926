//! [`SimpleDistributedQueue`]: ZooKeeper's own queue recipe, as Curator implements it, and
//! kazoo's `Queue`.

use std::sync::Arc;
use std::time::Duration;

use zkr_connection::{Deadline, ZkClient};

use super::core::{Core, Order};
use super::QueueError;

/// ZooKeeper's queue recipe (Curator's `SimpleDistributedQueue`): raw bytes in
/// `qn-<sequence>` PERSISTENT_SEQUENTIAL nodes under the queue's path, taken in sequence order
/// by deleting them, so Curator processes share the queue. kazoo's `Queue` names its nodes
/// `entry-<priority>-<sequence>` instead: [`kazoo`](Self::kazoo) makes a queue on those. Cheap
/// to clone.
///
/// An item is deleted when it is taken (at most once). For typed items, several items per
/// node, a bound or lock-safe consumption, use [`DistributedQueue`](super::DistributedQueue).
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::queues::QueueError> {
/// use zkr_recipes::queues::SimpleDistributedQueue;
///
/// let queue = SimpleDistributedQueue::new(&zk, "/work/simple")?;
/// queue.offer(b"job-1").await?;
/// assert_eq!(queue.take().await?, b"job-1");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SimpleDistributedQueue {
    core: Arc<Core>,
    kazoo: bool,
}

/// The recipe's node prefix.
const PREFIX: &str = crate::layouts::SIMPLE_QUEUE_PREFIX;
/// kazoo's `Queue.prefix`.
const KAZOO_PREFIX: &str = crate::layouts::KAZOO_QUEUE_PREFIX;
/// kazoo's default priority.
const KAZOO_PRIORITY: u16 = 100;

impl SimpleDistributedQueue {
    /// The queue at `path`.
    ///
    /// # Errors
    /// [`QueueError::InvalidArgument`] for a path ZooKeeper refuses.
    pub fn new(zk: &ZkClient, path: &str) -> Result<Self, QueueError> {
        Ok(SimpleDistributedQueue {
            core: Arc::new(Core::new(zk, path, PREFIX, Order::Name, None, None)?),
            kazoo: false,
        })
    }

    /// kazoo's `Queue` at `path`: nodes `entry-<priority, 3 digits>-<sequence>`, taken lowest
    /// priority first, then in put order; [`offer`](Self::offer) puts at kazoo's default
    /// priority, 100. kazoo processes share the queue.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::queues::QueueError> {
    /// use zkr_recipes::queues::SimpleDistributedQueue;
    ///
    /// let queue = SimpleDistributedQueue::kazoo(&zk, "/work/kazoo")?;
    /// queue.offer_with_priority(b"urgent", 1).await?;
    /// # Ok(()) }
    /// ```
    pub fn kazoo(zk: &ZkClient, path: &str) -> Result<Self, QueueError> {
        let core = Core::new(zk, path, KAZOO_PREFIX, Order::Name, None, None)?;
        Ok(SimpleDistributedQueue { core: Arc::new(core), kazoo: true })
    }

    /// Adds `data` at the tail.
    ///
    /// # Errors
    /// `DataTooLarge` as [`QueueError::Connection`]; [`QueueError::Indeterminate`] when the
    /// create's reply was lost (it is not repeated, so it never duplicates the item).
    ///
    /// # Cancel safety
    /// Dropped after the create was sent, the item may be in the queue.
    pub async fn offer(&self, data: &[u8]) -> Result<(), QueueError> {
        let infix = if self.kazoo { format!("{KAZOO_PRIORITY:03}-") } else { String::new() };
        self.core.put(&infix, data, None).await.map(drop)
    }

    /// A [`kazoo`](Self::kazoo) queue's put with a priority (0 to 999, lower first).
    ///
    /// # Errors
    /// [`QueueError::InvalidArgument`] for a priority above 999 or a queue not made by
    /// [`kazoo`](Self::kazoo); otherwise as [`offer`](Self::offer).
    ///
    /// # Cancel safety
    /// As [`offer`](Self::offer).
    pub async fn offer_with_priority(&self, data: &[u8], priority: u16) -> Result<(), QueueError> {
        if !self.kazoo || priority > 999 {
            return Err(QueueError::InvalidArgument("priorities are 0 to 999, on kazoo queues only".into()));
        }
        self.core.put(&format!("{priority:03}-"), data, None).await.map(drop)
    }

    /// Removes and returns the head, waiting for one.
    ///
    /// # Errors
    /// [`QueueError::Connection`] (`Closed` once the manager closed).
    ///
    /// # Cancel safety
    /// A take dropped after the head's delete was sent may lose that item (the recipe deletes
    /// to take).
    pub async fn take(&self) -> Result<Vec<u8>, QueueError> {
        loop {
            if let Some(data) = self.take_by(None).await? {
                return Ok(data);
            }
        }
    }

    /// [`take`](Self::take) waiting at most `timeout`: `None` when no item came (Curator's
    /// `poll(timeout, unit)`).
    ///
    /// # Errors
    /// As [`take`](Self::take).
    ///
    /// # Cancel safety
    /// As [`take`](Self::take).
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Option<Vec<u8>>, QueueError> {
        self.take_by(Some(Deadline::after(timeout))).await
    }

    /// Removes and returns the head without waiting: `None` for an empty queue.
    ///
    /// # Errors
    /// As [`take`](Self::take).
    ///
    /// # Cancel safety
    /// As [`take`](Self::take).
    pub async fn poll(&self) -> Result<Option<Vec<u8>>, QueueError> {
        Ok(self.core.poll().await?.map(|t| t.data))
    }

    /// The head, left in the queue: `None` for an empty queue.
    ///
    /// # Errors
    /// [`QueueError::Connection`].
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn peek(&self) -> Result<Option<Vec<u8>>, QueueError> {
        self.core.peek().await
    }

    /// The head, left in the queue (Curator's `element()`).
    ///
    /// # Errors
    /// `NoNode` as [`QueueError::Connection`] for an empty queue (Curator throws
    /// `NoSuchElementException`); otherwise as [`peek`](Self::peek).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn element(&self) -> Result<Vec<u8>, QueueError> {
        self.peek().await?.ok_or_else(|| zkr_connection::Error::Zk(zookeeper_client::Error::NoNode).into())
    }

    async fn take_by(&self, deadline: Option<Deadline>) -> Result<Option<Vec<u8>>, QueueError> {
        Ok(self.core.take_by(deadline).await?.map(|t| t.data))
    }
}
