//! Unique IDs: three generators behind one trait, [`IdGenerator`].
//!
//! Which to use:
//!
//! | generator | where IDs come from | unique | monotonic per generator | globally ordered | dense | speed |
//! |---|---|---|---|---|---|---|
//! | [`SequentialIdGenerator`] | ZooKeeper sequence nodes, batched | yes | yes | yes | no | two or three quorum writes per batch |
//! | [`SegmentIdGenerator`] | ranges claimed from a counter node (Meituan Leaf) | yes | yes | no | nearly | memory, millions/s |
//! | [`SnowflakeIdGenerator`] | clock + leased worker ID (Twitter Snowflake) | yes | yes | roughly (by time) | no | memory, ~4 million/s per worker |
//!
//! Start with [`SegmentIdGenerator`] for database keys and order numbers, with
//! [`SnowflakeIdGenerator`] when IDs should say when they were made, and with
//! [`SequentialIdGenerator`] when every ID must be larger than every ID handed out before it,
//! anywhere. `docs/recipes/ids.md` has the details, failure behaviour and figures.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::id::IdError> {
//! use zkr_recipes::id::{IdGenerator, SegmentIdGenerator};
//!
//! let ids = SegmentIdGenerator::new(&zk, "/ids/orders")?;
//! let one = ids.next().await?;
//! let many = ids.next_batch(1000).await?;
//! assert!(many[0] > one);
//! # Ok(()) }
//! ```

mod error;
pub mod segment;
pub mod sequential;
pub mod snowflake;

pub use error::IdError;
pub use segment::{SegmentIdGenerator, SegmentIdGeneratorBuilder, StepPolicy};
pub use sequential::SequentialIdGenerator;
pub use snowflake::{SnowflakeIdGenerator, SnowflakeIdGeneratorBuilder, SnowflakeLayout, SnowflakeParts};

/// A source of unique 63-bit IDs (they also fit an `i64`). Object safe, so a service can hold
/// an `Arc<dyn IdGenerator>` and choose the kind in its configuration.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::id::IdError> {
/// use std::sync::Arc;
/// use zkr_recipes::id::{IdGenerator, SequentialIdGenerator};
///
/// let ids: Arc<dyn IdGenerator> = Arc::new(SequentialIdGenerator::new(&zk, "/ids/invoices")?);
/// let invoice = ids.next().await?;
/// # Ok(()) }
/// ```
#[async_trait::async_trait]
pub trait IdGenerator: Send + Sync + std::fmt::Debug {
    /// One ID.
    ///
    /// # Errors
    /// Each generator documents its errors; all return [`IdError::Connection`] when
    /// ZooKeeper cannot be reached within the retry policy.
    ///
    /// # Cancel safety
    /// Every generator's `next` is cancel safe: a dropped call leaves nothing behind in
    /// ZooKeeper, and an ID it might have returned is never handed out to anyone else.
    async fn next(&self) -> Result<u64, IdError>;

    /// `n` IDs, increasing; each generator documents its largest batch.
    ///
    /// # Errors
    /// As [`next`](Self::next), and [`IdError::InvalidArgument`] for a batch over the limit.
    ///
    /// # Cancel safety
    /// As [`next`](Self::next).
    async fn next_batch(&self, n: usize) -> Result<Vec<u64>, IdError>;
}
