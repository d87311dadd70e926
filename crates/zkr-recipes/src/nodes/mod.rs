//! Nodes that stay: Curator's `PersistentNode`, `PersistentTtlNode` and `GroupMember`.
//!
//! A [`PersistentNode`] is a node this process keeps in ZooKeeper: created in the background,
//! created again when another client deletes it and, for ephemeral modes, on every new session
//! after an expiry (the bug Curator's users kept reporting for its older ephemeral nodes:
//! CURATOR-154, CURATOR-164, CURATOR-320). Its current path is a watchable value: a sequential
//! node gets a new name each time it is created again. It is a consumer of the crate's one watch
//! engine: the engine's resync after a reconnect or a new session is what creates it again.
//!
//! A [`PersistentTtlNode`] is a TTL node kept alive by touching a child; a [`GroupMember`] is
//! this process's ephemeral member node plus a cache of the group.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::nodes::NodeError> {
//! use std::time::Duration;
//! use zkr_recipes::nodes::PersistentNode;
//! use zkr_connection::CreateMode;
//!
//! let node = PersistentNode::builder(&zk, "/workers/w-1", CreateMode::Ephemeral).data(b"ready").start().await?;
//! let path = node.wait_for_initial_create_timeout(Duration::from_secs(5)).await?;
//! println!("registered at {path:?}");
//! node.close().await;
//! # Ok(()) }
//! ```

mod group;
mod keeper;
mod persistent;
mod ttl;

pub use group::GroupMember;
pub use persistent::{PersistentNode, PersistentNodeBuilder};
pub use ttl::PersistentTtlNode;

/// What went wrong with a kept node.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// A bad path, name, mode or TTL: nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The node does not exist (yet): what [`PersistentNode::creation_error`] says after a
    /// [`wait_for_initial_create_timeout`](PersistentNode::wait_for_initial_create_timeout)
    /// ran out. `last` is why the last try failed (the server has TTL nodes off, `NoAuth`, no
    /// connection); `held_by` the session of another client's ephemeral node at the path,
    /// which this one waits to see deleted.
    #[error("{path} is not created{}", held_by.map(|s| format!(": the path is held by session {s:#x}")).unwrap_or_default())]
    NotCreated {
        /// The node's path (for sequential modes, the path it is created under).
        path: String,
        /// Another session's ephemeral node at the path.
        held_by: Option<i64>,
        /// Why the last try failed.
        #[source]
        last: Option<Box<zkr_connection::Error>>,
    },
    /// The node was closed.
    #[error("the node was closed")]
    Closed,
    /// A ZooKeeper operation failed.
    #[error(transparent)]
    Connection(zkr_connection::Error),
}

crate::errors::from_connection!(NodeError);

impl zkr_connection::Classify for NodeError {
    /// What the error means to the caller ([`ErrorKind`](zkr_connection::ErrorKind)), as for every family: a node
    /// not created is a conflict while another session holds its path, else its last failure's
    /// kind (unreachable when there was none).
    fn kind(&self) -> zkr_connection::ErrorKind {
        match self {
            NodeError::Connection(e) => e.kind(),
            NodeError::InvalidArgument(_) => zkr_connection::ErrorKind::Usage,
            NodeError::NotCreated { held_by: Some(_), .. } => zkr_connection::ErrorKind::Conflict,
            NodeError::NotCreated { last: Some(e), .. } => e.kind(),
            NodeError::NotCreated { .. } => zkr_connection::ErrorKind::Unreachable,
            NodeError::Closed => zkr_connection::ErrorKind::Closed,
        }
    }

    /// Might the failed write have been applied all the same
    /// ([`zkr_connection::Error::is_ambiguous`](zkr_connection::Classify::is_ambiguous))?
    fn is_ambiguous(&self) -> bool {
        matches!(self, NodeError::Connection(e) if e.is_ambiguous())
    }
}
