//! Caches: Curator's `CuratorCache` in Rust. A local copy of a node, its children, or a
//! subtree, with every node's data and `Stat`, kept in step with ZooKeeper by one persistent
//! watch; an immutable snapshot per burst of changes and a stream of events.
//!
//! What it guarantees (each has a test against a real server):
//! - the copy converges to the server's tree, one read after each event;
//! - nothing is lost across a disconnect or a session expiry: the watch is set again and
//!   everything read again, and only what differs from the copy is reported;
//! - nothing is reported twice: a read no newer than the copy (compared by `mzxid`) is no event;
//!   a node created and deleted within one burst was never in the copy and is not reported;
//! - a snapshot is built from whole bursts: it never shows half of a multi-op (a burst takes
//!   in the events that arrive behind its reads, which complete any transaction it holds part
//!   of; only a writer that never pauses for eight rounds can split one), and it is published
//!   before the burst's events, so a subscriber that reacts to an event finds it in the
//!   snapshot.
//!
//! Unlike [`ConfigTreeWatcher`](crate::config::ConfigTreeWatcher), nodes without data are part
//! of the copy, and values stay bytes: decode them with a config codec
//! ([`CachedNode::decode`]). On servers before 3.6 (no persistent watches) the cache sets
//! one-shot watches and reads again on every event.
//!
//! [`PersistentWatcher`] is the watch alone, without a copy: Curator's `PersistentWatcher`.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_connection::Error> {
//! use futures::StreamExt;
//! use zkr_recipes::cache::{CacheEvent, CacheMode, CuratorCache};
//!
//! let cache = CuratorCache::builder(&zk, "/services").mode(CacheMode::Tree { max_depth: Some(2) }).start().await?;
//! for (name, node) in cache.snapshot().children("/services") {
//!     println!("{name}: version {}", node.stat().version);
//! }
//! let mut events = cache.events();
//! while let Some(event) = events.next().await {
//!     if let CacheEvent::Created { path, .. } = event {
//!         println!("new: {path}");
//!     }
//! }
//! # Ok(()) }
//! ```

mod persistent_watcher;
mod store;
mod tracker;

pub use persistent_watcher::{PersistentWatcher, WatcherEvent};
pub use store::CachedNode;

use std::sync::Arc;
use std::time::Duration;

use crate::watch::{Watch, WatchMode};
use futures::Stream;
use store::Tree;
use tokio::sync::{broadcast, watch};
use tracker::Tracker;
use zkr_connection::ZkClient;

/// What a [`CuratorCache`] covers: Curator's `CuratorCache.Options` and `TreeCache`'s depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheMode {
    /// The node alone (Curator's `SINGLE_NODE_CACHE`).
    Node,
    /// The node and its direct children (`PathChildrenCache`, with the parent).
    Children,
    /// The node and everything below it, down to `max_depth` levels when set (`TreeCache`).
    Tree {
        /// How many levels below the node are kept; `None`: all.
        max_depth: Option<usize>,
    },
}

/// A change the cache applied, in the order it applied them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CacheEvent {
    /// The first full read is applied (after a `Created` for every node it found).
    Initialized,
    /// A node appeared.
    Created {
        /// Its path.
        path: String,
        /// The node as read.
        node: CachedNode,
    },
    /// A node's data or `Stat` changed (or it was deleted and created again in between).
    Changed {
        /// Its path.
        path: String,
        /// What the cache held.
        old: CachedNode,
        /// What it holds now (as read: with its data even when the cache keeps none).
        new: CachedNode,
    },
    /// A node went.
    Deleted {
        /// Its path.
        path: String,
        /// What the cache held.
        old: CachedNode,
    },
    /// This subscriber fell this many events behind and missed them; the snapshot is current.
    Lagged {
        /// How many events were dropped for this subscriber.
        missed: u64,
    },
}

/// The cache's contents at one moment: immutable, cheap to share (`Arc`).
#[derive(Clone, Default)]
pub struct CacheSnapshot {
    /// Shares its nodes with the tracker's copy and with every other snapshot.
    nodes: Tree,
    initialized: bool,
    stale: bool,
}

