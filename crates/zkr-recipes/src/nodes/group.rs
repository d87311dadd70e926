//! [`GroupMember`]: Curator's `GroupMember`.

use std::collections::BTreeMap;
use std::time::Duration;

use zkr_connection::{path, Deadline, ZkClient};
use zookeeper_client::CreateMode;

use super::{NodeError, PersistentNode};
use crate::cache::{CacheMode, CuratorCache};

/// This process's membership of a group, and the group (Curator's `GroupMember`, same layout):
/// an ephemeral [`PersistentNode`] at `<membership path>/<id>` with a payload, and a
/// [`CuratorCache`] of the membership path's children. Curator processes in the same group see
/// this member, and it sees them.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::nodes::NodeError> {
/// use std::time::Duration;
/// use zkr_recipes::nodes::GroupMember;
///
/// let member = GroupMember::start(&zk, "/app/members", "host-1", b"10.0.0.1:8080").await?;
/// member.wait_for_initial_create_timeout(Duration::from_secs(5)).await?;
/// for (id, payload) in member.current_members() {
///     println!("{id}: {}", String::from_utf8_lossy(&payload));
/// }
/// member.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct GroupMember {
    membership_path: String,
    id: String,
    node: PersistentNode,
    cache: CuratorCache,
}

impl GroupMember {
    /// Joins the group at `membership_path` as `id` with `payload`: starts the member node in
    /// the background and the group's cache (which waits for its first read).
    ///
    /// # Errors
    /// [`NodeError::InvalidArgument`] for a bad path or an id that is not a node name;
    /// [`NodeError::Connection`] when the cache's first read fails (ZooKeeper unreachable
    /// within the connection timeout).
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped start deletes the member node in the background.
    pub async fn start(
        zk: &ZkClient,
        membership_path: &str,
        id: &str,
        payload: &[u8],
    ) -> Result<GroupMember, NodeError> {
        path::validate_name(id)?;
        path::validate_node_path(membership_path)?;
        let node_path = path::join(membership_path, id);
        let node =
            PersistentNode::builder(zk, &node_path, CreateMode::Ephemeral).data(payload).start().await?;
        let cache = CuratorCache::builder(zk, membership_path).mode(CacheMode::Children).start().await?;
        Ok(GroupMember { membership_path: membership_path.to_owned(), id: id.to_owned(), node, cache })
    }

    /// This member's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The members and their payloads as the cache has them, this one included once its node
    /// exists (Curator's `getCurrentMembers`).
    pub fn current_members(&self) -> BTreeMap<String, Vec<u8>> {
        let snapshot = self.cache.snapshot();
        snapshot
            .children(&self.membership_path)
            .map(|(id, node)| (id.to_owned(), node.data().to_vec()))
            .collect()
    }

    /// The group's cache: its snapshots and events (a member joins: `Created`; leaves:
    /// `Deleted`; changes its payload: `Changed`).
    pub fn cache(&self) -> &CuratorCache {
        &self.cache
    }

    /// The member node.
    pub fn node(&self) -> &PersistentNode {
        &self.node
    }

    /// Waits until the member node exists and the group's cache shows it, so that
    /// [`current_members`](Self::current_members) includes this member; the node's path.
    ///
    /// `Ok(None)` when `timeout` passed first ([`PersistentNode::creation_error`] on
    /// [`node`](Self::node) says why when the node is missing).
    ///
    /// # Errors
    /// As [`PersistentNode::wait_for_initial_create_timeout`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for_initial_create_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<String>, NodeError> {
        let deadline = Some(Deadline::after(timeout));
        let Some(path) = self.node.wait_for_initial_create_timeout(timeout).await? else { return Ok(None) };
        let mut snapshots = self.cache.snapshots();
        let seen = zkr_connection::within(deadline, snapshots.wait_for(|s| s.get(&path).is_some()))
            .await
            .map(|seen| seen.is_ok());
        match seen {
            Some(true) => Ok(Some(path)),
            Some(false) => Err(NodeError::Closed),
            None => Ok(None),
        }
    }

    /// Sets this member's payload (Curator's `setThisData`).
    ///
    /// # Errors
    /// As [`PersistentNode::set_data`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn set_payload(&self, payload: impl Into<Vec<u8>>) -> Result<(), NodeError> {
        self.node.set_data(payload).await
    }

    /// Leaves the group: deletes the member node (see [`PersistentNode::close`]).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn close(self) {
        self.node.close().await;
    }
}
