//! Errors of the ID generators.

use std::time::Duration;

/// Errors of the ID generators in [`crate::id`].
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum IdError {
    /// The connection layer failed: an invalid path, a retry policy that gave up, a deadline,
    /// an expired session, a closed manager, or a ZooKeeper answer such as `NoAuth`.
    #[error(transparent)]
    Connection(zkr_connection::Error),
    /// An argument is out of range (a zero step, a batch over the limit, a bit layout that
    /// does not fit 63 bits, an empty worker identity).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A node the generator keeps its state in holds something it cannot read (another
    /// program wrote to it). The generator refuses rather than risk handing out an ID twice.
    #[error("{path} does not hold what the ID generator expects: {reason}")]
    CorruptState {
        /// The node.
        path: String,
        /// What is wrong with its data.
        reason: String,
    },
    /// The generator's ID space is used up (a segment counter at `i64::MAX`, or a snowflake
    /// timestamp past its bits).
    #[error("the ID space of {path} is exhausted")]
    Exhausted {
        /// The generator's path.
        path: String,
    },
    /// The system clock stepped back further than the generator waits out.
    #[error("the clock moved backwards by {by:?}; refusing to issue IDs (limit {limit:?})")]
    ClockMovedBackwards {
        /// How far behind the last issued timestamp the clock is.
        by: Duration,
        /// The largest step the generator waits out.
        limit: Duration,
    },
    /// At start, the clock is behind the timestamp this worker ID last recorded in ZooKeeper:
    /// IDs from this process could repeat IDs already issued.
    #[error("the clock is {by:?} behind the timestamp worker {worker_id} recorded in ZooKeeper; refusing to start")]
    ClockBehindRecord {
        /// The leased worker ID.
        worker_id: u64,
        /// How far behind.
        by: Duration,
    },
    /// Every worker ID is leased by a live worker.
    #[error("all {count} worker IDs under {path} are leased by live workers")]
    NoWorkerId {
        /// The generator's path.
        path: String,
        /// How many worker IDs the layout has.
        count: u64,
    },
    /// The snowflake generator could not record a new timestamp watermark in ZooKeeper in
    /// time (ZooKeeper unreachable, or the worker ID lease lost), so it stopped issuing IDs
    /// rather than go past the last recorded one.
    #[error("worker {worker_id} could not record its timestamp watermark in ZooKeeper within {waited:?}")]
    WatermarkStalled {
        /// The leased worker ID.
        worker_id: u64,
        /// How long `next` waited.
        waited: Duration,
    },
    /// The generator was closed.
    #[error("the ID generator was closed")]
    Closed,
}

crate::errors::from_connection!(IdError);

impl zkr_connection::Classify for IdError {
    /// What the error means to the caller ([`ErrorKind`](zkr_connection::ErrorKind)), as for every family.
    fn kind(&self) -> zkr_connection::ErrorKind {
        match self {
            IdError::Connection(e) => e.kind(),
            IdError::InvalidArgument(_) => zkr_connection::ErrorKind::Usage,
            IdError::CorruptState { .. } => zkr_connection::ErrorKind::Corrupt,
            IdError::WatermarkStalled { .. } => zkr_connection::ErrorKind::Unreachable,
            IdError::Closed => zkr_connection::ErrorKind::Closed,
            IdError::Exhausted { .. }
            | IdError::ClockMovedBackwards { .. }
            | IdError::ClockBehindRecord { .. }
            | IdError::NoWorkerId { .. } => zkr_connection::ErrorKind::Other,
        }
    }

    /// Might the failed write have been applied all the same
    /// ([`zkr_connection::Error::is_ambiguous`](zkr_connection::Classify::is_ambiguous))?
    fn is_ambiguous(&self) -> bool {
        matches!(self, IdError::Connection(e) if e.is_ambiguous())
    }
}

impl From<zookeeper_client::Error> for IdError {
    fn from(error: zookeeper_client::Error) -> Self {
        IdError::Connection(zkr_connection::Error::Zk(error))
    }
}
