//! kazoo's `Election`.

use std::future::Future;

use zkr_connection::ZkClient;

use crate::locks::{InterProcessMutex, KazooLockDriver, LockError};

/// Leader election in kazoo's layout: kazoo's `Election(path, identifier)`, a kazoo `Lock` at
/// the path whose holder leads while its work runs.
///
/// [`run`](Self::run) queues for the lock, runs the work once it holds it, and lets go when the
/// work ends. Python processes running kazoo's `Election` on the same path take turns with this
/// one, and [`contenders`](Self::contenders) lists them all. Unlike kazoo's, the work stops (its
/// future is dropped) when leadership is lost: the lock's session ends or the connection enters
/// an error state under the client's error policy, as zkr's
/// [`LeaderSelector`](crate::leader::LeaderSelector) does. While the work runs, the process's
/// `zkr_leader` gauge counts it under the election's path (`docs/observability.md`), as it
/// counts a leading `LeaderLatch` or `LeaderSelector`.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use zkr_recipes::kazoo::Election;
///
/// let election = Election::new(&zk, "/elections/compactor", "rust-compactor-1")?;
/// election.run(|| async {
///     // ... compact while we lead ...
/// }).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Election {
    lock: InterProcessMutex<KazooLockDriver>,
}

impl Election {
    /// An election at `path`; this process takes part as `identifier` (its lock node's data,
    /// what [`contenders`](Self::contenders) lists).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an invalid path or an identifier over ZooKeeper's
    /// limit.
    pub fn new(zk: &ZkClient, path: &str, identifier: &str) -> Result<Self, LockError> {
        Ok(Election { lock: InterProcessMutex::kazoo(zk, path, identifier)? })
    }

    /// Waits for leadership, runs `work` while leading, and hands leadership on when it
    /// returns; its output. Cancel the candidacy by dropping the future (kazoo's `cancel()`).
    ///
    /// # Errors
    /// [`LockError::Lost`] when leadership was lost while the work ran (the work was dropped);
    /// otherwise as [`InterProcessMutex::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe: dropped while waiting, the candidacy's node is deleted in the background;
    /// dropped while leading, the work is dropped and leadership handed on.
    pub async fn run<F, Fut, T>(&self, work: F) -> Result<T, LockError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = self.lock.acquire().await?;
        // On `zkr_leader` as LeaderLatch and LeaderSelector are, for the shipped alerts.
        let leading = crate::telemetry::Leading::start(self.path());
        let outcome = tokio::select! {
            value = work() => Ok(value),
            reason = guard.lost() => Err(LockError::Lost { path: guard.node_path().to_owned(), reason }),
        };
        drop(leading);
        // After a loss the release returns at once (its cleanup goes on in the background).
        let _ = guard.release().await;
        outcome
    }

    /// The identifiers of the contenders in queue order, the leader first (kazoo's
    /// `contenders()`).
    ///
    /// # Errors
    /// As [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// Cancel safe (read-only).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(election: zkr_recipes::kazoo::Election) -> Result<(), zkr_recipes::locks::LockError> {
    /// if let Some(leader) = election.contenders().await?.first() {
    ///     println!("{leader} leads");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn contenders(&self) -> Result<Vec<String>, LockError> {
        let nodes = self.lock.participant_nodes().await?;
        let participants = crate::leader::participants_of(self.lock.internals().zk(), nodes).await?;
        Ok(participants.into_iter().map(|p| p.id).collect())
    }

    /// The election's path.
    pub fn path(&self) -> &str {
        self.lock.path()
    }
}
