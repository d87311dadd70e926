//! [`CachedModeledFramework`]: the models of a template, kept in memory by a `CuratorCache`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures::{FutureExt as _, Stream, StreamExt as _};
use tokio::sync::{broadcast, watch};
use zkr_connection::Stat;

use super::{ModelError, ModelSpec, ModeledFramework, ZNode, ZPath};
use crate::cache::{CacheEvent, CacheMode, CacheSnapshot, CachedNode, CuratorCache};
use crate::codec::CodecError;

/// How many events a slow subscriber of [`CachedModeledFramework::events`] may fall behind.
const EVENT_CAPACITY: usize = 4096;

/// Every good model the cache holds, by node path.
type Models<T> = BTreeMap<String, ZNode<T>>;

/// A change of the models a [`CachedModeledFramework`] holds, in the order the cache applied
/// them: Curator's `ModeledCacheListener` calls.
#[non_exhaustive]
pub enum ModelEvent<T> {
    /// A model appeared.
    Created {
        /// It, with its path and `Stat`.
        node: ZNode<T>,
    },
    /// A model changed (or its node was deleted and created again in between).
    Changed {
        /// The model held before.
        old: ZNode<T>,
        /// The model now.
        new: ZNode<T>,
    },
    /// A model went: its node was deleted, or holds no data now.
    Deleted {
        /// The model held.
        old: ZNode<T>,
    },
    /// A node's new data does not decode: the last good model (if any) stays current.
    DecodeFailed {
        /// The node.
        path: ZPath,
        /// Its `Stat`, for the version that does not decode.
        stat: Stat,
        /// The codec's error.
        error: CodecError,
    },
    /// This subscriber fell this many events behind and missed them; the cache is current.
    Lagged {
        /// How many events were dropped for this subscriber.
        missed: u64,
    },
}

impl<T> Clone for ModelEvent<T> {
    fn clone(&self) -> Self {
        match self {
            ModelEvent::Created { node } => ModelEvent::Created { node: node.clone() },
            ModelEvent::Changed { old, new } => ModelEvent::Changed { old: old.clone(), new: new.clone() },
            ModelEvent::Deleted { old } => ModelEvent::Deleted { old: old.clone() },
            ModelEvent::DecodeFailed { path, stat, error } => {
                ModelEvent::DecodeFailed { path: path.clone(), stat: *stat, error: error.clone() }
            }
            ModelEvent::Lagged { missed } => ModelEvent::Lagged { missed: *missed },
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for ModelEvent<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelEvent::Created { node } => f.debug_struct("Created").field("node", node).finish(),
            ModelEvent::Changed { old, new } => {
                f.debug_struct("Changed").field("old", old).field("new", new).finish()
            }
            ModelEvent::Deleted { old } => f.debug_struct("Deleted").field("old", old).finish(),
            ModelEvent::DecodeFailed { path, stat, error } => f
                .debug_struct("DecodeFailed")
                .field("path", path)
                .field("version", &stat.version)
                .field("error", error)
                .finish(),
            ModelEvent::Lagged { missed } => f.debug_struct("Lagged").field("missed", missed).finish(),
        }
    }
}

/// The models of a [`ModeledFramework`]'s path, kept in memory: Curator's
/// `CachedModeledFramework`, made by [`ModeledFramework::cached`].
///
/// One [`CuratorCache`] follows the template's longest resolved prefix (`/users` for
/// `/users/{id}`) down to the template's depth, and the nodes that fit the template are
/// decoded once per change. It keeps the cache's guarantees: it converges to the server's
/// tree, misses nothing across disconnects and session expiries, reports nothing twice. A node
/// whose data does not decode is reported ([`ModelEvent::DecodeFailed`]) and never replaces
/// the last good model. The cache also holds the prefix's other nodes down to that depth: keep
/// a template's prefix for its models.
///
/// Writes go through [`framework`](Self::framework). Cheap to clone; every clone reads the
/// same models. The watch ends when the last clone is dropped (and with it every stream of
/// [`events`](Self::events)).
///
/// # Examples
///
/// ```no_run
/// # async fn f(users: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
/// use futures::StreamExt;
/// use zkr_recipes::model::ModelEvent;
///
/// let cached = users.cached().await?;
/// if let Some(alice) = cached.current(&["alice"])? {
///     println!("alice: {} (version {})", alice.model, alice.stat.version);
/// }
/// let mut events = cached.events();
/// while let Some(event) = events.next().await {
///     match event {
///         ModelEvent::Created { node } => println!("new {}: {}", node.path, node.model),
///         ModelEvent::Changed { new, .. } => println!("{} is now {}", new.path, new.model),
///         ModelEvent::Deleted { old } => println!("{} gone", old.path),
///         ModelEvent::DecodeFailed { path, error, .. } => println!("{path}: {error}"),
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
pub struct CachedModeledFramework<T> {
    framework: ModeledFramework<T>,
    cache: CuratorCache,
    models: watch::Receiver<Arc<Models<T>>>,
    events: broadcast::Sender<ModelEvent<T>>,
}

