//! The connection manager's metrics (`docs/observability.md` lists them): one home for every
//! figure this crate records. With the `metrics` feature off each function is empty, so
//! nothing of the `metrics` crate compiles in and the calls inline away.
#![cfg_attr(not(feature = "metrics"), allow(unused_variables))]

use crate::state::ConnectionState;

/// Every state, for the labelled `zkr_session_state` gauge (one series per state).
#[cfg(feature = "metrics")]
const STATES: [ConnectionState; 5] = [
    ConnectionState::Connected,
    ConnectionState::Suspended,
    ConnectionState::Reconnected,
    ConnectionState::Lost,
    ConnectionState::ReadOnly,
];

/// The manager posted `state`: its series of `zkr_session_state` is 1, the others 0.
#[inline]
pub(crate) fn session_state(state: ConnectionState) {
    #[cfg(feature = "metrics")]
    for s in STATES {
        metrics::gauge!("zkr_session_state", "state" => s.to_string().to_lowercase())
            .set(f64::from(u8::from(s == state)));
    }
}

/// The supervisor gave a session up and connects a new one.
#[inline]
pub(crate) fn session_rebuilt() {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_session_rebuilds_total").increment(1);
}

/// An operation waited long enough for its reply that the retry loop nudged the server (the
/// ZOOKEEPER-4537 remedy).
#[inline]
pub(crate) fn stall_nudge() {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_stall_nudges_total").increment(1);
}

/// A retry loop sleeps before another attempt; `op` names the loop (`operation`: the retry
/// loop, `protected_create`: a protected create's own).
#[inline]
pub(crate) fn retry(op: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_retries_total", "op" => op).increment(1);
}

/// Registers the HELP text and unit of every metric this crate records with the installed
/// `metrics` recorder (a Prometheus exporter prints them as `# HELP` lines). Call it after
/// installing the recorder; [`zkr_recipes::describe_metrics`] calls it too. Without the
/// `metrics` feature it does nothing.
///
/// [`zkr_recipes::describe_metrics`]: https://docs.rs/zkr-recipes/latest/zkr_recipes/fn.describe_metrics.html
///
/// # Examples
///
/// ```
/// // After installing a recorder (metrics_exporter_prometheus::PrometheusBuilder::install):
/// zkr_connection::describe_metrics();
/// ```
pub fn describe_metrics() {
    #[cfg(feature = "metrics")]
    {
        use metrics::{describe_counter, describe_gauge};
        describe_gauge!(
            "zkr_session_state",
            "1 for the connection state the manager last posted (label state), 0 for the others"
        );
        describe_counter!(
            "zkr_session_rebuilds_total",
            "ZooKeeper sessions given up after LOST and replaced"
        );
        describe_counter!(
            "zkr_stall_nudges_total",
            "cheap reads sent to wake a server a request waited on (the ZOOKEEPER-4537 remedy)"
        );
        describe_counter!(
            "zkr_retries_total",
            "retries of ZooKeeper operations after a retryable error (label op)"
        );
    }
}
