//! What the lock mechanism tells the world: the `tracing` events of acquire, release and loss,
//! and their figures (`crate::telemetry`). Every lock recipe goes through [`LockInternals`]
//! and [`LockNode`], so they report here and nowhere else.
//!
//! [`LockInternals`]: super::LockInternals

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::time::Instant;
use tracing::field::Empty;
use tracing::Span;

use super::LockNode;
use crate::locks::{LockError, LostReason};
use crate::telemetry::{self, Outcome};
use zkr_connection::Classify as _;

/// A hold's report, shared by a [`LockNode`]'s clones: whether its loss has been told (once,
/// however often it is asked about), the hold's figures (`zkr_locks_held`) and its
/// `lock.hold` span: the figures end with the release or the loss, whichever comes first, the
/// span with the release (a loss is recorded on it), and both when the last clone goes.
#[derive(Debug, Clone)]
pub(super) struct LossReport(Arc<Report>);

#[derive(Debug)]
struct Report {
    told: AtomicBool,
    hold: telemetry::Hold,
    span: parking_lot::Mutex<Option<Span>>,
}

impl LossReport {
    /// The report of a hold that starts now.
    pub(super) fn start() -> Self {
        LossReport(Arc::new(Report {
            told: AtomicBool::new(false),
            hold: telemetry::Hold::start(),
            span: parking_lot::Mutex::new(None),
        }))
    }

    /// The hold's span: a child of the release's, which ends it ([`released`]).
    pub(super) fn span(&self) -> Span {
        self.0.span.lock().clone().unwrap_or_else(Span::none)
    }

    /// The hold ended by its release.
    pub(super) fn hold_ended(&self) {
        self.0.hold.end();
        self.0.span.lock().take();
    }

    /// Reports that `node`'s lock is lost for `reason`, unless that was already done.
    pub(super) fn once(&self, node: &LockNode, reason: LostReason) {
        self.0.hold.end();
        if self.0.told.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::warn!(
            node = %node.path(),
            fencing_token = node.fencing_token(),
            reason = reason.label(),
            "lock lost: {reason}"
        );
        // The span goes on until the release (or the last clone), whose span it holds.
        if let Some(span) = self.0.span.lock().as_ref() {
            span.record("zk.lost", reason.label()).record("otel.status_code", "ERROR");
        }
        telemetry::lock_lost(reason);
    }
}

/// The span of an attempt on the lock at `path` (`lock.acquire`, INFO): its requests go under
/// it, and [`attempt`] records how it ended.
pub(super) fn acquiring(path: &str) -> Span {
    tracing::info_span!(
        "lock.acquire",
        otel.status_code = Empty,
        error.type = Empty,
        zk.path = path,
        zk.node = Empty,
        zk.session_id = Empty,
        zk.fencing_token = Empty,
        zk.wait_ms = Empty,
        zk.outcome = Empty,
    )
}

/// An attempt on the lock ended with `result` after `waited`: recorded on its span
/// ([`acquiring`]). A node acquired starts its `lock.hold` span beside it, under the caller's
/// span (this runs outside the attempt's), until the release or the loss.
pub(super) fn attempt(span: &Span, result: &Result<Option<LockNode>, LockError>, started: Instant) {
    let waited = started.elapsed();
    let outcome = match result {
        Ok(Some(node)) => {
            tracing::debug!(
                parent: span,
                node = %node.name,
                ?waited,
                fencing_token = node.fencing_token(),
                outcome = Outcome::Acquired.label(),
                "lock acquired"
            );
            let session = node.session().client().raw().session_id();
            span.record("zk.session_id", tracing::field::display(session))
                .record("zk.node", node.name.as_str())
                .record("zk.fencing_token", node.fencing_token());
            let hold = tracing::info_span!(
                "lock.hold",
                otel.status_code = Empty,
                zk.path = node.path(),
                zk.session_id = %session,
                zk.fencing_token = node.fencing_token(),
                zk.lost = Empty,
            );
            hold.follows_from(span);
            *node.loss.0.span.lock() = Some(hold);
            Outcome::Acquired
        }
        Ok(None) => {
            tracing::debug!(parent: span, ?waited, outcome = Outcome::NotAcquired.label(), "lock not acquired");
            Outcome::NotAcquired
        }
        Err(error) => {
            tracing::debug!(parent: span, ?waited, outcome = Outcome::Failed.label(), %error, "lock attempt failed");
            Outcome::Failed
        }
    };
    telemetry::ended(span, started, result.as_ref().map(|_| outcome.label()).map_err(LockError::kind));
    telemetry::lock_attempt(outcome, waited);
}

/// The span of `node`'s release from the lock at `path` (`lock.release`, INFO): a child of the
/// hold's, whose end it is; [`released`] records how it went.
pub(super) fn releasing(node: &LockNode, path: &str) -> Span {
    tracing::info_span!(
        parent: node.loss.span(),
        "lock.release",
        zk.path = path,
        zk.node = node.name.as_str(),
        zk.outcome = Empty,
    )
}

/// `node` was released (in the release's `lock.release` span, a child of the hold's): `how` says
/// what became of its delete (`deleted`, `in_background`, `already_gone`, `failed`).
pub(super) fn released(node: &LockNode, how: &'static str) {
    tracing::debug!(fencing_token = node.fencing_token(), how, "lock released");
    Span::current().record("zk.outcome", how);
    node.loss.hold_ended();
    telemetry::lock_released(how);
}
