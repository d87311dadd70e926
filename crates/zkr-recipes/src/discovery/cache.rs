//! [`ServiceCache`]: a service's instances, kept decoded by the watch engine.
//!
//! The policy on the engine keeps each instance once, as decoded: not its node's bytes, not
//! its `Stat`, not a copy per snapshot (Curator's `ServiceCache` keeps the decoded instances
//! too). A snapshot per burst of changes shares every instance with the one before.

use std::future::Future;
use std::sync::Arc;

use futures::{Stream, StreamExt as _};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use zkr_connection::{path, Session, SessionClient, ZkClient};
use zookeeper_client::{EventType, MultiReadResult, OneshotWatcher, WatchedEvent};

use super::{DiscoveryError, ServiceInstance};
use crate::watch::names::{child_name, list};
use crate::watch::{multi_read, read_tree, Alive, Consumer, Flow, Watch, WatchMode, ZkResult};

/// A service's instances, kept up to date from `<base path>/<name>` (Curator's
/// `ServiceCache`). Cheap to clone; the watch ends when the last clone is dropped.
///
/// # Examples
///
/// ```no_run
/// # async fn f(discovery: zkr_recipes::discovery::ServiceDiscovery<serde_json::Value>) -> Result<(), zkr_recipes::discovery::DiscoveryError> {
/// use futures::StreamExt;
///
/// let cache = discovery.service_cache("orders").await?;
/// let mut changes = cache.changes();
/// while let Some(instances) = changes.next().await {
///     println!("{} instances", instances.len());
/// }
/// # Ok(()) }
/// ```
pub struct ServiceCache<P> {
    path: String,
    snapshots: watch::Receiver<Arc<Instances<P>>>,
    _alive: Alive,
}

impl<P> std::fmt::Debug for ServiceCache<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceCache").field("path", &self.path).finish()
    }
}

impl<P> Clone for ServiceCache<P> {
    fn clone(&self) -> Self {
        ServiceCache {
            path: self.path.clone(),
            snapshots: self.snapshots.clone(),
            _alive: self._alive.clone(),
        }
    }
}

impl<P: DeserializeOwned + Send + Sync + 'static> ServiceCache<P> {
    /// Sets the watch on `path` and reads its instances once; then follows the manager's
    /// sessions until the last clone is dropped.
    pub(crate) async fn start(zk: &ZkClient, path: &str) -> Result<Self, DiscoveryError> {
        let (snapshot, snapshots) = watch::channel(Arc::new(Instances::unread()));
        let follower = Follower { dir: path.to_owned(), current: snapshots.borrow().clone(), snapshot };
        let mut engine = Watch::new(zk, path, true, WatchMode::Auto, follower);
        let first = engine.first_sync(zk.connection_timeout()).await?;
        Ok(ServiceCache { path: path.to_owned(), snapshots, _alive: engine.spawn_following(Some(first)) })
    }
}

impl<P> ServiceCache<P> {
    /// The service's path, `<base path>/<name>`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(discovery: zkr_recipes::discovery::ServiceDiscovery<serde_json::Value>) -> Result<(), zkr_recipes::discovery::DiscoveryError> {
    /// let cache = discovery.service_cache("orders").await?;
    /// assert!(cache.path().ends_with("/orders"));
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The latest instances, shared: what a provider picks from.
    pub(super) fn current(&self) -> Arc<Instances<P>> {
        self.snapshots.borrow().clone()
    }

    /// How many instances the cache holds.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(cache: zkr_recipes::discovery::ServiceCache<serde_json::Value>) {
    /// println!("{} instances of {}", cache.len(), cache.path());
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.snapshots.borrow().entries.len()
    }

    /// Does the cache hold no instance?
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(cache: zkr_recipes::discovery::ServiceCache<serde_json::Value>) {
    /// if cache.is_empty() {
    ///     println!("nobody serves {}", cache.path());
    /// }
    /// # }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Is what the cache holds unconfirmed by ZooKeeper (its session ended; a new one is
    /// being read)?
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(cache: zkr_recipes::discovery::ServiceCache<serde_json::Value>) {
    /// if cache.is_stale() {
    ///     println!("the instances may be out of date");
    /// }
    /// # }
    /// ```
    pub fn is_stale(&self) -> bool {
        self.snapshots.borrow().stale
    }
}

impl<P: Clone> ServiceCache<P> {
    /// The instances, sorted by id (Curator's `getInstances`); nodes that are not Curator's
    /// JSON, or whose id is not their node's name, are skipped (with a warning).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(cache: zkr_recipes::discovery::ServiceCache<serde_json::Value>) {
    /// for instance in cache.instances() {
    ///     println!("{} at {}:{:?}", instance.id, instance.address, instance.port);
    /// }
    /// # }
    /// ```
    pub fn instances(&self) -> Vec<ServiceInstance<P>> {
        self.current().iter().cloned().collect()
    }
}

impl<P: Clone + Send + Sync + 'static> ServiceCache<P> {
    /// The instances now, then again after every change of the service's nodes (Curator's
    /// `ServiceCacheListener.cacheChanged`, with the instances it would read). A subscriber
    /// that falls behind skips to the latest instances; nothing is queued for it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(cache: zkr_recipes::discovery::ServiceCache<serde_json::Value>) {
    /// use futures::StreamExt;
    ///
    /// let mut changes = cache.changes();
    /// while let Some(instances) = changes.next().await {
    ///     println!("{} instances", instances.len());
    /// }
    /// # }
    /// ```
    pub fn changes(&self) -> impl Stream<Item = Vec<ServiceInstance<P>>> + Send + Unpin + 'static {
        tokio_stream::wrappers::WatchStream::new(self.snapshots.clone())
            .map(|instances| instances.iter().cloned().collect())
    }
}

