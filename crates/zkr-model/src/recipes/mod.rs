//! One model per recipe.

pub mod barrier;
pub mod mutex;
pub mod queue;
