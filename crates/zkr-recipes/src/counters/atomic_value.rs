//! Curator's `DistributedAtomicValue`: optimistic tries (read with the version, write with it)
//! under a retry policy for lost races, then optionally the same tries holding a lock.

use std::sync::Arc;

use tokio::time::Instant;
use zkr_connection::retry::RetryPolicy;
use zkr_connection::{path, RetryOptions, ZkClient};
use zookeeper_client::{Acls, CreateMode, Stat};

use super::{AtomicStats, AtomicValue, CounterError, PromotedToLock};
use crate::locks::{InterProcessMutex, Wait};

/// What a try writes, computed from the value it read (empty for a missing node).
pub(crate) type MakeValue<'a> = dyn Fn(&[u8]) -> Result<Vec<u8>, CounterError> + Send + Sync + 'a;

/// A value in one node, changed atomically by compare-and-set: Curator's
/// `DistributedAtomicValue`, for raw bytes. [`DistributedAtomicLong`](super::DistributedAtomicLong)
/// and [`DistributedAtomicInteger`](super::DistributedAtomicInteger) are numbers on top of it.
///
/// Every change reads the node with its version and writes it back with that version (or
/// creates it, with missing parents as containers, when it does not exist). A write that loses
/// to another writer (`BadVersion`, `NodeExists`, `NoNode`) is tried again as the retry policy
/// allows: that policy governs only these lost races; connection loss is retried by the
/// manager's own policy inside each ZooKeeper call ([`ZkClient::retry`]). When the tries run
/// out and a [`PromotedToLock`] is set, the value takes that lock and tries again holding it.
/// A missing node reads as empty.
///
/// Cheap to clone.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
/// use std::time::Duration;
/// use zkr_connection::retry::RetryNTimes;
/// use zkr_recipes::counters::DistributedAtomicValue;
///
/// let leader = DistributedAtomicValue::new(&zk, "/app/leader-name", RetryNTimes::new(3, Duration::from_millis(5)))?;
/// let swapped = leader.compare_and_set(b"old", b"new").await?;
/// println!("swapped: {}, the node held {:?}", swapped.succeeded, swapped.pre_value);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedAtomicValue {
    zk: ZkClient,
    path: String,
    retry_policy: Arc<dyn RetryPolicy>,
    promotion: Option<Promotion>,
}

#[derive(Debug, Clone)]
struct Promotion {
    spec: PromotedToLock,
    mutex: InterProcessMutex,
}

/// The tries of one operation so far.
#[derive(Default)]
struct Tries {
    succeeded: bool,
    pre: Vec<u8>,
    post: Option<Vec<u8>>,
    stats: AtomicStats,
}

impl Tries {
    fn into_value(self) -> AtomicValue<Vec<u8>> {
        let post = self.post.unwrap_or_else(|| self.pre.clone());
        AtomicValue { succeeded: self.succeeded, pre_value: self.pre, post_value: post, stats: self.stats }
    }
}

impl DistributedAtomicValue {
    /// A value at node `path`, trying lost races again under `retry_policy` (Curator's
    /// `DistributedAtomicValue(client, path, retryPolicy)`). Nothing is sent.
    ///
    /// # Errors
    /// [`CounterError::InvalidArgument`] for an invalid path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
    /// use std::time::Duration;
    /// use zkr_connection::retry::ExponentialBackoffRetry;
    /// let value = zkr_recipes::counters::DistributedAtomicValue::new(&zk, "/app/v", ExponentialBackoffRetry::new(Duration::from_millis(5), 10))?;
    /// # Ok(()) }
    /// ```
    pub fn new(
        zk: &ZkClient,
        path: &str,
        retry_policy: impl RetryPolicy + 'static,
    ) -> Result<Self, CounterError> {
        crate::errors::check_node_path(zk, path)?;
        Ok(DistributedAtomicValue {
            zk: zk.clone(),
            path: path.to_owned(),
            retry_policy: Arc::new(retry_policy),
            promotion: None,
        })
    }

