//! [`ZkClient::create_node`]: Curator's `create()` builder, one call for every way to create
//! a node.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use zookeeper_client::{Acl, CreateMode, Stat};

use crate::error::Result;
use crate::ops::nodes::{create_spec_on, ttl_error, validate_ttl, NodeSpec, Parents};
use crate::ops::protected::{is_sequential, ProtectedCreate};
use crate::ops::retry_loop::RetryOptions;
use crate::path;
use crate::session::client::ZkClient;

/// A create being built by [`ZkClient::create_node`]; `.await` it to send it.
///
/// The defaults are Curator's `create().forPath(path)`: a persistent node with empty data,
/// the manager's ACL, no parents made (a missing parent is `NoNode`), not protected, bounded
/// by the retry policy alone.
///
/// # Cancel safety
/// As the create it sends: a protected create is cancel safe (the node it may have made is
/// found and deleted in the background); any other create dropped after it was sent may have
/// been applied.
#[must_use = "a create does nothing until it is awaited"]
#[derive(Debug)]
pub struct CreateNode<'a> {
    zk: &'a ZkClient,
    path: &'a str,
    data: &'a [u8],
    mode: CreateMode,
    ttl: Option<Duration>,
    acl: Option<Vec<Acl>>,
    parents: Parents,
    protected: bool,
    compressed: Option<bool>,
    options: RetryOptions,
}

/// A node [`CreateNode`] created.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Created {
    /// Its path (relative to the namespace), with the sequence for sequential modes and the
    /// protection tag for protected creates.
    pub path: String,
    /// Its `Stat` at creation.
    pub stat: Stat,
    /// Its sequence number, for sequential modes.
    pub sequence: Option<i64>,
}

impl ZkClient {
    /// Creates the node `path` (Curator's `create()`), with options set on the returned
    /// builder and sent when it is awaited: data, mode (persistent, ephemeral, sequential,
    /// container), a TTL, an ACL, how missing parents are made, protection, a timeout.
    ///
    /// A sequential create is never sent twice (a second send after a lost reply would make
    /// a second node): a lost reply is an [ambiguous](crate::Classify::is_ambiguous) error, or,
    /// with [`protected`](CreateNode::protected), found by its tag. Any other create is
    /// retried, so a lost reply can come back as `NodeExists` for the node it made itself
    /// (CURATOR-268): use [`protected`](CreateNode::protected) where that matters.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath),
    /// [`Error::DataTooLarge`](crate::Error::DataTooLarge),
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a bad TTL,
    /// [`Error::TtlDisabled`](crate::Error::TtlDisabled), `NoNode` (a missing parent with
    /// [`Parents::None`]) or `NodeExists` as [`Error::Zk`](crate::Error::Zk), or as
    /// [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// See [`CreateNode`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// use std::time::Duration;
    /// use zkr_connection::{CreateMode, Parents};
    ///
    /// // Curator: create().creatingParentsIfNeeded().withProtection()
    /// //          .withMode(EPHEMERAL_SEQUENTIAL).forPath("/jobs/job-", data)
    /// let job = zk
    ///     .create_node("/jobs/job-")
    ///     .data(b"payload")
    ///     .mode(CreateMode::EphemeralSequential)
    ///     .parents(Parents::Persistent)
    ///     .protected()
    ///     .timeout(Duration::from_secs(5))
    ///     .await?;
    /// println!("created {} (sequence {:?})", job.path, job.sequence);
    /// # Ok(()) }
    /// ```
    pub fn create_node<'a>(&'a self, path: &'a str) -> CreateNode<'a> {
        CreateNode {
            zk: self,
            path,
            data: &[],
            mode: CreateMode::Persistent,
            ttl: None,
            acl: None,
            parents: Parents::None,
            protected: false,
            compressed: None,
            options: self.call_options(),
        }
    }
}

