//! Curator's `SharedValue`: a node's bytes held by every instance, kept current by the watch
//! engine, with unconditional and versioned writes.

use std::sync::Arc;

use futures::Stream;
use parking_lot::Mutex;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use zkr_connection::SessionClient;
use zkr_connection::{path, RetryOptions, Session, ZkClient};
use zookeeper_client::{CreateMode, EventType, OneshotWatcher, Stat, WatchedEvent};

use super::{CounterError, VersionedValue};
use crate::watch::{Consumer, Flow, Sessions, Watch, WatchMode, ZkResult};

/// A shared value in one node: Curator's `SharedValue`. Every instance holds the latest value,
/// kept current by a watch (resynced after a reconnect and on a new session after an expiry),
/// and offers its changes as a stream.
///
/// [`start`](Self::start) creates the node with the seed if it does not exist, reads and
/// watches it, and returns the running value. [`set`](Self::set) writes unconditionally; [`try_set`](Self::try_set) only if the
/// node is still at the version this instance last saw (Curator's `trySetValue`). A deleted
/// node keeps its last value here, as in Curator. For a small setting that processes share (a
/// size, a level), not for a hot counter: use [`DistributedAtomicLong`](super::DistributedAtomicLong).
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
/// use futures::StreamExt;
/// use zkr_recipes::counters::SharedValue;
///
/// let mode = SharedValue::start(&zk, "/app/mode", b"normal".to_vec()).await?;
/// let mut changes = mode.changes();
/// mode.set(b"maintenance").await?;
/// while let Some(value) = changes.next().await {
///     println!("mode is {:?} (version {})", value.value, value.version);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SharedValue {
    shared: Arc<Shared>,
    /// The engine's stop and task; `None` once closed.
    running: Mutex<Option<(oneshot::Sender<()>, JoinHandle<()>)>>,
}

/// What the handle and the engine share: the latest value.
#[derive(Debug)]
struct Shared {
    zk: ZkClient,
    path: String,
    current: watch::Sender<VersionedValue<Vec<u8>>>,
}

impl Shared {
    /// Takes a read or a write's result if it is newer (by `mzxid`) than what is held.
    fn update(&self, data: Vec<u8>, stat: &Stat) {
        self.current.send_if_modified(|current| {
            if current.zxid >= stat.mzxid {
                return false;
            }
            *current = VersionedValue { value: data, version: stat.version, zxid: stat.mzxid };
            true
        });
    }

    /// Reads the node again (after a lost race), keeping what is newer.
    async fn refresh(&self) -> Result<(), CounterError> {
        let path = self.path.as_str();
        match self.zk.retry(|s| async move { s.client().get_data(path).await }).await {
            Ok((data, stat)) => self.update(data, &stat),
            Err(e) if e.is_no_node() => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }
}

impl SharedValue {
    /// A shared value at node `path`: creates the node with `seed` unless it exists (missing
    /// parents as containers), reads it, starts watching it and returns the running value
    /// (Curator's constructor and `start()`).
    ///
    /// # Errors
    /// [`CounterError::InvalidArgument`] for an invalid path or a seed over ZooKeeper's limit;
    /// [`CounterError::Connection`] when ZooKeeper cannot be reached in the connection timeout
    /// or answers an error.
    ///
    /// # Cancel safety
    /// Dropped, it leaves no watch or task running; the node may have been created with the
    /// seed (as a finished start would have).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::counters::CounterError> {
    /// let value = zkr_recipes::counters::SharedValue::start(&zk, "/app/mode", b"normal".to_vec()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(zk: &ZkClient, path: &str, seed: impl Into<Vec<u8>>) -> Result<Self, CounterError> {
        let seed = seed.into();
        crate::errors::check_node_path(zk, path)?;
        path::validate_data(path, &seed)?;
        let unread = VersionedValue { value: seed.clone(), version: -1, zxid: -1 };
        let shared =
            Arc::new(Shared { zk: zk.clone(), path: path.to_owned(), current: watch::channel(unread).0 });
        zk.create_if_absent(path, &seed, CreateMode::Persistent).await?;
        let follower = Follower { shared: shared.clone() };
        let mut engine = Watch::new(zk, path, false, WatchMode::Auto, follower);
        let established = engine.first_sync(zk.connection_timeout()).await?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(engine.run(Sessions::Follow, Some(established), async move {
            let _ = stopped.await;
        }));
        Ok(SharedValue { shared, running: Mutex::new(Some((stop, task))) })
    }

