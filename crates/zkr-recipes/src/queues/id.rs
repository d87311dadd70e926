//! [`DistributedIdQueue`]: Curator's id queue, an id in each node's name.

use std::time::Duration;

use zkr_connection::Deadline;

use super::{framing, DistributedQueue, QueueError, QueueItem};

/// Curator's `DistributedIdQueue`: a [`DistributedQueue`] whose nodes are named
/// `queue-|<id>|<sequence>` (`/` and `|` in the id become `_`, as in Curator), taken in put
/// order, and removable by id before anyone takes them. Built by
/// [`DistributedQueueBuilder::build_id`](super::DistributedQueueBuilder::build_id).
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::queues::QueueError> {
/// use zkr_recipes::queues::{DistributedQueue, Utf8};
///
/// let queue = DistributedQueue::builder(&zk, "/jobs/by-id", Utf8).build_id()?;
/// queue.put(&"resize".to_string(), "image-42").await?;
/// assert_eq!(queue.remove("image-42").await?, 1); // cancelled before anyone took it
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedIdQueue<T> {
    queue: DistributedQueue<T>,
}

fn checked(id: &str) -> Result<&str, QueueError> {
    if id.is_empty() {
        return Err(QueueError::InvalidArgument("an id queue's id must not be empty".into()));
    }
    Ok(id)
}

impl<T: Send + Sync + 'static> DistributedIdQueue<T> {
    pub(crate) fn new(queue: DistributedQueue<T>) -> Self {
        DistributedIdQueue { queue }
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        self.queue.path()
    }

    /// Puts `item` under `id` (ids need not be unique).
    ///
    /// # Errors
    /// [`QueueError::InvalidArgument`] for an empty id; otherwise as [`DistributedQueue::put`].
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put(&self, item: &T, id: &str) -> Result<(), QueueError> {
        let infix = framing::id_name(checked(id)?);
        self.queue.put_node(&infix, std::slice::from_ref(item), None).await.map(drop)
    }

    /// [`put`](Self::put) waiting at most `timeout` for room in a bounded queue.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put_timeout(&self, item: &T, id: &str, timeout: Duration) -> Result<Option<()>, QueueError> {
        let infix = framing::id_name(checked(id)?);
        self.queue
            .put_node(&infix, std::slice::from_ref(item), Some(Deadline::after(timeout)))
            .await
            .map(|done| done.then_some(()))
    }

    /// Removes every node put under `id` that no one has taken; how many were removed. In
    /// lock-safe mode a node is removed under its lock, so one a consumer is working on stays.
    ///
    /// # Errors
    /// [`QueueError::InvalidArgument`] for an empty id; [`QueueError::Connection`].
    ///
    /// # Cancel safety
    /// Cancel safe: the nodes removed so far are gone, the others stay.
    pub async fn remove(&self, id: &str) -> Result<usize, QueueError> {
        let fixed = framing::fix_id(checked(id)?);
        let core = &self.queue.core;
        let mut removed = 0;
        for name in core.listing().await? {
            if framing::parse_id(&name).is_none_or(|(found, _)| found != fixed) {
                continue;
            }
            let Ok(taken) = core.take_node(&name).await? else { continue };
            if let Some(lock) = taken.lock {
                match QueueItem::<T>::new(taken.node, Vec::new(), Some(lock)).ack().await {
                    Ok(_) => {}
                    Err(QueueError::LockLost { .. } | QueueError::ItemGone { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
            removed += 1;
        }
        Ok(removed)
    }

    /// Takes the oldest item, waiting for one.
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

    /// The id a node of this queue was put under (from its name, as fixed).
    pub fn id_of(node: &str) -> Option<String> {
        framing::parse_id(zkr_connection::path::node_name(node)).map(|(id, _)| id.to_owned())
    }
}
