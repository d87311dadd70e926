//! Helpers every recipe needs: creating parents as containers, idempotent create and delete,
//! and Curator's guaranteed delete.

use std::borrow::Cow;
use std::time::Duration;

use zookeeper_client::{Acls, CreateMode, CreateOptions, CreateSequence, Stat};

use crate::error::{Error, Result};
use crate::kind::{is_retryable, is_session_error};
use crate::path;
use crate::session::client::ZkClient;
use crate::session::session_client::SessionClient;

/// How a create makes the missing ancestors of its node: Curator's
/// `creatingParentContainersIfNeeded` and `creatingParentsIfNeeded`, or not at all (its plain
/// `create()`, which fails with `NoNode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Parents {
    /// None: a missing parent is `NoNode` ([`Error::Zk`]).
    None,
    /// As container nodes, which the server deletes once they are empty (the default of
    /// [`ZkClient::create`] and of every recipe).
    #[default]
    Containers,
    /// As persistent nodes, which stay (Curator's `creatingParentsIfNeeded`).
    Persistent,
}

/// How a node is created: its mode, time to live, ACL (the manager's
/// [`AclProvider`](crate::AclProvider) when `None`) and parents.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeSpec<'a> {
    pub(crate) mode: CreateMode,
    pub(crate) ttl: Option<Duration>,
    pub(crate) acl: Option<&'a [zookeeper_client::Acl]>,
    pub(crate) parents: Parents,
}

impl<'a> NodeSpec<'a> {
    /// The manager's ACL, parents as containers.
    pub(crate) fn new(mode: CreateMode, ttl: Option<Duration>) -> NodeSpec<'static> {
        NodeSpec { mode, ttl, acl: None, parents: Parents::Containers }
    }

    /// The node's ACL: the spec's, else what the manager's provider gives for `path`.
    pub(crate) fn acl_for(&self, zk: &ZkClient, path: &str) -> Cow<'a, [zookeeper_client::Acl]> {
        match self.acl {
            Some(acl) => Cow::Borrowed(acl),
            None => Cow::Owned(zk.acl_for_path(path)),
        }
    }

    /// The create's options with `acls` (from [`acl_for`](Self::acl_for)).
    pub(crate) fn options<'b>(&self, acls: &'b [zookeeper_client::Acl]) -> CreateOptions<'b> {
        let options = self.mode.with_acls(Acls::new(acls));
        match self.ttl {
            Some(ttl) => options.with_ttl(ttl),
            None => options,
        }
    }
}

/// Sends a create for every missing ancestor of `path` as a container node, all pipelined
/// (one round trip), ignoring `NodeExists`.
pub(crate) async fn create_parents_on(
    zk: &ZkClient,
    client: &SessionClient,
    path: &str,
) -> std::result::Result<(), zookeeper_client::Error> {
    create_parents_as(zk, client, path, CreateMode::Container).await
}

