//! kazoo's `Counter`.

use zkr_connection::retry::RetryPolicy;
use zkr_connection::ZkClient;

use crate::counters::{AtomicValue, CounterError, DistributedAtomicValue};

/// A number a kazoo counter holds: `i64` (kazoo's `int`) or `f64` (its `float`). Sealed.
///
/// kazoo stores `repr(value)` as ASCII text (`b"42"`, `b"2.5"`); with `support_curator` a
/// 4-byte big-endian integer, as Curator's `SharedCount`.
///
/// # Examples
///
/// ```
/// use zkr_recipes::kazoo::KazooNumber;
/// assert_eq!(KazooNumber::to_text(2.5f64), "2.5");
/// assert_eq!(<i64 as KazooNumber>::from_text("-7"), Some(-7));
/// ```
pub trait KazooNumber: sealed::Sealed + Copy + PartialEq + std::fmt::Debug + Send + Sync + 'static {
    /// What the counter's text holds, for errors: `an integer as text` or `a number as text`.
    const FORMAT: &'static str;

    /// kazoo's text of the value (`repr`): Python reads it back with `int()` or `float()`.
    ///
    /// ```
    /// use zkr_recipes::kazoo::KazooNumber;
    /// assert_eq!(KazooNumber::to_text(3.0f64), "3.0");
    /// ```
    fn to_text(self) -> String;

    /// The value of kazoo's text, `None` when it is not one.
    ///
    /// ```
    /// use zkr_recipes::kazoo::KazooNumber;
    /// assert_eq!(<f64 as KazooNumber>::from_text("1e+16"), Some(1e16));
    /// ```
    fn from_text(text: &str) -> Option<Self>;

    #[doc(hidden)]
    fn add(self, delta: Self) -> Option<Self>;

    #[doc(hidden)]
    fn negated(self) -> Option<Self>;

    #[doc(hidden)]
    fn as_i32(self) -> Option<i32>;

    #[doc(hidden)]
    fn from_i32(value: i32) -> Self;

    #[doc(hidden)]
    fn as_i64(self) -> i64;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i64 {}
    impl Sealed for f64 {}
}

impl KazooNumber for i64 {
    const FORMAT: &'static str = "an integer as text";

    fn to_text(self) -> String {
        self.to_string()
    }

    fn from_text(text: &str) -> Option<Self> {
        text.trim().parse().ok()
    }

    fn add(self, delta: Self) -> Option<Self> {
        self.checked_add(delta)
    }

    fn negated(self) -> Option<Self> {
        self.checked_neg()
    }

    fn as_i32(self) -> Option<i32> {
        i32::try_from(self).ok()
    }

    fn from_i32(value: i32) -> Self {
        value.into()
    }

    fn as_i64(self) -> i64 {
        self
    }
}

impl KazooNumber for f64 {
    const FORMAT: &'static str = "a number as text";

    fn to_text(self) -> String {
        // Rust's `{:?}` of a float always has a point or an exponent, as Python's `repr`, and
        // Python's `float()` reads every form it prints (`1e16`, `inf`, `NaN`).
        format!("{self:?}")
    }

    fn from_text(text: &str) -> Option<Self> {
        text.trim().parse().ok()
    }

    fn add(self, delta: Self) -> Option<Self> {
        Some(self + delta)
    }

    fn negated(self) -> Option<Self> {
        Some(-self)
    }

    fn as_i32(self) -> Option<i32> {
        None
    }

    fn from_i32(value: i32) -> Self {
        value.into()
    }

    #[allow(clippy::cast_possible_truncation)] // for an error message only
    fn as_i64(self) -> i64 {
        self as i64
    }
}

/// A shared counter in kazoo's format: kazoo's `Counter(path, default)`.
///
/// The node holds the value as text (kazoo's `repr`, ASCII); a missing node or one without
/// data counts as `default`. Each change reads the node with its version and writes it back
/// with that version, trying again under the retry policy when another writer came first (as
/// [`DistributedAtomicValue`] does, which this is built on). Python processes using kazoo's
/// `Counter` on the same path, with the same default, share the counter.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
/// use std::time::Duration;
/// use zkr_connection::retry::RetryNTimes;
/// use zkr_recipes::kazoo::Counter;
///
/// let jobs = Counter::new(&zk, "/counters/jobs", 0i64, RetryNTimes::new(10, Duration::from_millis(10)))?;
/// let done = jobs.add(2).await?; // kazoo: counter += 2
/// assert!(done.succeeded);
/// println!("{} -> {}", done.pre_value, done.post_value);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Counter<T: KazooNumber = i64> {
    value: DistributedAtomicValue,
    default: T,
    curator: bool,
}

impl<T: KazooNumber> Counter<T> {
    /// A counter at `path` that reads as `default` until written, trying lost races again
    /// under `retry_policy`. Nothing is sent.
    ///
    /// # Errors
    /// [`CounterError::InvalidArgument`] for an invalid path.
    pub fn new(
        zk: &ZkClient,
        path: &str,
        default: T,
        retry_policy: impl RetryPolicy + 'static,
    ) -> Result<Self, CounterError> {
        Ok(Counter { value: DistributedAtomicValue::new(zk, path, retry_policy)?, default, curator: false })
    }

