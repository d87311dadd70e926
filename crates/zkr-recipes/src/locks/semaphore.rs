//! `InterProcessSemaphoreV2` and `InterProcessSemaphoreMutex`: Apache Curator's counting
//! semaphore and its one-lease form, with Curator's layout so Java processes share them.

use std::sync::Arc;
use std::time::Duration;

use zkr_connection::protected::ProtectedCreate;
use zkr_connection::{path, within, Deadline, RetryOptions, Session, ZkClient};
use zookeeper_client::CreateMode;

use super::internals::{Wait, TIMEOUT_CLEANUP_GRACE};
pub use super::lease::Lease;
use super::{
    wait_for_children, InterProcessMutex, LockError, LockInternalsDriver, StandardLockInternalsDriver,
};
use crate::fence::SessionFence;

/// Curator's lease node name: `_c_<uuid>-lease-<seq>` under `<path>/leases`.
pub use crate::layouts::LEASE_NAME;

/// How many leases a semaphore hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MaxLeases {
    /// A fixed number.
    Fixed(usize),
    /// The value of a shared count node (4 bytes, big-endian, as Curator's `SharedCount`
    /// stores it), read at every check, so an operator can change it at run time.
    Shared(String),
}

/// A counting semaphore across processes: Apache Curator's `InterProcessSemaphoreV2`.
///
/// Curator's protocol and layout: an acquirer takes the [`InterProcessMutex`] at
/// `<path>/locks` (so acquirers queue fairly and one at a time), creates a protected
/// ephemeral-sequential lease node under `<path>/leases`, waits (with a watch on the lease
/// directory) until there are no more lease nodes than the maximum, then lets the mutex go.
/// Java processes using Curator's `InterProcessSemaphoreV2` (or `InterProcessSemaphoreMutex`)
/// on the same path share the semaphore.
///
/// Leases are not bound to a task: a [`Lease`] can be moved anywhere and returned from
/// anywhere. Dropping one returns it in the background. Nor are acquires: each call queues
/// for the acquirers' mutex on its own, so acquires joined in one task (`join!`,
/// `FuturesUnordered`) take their turns as spawned ones do (the mutex is not reentrant here,
/// where Curator's is per thread).
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use zkr_recipes::locks::{InterProcessSemaphoreV2, MaxLeases};
///
/// let pool = InterProcessSemaphoreV2::new(&zk, "/semaphores/db-connections", MaxLeases::Fixed(10))?;
/// let lease = pool.acquire().await?;
/// // ... at most 10 holders across every process ...
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessSemaphoreV2 {
    zk: ZkClient,
    path: String,
    leases_path: String,
    max: MaxLeases,
    mutex: InterProcessMutex,
    /// What each lease node holds ([`InterProcessSemaphoreV2::with_node_data`]).
    node_data: Vec<u8>,
    /// Set once a listing showed the path free of another layout's contenders.
    layout_checked: Arc<tokio::sync::OnceCell<()>>,
}

/// Reads a shared count node: 4 bytes, big-endian.
fn decode_count(path: &str, data: &[u8]) -> Result<usize, LockError> {
    let bytes: [u8; 4] = data.try_into().map_err(|_| LockError::IllegalState {
        path: path.to_owned(),
        reason: "the shared count node does not hold a 4-byte count",
    })?;
    usize::try_from(i32::from_be_bytes(bytes)).map_err(|_| LockError::IllegalState {
        path: path.to_owned(),
        reason: "the shared count is negative",
    })
}

impl InterProcessSemaphoreV2 {
    /// A semaphore at `path` handing out `max` leases.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for `/`, an invalid path (or one in the reserved `/zookeeper`
    /// tree), or `MaxLeases::Fixed(0)`.
    pub fn new(zk: &ZkClient, path: &str, max: MaxLeases) -> Result<Self, LockError> {
        if max == MaxLeases::Fixed(0) {
            return Err(LockError::InvalidArgument(format!("{path}: a semaphore needs at least one lease")));
        }
        if let MaxLeases::Shared(count) = &max {
            crate::errors::check_node_path(zk, count)?;
        }
        let mutex = InterProcessMutex::new(zk, &path::join(path, crate::layouts::SEMAPHORE_LOCKS))?;
        Ok(InterProcessSemaphoreV2 {
            zk: zk.clone(),
            path: path.to_owned(),
            leases_path: path::join(path, crate::layouts::SEMAPHORE_LEASES),
            max,
            mutex,
            node_data: Vec::new(),
            layout_checked: Arc::default(),
        })
    }