impl std::fmt::Debug for CacheSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheSnapshot")
            .field("len", &self.len())
            .field("initialized", &self.initialized)
            .field("stale", &self.stale)
            .finish()
    }
}

impl CacheSnapshot {
    /// A confirmed snapshot of `nodes` under `/`, for a recipe's unit tests: a node's missing
    /// parents are made, empty.
    #[cfg(test)]
    pub(crate) fn of(nodes: impl IntoIterator<Item = (String, CachedNode)>) -> Self {
        let mut tree = Tree::new("/");
        let mut nodes: Vec<_> = nodes.into_iter().collect();
        nodes.sort_by(|a, b| a.0.cmp(&b.0));
        for (path, node) in nodes {
            let mut parent = String::new();
            for name in path.split('/') {
                parent = if parent.is_empty() && name.is_empty() {
                    "/".into()
                } else {
                    zkr_connection::path::join(&parent, name)
                };
                if tree.get(&parent).is_none() {
                    let _ = tree.put(&parent, &CachedNode::made(0, 0, b""));
                }
            }
            let _ = tree.put(&path, &node);
        }
        CacheSnapshot { nodes: tree, initialized: true, stale: false }
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<&CachedNode> {
        self.nodes.get(path)
    }

    /// The direct children of `parent` the cache holds, by name, in name order.
    pub fn children<'a>(&'a self, parent: &str) -> impl Iterator<Item = (&'a str, &'a CachedNode)> + 'a {
        self.nodes.children(parent)
    }

    /// Every node with its path: parents before their children, siblings in name order. Each
    /// path is built as it is visited (the copy keeps names, not paths).
    pub fn iter(&self) -> impl Iterator<Item = (String, &CachedNode)> {
        self.nodes.iter()
    }

    /// How many nodes the cache holds.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Does the cache hold no node (the root does not exist)?
    pub fn is_empty(&self) -> bool {
        self.nodes.len() == 0
    }

    /// Has the first full read been applied?
    pub fn is_initialized(&self) -> bool {
        self.initialized
    }

    /// Is the copy unconfirmed by ZooKeeper (its session ended; a new one is being read)?
    pub fn is_stale(&self) -> bool {
        self.stale
    }
}

/// Builds a [`CuratorCache`].
#[derive(Debug)]
#[must_use = "a builder does nothing until start() is called"]
pub struct CuratorCacheBuilder {
    zk: ZkClient,
    path: String,
    mode: CacheMode,
    initial_timeout: Option<Duration>,
    capacity: usize,
    compressed: Option<bool>,
    keep_data: bool,
    selector: Option<Selector>,
}

/// Curator's `TreeCacheSelector`: which nodes below the root a cache keeps and which it
/// reads the children of. The root is always kept. A closure `Fn(&str) -> bool` is a
/// selector that keeps the paths it answers `true` for (and reads below them).
///
/// A node is kept when every node from the root down to it was accepted and every parent on
/// the way was traversed; events of other nodes are ignored, so a selector that rejects a
/// busy subtree saves its reads too.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_connection::Error> {
/// use zkr_recipes::cache::{CacheSelector, CuratorCache};
///
/// /// The services and their instances, without each instance's `metrics` subtree.
/// struct NoMetrics;
/// impl CacheSelector for NoMetrics {
///     fn accept_child(&self, path: &str) -> bool {
///         !path.ends_with("/metrics")
///     }
/// }
/// let cache = CuratorCache::builder(&zk, "/services").selector(NoMetrics).start().await?;
/// let no_tmp = CuratorCache::builder(&zk, "/jobs").selector(|path: &str| !path.contains("/tmp-")).start().await?;
/// # Ok(()) }
/// ```
pub trait CacheSelector: Send + Sync + 'static {
    /// Are the children of `path` (a kept node) read and kept? Default: yes.
    fn traverse_children(&self, path: &str) -> bool {
        let _ = path;
        true
    }

    /// Is the node at `path` (below the root) kept? Default: yes.
    fn accept_child(&self, path: &str) -> bool {
        let _ = path;
        true
    }
}

impl<F: Fn(&str) -> bool + Send + Sync + 'static> CacheSelector for F {
    fn accept_child(&self, path: &str) -> bool {
        self(path)
    }
}