impl<T> Clone for CachedModeledFramework<T> {
    fn clone(&self) -> Self {
        CachedModeledFramework {
            framework: self.framework.clone(),
            cache: self.cache.clone(),
            models: self.models.clone(),
            events: self.events.clone(),
        }
    }
}

impl<T> fmt::Debug for CachedModeledFramework<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedModeledFramework").field("framework", &self.framework).finish()
    }
}

impl<T: Send + Sync + 'static> CachedModeledFramework<T> {
    /// Starts the cache, reads the models it holds, and follows its changes in the background.
    pub(super) async fn start(framework: ModeledFramework<T>) -> Result<Self, ModelError> {
        let template = framework.path().clone();
        let (prefix, depth) = template.resolved_prefix();
        let mode = match depth {
            0 => CacheMode::Node,
            1 => CacheMode::Children,
            depth => CacheMode::Tree { max_depth: Some(depth) },
        };
        let cache = CuratorCache::builder(framework.client(), prefix.as_path()).mode(mode).start().await?;
        // Subscribed before the snapshot is read: a change after it is an event, and an event
        // the snapshot already shows is not newer than it, so not reported.
        let changes = cache.events();
        let mut follower = Follower::new(template, framework.spec().clone());
        follower.resync(&cache.snapshot(), &mut Vec::new());
        let (models_tx, models) = watch::channel(follower.models.clone());
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        tokio::spawn(follow(follower, cache.clone(), changes, models_tx, events.clone()));
        Ok(CachedModeledFramework { framework, cache, models, events })
    }

    /// The framework, for writes and reads that go to ZooKeeper.
    ///
    /// ```no_run
    /// # async fn f(users: zkr_recipes::model::CachedModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// users.framework().resolved(&["bob"])?.set(&"Bob".to_owned()).await?;
    /// # Ok(()) }
    /// ```
    pub fn framework(&self) -> &ModeledFramework<T> {
        &self.framework
    }

    /// The cache underneath, for its [`snapshot`](CuratorCache::snapshot)'s state
    /// (`is_stale()` while a new session is read) and its raw nodes.
    ///
    /// ```no_run
    /// # async fn f(users: zkr_recipes::model::CachedModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// let unconfirmed = users.cache().snapshot().is_stale();
    /// # Ok(()) }
    /// ```
    pub fn cache(&self) -> &CuratorCache {
        &self.cache
    }

    /// The model at the node that `ids` resolve the template to (none for a resolved path;
    /// Curator's `currentData`).
    ///
    /// # Errors
    /// As [`ZPath::resolve`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(users: zkr_recipes::model::CachedModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// let alice: Option<String> = users.current(&["alice"])?.map(|node| node.model.to_string());
    /// # Ok(()) }
    /// ```
    #[doc(alias = "currentData")]
    pub fn current(&self, ids: &[&str]) -> Result<Option<ZNode<T>>, ModelError> {
        let path = self.framework.path().resolve(ids)?;
        Ok(self.current_at(path.as_path()))
    }

    /// The model at the node `path`, if the cache holds one.
    ///
    /// ```no_run
    /// # fn f(users: zkr_recipes::model::CachedModeledFramework<String>) {
    /// let alice = users.current_at("/users/alice");
    /// # }
    /// ```
    pub fn current_at(&self, path: &str) -> Option<ZNode<T>> {
        self.models.borrow().get(path).cloned()
    }

    /// Every model the cache holds, in path order: for `/users/{id}`, every user (Curator's
    /// `currentChildren` and cached `list()`).
    ///
    /// ```no_run
    /// # fn f(users: zkr_recipes::model::CachedModeledFramework<String>) {
    /// for user in users.current_children() {
    ///     println!("{}: {}", user.path.node_name(), user.model);
    /// }
    /// # }
    /// ```
    #[doc(alias = "currentChildren")]
    pub fn current_children(&self) -> Vec<ZNode<T>> {
        self.models.borrow().values().cloned().collect()
    }

    /// Every change from now on, in the order the cache applied them. The models are updated
    /// before their events go out: a subscriber that reacts to an event finds it in
    /// [`current`](Self::current).
    ///
    /// ```no_run
    /// # async fn f(users: zkr_recipes::model::CachedModeledFramework<String>) {
    /// use futures::StreamExt;
    /// let first_change = users.events().next().await;
    /// # }
    /// ```
    pub fn events(&self) -> impl Stream<Item = ModelEvent<T>> + Send + Unpin + 'static {
        crate::watch::event_stream(self.events.subscribe(), |missed| ModelEvent::Lagged { missed })
    }
}

