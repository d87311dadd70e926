//! Reads that need ZooKeeper 3.6: several reads in one request ([`ZkClient::multi_read`]) and
//! the session's ephemeral nodes ([`ZkClient::ephemerals`]). A 3.5 server closes the
//! connection on a request it does not know, so both ask the servers' features first
//! ([`ZkClient::has_persistent_watches`], which came in the same release).

use zookeeper_client::{MultiReadResult, Stat};

use crate::error::{Error, Result};
use crate::path;
use crate::session::client::ZkClient;

/// One read of a [`ZkClient::multi_read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadOp<'a> {
    /// A node's data and `Stat`.
    Data(&'a str),
    /// A node's children.
    Children(&'a str),
}

/// What one [`ReadOp`] found; `None` when there is no node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadResult {
    /// For [`ReadOp::Data`].
    Data(Option<(Vec<u8>, Stat)>),
    /// For [`ReadOp::Children`].
    Children(Option<Vec<String>>),
}

impl ZkClient {
    /// Several reads in one request, answered from one state of the server (ZooKeeper's
    /// `multiRead`, 3.6+), under the retry policy: one [`ReadResult`] per [`ReadOp`], in
    /// order.
    ///
    /// # Errors
    /// [`Error::InvalidPath`], [`Error::InvalidArgument`] for no reads; `Unimplemented` as
    /// [`Error::Zk`] on a server before 3.6; an error a read found other than `NoNode` (such
    /// as `NoAuth`) as [`Error::Zk`]; or as [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Cancel safe (reads).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// use zkr_connection::{ReadOp, ReadResult};
    ///
    /// let found = zk.multi_read(&[ReadOp::Data("/app/config"), ReadOp::Children("/app/members")]).await?;
    /// if let [ReadResult::Data(config), ReadResult::Children(members)] = &found[..] {
    ///     println!("config {:?}, members {:?}", config.as_ref().map(|(d, _)| d.len()), members);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn multi_read(&self, reads: &[ReadOp<'_>]) -> Result<Vec<ReadResult>> {
        if reads.is_empty() {
            return Err(Error::InvalidArgument("a multi-read needs at least one read"));
        }
        for read in reads {
            let (ReadOp::Data(p) | ReadOp::Children(p)) = read;
            path::validate_path(p)?;
        }
        let replies = self.bounded(async {
            self.needs_3_6().await?;
            self.retry_with(self.call_options(), |s| async move {
                let mut reader = s.client().new_multi_reader();
                for read in reads {
                    match read {
                        ReadOp::Data(p) => reader.add_get_data(p)?,
                        ReadOp::Children(p) => reader.add_get_children(p)?,
                    }
                }
                reader.commit().await
            })
            .await
        });
        let replies = replies.await?;
        reads.iter().zip(replies).map(|(read, reply)| found(read, reply)).collect()
    }

    /// The paths of this session's ephemeral nodes at or below `path` (ZooKeeper's
    /// `getEphemerals`, 3.6+; `/` for all of them), relative to the namespace. Every user of
    /// this client shares its session, so the list holds all of theirs.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; `Unimplemented` as [`Error::Zk`] on a server before 3.6; or as
    /// [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Cancel safe (a read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// for node in zk.ephemerals("/").await? {
    ///     println!("this session holds {node}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn ephemerals(&self, path: &str) -> Result<Vec<String>> {
        path::validate_path(path)?;
        self.needs_3_6().await?;
        let mut found = self
            .retry_with(self.call_options(), |s| async move { s.client().list_ephemerals(path).await })
            .await?;
        found.sort();
        Ok(found)
    }

    /// `Unimplemented` on a server before 3.6, which would close the connection on the request.
    async fn needs_3_6(&self) -> Result<()> {
        match self.has_persistent_watches().await? {
            true => Ok(()),
            false => Err(Error::Zk(zookeeper_client::Error::Unimplemented)),
        }
    }
}

/// One read's answer in a multi-read's terms.
fn found(read: &ReadOp<'_>, reply: MultiReadResult) -> Result<ReadResult> {
    match (read, reply) {
        (ReadOp::Data(_), MultiReadResult::Data { data, stat }) => Ok(ReadResult::Data(Some((data, stat)))),
        (ReadOp::Data(_), MultiReadResult::Error { err: zookeeper_client::Error::NoNode }) => {
            Ok(ReadResult::Data(None))
        }
        (ReadOp::Children(_), MultiReadResult::Children { children }) => {
            Ok(ReadResult::Children(Some(children)))
        }
        (ReadOp::Children(_), MultiReadResult::Error { err: zookeeper_client::Error::NoNode }) => {
            Ok(ReadResult::Children(None))
        }
        (_, MultiReadResult::Error { err }) => Err(Error::Zk(err)),
        (_, _) => Err(Error::Zk(zookeeper_client::Error::UnexpectedError(
            "a multi-read answered out of order".into(),
        ))),
    }
}
