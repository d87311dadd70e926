//! `InterProcessReadWriteLock`: many readers or one writer, on two `InterProcessMutex`es with
//! their own drivers over one path (Apache Curator's layout, or kazoo's).

use zkr_connection::Parents;
use zkr_connection::ZkClient;
use zookeeper_client::CreateMode;

use super::driver::{ContenderSpec, LockInternalsDriver, PredicateResults};
use super::{InterProcessMutex, InterProcessMutexGuard, LockError, LockInternals};
use crate::layouts::sequence_key;

/// kazoo's write-lock node name (`WriteLock._NODE_NAME`, also its plain `Lock`'s).
pub use crate::layouts::KAZOO_LOCK_NAME as KAZOO_WRITE_LOCK_NAME;
pub use crate::layouts::{KAZOO_READ_LOCK_NAME, READ_LOCK_NAME, WRITE_LOCK_NAME};

/// Whose node names a read-write lock uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Layout {
    /// Curator's: `_c_<uuid>-__READ__<seq>` and `_c_<uuid>-__WRIT__<seq>`.
    #[default]
    Curator,
    /// kazoo's: `<uuid hex>__rlock__<seq>` and `<uuid hex>__lock__<seq>`.
    Kazoo,
}

impl Layout {
    fn read_name(self) -> &'static str {
        match self {
            Layout::Curator => READ_LOCK_NAME,
            Layout::Kazoo => KAZOO_READ_LOCK_NAME,
        }
    }

    fn write_name(self) -> &'static str {
        match self {
            Layout::Curator => WRITE_LOCK_NAME,
            Layout::Kazoo => KAZOO_WRITE_LOCK_NAME,
        }
    }

    /// The sort key of a read or write node: the sequence after the read or write name (neither
    /// layout's read name contains its write name, nor the other way round).
    fn key(self, name: &str) -> Option<&str> {
        [self.read_name(), self.write_name()].into_iter().find_map(|marker| {
            let at = name.rfind(marker)?;
            let suffix = &name[at + marker.len()..];
            sequence_key(suffix).map(|_| suffix)
        })
    }

    fn is_writer(self, name: &str) -> bool {
        name.rfind(self.write_name())
            .is_some_and(|at| sequence_key(&name[at + self.write_name().len()..]).is_some())
    }

    /// How the lock's directory is made: as each layout's own recipes make it.
    fn parents(self) -> Parents {
        match self {
            Layout::Curator => Parents::Containers,
            Layout::Kazoo => Parents::Persistent,
        }
    }

    fn tag(self) -> String {
        match self {
            Layout::Curator => zkr_connection::protected::protected_prefix(&uuid::Uuid::new_v4()),
            Layout::Kazoo => uuid::Uuid::new_v4().simple().to_string(),
        }
    }
}

/// The write side: a standard queue over read and write nodes alike (a writer waits for every
/// node ahead of it).
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteLockDriver {
    layout: Layout,
}

impl LockInternalsDriver for WriteLockDriver {
    fn contender(&self, lock_name: &str) -> ContenderSpec {
        ContenderSpec {
            tag: self.layout.tag(),
            name: lock_name.to_owned(),
            mode: CreateMode::EphemeralSequential,
        }
    }

    fn fix_for_sorting<'a>(&self, name: &'a str, _lock_name: &str) -> Option<&'a str> {
        self.layout.key(name)
    }

    fn parents(&self) -> Parents {
        self.layout.parents()
    }

    /// A downgrade puts a read node at its writer's (old) place, ahead of writers already
    /// queued: the holder's deletion does not prove we are first, so list again.
    fn head_release_grants(&self) -> bool {
        false
    }
}

/// The read side: a reader holds the lock when no writer is ahead of it, or when its task holds
/// the write lock (a downgrade); otherwise it watches the first writer.
#[derive(Debug, Clone)]
pub struct ReadLockDriver {
    write: InterProcessMutex<WriteLockDriver>,
}

impl ReadLockDriver {
    fn layout(&self) -> Layout {
        self.write.internals().driver().layout
    }
}

impl LockInternalsDriver for ReadLockDriver {
    fn contender(&self, lock_name: &str) -> ContenderSpec {
        // A task that holds the write lock puts its read node at its write node's place in the
        // queue (a plain ephemeral node with that sequence, as Curator does), so that writers
        // queued behind our write node stay behind our read node when we downgrade.
        let at_writer = self
            .write
            .owned_node_name()
            .and_then(|w| self.layout().key(&w).map(str::to_owned))
            .map(|sequence| format!("{lock_name}{sequence}"));
        match at_writer {
            Some(name) => ContenderSpec { tag: self.layout().tag(), name, mode: CreateMode::Ephemeral },
            None => self.write.internals().driver().contender(lock_name),
        }
    }

