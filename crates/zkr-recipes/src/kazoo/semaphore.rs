//! kazoo's `Semaphore`.

use std::time::Duration;

use zkr_connection::{path, within, Deadline, ZkClient};
use zookeeper_client::CreateMode;

use crate::fence::SessionFence;
use crate::locks::{
    wait_for_children, InterProcessMutex, InterProcessMutexGuard, KazooLockDriver, Lease, LockError,
};

/// A counting semaphore in kazoo's layout: kazoo's `Semaphore(path, identifier, max_leases)`.
///
/// kazoo's protocol: the semaphore node at `path` holds the maximum as decimal text; an
/// acquirer takes the kazoo lock at `<path>-__lock__`, then, while fewer than the maximum
/// children exist under `path`, creates an ephemeral `<path>/<uuid hex>` holding its
/// identifier (that is its lease) and lets the lock go. Python processes using kazoo's
/// `Semaphore` on the same path with the same maximum share it. The lease is a
/// [`Lease`](crate::locks::Lease), as zkr's Curator-layout semaphore hands out: move it
/// anywhere, release it or drop it.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use zkr_recipes::kazoo::Semaphore;
///
/// let slots = Semaphore::new(&zk, "/semaphores/encoders", "rust-encoder-1", 4)?;
/// let lease = slots.acquire().await?;
/// // ... at most 4 holders, kazoo processes included ...
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    zk: ZkClient,
    path: String,
    identifier: String,
    max_leases: usize,
    lock: InterProcessMutex<KazooLockDriver>,
}

impl Semaphore {
    /// A semaphore at `path` of `max_leases` leases; `identifier` is what this process's lease
    /// nodes (and lock nodes) hold, as kazoo's `identifier`.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an invalid path, `max_leases` 0, or an identifier
    /// over ZooKeeper's limit.
    pub fn new(zk: &ZkClient, path: &str, identifier: &str, max_leases: usize) -> Result<Self, LockError> {
        zk.validate_recipe_path(path)?;
        if max_leases == 0 {
            return Err(LockError::InvalidArgument(format!("{path}: a semaphore needs at least one lease")));
        }
        let lock =
            InterProcessMutex::kazoo(zk, &format!("{path}-{}", KazooLockDriver::LOCK_NAME), identifier)?;
        Ok(Semaphore {
            zk: zk.clone(),
            path: path.to_owned(),
            identifier: identifier.to_owned(),
            max_leases,
            lock,
        })
    }

    /// The semaphore's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Takes a lease, waiting as long as it takes.
    ///
    /// # Errors
    /// [`LockError::IllegalState`] when the semaphore node holds another maximum (kazoo's
    /// "Inconsistent max leases"); otherwise as
    /// [`InterProcessMutex::acquire`](crate::locks::InterProcessMutex::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped call leaves neither a lease nor a lock node behind.
    pub async fn acquire(&self) -> Result<Lease, LockError> {
        self.acquire_until(None).await?.ok_or_else(|| LockError::IllegalState {
            path: self.path.clone(),
            reason: "an acquire without a deadline ended without a lease",
        })
    }

    /// Takes a lease if one frees up within `timeout` (kazoo's `acquire(timeout=...)`; time
    /// spent queueing for the acquirers' lock counts).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(slots: zkr_recipes::kazoo::Semaphore) -> Result<(), zkr_recipes::locks::LockError> {
    /// match slots.acquire_timeout(std::time::Duration::from_secs(2)).await? {
    ///     Some(lease) => lease.release().await?,
    ///     None => println!("all {} leases are taken", slots.max_leases()),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>, LockError> {
        self.acquire_until(Some(Deadline::after(timeout))).await
    }

    /// The maximum number of leases.
    pub fn max_leases(&self) -> usize {
        self.max_leases
    }

    /// The identifiers of the lease holders (kazoo's `lease_holders()`), in no order.
    ///
    /// # Errors
    /// As [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// Cancel safe (read-only).
    pub async fn lease_holders(&self) -> Result<Vec<String>, LockError> {
        let Some((children, _)) = self.zk.get_children(&self.path).await? else { return Ok(Vec::new()) };
        let mut holders = Vec::with_capacity(children.len());
        for child in children {
            let node = path::join(&self.path, &child);
            let node = node.as_str();
            let read = self.zk.retry(|s| async move { s.client().get_data(node).await }).await;
            match read {
                Ok((data, _)) => holders.push(String::from_utf8_lossy(&data).into_owned()),
                Err(e) if e.is_no_node() => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(holders)
    }

    async fn acquire_until(&self, deadline: Option<Deadline>) -> Result<Option<Lease>, LockError> {
        match within(deadline, self.ensure_path()).await {
            Some(ensured) => ensured?,
            None => return Ok(None),
        }
        let Some(guard) = self.lock.acquire_until(deadline).await? else { return Ok(None) };
        let lease = within(deadline, self.lease_under_lock(&guard, deadline)).await.unwrap_or(Ok(None));
        let _ = guard.release().await;
        lease
    }

    /// Creates the semaphore node holding the maximum, or checks the maximum it holds (kazoo
    /// ignores data that is not a number, as here).
    async fn ensure_path(&self) -> Result<(), LockError> {
        let max = self.max_leases.to_string();
        if super::ensure_path(&self.zk, &self.path, max.as_bytes()).await? {
            return Ok(());
        }
        let node = self.path.as_str();
        let (data, _) = self.zk.retry(|s| async move { s.client().get_data(node).await }).await?;
        match std::str::from_utf8(&data).ok().and_then(|text| text.trim().parse::<usize>().ok()) {
            Some(stored) if stored != self.max_leases => Err(LockError::IllegalState {
                path: self.path.clone(),
                reason: "inconsistent max leases: the semaphore node holds another maximum",
            }),
            _ => Ok(()),
        }
    }

    /// Waits (holding the acquirers' lock) until there is room, then creates our lease node;
    /// `None` at the deadline.
    async fn lease_under_lock(
        &self,
        guard: &InterProcessMutexGuard<KazooLockDriver>,
        deadline: Option<Deadline>,
    ) -> Result<Option<Lease>, LockError> {
        let fence = SessionFence::new(guard.session().clone(), self.zk.error_epoch());
        let max = self.max_leases;
        let room = |children: Vec<String>| async move { Ok(children.len() < max) };
        if !wait_for_children(&self.zk, &fence, &self.path, &self.path, deadline, room).await? {
            return Ok(None);
        }
        let node = path::join(&self.path, &super::uuid_hex());
        // Armed before the create is sent: a drop from here deletes the node if it came to be.
        let mut lease = Lease::pending(&self.zk, node.clone(), fence);
        let (_, stat) = guard.create(&node, self.identifier.as_bytes(), CreateMode::Ephemeral).await?;
        lease.created(stat.czxid);
        Ok(Some(lease))
    }
}
