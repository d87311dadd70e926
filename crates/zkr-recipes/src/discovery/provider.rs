//! [`ServiceCache`] and [`ServiceProvider`]: instances kept up to date, and one picked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::RngExt as _;
use serde::de::DeserializeOwned;

use super::cache::{Instances, ServiceCache};
use super::ServiceInstance;

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
/// instances of a [`ServiceCache`], less those reported down and those a filter refuses,
/// picked by a [`ProviderStrategy`] or a strategy of your own.
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
pub struct ServiceProvider<P> {
    cache: ServiceCache<P>,
    strategy: ProviderStrategy,
    policy: DownInstancePolicy,
    filters: Vec<InstanceFilter<P>>,
    picker: Option<Picker<P>>,
    next: AtomicUsize,
    sticky: Mutex<Option<String>>,
    errors: Mutex<HashMap<String, (u32, Instant)>>,
}

/// Curator's `InstanceFilter`: keeps the instances for which it is true.
type InstanceFilter<P> = Arc<dyn Fn(&ServiceInstance<P>) -> bool + Send + Sync>;
/// How [`ServiceProvider::nth_offered`] chooses.
#[derive(Clone, Copy)]
enum Pick {
    Next,
    Random,
}

/// A custom strategy: the index of the instance to give among those offered, or `None`.
type Picker<P> = Arc<dyn Fn(&[ServiceInstance<P>]) -> Option<usize> + Send + Sync>;

impl<P> std::fmt::Debug for ServiceProvider<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceProvider")
            .field("cache", &self.cache)
            .field("strategy", &self.strategy)
            .field("policy", &self.policy)
            .field("filters", &self.filters.len())
            .field("custom_strategy", &self.picker.is_some())
            .finish_non_exhaustive()
    }
}

/// Builds a [`ServiceProvider`] (Curator's `ServiceProviderBuilder`).
#[must_use]
pub struct ServiceProviderBuilder<P> {
    provider: ServiceProvider<P>,
}

impl<P> std::fmt::Debug for ServiceProviderBuilder<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.provider.fmt(f)
    }
}

impl<P> ServiceProviderBuilder<P> {
    /// How it picks (`providerStrategy`). Defaults to [`ProviderStrategy::RoundRobin`].
    pub fn strategy(mut self, strategy: ProviderStrategy) -> Self {
        self.provider.strategy = strategy;
        self
    }

    /// A strategy of your own (Curator's `ProviderStrategy` interface): given the instances
    /// on offer (enabled, not down, through the filters; sorted by id; never empty), the index
    /// of the one to give, or `None` for none. Replaces [`strategy`](Self::strategy).
    pub fn custom_strategy(
        mut self,
        pick: impl Fn(&[ServiceInstance<P>]) -> Option<usize> + Send + Sync + 'static,
    ) -> Self {
        self.provider.picker = Some(Arc::new(pick));
        self
    }

    /// Only instances for which `filter` is true are offered (`additionalFilter`; several
    /// filters must all agree).
    pub fn filter(mut self, filter: impl Fn(&ServiceInstance<P>) -> bool + Send + Sync + 'static) -> Self {
        self.provider.filters.push(Arc::new(filter));
        self
    }

    /// When a failing instance is skipped (`downInstancePolicy`). Defaults to Curator's.
    pub fn down_instance_policy(mut self, policy: DownInstancePolicy) -> Self {
        self.provider.policy = policy;
        self
    }

    /// The provider.
    pub fn build(self) -> ServiceProvider<P> {
        self.provider
    }
}

impl<P> ServiceProvider<P> {
    /// A builder over `cache`: strategy, filters, down-instance policy.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(discovery: zkr_recipes::discovery::ServiceDiscovery<serde_json::Value>) -> Result<(), zkr_recipes::discovery::DiscoveryError> {
    /// use zkr_recipes::discovery::ServiceProvider;
    ///
    /// let provider = ServiceProvider::builder(discovery.service_cache("orders").await?)
    ///     .filter(|i| i.payload.as_ref().is_some_and(|p| p["zone"] == "a"))
    ///     .custom_strategy(|offered| offered.iter().position(|i| i.ssl_port.is_some()).or(Some(0)))
    ///     .build();
    /// # Ok(()) }
    /// ```
    pub fn builder(cache: ServiceCache<P>) -> ServiceProviderBuilder<P> {
        ServiceProviderBuilder {
            provider: ServiceProvider {
                cache,
                strategy: ProviderStrategy::default(),
                policy: DownInstancePolicy::default(),
                filters: Vec::new(),
                picker: None,
                next: AtomicUsize::new(0),
                sticky: Mutex::new(None),
                errors: Mutex::new(HashMap::new()),
            },
        }
    }
}

