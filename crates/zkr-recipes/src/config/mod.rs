//! Config center: watch config nodes in ZooKeeper and always hold their latest value, typed;
//! publish changes safely.
//!
//! Start with [`ConfigWatcher`] for one node (a document: JSON, TOML, YAML, text or bytes), or
//! [`ConfigTreeWatcher`] for a subtree with one node per key; publish with
//! [`ConfigPublisher`].
//!
//! What the watchers guarantee (each has a test against a real server):
//! - the value held converges to the latest value in ZooKeeper, one read after the event;
//! - versions never go backwards (compared by `mzxid`), and a delete followed by a re-create
//!   is seen;
//! - nothing is lost across a disconnect (a full read after every reconnect, because persistent
//!   watches can drop events then: ZOOKEEPER-4698) or a session expiry (the watch is set up
//!   again on the new session, then a full read);
//! - a value that fails to decode is reported ([`ConfigEvent::DecodeFailed`]) and the last good
//!   value stays;
//! - optionally, a last-known-good file: a watcher starts from it when ZooKeeper cannot be
//!   reached, marked stale until the first live read.
//!
//! One task and one persistent recursive watch per watcher, whatever the number of keys.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::config::ConfigError> {
//! use zkr_recipes::config::{ConfigWatcher, Json};
//!
//! #[derive(serde::Deserialize, serde::Serialize, Debug)]
//! struct Db { url: String, pool: u32 }
//!
//! let db = ConfigWatcher::<Db>::builder(&zk, "/config/orders/db", Json).start().await?;
//! if let Some(current) = db.get() {
//!     println!("pool size {} (version {})", current.value.pool, current.version);
//! }
//! # Ok(()) }
//! ```

mod cache_file;
mod engine;
mod error;
mod publisher;

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio::sync::{broadcast, watch};
use zkr_connection::ZkClient;
use zookeeper_client::Stat;

#[cfg(feature = "toml")]
pub use crate::codec::Toml;
#[cfg(feature = "yaml")]
pub use crate::codec::Yaml;
pub use crate::codec::{Codec, Gzip, Json, Raw, Utf8};
use crate::watch::Watch;
pub use crate::watch::WatchMode;
use engine::{Scope, Tracker};
pub use error::ConfigError;
pub use publisher::ConfigPublisher;

/// A decoded value with the version it was read at.
#[non_exhaustive]
pub struct Versioned<T> {
    /// The value.
    pub value: Arc<T>,
    /// The node's data version (`Stat.version`): a revision number, reset by a re-create.
    pub version: i32,
    /// The zxid of the write that made this version (`Stat.mzxid`): grows across re-creates.
    pub mzxid: i64,
    raw: Arc<[u8]>,
}

impl<T> Versioned<T> {
    fn new(value: T, data: Vec<u8>, stat: &Stat) -> Self {
        Self::from_parts(value, data, stat.version, stat.mzxid)
    }

    fn from_parts(value: T, data: Vec<u8>, version: i32, mzxid: i64) -> Self {
        Versioned { value: Arc::new(value), version, mzxid, raw: data.into() }
    }

    /// The bytes the value was decoded from.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }
}

impl<T> Clone for Versioned<T> {
    fn clone(&self) -> Self {
        Versioned {
            value: self.value.clone(),
            version: self.version,
            mzxid: self.mzxid,
            raw: self.raw.clone(),
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Versioned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Versioned")
            .field("value", &self.value)
            .field("version", &self.version)
            .field("mzxid", &self.mzxid)
            .finish()
    }
}

/// Every key's latest good value at one moment. For a [`ConfigWatcher`] the only key is `""`.
pub struct ConfigSnapshot<T> {
    entries: BTreeMap<String, Versioned<T>>,
    stale: bool,
}

impl<T> ConfigSnapshot<T> {
    /// The value of `key` (a path relative to the watched root, like `db/url`).
    pub fn get(&self, key: &str) -> Option<&Versioned<T>> {
        self.entries.get(key)
    }