impl<'a> CreateNode<'a> {
    /// The node's data (Curator's `forPath(path, data)`). Defaults to empty.
    pub fn data(mut self, data: &'a [u8]) -> Self {
        self.data = data;
        self
    }

    /// The node's mode (`withMode`). Defaults to [`CreateMode::Persistent`].
    pub fn mode(mut self, mode: CreateMode) -> Self {
        self.mode = mode;
        self
    }

    /// A time to live for a persistent mode (`withTtl`, with Curator's `*_WITH_TTL` modes):
    /// see [`ZkClient::create_with_ttl`].
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The node's ACL (`withACL`) instead of the manager's [`AclProvider`](crate::AclProvider)'s.
    /// Parents made by the create keep the provider's.
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// How missing parents are made: [`Parents::Persistent`] is Curator's
    /// `creatingParentsIfNeeded`, [`Parents::Containers`] its
    /// `creatingParentContainersIfNeeded`. Defaults to [`Parents::None`].
    pub fn parents(mut self, parents: Parents) -> Self {
        self.parents = parents;
        self
    }

    /// Curator's `withProtection`: the name gets a `_c_<uuid>-` prefix by which a create whose
    /// reply was lost finds its node (see [`ZkClient::create_protected`]); cancel safe.
    pub fn protected(mut self) -> Self {
        self.protected = true;
        self
    }

    /// Curator's `compressed()` / `uncompressed()`: whether the data is stored gzip-compressed.
    /// Defaults to the client's [`compression`](crate::ZkClientBuilder::compression).
    pub fn compressed(mut self, compressed: bool) -> Self {
        self.compressed = Some(compressed);
        self
    }

    /// A bound on the whole call, waits for a connection and retries included.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options = self.options.timeout(timeout);
        self
    }

    /// Retry options (a deadline, a policy) instead of the manager's.
    pub fn retry_options(mut self, options: RetryOptions) -> Self {
        self.options = options;
        self
    }

    async fn send(mut self) -> Result<Created> {
        path::validate_node_path(self.path)?;
        let packed;
        if self.compressed.unwrap_or(self.zk.compression_enabled()) {
            packed = crate::compression::compress(self.data);
            self.data = &packed;
        }
        path::validate_data(self.path, self.data)?;
        if let Some(ttl) = self.ttl {
            validate_ttl(self.mode, ttl)?;
        }
        if self.protected {
            return self.send_protected().await;
        }
        let (zk, path, data, ttl) = (self.zk, self.path, self.data, self.ttl);
        let spec =
            NodeSpec { mode: self.mode, ttl: self.ttl, acl: self.acl.as_deref(), parents: self.parents };
        let sequential = is_sequential(self.mode);
        let options = if sequential { self.options.no_resend() } else { self.options };
        let created = zk
            .retry_with(options, |s| async move { create_spec_on(zk, s.client(), path, data, &spec).await });
        let (stat, sequence) =
            created.await.map_err(|e| if ttl.is_some() { ttl_error(e, path) } else { e })?;
        let path = if sequential { format!("{path}{sequence}") } else { path.to_owned() };
        Ok(Created { path, stat, sequence: sequential.then(|| sequence.into_i64()) })
    }

    async fn send_protected(self) -> Result<Created> {
        let parent = path::parent(self.path).unwrap_or("/");
        let mut request = ProtectedCreate::new(parent, path::node_name(self.path), self.mode)
            .data(self.data)
            .parents(self.parents)
            .retry_options(self.options);
        if let Some(ttl) = self.ttl {
            request = request.ttl(ttl);
        }
        if let Some(acl) = self.acl {
            request = request.acl(acl);
        }
        let node = self.zk.create_protected_ext(request).await?;
        Ok(Created { path: node.path, stat: node.stat, sequence: node.sequence })
    }
}

impl<'a> IntoFuture for CreateNode<'a> {
    type Output = Result<Created>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Created>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.send())
    }
}