    fn fix_for_sorting<'a>(&self, name: &'a str, lock_name: &str) -> Option<&'a str> {
        self.write.internals().driver().fix_for_sorting(name, lock_name)
    }

    fn head_release_grants(&self) -> bool {
        self.write.internals().driver().head_release_grants()
    }

    fn parents(&self) -> Parents {
        self.layout().parents()
    }

    fn gets_the_lock(
        &self,
        sorted_children: &[String],
        our_node: &str,
        _max_leases: usize,
    ) -> Result<PredicateResults, LockError> {
        if self.write.is_owned_by_current_task() {
            return Ok(PredicateResults { gets_the_lock: true, path_to_watch: None });
        }
        let mut first_writer: Option<usize> = None;
        for (index, child) in sorted_children.iter().enumerate() {
            if child == our_node {
                return Ok(match first_writer {
                    None => PredicateResults { gets_the_lock: true, path_to_watch: None },
                    Some(w) => PredicateResults {
                        gets_the_lock: false,
                        path_to_watch: Some(sorted_children[w].clone()),
                    },
                });
            }
            if first_writer.is_none() && self.layout().is_writer(child) {
                first_writer = Some(index);
            }
        }
        Err(LockError::NotAContender { node: our_node.to_owned() })
    }
}

/// Apache Curator's `InterProcessReadWriteLock`: any number of readers, or one writer.
///
/// - Both sides are reentrant per tokio task (each is an [`InterProcessMutex`]).
/// - A task holding the write lock may take the read lock (a downgrade), then release the
///   write lock: writers that queued meanwhile still wait for its read lock.
/// - A task holding only the read lock cannot take the write lock: [`write`](Self::write)
///   fails at once with [`LockError::IllegalState`] instead of deadlocking.
/// - Node names are Curator's (`_c_<uuid>-__READ__<seq>`, `_c_<uuid>-__WRIT__<seq>`), so Java
///   processes using Curator's `InterProcessReadWriteLock` on the same path share the lock.
/// - Readers wait on the first writer ahead of them; writers on the node just ahead.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use zkr_recipes::locks::InterProcessReadWriteLock;
///
/// let lock = InterProcessReadWriteLock::new(&zk, "/locks/catalog")?;
/// let reading = lock.read().await?;   // shared with other readers
/// reading.release().await?;
/// let writing = lock.write().await?;  // exclusive
/// let downgraded = lock.read().await?; // still exclusive of writers
/// writing.release().await?;
/// downgraded.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessReadWriteLock {
    read: InterProcessMutex<ReadLockDriver>,
    write: InterProcessMutex<WriteLockDriver>,
}

impl InterProcessReadWriteLock {
    /// A read-write lock at `path`.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for `/`, an invalid path (or one in the reserved `/zookeeper`
    /// tree).
    pub fn new(zk: &ZkClient, path: &str) -> Result<Self, LockError> {
        Self::with_layout(zk, path, Layout::Curator, &[])
    }

