//! Counters and shared values: Curator's `SharedValue`, `SharedCount` and
//! `DistributedAtomicValue`/`Long`/`Integer`, in Curator's node formats, so Java processes
//! share them.
//!
//! Which to use:
//! - [`SharedCount`] (or [`SharedValue`] for bytes): a small shared setting that many processes
//!   read and now and then change (a semaphore's size, a feature level). Every instance holds
//!   the latest value, kept current by a watch, and sees changes as a stream; writes are
//!   unconditional ([`SharedCount::set`]) or versioned ([`SharedCount::try_set`]).
//! - [`DistributedAtomicLong`] (or [`DistributedAtomicInteger`], [`DistributedAtomicValue`]):
//!   a counter that many processes change at once. Every operation reads the node and writes
//!   it back with the version it read (optimistic concurrency), trying again under a retry
//!   policy when another writer came first, and optionally under a lock
//!   ([`PromotedToLock`]) when the optimistic tries run out. Check
//!   [`AtomicValue::succeeded`]: an operation that ran out of tries did nothing.
//! - For unique IDs use [`SegmentIdGenerator`](crate::id::SegmentIdGenerator): it reads and
//!   writes the same 8-byte node as a `DistributedAtomicLong`, a range per write.
//!
//! Formats: a long is 8 bytes big-endian, an integer 4; an atomic value's missing node (or
//! one without data) reads as 0 (empty for bytes), like Curator. A node holding anything else
//! is refused with [`CounterError::CorruptValue`] (Curator throws a `RuntimeException`).
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
//! use std::time::Duration;
//! use zkr_connection::retry::RetryNTimes;
//! use zkr_recipes::counters::DistributedAtomicLong;
//!
//! let visits = DistributedAtomicLong::new(&zk, "/counters/visits", RetryNTimes::new(10, Duration::from_millis(10)))?;
//! let result = visits.increment().await?;
//! if result.succeeded {
//!     println!("{} -> {}", result.pre_value, result.post_value);
//! }
//! # Ok(()) }
//! ```

mod atomic_number;
mod atomic_value;
mod promoted;
mod shared_count;
mod shared_value;

use std::time::Duration;
use zkr_connection::Classify as _;

pub use crate::codec::number::CounterValue;
pub use atomic_number::{DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicNumber};
pub use atomic_value::DistributedAtomicValue;
pub use promoted::PromotedToLock;
pub use shared_count::SharedCount;
pub use shared_value::SharedValue;

/// What went wrong with a counter or a shared value.
///
/// A CAS that lost to another writer is no error: the operation says so with
/// [`AtomicValue::succeeded`] or `try_set`'s `false`.
///
/// # Examples
///
/// ```no_run
/// # async fn f(counter: zkr_recipes::counters::DistributedAtomicLong) {
/// use zkr_recipes::counters::CounterError;
///
/// match counter.increment().await {
///     Ok(done) if done.succeeded => println!("now {}", done.post_value),
///     Ok(_) => println!("lost every race; try later"),
///     Err(CounterError::CorruptValue { data, .. }) => println!("not a counter: {data:?}"),
///     Err(CounterError::Indeterminate { .. }) => println!("may or may not have counted"),
///     Err(other) => println!("{other}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CounterError {
    /// A bad path or value: nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The node holds data of another width than the counter's (another program wrote it).
    #[error("corrupted data for node {path:?}: {} is {} bytes, not {expected}", crate::codec::number::hex(data), data.len())]
    CorruptValue {
        /// The node.
        path: String,
        /// What it holds.
        data: Vec<u8>,
        /// The counter's width in bytes (8 for a long, 4 for an integer).
        expected: usize,
    },
    /// A kazoo counter's node holds something other than a number in the counter's format
    /// ([`kazoo::Counter`](crate::kazoo::Counter)).
    #[error("the node {path:?} holds {}, not {format}", crate::codec::number::hex(data))]
    NotANumber {
        /// The node.
        path: String,
        /// What it holds.
        data: Vec<u8>,
        /// The format expected: `an integer as text`, `a number as text`, `a 4-byte integer`.
        format: &'static str,
    },
    /// The operation's result does not fit the counter's type (an `add` past `i64::MAX`);
    /// nothing was written. (Curator's Java arithmetic wraps around instead.)
    #[error("{path}: {value} {op} {delta} overflows")]
    Overflow {
        /// The node.
        path: String,
        /// The value read.
        value: i64,
        /// `+` or `-`.
        op: &'static str,
        /// The operand.
        delta: i64,
    },
    /// A write was sent and its outcome is unknown: its reply was lost and its retry found
    /// the node changed (which our own first write would also explain), or the retry policy,
    /// the deadline or the session ended after it was sent. It may or may not have been
    /// applied: never do it again blindly. (Curator counts a changed node as a lost race and
    /// applies the operation again, so an `add` may count twice.)
    #[error("the write to {path} may or may not have been applied")]
    Indeterminate {
        /// The node.
        path: String,
        /// The failure after the write was sent; `None` when a retry found the node changed.
        #[source]
        source: Option<zkr_connection::Error>,
    },
    /// A shared value was used before [`SharedValue::start`] (or started twice).
    #[error("the shared value {path} is {state}")]
    State {
        /// The node.
        path: String,
        /// `not started`, `already started` or `closed`.
        state: &'static str,
    },
    /// The lock of a [`PromotedToLock`] failed (not its timeout: that ends the operation
    /// without success).
    #[error("the promotion lock {lock_path} failed")]
    Lock {
        /// The lock's path.
        lock_path: String,
        /// Why.
        #[source]
        source: crate::locks::LockError,
    },
    /// A ZooKeeper operation failed: the retry policy gave up, a deadline passed, the session
    /// expired, the manager is closed, or an answer such as `NoAuth`.
    #[error(transparent)]
    Connection(zkr_connection::Error),
}

