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
mod classify;
pub mod codec;
pub mod config;
pub mod counters;
pub mod discovery;
mod errors;
mod fence;
mod host;
pub mod id;
pub mod kazoo;
pub mod layouts;
pub mod leader;
pub mod locks;
pub mod model;
pub mod nodes;
mod owned;
pub mod partition;
pub mod queues;
mod telemetry;

pub use classify::classify;
pub use telemetry::describe_metrics;
pub use zkr_connection::{Classify, ErrorKind};
pub(crate) mod watch;
