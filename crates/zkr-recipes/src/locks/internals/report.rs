//! What the lock mechanism tells the world: the `tracing` events of acquire, release and loss,
//! and their figures (`crate::telemetry`). Every lock recipe goes through [`LockInternals`]
//! and [`LockNode`], so they report here and nowhere else.
//!
//! [`LockInternals`]: super::LockInternals

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::LockNode;
use crate::locks::{LockError, LostReason};
use crate::telemetry::{self, Outcome};

/// A hold's report, shared by a [`LockNode`]'s clones: whether its loss has been told (once,
/// however often it is asked about), and the hold's figures (`zkr_locks_held`, ended by the
/// release or the loss, whichever comes first, or when the last clone goes).
#[derive(Debug, Clone)]
pub(super) struct LossReport(Arc<(AtomicBool, telemetry::Hold)>);

impl LossReport {
    /// The report of a hold that starts now.
    pub(super) fn start() -> Self {
        LossReport(Arc::new((AtomicBool::new(false), telemetry::Hold::start())))
    }

    /// The hold ended by its release.
    pub(super) fn hold_ended(&self) {
        self.0 .1.end();
    }

    /// Reports that `node`'s lock is lost for `reason`, unless that was already done.
    pub(super) fn once(&self, node: &LockNode, reason: LostReason) {
        self.0 .1.end();
        if self.0 .0.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::warn!(
            node = %node.path(),
            fencing_token = node.fencing_token(),
            reason = reason.label(),
            "lock lost: {reason}"
        );
        telemetry::lock_lost(reason);
    }
}

/// An attempt on the lock ended with `result` after `waited` (in the attempt's span, which names
/// the lock's path).
pub(super) fn attempt(result: &Result<Option<LockNode>, LockError>, waited: Duration) {
    let outcome = match result {
        Ok(Some(node)) => {
            tracing::debug!(
                node = %node.name,
                ?waited,
                fencing_token = node.fencing_token(),
                outcome = Outcome::Acquired.label(),
                "lock acquired"
            );
            Outcome::Acquired
        }
        Ok(None) => {
            tracing::debug!(?waited, outcome = Outcome::NotAcquired.label(), "lock not acquired");
            Outcome::NotAcquired
        }
        Err(error) => {
            tracing::debug!(?waited, outcome = Outcome::Failed.label(), %error, "lock attempt failed");
            Outcome::Failed
        }
    };
    telemetry::lock_attempt(outcome, waited);
}

/// `node` was released (in the release's span, which names the lock and the node): `how` says
/// what became of its delete (`deleted`, `in_background`, `already_gone`, `failed`).
pub(super) fn released(node: &LockNode, how: &'static str) {
    tracing::debug!(fencing_token = node.fencing_token(), how, "lock released");
    node.loss.hold_ended();
    telemetry::lock_released(how);
}