crate::errors::from_connection!(CounterError);

impl CounterError {
    /// A versioned write's or a create's outcome, sent `sent` times: `Some` applied, `None` a
    /// race lost for sure (another writer came first, on the first send). A race "lost" after
    /// a resend, or a fault after a send, may be our own write: [`Indeterminate`](Self::Indeterminate).
    pub(crate) fn after_write<T>(
        path: &str,
        outcome: zkr_connection::Result<T>,
        sent: u32,
    ) -> Result<Option<T>, CounterError> {
        let indeterminate = |source| CounterError::Indeterminate { path: path.to_owned(), source };
        match outcome {
            Ok(done) => Ok(Some(done)),
            Err(e) if e.is_bad_version() || e.is_node_exists() || e.is_no_node() => match sent {
                0 | 1 => Ok(None),
                _ => Err(indeterminate(None)),
            },
            Err(e) if sent > 0 && e.is_ambiguous() => Err(indeterminate(Some(e))),
            Err(e) => Err(e.into()),
        }
    }

    fn corrupt(path: &str, wrong: crate::codec::number::WrongLength) -> Self {
        CounterError::CorruptValue { path: path.to_owned(), data: wrong.data, expected: wrong.expected }
    }
}

impl zkr_connection::Classify for CounterError {
    /// What the error means to the caller ([`ErrorKind`](zkr_connection::ErrorKind)), as for every family.
    fn kind(&self) -> zkr_connection::ErrorKind {
        match self {
            CounterError::Connection(e) => e.kind(),
            CounterError::Lock { source, .. } => source.kind(),
            CounterError::InvalidArgument(_) => zkr_connection::ErrorKind::Usage,
            CounterError::CorruptValue { .. } | CounterError::NotANumber { .. } => {
                zkr_connection::ErrorKind::Corrupt
            }
            CounterError::Indeterminate { .. } => zkr_connection::ErrorKind::Indeterminate,
            CounterError::State { .. } => zkr_connection::ErrorKind::Closed,
            CounterError::Overflow { .. } => zkr_connection::ErrorKind::Other,
        }
    }

    /// May the failed operation have been applied? True for
    /// [`Indeterminate`](Self::Indeterminate) (and a connection failure that leaves a write
    /// unknown): the one rule queues, lock guards and counters share, so that a caller never
    /// retries a write that may have counted.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::counters::CounterError;
    /// use zkr_recipes::Classify;
    /// let unknown = CounterError::Indeterminate { path: "/n".into(), source: None };
    /// assert!(unknown.is_ambiguous());
    /// assert!(!CounterError::InvalidArgument("bad".into()).is_ambiguous());
    /// ```
    fn is_ambiguous(&self) -> bool {
        match self {
            CounterError::Indeterminate { .. } => true,
            CounterError::Lock { source, .. } => source.is_ambiguous(),
            CounterError::Connection(e) => e.is_ambiguous(),
            _ => false,
        }
    }
}

/// A value with the node version it was read at: what a versioned write
/// ([`SharedValue::try_set`]) compares against.
///
/// # Examples
///
/// ```no_run
/// # async fn f(count: zkr_recipes::counters::SharedCount) -> Result<(), zkr_recipes::counters::CounterError> {
/// let current = count.get_versioned()?;
/// println!("{} at version {}", current.value, current.version);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedValue<T> {
    /// The value.
    pub value: T,
    /// The node's data version (`Stat.version`); -1 before the first read.
    pub version: i32,
    /// The zxid of the write that made this version (`Stat.mzxid`); -1 before the first read.
    zxid: i64,
}

