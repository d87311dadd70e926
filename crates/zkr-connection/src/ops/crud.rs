//! The framework's reads and writes, the calls a port from Curator meets first:
//! `getData`, `checkExists`, `getChildren`, `setData`, `delete` (with
//! `deletingChildrenIfNeeded`), `getACL`, `setACL` and `sync`, each under the retry policy and
//! on the manager's namespace. An absent node is `None` where Curator throws
//! `NoNodeException`. A write with an expected version is never sent twice: after a lost reply
//! its resend could fail on its own first effect (`BadVersion`), so the error is returned and
//! says it may have been applied ([`Error::is_ambiguous`](crate::Classify::is_ambiguous)). With compression on
//! ([`ZkClientBuilder::compression`](crate::ZkClientBuilder::compression)), data is stored
//! gzip-compressed as Curator's `GzipCompressionProvider` stores it.

use zookeeper_client::{Acl, Stat};

use crate::error::{Error, Result};
use crate::ops::retry_loop::RetryOptions;
use crate::path;
use crate::session::client::ZkClient;

/// `Ok(None)` for `NoNode`.
fn absent<T>(result: Result<T>) -> Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.is_no_node() => Ok(None),
        Err(e) => Err(e),
    }
}

impl ZkClient {
    /// A handle on the same client (the same session, namespace and settings) whose framework
    /// calls are each bounded by `timeout` from their start, waits for a connection and retries
    /// included: `get_data`, `exists`, `get_children`, `set_data`, `delete`,
    /// `delete_recursive`, `get_acl`, `set_acl`, `sync`, `create`, `create_if_absent`,
    /// `create_with_ttl`, `create_parents`, `delete_if_present`, `create_node` (unless given
    /// its own `.timeout`), `multi_read`, `ephemerals` and `transaction().commit()`. Past it a
    /// call fails with [`Error::DeadlineExceeded`] (a write may then have been applied:
    /// [`Error::is_ambiguous`](crate::Classify::is_ambiguous)). Without it, the retry policy alone decides how long a call
    /// goes on. Recipes keep their own timeouts. Cheap: clone it freely.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// use std::time::Duration;
    ///
    /// let quick = zk.with_timeout(Duration::from_millis(500));
    /// match quick.get_data("/app/settings").await {
    ///     Err(e) if matches!(e, zkr_connection::Error::DeadlineExceeded { .. }) => println!("no answer within 500 ms"),
    ///     other => println!("{:?}", other?.map(|(data, _)| data.len())),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn with_timeout(&self, timeout: std::time::Duration) -> ZkClient {
        let mut bounded = self.clone();
        bounded.call_timeout = Some(timeout);
        bounded
    }

    /// The options of a framework call: bounded by [`with_timeout`](Self::with_timeout)'s
    /// timeout when set.
    pub(crate) fn call_options(&self) -> RetryOptions {
        match self.call_timeout {
            Some(timeout) => RetryOptions::default().timeout(timeout),
            None => RetryOptions::default(),
        }
    }

    /// `call` bounded by [`with_timeout`](Self::with_timeout)'s timeout as a whole, for the calls
    /// made of several requests.
    pub(crate) async fn bounded<T>(&self, call: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        let Some(timeout) = self.call_timeout else { return call.await };
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or(Err(Error::DeadlineExceeded { deadline: timeout, last: None }))
    }

    /// A versioned write is sent once; an unversioned one may be sent again after a lost reply.
    fn write_options(&self, version: Option<i32>) -> RetryOptions {
        match version {
            Some(_) => self.call_options().no_resend(),
            None => self.call_options(),
        }
    }

    /// `data` as the framework calls ([`set_data`](Self::set_data), [`get_data`](Self::get_data))
    /// store it: gzip-compressed when [`compression`](crate::ZkClientBuilder::compression) is on,
    /// else as given. For writing the framework's form with [`overwrite`](Self::overwrite),
    /// which stores its bytes as given.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// zk.overwrite("/app/settings", &zk.stored(b"{\"limit\": 5}"), None).await?;
    /// # Ok(()) }
    /// ```
    pub fn stored<'a>(&self, data: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        match self.compression_enabled() {
            true => std::borrow::Cow::Owned(crate::compression::compress(data)),
            false => std::borrow::Cow::Borrowed(data),
        }
    }

    /// A node's data and `Stat`, or `None` when there is no node (Curator:
    /// `getData().storingStatIn(stat).forPath(path)`).
    ///
    /// # Errors
    /// [`Error::InvalidPath`], or as [`retry`](Self::retry); with
    /// [`compression`](crate::ZkClientBuilder::compression) on, [`Error::Decompress`] and
    /// [`Error::DecompressedTooLarge`] (see [`decompress_limited`](crate::compression::decompress_limited)).
    ///
    /// # Cancel safety
    /// Cancel safe (a read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// if let Some((data, stat)) = zk.get_data("/app/settings").await? {
    ///     println!("{} bytes, version {}", data.len(), stat.version);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_data(&self, path: &str) -> Result<Option<(Vec<u8>, Stat)>> {
        path::validate_path(path)?;
        let found = absent(
            self.retry_with(self.call_options(), |s| async move { s.client().get_data(path).await }).await,
        )?;
        match found {
            Some((data, stat)) if self.compression_enabled() => {
                let max = self.max_decompressed_len();
                Ok(Some((crate::compression::decompress_limited(path, &data, max)?, stat)))
            }
            other => Ok(other),
        }
    }

    /// A node's `Stat`, or `None` when there is no node (Curator: `checkExists().forPath(path)`).
    ///
    /// # Errors
    /// [`Error::InvalidPath`], or as [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Cancel safe (a read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let exists = zk.exists("/app/settings").await?.is_some();
    /// # Ok(()) }
    /// ```
    pub async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        path::validate_path(path)?;
        self.retry_with(self.call_options(), |s| async move { s.client().check_stat(path).await }).await
    }

    /// A node's children (names, unsorted, as the server lists them) and its `Stat`, or `None`
    /// when there is no node (Curator: `getChildren().storingStatIn(stat).forPath(path)`).
    ///
    /// # Errors
    /// [`Error::InvalidPath`], or as [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Cancel safe (a read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let members = zk.get_children("/app/members").await?.map(|(names, _)| names).unwrap_or_default();
    /// # Ok(()) }
    /// ```
    pub async fn get_children(&self, path: &str) -> Result<Option<(Vec<String>, Stat)>> {
        path::validate_path(path)?;
        absent(
            self.retry_with(self.call_options(), |s| async move { s.client().get_children(path).await })
                .await,
        )
    }

    /// Sets a node's data, if its version is `version` when given (Curator:
    /// `setData().withVersion(v).forPath(path, data)`); returns the new `Stat`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`], [`Error::DataTooLarge`]; `NoNode` and `BadVersion` as
    /// [`Error::Zk`] ([`Error::is_no_node`], [`Error::is_bad_version`]); with a version, a lost
    /// reply is not resent and its error is [ambiguous](crate::Classify::is_ambiguous); otherwise as
    /// [`retry`](Self::retry).
    ///
    /// # Late writes
    /// Without a version, a write whose reply was lost can still be applied later, after this
    /// client's later writes to the node: ZooKeeper (3.9.5 included) applies a request held by
    /// a server that was cut off from the quorum when that server rejoins, if the client's
    /// session came back to that server meanwhile (a stale revalidation gives the server the
    /// session again, as in ZOOKEEPER-2886; the request queued before it then passes the
    /// session's owner check). The node then goes back to the older value. Use
    /// [`overwrite`](Self::overwrite) to set a value whatever its version without that hazard.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after the request was sent, the data may be set.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let stat = zk.set_data("/app/settings", b"{\"limit\": 5}", Some(3)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        path::validate_node_path(path)?;
        let data = &*self.stored(data);
        path::validate_data(path, data)?;
        self.retry_with(self.write_options(version), |s| async move {
            s.client().set_data(path, data, version).await
        })
        .await
    }

    /// Sets a node's data whatever its version, so that no attempt of this call can be applied
    /// after it returns: every request it sends is conditional on a version the node has
    /// reached or passed by then, and ZooKeeper refuses such a request when it comes late (see
    /// [`set_data`](Self::set_data)'s late writes). It writes at `version_hint` (the version
    /// the caller last saw, such as the `Stat` of its previous write) or else at the version
    /// it reads; when the node has moved on, it reads the node again: data equal to `data`
    /// means an earlier attempt of this call was applied (or another writer wrote the same
    /// bytes) and the call is done; otherwise it writes again at the version read. Returns the
    /// node's `Stat` holding `data`. A single writer with a correct hint pays one request, as
    /// `set_data(path, data, None)` does. `data` is stored as given, never compressed by
    /// [`compression`](crate::ZkClientBuilder::compression): the recipes write their codecs'
    /// bytes with it.
    ///
    /// The one case it cannot rule out: the node deleted and created again, then written up to
    /// the version of an attempt still held somewhere (versions start again at 0).
    ///
    /// Not in Curator, whose `setData()` has the hazard.
    ///
    /// # Errors
    /// [`Error::InvalidPath`], [`Error::DataTooLarge`]; `NoNode` as [`Error::Zk`]
    /// ([`Error::is_no_node`]); otherwise as [`retry`](Self::retry), bounded as a whole by
    /// [`with_timeout`](Self::with_timeout).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after a request was sent, the data may be set (but no attempt
    /// can be applied after a later write to the node).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let stat = zk.overwrite("/app/settings", b"{\"limit\": 5}", None).await?;
    /// // The next write starts from the version this one left.
    /// zk.overwrite("/app/settings", b"{\"limit\": 6}", Some(stat.version)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn overwrite(&self, path: &str, data: &[u8], version_hint: Option<i32>) -> Result<Stat> {
        path::validate_node_path(path)?;
        path::validate_data(path, data)?;
        self.bounded(async {
            let mut version = match version_hint {
                Some(version) => version,
                None => self.exists(path).await?.ok_or(Error::Zk(zookeeper_client::Error::NoNode))?.version,
            };
            loop {
                let written = self
                    .retry_with(self.call_options(), |s| async move {
                        s.client().set_data(path, data, Some(version)).await
                    })
                    .await;
                match written {
                    Err(e) if e.is_bad_version() => {
                        let (stored, stat) =
                            self.retry_with(self.call_options(), |s| async move {
                                s.client().get_data(path).await
                            })
                            .await?;
                        if stored == data {
                            return Ok(stat);
                        }
                        version = stat.version;
                    }
                    written => return written,
                }
            }
        })
        .await
    }

    /// Deletes a node, if its version is `version` when given (Curator:
    /// `delete().withVersion(v).forPath(path)`). Without a version, a resent delete that finds
    /// no node counts as done (its first send deleted it).
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; `NoNode`, `NotEmpty` and `BadVersion` as [`Error::Zk`]; with a
    /// version, a lost reply is not resent and its error is [ambiguous](crate::Classify::is_ambiguous);
    /// otherwise as [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after the request was sent, the node may be gone.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// zk.delete("/app/old-flag", None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        path::validate_node_path(path)?;
        let sent = self.retry_write(self.write_options(version), |s| async move {
            s.client().delete(path, version).await
        });
        let sent = sent.await;
        match sent.result {
            Err(e) if e.is_no_node() && sent.sends > 1 => Ok(()),
            other => other,
        }
    }

    /// Deletes a node and everything under it (Curator: `delete().deletingChildrenIfNeeded()`);
    /// `false` when there was no node. Children created while it runs are deleted too; the
    /// deletion never leaves the subtree (it follows child names, not links).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] (including `/`, which is never deleted), or as
    /// [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped midway, part of the subtree is gone.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let existed = zk.delete_recursive("/app/tmp").await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_recursive(&self, path: &str) -> Result<bool> {
        path::validate_node_path(path)?;
        self.bounded(self.delete_tree(path)).await
    }

    async fn delete_tree(&self, path: &str) -> Result<bool> {
        // Depth first, without recursion: a stack of nodes whose children are not yet gone.
        let mut stack = vec![path.to_owned()];
        let mut existed = false;
        while let Some(node) = stack.last().cloned() {
            let Some((children, _)) = self.get_children(&node).await? else {
                stack.pop();
                continue;
            };
            existed |= node == path;
            if !children.is_empty() {
                stack.extend(children.iter().map(|child| path::join(&node, child)));
                continue;
            }
            match self.delete(&node, None).await {
                Ok(()) => {
                    stack.pop();
                }
                // A child was created meanwhile: list again.
                Err(Error::Zk(zookeeper_client::Error::NotEmpty)) => {}
                Err(e) if e.is_no_node() => {
                    stack.pop();
                }
                Err(e) => return Err(e),
            }
        }
        Ok(existed)
    }

    /// A node's ACL and `Stat`, or `None` when there is no node (Curator: `getACL().forPath(path)`).
    ///
    /// # Errors
    /// [`Error::InvalidPath`], or as [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Cancel safe (a read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// if let Some((acl, _)) = zk.get_acl("/app").await? {
    ///     for entry in acl {
    ///         println!("{}:{} {:?}", entry.scheme(), entry.id(), entry.permission());
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_acl(&self, path: &str) -> Result<Option<(Vec<Acl>, Stat)>> {
        path::validate_path(path)?;
        absent(self.retry_with(self.call_options(), |s| async move { s.client().get_acl(path).await }).await)
    }

    /// Sets a node's ACL, if its ACL version (`Stat::aversion`) is `version` when given
    /// (Curator: `setACL().withVersion(v).withACL(acl).forPath(path)`); returns the new `Stat`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; `NoNode`, `BadVersion`, `InvalidAcl` as [`Error::Zk`]; with a
    /// version, a lost reply is not resent; otherwise as [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after the request was sent, the ACL may be set.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// use zkr_connection::zookeeper_client::{AuthId, Permission};
    /// use zkr_connection::Acl;
    /// let read_only = [Acl::new(Permission::READ, AuthId::anyone())];
    /// zk.set_acl("/app/public", &read_only, None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_acl(&self, path: &str, acl: &[Acl], version: Option<i32>) -> Result<Stat> {
        path::validate_path(path)?;
        self.retry_with(self.write_options(version), |s| async move {
            s.client().set_acl(path, acl, version).await
        })
        .await
    }

    /// Makes the server this session is connected to catch up with the leader for `path`
    /// before the next read (Curator: `sync().forPath(path)`): a read after it sees every write
    /// committed before it.
    ///
    /// # Errors
    /// [`Error::InvalidPath`], or as [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// zk.sync("/app/settings").await?;
    /// let fresh = zk.get_data("/app/settings").await?;
    /// # Ok(()) }
    /// ```
    pub async fn sync(&self, path: &str) -> Result<()> {
        path::validate_path(path)?;
        self.retry_with(self.call_options(), |s| async move { s.client().sync(path).await }).await
    }
}
