//! zkr's spans in an OpenTelemetry backend (feature `opentelemetry`), through
//! [`tracing-opentelemetry`](tracing_opentelemetry).
//!
//! zkr makes `tracing` spans whatever the features: one per recipe operation at INFO
//! (`lock.acquire`, `lock.hold`, `lock.release`, `queue.take`, `queue.ack`, `leader.elect`,
//! `cache.load`), the retry loop's `zk.retry` and one `zk.request` per ZooKeeper request at
//! DEBUG, each under the span of the operation that sent it. Their fields follow
//! OpenTelemetry's conventions where there are some (`otel.kind`, `otel.status_code`,
//! `db.system.name`, `db.operation.name`, `db.response.status_code`, `error.type`) and say the
//! rest under `zk.` (`zk.path`, `zk.session_id`, `zk.retries`, `zk.retry_wait_ms`, `zk.wait_ms`,
//! `zk.outcome`, ...); `docs/observability.md` lists them.
//!
//! [`layer`] is `tracing-opentelemetry`'s layer for a tracer, filtered to export zkr's spans
//! down to DEBUG (its requests) and every other crate's from INFO, whatever the other layers
//! print. The `opentelemetry` and `tracing_opentelemetry` crates are re-exported, so the
//! versions match.
//!
//! # Examples
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt as _;
//! use tracing_subscriber::util::SubscriberInitExt as _;
//! use zkr_connection::otel::opentelemetry::trace::TracerProvider as _;
//!
//! # fn f(provider: opentelemetry_sdk::trace::SdkTracerProvider) {
//! // `provider`: an OpenTelemetry SDK tracer provider with an exporter (OTLP, say).
//! tracing_subscriber::registry()
//!     .with(zkr_connection::otel::layer(provider.tracer("my-service")))
//!     .with(tracing_subscriber::fmt::layer())
//!     .init();
//! # }
//! ```

pub use opentelemetry;
pub use tracing_opentelemetry;

use tracing::Subscriber;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The crates whose DEBUG spans [`layer`] exports: the requests and retries under each
/// recipe operation.
const ZKR_CRATES: [&str; 3] = ["zkr_connection", "zkr_recipes", "zkr_cli"];

/// Which spans [`layer`] exports: zkr's down to DEBUG, every other crate's from `others`.
///
/// # Examples
///
/// ```
/// use tracing_subscriber::filter::LevelFilter;
///
/// let targets = zkr_connection::otel::targets(LevelFilter::WARN);
/// assert!(targets.would_enable("zkr_connection::session_client", &tracing::Level::DEBUG));
/// assert!(!targets.would_enable("hyper", &tracing::Level::INFO));
/// ```
pub fn targets(others: LevelFilter) -> Targets {
    ZKR_CRATES.iter().fold(Targets::new().with_default(others), |targets, name| {
        targets.with_target(*name, LevelFilter::DEBUG)
    })
}

/// `tracing-opentelemetry`'s layer exporting through `tracer`, filtered by
/// [`targets`]`(LevelFilter::INFO)`: a per-layer filter, so a `fmt` layer beside it prints
/// what its own filter says.
///
/// # Examples
///
/// ```
/// use opentelemetry_sdk::trace::SdkTracerProvider;
/// use tracing_subscriber::layer::SubscriberExt as _;
/// use zkr_connection::otel::opentelemetry::trace::TracerProvider as _;
///
/// let provider = SdkTracerProvider::builder().build();
/// let subscriber = tracing_subscriber::registry().with(zkr_connection::otel::layer(provider.tracer("app")));
/// tracing::subscriber::with_default(subscriber, || tracing::info!("exported as a span event"));
/// ```
pub fn layer<S, T>(tracer: T) -> impl Layer<S>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
    T: opentelemetry::trace::Tracer + Send + Sync + 'static,
    T::Span: Send + Sync,
{
    tracing_opentelemetry::layer().with_tracer(tracer).with_filter(targets(LevelFilter::INFO))
}
