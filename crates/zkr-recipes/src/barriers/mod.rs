//! Barriers: Curator's `DistributedBarrier` and `DistributedDoubleBarrier`, on the same nodes.
//!
//! - [`DistributedBarrier`]: while its node exists, waiters wait; removing it lets them all go.
//! - [`DistributedDoubleBarrier`]: `member_qty` members [`enter`](DistributedDoubleBarrier::enter)
//!   and start together once all of them are there, and [`leave`](DistributedDoubleBarrier::leave)
//!   together once all of them are done. Each member is an ephemeral node named by a UUID under
//!   the barrier's path; the one that counts the last member creates `ready`. Curator processes
//!   can be members of the same barrier.
//!
//! Waits follow a [`CuratorCache`] of the barrier's path (the shared
//! watch engine), so they ride out disconnects and session expiries.
//!
//! Where zkr differs from Curator (each has a test):
//! - a member whose `enter` times out deletes its node; Curator's stays until its session ends
//!   and counts towards the next members' quota, so they can start without it;
//! - `ready` is created in one transaction with a check of every member it counted, so it never
//!   exists unless `member_qty` members did at that moment, and a `ready` left behind by an
//!   earlier round lets no one in before the quota is met (Curator's `enter` passes at once);
//! - a member keeps its node through a session expiry of its own (it is a
//!   [`PersistentNode`](crate::nodes::PersistentNode)), so the others do not leave without it.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::barriers::BarrierError> {
//! use zkr_recipes::barriers::DistributedDoubleBarrier;
//!
//! let mut barrier = DistributedDoubleBarrier::new(&zk, "/jobs/reindex/barrier", 3)?;
//! barrier.enter().await?; // the three workers start together
//! // ... work ...
//! barrier.leave().await?; // and finish together
//! # Ok(()) }
//! ```

mod barrier;
mod double;
mod rounds;

use zkr_connection::Deadline;

pub use barrier::DistributedBarrier;
pub use double::DistributedDoubleBarrier;

use crate::cache::{CacheMode, CuratorCache};

/// What went wrong with a barrier.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BarrierError {
    /// A bad path or member count: nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// `leave` was called on a member that has not entered (or has left already).
    #[error("not entered: call enter() before leave()")]
    NotEntered,
    /// The member's node could not be created.
    #[error(transparent)]
    Node(#[from] crate::nodes::NodeError),
    /// A ZooKeeper operation failed.
    #[error(transparent)]
    Connection(zkr_connection::Error),
}

crate::errors::from_connection!(BarrierError);

impl zkr_connection::Classify for BarrierError {
    /// What the error means to the caller ([`ErrorKind`](zkr_connection::ErrorKind)), as for every family.
    fn kind(&self) -> zkr_connection::ErrorKind {
        match self {
            BarrierError::Connection(e) => e.kind(),
            BarrierError::Node(e) => e.kind(),
            BarrierError::InvalidArgument(_) | BarrierError::NotEntered => zkr_connection::ErrorKind::Usage,
        }
    }

    /// Might the failed write have been applied all the same
    /// ([`zkr_connection::Error::is_ambiguous`](zkr_connection::Classify::is_ambiguous))?
    fn is_ambiguous(&self) -> bool {
        match self {
            BarrierError::Connection(e) => e.is_ambiguous(),
            BarrierError::Node(e) => e.is_ambiguous(),
            _ => false,
        }
    }
}

/// A cache of `path` in `mode`, its first read bounded by `deadline`; `None` when the deadline
/// passed first.
async fn cache(
    zk: &zkr_connection::ZkClient,
    path: &str,
    mode: CacheMode,
    deadline: Option<Deadline>,
) -> Result<Option<CuratorCache>, BarrierError> {
    let mut builder = CuratorCache::builder(zk, path).mode(mode);
    if let Some(deadline) = deadline {
        let left = deadline.remaining();
        if left.is_zero() {
            return Ok(None);
        }
        builder = builder.initial_timeout(left);
    }
    match builder.start().await {
        Ok(cache) => Ok(Some(cache)),
        Err(_) if deadline.is_some_and(|d| d.has_passed()) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What a [`wait_confirmed`](crate::cache::wait_confirmed) that answered `None` means: the deadline passed (`Ok(None)`), or the
/// cache stopped following ZooKeeper because the manager was closed.
fn finished<T>(found: Option<T>, deadline: Option<Deadline>) -> Result<Option<T>, BarrierError> {
    match found {
        None if deadline.is_none_or(|d| !d.has_passed()) => Err(zkr_connection::Error::Closed.into()),
        other => Ok(other),
    }
}
