//! [`DistributedPriorityQueue`]: Curator's priority queue, the priority in the node name.

use std::time::Duration;

use zkr_connection::Deadline;

use super::{framing, DistributedQueue, QueueError, QueueItem};

/// Curator's `DistributedPriorityQueue`: a [`DistributedQueue`] whose nodes are named
/// `queue-<priority><sequence>`, the priority as Curator's `priorityToString` writes it (`1` or
/// `0` for its sign, then 8 hex digits), so nodes sort by priority, then by put order. Lower
/// numbers are taken first. Built by
/// [`DistributedQueueBuilder::build_priority`](super::DistributedQueueBuilder::build_priority).
///
/// Curator consumers of the same path take in the same order. (Curator's `minItemsBeforeRefresh`
/// is moot here: every take looks at the latest snapshot.)
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::queues::QueueError> {
/// use zkr_recipes::queues::{DistributedQueue, Utf8};
///
/// let queue = DistributedQueue::builder(&zk, "/jobs/prio", Utf8).build_priority()?;
/// queue.put(&"later".to_string(), 10).await?;
/// queue.put(&"first".to_string(), -5).await?;
/// assert_eq!(queue.take().await?.ack().await?, ["first"]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedPriorityQueue<T> {
    queue: DistributedQueue<T>,
}

impl<T: Send + Sync + 'static> DistributedPriorityQueue<T> {
    pub(crate) fn new(queue: DistributedQueue<T>) -> Self {
        DistributedPriorityQueue { queue }
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        self.queue.path()
    }

    /// Puts `item` with `priority` (lower first).
    ///
    /// # Errors
    /// As [`DistributedQueue::put`].
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put(&self, item: &T, priority: i32) -> Result<(), QueueError> {
        self.put_multi(std::slice::from_ref(item), priority).await
    }

    /// [`put`](Self::put) waiting at most `timeout` for room in a bounded queue.
    ///
    /// # Errors
    /// As [`DistributedQueue::put`].
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put_timeout(
        &self,
        item: &T,
        priority: i32,
        timeout: Duration,
    ) -> Result<Option<()>, QueueError> {
        let deadline = Some(Deadline::after(timeout));
        self.queue
            .put_node(&framing::priority_name(priority), std::slice::from_ref(item), deadline)
            .await
            .map(|done| done.then_some(()))
    }

    /// Puts several items in one node with `priority`.
    ///
    /// # Errors
    /// As [`DistributedQueue::put_multi`].
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put_multi(&self, items: &[T], priority: i32) -> Result<(), QueueError> {
        self.queue.put_node(&framing::priority_name(priority), items, None).await.map(drop)
    }

    /// Takes the item of the lowest priority (the oldest among equals), waiting for one.
    ///
    /// # Errors
    /// As [`DistributedQueue::take`].
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::take`].
    pub async fn take(&self) -> Result<QueueItem<T>, QueueError> {
        self.queue.take().await
    }

    /// [`take`](Self::take) waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`DistributedQueue::take`].
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::take`].
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Option<QueueItem<T>>, QueueError> {
        self.queue.take_timeout(timeout).await
    }

    /// The priority a node of this queue was put with (from its name).
    pub fn priority_of(node: &str) -> Option<i32> {
        framing::parse_priority(zkr_connection::path::node_name(node), super::distributed::ITEM_PREFIX)
    }
}
