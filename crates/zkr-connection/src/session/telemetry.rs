//! The connection manager's metrics (`docs/observability.md` lists them): one home for every
//! figure this crate records. With the `metrics` feature off each function is empty, so
//! nothing of the `metrics` crate compiles in and the calls inline away.
#![cfg_attr(not(feature = "metrics"), allow(unused_variables))]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::session::state::ConnectionState;

/// Every state, for the labelled `zkr_session_state` gauge (one series per state).
#[cfg(feature = "metrics")]
const STATES: [ConnectionState; 5] = [
    ConnectionState::Connected,
    ConnectionState::Suspended,
    ConnectionState::Reconnected,
    ConnectionState::Lost,
    ConnectionState::ReadOnly,
];

/// The `client` label of the manager built `n`-th in this process, when the builder was not
/// given a name (`ZkClientBuilder::name`).
pub(crate) fn default_name() -> Arc<str> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static BUILT: AtomicU64 = AtomicU64::new(0);
    Arc::from((BUILT.fetch_add(1, Ordering::Relaxed) + 1).to_string())
}

/// Manager `client` posted `state`: its series of `zkr_session_state` is 1, the others 0.
#[inline]
pub(crate) fn session_state(client: &str, state: ConnectionState) {
    #[cfg(feature = "metrics")]
    for s in STATES {
        metrics::gauge!("zkr_session_state", "client" => client.to_owned(), "state" => s.to_string().to_lowercase())
            .set(f64::from(u8::from(s == state)));
    }
}

/// Manager `client` has a new session, whose timeout the server negotiated as `timeout`.
#[inline]
pub(crate) fn session_established(client: &str, timeout: Duration) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("zkr_session_timeout_seconds", "client" => client.to_owned()).set(timeout.as_secs_f64());
}

/// Manager `client`'s session ended for `cause` (`expired`: the server said so, `timed_out`:
/// suspended longer than it can live, `auth_failed`, `closed`, `injected`).
#[inline]
pub(crate) fn session_ended(client: &str, cause: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_session_expirations_total", "client" => client.to_owned(), "cause" => cause)
        .increment(1);
}

/// The supervisor of manager `client` gave a session up and connects a new one.
#[inline]
pub(crate) fn session_rebuilt(client: &str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_session_rebuilds_total", "client" => client.to_owned()).increment(1);
}

/// An operation waited long enough for its reply that the retry loop nudged the server (the
/// ZOOKEEPER-4537 remedy).
#[inline]
pub(crate) fn stall_nudge(client: &str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_stall_nudges_total", "client" => client.to_owned()).increment(1);
}

/// A retry loop of manager `client` sleeps before another attempt; `op` names the loop
/// (`operation`: the retry loop, `protected_create`: a protected create's own).
#[inline]
pub(crate) fn retry(client: &str, op: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zkr_retries_total", "client" => client.to_owned(), "op" => op).increment(1);
}

