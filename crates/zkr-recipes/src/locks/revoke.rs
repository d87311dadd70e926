//! Lock revocation, Curator's cooperative protocol: whoever wants a lock asks its holder to
//! release by writing [`REVOKE_MESSAGE`] into the holder's lock node ([`attempt_revoke`], Curator's
//! `Revoker.attemptRevoke`); the holder learns it from [`revoked`](super::InterProcessMutexGuard::revoked)
//! and decides what to do.

use zkr_connection::{Session, ZkClient};

use super::internals::follow_node;
use super::LockError;

/// The bytes a revocation request writes into a lock node (Curator's
/// `LockInternals.REVOKE_MESSAGE`).
pub const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// Asks the holder of the lock node at `lock_node_path` to release it: writes
/// [`REVOKE_MESSAGE`] into the node. A node that is gone is no error (its holder released).
/// Cooperative, as in Curator: a holder that does not watch for it keeps the lock. The paths
/// of a lock's nodes are in [`participant_nodes`](super::InterProcessMutex::participant_nodes);
/// works on Curator's locks too (made revocable with `makeRevocable`).
///
/// # Errors
/// [`LockError::Connection`] for a bad path, or when ZooKeeper refuses (`NoAuth`) or cannot
/// be reached in time.
///
/// # Cancel safety
/// Cancel safe: the write is one request, applied or not.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use zkr_recipes::locks::{attempt_revoke, InterProcessMutex};
///
/// let mutex = InterProcessMutex::new(&zk, "/locks/reports")?;
/// if let Some(holder) = mutex.participant_nodes().await?.first() {
///     attempt_revoke(&zk, holder).await?;
/// }
/// # Ok(()) }
/// ```
pub async fn attempt_revoke(zk: &ZkClient, lock_node_path: &str) -> Result<(), LockError> {
    zkr_connection::path::validate_node_path(lock_node_path)?;
    let written =
        zk.retry(|s| async move { s.client().set_data(lock_node_path, REVOKE_MESSAGE, None).await }).await;
    match written {
        Ok(_) => Ok(()),
        Err(e) if e.is_no_node() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Completes when someone asked for the lock node at `path` (on `session`) to be released;
/// never while the node is gone or the session has ended (the lock is lost then).
pub(crate) async fn revocation_requested(zk: &ZkClient, session: &Session, path: &str) {
    let asked = follow_node(zk, session, path, true, |data| (data == Some(REVOKE_MESSAGE)).then_some(()));
    if asked.await.is_err() {
        std::future::pending::<()>().await;
    }
}