    /// Falls back to `promotion`'s lock when the optimistic tries run out.
    ///
    /// # Errors
    /// [`CounterError::InvalidArgument`] for an invalid lock path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
    /// use zkr_connection::retry::RetryOneTime;
    /// use zkr_recipes::counters::{DistributedAtomicValue, PromotedToLock};
    /// let value = DistributedAtomicValue::new(&zk, "/app/v", RetryOneTime::new(Default::default()))?
    ///     .promoted_to_lock(PromotedToLock::new("/locks/app-v"))?;
    /// # Ok(()) }
    /// ```
    pub fn promoted_to_lock(mut self, promotion: PromotedToLock) -> Result<Self, CounterError> {
        crate::errors::check_node_path(&self.zk, &promotion.lock_path)?;
        let mutex = InterProcessMutex::new(&self.zk, &promotion.lock_path)
            .map_err(|source| CounterError::Lock { lock_path: promotion.lock_path.clone(), source })?;
        self.promotion = Some(Promotion { spec: promotion, mutex });
        Ok(self)
    }

    /// The node's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(value: zkr_recipes::counters::DistributedAtomicValue) {
    /// println!("counting at {}", value.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The current value (empty when the node does not exist); always `succeeded`.
    ///
    /// # Errors
    /// [`CounterError::Connection`] when ZooKeeper cannot be read.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(value: zkr_recipes::counters::DistributedAtomicValue) -> Result<(), zkr_recipes::counters::CounterError> {
    /// let bytes = value.get().await?.post_value;
    /// # Ok(()) }
    /// ```
    pub async fn get(&self) -> Result<AtomicValue<Vec<u8>>, CounterError> {
        let data = self.read().await?.map(|(data, _)| data).unwrap_or_default();
        Ok(Tries { succeeded: true, pre: data, ..Tries::default() }.into_value())
    }

    /// Sets the value whatever it is, creating the node if needed: Curator's `forceSet` (no
    /// atomicity with other operations).
    ///
    /// # Errors
    /// [`CounterError::InvalidArgument`] for a value over ZooKeeper's limit;
    /// [`CounterError::Connection`] when ZooKeeper cannot be written.
    ///
    /// # Cancel safety
    /// The write may or may not have been applied when the future is dropped; nothing else is
    /// left behind (a created node is the value's own).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(value: zkr_recipes::counters::DistributedAtomicValue) -> Result<(), zkr_recipes::counters::CounterError> {
    /// value.force_set(b"reset").await?;
    /// # Ok(()) }
    /// ```
    pub async fn force_set(&self, value: &[u8]) -> Result<(), CounterError> {
        self.check_data(value)?;
        match self.set_any(value).await {
            Err(e) if e.is_no_node() => {}
            other => return other.map_err(CounterError::from),
        }
        match self.zk.create(&self.path, value, CreateMode::Persistent).await {
            Err(e) if e.is_node_exists() => Ok(self.set_any(value).await?),
            other => other.map(drop).map_err(CounterError::from),
        }
    }

