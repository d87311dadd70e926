//! One model per recipe.

pub mod barrier;
pub mod cache;
pub mod counter;
pub mod ids;
pub mod internals;
pub mod latch;
pub mod lease;
pub mod mutex;
pub mod queue;
pub mod rwlock;
pub mod semaphore;
