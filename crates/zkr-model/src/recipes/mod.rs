//! One model per recipe.

pub mod mutex;