/// Applies the cache's events to the models until every handle is dropped: each run of
/// events already queued makes one new set of models, published before its events.
async fn follow<T: Send + Sync + 'static>(
    mut follower: Follower<T>,
    cache: CuratorCache,
    mut changes: impl Stream<Item = CacheEvent> + Unpin,
    models: watch::Sender<Arc<Models<T>>>,
    events: broadcast::Sender<ModelEvent<T>>,
) {
    loop {
        let first = tokio::select! {
            () = models.closed() => return,
            change = changes.next() => match change {
                Some(change) => change,
                None => return,
            },
        };
        let mut out = Vec::new();
        follower.apply(first, || cache.snapshot(), &mut out);
        while let Some(Some(change)) = changes.next().now_or_never() {
            follower.apply(change, || cache.snapshot(), &mut out);
        }
        if out.is_empty() {
            continue;
        }
        models.send_replace(follower.models.clone());
        for event in out {
            let _ = events.send(event);
        }
    }
}

/// The typed copy: the good models, and the version of every fitting node last applied.
struct Follower<T> {
    template: ZPath,
    spec: ModelSpec<T>,
    /// The `mzxid` of each fitting node as last applied, decoded or not: an event no newer
    /// is not reported again.
    seen: BTreeMap<String, i64>,
    /// Shared with the latest published set until the next change.
    models: Arc<Models<T>>,
}

