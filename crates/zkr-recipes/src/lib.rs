//! Curator's ZooKeeper recipes for async Rust, on [`zkr_connection::ZkClient`].
//!
//! Start with [`locks::InterProcessMutex`]: a distributed, reentrant (per tokio task) lock that
//! Apache Curator processes share. Every lock recipe is built on [`locks::LockInternals`] with a
//! pluggable [`locks::LockInternalsDriver`] that decides how contender nodes are named and
//! ordered.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use zkr_connection::ZkClient;
//! use zkr_recipes::locks::InterProcessMutex;
//!
//! let zk = ZkClient::connect("127.0.0.1:2181").await?;
//! let mutex = InterProcessMutex::new(&zk, "/locks/orders")?;
//! let guard = mutex.acquire().await?;
//! // ... only one process in the ensemble runs this at a time ...
//! guard.release().await?;
//! # Ok(()) }
//! ```

pub mod config;
pub mod id;
pub mod leader;
pub mod locks;
