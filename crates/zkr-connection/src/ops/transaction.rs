//! Transactions: creates, sets, deletes and checks in one ZooKeeper multi-op, applied all
//! together or not at all (Curator's `CuratorFramework.transaction()`).

use std::fmt;
use std::time::Duration;

use zookeeper_client::{Acls, CreateMode, MultiWriteError, MultiWriteResult};

use crate::error::{Error, OpKind, Result};
use crate::ops::nodes::validate_ttl;
use crate::ops::retry_loop::RetryOptions;
use crate::path;
use crate::session::client::ZkClient;

#[derive(Debug, Clone)]
enum Op {
    Create {
        path: String,
        data: Vec<u8>,
        mode: CreateMode,
        ttl: Option<Duration>,
        acl: Option<Vec<zookeeper_client::Acl>>,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: Option<i32>,
    },
    Delete {
        path: String,
        version: Option<i32>,
    },
    Check {
        path: String,
        version: i32,
    },
}

impl Op {
    fn kind(&self) -> OpKind {
        match self {
            Op::Create { .. } => OpKind::Create,
            Op::SetData { .. } => OpKind::SetData,
            Op::Delete { .. } => OpKind::Delete,
            Op::Check { .. } => OpKind::Check,
        }
    }

    fn path(&self) -> &str {
        match self {
            Op::Create { path, .. }
            | Op::SetData { path, .. }
            | Op::Delete { path, .. }
            | Op::Check { path, .. } => path,
        }
    }
}

/// Operations applied in one ZooKeeper multi-op: all of them or none. Made by
/// [`ZkClient::transaction`]; add operations, then [`commit`](Self::commit).
///
/// Creates get the manager's ACL provider's ACL for their path, and every path is inside the
/// manager's namespace. The commit is retried as one unit under the manager's retry policy.
/// Parents are not created (as in Curator): call [`ZkClient::create_parents`] first, or add
/// their creates before the child's.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
/// use zkr_connection::CreateMode;
///
/// let results = zk
///     .transaction()
///     .check("/app/config", 4)
///     .set_data("/app/config", b"v5", None)
///     .create("/app/history/v5", b"", CreateMode::Persistent)
///     .delete("/app/history/v1", None)
///     .commit()
///     .await?;
/// assert_eq!(results.len(), 4);
/// # Ok(()) }
/// ```
#[must_use = "a transaction does nothing until it is committed"]
#[derive(Clone)]
pub struct Transaction {
    zk: ZkClient,
    ops: Vec<Op>,
    options: RetryOptions,
}

impl fmt::Debug for Transaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ops: Vec<String> = self.ops.iter().map(|op| format!("{} {}", op.kind(), op.path())).collect();
        f.debug_struct("Transaction").field("ops", &ops).finish()
    }
}

impl ZkClient {
    /// A new, empty [`Transaction`] on this manager.
    pub fn transaction(&self) -> Transaction {
        Transaction { zk: self.clone(), ops: Vec::new(), options: self.call_options() }
    }
}

impl Transaction {
    /// Adds a create of `path` (for sequential modes the result names the created node).
    pub fn create(mut self, path: &str, data: &[u8], mode: CreateMode) -> Self {
        self.ops.push(Op::Create { path: path.to_owned(), data: data.to_vec(), mode, ttl: None, acl: None });
        self
    }

    /// Adds a create of `path` with `acl` instead of the ACL provider's (Curator's
    /// `transactionOp().create().withACL(acl)`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// use zkr_connection::zookeeper_client::{Acl, AuthId, Permission};
    /// use zkr_connection::CreateMode;
    ///
    /// let read_only = [Acl::new(Permission::READ, AuthId::anyone())];
    /// zk.transaction().create_with_acl("/app/frozen", b"v1", CreateMode::Persistent, &read_only).commit().await?;
    /// # Ok(()) }
    /// ```
    pub fn create_with_acl(
        mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        acl: &[zookeeper_client::Acl],
    ) -> Self {
        let acl = Some(acl.to_vec());
        self.ops.push(Op::Create { path: path.to_owned(), data: data.to_vec(), mode, ttl: None, acl });
        self
    }

    /// Adds a create of a TTL node (`CreateMode::PersistentWithTtl` or
    /// `PersistentSequentialWithTtl`; the server needs TTL nodes on).
    pub fn create_with_ttl(mut self, path: &str, data: &[u8], mode: CreateMode, ttl: Duration) -> Self {
        self.ops.push(Op::Create {
            path: path.to_owned(),
            data: data.to_vec(),
            mode,
            ttl: Some(ttl),
            acl: None,
        });
        self
    }

    /// Adds a set of `path`'s data, at `version` when given.
    pub fn set_data(mut self, path: &str, data: &[u8], version: Option<i32>) -> Self {
        self.ops.push(Op::SetData { path: path.to_owned(), data: data.to_vec(), version });
        self
    }

    /// Adds a delete of `path`, at `version` when given.
    pub fn delete(mut self, path: &str, version: Option<i32>) -> Self {
        self.ops.push(Op::Delete { path: path.to_owned(), version });
        self
    }

    /// Adds a check that `path` is at `version`: the transaction fails (`BadVersion`) if not.
    pub fn check(mut self, path: &str, version: i32) -> Self {
        self.ops.push(Op::Check { path: path.to_owned(), version });
        self
    }

