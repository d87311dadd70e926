//! [`DistributedDelayQueue`]: Curator's delay queue, the due time in the node name.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zkr_connection::Deadline;

use super::{framing, DistributedQueue, QueueError, QueueItem};

/// Curator's `DistributedDelayQueue`: a [`DistributedQueue`] whose nodes are named
/// `queue-|<due epoch ms in hex>|<sequence>` (Curator's `epochToString`); a consumer gets an
/// item only once its time has come, soonest first. The clock is each consumer's wall clock,
/// as in Curator, so machines' clocks should agree. Built by
/// [`DistributedQueueBuilder::build_delay`](super::DistributedQueueBuilder::build_delay).
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::queues::QueueError> {
/// use std::time::{Duration, SystemTime};
/// use zkr_recipes::queues::{DistributedQueue, Utf8};
///
/// let queue = DistributedQueue::builder(&zk, "/jobs/delayed", Utf8).build_delay()?;
/// queue.put(&"remind".to_string(), SystemTime::now() + Duration::from_secs(60)).await?;
/// let item = queue.take().await?; // about a minute later
/// # drop(item); Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedDelayQueue<T> {
    queue: DistributedQueue<T>,
}

/// `until` in epoch milliseconds; Curator refuses 0 and earlier.
fn epoch_ms(until: SystemTime) -> Result<u64, QueueError> {
    match until.duration_since(UNIX_EPOCH) {
        Ok(d) if d.as_millis() > 0 => u64::try_from(d.as_millis())
            .map_err(|_| QueueError::InvalidArgument("a delay past the year 500 million".into())),
        _ => Err(QueueError::InvalidArgument("a delay-until time must be after the Unix epoch".into())),
    }
}

impl<T: Send + Sync + 'static> DistributedDelayQueue<T> {
    pub(crate) fn new(queue: DistributedQueue<T>) -> Self {
        DistributedDelayQueue { queue }
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        self.queue.path()
    }

    /// Puts `item`, to be taken at `until` or later.
    ///
    /// # Errors
    /// [`QueueError::InvalidArgument`] for a time not after the Unix epoch; otherwise as
    /// [`DistributedQueue::put`].
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put(&self, item: &T, until: SystemTime) -> Result<(), QueueError> {
        self.put_multi(std::slice::from_ref(item), until).await
    }

    /// [`put`](Self::put) waiting at most `timeout` for room in a bounded queue.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put_timeout(
        &self,
        item: &T,
        until: SystemTime,
        timeout: Duration,
    ) -> Result<Option<()>, QueueError> {
        let infix = framing::delay_name(epoch_ms(until)?);
        self.queue
            .put_node(&infix, std::slice::from_ref(item), Some(Deadline::after(timeout)))
            .await
            .map(|done| done.then_some(()))
    }

    /// Puts several items in one node, to be taken at `until` or later.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put_multi(&self, items: &[T], until: SystemTime) -> Result<(), QueueError> {
        self.queue.put_node(&framing::delay_name(epoch_ms(until)?), items, None).await.map(drop)
    }

    /// Takes the item due soonest once it is due, waiting for one.
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

    /// When a node of this queue is due (from its name); the Unix epoch for a node without a
    /// time (due at once, as in Curator).
    pub fn due_of(node: &str) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(framing::parse_delay(zkr_connection::path::node_name(node)))
    }
}