/// [`create_parents_on`] in `mode` (container or persistent).
async fn create_parents_as(
    zk: &ZkClient,
    client: &SessionClient,
    path: &str,
    mode: CreateMode,
) -> std::result::Result<(), zookeeper_client::Error> {
    let ancestors = path::ancestors(path);
    if ancestors.is_empty() {
        return Ok(());
    }
    let acls: Vec<_> = ancestors.iter().map(|p| zk.acl_for_path(p)).collect();
    let options: Vec<_> = acls.iter().map(|a| mode.with_acls(Acls::new(a))).collect();
    let creates: Vec<_> = ancestors.iter().zip(&options).map(|(p, o)| client.create(p, &[], o)).collect();
    for create in creates {
        match create.await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Creates `path` with the manager's ACL, creating missing parents as containers on `NoNode`.
pub(crate) async fn create_on(
    zk: &ZkClient,
    client: &SessionClient,
    path: &str,
    data: &[u8],
    mode: CreateMode,
) -> std::result::Result<(Stat, CreateSequence), zookeeper_client::Error> {
    create_ttl_on(zk, client, path, data, mode, None).await
}

/// [`create_on`] with a TTL (for the persistent modes).
pub(crate) async fn create_ttl_on(
    zk: &ZkClient,
    client: &SessionClient,
    path: &str,
    data: &[u8],
    mode: CreateMode,
    ttl: Option<Duration>,
) -> std::result::Result<(Stat, CreateSequence), zookeeper_client::Error> {
    create_spec_on(zk, client, path, data, &NodeSpec::new(mode, ttl)).await
}

/// Creates `path` as `spec` says, making its missing parents on `NoNode` (unless
/// [`Parents::None`]).
pub(crate) async fn create_spec_on(
    zk: &ZkClient,
    client: &SessionClient,
    path: &str,
    data: &[u8],
    spec: &NodeSpec<'_>,
) -> std::result::Result<(Stat, CreateSequence), zookeeper_client::Error> {
    let acls = spec.acl_for(zk, path);
    match client.create(path, data, &spec.options(&acls)).await {
        Err(zookeeper_client::Error::NoNode) => create_after_no_node(zk, client, path, data, spec).await,
        other => other,
    }
}

/// For a create of `path` just refused with `NoNode`: makes the missing parents as `spec` says
/// (none with [`Parents::None`]: `NoNode` again), then creates `path`, without sending the
/// refused create once more.
pub(crate) async fn create_after_no_node(
    zk: &ZkClient,
    client: &SessionClient,
    path: &str,
    data: &[u8],
    spec: &NodeSpec<'_>,
) -> std::result::Result<(Stat, CreateSequence), zookeeper_client::Error> {
    let parents = match spec.parents {
        Parents::None => return Err(zookeeper_client::Error::NoNode),
        Parents::Containers => CreateMode::Container,
        Parents::Persistent => CreateMode::Persistent,
    };
    create_parents_as(zk, client, path, parents).await?;
    let acls = spec.acl_for(zk, path);
    client.create(path, data, &spec.options(&acls)).await
}

impl ZkClient {
    /// Creates every missing ancestor of `path` as a container node (the server removes an
    /// empty container), in one pipelined round trip, under the retry policy.
    ///
    /// # Errors
    /// [`Error::InvalidPath`], or as [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Cancel safe: at worst some parents exist, as containers that the server removes when
    /// they stay empty.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// zk.create_parents("/locks/orders/lock-").await?; // creates /locks and /locks/orders
    /// # Ok(()) }
    /// ```
    pub async fn create_parents(&self, path: &str) -> Result<()> {
        path::validate_path(path)?;
        self.retry_with(
            self.call_options(),
            |s| async move { create_parents_on(self, s.client(), path).await },
        )
        .await
    }

    /// Creates a node with the manager's ACL, creating missing parents as containers, under the
    /// retry policy. Returns the node's `Stat` and, for sequential modes, its sequence number.
    ///
    /// A retried create may find `NodeExists` because the first attempt succeeded and only its
    /// reply was lost (CURATOR-268): use [`create_if_absent`](Self::create_if_absent) when that
    /// is fine, or [`create_protected`](Self::create_protected) for sequential and ephemeral
    /// nodes.
    ///
    /// # Errors
    /// [`Error::InvalidPath`], [`Error::DataTooLarge`], or as [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Not cancel safe for ephemeral nodes: dropped after the request was sent, the node may
    /// exist without its creator knowing. Use [`create_protected`](Self::create_protected).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// use zkr_connection::CreateMode;
    /// zk.create("/app/settings", b"{}", CreateMode::Persistent).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<(Stat, CreateSequence)> {
        path::validate_node_path(path)?;
        path::validate_data(path, data)?;
        self.retry_with(self.call_options(), |s| async move {
            create_on(self, s.client(), path, data, mode).await
        })
        .await
    }

    /// Creates a node with a time to live (Curator's `create().withTtl(ms)` with
    /// `PERSISTENT_WITH_TTL` or `PERSISTENT_SEQUENTIAL_WITH_TTL`): `mode` is
    /// [`Persistent`](CreateMode::Persistent) or [`PersistentSequential`](CreateMode::PersistentSequential),
    /// and the server deletes the node once it has had no children and no change for `ttl`
    /// (checked every `znode.container.checkIntervalMs`, a minute by default, so the node may
    /// outlive its TTL by that much). Missing parents are created as containers.
    ///
    /// TTL nodes are off unless the server runs with `-Dzookeeper.extendedTypesEnabled=true`
    /// (zkr-testing's `ServerOptions::ttl_nodes` starts such servers).
    ///
    /// # Errors
    /// [`Error::TtlDisabled`] when the server has TTL nodes off; [`Error::InvalidArgument`] for
    /// another mode, a zero TTL or one longer than ZooKeeper's maximum (2^40 - 1 ms); otherwise
    /// as [`create`](Self::create).
    ///
    /// # Cancel safety
    /// As [`create`](Self::create): a dropped create may have been applied (the node then
    /// expires by its TTL).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// use std::time::Duration;
    /// use zkr_connection::CreateMode;
    /// zk.create_with_ttl("/jobs/heartbeat", b"", CreateMode::Persistent, Duration::from_secs(30)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_with_ttl(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        ttl: Duration,
    ) -> Result<(Stat, CreateSequence)> {
        path::validate_node_path(path)?;
        path::validate_data(path, data)?;
        validate_ttl(mode, ttl)?;
        let created = self.retry_with(self.call_options(), |s| async move {
            create_ttl_on(self, s.client(), path, data, mode, Some(ttl)).await
        });
        created.await.map_err(|e| ttl_error(e, path))
    }

    /// Creates a node unless it exists; `true` if this call created it. Idempotent, so a lost
    /// reply followed by a retry is harmless.
    ///
    /// # Errors
    /// As [`create`](Self::create).
    ///
    /// # Cancel safety
    /// As [`create`](Self::create).
    pub async fn create_if_absent(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<bool> {
        match self.create(path, data, mode).await {
            Ok(_) => Ok(true),
            Err(e) if e.is_node_exists() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes a node if it exists; `true` if this call deleted it. Idempotent.
    ///
    /// # Errors
    /// [`Error::InvalidPath`], `NotEmpty` or `NoAuth` as [`Error::Zk`], or as
    /// [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Cancel safe: the node is deleted or not.
    pub async fn delete_if_present(&self, path: &str) -> Result<bool> {
        path::validate_node_path(path)?;
        match self
            .retry_with(self.call_options(), |s| async move { s.client().delete(path, None).await })
            .await
        {
            Ok(()) => Ok(true),
            Err(e) if e.is_no_node() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes `path` in the background and keeps trying through connection loss and session
    /// rebuilds until the node is gone: Curator's `delete().guaranteed()`.
    ///
    /// For an ephemeral node, pass its session's generation as `owner_generation`: once that
    /// session has ended the node is gone with it and the task stops. The task also stops when
    /// the manager closes, or on an error that retrying cannot fix (`NotEmpty`, `NoAuth`,
    /// `BadVersion`), which it logs. The returned handle can be awaited or dropped (the delete
    /// goes on).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) {
    /// let done = zk.guaranteed_delete("/locks/x/_c_abc-lock-0000000007", None);
    /// assert!(done.wait().await);
    /// # }
    /// ```
    pub fn guaranteed_delete(
        &self,
        path: impl Into<String>,
        owner_generation: Option<u64>,
    ) -> GuaranteedDelete {
        let zk = self.clone();
        let path = path.into();
        let task = tokio::spawn(async move { zk.delete_until_gone(&path, owner_generation).await });
        GuaranteedDelete { task }
    }

    pub(crate) async fn delete_until_gone(&self, path: &str, owner_generation: Option<u64>) -> bool {
        let mut pause = crate::retry::SessionPause::default();
        loop {
            if self.is_closed() {
                return false;
            }
            if owner_generation.is_some_and(|g| self.generation() > g) {
                tracing::debug!(path, "owner session ended; its ephemeral node goes with it");
                return true;
            }
            let session = match self.session().await {
                Ok(s) => s,
                Err(Error::Closed) => return false,
                Err(_) => continue,
            };
            // A session the manager gave up never answers: stop waiting on it then.
            let deleted = tokio::select! {
                deleted = session.client().delete(path, None) => deleted,
                () = self.session_replaced(session.generation()) => continue,
            };
            match deleted {
                Ok(()) | Err(zookeeper_client::Error::NoNode) => {
                    tracing::debug!(path, "guaranteed delete done");
                    return true;
                }
                Err(e) if is_retryable(&e) || is_session_error(&e) => {
                    tracing::debug!(path, error = %e, "guaranteed delete will retry");
                }
                Err(e) => {
                    tracing::warn!(path, error = %e, "guaranteed delete cannot succeed; giving up");
                    return false;
                }
            }
            pause.sleep().await;
        }
    }
}

/// The background task of [`ZkClient::guaranteed_delete`]. Dropping it does not stop the delete.
#[derive(Debug)]
#[must_use = "dropping the handle detaches the delete; await `wait()` to know it is done"]
pub struct GuaranteedDelete {
    task: tokio::task::JoinHandle<bool>,
}

impl GuaranteedDelete {
    /// Waits for the outcome: `true` when the node is gone, `false` when the task gave up (the
    /// manager closed, or an error retrying cannot fix).
    ///
    /// # Cancel safety
    /// Cancel safe: the delete goes on in the background.
    pub async fn wait(self) -> bool {
        self.task.await.unwrap_or(false)
    }
}

/// ZooKeeper's largest TTL: 2^40 - 1 milliseconds (the TTL takes the low 40 bits of the
/// node's extended `ephemeralOwner`).
pub(crate) const MAX_TTL: Duration = Duration::from_millis((1 << 40) - 1);

/// Checks a TTL create's mode and TTL before anything is sent: the mode is
/// [`Persistent`](CreateMode::Persistent) or [`PersistentSequential`](CreateMode::PersistentSequential),
/// the TTL at least a millisecond and at most 2^40 - 1.
///
/// # Errors
/// [`Error::InvalidArgument`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::CreateMode;
/// assert!(zkr_connection::validate_ttl(CreateMode::Persistent, Duration::from_secs(1)).is_ok());
/// assert!(zkr_connection::validate_ttl(CreateMode::Ephemeral, Duration::from_secs(1)).is_err());
/// ```
pub fn validate_ttl(mode: CreateMode, ttl: Duration) -> Result<()> {
    if !matches!(mode, CreateMode::Persistent | CreateMode::PersistentSequential) {
        return Err(Error::InvalidArgument("a TTL node must be Persistent or PersistentSequential"));
    }
    if ttl.is_zero() || ttl > MAX_TTL {
        return Err(Error::InvalidArgument("a TTL must be at least 1 ms and at most 2^40 - 1 ms"));
    }
    Ok(())
}

/// A TTL create's error: `Unimplemented` is the server saying TTL nodes are off.
pub(crate) fn ttl_error(error: Error, path: &str) -> Error {
    match error {
        Error::Zk(zookeeper_client::Error::Unimplemented) => Error::TtlDisabled { path: path.to_owned() },
        other => other,
    }
}
