//! A model checker of zkr's recipe protocols (issue 45), on [`stateright`].
//!
//! [`zk`] is ZooKeeper as a client sees it (the tree, sessions, requests, replies, watches),
//! [`lag`] its reads from a lagging server; [`world`] the clients, their connections and the faults, as a [`stateright::Model`] that
//! runs one [`world::Recipe`]; [`recipes`] has one module per recipe, each taking the steps its
//! code in `crates/zkr-recipes/src` takes (every step names the code it mirrors); [`bugs`]
//! re-introduces known defects (and names proposed fixes); [`symmetry`] lets the checker keep
//! one state of those that differ by a permutation of interchangeable users; [`trace`] prints
//! what the checker found. `docs/reliability.md`
//! ("Model checking") says what the model assumes and leaves out.

pub mod bugs;
pub mod check;
pub mod lag;
pub mod recipes;
pub mod symmetry;
pub mod trace;
pub mod watches;
pub mod world;
pub mod zk;