impl<T: 'static> Follower<T> {
    fn new(template: ZPath, spec: ModelSpec<T>) -> Self {
        Follower { template, spec, seen: BTreeMap::new(), models: Arc::default() }
    }

    /// Applies one event of the cache; after a lag, reads `snapshot` (the cache's latest) instead.
    fn apply(
        &mut self,
        change: CacheEvent,
        snapshot: impl FnOnce() -> Arc<CacheSnapshot>,
        out: &mut Vec<ModelEvent<T>>,
    ) {
        match change {
            CacheEvent::Created { path, node } | CacheEvent::Changed { path, new: node, .. } => {
                out.extend(self.put(&path, Some(&node)));
            }
            // A snapshot read after the delete (at start or a resync) may show the node
            // created again: that one stays.
            CacheEvent::Deleted { path, old }
                if self.seen.get(&path).is_none_or(|&s| s <= old.stat().mzxid) =>
            {
                out.extend(self.put(&path, None));
            }
            CacheEvent::Lagged { .. } => self.resync(&snapshot(), out),
            _ => {}
        }
    }

    /// Brings the models to `snapshot`, reporting what differs.
    fn resync(&mut self, snapshot: &CacheSnapshot, out: &mut Vec<ModelEvent<T>>) {
        for (path, node) in snapshot.iter() {
            out.extend(self.put(&path, Some(node)));
        }
        let gone: Vec<String> = self.seen.keys().filter(|p| snapshot.get(p).is_none()).cloned().collect();
        for path in gone {
            out.extend(self.put(&path, None));
        }
    }

    /// Applies what the cache holds at `path` (`None`: no node) and returns its event.
    fn put(&mut self, path: &str, node: Option<&CachedNode>) -> Option<ModelEvent<T>> {
        if !self.template.matches(path) {
            return None;
        }
        let Some(node) = node else {
            self.seen.remove(path);
            return self.remove(path);
        };
        if self.seen.get(path).is_some_and(|&seen| seen >= node.stat().mzxid) {
            return None;
        }
        self.seen.insert(path.to_owned(), node.stat().mzxid);
        let zpath = ZPath::from_node_path(path);
        match self.spec.decode(node.data()) {
            Ok(Some(model)) => {
                let new = ZNode { path: zpath, stat: node.stat(), model: Arc::new(model) };
                let old = Arc::make_mut(&mut self.models).insert(path.to_owned(), new.clone());
                Some(match old {
                    Some(old) => ModelEvent::Changed { old, new },
                    None => ModelEvent::Created { node: new },
                })
            }
            Ok(None) => self.remove(path),
            Err(error) => {
                tracing::warn!(path, %error, "a model does not decode: the last good one stays");
                Some(ModelEvent::DecodeFailed { path: zpath, stat: node.stat(), error })
            }
        }
    }

    fn remove(&mut self, path: &str) -> Option<ModelEvent<T>> {
        if !self.models.contains_key(path) {
            return None;
        }
        let old = Arc::make_mut(&mut self.models).remove(path)?;
        Some(ModelEvent::Deleted { old })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Json;

    fn follower() -> Follower<u32> {
        let template = ZPath::parse("/u/{id}").unwrap();
        Follower::new(template.clone(), ModelSpec::builder(template, Json).build().unwrap())
    }

    fn node(mzxid: i64, data: &str) -> CachedNode {
        CachedNode::made(1, mzxid, data.as_bytes())
    }

    fn describe(event: Option<ModelEvent<u32>>) -> String {
        match event {
            None => "none".into(),
            Some(ModelEvent::Created { node }) => format!("created {} {}", node.path, node.model),
            Some(ModelEvent::Changed { old, new }) => {
                format!("changed {} {} -> {}", new.path, old.model, new.model)
            }
            Some(ModelEvent::Deleted { old }) => format!("deleted {} {}", old.path, old.model),
            Some(ModelEvent::DecodeFailed { path, .. }) => format!("undecodable {path}"),
            Some(ModelEvent::Lagged { missed }) => format!("lagged {missed}"),
        }
    }

    #[test]
    fn bad_data_is_reported_once_and_never_replaces_the_last_good_model() {
        let mut f = follower();
        assert_eq!(describe(f.put("/u/a", Some(&node(1, "1")))), "created /u/a 1");
        assert_eq!(describe(f.put("/u/a", Some(&node(1, "1")))), "none", "not newer");
        assert_eq!(describe(f.put("/u/a", Some(&node(2, "{oops")))), "undecodable /u/a");
        assert_eq!(describe(f.put("/u/a", Some(&node(2, "{oops")))), "none", "reported once");
        assert_eq!(*f.models["/u/a"].model, 1, "the last good model stays");
        assert_eq!(describe(f.put("/u/a", Some(&node(3, "3")))), "changed /u/a 1 -> 3");
        assert_eq!(describe(f.put("/u/a", Some(&node(4, "")))), "deleted /u/a 3", "no data: no model");
        assert_eq!(describe(f.put("/u/a", None)), "none");
        assert_eq!(describe(f.put("/u/a/deeper", Some(&node(5, "5")))), "none", "does not fit");
        assert_eq!(describe(f.put("/u", Some(&node(5, "5")))), "none", "does not fit");
        assert!(f.models.is_empty() && f.seen.is_empty());
    }

    #[test]
    fn a_delete_older_than_what_a_snapshot_showed_is_ignored_and_a_lag_resyncs() {
        let mut f = follower();
        let empty = || Arc::new(CacheSnapshot::default());
        let mut out = Vec::new();
        f.apply(CacheEvent::Created { path: "/u/a".into(), node: node(5, "5") }, empty, &mut out);
        f.apply(CacheEvent::Created { path: "/u/b".into(), node: node(6, "6") }, empty, &mut out);
        // The delete of an older incarnation (mzxid 3) is no news for a copy holding mzxid 5.
        f.apply(CacheEvent::Deleted { path: "/u/a".into(), old: node(3, "3") }, empty, &mut out);
        f.apply(CacheEvent::Deleted { path: "/u/b".into(), old: node(6, "6") }, empty, &mut out);
        let seen: Vec<String> = out.drain(..).map(|e| describe(Some(e))).collect();
        assert_eq!(seen, ["created /u/a 5", "created /u/b 6", "deleted /u/b 6"]);
        // After a lag the cache's snapshot decides: here it is empty, so /u/a went.
        f.apply(CacheEvent::Lagged { missed: 3 }, empty, &mut out);
        let seen: Vec<String> = out.drain(..).map(|e| describe(Some(e))).collect();
        assert_eq!(seen, ["deleted /u/a 5"]);
        assert!(f.models.is_empty() && f.seen.is_empty());
    }
}