    /// Keys and values, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Versioned<T>)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No keys at all?
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Not confirmed by ZooKeeper: loaded from the last-known-good file, or held while the
    /// session is being replaced.
    pub fn is_stale(&self) -> bool {
        self.stale
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for ConfigSnapshot<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigSnapshot").field("entries", &self.entries).field("stale", &self.stale).finish()
    }
}

/// A change seen by a watcher, in the order it was applied.
#[non_exhaustive]
pub enum ConfigEvent<T> {
    /// A key's value changed: created (`old` is `None`), updated, or deleted (`new` is `None`).
    Changed {
        /// The key (`""` for a [`ConfigWatcher`]).
        key: String,
        /// The value before.
        old: Option<Versioned<T>>,
        /// The value now.
        new: Option<Versioned<T>>,
    },
    /// A new version did not decode; the last good value stays.
    DecodeFailed {
        /// The key.
        key: String,
        /// The version that failed.
        version: i32,
        /// Its `mzxid`.
        mzxid: i64,
        /// The codec's error.
        error: crate::codec::CodecError,
    },
    /// This subscriber fell behind and missed `missed` events; read the current snapshot.
    Lagged {
        /// How many events were dropped for this subscriber.
        missed: u64,
    },
}

impl<T> Clone for ConfigEvent<T> {
    fn clone(&self) -> Self {
        match self {
            ConfigEvent::Changed { key, old, new } => {
                ConfigEvent::Changed { key: key.clone(), old: old.clone(), new: new.clone() }
            }
            ConfigEvent::DecodeFailed { key, version, mzxid, error } => ConfigEvent::DecodeFailed {
                key: key.clone(),
                version: *version,
                mzxid: *mzxid,
                error: error.clone(),
            },
            ConfigEvent::Lagged { missed } => ConfigEvent::Lagged { missed: *missed },
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for ConfigEvent<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigEvent::Changed { key, old, new } => {
                f.debug_struct("Changed").field("key", key).field("old", old).field("new", new).finish()
            }
            ConfigEvent::DecodeFailed { key, version, mzxid, error } => f
                .debug_struct("DecodeFailed")
                .field("key", key)
                .field("version", version)
                .field("mzxid", mzxid)
                .field("error", error)
                .finish(),
            ConfigEvent::Lagged { missed } => f.debug_struct("Lagged").field("missed", missed).finish(),
        }
    }
}

/// Marker: a [`ConfigWatcher`] (one node).
#[derive(Debug, Clone, Copy)]
pub struct NodeScope;

/// Marker: a [`ConfigTreeWatcher`] (a subtree).
#[derive(Debug, Clone, Copy)]
pub struct TreeScope;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NodeScope {}
    impl Sealed for super::TreeScope {}
}

/// What a [`ConfigHandle`] watches: [`NodeScope`] or [`TreeScope`]. Sealed.
pub trait WatchScope: sealed::Sealed + Send + Sync + 'static {
    /// The handle's name in `Debug` output.
    #[doc(hidden)]
    const NAME: &'static str;
    #[doc(hidden)]
    const TREE: bool;
}

impl WatchScope for NodeScope {
    const NAME: &'static str = "ConfigWatcher";
    const TREE: bool = false;
}

impl WatchScope for TreeScope {
    const NAME: &'static str = "ConfigTreeWatcher";
    const TREE: bool = true;
}

/// Builds a [`ConfigWatcher`] or a [`ConfigTreeWatcher`].
#[must_use = "a builder does nothing until start() is called"]
pub struct ConfigWatcherBuilder<T, S> {
    zk: ZkClient,
    path: String,
    codec: Arc<dyn Codec<T>>,
    mode: WatchMode,
    cache_file: Option<PathBuf>,
    initial_timeout: Option<Duration>,
    capacity: usize,
    scope: PhantomData<S>,
}

impl<T, S> std::fmt::Debug for ConfigWatcherBuilder<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigWatcherBuilder")
            .field("path", &self.path)
            .field("codec", &self.codec)
            .field("mode", &self.mode)
            .field("cache_file", &self.cache_file)
            .finish()
    }
}

impl<T: Send + Sync + 'static, S> ConfigWatcherBuilder<T, S> {
    fn new(zk: &ZkClient, path: &str, codec: impl Codec<T>) -> Self {
        ConfigWatcherBuilder {
            zk: zk.clone(),
            path: path.to_owned(),
            codec: Arc::new(codec),
            mode: WatchMode::Auto,
            cache_file: None,
            initial_timeout: None,
            capacity: 1024,
            scope: PhantomData,
        }
    }

    /// Keep the latest live snapshot in `file` and start from it, marked stale, when ZooKeeper
    /// cannot be reached at start.
    pub fn cache_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.cache_file = Some(file.into());
        self
    }

    /// Persistent or one-shot watches (default: persistent, one-shot on servers before 3.6).
    pub fn watch_mode(mut self, mode: WatchMode) -> Self {
        self.mode = mode;
        self
    }

    /// How long `start` waits for ZooKeeper before it falls back to the last-known-good file
    /// (default: the manager's connection timeout).
    pub fn initial_timeout(mut self, timeout: Duration) -> Self {
        self.initial_timeout = Some(timeout);
        self
    }

    /// How many events a slow subscriber of `changes()` may fall behind before it gets
    /// [`ConfigEvent::Lagged`] (default 1024).
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }
}