/// An instance, and its node's name when that is not the id: a
/// [`DynamicSequential`](super::ServiceType::DynamicSequential) instance's node is
/// `_c_<uuid>-<id><sequence, 10 digits>` (protected, as Curator creates it). Boxed twice, so
/// that the common case costs one pointer's room.
pub(super) struct Entry<P> {
    pub(super) instance: Arc<ServiceInstance<P>>,
    node: Option<Box<Box<str>>>,
}

impl<P> Clone for Entry<P> {
    fn clone(&self) -> Self {
        Entry { instance: self.instance.clone(), node: self.node.clone() }
    }
}

impl<P> Entry<P> {
    fn key(&self) -> (&str, Option<&str>) {
        (&self.instance.id, self.node.as_deref().map(|name| &**name))
    }
}

/// The instances at one moment, sorted by id (then node name), and where the disabled ones
/// are: what a provider picks from without a copy of the list per pick.
pub(super) struct Instances<P> {
    entries: Vec<Entry<P>>,
    /// The positions of the disabled instances, in order (most often none).
    disabled: Vec<u32>,
    stale: bool,
}

impl<P> Clone for Instances<P> {
    fn clone(&self) -> Self {
        Instances { entries: self.entries.clone(), disabled: self.disabled.clone(), stale: self.stale }
    }
}

impl<P> Instances<P> {
    fn unread() -> Self {
        Instances { entries: Vec::new(), disabled: Vec::new(), stale: true }
    }

    /// How many instances are enabled.
    pub(super) fn enabled_count(&self) -> usize {
        self.entries.len() - self.disabled.len()
    }

    /// The `n`th enabled instance (`n < enabled_count()`).
    pub(super) fn nth_enabled(&self, n: usize) -> &ServiceInstance<P> {
        let mut k = n;
        for &d in &self.disabled {
            if d as usize > k {
                break;
            }
            k += 1;
        }
        &self.entries[k].instance
    }

    /// The instances in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &ServiceInstance<P>> {
        self.entries.iter().map(|e| &*e.instance)
    }

    /// An instance with `id` (the first by sequence).
    pub(super) fn find_id(&self, id: &str) -> Option<&ServiceInstance<P>> {
        let k = self.entries.partition_point(|e| e.instance.id.as_str() < id);
        self.entries.get(k).map(|e| &*e.instance).filter(|i| i.id == id)
    }

    /// Where the node named `name` is, if the copy holds it.
    fn position(&self, name: &str) -> Option<usize> {
        let find = |key: (&str, Option<&str>)| self.entries.binary_search_by(|e| e.key().cmp(&key)).ok();
        find((name, None)).or_else(|| find((sequenced_id(name)?, Some(name))))
    }

    fn remove(&mut self, name: &str) {
        if let Some(k) = self.position(name) {
            self.entries.remove(k);
        }
    }

    fn insert(&mut self, entry: Entry<P>) {
        match self.entries.binary_search_by(|e| e.key().cmp(&entry.key())) {
            Ok(k) => self.entries[k] = entry,
            Err(k) => self.entries.insert(k, entry),
        }
    }

    fn index_enabled(&mut self) {
        let disabled = self.entries.iter().enumerate().filter(|(_, e)| !e.instance.enabled);
        self.disabled = disabled.map(|(k, _)| k as u32).collect();
        self.entries.shrink_to_fit();
    }
}