/// `zkr_build_info`: 1, labelled with this crate's version.
pub(crate) fn build_info() {
    #[cfg(feature = "metrics")]
    metrics::gauge!("zkr_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
}

/// One request on a session's client, from when it is sent to its reply: a `zk.request` span
/// (DEBUG, `docs/observability.md`), and, with the `metrics` feature, counted by operation and
/// result (`zkr_requests_total`) and timed (`zkr_request_duration_seconds`). A request whose
/// reply is not awaited (the caller dropped it) is not counted.
pub(crate) struct Request {
    span: tracing::Span,
    #[cfg(feature = "metrics")]
    client: Arc<str>,
    #[cfg(feature = "metrics")]
    op: &'static str,
    #[cfg(feature = "metrics")]
    sent: std::time::Instant,
}

impl Request {
    /// A request of operation `op` on `path` (empty for a multi or the configuration) sent now
    /// by manager `client` on `session`. The span is a child of the caller's (a recipe's
    /// operation) and named with OpenTelemetry's database conventions.
    #[inline]
    pub(crate) fn start(
        client: &Arc<str>,
        op: &'static str,
        path: &str,
        session: zookeeper_client::SessionId,
    ) -> Self {
        let span = tracing::debug_span!(
            "zk.request",
            otel.name = op,
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            db.system.name = "zookeeper",
            db.operation.name = op,
            db.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
            zk.path = path,
            zk.session_id = %session,
        );
        Request {
            span,
            #[cfg(feature = "metrics")]
            client: client.clone(),
            #[cfg(feature = "metrics")]
            op,
            #[cfg(feature = "metrics")]
            sent: std::time::Instant::now(),
        }
    }

    /// `reply`, in the request's span, reported when it completes (a written-out future
    /// holding `reply` once).
    pub(crate) fn time<F>(self, reply: F) -> Timed<F> {
        Timed { reply, request: Some(self) }
    }

    /// Records the reply: a ZooKeeper code on the span, `ERROR` for a failure other than the
    /// node-state answers recipes expect (`NoNode`, `NodeExists`, `BadVersion`, `NotEmpty`),
    /// and the figures.
    fn finish(self, result: Result<(), &'static str>) {
        if let Err(label) = result {
            self.span.record("db.response.status_code", label);
            if !matches!(label, "no_node" | "node_exists" | "bad_version" | "not_empty") {
                self.span.record("error.type", label).record("otel.status_code", "ERROR");
            }
        }
        #[cfg(feature = "metrics")]
        {
            let label = result.err().unwrap_or("ok");
            let client = self.client.to_string();
            metrics::counter!("zkr_requests_total", "client" => client.clone(), "op" => self.op, "result" => label)
                .increment(1);
            metrics::histogram!("zkr_request_duration_seconds", "client" => client, "op" => self.op)
                .record(self.sent.elapsed());
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's reply, polled in its span and reported when it completes ([`Request::time`]).
    pub(crate) struct Timed<F> {
        #[pin]
        reply: F,
        request: Option<Request>,
    }
}

impl<T, E: ResultLabel, F: Future<Output = Result<T, E>>> Future for Timed<F> {
    type Output = F::Output;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let this = self.project();
        let entered = this.request.as_ref().map(|r| r.span.enter());
        let result = std::task::ready!(this.reply.poll(cx));
        drop(entered);
        if let Some(request) = this.request.take() {
            request.finish(result.as_ref().map(drop).map_err(ResultLabel::result_label));
        }
        std::task::Poll::Ready(result)
    }
}

/// The `result` label of a failed request: the error's ZooKeeper code in snake case.
pub(crate) trait ResultLabel {
    fn result_label(&self) -> &'static str;
}

impl ResultLabel for zookeeper_client::Error {
    fn result_label(&self) -> &'static str {
        use zookeeper_client::Error as E;
        match self {
            E::NoNode => "no_node",
            E::NodeExists => "node_exists",
            E::BadVersion => "bad_version",
            E::NotEmpty => "not_empty",
            E::NoAuth => "no_auth",
            E::AuthFailed => "auth_failed",
            E::ConnectionLoss => "connection_loss",
            E::SessionExpired => "session_expired",
            E::SessionMoved => "session_moved",
            E::ClientClosed => "client_closed",
            E::Timeout => "timeout",
            E::Unimplemented => "unimplemented",
            E::NoChildrenForEphemerals => "no_children_for_ephemerals",
            E::InvalidAcl => "invalid_acl",
            E::NotReadOnly => "not_read_only",
            E::QuotaExceeded => "quota_exceeded",
            E::Throttled => "throttled",
            E::BadArguments(_) => "bad_arguments",
            _ => "other",
        }
    }
}

impl ResultLabel for zookeeper_client::MultiWriteError {
    fn result_label(&self) -> &'static str {
        match self {
            zookeeper_client::MultiWriteError::RequestFailed { source }
            | zookeeper_client::MultiWriteError::OperationFailed { source, .. } => source.result_label(),
        }
    }
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
    build_info();
    #[cfg(feature = "metrics")]
    {
        use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
        describe_gauge!("zkr_build_info", "1, labelled with the zkr version (label version)");
        describe_gauge!(
            "zkr_session_state",
            "1 for the connection state a manager last posted (labels client, state), 0 for the others"
        );
        describe_gauge!(
            "zkr_session_timeout_seconds",
            Unit::Seconds,
            "the session timeout the server negotiated for a manager's current session (label client)"
        );
        describe_counter!(
            "zkr_session_expirations_total",
            "sessions that ended under a manager (labels client, cause: expired, timed_out, auth_failed, closed, injected)"
        );
        describe_counter!(
            "zkr_session_rebuilds_total",
            "ZooKeeper sessions given up after LOST and replaced (label client)"
        );
        describe_counter!(
            "zkr_stall_nudges_total",
            "cheap reads sent to wake a server a request waited on, the ZOOKEEPER-4537 remedy (label client)"
        );
        describe_counter!(
            "zkr_retries_total",
            "retries of ZooKeeper operations after a retryable error (labels client, op)"
        );
        describe_counter!(
            "zkr_requests_total",
            "ZooKeeper requests answered, by operation and result (labels client, op, result: ok or the error code)"
        );
        describe_histogram!(
            "zkr_request_duration_seconds",
            Unit::Seconds,
            "time from sending a ZooKeeper request to its reply (labels client, op)"
        );
    }
}
