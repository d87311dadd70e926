//! kazoo's `Party` and `ShallowParty`.

use parking_lot::Mutex;
use zkr_connection::{path, ZkClient};
use zookeeper_client::CreateMode;

use crate::nodes::{NodeError, PersistentNode};

/// kazoo's `Party._NODE_NAME`: a member node is `<uuid hex>__party__`.
const PARTY_NODE_NAME: &str = crate::layouts::KAZOO_PARTY_NAME;

/// A member's node name and how to read the members back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `<uuid hex>__party__`, holding the identifier.
    Deep,
    /// `<uuid hex>-<identifier>`: the identifier is in the name.
    Shallow,
}

/// What `Party` and `ShallowParty` share: a member node kept by a [`PersistentNode`]
/// (ephemeral, created again on every new session), and the listing of the members.
#[derive(Debug)]
struct Membership {
    zk: ZkClient,
    path: String,
    node_path: String,
    identifier: String,
    kind: Kind,
    node: Mutex<Option<PersistentNode>>,
}

impl Membership {
    fn new(zk: &ZkClient, path: &str, identifier: &str, kind: Kind) -> Result<Self, NodeError> {
        crate::errors::check_node_path(zk, path)?;
        let name = match kind {
            Kind::Deep => format!("{}{PARTY_NODE_NAME}", super::uuid_hex()),
            Kind::Shallow => format!("{}-{identifier}", super::uuid_hex()),
        };
        path::validate_name(&name)?;
        let node_path = path::join(path, &name);
        path::validate_data(&node_path, identifier.as_bytes())?;
        Ok(Membership {
            zk: zk.clone(),
            path: path.to_owned(),
            node_path,
            identifier: identifier.to_owned(),
            kind,
            node: Mutex::new(None),
        })
    }

    async fn join(&self) -> Result<(), NodeError> {
        let node = {
            let mut slot = self.node.lock();
            if slot.is_some() {
                return Ok(());
            }
            let node = PersistentNode::builder(&self.zk, &self.node_path, CreateMode::Ephemeral)
                .data(self.identifier.as_bytes())
                // kazoo's `ensure_path`: the party's directory stays when it empties.
                .parents(zkr_connection::Parents::Persistent)
                .launch()?;
            let paths = node.path_watch();
            *slot = Some(node);
            paths
        };
        if wait_created(node, self.zk.connection_timeout()).await {
            return Ok(());
        }
        let failed = self.node.lock().as_ref().and_then(PersistentNode::creation_error);
        Err(failed.unwrap_or_else(|| NodeError::NotCreated {
            path: self.node_path.clone(),
            held_by: None,
            last: None,
        }))
    }

    async fn leave(&self) {
        let node = self.node.lock().take();
        if let Some(node) = node {
            node.close().await;
        }
    }

    fn is_participating(&self) -> bool {
        self.node.lock().is_some()
    }