    /// The node's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(value: zkr_recipes::counters::SharedValue) {
    /// println!("sharing {}", value.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The latest value this instance saw.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(value: zkr_recipes::counters::SharedValue) {
    /// println!("{}", String::from_utf8_lossy(&value.get()));
    /// # }
    /// ```
    pub fn get(&self) -> Vec<u8> {
        self.shared.current.borrow().value.clone()
    }

    /// The latest value with its version, for [`try_set`](Self::try_set).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(value: zkr_recipes::counters::SharedValue) {
    /// let seen = value.get_versioned();
    /// println!("{:?} at version {}", seen.value, seen.version);
    /// # }
    /// ```
    pub fn get_versioned(&self) -> VersionedValue<Vec<u8>> {
        self.shared.current.borrow().clone()
    }

    /// Every newer value this instance sees from now on (its own writes too), in order. A
    /// value replaced before the stream was polled is skipped: the stream always goes to the
    /// latest. It ends when the `SharedValue` is dropped.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(value: zkr_recipes::counters::SharedValue) {
    /// use futures::StreamExt;
    /// let mut changes = value.changes();
    /// while let Some(next) = changes.next().await {
    ///     println!("now {:?}", next.value);
    /// }
    /// # }
    /// ```
    pub fn changes(&self) -> impl Stream<Item = VersionedValue<Vec<u8>>> + Send + Unpin + 'static {
        tokio_stream::wrappers::WatchStream::from_changes(self.shared.current.subscribe())
    }

    /// Writes `value` whatever the node holds: Curator's `setValue`.
    ///
    /// # Errors
    /// [`CounterError::State`] after [`close`](Self::close);
    /// [`CounterError::InvalidArgument`] for a value over ZooKeeper's limit;
    /// [`CounterError::Connection`] when ZooKeeper cannot be written (`NoNode` when the node
    /// was deleted).
    ///
    /// # Cancel safety
    /// The write may or may not have been applied when the future is dropped.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(value: zkr_recipes::counters::SharedValue) -> Result<(), zkr_recipes::counters::CounterError> {
    /// value.set(b"maintenance").await?;
    /// # Ok(()) }
    /// ```
    pub async fn set(&self, value: &[u8]) -> Result<(), CounterError> {
        self.expect_open()?;
        path::validate_data(&self.shared.path, value)?;
        // At the version last seen (read when unknown): no attempt can land after a later write.
        let seen = Some(self.get_versioned().version).filter(|version| *version >= 0);
        let stat = self.shared.zk.overwrite(&self.shared.path, value, seen).await?;
        self.shared.update(value.to_vec(), &stat);
        Ok(())
    }

    /// Writes `value` only if the node is still at `previous`, the latest value this instance
    /// saw (from [`get_versioned`](Self::get_versioned)): Curator's `trySetValue`. `false` when
    /// `previous` is no longer the latest here, or another writer came first (the value is then
    /// read again).
    ///
    /// # Errors
    /// [`CounterError::State`] after [`close`](Self::close) (or with a `previous` that was
    /// never read); [`CounterError::InvalidArgument`] for a value over ZooKeeper's limit;
    /// [`CounterError::Indeterminate`] when the write's reply was lost and its retry lost the
    /// race; [`CounterError::Connection`] when ZooKeeper cannot be reached.
    ///
    /// # Cancel safety
    /// The versioned write is atomic: dropped after it was sent, it may or may not have
    /// applied.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(value: zkr_recipes::counters::SharedValue) -> Result<(), zkr_recipes::counters::CounterError> {
    /// let seen = value.get_versioned();
    /// if !value.try_set(&seen, b"next").await? {
    ///     println!("changed meanwhile to {:?}", value.get());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_set(
        &self,
        previous: &VersionedValue<Vec<u8>>,
        value: &[u8],
    ) -> Result<bool, CounterError> {
        self.expect_open()?;
        path::validate_data(&self.shared.path, value)?;
        let current = self.get_versioned();
        if previous.zxid != current.zxid || previous.value != current.value {
            return Ok(false);
        }
        if previous.version < 0 {
            return Err(self.state_error("never read"));
        }
        match self.write_versioned(value, previous.version).await? {
            Some(stat) => {
                self.shared.update(value.to_vec(), &stat);
                Ok(true)
            }
            None => {
                self.shared.refresh().await?;
                Ok(false)
            }
        }
    }

    /// A write with `version`: its `Stat`, or `None` when another writer came first. A lost
    /// race after the write was sent again (its first reply lost) may be our own first write.
    async fn write_versioned(&self, value: &[u8], version: i32) -> Result<Option<Stat>, CounterError> {
        let path = self.shared.path.as_str();
        let sent = self
            .shared
            .zk
            .retry_write(RetryOptions::default(), |s| async move {
                s.client().set_data(path, value, Some(version)).await
            })
            .await;
        CounterError::after_write(path, sent.result, sent.sends)
    }

    /// Stops watching. The node stays; [`get`](Self::get) keeps the last value.
    ///
    /// # Cancel safety
    /// Cancel safe: the watch is stopped at the first poll; the rest is waiting for its task.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(value: zkr_recipes::counters::SharedValue) {
    /// value.close().await;
    /// # }
    /// ```
    pub async fn close(&self) {
        let running = self.running.lock().take();
        if let Some((stop, task)) = running {
            let _ = stop.send(());
            let _ = task.await;
        }
    }

    fn expect_open(&self) -> Result<(), CounterError> {
        match *self.running.lock() {
            Some(_) => Ok(()),
            None => Err(self.state_error("closed")),
        }
    }

    fn state_error(&self, state: &'static str) -> CounterError {
        CounterError::State { path: self.shared.path.clone(), state }
    }
}

