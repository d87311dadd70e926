//! The recipes' metrics (`docs/observability.md` lists them): one home for every figure this
//! crate records. With the `metrics` feature off each function is empty, so nothing of the
//! `metrics` crate compiles in and the calls inline away.
#![cfg_attr(not(feature = "metrics"), allow(unused_variables))]

use std::time::Duration;

use crate::fence::LostReason;

/// How a lock attempt ended, the `outcome` label of `zkr_lock_wait_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The lock is ours.
    Acquired,
    /// The wait ran out (or, for a try, the lock was busy).
    NotAcquired,
    /// An error ended the attempt.
    Failed,
}

impl Outcome {
    /// The label value.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Outcome::Acquired => "acquired",
            Outcome::NotAcquired => "not_acquired",
            Outcome::Failed => "failed",
        }
    }
}

/// A lock attempt ended after `waited`: a wait sample, and a hold when it acquired.
#[inline]
pub(crate) fn lock_attempt(outcome: Outcome, waited: Duration) {
    #[cfg(feature = "metrics")]
    {
        metrics::histogram!("zkr_lock_wait_seconds", "outcome" => outcome.label()).record(waited);
        if outcome == Outcome::Acquired {
            metrics::counter!("zkr_lock_holds_total").increment(1);
        }
    }
}

/// A held lock node was released; `how` says what became of it (the `outcome` label).
#[inline]
pub(crate) fn lock_released(how: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_lock_releases_total", "outcome" => how).increment(1);
}

/// A held lock was lost (counted once per hold).
#[inline]
pub(crate) fn lock_lost(reason: LostReason) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_lock_losses_total", "reason" => reason.label()).increment(1);
}

/// The watch engine replaced a local copy with a full read.
#[inline]
pub(crate) fn watch_resync() {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_watch_resyncs_total").increment(1);
}

/// A recipe's event subscriber fell behind and missed `missed` events.
#[inline]
pub(crate) fn watch_lagged(missed: u64) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_watch_lagged_events_total").increment(missed);
}

/// The cache of `root` now holds `nodes` nodes.
#[inline]
pub(crate) fn cache_size(root: &str, nodes: usize) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("zkr_cache_nodes", "path" => root.to_owned()).set(gauge_value(nodes));
}

/// The queue at `path` holds `items` nodes, as its consumer last saw it.
#[inline]
pub(crate) fn queue_size(path: &str, items: usize) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("zkr_queue_items", "path" => path.to_owned()).set(gauge_value(items));
}

/// A count as a gauge's value (exact below 2^53, far past any node count).
#[cfg(feature = "metrics")]
fn gauge_value(count: usize) -> f64 {
    count as f64
}

/// Registers the HELP text and unit of every metric zkr records (the recipes' and the
/// connection manager's, [`zkr_connection::describe_metrics`]) with the installed `metrics`
/// recorder, so that a Prometheus exporter prints a `# HELP` line for each. Call it once after
/// installing the recorder. Without the `metrics` feature it does nothing.
///
/// # Examples
///
/// ```
/// // After installing a recorder (metrics_exporter_prometheus::PrometheusBuilder::install):
/// zkr_recipes::describe_metrics();
/// ```
pub fn describe_metrics() {
    zkr_connection::describe_metrics();
    #[cfg(feature = "metrics")]
    {
        use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
        describe_histogram!(
            "zkr_lock_wait_seconds",
            Unit::Seconds,
            "how long each lock attempt took, creating the contender node included (label outcome)"
        );
        describe_counter!("zkr_lock_holds_total", "locks acquired (reentrant acquires not counted)");
        describe_counter!("zkr_lock_releases_total", "held lock nodes released (label outcome)");
        describe_counter!("zkr_lock_losses_total", "held locks lost, each counted once (label reason)");
        describe_counter!("zkr_watch_resyncs_total", "full reads that replaced a watch engine's local copy");
        describe_counter!(
            "zkr_watch_lagged_events_total",
            "events a recipe's event subscriber missed because it fell behind"
        );
        describe_gauge!("zkr_cache_nodes", "nodes a CuratorCache holds (label path: the cache's root)");
        describe_gauge!(
            "zkr_queue_items",
            "items in a distributed queue as its consumer last looked (label path)"
        );
    }
}
