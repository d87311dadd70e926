//! Writes fenced by a hold: a multi-op whose first operation checks the hold's node, sent on the
//! session that holds it, once. Shared by a mutex guard's writes and a leader's term.

use std::time::Duration;

use zkr_connection::{Transaction, ZkClient};
use zookeeper_client::{CreateMode, MultiWriteResult, Stat};

use super::LockNode;
use crate::fence::LostReason;
use crate::locks::LockError;

impl LockNode {
    /// [`LockError::Lost`] (for the lock at `base`) once the hold is known lost.
    pub(crate) fn check_held(&self, zk: &ZkClient, base: &str) -> Result<(), LockError> {
        match self.lost_reason(zk) {
            Some(reason) => Err(LockError::Lost { path: base.to_owned(), reason }),
            None => Ok(()),
        }
    }

    /// A transaction that applies only while this node exists: its first operation checks it.
    pub(crate) fn fenced_transaction(&self, zk: &ZkClient, base: &str) -> Result<Transaction, LockError> {
        self.check_held(zk, base)?;
        // Sent once: a lost reply is an ambiguous error for the caller to resolve, never a
        // second application (a versionless set applied twice, a sequential create doubled).
        let once = zkr_connection::RetryOptions::default()
            .policy(zkr_connection::retry::RetryNTimes::new(0, Duration::ZERO));
        // On the node's own session: on another, nothing of this hold can be checked.
        Ok(zk.transaction().on_session(self.session()).retry_options(once).check_exists(self.path()))
    }

    /// Commits a [`fenced_transaction`](Self::fenced_transaction); answers the results after
    /// the check.
    pub(crate) async fn commit_fenced(
        &self,
        zk: &ZkClient,
        base: &str,
        transaction: Transaction,
    ) -> Result<Vec<MultiWriteResult>, LockError> {
        self.check_held(zk, base)?;
        let mut results = transaction.commit().await.map_err(|e| self.fenced_error(base, e))?;
        results.drain(..1.min(results.len()));
        Ok(results)
    }

    /// Sets `path`'s data in a fenced transaction.
    pub(crate) async fn fenced_set_data(
        &self,
        zk: &ZkClient,
        base: &str,
        (path, data, expected_version): (&str, &[u8], Option<i32>),
    ) -> Result<Stat, LockError> {
        let txn = self.fenced_transaction(zk, base)?.set_data(path, data, expected_version);
        match self.commit_fenced(zk, base, txn).await?.pop() {
            Some(MultiWriteResult::SetData { stat }) => Ok(stat),
            _ => Err(LockError::zk(zookeeper_client::Error::UnexpectedError("no set_data result".into()))),
        }
    }

    /// Creates `path` in a fenced transaction.
    pub(crate) async fn fenced_create(
        &self,
        zk: &ZkClient,
        base: &str,
        (path, data, mode): (&str, &[u8], CreateMode),
    ) -> Result<(String, Stat), LockError> {
        let txn = self.fenced_transaction(zk, base)?.create(path, data, mode);
        match self.commit_fenced(zk, base, txn).await?.pop() {
            Some(MultiWriteResult::Create { path, stat }) => Ok((path, stat)),
            _ => Err(LockError::zk(zookeeper_client::Error::UnexpectedError("no create result".into()))),
        }
    }

    /// Deletes `path` in a fenced transaction.
    pub(crate) async fn fenced_delete(
        &self,
        zk: &ZkClient,
        base: &str,
        (path, expected_version): (&str, Option<i32>),
    ) -> Result<(), LockError> {
        let txn = self.fenced_transaction(zk, base)?.delete(path, expected_version);
        self.commit_fenced(zk, base, txn).await.map(drop)
    }

    fn fenced_error(&self, base: &str, error: zkr_connection::Error) -> LockError {
        match error {
            // The check of our node failed on the first attempt: nothing was applied. (A
            // retried commit's failure may follow an applied first attempt, and a session that
            // ended with the commit in flight may have applied it: both stay ambiguous
            // Connection errors.)
            zkr_connection::Error::TransactionFailed {
                index: 0,
                source: zookeeper_client::Error::NoNode,
                retried: false,
                ..
            } => {
                self.report_lost(LostReason::NodeDeleted);
                LockError::Lost { path: base.to_owned(), reason: LostReason::NodeDeleted }
            }
            other => LockError::Connection(other),
        }
    }
}
