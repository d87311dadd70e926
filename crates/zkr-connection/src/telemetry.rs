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
        metrics::gauge!("zkr_session_state", "state" => s.to_string()).set(f64::from(u8::from(s == state)));
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