/// The id in a sequential instance's node name, `[_c_<uuid>-]<id><10 digits>`.
fn sequenced_id(name: &str) -> Option<&str> {
    let name = zkr_connection::protected::normalize(name);
    let cut = name.len().checked_sub(10)?;
    let (id, digits) = (name.get(..cut)?, name.get(cut..)?);
    (!id.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(id)
}

/// Decodes the node `name` of `dir` into an entry: `None` (with a warning) when it is not
/// Curator's JSON, or its id is not its name (with or without a sequence).
fn decode<P: DeserializeOwned>(dir: &str, name: &str, data: &[u8]) -> Option<Entry<P>> {
    let instance = super::service::parse::<P>(&path::join(dir, name), data)?;
    let node = if instance.id == name {
        None
    } else if sequenced_id(name) == Some(instance.id.as_str()) {
        Some(Box::new(name.into()))
    } else {
        tracing::warn!(path = ?path::join(dir, name), id = ?instance.id, "instance id differs from its node's name; skipped");
        return None;
    };
    Some(Entry { instance: Arc::new(instance), node })
}

/// The policy on the watch engine: the decoded instances, one snapshot per burst.
struct Follower<P> {
    dir: String,
    /// The latest snapshot; copied on the first change of a burst (the channel shares it).
    current: Arc<Instances<P>>,
    snapshot: watch::Sender<Arc<Instances<P>>>,
}

impl<P: DeserializeOwned + Send + Sync + 'static> Follower<P> {
    /// Every child of the directory, decoded, in multi-reads; none while it does not exist.
    async fn read_all(&self, client: &SessionClient) -> ZkResult<Vec<Entry<P>>> {
        let names = list(client, &self.dir).await?;
        let paths: Vec<String> = names.iter().map(|n| path::join(&self.dir, n)).collect();
        let mut entries = Vec::with_capacity(names.len());
        for (name, reply) in names.iter().zip(multi_read(client, &paths, false).await?) {
            match reply {
                MultiReadResult::Data { data, .. } => entries.extend(decode(&self.dir, name, &data)),
                MultiReadResult::Error { err: zookeeper_client::Error::NoNode } => {}
                MultiReadResult::Error { err } => return Err(err),
                _ => {}
            }
        }
        Ok(entries)
    }

    fn publish(&mut self) {
        self.snapshot.send_replace(self.current.clone());
    }
}