/// The engine's consumer: every read and every change of the node goes into [`Shared`].
struct Follower {
    shared: Arc<Shared>,
}

/// The node as read: `None` when it does not exist.
type Read = Option<(Vec<u8>, Stat)>;

impl Consumer for Follower {
    type Read = Read;

    async fn read(&self, session: &Session) -> ZkResult<Read> {
        found(session.client().get_data(&self.shared.path).await)
    }

    async fn read_watched(&self, session: &Session) -> ZkResult<(Read, Vec<OneshotWatcher>)> {
        let client = session.client();
        let path = self.shared.path.as_str();
        match client.get_and_watch_data(path).await {
            Ok((data, stat, watcher)) => Ok((Some((data, stat)), vec![watcher])),
            Err(zookeeper_client::Error::NoNode) => {
                let (stat, watcher) = client.check_and_watch_stat(path).await?;
                // Created in between: its data, under the watch just set.
                let read = match stat {
                    Some(_) => found(client.get_data(path).await)?,
                    None => None,
                };
                Ok((read, vec![watcher]))
            }
            Err(e) => Err(e),
        }
    }

    fn reset(&mut self, read: Read) {
        if let Some((data, stat)) = read {
            self.shared.update(data, &stat);
        }
    }

    async fn apply(&mut self, client: &SessionClient, burst: Vec<WatchedEvent>) -> ZkResult<Flow> {
        let changed = burst.iter().any(|e| {
            e.path == self.shared.path
                && matches!(e.event_type, EventType::NodeCreated | EventType::NodeDataChanged)
        });
        if changed {
            self.reset(found(client.get_data(&self.shared.path).await)?);
        }
        Ok(Flow::Continue(()))
    }
}

fn found(read: ZkResult<(Vec<u8>, Stat)>) -> ZkResult<Read> {
    crate::errors::present(read)
}
