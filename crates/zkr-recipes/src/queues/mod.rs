//! Queues: Curator's `SimpleDistributedQueue`, `DistributedQueue`, `DistributedPriorityQueue`,
//! `DistributedDelayQueue` and `DistributedIdQueue`, on the same nodes, so Curator processes
//! can put and take on the same queues.
//!
//! Start with [`DistributedQueue`]: typed items through a [`Codec`] (Curator's
//! `QueueSerializer`), several items per node ([`put_multi`](DistributedQueue::put_multi)),
//! a bound on the queue's length, and a *lock-safe* mode (Curator's `lockPath`) in which an
//! item is removed only when its consumer [`ack`](QueueItem::ack)s it and comes back for another
//! consumer when the first one dies or drops it. [`SimpleDistributedQueue`] is ZooKeeper's own
//! recipe (`qn-` nodes holding raw bytes, as Curator's), or kazoo's `Queue` (`entry-` nodes).
//!
//! Consumers wait on the names of the queue's items, listed once and then kept by a watch (the
//! shared watch engine), so they ride out disconnects and session expiries; an item is read
//! only when a consumer takes it (then deleted at the version read).
//!
//! Where zkr differs from Curator (each has a test):
//! - in lock-safe mode the item's delete and its lock's release are one transaction, sent on
//!   the session that holds the lock, and an item is read again after its lock is taken: an item
//!   is never delivered to completion twice (Curator deletes the item, then the lock, and a
//!   consumer whose session expired mid-item still deletes it after another took it over:
//!   [CURATOR-605](https://github.com/apache/curator/issues/1122), open, which proposes this
//!   check);
//! - [`QueueItem::ack_and_create`] writes a completion record in the same transaction, so work
//!   recorded in ZooKeeper is done exactly once;
//! - a consumer is a [`Stream`](futures::Stream) (or `take().await`), not a callback.
//!
//! ZooKeeper is not a message broker: every item is a znode write, and the children listing
//! grows with the queue (Curator's `QueueSharder` puts the limit near 10 000 items). See
//! `docs/recipes/queues.md` for measured figures.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::queues::QueueError> {
//! use zkr_recipes::queues::{DistributedQueue, Utf8};
//!
//! let queue = DistributedQueue::builder(&zk, "/jobs/queue", Utf8).lock_path("/jobs/locks").build()?;
//! queue.put(&"reindex".to_string()).await?;
//! let item = queue.take().await?;
//! println!("working on {:?}", item.values());
//! item.ack().await?; // only now is it gone from the queue
//! # Ok(()) }
//! ```

pub(crate) mod core;
mod delay;
mod distributed;
mod framing;
mod id;
mod item;
mod priority;
mod simple;

pub use crate::config::{Codec, Json, Raw, Utf8};
pub use delay::DistributedDelayQueue;
pub use distributed::{DistributedQueue, DistributedQueueBuilder};
pub use id::DistributedIdQueue;
pub use item::QueueItem;
pub use priority::DistributedPriorityQueue;
pub use simple::SimpleDistributedQueue;

/// What went wrong with a queue.
///
/// [`Connection`](Self::Connection) errors are worth retrying; the others are answers.
///
/// # Examples
///
/// ```no_run
/// # async fn f(item: zkr_recipes::queues::QueueItem<String>) -> Result<(), zkr_recipes::queues::QueueError> {
/// use zkr_recipes::queues::QueueError;
///
/// match item.ack().await {
///     Ok(values) => println!("done: {values:?}"),
///     // Our session ended mid-item: another consumer has it now; do not record the work.
///     Err(QueueError::LockLost { node }) => println!("lost {node}"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// A bad path, bound or id: nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The codec could not encode an item: nothing was sent.
    #[error("could not encode a queue item")]
    Encode {
        /// The codec's error.
        #[source]
        source: crate::codec::CodecError,
    },
    /// A queue node that is not items in Curator's framing, or an item the codec cannot
    /// decode. The node has been removed (as Curator does), so it does not block the queue.
    #[error("queue node {node} is corrupt")]
    Corrupt {
        /// The node's path.
        node: String,
        /// What is wrong with it: not Curator's framing, or an item the codec refused.
        #[source]
        source: crate::codec::CodecError,
    },
    /// Lock-safe mode: this consumer's lock on the item is gone (its session ended), so the
    /// item was not removed and another consumer may be working on it.
    #[error("lost the lock on queue item {node}; it was not removed")]
    LockLost {
        /// The item's path.
        node: String,
    },
    /// Lock-safe mode: the item was deleted by something that does not take its lock (a
    /// consumer without lock safety, an id queue's `remove`), while this consumer held it.
    #[error("queue item {node} was removed by someone else while locked")]
    ItemGone {
        /// The item's path.
        node: String,
    },
    /// The reply to a put was lost and it cannot be told whether the item was created (the
    /// simple queue's raw nodes carry nothing to find them by).
    #[error("the put to {path} may or may not have been applied")]
    Indeterminate {
        /// The queue's path.
        path: String,
        /// The failure after the create was sent.
        #[source]
        source: zkr_connection::Error,
    },
    /// A ZooKeeper operation failed (an ack's refused operation is
    /// [`TransactionFailed`](zkr_connection::Error::TransactionFailed), which names it and its
    /// path).
    #[error(transparent)]
    Connection(zkr_connection::Error),
}

crate::errors::from_connection!(QueueError);

impl zkr_connection::Classify for QueueError {
    /// What the error means to the caller ([`ErrorKind`](zkr_connection::ErrorKind)), as for every family.
    fn kind(&self) -> zkr_connection::ErrorKind {
        match self {
            QueueError::Connection(e) => e.kind(),
            QueueError::InvalidArgument(_) | QueueError::Encode { .. } => zkr_connection::ErrorKind::Usage,
            QueueError::Corrupt { .. } => zkr_connection::ErrorKind::Corrupt,
            QueueError::LockLost { .. } => zkr_connection::ErrorKind::Lost,
            QueueError::ItemGone { .. } => zkr_connection::ErrorKind::Absent,
            QueueError::Indeterminate { .. } => zkr_connection::ErrorKind::Indeterminate,
        }
    }

    /// Might the failed write have been applied all the same? True for
    /// [`Indeterminate`](Self::Indeterminate) and for an ambiguous connection error
    /// ([`zkr_connection::Error::is_ambiguous`](zkr_connection::Classify::is_ambiguous)).
    fn is_ambiguous(&self) -> bool {
        match self {
            QueueError::Indeterminate { .. } => true,
            QueueError::Connection(e) => e.is_ambiguous(),
            _ => false,
        }
    }
}
