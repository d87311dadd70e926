//! Curator's `DistributedAtomicLong` and `DistributedAtomicInteger`: numbers on a
//! [`DistributedAtomicValue`].

use std::marker::PhantomData;

use zkr_connection::retry::RetryPolicy;
use zkr_connection::ZkClient;

use super::{AtomicValue, CounterError, DistributedAtomicValue, PromotedToLock};
use crate::codec::number::{decode_or_zero, CounterValue};

/// A counter in one node, changed atomically: Curator's `DistributedAtomicLong` (`i64`, 8 bytes
/// big-endian) or `DistributedAtomicInteger` (`i32`, 4 bytes), with the same node format, so
/// Java processes count on the same node.
///
/// Each change is a [`DistributedAtomicValue`] compare-and-set (see there for the tries and
/// the promotion to a lock). A missing node (or one without data) reads as 0; a node of
/// another width fails with [`CounterError::CorruptValue`]; a result past the type's range
/// fails with [`CounterError::Overflow`] and writes nothing. **Check
/// [`AtomicValue::succeeded`].**
///
/// Cheap to clone.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
/// use std::time::Duration;
/// use zkr_connection::retry::ExponentialBackoffRetry;
/// use zkr_recipes::counters::DistributedAtomicInteger;
///
/// let seats = DistributedAtomicInteger::new(&zk, "/counters/seats", ExponentialBackoffRetry::new(Duration::from_millis(5), 10))?;
/// seats.initialize(100).await?;
/// let taken = seats.decrement().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedAtomicNumber<T> {
    value: DistributedAtomicValue,
    number: PhantomData<fn() -> T>,
}

/// Curator's `DistributedAtomicLong`: an `i64` counter, 8 bytes big-endian. See
/// [`DistributedAtomicNumber`].
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
/// use zkr_connection::retry::RetryNTimes;
/// let hits = zkr_recipes::counters::DistributedAtomicLong::new(&zk, "/counters/hits", RetryNTimes::new(20, Default::default()))?;
/// assert!(hits.increment().await?.succeeded);
/// # Ok(()) }
/// ```
pub type DistributedAtomicLong = DistributedAtomicNumber<i64>;

/// Curator's `DistributedAtomicInteger`: an `i32` counter, 4 bytes big-endian. See
/// [`DistributedAtomicNumber`].
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
/// use zkr_connection::retry::RetryNTimes;
/// let level = zkr_recipes::counters::DistributedAtomicInteger::new(&zk, "/counters/level", RetryNTimes::new(20, Default::default()))?;
/// let now = level.get().await?.post_value;
/// # Ok(()) }
/// ```
pub type DistributedAtomicInteger = DistributedAtomicNumber<i32>;

impl<T: CounterValue + Into<i64>> DistributedAtomicNumber<T> {
    /// A counter at node `path`, trying lost races again under `retry_policy`. Nothing is sent.
    ///
    /// # Errors
    /// [`CounterError::InvalidArgument`] for an invalid path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
    /// use zkr_connection::retry::RetryNTimes;
    /// let n = zkr_recipes::counters::DistributedAtomicLong::new(&zk, "/counters/n", RetryNTimes::new(5, Default::default()))?;
    /// # Ok(()) }
    /// ```
    pub fn new(
        zk: &ZkClient,
        path: &str,
        retry_policy: impl RetryPolicy + 'static,
    ) -> Result<Self, CounterError> {
        Ok(DistributedAtomicNumber {
            value: DistributedAtomicValue::new(zk, path, retry_policy)?,
            number: PhantomData,
        })
    }

    /// Falls back to `promotion`'s lock when the optimistic tries run out (see
    /// [`PromotedToLock`]).
    ///
    /// # Errors
    /// [`CounterError::InvalidArgument`] for an invalid lock path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
    /// use zkr_connection::retry::RetryNTimes;
    /// use zkr_recipes::counters::{DistributedAtomicLong, PromotedToLock};
    /// let n = DistributedAtomicLong::new(&zk, "/counters/n", RetryNTimes::new(0, Default::default()))?
    ///     .promoted_to_lock(PromotedToLock::new("/locks/counters-n"))?;
    /// # Ok(()) }
    /// ```
    pub fn promoted_to_lock(self, promotion: PromotedToLock) -> Result<Self, CounterError> {
        Ok(DistributedAtomicNumber { value: self.value.promoted_to_lock(promotion)?, number: PhantomData })
    }

    /// The node's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(counter: zkr_recipes::counters::DistributedAtomicLong) {
    /// println!("counting at {}", counter.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// The current value (0 when the node does not exist); always `succeeded`.
    ///
    /// # Errors
    /// [`CounterError::CorruptValue`] for a node of another width; [`CounterError::Connection`]
    /// when ZooKeeper cannot be read.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(n: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
    /// println!("{}", n.get().await?.post_value);
    /// # Ok(()) }
    /// ```
    pub async fn get(&self) -> Result<AtomicValue<T>, CounterError> {
        self.decode(self.value.get().await?)
    }

    /// Sets the value whatever it is: Curator's `forceSet`.
    ///
    /// # Errors
    /// [`CounterError::Connection`] when ZooKeeper cannot be written.
    ///
    /// # Cancel safety
    /// The write may or may not have been applied when the future is dropped.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(n: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
    /// n.force_set(0).await?;
    /// # Ok(()) }
    /// ```
    pub async fn force_set(&self, value: T) -> Result<(), CounterError> {
        self.value.force_set(&value.to_bytes()).await
    }