    /// kazoo's `support_curator=True`: the node holds a 4-byte big-endian integer, as Curator's
    /// `SharedCount` and zkr's [`SharedCount`](crate::counters::SharedCount) and
    /// [`DistributedAtomicInteger`](crate::counters::DistributedAtomicInteger), so Java, Python
    /// and Rust processes share one counter.
    ///
    /// # Errors
    /// [`CounterError::InvalidArgument`] for a float counter or a default outside `i32` (kazoo
    /// refuses a non-integer default too).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
    /// use zkr_connection::retry::RetryOneTime;
    /// let shared = zkr_recipes::kazoo::Counter::new(&zk, "/counters/shared", 0i64, RetryOneTime::new(Default::default()))?
    ///     .support_curator()?;
    /// # Ok(()) }
    /// ```
    pub fn support_curator(mut self) -> Result<Self, CounterError> {
        if self.default.as_i32().is_none() {
            return Err(CounterError::InvalidArgument(format!(
                "{}: a counter in Curator's format holds a 4-byte integer, not {:?}",
                self.value.path(),
                self.default
            )));
        }
        self.curator = true;
        Ok(self)
    }

    /// The counter's path.
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// The current value (kazoo's `counter.value`).
    ///
    /// # Errors
    /// [`CounterError::NotANumber`] for a node that holds something else;
    /// [`CounterError::Connection`] when ZooKeeper cannot be read.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn value(&self) -> Result<T, CounterError> {
        let data = self.value.get().await?.post_value;
        self.decode(&data)
    }

    /// Adds `delta` (kazoo's `counter += delta`): the values before and after, and whether it
    /// was applied before the retry policy ran out.
    ///
    /// # Errors
    /// [`CounterError::Overflow`] when the sum does not fit; as
    /// [`DistributedAtomicValue::try_set`] otherwise.
    ///
    /// # Cancel safety
    /// As [`DistributedAtomicValue::try_set`]: each try is an atomic compare-and-set.
    pub async fn add(&self, delta: T) -> Result<AtomicValue<T>, CounterError> {
        let make = |data: &[u8]| {
            let value = self.decode(data)?;
            let sum = value.add(delta).ok_or_else(|| self.overflow(value, "+", delta))?;
            self.encode(sum)
        };
        self.value.update(&make).await?.try_map(|data| self.decode(&data))
    }

    /// Subtracts `delta` (kazoo's `counter -= delta`).
    ///
    /// # Errors
    /// As [`add`](Self::add).
    ///
    /// # Cancel safety
    /// As [`add`](Self::add).
    pub async fn subtract(&self, delta: T) -> Result<AtomicValue<T>, CounterError> {
        let negated = delta.negated().ok_or_else(|| self.overflow(self.default, "-", delta))?;
        self.add(negated).await
    }

    fn decode(&self, data: &[u8]) -> Result<T, CounterError> {
        if data.is_empty() {
            return Ok(self.default);
        }
        let not_a_number =
            |format| CounterError::NotANumber { path: self.path().to_owned(), data: data.to_vec(), format };
        if self.curator {
            let bytes: [u8; 4] = data.try_into().map_err(|_| not_a_number("a 4-byte integer"))?;
            return Ok(T::from_i32(i32::from_be_bytes(bytes)));
        }
        std::str::from_utf8(data).ok().and_then(T::from_text).ok_or_else(|| not_a_number(T::FORMAT))
    }

    fn encode(&self, value: T) -> Result<Vec<u8>, CounterError> {
        if !self.curator {
            return Ok(value.to_text().into_bytes());
        }
        let int = value.as_i32().ok_or_else(|| self.overflow(value, "as a 4-byte integer", self.default))?;
        Ok(int.to_be_bytes().to_vec())
    }

    fn overflow(&self, value: T, op: &'static str, delta: T) -> CounterError {
        CounterError::Overflow {
            path: self.path().to_owned(),
            value: value.as_i64(),
            op,
            delta: delta.as_i64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn floats_are_written_as_python_writes_them() {
        assert_eq!(1.0f64.to_text(), "1.0");
        assert_eq!(0.1f64.to_text(), "0.1");
        assert_eq!(<f64 as KazooNumber>::from_text("1e+16"), Some(1e16));
        assert_eq!(<f64 as KazooNumber>::from_text("inf"), Some(f64::INFINITY));
        assert_eq!(<i64 as KazooNumber>::from_text("3.0"), None);
        assert_eq!(<i64 as KazooNumber>::from_text("-12"), Some(-12));
    }

    proptest! {
        #[test]
        fn every_value_reads_back(i in any::<i64>(), f in any::<f64>().prop_filter("a number", |f| !f.is_nan())) {
            prop_assert_eq!(<i64 as KazooNumber>::from_text(&i.to_text()), Some(i));
            prop_assert_eq!(<f64 as KazooNumber>::from_text(&f.to_text()), Some(f));
        }
    }
}