impl<T: Send + Sync + 'static, S: WatchScope> ConfigWatcherBuilder<T, S> {
    /// Reads the node (or the subtree) and starts watching it.
    ///
    /// # Errors
    /// [`ConfigError::InvalidArgument`] for an invalid path; [`ConfigError::Connection`] for a
    /// ZooKeeper answer such as `NoAuth`;
    /// [`ConfigError::Unavailable`] when ZooKeeper cannot be reached within the initial
    /// timeout and there is no last-known-good file; [`ConfigError::CacheFile`] for a file
    /// that cannot be read.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is written to ZooKeeper, and the watch goes with the dropped future.
    pub async fn start(self) -> Result<ConfigHandle<T, S>, ConfigError> {
        let scope = if S::TREE { Scope::Tree } else { Scope::Node };
        match scope {
            Scope::Node => crate::errors::check_node_path(&self.zk, &self.path)?,
            Scope::Tree => self.zk.validate_recipe_path(&self.path)?,
        }
        let (snapshot_tx, snapshots) =
            watch::channel(Arc::new(ConfigSnapshot { entries: BTreeMap::new(), stale: true }));
        let (events, _) = broadcast::channel(self.capacity);
        let tracker = Tracker {
            root: self.path.clone(),
            scope,
            codec: self.codec.clone(),
            snapshot: snapshot_tx,
            events: events.clone(),
            entries: BTreeMap::new(),
            seen: BTreeMap::new(),
            pending: Vec::new(),
            stale: Default::default(),
        };
        let mut engine = Watch::new(&self.zk, &self.path, scope == Scope::Tree, self.mode, tracker);
        let timeout = self.initial_timeout.unwrap_or_else(|| self.zk.connection_timeout());
        let mut established = None;
        match engine.first_sync(timeout).await {
            Ok(first) => established = Some(first),
            Err(e) => {
                let unreachable = e.is_retryable()
                    || matches!(
                        e,
                        zkr_connection::Error::ConnectTimeout { .. }
                            | zkr_connection::Error::RetriesExhausted { .. }
                            | zkr_connection::Error::DeadlineExceeded { .. }
                    );
                let cached = match (&self.cache_file, unreachable) {
                    (Some(file), true) => cache_file::load(file, &self.path, self.codec.as_ref())?,
                    _ => None,
                };
                let Some(entries) = cached else {
                    return Err(if unreachable {
                        ConfigError::Unavailable { path: self.path.clone(), source: e }
                    } else {
                        ConfigError::Connection(e)
                    });
                };
                tracing::warn!(path = %self.path, error = %e, "ZooKeeper unreachable; starting from the last-known-good file");
                let tracker = engine.consumer_mut();
                tracker.seen = entries.iter().map(|(k, v)| (k.clone(), v.mzxid)).collect();
                tracker.entries = entries;
                tracker.publish(true, false);
            }
        }
        if let Some(file) = self.cache_file {
            tokio::spawn(cache_file::keep_writing(file, self.path.clone(), snapshots.clone()));
        }
        let _alive = engine.spawn_following(established);
        Ok(ConfigHandle { path: self.path, snapshots, events, _alive, scope: PhantomData })
    }
}

/// The latest value of one config node, kept current in the background.
///
/// Cheap to clone; every clone reads the same value. The watch ends when the last clone is
/// dropped; receivers and streams taken from it then see no more changes.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::config::ConfigError> {
/// use futures::StreamExt;
/// use zkr_recipes::config::{ConfigEvent, ConfigWatcher, Utf8};
///
/// let url = ConfigWatcher::builder(&zk, "/config/url", Utf8).cache_file("/var/cache/app/url.json").start().await?;
/// let mut changes = url.changes();
/// while let Some(event) = changes.next().await {
///     if let ConfigEvent::Changed { new: Some(new), .. } = event {
///         println!("url is now {} (version {})", new.value, new.version);
///     }
/// }
/// # Ok(()) }
/// ```
pub type ConfigWatcher<T> = ConfigHandle<T, NodeScope>;