/// A builder's selector (shown by `Debug` as set or not).
#[derive(Clone)]
pub(crate) struct Selector(Arc<dyn CacheSelector>);

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Selector")
    }
}

impl CuratorCacheBuilder {
    /// What the cache covers (default: [`CacheMode::Tree`] with no depth limit, as Curator's).
    pub fn mode(mut self, mode: CacheMode) -> Self {
        self.mode = mode;
        self
    }

    /// How long `start` waits for a connection (default: the manager's connection timeout).
    pub fn initial_timeout(mut self, timeout: Duration) -> Self {
        self.initial_timeout = Some(timeout);
        self
    }

    /// Curator's `CuratorCache.Options.COMPRESSED_DATA`: node data is gzip as Curator's
    /// `GzipCompressionProvider` writes it, and the cache keeps it decompressed (a node whose
    /// data is not gzip, or inflates to more than the client's
    /// [`max_decompressed_len`](zkr_connection::ZkClientBuilder::max_decompressed_len), is
    /// kept as it is, with a warning). Defaults to the client's
    /// [`compression`](zkr_connection::ZkClientBuilder::compression).
    pub fn compressed(mut self, compressed: bool) -> Self {
        self.compressed = Some(compressed);
        self
    }

    /// Curator's `CuratorCacheStorage.dataNotCached()`: the cache keeps every node's `Stat` but not its data
    /// ([`CachedNode::data`] is empty in snapshots and in the `old` of events); a `Created`
    /// or `Changed` event still carries the data it read. For a cache that only tells which
    /// nodes exist and when they change, at a fraction of the memory.
    pub fn data_not_cached(mut self) -> Self {
        self.keep_data = false;
        self
    }

    /// Keeps only the nodes `selector` accepts (Curator's `TreeCacheSelector`; see
    /// [`CacheSelector`]).
    pub fn selector(mut self, selector: impl CacheSelector) -> Self {
        self.selector = Some(Selector(Arc::new(selector)));
        self
    }

    /// How many events a slow subscriber of `events()` may fall behind before it gets
    /// [`CacheEvent::Lagged`] (default 4096).
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// Sets the watch, reads everything, and keeps the copy in the background. The root need
    /// not exist: the cache is empty until it does. [`CuratorCache::events`] streams the
    /// changes after this returns; for the first read's events too, use
    /// [`start_with_events`](Self::start_with_events).
    ///
    /// # Errors
    /// [`InvalidPath`](zkr_connection::Error::InvalidPath) for an invalid path or the reserved
    /// `/zookeeper` tree; [`ConnectTimeout`](zkr_connection::Error::ConnectTimeout) or what the
    /// retry policy gave up on when ZooKeeper cannot be reached; a ZooKeeper answer such as
    /// `NoAuth`, or `Unimplemented` from a server before 3.6.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is written to ZooKeeper, and the watch goes with the dropped future.
    pub async fn start(self) -> Result<CuratorCache, zkr_connection::Error> {
        Ok(self.launch().await?.0)
    }