    /// Sets `new` if the node holds exactly `expected`: one read, then a write with the version
    /// read. Never creates the node (a missing node fails).
    ///
    /// # Errors
    /// [`CounterError::InvalidArgument`] for a value over ZooKeeper's limit;
    /// [`CounterError::Indeterminate`] when the write's reply was lost and its retry lost the
    /// race; [`CounterError::Connection`] when ZooKeeper cannot be reached.
    ///
    /// # Cancel safety
    /// The CAS is atomic: dropped after its write was sent, it may or may not have applied.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(value: zkr_recipes::counters::DistributedAtomicValue) -> Result<(), zkr_recipes::counters::CounterError> {
    /// let swapped = value.compare_and_set(b"a", b"b").await?;
    /// if !swapped.succeeded {
    ///     println!("it held {:?}", swapped.pre_value);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn compare_and_set(
        &self,
        expected: &[u8],
        new: &[u8],
    ) -> Result<AtomicValue<Vec<u8>>, CounterError> {
        self.check_data(new)?;
        let mut tries =
            Tries { stats: AtomicStats { optimistic_tries: 1, ..Default::default() }, ..Default::default() };
        let started = Instant::now();
        if let Some((data, stat)) = self.read().await? {
            let matches = data == expected;
            tries.pre = data;
            if matches && self.set_versioned(new, stat.version).await? {
                tries.succeeded = true;
                tries.post = Some(new.to_vec());
            }
        }
        tries.stats.optimistic_time = started.elapsed();
        Ok(tries.into_value())
    }

    /// Sets `new` by compare-and-set, trying again as the policies allow: Curator's `trySet`.
    ///
    /// # Errors
    /// As [`compare_and_set`](Self::compare_and_set), and [`CounterError::Lock`] when the
    /// promotion lock fails.
    ///
    /// # Cancel safety
    /// Each try is an atomic CAS: dropped after a write was sent, the value may or may not
    /// have been set. A promotion lock's node is deleted (in the background if need be).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(value: zkr_recipes::counters::DistributedAtomicValue) -> Result<(), zkr_recipes::counters::CounterError> {
    /// assert!(value.try_set(b"v2").await?.succeeded, "ran out of tries");
    /// # Ok(()) }
    /// ```
    pub async fn try_set(&self, new: &[u8]) -> Result<AtomicValue<Vec<u8>>, CounterError> {
        self.update(&|_| Ok(new.to_vec())).await
    }

    /// Creates the node with `value` unless it exists; whether this call created it.
    ///
    /// # Errors
    /// [`CounterError::InvalidArgument`] for a value over ZooKeeper's limit;
    /// [`CounterError::Indeterminate`] when the create's reply was lost and its retry found
    /// the node; [`CounterError::Connection`] when ZooKeeper cannot be reached.
    ///
    /// # Cancel safety
    /// Dropped after the create was sent, the node may or may not exist (with `value`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(value: zkr_recipes::counters::DistributedAtomicValue) -> Result<(), zkr_recipes::counters::CounterError> {
    /// if value.initialize(b"first").await? {
    ///     println!("we set it up");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn initialize(&self, value: &[u8]) -> Result<bool, CounterError> {
        self.check_data(value)?;
        self.create(value).await
    }

    /// Optimistic tries of `make`, then tries holding the promotion lock if set.
    pub(crate) async fn update(&self, make: &MakeValue<'_>) -> Result<AtomicValue<Vec<u8>>, CounterError> {
        let mut tries = Tries::default();
        self.optimistic(&mut tries, make).await?;
        if let (false, Some(promotion)) = (tries.succeeded, &self.promotion) {
            self.promoted(promotion, &mut tries, make).await?;
        }
        Ok(tries.into_value())
    }

    async fn optimistic(&self, tries: &mut Tries, make: &MakeValue<'_>) -> Result<(), CounterError> {
        let started = Instant::now();
        let outcome =
            self.tries_under(&*self.retry_policy, started, tries, make, |s| &mut s.optimistic_tries).await;
        tries.stats.optimistic_time = started.elapsed();
        outcome
    }

    async fn promoted(
        &self,
        promotion: &Promotion,
        tries: &mut Tries,
        make: &MakeValue<'_>,
    ) -> Result<(), CounterError> {
        let started = Instant::now();
        let outcome = self.under_lock(promotion, started, tries, make).await;
        tries.stats.promoted_time = started.elapsed();
        outcome
    }

    /// Takes the lock (within its timeout) and tries under its policy; the lock is released
    /// whatever happens.
    async fn under_lock(
        &self,
        promotion: &Promotion,
        started: Instant,
        tries: &mut Tries,
        make: &MakeValue<'_>,
    ) -> Result<(), CounterError> {
        let lock_error = |source| CounterError::Lock { lock_path: promotion.spec.lock_path.clone(), source };
        // Held by this call alone: two calls joined in one task take turns too.
        let wait = promotion.spec.timeout.map_or(Wait::Forever, Wait::timeout);
        let guard = promotion.mutex.acquire_alone(wait).await;
        let Some(guard) = guard.map_err(lock_error)? else {
            tracing::debug!(lock = %promotion.spec.lock_path, "promotion lock not acquired in time");
            return Ok(());
        };
        let policy = &*promotion.spec.retry_policy;
        let outcome = self.tries_under(policy, started, tries, make, |s| &mut s.promoted_tries).await;
        if let Err(error) = guard.release().await {
            tracing::warn!(lock = %promotion.spec.lock_path, %error, "releasing the promotion lock failed");
        }
        outcome
    }

    /// Tries until one succeeds or `policy` gives up, counting each try in `count`.
    async fn tries_under(
        &self,
        policy: &dyn RetryPolicy,
        started: Instant,
        tries: &mut Tries,
        make: &MakeValue<'_>,
        count: fn(&mut AtomicStats) -> &mut u32,
    ) -> Result<(), CounterError> {
        let mut retries = 0;
        loop {
            *count(&mut tries.stats) += 1;
            if self.try_once(tries, make).await? {
                tries.succeeded = true;
                return Ok(());
            }
            let Some(sleep) = policy.allow_retry(retries, started.elapsed()) else { return Ok(()) };
            retries += 1;
            if !sleep.is_zero() {
                tokio::time::sleep(sleep).await;
            }
        }
    }

    /// One read and one versioned write (or create); whether it won.
    async fn try_once(&self, tries: &mut Tries, make: &MakeValue<'_>) -> Result<bool, CounterError> {
        let read = self.read().await?;
        let (pre, version) = match read {
            Some((data, stat)) => (data, Some(stat.version)),
            None => (Vec::new(), None),
        };
        let new = make(&pre)?;
        tries.pre = pre;
        self.check_data(&new)?;
        let won = match version {
            Some(version) => self.set_versioned(&new, version).await?,
            None => self.create(&new).await?,
        };
        if won {
            tries.post = Some(new);
        }
        Ok(won)
    }

    /// The node's data and `Stat`, `None` when it does not exist.
    async fn read(&self) -> Result<Option<(Vec<u8>, Stat)>, CounterError> {
        let path = self.path.as_str();
        match self.zk.retry(|s| async move { s.client().get_data(path).await }).await {
            Ok(found) => Ok(Some(found)),
            Err(e) if e.is_no_node() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// A write with `version`; `false` when another writer came first.
    async fn set_versioned(&self, data: &[u8], version: i32) -> Result<bool, CounterError> {
        let path = self.path.as_str();
        let sent = self
            .zk
            .retry_write(RetryOptions::default(), |s| async move {
                s.client().set_data(path, data, Some(version)).await
            })
            .await;
        self.race(sent.result.map(drop), sent.sends)
    }

    /// Creates the node (and missing parents, as containers); `false` when it exists.
    async fn create(&self, data: &[u8]) -> Result<bool, CounterError> {
        let acls = self.zk.acl_for_path(&self.path);
        let options = CreateMode::Persistent.with_acls(Acls::new(&acls));
        let (mut outcome, mut sent) = self.send_create(data, &options).await;
        if outcome.as_ref().is_err_and(|e| e.is_no_node()) {
            // A sure answer: the sends are counted anew after the parents are made.
            self.zk.create_parents(&self.path).await?;
            (outcome, sent) = self.send_create(data, &options).await;
        }
        self.race(outcome, sent)
    }

    /// One create under the retry loop, and how many times it was sent.
    async fn send_create(
        &self,
        data: &[u8],
        options: &zookeeper_client::CreateOptions<'_>,
    ) -> (zkr_connection::Result<()>, u32) {
        let path = self.path.as_str();
        let sent =
            self.zk
                .retry_write(RetryOptions::default(), |s| async move {
                    s.client().create(path, data, options).await
                })
                .await;
        (sent.result.map(drop), sent.sends)
    }

    /// A write whatever the version, none of whose attempts can land after a later write.
    async fn set_any(&self, data: &[u8]) -> zkr_connection::Result<()> {
        self.zk.overwrite(&self.path, data, None).await.map(drop)
    }

    /// A write's outcome: `true` applied, `false` lost a race (see
    /// [`CounterError::after_write`]).
    fn race(&self, outcome: zkr_connection::Result<()>, sent: u32) -> Result<bool, CounterError> {
        CounterError::after_write(&self.path, outcome, sent).map(|done| done.is_some())
    }

    fn check_data(&self, data: &[u8]) -> Result<(), CounterError> {
        Ok(path::validate_data(&self.path, data)?)
    }
}
