//! One model per recipe.

pub mod mutex;
pub mod queue;
