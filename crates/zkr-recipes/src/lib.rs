#![doc = include_str!("../README.md")]
//!
//! Curator's ZooKeeper recipes for async Rust, on [`zkr_connection::ZkClient`].
//!
//! Start with [`locks::InterProcessMutex`]: a distributed, reentrant (per tokio task) lock that
//! Apache Curator processes share. Every lock recipe is built on [`locks::LockInternals`] with a
//! pluggable [`locks::LockInternalsDriver`] that decides how contender nodes are named and
//! ordered.
//!
//! # Features
//!
//! - `toml`, `yaml`: the `config::Toml` and `config::Yaml` codecs (JSON, UTF-8 and raw bytes
//!   are always there).
//! - `metrics`: lock waits, holds and losses, watch resyncs and lag, cache and queue sizes
//!   (and, through `zkr-connection`'s feature of the same name, session states and retries) as
//!   figures of the `metrics` facade crate; `docs/observability.md` lists them with the
//!   `tracing` spans, which are always there.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod barriers;
pub mod cache;
pub mod config;
pub mod counters;
pub mod discovery;
mod errors;
mod fence;
mod host;
pub mod id;
pub mod leader;
pub mod locks;
pub mod nodes;
pub mod partition;
pub mod queues;
mod telemetry;
pub(crate) mod watch;

/// Every ```rust block of the README and the guides in `docs/`, compiled by
/// `cargo test -p zkr-recipes --doc`: each markdown file is one item's doc comment (add an item
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
    #[doc = include_str!("../../../docs/observability.md")]
    pub struct Observability;
    #[doc = include_str!("../../../docs/reliability.md")]
    pub struct Reliability;
    #[doc = include_str!("../../../docs/testing.md")]
    pub struct Testing;
    #[doc = include_str!("../../../docs/why-zookeeper.md")]
    pub struct WhyZookeeper;
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
}