    /// Each lease node this semaphore creates holds `data` (Curator's `setNodeData`; empty by
    /// default, where Curator writes the local IP address), for whoever lists the holders:
    /// [`Lease::data`].
    ///
    /// # Errors
    /// [`LockError::Connection`] with [`DataTooLarge`](zkr_connection::Error::DataTooLarge) over
    /// ZooKeeper's limit.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: &zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
    /// use zkr_recipes::locks::{InterProcessSemaphoreV2, MaxLeases};
    /// let semaphore = InterProcessSemaphoreV2::new(zk, "/pools/db", MaxLeases::Fixed(8))?.with_node_data("worker-7")?;
    /// # Ok(()) }
    /// ```
    pub fn with_node_data(mut self, data: impl Into<Vec<u8>>) -> Result<Self, LockError> {
        let data = data.into();
        path::validate_data(&self.leases_path, &data)?;
        self.node_data = data;
        Ok(self)
    }

    /// The semaphore's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Takes a lease, waiting as long as it takes.
    ///
    /// # Errors
    /// As [`InterProcessMutex::acquire`]; [`LockError::IllegalState`] for a shared count node
    /// that is missing or malformed.
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped call leaves neither a lease nor a lock node behind.
    pub async fn acquire(&self) -> Result<Lease, LockError> {
        match self.acquire_until(None).await? {
            Some(lease) => Ok(lease),
            None => unreachable_lease(&self.path),
        }
    }