/// The latest values of every node under a root (one node per key), as one consistent map per
/// change, kept current with one persistent recursive watch.
///
/// Keys are paths relative to the root (`db/url` for `<root>/db/url`). Nodes without data are
/// structure, not keys.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::config::ConfigError> {
/// use zkr_recipes::config::{ConfigTreeWatcher, Utf8};
///
/// let app = ConfigTreeWatcher::builder(&zk, "/config/orders", Utf8).start().await?;
/// let snapshot = app.snapshot();
/// for (key, value) in snapshot.iter() {
///     println!("{key} = {}", value.value);
/// }
/// # Ok(()) }
/// ```
pub type ConfigTreeWatcher<T> = ConfigHandle<T, TreeScope>;

/// A running config watcher: [`ConfigWatcher`] for one node, [`ConfigTreeWatcher`] for a
/// subtree. Cheap to clone; every clone reads the same snapshot. The watch ends when the last
/// clone is dropped; receivers and streams taken from it then see no more changes.
pub struct ConfigHandle<T, S> {
    path: String,
    snapshots: watch::Receiver<Arc<ConfigSnapshot<T>>>,
    events: broadcast::Sender<ConfigEvent<T>>,
    /// Keeps the engine running.
    _alive: crate::watch::Alive,
    scope: PhantomData<S>,
}

impl<T, S> Clone for ConfigHandle<T, S> {
    fn clone(&self) -> Self {
        ConfigHandle {
            path: self.path.clone(),
            snapshots: self.snapshots.clone(),
            events: self.events.clone(),
            _alive: self._alive.clone(),
            scope: PhantomData,
        }
    }
}

impl<T, S: WatchScope> std::fmt::Debug for ConfigHandle<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(S::NAME).field("path", &self.path).finish()
    }
}

impl<T: Send + Sync + 'static, S> ConfigHandle<T, S> {
    /// The watched path (the node, or the subtree's root).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The latest snapshot: every key's latest good value (a node watcher's key is `""`).
    pub fn snapshot(&self) -> Arc<ConfigSnapshot<T>> {
        self.snapshots.borrow().clone()
    }

    /// Is the snapshot unconfirmed by ZooKeeper (from the last-known-good file, or during a
    /// session change)?
    pub fn is_stale(&self) -> bool {
        self.snapshot().is_stale()
    }

    /// A `tokio::sync::watch` receiver of the latest snapshot: for tasks that wait with
    /// `changed()`.
    pub fn snapshots(&self) -> watch::Receiver<Arc<ConfigSnapshot<T>>> {
        self.snapshots.clone()
    }

    /// Every change from now on, in order.
    pub fn changes(&self) -> impl Stream<Item = ConfigEvent<T>> + Send + Unpin + 'static {
        crate::watch::event_stream(self.events.subscribe(), |missed| ConfigEvent::Lagged { missed })
    }
}

impl<T: Send + Sync + 'static> ConfigHandle<T, NodeScope> {
    /// A builder for a watcher of node `path`, decoding with `codec`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::config::ConfigError> {
    /// let price = zkr_recipes::config::ConfigWatcher::<u32>::builder(&zk, "/config/price", zkr_recipes::config::Json).start().await?;
    /// # Ok(()) }
    /// ```
    pub fn builder(zk: &ZkClient, path: &str, codec: impl Codec<T>) -> ConfigWatcherBuilder<T, NodeScope> {
        ConfigWatcherBuilder::new(zk, path, codec)
    }

    /// The latest good value, or `None` while the node does not exist (or has never held a
    /// value that decodes).
    pub fn get(&self) -> Option<Versioned<T>> {
        self.snapshot().get("").cloned()
    }
}

impl<T: Send + Sync + 'static> ConfigHandle<T, TreeScope> {
    /// A builder for a watcher of the subtree under `root`, decoding every value with `codec`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::config::ConfigError> {
    /// let tree = zkr_recipes::config::ConfigTreeWatcher::builder(&zk, "/config/orders", zkr_recipes::config::Utf8).start().await?;
    /// # Ok(()) }
    /// ```
    pub fn builder(zk: &ZkClient, root: &str, codec: impl Codec<T>) -> ConfigWatcherBuilder<T, TreeScope> {
        ConfigWatcherBuilder::new(zk, root, codec)
    }

    /// The latest good value of `key`.
    pub fn get(&self, key: &str) -> Option<Versioned<T>> {
        self.snapshot().get(key).cloned()
    }
}
