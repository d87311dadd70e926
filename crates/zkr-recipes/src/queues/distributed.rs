//! [`DistributedQueue`]: Curator's typed queue of `queue-` nodes, and the builder of every
//! typed queue (Curator's `QueueBuilder`).

use crate::codec::CodecError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use zkr_connection::{Deadline, ZkClient};

use super::core::{Core, Order, Taken};
use super::item::QueueItem;
use super::{
    framing, Codec, DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, QueueError,
};

/// Curator's `DistributedQueue.QUEUE_ITEM_NAME`.
pub(crate) const ITEM_PREFIX: &str = crate::layouts::QUEUE_PREFIX;

/// Builds a [`DistributedQueue`] or one of its kin (Curator's `QueueBuilder`): the queue's
/// path, the codec of its items, and the options below.
///
/// # Examples
///
/// ```no_run
/// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::queues::QueueError> {
/// use zkr_recipes::queues::{DistributedQueue, Json};
///
/// let queue = DistributedQueue::<Vec<u32>>::builder(&zk, "/jobs/queue", Json)
///     .lock_path("/jobs/locks")
///     .max_items(1000)
///     .build()?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until built"]
pub struct DistributedQueueBuilder<T> {
    zk: ZkClient,
    path: String,
    codec: Arc<dyn Codec<T>>,
    lock_path: Option<String>,
    max_items: Option<usize>,
}

impl<T> fmt::Debug for DistributedQueueBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistributedQueueBuilder")
            .field("path", &self.path)
            .field("lock_path", &self.lock_path)
            .field("max_items", &self.max_items)
            .finish()
    }
}

impl<T: Send + Sync + 'static> DistributedQueueBuilder<T> {
    /// Lock-safe consumption (Curator's `lockPath`): a consumer locks an item with the
    /// ephemeral node `<lock_path>/<item name>` and the item stays in the queue until
    /// [`QueueItem::ack`]. Defaults to none: an item is deleted when it is taken.
    pub fn lock_path(mut self, lock_path: impl Into<String>) -> Self {
        self.lock_path = Some(lock_path.into());
        self
    }

    /// A bound on the queue (Curator's `maxItems`): a put waits while the queue holds this many
    /// nodes. Several producers putting at once can pass it by a few, as in Curator. Defaults
    /// to none.
    pub fn max_items(mut self, max_items: usize) -> Self {
        self.max_items = Some(max_items);
        self
    }

    fn core(&self, order: Order) -> Result<Core, QueueError> {
        Core::new(&self.zk, &self.path, ITEM_PREFIX, order, self.lock_path.clone(), self.max_items)
    }

    /// The FIFO queue (Curator's `buildQueue`).
    ///
    /// # Errors
    /// [`QueueError::InvalidArgument`] for a bad path, a lock path equal to the queue's, or a
    /// bound of 0.
    pub fn build(self) -> Result<DistributedQueue<T>, QueueError> {
        Ok(DistributedQueue { core: Arc::new(self.core(Order::Name)?), codec: self.codec })
    }

    /// The priority queue (Curator's `buildPriorityQueue`).
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_priority(self) -> Result<DistributedPriorityQueue<T>, QueueError> {
        self.build().map(DistributedPriorityQueue::new)
    }

    /// The delay queue (Curator's `buildDelayQueue`).
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_delay(self) -> Result<DistributedDelayQueue<T>, QueueError> {
        let core = Arc::new(self.core(Order::Delay)?);
        Ok(DistributedDelayQueue::new(DistributedQueue { core, codec: self.codec }))
    }

    /// The id queue (Curator's `buildIdQueue`).
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_id(self) -> Result<DistributedIdQueue<T>, QueueError> {
        let core = Arc::new(self.core(Order::Id)?);
        Ok(DistributedIdQueue::new(DistributedQueue { core, codec: self.codec }))
    }
}

/// Curator's `DistributedQueue`: a FIFO queue of typed items, one `queue-<sequence>`
/// PERSISTENT_SEQUENTIAL node per [`put`](Self::put) holding the items in Curator's framing, so
/// Curator processes with the same serializer share it. Cheap to clone; clones share the
/// caches consumers wait on.
///
/// Without a lock path an item is deleted when it is taken (at most once: a consumer that dies
/// right after loses it, as in Curator). With one, see [`QueueItem`].
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::queues::QueueError> {
/// use futures::StreamExt;
/// use zkr_recipes::queues::{DistributedQueue, Utf8};
///
/// let queue = DistributedQueue::builder(&zk, "/jobs/queue", Utf8).build()?;
/// queue.put_multi(&["a".to_string(), "b".to_string()]).await?;
/// let mut items = Box::pin(queue.consume());
/// while let Some(item) = items.next().await {
///     let values = item?.ack().await?;
///     println!("{values:?}");
/// }
/// # Ok(()) }
/// ```
pub struct DistributedQueue<T> {
    pub(crate) core: Arc<Core>,
    codec: Arc<dyn Codec<T>>,
}

impl<T> Clone for DistributedQueue<T> {
    fn clone(&self) -> Self {
        DistributedQueue { core: self.core.clone(), codec: self.codec.clone() }
    }
}

impl<T> fmt::Debug for DistributedQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistributedQueue").field("core", &self.core).finish()
    }
}