impl<P: DeserializeOwned + Clone> ServiceProvider<P> {
    /// A provider over `cache` with Curator's default [`DownInstancePolicy`].
    pub fn new(cache: ServiceCache<P>, strategy: ProviderStrategy) -> Self {
        Self::builder(cache).strategy(strategy).build()
    }

    /// A provider with its own down-instance policy.
    pub fn with_policy(
        cache: ServiceCache<P>,
        strategy: ProviderStrategy,
        policy: DownInstancePolicy,
    ) -> Self {
        Self::builder(cache).strategy(strategy).down_instance_policy(policy).build()
    }

    /// The instances it picks from: enabled, not down, through the filters (Curator's
    /// `getAllInstances` with its filters).
    pub fn get_all_instances(&self) -> Vec<ServiceInstance<P>> {
        let instances = self.cache.current();
        let (offered, _) = self.offered();
        instances.iter().filter(|i| offered(i)).cloned().collect()
    }

    /// One instance, or `None` when there is none to give (Curator's `getInstance`). Without
    /// filters and down instances a pick clones the one instance it gives, whatever the count
    /// (Curator copies the list of instances on every pick); with them it also looks at each
    /// instance once, without a copy.
    pub fn get_instance(&self) -> Option<ServiceInstance<P>> {
        if let Some(pick) = &self.picker {
            let instances = self.get_all_instances();
            return pick(&instances).and_then(|i| instances.get(i).cloned());
        }
        let instances = self.cache.current();
        let offered = self.offered();
        if self.strategy == ProviderStrategy::Sticky {
            let mut sticky = self.sticky.lock();
            let same = sticky.as_deref().and_then(|id| instances.find_id(id).filter(|i| offered.0(i)));
            if let Some(same) = same {
                return Some(same.clone());
            }
            let picked = self.nth_offered(&instances, &offered, Pick::Next)?;
            *sticky = Some(picked.id.clone());
            return Some(picked.clone());
        }
        let pick = if self.strategy == ProviderStrategy::Random { Pick::Random } else { Pick::Next };
        self.nth_offered(&instances, &offered, pick).cloned()
    }

    /// Is an instance offered now: enabled, not down, through the filters? And are all the
    /// enabled ones (nothing down, no filter)? The closure holds the errors' lock until dropped.
    fn offered(&self) -> (impl Fn(&ServiceInstance<P>) -> bool + '_, bool) {
        let now = Instant::now();
        let mut errors = self.errors.lock();
        errors.retain(|_, (_, last)| now.duration_since(*last) < self.policy.timeout);
        let threshold = self.policy.error_threshold;
        let any_down = errors.values().any(|(count, _)| *count >= threshold);
        let all_enabled = !any_down && self.filters.is_empty();
        let offered = move |i: &ServiceInstance<P>| {
            i.enabled
                && !(any_down && errors.get(&i.id).is_some_and(|(count, _)| *count >= threshold))
                && self.filters.iter().all(|f| f(i))
        };
        (offered, all_enabled)
    }

    /// The offered instance `pick` chooses: from the enabled ones directly when nothing else
    /// is left out, else by counting the offered ones and walking to the chosen one.
    fn nth_offered<'a>(
        &self,
        instances: &'a Instances<P>,
        (offered, all_enabled): &(impl Fn(&ServiceInstance<P>) -> bool, bool),
        pick: Pick,
    ) -> Option<&'a ServiceInstance<P>> {
        let choose = |count: usize| match pick {
            Pick::Next => self.next.fetch_add(1, Ordering::Relaxed) % count,
            Pick::Random => rand::rng().random_range(0..count),
        };
        if *all_enabled {
            let count = instances.enabled_count();
            return (count > 0).then(|| instances.nth_enabled(choose(count)));
        }
        let count = instances.iter().filter(|i| offered(i)).count();
        if count == 0 {
            return None;
        }
        instances.iter().filter(|i| offered(i)).nth(choose(count))
    }

    /// Reports that calling `instance` failed (Curator's `noteError`): after the policy's
    /// threshold it is skipped for the policy's timeout.
    pub fn note_error(&self, instance: &ServiceInstance<P>) {
        let mut errors = self.errors.lock();
        let entry = errors.entry(instance.id.clone()).or_insert((0, Instant::now()));
        entry.0 += 1;
        entry.1 = Instant::now();
    }
}