impl<P: DeserializeOwned + Send + Sync + 'static> Consumer for Follower<P> {
    type Read = Vec<Entry<P>>;

    fn read<'a>(&'a self, session: &'a Session) -> impl Future<Output = ZkResult<Self::Read>> + Send + 'a {
        self.read_all(session.client())
    }

    /// Before 3.6: the directory and its children, with one-shot watches on all of them.
    async fn read_watched(&self, session: &Session) -> ZkResult<(Self::Read, Vec<OneshotWatcher>)> {
        let (nodes, watchers) = read_tree(session.client(), &self.dir, Some(1), true).await?;
        let entries = nodes
            .iter()
            .filter_map(|(node, (data, _))| decode(&self.dir, child_name(&self.dir, node)?, data))
            .collect();
        Ok((entries, watchers))
    }

    fn reset(&mut self, mut read: Self::Read) {
        read.sort_by(|a, b| a.key().cmp(&b.key()));
        read.dedup_by(|a, b| a.key() == b.key());
        let mut instances = Instances { entries: read, disabled: Vec::new(), stale: false };
        instances.index_enabled();
        self.current = Arc::new(instances);
        self.publish();
    }

    /// Reads the children the burst names (pipelined: each read is at least as new as its
    /// event) and applies them all, or none when one read failed (the resync reads all).
    async fn apply(&mut self, client: &SessionClient, burst: Vec<WatchedEvent>) -> ZkResult<Flow> {
        let mut names: Vec<&str> = Vec::new();
        for event in &burst {
            let relevant = matches!(
                event.event_type,
                EventType::NodeCreated | EventType::NodeDataChanged | EventType::NodeDeleted
            );
            match child_name(&self.dir, &event.path) {
                Some(name) if relevant && !names.contains(&name) => names.push(name),
                _ => {}
            }
        }
        let replies: Vec<_> = names.iter().map(|n| client.get_data(&path::join(&self.dir, n))).collect();
        let mut found = Vec::with_capacity(names.len());
        for reply in replies {
            found.push(match reply.await {
                Ok((data, _)) => Some(data),
                Err(zookeeper_client::Error::NoNode) => None,
                Err(e) => return Err(e),
            });
        }
        if !names.is_empty() {
            let instances = Arc::make_mut(&mut self.current);
            for (name, data) in names.into_iter().zip(found) {
                instances.remove(name);
                if let Some(entry) = data.and_then(|data| decode(&self.dir, name, &data)) {
                    instances.insert(entry);
                }
            }
            instances.index_enabled();
        }
        Ok(Flow::Continue(()))
    }

    fn burst_done(&mut self) {
        if !Arc::ptr_eq(&self.current, &self.snapshot.borrow()) {
            self.publish();
        }
    }

    fn session_ended(&mut self) {
        Arc::make_mut(&mut self.current).stale = true;
        self.publish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(id: &str, enabled: bool) -> Vec<u8> {
        let mut instance = ServiceInstance::builder("api", serde_json::json!({})).id(id).build();
        instance.enabled = enabled;
        instance.to_json().unwrap()
    }

    fn ids(instances: &Instances<serde_json::Value>) -> Vec<String> {
        instances.entries.iter().map(|e| format!("{}@{}", e.instance.id, e.key().1.unwrap_or(""))).collect()
    }

    const PROTECTED: &str = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-";

    #[test]
    fn a_node_is_an_instance_only_under_its_own_id() {
        assert!(decode::<serde_json::Value>("/s/api", "a", &instance("a", true)).is_some());
        let name = format!("{PROTECTED}a0000000007");
        let sequenced = decode::<serde_json::Value>("/s/api", &name, &instance("a", true)).unwrap();
        assert_eq!(sequenced.key(), ("a", Some(name.as_str())));
        assert!(decode::<serde_json::Value>("/s/api", "a0000000007", &instance("a", true)).is_some());
        assert!(decode::<serde_json::Value>("/s/api", "b", &instance("a", true)).is_none());
        assert!(decode::<serde_json::Value>("/s/api", "a000000007", &instance("a", true)).is_none());
        assert!(decode::<serde_json::Value>("/s/api", "a", b"not json").is_none());
        assert_eq!(sequenced_id("0000000001"), None, "no id before the sequence");
    }

    #[test]
    fn nodes_are_found_by_name_with_or_without_a_sequence() {
        let mut instances = Instances::unread();
        let (one, two) = (format!("{PROTECTED}a0000000001"), format!("{PROTECTED}a0000000002"));
        for (name, id) in [("b", "b"), (two.as_str(), "a"), ("a", "a"), (one.as_str(), "a")] {
            instances.insert(decode("/s", name, &instance(id, id != "b")).unwrap());
        }
        instances.index_enabled();
        assert_eq!(ids(&instances), ["a@".to_owned(), format!("a@{one}"), format!("a@{two}"), "b@".into()]);
        assert_eq!(instances.disabled, [3]);
        assert_eq!(instances.enabled_count(), 3);
        assert_eq!(instances.nth_enabled(2).id, "a");
        assert_eq!(instances.find_id("a").map(|i| i.id.as_str()), Some("a"));
        assert!(instances.find_id("c").is_none());
        instances.remove(&one);
        instances.remove("b");
        instances.remove("c");
        instances.remove(&format!("{PROTECTED}c0000000001"));
        instances.index_enabled();
        assert_eq!(ids(&instances), ["a@".to_owned(), format!("a@{two}")]);
    }

    #[test]
    fn the_nth_enabled_instance_skips_the_disabled_ones() {
        let mut instances: Instances<serde_json::Value> = Instances::unread();
        for (id, enabled) in [("a", false), ("b", true), ("c", false), ("d", true), ("e", true)] {
            instances.insert(decode("/s", id, &instance(id, enabled)).unwrap());
        }
        instances.index_enabled();
        assert_eq!(instances.enabled_count(), 3);
        let picked: Vec<&str> = (0..3).map(|n| instances.nth_enabled(n).id.as_str()).collect();
        assert_eq!(picked, ["b", "d", "e"]);
    }

    #[test]
    fn a_burst_is_published_once_and_shares_what_it_did_not_change() {
        let (snapshot, snapshots) = watch::channel(Arc::new(Instances::unread()));
        let mut follower: Follower<serde_json::Value> =
            Follower { dir: "/s".into(), current: snapshots.borrow().clone(), snapshot };
        follower.reset(vec![decode("/s", "a", &instance("a", true)).unwrap()]);
        let first = snapshots.borrow().clone();
        assert!(!first.stale);
        follower.burst_done();
        assert!(Arc::ptr_eq(&first, &snapshots.borrow()), "nothing changed, nothing published");
        Arc::make_mut(&mut follower.current).insert(decode("/s", "b", &instance("b", true)).unwrap());
        follower.burst_done();
        let second = snapshots.borrow().clone();
        assert_eq!(second.entries.len(), 2);
        assert!(Arc::ptr_eq(&first.entries[0].instance, &second.entries[0].instance));
        follower.session_ended();
        assert!(snapshots.borrow().stale);
    }
}