    async fn members(&self) -> Result<Vec<String>, NodeError> {
        let Some((children, _)) = self.zk.get_children(&self.path).await? else { return Ok(Vec::new()) };
        if self.kind == Kind::Shallow {
            // kazoo: `child[child.find('-') + 1:]`, every child counted.
            return Ok(children
                .iter()
                .map(|c| c.split_once('-').map_or(c.as_str(), |(_, id)| id).to_owned())
                .collect());
        }
        let mut members = Vec::new();
        for child in children.iter().filter(|c| c.contains(PARTY_NODE_NAME)) {
            let node = path::join(&self.path, child);
            let node = node.as_str();
            match self.zk.retry(|s| async move { s.client().get_data(node).await }).await {
                Ok((data, _)) => members.push(String::from_utf8_lossy(&data).into_owned()),
                Err(e) if e.is_no_node() => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(members)
    }
}

/// Waits until the node has been created once; `false` after `timeout`.
async fn wait_created(
    mut paths: tokio::sync::watch::Receiver<Option<String>>,
    timeout: std::time::Duration,
) -> bool {
    matches!(tokio::time::timeout(timeout, paths.wait_for(Option::is_some)).await, Ok(Ok(_)))
}

macro_rules! party_methods {
    ($ty:ident) => {
        impl $ty {
            /// Joins the party (kazoo's `join()`): creates this member's ephemeral node and waits
            /// until it exists. The node is created again on every new session (kazoo's is gone
            /// for good after a session expiry). Joining twice does nothing.
            ///
            /// # Errors
            /// [`NodeError::NotCreated`] when the node was not created within the connection
            /// timeout (it goes on trying until [`leave`](Self::leave)).
            ///
            /// # Cancel safety
            /// Cancel safe: dropped while waiting, the member stays joined (the node is created
            /// in the background); [`leave`](Self::leave) undoes it.
            pub async fn join(&self) -> Result<(), NodeError> {
                self.0.join().await
            }

            /// Leaves the party (kazoo's `leave()`): deletes this member's node.
            ///
            /// # Cancel safety
            /// Cancel safe: the delete runs in a task of its own from the first poll.
            pub async fn leave(&self) {
                self.0.leave().await
            }

            /// Has this member joined (and not left)?
            pub fn is_participating(&self) -> bool {
                self.0.is_participating()
            }

            /// The members' identifiers, every process's, in no order (kazoo's `list(party)`).
            ///
            /// # Errors
            /// As [`ZkClient::retry`].
            ///
            /// # Cancel safety
            /// Cancel safe (read-only).
            pub async fn members(&self) -> Result<Vec<String>, NodeError> {
                self.0.members().await
            }

            /// How many members the party has (kazoo's `len(party)`).
            ///
            /// # Errors
            /// As [`members`](Self::members).
            ///
            /// # Cancel safety
            /// Cancel safe (read-only).
            pub async fn count(&self) -> Result<usize, NodeError> {
                Ok(self.0.members().await?.len())
            }

            /// The party's path.
            pub fn path(&self) -> &str {
                &self.0.path
            }
        }
    };
}

/// A pool of members in kazoo's layout: kazoo's `Party(path, identifier)`. Each member is an
/// ephemeral `<path>/<uuid hex>__party__` node holding its identifier. Python processes using
/// kazoo's `Party` on the same path see this member, and it sees them. Dropping the `Party`
/// leaves it (in the background).
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::nodes::NodeError> {
/// use zkr_recipes::kazoo::Party;
///
/// let party = Party::new(&zk, "/parties/workers", "rust-worker-1")?;
/// party.join().await?;
/// println!("{} workers: {:?}", party.count().await?, party.members().await?);
/// party.leave().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Party(Membership);

impl Party {
    /// A party at `path` that this process would join as `identifier`. Nothing is sent.
    ///
    /// # Errors
    /// [`NodeError::InvalidArgument`] for an invalid path or an identifier over ZooKeeper's
    /// limit.
    pub fn new(zk: &ZkClient, path: &str, identifier: &str) -> Result<Self, NodeError> {
        Ok(Party(Membership::new(zk, path, identifier, Kind::Deep)?))
    }
}

party_methods!(Party);

/// kazoo's `ShallowParty(path, identifier)`: as [`Party`], with the identifier in the member's
/// node name (`<uuid hex>-<identifier>`), so listing the members is one read. The identifier
/// must therefore be valid in a node name.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::nodes::NodeError> {
/// use zkr_recipes::kazoo::ShallowParty;
///
/// let party = ShallowParty::new(&zk, "/parties/api", "host-7")?;
/// party.join().await?;
/// for member in party.members().await? {
///     println!("{member}");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ShallowParty(Membership);

impl ShallowParty {
    /// A shallow party at `path` that this process would join as `identifier`. Nothing is
    /// sent.
    ///
    /// # Errors
    /// [`NodeError::InvalidArgument`] for an invalid path, or an identifier that is not valid
    /// in a node name (a `/`, say).
    pub fn new(zk: &ZkClient, path: &str, identifier: &str) -> Result<Self, NodeError> {
        Ok(ShallowParty(Membership::new(zk, path, identifier, Kind::Shallow)?))
    }
}

party_methods!(ShallowParty);
