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

/// A count kept as a gauge that several recipes add to: each holds its share and adds the
/// difference when it changes, and takes its share back when dropped. Without a path label the
/// gauge is the process's total; with one (`ZkClientBuilder::metrics_path_labels`), the total
/// of the recipes at that path.
#[derive(Debug)]
pub(crate) struct SizeGauge {
    #[cfg(feature = "metrics")]
    gauge: metrics::Gauge,
    #[cfg(feature = "metrics")]
    share: std::sync::atomic::AtomicUsize,
}

impl SizeGauge {
    /// `zkr_cache_nodes` for a cache of `root`.
    pub(crate) fn cache_nodes(root: &str, path_label: bool) -> Self {
        Self::new("zkr_cache_nodes", root, path_label)
    }

    /// `zkr_queue_items` for a consumer of the queue at `path`.
    pub(crate) fn queue_items(path: &str, path_label: bool) -> Self {
        Self::new("zkr_queue_items", path, path_label)
    }

    fn new(name: &'static str, path: &str, path_label: bool) -> Self {
        SizeGauge {
            #[cfg(feature = "metrics")]
            gauge: if path_label {
                metrics::gauge!(name, "path" => path.to_owned())
            } else {
                metrics::gauge!(name)
            },
            #[cfg(feature = "metrics")]
            share: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// This recipe now counts `count`.
    #[inline]
    pub(crate) fn set(&self, count: usize) {
        #[cfg(feature = "metrics")]
        {
            let before = self.share.swap(count, std::sync::atomic::Ordering::Relaxed);
            self.gauge.increment(gauge_value(count) - gauge_value(before));
        }
    }
}

impl Drop for SizeGauge {
    fn drop(&mut self) {
        self.set(0);
    }
}

/// A lock node became a holder: `zkr_locks_held` counts it until [`Hold::end`].
#[derive(Debug)]
pub(crate) struct Hold {
    #[cfg(feature = "metrics")]
    since: std::time::Instant,
    #[cfg(feature = "metrics")]
    ended: std::sync::atomic::AtomicBool,
}

impl Hold {
    pub(crate) fn start() -> Self {
        #[cfg(feature = "metrics")]
        {
            metrics::gauge!("zkr_locks_held").increment(1.0);
            Hold { since: std::time::Instant::now(), ended: std::sync::atomic::AtomicBool::new(false) }
        }
        #[cfg(not(feature = "metrics"))]
        Hold {}
    }

    /// The hold ended (released or lost; once, however often it is called): off the gauge,
    /// its duration into `zkr_lock_hold_seconds`.
    pub(crate) fn end(&self) {
        #[cfg(feature = "metrics")]
        if !self.ended.swap(true, std::sync::atomic::Ordering::AcqRel) {
            metrics::gauge!("zkr_locks_held").decrement(1.0);
            metrics::histogram!("zkr_lock_hold_seconds").record(self.since.elapsed());
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.end();
    }
}

/// A participant of this process leads `election` while this lives: `zkr_leader` counts the
/// process's leaders of each election, `zkr_leader_changes_total` the terms they began.
#[derive(Debug)]
pub(crate) struct Leading {
    #[cfg(feature = "metrics")]
    gauge: metrics::Gauge,
}

impl Leading {
    /// A term of `election` begins.
    pub(crate) fn start(election: &str) -> Self {
        #[cfg(feature = "metrics")]
        {
            metrics::counter!("zkr_leader_changes_total", "election" => election.to_owned()).increment(1);
            let gauge = metrics::gauge!("zkr_leader", "election" => election.to_owned());
            gauge.increment(1.0);
            Leading { gauge }
        }
        #[cfg(not(feature = "metrics"))]
        Leading {}
    }
}

impl Drop for Leading {
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        self.gauge.decrement(1.0);
    }
}

/// A config watcher delivered a changed value now: `zkr_config_last_update_timestamp_seconds`.
#[inline]
pub(crate) fn config_updated() {
    #[cfg(feature = "metrics")]
    if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        metrics::gauge!("zkr_config_last_update_timestamp_seconds").set(now.as_secs_f64());
    }
}

/// Whether one config watcher's view is stale (its connection or session is gone, so changes
/// may be missed): `zkr_config_stale` counts the stale watchers of the process.
#[derive(Debug, Default)]
pub(crate) struct ConfigStale {
    stale: bool,
}

impl ConfigStale {
    /// The watcher's view is stale (`true`) or current.
    pub(crate) fn set(&mut self, stale: bool) {
        if stale == self.stale {
            return;
        }
        self.stale = stale;
        #[cfg(feature = "metrics")]
        metrics::gauge!("zkr_config_stale").increment(if stale { 1.0 } else { -1.0 });
    }
}

impl Drop for ConfigStale {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// A count as a gauge's value (exact below 2^53, far past any node count).
#[cfg(feature = "metrics")]
fn gauge_value(count: usize) -> f64 {
    count as f64
}

/// Registers the HELP text and unit of every metric zkr records (the recipes' and the
/// connection manager's, [`zkr_connection::describe_metrics`]) with the installed `metrics`
/// recorder, so that a Prometheus exporter prints a `# HELP` line for each, and starts the
/// process-wide series (`zkr_locks_held`, `zkr_lock_holds_total`, ...) at 0. Call it once after
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
        // The unlabelled series exist from the start, at 0: a dashboard shows 0, not "no data",
        // and a rate over them is 0 before the first event.
        for gauge in ["zkr_locks_held", "zkr_config_stale", "zkr_cache_nodes", "zkr_queue_items"] {
            metrics::gauge!(gauge).increment(0.0);
        }
        for counter in ["zkr_lock_holds_total", "zkr_watch_resyncs_total", "zkr_watch_lagged_events_total"] {
            metrics::counter!(counter).increment(0);
        }
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
        describe_gauge!(
            "zkr_cache_nodes",
            "nodes the CuratorCaches of this process hold (label path, the cache's root, when opted in)"
        );
        describe_gauge!(
            "zkr_queue_items",
            "items in the distributed queues consumed here, as each consumer last looked (label path when opted in)"
        );
        describe_gauge!("zkr_locks_held", "locks (lock nodes) held now by this process");
        describe_histogram!(
            "zkr_lock_hold_seconds",
            Unit::Seconds,
            "how long each lock was held, from acquiring it to its release or loss"
        );
        describe_gauge!(
            "zkr_leader",
            "participants of this process leading the election now (label election)"
        );
        describe_counter!(
            "zkr_leader_changes_total",
            "times a participant of this process took the leadership (label election)"
        );
        describe_gauge!(
            "zkr_config_last_update_timestamp_seconds",
            Unit::Seconds,
            "Unix time at which a config watcher of this process last delivered a changed value"
        );
        describe_gauge!(
            "zkr_config_stale",
            "config watchers of this process whose view is stale (their connection or session is gone)"
        );
    }
}

/// A recipe operation's span at INFO (`docs/observability.md`): `$name` on `$path`, with the
/// fields [`ended`] records and `zk.node` (the node taken, acked or made). The requests the
/// operation sends go under it.
macro_rules! operation_span {
    ($name:literal, $path:expr) => {
        tracing::info_span!(
            $name,
            otel.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
            zk.path = $path,
            zk.node = tracing::field::Empty,
            zk.wait_ms = tracing::field::Empty,
            zk.outcome = tracing::field::Empty,
        )
    };
}
pub(crate) use operation_span;

/// Records on an operation's `span` how it ended, `started` at: `zk.wait_ms`, and `zk.outcome`
/// or, for an error of `kind`, `error.type` and the `ERROR` status.
pub(crate) fn ended(
    span: &tracing::Span,
    started: tokio::time::Instant,
    outcome: Result<&'static str, zkr_connection::ErrorKind>,
) {
    span.record("zk.wait_ms", started.elapsed().as_millis() as u64);
    match outcome {
        Ok(outcome) => span.record("zk.outcome", outcome),
        Err(kind) => span
            .record("zk.outcome", "failed")
            .record("error.type", format!("{kind:?}").to_lowercase().as_str())
            .record("otel.status_code", "ERROR"),
    };
}
