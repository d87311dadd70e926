//! Curator's `SharedCount`: a [`SharedValue`] holding an `i32`, 4 bytes big-endian.

use futures::{Stream, StreamExt as _};
use zkr_connection::ZkClient;

use super::{CounterError, SharedValue, VersionedValue};
use crate::codec::number::{decode_exact, CounterValue};

/// A shared `i32` in one node: Curator's `SharedCount` (4 bytes big-endian, Curator's format,
/// so Java processes share it). Every instance holds the latest count, kept current by a watch
/// (resynced after a reconnect and after a session expiry), and offers its changes as a stream.
///
/// A [`SharedValue`] underneath; see there for the write semantics. A node that does not hold
/// exactly 4 bytes reads as [`CounterError::CorruptValue`].
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
/// use futures::StreamExt;
/// use zkr_recipes::counters::SharedCount;
///
/// let max_workers = SharedCount::start(&zk, "/app/max-workers", 4).await?;
/// let seen = max_workers.get_versioned()?;
/// if max_workers.try_set(&seen, seen.value + 1).await? {
///     println!("raised to {}", seen.value + 1);
/// }
/// let mut changes = max_workers.changes();
/// while let Some(count) = changes.next().await {
///     println!("max workers: {}", count?.value);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SharedCount {
    value: SharedValue,
}

impl SharedCount {
    /// A shared count at node `path`: creates the node with `seed` unless it exists, reads it,
    /// starts watching it and returns the running count.
    ///
    /// # Errors
    /// As [`SharedValue::start`].
    ///
    /// # Cancel safety
    /// As [`SharedValue::start`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
    /// let count = zkr_recipes::counters::SharedCount::start(&zk, "/app/max-workers", 4).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(zk: &ZkClient, path: &str, seed: i32) -> Result<Self, CounterError> {
        Ok(SharedCount { value: SharedValue::start(zk, path, seed.to_bytes()).await? })
    }

    /// The node's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(count: zkr_recipes::counters::SharedCount) {
    /// println!("sharing {}", count.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// The latest count this instance saw.
    ///
    /// # Errors
    /// [`CounterError::CorruptValue`] when the node does not hold 4 bytes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(count: zkr_recipes::counters::SharedCount) -> Result<(), zkr_recipes::counters::CounterError> {
    /// println!("{} workers", count.get()?);
    /// # Ok(()) }
    /// ```
    pub fn get(&self) -> Result<i32, CounterError> {
        Ok(self.get_versioned()?.value)
    }

    /// The latest count with its version, for [`try_set`](Self::try_set).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(count: zkr_recipes::counters::SharedCount) -> Result<(), zkr_recipes::counters::CounterError> {
    /// let seen = count.get_versioned()?;
    /// println!("{} at version {}", seen.value, seen.version);
    /// # Ok(()) }
    /// ```
    pub fn get_versioned(&self) -> Result<VersionedValue<i32>, CounterError> {
        decode(self.path(), self.value.get_versioned())
    }

    /// Every newer count this instance sees from now on, in order, skipping to the latest
    /// when counts change faster than the stream is polled. Ends when the `SharedCount` is
    /// dropped.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(count: zkr_recipes::counters::SharedCount) -> Result<(), zkr_recipes::counters::CounterError> {
    /// use futures::StreamExt;
    /// let mut changes = count.changes();
    /// while let Some(next) = changes.next().await {
    ///     println!("now {}", next?.value);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn changes(
        &self,
    ) -> impl Stream<Item = Result<VersionedValue<i32>, CounterError>> + Send + Unpin + 'static {
        let path = self.path().to_owned();
        self.value.changes().map(move |value| decode(&path, value))
    }

    /// Writes `count` whatever the node holds: Curator's `setCount`.
    ///
    /// # Errors
    /// As [`SharedValue::set`].
    ///
    /// # Cancel safety
    /// As [`SharedValue::set`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(count: zkr_recipes::counters::SharedCount) -> Result<(), zkr_recipes::counters::CounterError> {
    /// count.set(8).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set(&self, count: i32) -> Result<(), CounterError> {
        self.value.set(&count.to_bytes()).await
    }

    /// Writes `count` only if the node is still at `previous` (from
    /// [`get_versioned`](Self::get_versioned)): Curator's `trySetCount`. `false` when another
    /// writer came first.
    ///
    /// # Errors
    /// As [`SharedValue::try_set`].
    ///
    /// # Cancel safety
    /// As [`SharedValue::try_set`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(count: zkr_recipes::counters::SharedCount) -> Result<(), zkr_recipes::counters::CounterError> {
    /// let seen = count.get_versioned()?;
    /// let raised = count.try_set(&seen, seen.value * 2).await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_set(&self, previous: &VersionedValue<i32>, count: i32) -> Result<bool, CounterError> {
        let previous = previous.clone().map(CounterValue::to_bytes);
        self.value.try_set(&previous, &count.to_bytes()).await
    }

    /// Stops watching; the node stays.
    ///
    /// # Cancel safety
    /// As [`SharedValue::close`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(count: zkr_recipes::counters::SharedCount) {
    /// count.close().await;
    /// # }
    /// ```
    pub async fn close(&self) {
        self.value.close().await;
    }
}

fn decode(path: &str, value: VersionedValue<Vec<u8>>) -> Result<VersionedValue<i32>, CounterError> {
    let count = decode_exact::<i32>(&value.value).map_err(|wrong| CounterError::corrupt(path, wrong))?;
    Ok(value.map(|_| count))
}
