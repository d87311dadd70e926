//! [`ServiceCache`] and [`ServiceProvider`]: instances kept up to date, and one picked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::RngExt as _;
use serde::de::DeserializeOwned;
use zkr_connection::ZkClient;

use super::service::parse;
use super::{DiscoveryError, ServiceInstance};
use crate::cache::{CacheMode, CacheSnapshot, CuratorCache};

/// A service's instances as a [`CuratorCache`] of `<base path>/<name>` holds them (Curator's
/// `ServiceCache`). Cheap to clone.
///
/// # Examples
///
/// ```no_run
/// # async fn f(discovery: zkr_recipes::discovery::ServiceDiscovery<serde_json::Value>) -> Result<(), zkr_recipes::discovery::DiscoveryError> {
/// let cache = discovery.service_cache("orders").await?;
/// let mut changes = cache.cache().snapshots();
/// while changes.changed().await.is_ok() {
///     println!("{} instances", cache.instances().len());
/// }
/// # Ok(()) }
/// ```
pub struct ServiceCache<P> {
    path: String,
    cache: CuratorCache,
    /// The instances parsed from the snapshot they came from, shared by the clones: each
    /// snapshot's JSON is parsed once, not on every `instances()` (a provider's every pick).
    parsed: Arc<Mutex<Option<Parsed<P>>>>,
}

/// A snapshot and its instances.
type Parsed<P> = (Arc<CacheSnapshot>, Arc<[ServiceInstance<P>]>);

impl<P> std::fmt::Debug for ServiceCache<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceCache").field("path", &self.path).finish()
    }
}

impl<P> Clone for ServiceCache<P> {
    fn clone(&self) -> Self {
        ServiceCache { path: self.path.clone(), cache: self.cache.clone(), parsed: self.parsed.clone() }
    }
}

impl<P: DeserializeOwned> ServiceCache<P> {
    pub(crate) async fn start(zk: &ZkClient, path: &str) -> Result<Self, DiscoveryError> {
        let cache = CuratorCache::builder(zk, path).mode(CacheMode::Children).start().await?;
        Ok(ServiceCache { path: path.to_owned(), cache, parsed: Arc::new(Mutex::new(None)) })
    }

    /// The instances in the latest snapshot, sorted by id; nodes that are not Curator's JSON
    /// are skipped. Parsed once per snapshot.
    fn parsed(&self) -> Arc<[ServiceInstance<P>]> {
        let snapshot = self.cache.snapshot();
        let mut parsed = self.parsed.lock();
        if let Some((seen, instances)) = parsed.as_ref() {
            if Arc::ptr_eq(seen, &snapshot) {
                return instances.clone();
            }
        }
        let children = snapshot.children(&self.path).map(|(name, node)| (name.to_owned(), node.data.clone()));
        let mut instances: Vec<ServiceInstance<P>> = children.filter_map(parse).collect();
        instances.sort_by(|a, b| a.id.cmp(&b.id));
        let instances: Arc<[ServiceInstance<P>]> = instances.into();
        *parsed = Some((snapshot, instances.clone()));
        instances
    }

    /// The cache underneath: its snapshots and events (a registration is a `Created`).
    pub fn cache(&self) -> &CuratorCache {
        &self.cache
    }
}

impl<P: DeserializeOwned + Clone> ServiceCache<P> {
    /// The instances in the latest snapshot, sorted by id (Curator's `getInstances`); nodes
    /// that are not Curator's JSON are skipped.
    pub fn instances(&self) -> Vec<ServiceInstance<P>> {
        self.parsed().to_vec()
    }
}

/// How a [`ServiceProvider`] picks among the instances (Curator's `ProviderStrategy`s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProviderStrategy {
    /// Each in turn (`RoundRobinStrategy`, Curator's default).
    #[default]
    RoundRobin,
    /// Any, at random (`RandomStrategy`).
    Random,
    /// The same one as long as it is there (`StickyStrategy` over round robin).
    Sticky,
}

/// When an instance reported failing is skipped (Curator's `DownInstancePolicy`): after
/// `error_threshold` errors, for `timeout` from the last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownInstancePolicy {
    /// How long a down instance is skipped.
    pub timeout: Duration,
    /// How many errors make an instance down.
    pub error_threshold: u32,
}