    /// Sets `new` if the node holds `expected` (compared as stored bytes, as Curator does: a
    /// node without data does not match 0). Never creates the node.
    ///
    /// # Errors
    /// As [`get`](Self::get), and [`CounterError::Indeterminate`] when the write's reply was
    /// lost and its retry lost the race.
    ///
    /// # Cancel safety
    /// The CAS is atomic: dropped after its write was sent, it may or may not have applied.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(n: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
    /// let swapped = n.compare_and_set(10, 11).await?;
    /// if !swapped.succeeded {
    ///     println!("it was {}", swapped.pre_value);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn compare_and_set(&self, expected: T, new: T) -> Result<AtomicValue<T>, CounterError> {
        self.decode(self.value.compare_and_set(&expected.to_bytes(), &new.to_bytes()).await?)
    }

    /// Sets `new` by compare-and-set, trying again as the policies allow: Curator's `trySet`.
    ///
    /// # Errors
    /// As [`add`](Self::add).
    ///
    /// # Cancel safety
    /// As [`add`](Self::add).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(n: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
    /// n.try_set(42).await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_set(&self, new: T) -> Result<AtomicValue<T>, CounterError> {
        let path = self.path();
        let make = move |previous: &[u8]| {
            // A corrupt node is refused rather than overwritten.
            decode_or_zero::<T>(previous).map_err(|wrong| CounterError::corrupt(path, wrong))?;
            Ok(new.to_bytes())
        };
        self.decode(self.value.update(&make).await?)
    }

    /// Creates the node with `value` unless it exists; whether this call created it.
    ///
    /// # Errors
    /// [`CounterError::Indeterminate`] when the create's reply was lost and its retry found
    /// the node; [`CounterError::Connection`] when ZooKeeper cannot be reached.
    ///
    /// # Cancel safety
    /// Dropped after the create was sent, the node may or may not exist.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(n: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
    /// n.initialize(1000).await?;
    /// # Ok(()) }
    /// ```
    pub async fn initialize(&self, value: T) -> Result<bool, CounterError> {
        self.value.initialize(&value.to_bytes()).await
    }

    /// Adds 1.
    ///
    /// # Errors
    /// As [`add`](Self::add).
    ///
    /// # Cancel safety
    /// As [`add`](Self::add).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(n: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
    /// let ticket = n.increment().await?.post_value;
    /// # Ok(()) }
    /// ```
    pub async fn increment(&self) -> Result<AtomicValue<T>, CounterError> {
        self.add(T::one()).await
    }

    /// Subtracts 1.
    ///
    /// # Errors
    /// As [`add`](Self::add).
    ///
    /// # Cancel safety
    /// As [`add`](Self::add).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(n: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
    /// n.decrement().await?;
    /// # Ok(()) }
    /// ```
    pub async fn decrement(&self) -> Result<AtomicValue<T>, CounterError> {
        self.subtract(T::one()).await
    }

    /// Adds `delta` by compare-and-set, trying again as the policies allow.
    ///
    /// # Errors
    /// [`CounterError::CorruptValue`] for a node of another width; [`CounterError::Overflow`]
    /// when the sum leaves the type's range; [`CounterError::Indeterminate`] when a write's
    /// reply was lost and its retry lost the race; [`CounterError::Lock`] when the promotion
    /// lock fails; [`CounterError::Connection`] when ZooKeeper cannot be reached.
    ///
    /// # Cancel safety
    /// Each try is an atomic CAS: dropped after a write was sent, the add may or may not have
    /// been applied (once at most). A promotion lock's node is deleted (in the background if
    /// need be).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(n: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
    /// let added = n.add(5).await?;
    /// assert!(added.succeeded, "gave up after {} tries", added.stats.optimistic_tries);
    /// # Ok(()) }
    /// ```
    pub async fn add(&self, delta: T) -> Result<AtomicValue<T>, CounterError> {
        self.change(delta, "+", T::checked_add).await
    }

    /// Subtracts `delta`.
    ///
    /// # Errors
    /// As [`add`](Self::add).
    ///
    /// # Cancel safety
    /// As [`add`](Self::add).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(n: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
    /// n.subtract(5).await?;
    /// # Ok(()) }
    /// ```
    pub async fn subtract(&self, delta: T) -> Result<AtomicValue<T>, CounterError> {
        self.change(delta, "-", T::checked_sub).await
    }

    async fn change(
        &self,
        delta: T,
        op: &'static str,
        apply: fn(T, T) -> Option<T>,
    ) -> Result<AtomicValue<T>, CounterError> {
        let path = self.path();
        let make = move |previous: &[u8]| {
            let value = decode_or_zero::<T>(previous).map_err(|wrong| CounterError::corrupt(path, wrong))?;
            let overflow = || CounterError::Overflow {
                path: path.to_owned(),
                value: value.into(),
                op,
                delta: delta.into(),
            };
            Ok(apply(value, delta).ok_or_else(overflow)?.to_bytes())
        };
        self.decode(self.value.update(&make).await?)
    }

    fn decode(&self, value: AtomicValue<Vec<u8>>) -> Result<AtomicValue<T>, CounterError> {
        value.try_map(|data| decode_or_zero(&data).map_err(|wrong| CounterError::corrupt(self.path(), wrong)))
    }
}