    /// Takes a lease if one frees up within `timeout` (time spent queueing for the acquirers'
    /// mutex counts).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>, LockError> {
        self.acquire_until(Some(Deadline::after(timeout))).await
    }

    /// Takes a lease if one is free now, without waiting (Curator's `acquire(0, unit)`): the
    /// acquirers' mutex if it is free, then one look at the leases. `None` when either is taken.
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
    /// # async fn f(pool: zkr_recipes::locks::InterProcessSemaphoreV2) -> Result<(), zkr_recipes::locks::LockError> {
    /// match pool.try_acquire().await? {
    ///     Some(lease) => lease.release().await?,
    ///     None => println!("every lease is taken"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<Lease>, LockError> {
        let Some(guard) = self.mutex.acquire_alone(Wait::NoWait).await? else { return Ok(None) };
        let lease = self.lease_under_mutex_as(guard.session(), None, Look::Once).await;
        let _ = guard.release().await;
        // The mutex went with its session before the lease was made: not taken.
        lease.or_else(|e| if mutex_lost(&e) { Ok(None) } else { Err(e) })
    }

    /// Takes `qty` leases (Curator's `acquire(qty)`), queueing once for the acquirers' mutex as
    /// [`acquire`](Self::acquire) does and holding it until it has them all, waiting as long as
    /// it takes. All or none: on an error the leases taken so far are returned. Callers whose
    /// quantities add up to more than the maximum take turns (Curator's releases the mutex
    /// between leases, so two callers of 3 on 4 leases can each hold 2 and wait forever); a
    /// Curator process's `acquire(qty)` beside zkr still takes its leases one at a time.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for `qty` 0, or above a fixed maximum (it could never be
    /// granted); otherwise as [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped call returns the leases it took.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(semaphore: zkr_recipes::locks::InterProcessSemaphoreV2) -> Result<(), zkr_recipes::locks::LockError> {
    /// let leases = semaphore.acquire_many(3).await?;
    /// // ... use three slots ...
    /// for lease in leases {
    ///     lease.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_many(&self, qty: usize) -> Result<Vec<Lease>, LockError> {
        match self.acquire_many_until(qty, None).await? {
            Some(leases) => Ok(leases),
            None => unreachable_lease(&self.path),
        }
    }

    /// [`acquire_many`](Self::acquire_many) within `timeout` for all of them: `None` (with no
    /// lease kept) when they are not all granted in time.
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancel safety
    /// As [`acquire_many`](Self::acquire_many).
    pub async fn acquire_many_timeout(
        &self,
        qty: usize,
        timeout: Duration,
    ) -> Result<Option<Vec<Lease>>, LockError> {
        self.acquire_many_until(qty, Some(Deadline::after(timeout))).await
    }

    async fn acquire_many_until(
        &self,
        qty: usize,
        deadline: Option<Deadline>,
    ) -> Result<Option<Vec<Lease>>, LockError> {
        if qty == 0 || matches!(self.max, MaxLeases::Fixed(max) if qty > max) {
            return Err(LockError::InvalidArgument(format!(
                "{}: {qty} leases cannot be granted by a semaphore of {:?}",
                self.path, self.max
            )));
        }
        // The acquirers' mutex is held across all `qty` leases: no other acquirer of this
        // process or another zkr one takes a lease in between, so callers whose quantities
        // together exceed the maximum cannot each hold part and wait for the rest forever
        // (Curator's `acquire(qty)` releases it between leases, and can).
        self.under_mutex(
            deadline,
            |mutex| async move { self.leases_under_mutex(&mutex, qty, deadline).await },
        )
        .await
    }

    /// `qty` leases with the acquirers' mutex held on `mutex`; on an error or the deadline,
    /// the ones taken are given back.
    async fn leases_under_mutex(
        &self,
        mutex: &Session,
        qty: usize,
        deadline: Option<Deadline>,
    ) -> Result<Option<Vec<Lease>>, LockError> {
        let mut leases = Vec::with_capacity(qty);
        while leases.len() < qty {
            match self.lease_under_mutex(mutex, deadline).await {
                Ok(Some(lease)) => leases.push(lease),
                other => {
                    for lease in leases {
                        let _ = lease.release().await;
                    }
                    return other.map(|_| None);
                }
            }
        }
        Ok(Some(leases))
    }

    /// Every lease node's name (the holders).
    ///
    /// # Errors
    /// As [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// Cancel safe (read-only).
    pub async fn participant_nodes(&self) -> Result<Vec<String>, LockError> {
        let leases = self.leases_path.as_str();
        match self.zk.retry(|s| async move { s.client().list_children(leases).await }).await {
            Ok(children) => Ok(children.into_iter().filter(|c| is_lease_node(c)).collect()),
            Err(e) if e.is_no_node() => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    async fn max_leases(&self) -> Result<usize, LockError> {
        match &self.max {
            MaxLeases::Fixed(n) => Ok(*n),
            MaxLeases::Shared(count) => {
                let found = crate::errors::read_node(&self.zk, count).await?;
                let (data, _) = found.ok_or_else(|| LockError::IllegalState {
                    path: count.clone(),
                    reason: "the shared count node does not exist",
                })?;
                decode_count(count, &data)
            }
        }
    }

    async fn acquire_until(&self, deadline: Option<Deadline>) -> Result<Option<Lease>, LockError> {
        // Queue for the acquirers' mutex first (Curator's `lock`), then create our lease.
        self.under_mutex(deadline, |mutex| async move { self.lease_under_mutex(&mutex, deadline).await })
            .await
    }

    /// Runs `leases` with the acquirers' mutex held (on the session `leases` is given), then
    /// lets the mutex go; queues for the mutex again when it went with its session before
    /// the leases were made ([`mutex_lost`]: what was taken is given back). `None` when the
    /// mutex is not ours by `deadline`.
    async fn under_mutex<T, F, Fut>(
        &self,
        deadline: Option<Deadline>,
        leases: F,
    ) -> Result<Option<T>, LockError>
    where
        F: Fn(Session) -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, LockError>>,
    {
        loop {
            let Some(guard) = self.mutex.acquire_alone(Wait::until(deadline)).await? else { return Ok(None) };
            let taken = leases(guard.session().clone()).await;
            let _ = guard.release().await;
            match taken {
                Err(e) if mutex_lost(&e) => continue,
                taken => return taken,
            }
        }
    }

    /// Creates a lease node and waits for room, with the acquirers' mutex held by the caller
    /// on `mutex`: the lease, or `None` (and no node) at the deadline.
    async fn lease_under_mutex(
        &self,
        mutex: &Session,
        deadline: Option<Deadline>,
    ) -> Result<Option<Lease>, LockError> {
        self.lease_under_mutex_as(mutex, deadline, Look::Wait).await
    }

    /// As [`lease_under_mutex`](Self::lease_under_mutex), looking for room once or waiting.
    ///
    /// The lease is created on the mutex's session only. Made on a later session, it would be
    /// made without the mutex (which went with the earlier one), beside another acquirer that
    /// took the mutex meanwhile: two waiters over the maximum, each waiting for the other to
    /// go (the model checker's lost-mutex window, `crates/zkr-model`, Curator's steps too).
    /// Once that session is given up the create is not sent: [`mutex_lost`], and the caller
    /// queues for the mutex again.
    async fn lease_under_mutex_as(
        &self,
        mutex: &Session,
        deadline: Option<Deadline>,
        look: Look,
    ) -> Result<Option<Lease>, LockError> {
        self.layout_checked.get_or_try_init(|| self.check_layout()).await?;
        let request = ProtectedCreate::new(&self.leases_path, LEASE_NAME, CreateMode::EphemeralSequential)
            .data(&self.node_data)
            .retry_options(RetryOptions::default().deadline(deadline).on_session(mutex));
        let created = match self.zk.create_protected_ext(request).await {
            Ok(created) => created,
            Err(zkr_connection::Error::DeadlineExceeded { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        // From here the lease node is ours: a drop or an error returns it.
        // A lease rides out connection trouble: only its session's end counts.
        let fence = SessionFence::new(created.session.clone(), self.zk.error_epoch());
        let mut lease = Lease::pending(&self.zk, created.path.clone(), fence);
        lease.created(created.stat.czxid);
        // Every request of the wait counts against the deadline: a request to a server that
        // lost its quorum can go unanswered for seconds.
        let granted = match look {
            Look::Wait => within(deadline, self.wait_for_room(&lease, deadline)).await.unwrap_or(Ok(false)),
            Look::Once => self.room_now(&lease).await,
        };
        match granted {
            Ok(true) => Ok(Some(lease)),
            Ok(false) => {
                if std::mem::take(&mut lease.armed) {
                    let deleted = lease.node.guaranteed_delete(&lease.zk);
                    // Bounded: past it, the delete goes on in the background.
                    let _ = tokio::time::timeout(TIMEOUT_CLEANUP_GRACE, deleted.wait()).await;
                }
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Refuses a path that holds another layout's contenders (a kazoo `Lock`'s nodes beside
    /// our `leases` and `locks`): both would hand out the lock at once, unseen by each other.
    async fn check_layout(&self) -> Result<(), LockError> {
        let at = self.path.as_str();
        let listed = self.zk.retry(|s| async move {
            match s.client().list_children(at).await {
                Err(zookeeper_client::Error::NoNode) => Ok(Vec::new()),
                listed => listed,
            }
        });
        let children = listed.await?;
        let ours = |name: &str| super::LockLayout::of(name) == Some(super::LockLayout::CuratorSemaphore);
        match super::layout::foreign(&children, ours) {
            Some(found) => Err(LockError::LayoutConflict { path: self.path.clone(), found }),
            None => Ok(()),
        }
    }

    /// Waits until there are no more lease nodes than the maximum; `false` at the deadline.
    async fn wait_for_room(&self, lease: &Lease, deadline: Option<Deadline>) -> Result<bool, LockError> {
        let ours = path::node_name(lease.node_path());
        let room = |children: Vec<String>| async move { self.has_room(&children, ours).await };
        wait_for_children(&self.zk, lease.node.fence(), &self.leases_path, lease.node_path(), deadline, room)
            .await
    }

    /// One look: are there no more lease nodes than the maximum now?
    async fn room_now(&self, lease: &Lease) -> Result<bool, LockError> {
        let leases = self.leases_path.as_str();
        let children = self.zk.retry(|s| async move { s.client().list_children(leases).await }).await?;
        self.has_room(&children, path::node_name(lease.node_path())).await
    }

    /// Is our lease node (`ours`) among `children`, with no more lease nodes than the maximum?
    async fn has_room(&self, children: &[String], ours: &str) -> Result<bool, LockError> {
        let max = self.max_leases().await?;
        if !children.iter().any(|c| c == ours) {
            return Err(LockError::NodeVanished { path: self.leases_path.clone(), node: ours.to_owned() });
        }
        // Only lease nodes count: anything else planted under leases/ is ignored.
        Ok(children.iter().filter(|c| is_lease_node(c)).count() <= max)
    }
}

/// Did a lease's create fail because the acquirers' mutex went with its session (the create,
/// pinned to that session, was not sent or not applied)?
fn mutex_lost(error: &LockError) -> bool {
    matches!(error, LockError::Connection(zkr_connection::Error::SessionExpired { .. }))
}

/// How a lease looks for room: waits for it, or looks once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    Wait,
    Once,
}

/// A lease node's name: zkr's and Curator's protected `..lease-<10-digit sequence>`.
fn is_lease_node(name: &str) -> bool {
    StandardLockInternalsDriver.fix_for_sorting(name, LEASE_NAME).is_some()
}

fn unreachable_lease<T>(path: &str) -> Result<T, LockError> {
    Err(LockError::IllegalState {
        path: path.to_owned(),
        reason: "an acquire without a deadline ended without a lease",
    })
}

/// A mutex across processes that is not reentrant and not bound to a task: Apache Curator's
/// `InterProcessSemaphoreMutex`, a [`InterProcessSemaphoreV2`] with one lease (same layout, so
/// Java processes share it). Hand the [`Lease`] to another task to release it there.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// let mutex = zkr_recipes::locks::InterProcessSemaphoreMutex::new(&zk, "/locks/import")?;
/// let held = mutex.acquire().await?;
/// tokio::spawn(async move { held.release().await });
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessSemaphoreMutex {
    semaphore: InterProcessSemaphoreV2,
}

impl InterProcessSemaphoreMutex {
    /// A semaphore mutex at `path`.
    ///
    /// # Errors
    /// As [`InterProcessSemaphoreV2::new`].
    pub fn new(zk: &ZkClient, path: &str) -> Result<Self, LockError> {
        Ok(InterProcessSemaphoreMutex {
            semaphore: InterProcessSemaphoreV2::new(zk, path, MaxLeases::Fixed(1))?,
        })
    }

    /// Takes the mutex, waiting as long as it takes. Not reentrant: a second call waits for the
    /// first lease to be returned, whoever calls it.
    ///
    /// # Errors
    /// As [`InterProcessSemaphoreV2::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire(&self) -> Result<Lease, LockError> {
        self.semaphore.acquire().await
    }

    /// Takes the mutex if it frees up within `timeout`.
    ///
    /// # Errors
    /// As [`InterProcessSemaphoreV2::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>, LockError> {
        self.semaphore.acquire_timeout(timeout).await
    }

    /// Takes the mutex before `deadline` (forever without one).
    pub(crate) async fn acquire_until(&self, deadline: Option<Deadline>) -> Result<Option<Lease>, LockError> {
        self.semaphore.acquire_until(deadline).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_counts_are_curators_ints() {
        assert_eq!(decode_count("/c", &5i32.to_be_bytes()).unwrap(), 5);
        assert!(decode_count("/c", &(-1i32).to_be_bytes()).is_err());
        assert!(decode_count("/c", b"12").is_err());
    }
}