impl Default for DownInstancePolicy {
    /// Curator's: 30 s, 2 errors.
    fn default() -> Self {
        DownInstancePolicy { timeout: Duration::from_secs(30), error_threshold: 2 }
    }
}

/// Hands out one instance of a service at a time (Curator's `ServiceProvider`): the enabled
/// instances of a [`ServiceCache`], less those reported down, picked by a
/// [`ProviderStrategy`].
///
/// # Examples
///
/// ```no_run
/// # async fn f(discovery: zkr_recipes::discovery::ServiceDiscovery<serde_json::Value>) -> Result<(), zkr_recipes::discovery::DiscoveryError> {
/// use zkr_recipes::discovery::{ProviderStrategy, ServiceProvider};
///
/// let provider = ServiceProvider::new(discovery.service_cache("orders").await?, ProviderStrategy::RoundRobin);
/// if let Some(instance) = provider.get_instance() {
///     // ... call it; on failure:
///     provider.note_error(&instance);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ServiceProvider<P> {
    cache: ServiceCache<P>,
    strategy: ProviderStrategy,
    policy: DownInstancePolicy,
    next: AtomicUsize,
    sticky: Mutex<Option<String>>,
    errors: Mutex<HashMap<String, (u32, Instant)>>,
}

impl<P: DeserializeOwned + Clone> ServiceProvider<P> {
    /// A provider over `cache` with Curator's default [`DownInstancePolicy`].
    pub fn new(cache: ServiceCache<P>, strategy: ProviderStrategy) -> Self {
        Self::with_policy(cache, strategy, DownInstancePolicy::default())
    }

    /// A provider with its own down-instance policy.
    pub fn with_policy(
        cache: ServiceCache<P>,
        strategy: ProviderStrategy,
        policy: DownInstancePolicy,
    ) -> Self {
        ServiceProvider {
            cache,
            strategy,
            policy,
            next: AtomicUsize::new(0),
            sticky: Mutex::new(None),
            errors: Mutex::new(HashMap::new()),
        }
    }

    /// The instances it picks from: enabled, not down (Curator's `getAllInstances` with its
    /// filters).
    pub fn get_all_instances(&self) -> Vec<ServiceInstance<P>> {
        let now = Instant::now();
        let mut errors = self.errors.lock();
        errors.retain(|_, (_, last)| now.duration_since(*last) < self.policy.timeout);
        let down = |id: &str| errors.get(id).is_some_and(|(count, _)| *count >= self.policy.error_threshold);
        self.cache.parsed().iter().filter(|i| i.enabled && !down(&i.id)).cloned().collect()
    }

    /// One instance, or `None` when there is none to give (Curator's `getInstance`).
    pub fn get_instance(&self) -> Option<ServiceInstance<P>> {
        let instances = self.get_all_instances();
        if instances.is_empty() {
            return None;
        }
        match self.strategy {
            ProviderStrategy::RoundRobin => Some(self.round_robin(&instances)),
            ProviderStrategy::Random => Some(instances[rand::rng().random_range(0..instances.len())].clone()),
            ProviderStrategy::Sticky => {
                let mut sticky = self.sticky.lock();
                if let Some(same) = sticky.as_deref().and_then(|id| instances.iter().find(|i| i.id == id)) {
                    return Some(same.clone());
                }
                let picked = self.round_robin(&instances);
                *sticky = Some(picked.id.clone());
                Some(picked)
            }
        }
    }

    /// Reports that calling `instance` failed (Curator's `noteError`): after the policy's
    /// threshold it is skipped for the policy's timeout.
    pub fn note_error(&self, instance: &ServiceInstance<P>) {
        let mut errors = self.errors.lock();
        let entry = errors.entry(instance.id.clone()).or_insert((0, Instant::now()));
        entry.0 += 1;
        entry.1 = Instant::now();
    }

    fn round_robin(&self, instances: &[ServiceInstance<P>]) -> ServiceInstance<P> {
        instances[self.next.fetch_add(1, Ordering::Relaxed) % instances.len()].clone()
    }
}