    /// A read-write lock at `path` in kazoo's layout (`<uuid hex>__rlock__<seq>` and
    /// `<uuid hex>__lock__<seq>`, each holding `identifier` as kazoo's contenders do), shared
    /// with Python processes using kazoo's `ReadLock` and `WriteLock` on the same path. (kazoo's
    /// plain `Lock` waits for writers only: it takes the lock beside readers, by kazoo's design.)
    ///
    /// Readers wait only for writers ahead of them, so zkr does not have kazoo 2.8's read-write
    /// deadlock (python-zk/kazoo#649, fixed in kazoo 2.9: a reader there could wait on a writer
    /// queued behind it, which waited on the reader). A kazoo 2.8 process beside zkr can still
    /// deadlock itself against a writer; upgrade the Python side.
    ///
    /// # Errors
    /// As [`new`](Self::new); [`LockError::InvalidArgument`] for an identifier over
    /// ZooKeeper's limit.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
    /// use zkr_recipes::locks::InterProcessReadWriteLock;
    ///
    /// let lock = InterProcessReadWriteLock::kazoo(&zk, "/locks/catalog", "rust-worker-1")?;
    /// let reading = lock.read().await?; // beside kazoo ReadLocks, never beside a WriteLock
    /// reading.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn kazoo(zk: &ZkClient, path: &str, identifier: &str) -> Result<Self, LockError> {
        Self::with_layout(zk, path, Layout::Kazoo, identifier.as_bytes())
    }

    fn with_layout(zk: &ZkClient, path: &str, layout: Layout, data: &[u8]) -> Result<Self, LockError> {
        let write = LockInternals::new(zk, path, layout.write_name(), WriteLockDriver { layout }, 1)?
            .with_node_data(data.to_vec())?;
        let write = InterProcessMutex::from_internals(write)?;
        let driver = ReadLockDriver { write: write.clone() };
        let read = LockInternals::new(zk, path, layout.read_name(), driver, usize::MAX)?
            .with_node_data(data.to_vec())?;
        Ok(InterProcessReadWriteLock { read: InterProcessMutex::from_internals(read)?, write })
    }

    /// Takes the read lock, waiting as long as it takes.
    ///
    /// # Errors
    /// As [`InterProcessMutex::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped call leaves no node behind.
    pub async fn read(&self) -> Result<InterProcessMutexGuard<ReadLockDriver>, LockError> {
        self.read.acquire().await
    }

    /// Takes the read lock if it can within `timeout`.
    ///
    /// # Errors
    /// As [`InterProcessMutex::acquire_timeout`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn read_timeout(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<InterProcessMutexGuard<ReadLockDriver>>, LockError> {
        self.read.acquire_timeout(timeout).await
    }

    /// Takes the write lock, waiting as long as it takes.
    ///
    /// # Errors
    /// [`LockError::IllegalState`] when the current task holds the read lock (no upgrades);
    /// otherwise as [`InterProcessMutex::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped call leaves no node behind.
    pub async fn write(&self) -> Result<InterProcessMutexGuard<WriteLockDriver>, LockError> {
        self.refuse_upgrade()?;
        self.write.acquire().await
    }

    /// Takes the write lock if it can within `timeout`.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn write_timeout(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<InterProcessMutexGuard<WriteLockDriver>>, LockError> {
        self.refuse_upgrade()?;
        self.write.acquire_timeout(timeout).await
    }

    fn refuse_upgrade(&self) -> Result<(), LockError> {
        if self.read.is_owned_by_current_task() && !self.write.is_owned_by_current_task() {
            return Err(LockError::IllegalState {
                path: self.write.path().to_owned(),
                reason:
                    "a task holding the read lock cannot take the write lock (no upgrades); release it first",
            });
        }
        Ok(())
    }

    /// The read side, for its participant nodes and ownership checks.
    pub fn read_lock(&self) -> &InterProcessMutex<ReadLockDriver> {
        &self.read
    }

    /// The write side.
    pub fn write_lock(&self) -> &InterProcessMutex<WriteLockDriver> {
        &self.write
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_and_write_nodes_sort_together() {
        let key = |name| Layout::Curator.key(name);
        assert_eq!(key("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-__READ__0000000007"), Some("0000000007"));
        assert_eq!(key("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-__WRIT__0000000003"), Some("0000000003"));
        assert_eq!(key("lock-0000000003"), None);
        let d = WriteLockDriver::default();
        let children: Vec<String> = ["x-__READ__0000000009", "y-__WRIT__0000000002", "z-__READ__0000000005"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            d.sort_children(&children, WRITE_LOCK_NAME),
            ["y-__WRIT__0000000002", "z-__READ__0000000005", "x-__READ__0000000009"]
        );
    }

    #[test]
    fn kazoo_read_and_write_nodes_sort_together_and_only_writers_block_readers() {
        let layout = Layout::Kazoo;
        let (reader, writer) = ("0f3c__rlock__0000000004", "9a1b__lock__0000000002");
        assert_eq!(layout.key(reader), Some("0000000004"));
        assert_eq!(layout.key(writer), Some("0000000002"));
        assert_eq!(layout.key("9a1b__lock__2"), None);
        assert!(layout.is_writer(writer) && !layout.is_writer(reader));
        assert!(!Layout::Curator.is_writer(writer));
        assert_eq!(layout.tag().len(), 32);
        let d = WriteLockDriver { layout };
        let children: Vec<String> = [reader, writer, "lease_holder"].iter().map(|s| s.to_string()).collect();
        assert_eq!(d.sort_children(&children, KAZOO_WRITE_LOCK_NAME), [writer, reader]);
    }
}
