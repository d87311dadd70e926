//! The doc blocks of zkr's guides, compiled as a user's crate compiles them: this crate
//! depends only on the published zkr crates and the dependencies a user's service has (tokio,
//! futures, serde, serde_json, tracing-subscriber, a metrics exporter), never on
//! zookeeper-client itself, so a block that imports something a user cannot fails here.
//! `lint.rs` holds the same rule for the rustdoc examples inside the crates; `names` checks
//! that every zkr name the Curator docs give exists in the crates' source; `layers` holds the
//! crates' module structure (floors, no circles of imports).

/// Every ```rust block of the README and the guides in `docs/`, compiled by
/// `cargo test -p zkr-guides --doc`: each markdown file is one item's doc comment (add an item
/// for a new guide). The blocks are complete programs or functions with no hidden lines, so they
/// must compile without warnings too; only never-called functions are allowed.
#[cfg(doctest)]
#[doc(test(attr(deny(warnings), allow(dead_code))))]
mod guides {
    #[doc = include_str!("../../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../../docs/architecture.md")]
    pub struct Architecture;
    #[doc = include_str!("../../../docs/benchmarks.md")]
    pub struct Benchmarks;
    #[doc = include_str!("../../../docs/connection.md")]
    pub struct Connection;
    #[doc = include_str!("../../../docs/migrating-from-curator.md")]
    pub struct MigratingFromCurator;
    #[doc = include_str!("../../../docs/curator-api-index.md")]
    pub struct CuratorApiIndex;
    #[doc = include_str!("../../../docs/observability.md")]
    pub struct Observability;
    #[doc = include_str!("../../../docs/reliability.md")]
    pub struct Reliability;
    #[doc = include_str!("../../../docs/testing.md")]
    pub struct Testing;
    #[doc = include_str!("../../../docs/why-zookeeper.md")]
    pub struct WhyZookeeper;
    #[doc = include_str!("../../../docs/ui.md")]
    pub struct Ui;
    #[doc = include_str!("../../../docs/recipes/barriers.md")]
    pub struct RecipesBarriers;
    #[doc = include_str!("../../../docs/recipes/cache.md")]
    pub struct RecipesCache;
    #[doc = include_str!("../../../docs/recipes/config.md")]
    pub struct RecipesConfig;
    #[doc = include_str!("../../../docs/recipes/counters.md")]
    pub struct RecipesCounters;
    #[doc = include_str!("../../../docs/recipes/discovery.md")]
    pub struct RecipesDiscovery;
    #[doc = include_str!("../../../docs/recipes/nodes.md")]
    pub struct RecipesNodes;
    #[doc = include_str!("../../../docs/recipes/partition.md")]
    pub struct RecipesPartition;
    #[doc = include_str!("../../../docs/recipes/ids.md")]
    pub struct RecipesIds;
    #[doc = include_str!("../../../docs/recipes/leader.md")]
    pub struct RecipesLeader;
    #[doc = include_str!("../../../docs/recipes/mutex.md")]
    pub struct RecipesMutex;
    #[doc = include_str!("../../../docs/recipes/read-write-lock.md")]
    pub struct RecipesReadWriteLock;
    #[doc = include_str!("../../../docs/recipes/semaphore.md")]
    pub struct RecipesSemaphore;
    #[doc = include_str!("../../../docs/recipes/queues.md")]
    pub struct RecipesQueues;
    #[doc = include_str!("../../../docs/recipes/kazoo.md")]
    pub struct RecipesKazoo;
    #[doc = include_str!("../../../docs/recipes/models.md")]
    pub struct RecipesModels;
    #[doc = include_str!("../../../crates/zkr-connection/README.md")]
    pub struct ConnectionReadme;
    #[doc = include_str!("../../../crates/zkr-recipes/README.md")]
    pub struct RecipesReadme;
    #[doc = include_str!("../../../crates/zkr-testing/README.md")]
    pub struct TestingReadme;
}

#[cfg(test)]
mod cancel_docs;
#[cfg(test)]
mod layers;
#[cfg(test)]
mod lint;
#[cfg(test)]
mod names;
