//! Errors of the lock recipes.

use crate::fence::LostReason;

/// Errors of [`InterProcessMutex`](super::InterProcessMutex) and the other lock recipes.
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum LockError {
    /// The connection layer failed: an invalid path, a retry policy that gave up, a deadline,
    /// an expired session, a closed manager, or a ZooKeeper answer such as `NoAuth`.
    #[error(transparent)]
    Connection(zkr_connection::Error),
    /// Our contender node disappeared while we waited (the session expired, or someone deleted
    /// it) and the retry policy did not allow starting over with a new one.
    #[error("our lock node {node} under {path} vanished while waiting")]
    NodeVanished {
        /// The lock path.
        path: String,
        /// Our node that vanished.
        node: String,
    },
    /// A driver's [`gets_the_lock`](super::LockInternalsDriver::gets_the_lock) was asked about
    /// a node that is not among the contenders it was given: ours is gone (the lock recipes
    /// start over on it, and report [`NodeVanished`](Self::NodeVanished) if they must stop).
    #[error("{node} is not among the lock's contenders")]
    NotAContender {
        /// The node asked about.
        node: String,
    },
    /// The lock was lost while held: a release reports it, and guarded writes fail with it.
    #[error("the lock {path} was lost while held: {reason}")]
    Lost {
        /// The lock path.
        path: String,
        /// Why.
        reason: LostReason,
    },
    /// The recipe is not in a state that allows the call (a latch started twice, or after it
    /// was closed).
    #[error("{path}: {reason}")]
    IllegalState {
        /// The recipe's path.
        path: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An argument cannot be used: an invalid path (or `/`, or one in the reserved
    /// `/zookeeper` tree), an empty participant id, data over ZooKeeper's limit.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The lock's directory holds contenders of another recipe layout: joining would let both
    /// hold the lock at once, neither seeing the other's contenders. Use the recipe that shares
    /// that layout ([`LockLayout::to_share`](super::LockLayout::to_share)), or another path.
    #[error("{path} holds contenders of {}: zkr does not mix layouts (both would hold the lock at once); to share it use {}", found.describe(), found.to_share())]
    LayoutConflict {
        /// The lock's path.
        path: String,
        /// The layout found there.
        found: super::LockLayout,
    },
}

crate::errors::from_connection!(LockError);

impl LockError {
    pub(crate) fn zk(error: zookeeper_client::Error) -> Self {
        LockError::Connection(zkr_connection::Error::Zk(error))
    }
}

impl zkr_connection::Classify for LockError {
    /// What the error means to the caller ([`ErrorKind`](zkr_connection::ErrorKind)), as for every family.
    fn kind(&self) -> zkr_connection::ErrorKind {
        match self {
            LockError::Connection(e) => e.kind(),
            LockError::NodeVanished { .. } | LockError::NotAContender { .. } | LockError::Lost { .. } => {
                zkr_connection::ErrorKind::Lost
            }
            LockError::IllegalState { .. }
            | LockError::InvalidArgument(_)
            | LockError::LayoutConflict { .. } => zkr_connection::ErrorKind::Usage,
        }
    }

    /// Might the failed operation have been applied all the same? True when its reply was lost
    /// (connection loss, a broken connection, an operation timeout, or the session ending while
    /// it was in flight, even when the retry policy then gave up), or a guarded transaction
    /// failed on its retry after such a loss ([`zkr_connection::Error::is_ambiguous`](zkr_connection::Classify::is_ambiguous)): look at
    /// ZooKeeper to learn the outcome. False for [`Lost`](Self::Lost): a guarded write that
    /// finds the lock lost is not sent, or was refused by the server's check of the lock node.
    fn is_ambiguous(&self) -> bool {
        match self {
            LockError::Connection(e) => e.is_ambiguous(),
            _ => false,
        }
    }
}

impl From<zookeeper_client::Error> for LockError {
    fn from(error: zookeeper_client::Error) -> Self {
        LockError::zk(error)
    }
}