impl<T: Send + Sync + 'static> DistributedQueue<T> {
    /// A builder of the queue at `path` whose items `codec` encodes.
    pub fn builder(zk: &ZkClient, path: &str, codec: impl Codec<T>) -> DistributedQueueBuilder<T> {
        DistributedQueueBuilder {
            zk: zk.clone(),
            path: path.to_owned(),
            codec: Arc::new(codec),
            lock_path: None,
            max_items: None,
        }
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        &self.core.path
    }

    /// Was the queue built with a lock path (lock-safe consumption)?
    pub fn is_lock_safe(&self) -> bool {
        self.core.is_lock_safe()
    }

    /// Puts one item, waiting while a bounded queue is full.
    ///
    /// # Errors
    /// [`QueueError::Encode`]; [`QueueError::Indeterminate`] when the create's reply was lost
    /// (it is not repeated, so it never duplicates the item); [`QueueError::Connection`].
    ///
    /// # Cancel safety
    /// Dropped while waiting for room, nothing is put; dropped after the create was sent, the
    /// item may be in the queue.
    pub async fn put(&self, item: &T) -> Result<(), QueueError> {
        self.put_multi(std::slice::from_ref(item)).await
    }

    /// [`put`](Self::put) waiting at most `timeout` for room in a bounded queue: `Ok(None)` when
    /// there was none (nothing was put).
    ///
    /// # Errors
    /// As [`put`](Self::put).
    ///
    /// # Cancel safety
    /// As [`put`](Self::put).
    pub async fn put_timeout(&self, item: &T, timeout: Duration) -> Result<Option<()>, QueueError> {
        self.put_node("", std::slice::from_ref(item), Some(Deadline::after(timeout)))
            .await
            .map(|done| done.then_some(()))
    }

    /// Puts several items in one node (Curator's `putMulti`): one write, and a consumer gets
    /// them together.
    ///
    /// # Errors
    /// As [`put`](Self::put), and [`QueueError::InvalidArgument`] for no items.
    ///
    /// # Cancel safety
    /// As [`put`](Self::put).
    pub async fn put_multi(&self, items: &[T]) -> Result<(), QueueError> {
        self.put_node("", items, None).await.map(drop)
    }

    /// Takes the first item, waiting for one.
    ///
    /// # Errors
    /// [`QueueError::Corrupt`] for a node that is not items (it is removed);
    /// [`QueueError::Connection`] (`Closed` once the manager closed).
    ///
    /// # Cancel safety
    /// Lock-safe mode: cancel safe (a lock taken is released). Without it, a take dropped
    /// after the item's delete was sent may lose the item.
    pub async fn take(&self) -> Result<QueueItem<T>, QueueError> {
        loop {
            if let Some(item) = self.take_by(None).await? {
                return Ok(item);
            }
        }
    }

    /// [`take`](Self::take) waiting at most `timeout`: `None` when no item came.
    ///
    /// # Errors
    /// As [`take`](Self::take).
    ///
    /// # Cancel safety
    /// As [`take`](Self::take).
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Option<QueueItem<T>>, QueueError> {
        self.take_by(Some(Deadline::after(timeout))).await
    }

    /// Every item, taken one after the other as they come: a [`Stream`] that ends only after
    /// yielding the error that the manager closed. Dropping the stream drops its pending
    /// [`take`](Self::take), with that method's cancel safety.
    pub fn consume(&self) -> impl Stream<Item = Result<QueueItem<T>, QueueError>> + Send + 'static {
        futures::stream::unfold(Some(self.clone()), |queue| async move {
            let queue = queue?;
            let item = queue.take().await;
            let closed = matches!(&item, Err(QueueError::Connection(zkr_connection::Error::Closed)));
            Some((item, (!closed).then_some(queue)))
        })
    }

    /// How many item nodes the queue holds now (one listing; a `put_multi` node counts once).
    ///
    /// # Errors
    /// [`QueueError::Connection`].
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn item_count(&self) -> Result<usize, QueueError> {
        Ok(self.core.listing().await?.len())
    }

    pub(crate) async fn put_node(
        &self,
        infix: &str,
        items: &[T],
        deadline: Option<Deadline>,
    ) -> Result<bool, QueueError> {
        if items.is_empty() {
            return Err(QueueError::InvalidArgument("a put needs at least one item".into()));
        }
        let encoded: Result<Vec<Vec<u8>>, _> = items.iter().map(|i| self.codec.encode(i)).collect();
        let encoded = encoded.map_err(|source| QueueError::Encode { source })?;
        self.core.put(infix, &framing::encode(&encoded), deadline).await
    }

    pub(crate) async fn take_by(
        &self,
        deadline: Option<Deadline>,
    ) -> Result<Option<QueueItem<T>>, QueueError> {
        match self.core.take_by(deadline).await? {
            Some(taken) => self.decode(taken).await.map(Some),
            None => Ok(None),
        }
    }

    /// The values of a taken node; a corrupt one is removed and reported.
    pub(crate) async fn decode(&self, taken: Taken) -> Result<QueueItem<T>, QueueError> {
        let Taken { node, data, lock } = taken;
        let values = framing::decode(&data)
            .map_err(|reason| CodecError::new("Curator's queue framing", reason))
            .and_then(|items| items.iter().map(|i| self.codec.decode(i)).collect::<Result<Vec<T>, _>>());
        match values {
            Ok(values) => Ok(QueueItem::new(node, values, lock)),
            Err(source) => {
                tracing::warn!(node = %node, error = %source, cause = ?std::error::Error::source(&source), "corrupt queue item; removing it");
                if let Some(lock) = lock {
                    QueueItem::<T>::new(node.clone(), Vec::new(), Some(lock)).ack().await?;
                }
                Err(QueueError::Corrupt { node, source })
            }
        }
    }
}