impl<T> VersionedValue<T> {
    /// The zxid of the write that made this version (`Stat.mzxid`); -1 before the first read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(value: zkr_recipes::counters::SharedValue) {
    /// println!("written at zxid {:#x}", value.get_versioned().zxid());
    /// # }
    /// ```
    pub fn zxid(&self) -> i64 {
        self.zxid
    }

    fn map<U>(self, f: impl FnOnce(T) -> U) -> VersionedValue<U> {
        VersionedValue { value: f(self.value), version: self.version, zxid: self.zxid }
    }
}

/// What an atomic operation did: Curator's `AtomicValue`.
///
/// **Check [`succeeded`](Self::succeeded).** An operation that ran out of tries (every try
/// lost to another writer) changed nothing.
///
/// # Examples
///
/// ```no_run
/// # async fn f(counter: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
/// let added = counter.add(10).await?;
/// assert!(!added.succeeded || added.post_value == added.pre_value + 10);
/// println!("{} tries", added.stats.optimistic_tries + added.stats.promoted_tries);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AtomicValue<T> {
    /// Whether the operation was applied.
    pub succeeded: bool,
    /// The value before it (of its last try): 0 or empty for a missing node.
    pub pre_value: T,
    /// The value after it; when it did not succeed, the value read (as `pre_value`).
    pub post_value: T,
    /// How many tries it took, and how long.
    pub stats: AtomicStats,
}

impl<T> AtomicValue<T> {
    pub(crate) fn try_map<U, E>(self, mut f: impl FnMut(T) -> Result<U, E>) -> Result<AtomicValue<U>, E> {
        Ok(AtomicValue {
            succeeded: self.succeeded,
            pre_value: f(self.pre_value)?,
            post_value: f(self.post_value)?,
            stats: self.stats,
        })
    }
}

/// How an atomic operation went: Curator's `AtomicStats`.
///
/// # Examples
///
/// ```no_run
/// # async fn f(counter: zkr_recipes::counters::DistributedAtomicLong) -> Result<(), zkr_recipes::counters::CounterError> {
/// let stats = counter.increment().await?.stats;
/// println!("{} optimistic tries in {:?}, {} under the lock", stats.optimistic_tries, stats.optimistic_time, stats.promoted_tries);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AtomicStats {
    /// Optimistic tries (read, then a versioned write).
    pub optimistic_tries: u32,
    /// Tries made holding the [`PromotedToLock`] lock.
    pub promoted_tries: u32,
    /// Time spent in the optimistic tries.
    pub optimistic_time: Duration,
    /// Time spent promoted: waiting for the lock and trying under it.
    pub promoted_time: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_node_and_keep_causes_apart() {
        let wrong = crate::codec::number::WrongLength { data: b"foo".to_vec(), expected: 8 };
        let corrupt = CounterError::corrupt("/c", wrong);
        assert_eq!(
            corrupt.to_string(),
            r#"corrupted data for node "/c": [0x66, 0x6f, 0x6f] is 3 bytes, not 8"#
        );
        let source = crate::locks::LockError::Connection(zkr_connection::Error::Closed);
        let lock = CounterError::Lock { lock_path: "/l".into(), source };
        assert_eq!(lock.to_string(), "the promotion lock /l failed");
        let cause = std::error::Error::source(&lock).map(ToString::to_string);
        assert_eq!(cause.as_deref(), Some("the ZooKeeper connection manager is closed"));
        let bad = CounterError::from(zkr_connection::path::validate_path("a/b").unwrap_err());
        assert_eq!(bad.to_string(), r#"invalid argument: invalid path "a/b": the path must start with '/'"#);
    }

    #[test]
    fn a_failed_operation_reports_the_value_it_read() {
        let value = AtomicValue {
            succeeded: false,
            pre_value: vec![1],
            post_value: vec![1],
            stats: AtomicStats::default(),
        };
        let mapped = value.try_map(|v| Ok::<_, ()>(v.len())).unwrap();
        assert_eq!((mapped.pre_value, mapped.post_value, mapped.succeeded), (1, 1, false));
        let versioned = VersionedValue { value: 3, version: 2, zxid: 9 }.map(|v| v * 2);
        assert_eq!((versioned.value, versioned.version, versioned.zxid()), (6, 2, 9));
    }
}