    /// [`start`](Self::start), and every event from the first read on: a `Created` for each
    /// node present at start, then `Initialized`, then every change (Curator's listener added
    /// before `start()`). Raise [`event_capacity`](Self::event_capacity) above the tree's size
    /// to receive every `Created` of a large tree.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    ///
    /// # Cancel safety
    /// As [`start`](Self::start).
    pub async fn start_with_events(
        self,
    ) -> Result<(CuratorCache, impl Stream<Item = CacheEvent> + Send + Unpin + 'static), zkr_connection::Error>
    {
        let (cache, first) = self.launch().await?;
        Ok((cache, crate::watch::event_stream(first, |missed| CacheEvent::Lagged { missed })))
    }

    async fn launch(self) -> Result<(CuratorCache, broadcast::Receiver<CacheEvent>), zkr_connection::Error> {
        self.zk.validate_recipe_path(&self.path)?;
        let max_depth = match self.mode {
            CacheMode::Node => Some(0),
            CacheMode::Children => Some(1),
            CacheMode::Tree { max_depth } => max_depth,
        };
        let (snapshot, snapshots) =
            watch::channel(Arc::new(CacheSnapshot { stale: true, ..Default::default() }));
        let (events, first_events) = broadcast::channel(self.capacity);
        let compressed =
            self.compressed.unwrap_or(self.zk.compression_enabled()).then(|| self.zk.max_decompressed_len());
        let size = crate::telemetry::SizeGauge::cache_nodes(&self.path, self.zk.metrics_path_labels());
        let keep = tracker::Keep { max_depth, data: self.keep_data, selector: self.selector.map(|s| s.0) };
        let tracker = Tracker::new(&self.path, keep, snapshot, events.clone(), compressed, size);
        let recursive = max_depth != Some(0);
        let mut engine = Watch::new(&self.zk, &self.path, recursive, WatchMode::Auto, tracker);
        let timeout = self.initial_timeout.unwrap_or_else(|| self.zk.connection_timeout());
        let first = engine.first_sync(timeout).await?;
        let _alive = engine.spawn_following(Some(first));
        Ok((CuratorCache { path: self.path, snapshots, events, _alive }, first_events))
    }
}

/// A local copy of a node, its children or a subtree (see the [module docs](self)).
///
/// Cheap to clone; every clone reads the same copy. The watch ends when the last clone is
/// dropped.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_connection::Error> {
/// use zkr_recipes::cache::{CacheMode, CuratorCache};
///
/// let members = CuratorCache::builder(&zk, "/app/members").mode(CacheMode::Children).start().await?;
/// println!("{} members", members.snapshot().children("/app/members").count());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CuratorCache {
    path: String,
    snapshots: watch::Receiver<Arc<CacheSnapshot>>,
    events: broadcast::Sender<CacheEvent>,
    /// Keeps the engine running.
    _alive: crate::watch::Alive,
}

impl std::fmt::Debug for CuratorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuratorCache").field("path", &self.path).finish()
    }
}

impl CuratorCache {
    /// A builder for a cache of `path` (by default the whole subtree).
    pub fn builder(zk: &ZkClient, path: &str) -> CuratorCacheBuilder {
        CuratorCacheBuilder {
            zk: zk.clone(),
            path: path.to_owned(),
            mode: CacheMode::Tree { max_depth: None },
            initial_timeout: None,
            capacity: 4096,
            compressed: None,
            keep_data: true,
            selector: None,
        }
    }

    /// The cached root path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The latest snapshot.
    pub fn snapshot(&self) -> Arc<CacheSnapshot> {
        self.snapshots.borrow().clone()
    }

    /// The node at `path` in the latest snapshot.
    pub fn get(&self, path: &str) -> Option<CachedNode> {
        self.snapshot().get(path).cloned()
    }

    /// A `tokio::sync::watch` receiver of the latest snapshot: for tasks that wait with
    /// `changed()` or `wait_for`.
    pub fn snapshots(&self) -> watch::Receiver<Arc<CacheSnapshot>> {
        self.snapshots.clone()
    }

    /// Every change from now on, in the order the cache applied them.
    pub fn events(&self) -> impl Stream<Item = CacheEvent> + Send + Unpin + 'static {
        crate::watch::event_stream(self.events.subscribe(), |missed| CacheEvent::Lagged { missed })
    }
}

/// Waits for the first confirmed snapshot of `snapshots` (initialized, not stale), the latest
/// first, for which `check` answers `Some`; `None` when `deadline` passes first or the cache
/// stops. The one such wait: the barriers and the partitioner wait with it.
pub(crate) async fn wait_confirmed<T>(
    snapshots: &mut watch::Receiver<Arc<CacheSnapshot>>,
    deadline: Option<zkr_connection::Deadline>,
    mut check: impl FnMut(&CacheSnapshot) -> Option<T>,
) -> Option<T> {
    let wait = async {
        loop {
            {
                let snapshot = snapshots.borrow_and_update();
                if snapshot.is_initialized() && !snapshot.is_stale() {
                    if let Some(found) = check(&snapshot) {
                        return Some(found);
                    }
                }
            }
            snapshots.changed().await.ok()?;
        }
    };
    zkr_connection::within(deadline, wait).await.flatten()
}
