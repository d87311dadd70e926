//! Leader election. Start with [`LeaderLatch`]: every participant queues a node; the first
//! one leads, the others wait for the node ahead of them to go. [`LeaderSelector`] runs your
//! async work while leader and cancels it when leadership is lost. Built on the lock machinery
//! ([`LockInternals`](crate::locks::LockInternals) with the standard driver), with Apache
//! Curator's node names, so Rust and Java participants share one election. The leader can
//! publish a value without giving leadership up ([`LeaderLatch::proclaim`]), and anyone can
//! follow who leads and with what value ([`LeaderObserver`]): etcd's `Proclaim` and `Observe`.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
//! use zkr_recipes::leader::LeaderLatch;
//!
//! let latch = LeaderLatch::start(&zk, "/services/billing/leader", "billing-1").await?;
//! latch.await_leadership().await?;
//! # Ok(()) }
//! ```

pub mod latch;
mod observer;
pub mod selector;
mod term;

pub(crate) use latch::participants_of;
pub use latch::{latch_participants, LatchState, LeaderLatch, Participant, LATCH_NAME};
pub use observer::LeaderObserver;
pub use selector::{LeaderSelector, LeaderSelectorBuilder};
pub use term::Leadership;

/// After a failed join of the election: logs it and waits `pause`; `false` when `closing` came
/// first. Shared by the latch's and the selector's participation loops.
async fn retry_join(
    path: &str,
    error: &crate::locks::LockError,
    pause: &mut zkr_connection::retry::SessionPause,
    closing: &tokio::sync::Notify,
) -> bool {
    tracing::warn!(%path, %error, "joining the election failed; trying again");
    tokio::select! {
        () = pause.sleep() => true,
        () = closing.notified() => false,
    }
}