    /// Adds a check that `path` exists, at any version: the transaction fails (`NoNode`) if
    /// not. A guard of a held lock is this check on its lock node.
    pub fn check_exists(self, path: &str) -> Self {
        self.check(path, -1)
    }

    /// Commits on `session` only ([`RetryOptions::on_session`]): once the manager has given it
    /// up, the commit fails with [`Error::SessionExpired`] and nothing is sent. For a
    /// transaction that checks or deletes a node that stands for a hold: on another session
    /// the same path may be another holder's node.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let session = zk.session().await?;
    /// zk.transaction()
    ///     .on_session(&session)
    ///     .check_exists("/queue/lock/item-0000000003")
    ///     .delete("/queue/item-0000000003", None)
    ///     .commit()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn on_session(mut self, session: &crate::session::client::Session) -> Self {
        self.options = self.options.on_session(session);
        self
    }

    /// Adds every operation of `other` after this one's (`other`'s retry options are not
    /// taken): for a recipe that commits its own operations with a caller's.
    pub fn append(mut self, other: Transaction) -> Self {
        self.ops.extend(other.ops);
        self
    }

    /// Retry options for the commit (a deadline, a policy of its own). Defaults to the
    /// manager's policy with no deadline.
    pub fn retry_options(mut self, options: RetryOptions) -> Self {
        // The session it is pinned to stays: a policy is no way to leave it.
        let session = options.session.clone().or_else(|| self.options.session.take());
        self.options = RetryOptions { session, ..options };
        self
    }

    /// How many operations are in it.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Has it no operations?
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Applies every operation at once, and answers one result per operation in order
    /// (`MultiWriteResult::Create` carries the created path).
    ///
    /// The commit is retried as one unit after a connection loss, as Curator does. A multi-op
    /// whose reply was lost may have been applied, and then its retry fails on its own effect
    /// (a create with `NodeExists`, a versioned set with `BadVersion`). Such a failure says
    /// `retried: true` and [`Error::is_ambiguous`](crate::Classify::is_ambiguous) is true for it: look at ZooKeeper to learn
    /// whether the earlier attempt was applied. A retry that succeeds may have applied the
    /// operations twice: a versionless set written twice, a sequential create made twice. Where
    /// that matters, give versions, or commit once with a policy of no retries
    /// ([`retry_options`](Self::retry_options) with `RetryNTimes::new(0, ..)`), as a lock
    /// guard's transaction does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty transaction, [`Error::InvalidPath`],
    /// [`Error::DataTooLarge`] or an invalid TTL before anything is sent;
    /// [`Error::TransactionFailed`] naming the operation the server refused (nothing was
    /// applied); otherwise as [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// The multi-op is atomic: dropped, it was applied entirely or not at all.
    #[tracing::instrument(level = "debug", name = "zk.transaction", skip_all, fields(ops = self.ops.len()))]
    pub async fn commit(self) -> Result<Vec<MultiWriteResult>> {
        self.validate()?;
        let acls: Vec<_> = self
            .ops
            .iter()
            .map(|op| match op {
                Op::Create { acl: Some(acl), .. } => acl.clone(),
                _ => self.zk.acl_for_path(op.path()),
            })
            .collect();
        let ops = &self.ops;
        let acls = &acls;
        let sent = self
            .zk
            .retry_write(self.options.clone(), |session| async move {
                let client = session.client();
                let mut writer = client.new_multi_writer();
                for (op, acl) in ops.iter().zip(acls) {
                    add(&mut writer, op, acl)?;
                }
                match writer.commit().await {
                    Ok(results) => Ok(Ok(results)),
                    Err(MultiWriteError::OperationFailed { index, source }) => Ok(Err((index, source))),
                    Err(MultiWriteError::RequestFailed { source }) => Err(source),
                }
            })
            .await;
        let retried = sent.resent();
        sent.result?.map_err(|(index, source)| {
            let op = &ops[index.min(ops.len() - 1)];
            Error::TransactionFailed { index, op: op.kind(), path: op.path().to_owned(), retried, source }
        })
    }

    fn validate(&self) -> Result<()> {
        if self.ops.is_empty() {
            return Err(Error::InvalidArgument("a transaction without operations"));
        }
        for op in &self.ops {
            path::validate_node_path(op.path())?;
            match op {
                Op::Create { path, data, mode, ttl, .. } => {
                    path::validate_data(path, data)?;
                    if let Some(ttl) = ttl {
                        validate_ttl(*mode, *ttl)?;
                    }
                }
                Op::SetData { path, data, .. } => path::validate_data(path, data)?,
                Op::Delete { .. } | Op::Check { .. } => {}
            }
        }
        Ok(())
    }
}

fn add(
    writer: &mut zookeeper_client::MultiWriter<'_>,
    op: &Op,
    acl: &[zookeeper_client::Acl],
) -> std::result::Result<(), zookeeper_client::Error> {
    match op {
        Op::Create { path, data, mode, ttl, .. } => {
            let mut options = mode.with_acls(Acls::new(acl));
            if let Some(ttl) = ttl {
                options = options.with_ttl(*ttl);
            }
            writer.add_create(path, data, &options)
        }
        Op::SetData { path, data, version } => writer.add_set_data(path, data, *version),
        Op::Delete { path, version } => writer.add_delete(path, *version),
        Op::Check { path, version } => writer.add_check_version(path, *version),
    }
}
