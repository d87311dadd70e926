#![doc = include_str!("../README.md")]
//!
//! zkr's connection manager: what Curator's `curator-client` and `curator-framework` are for
//! Java, on [`zookeeper-client`](zookeeper_client) and tokio.
//!
//! Start with [`ZkClient::builder`] (or [`ZkClient::connect`] for the defaults). The
//! [`ZkClient`] is a cheap `Clone` handle that every recipe takes. It owns the ZooKeeper
//! session and replaces it when it expires, announcing Curator's [`ConnectionState`]s
//! (`Connected`, `Suspended`, `Reconnected`, `Lost`, `ReadOnly`) on a stream. Operations run in
//! [`ZkClient::retry`] under a [`RetryPolicy`](retry::RetryPolicy) (Curator's policies, exact
//! formulas, in [`retry`]). Helpers cover what recipes need: [`path`] validation, parents as
//! containers ([`ZkClient::create_parents`]), idempotent create and delete, protected
//! ephemeral-sequential create ([`ZkClient::create_protected`]) and guaranteed delete
//! ([`ZkClient::guaranteed_delete`]).
//!
//! # Features
//!
//! - `tls`: TLS connections (`ZkClientBuilder::tls_trusting`, `ZkClientBuilder::tls`),
//!   through `zookeeper-client`'s `tls` feature and rustls.
//! - `backon`: `retry::BackonRetry`, the `backon` crate's backoffs as retry policies.
//! - `metrics`: session states, timeouts and expirations, requests by operation and result,
//!   retries, per named manager, as figures of the `metrics` facade crate
//!   (`zkr_session_state`, `zkr_requests_total`, ...; `docs/observability.md`). The spans and
//!   events of `tracing` are always there.
//! - `opentelemetry`: [`otel::layer`], which exports those spans (a span per recipe operation
//!   with its requests under it) to an OpenTelemetry tracer through `tracing-opentelemetry`.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod acl;
mod builder;
mod circuit;
mod client;
pub mod compression;
mod connect_string;
mod create;
mod crud;
mod deadline;
mod ensemble;
mod error;
mod features;
mod guard;
#[cfg(feature = "sasl-gssapi")]
mod kerberos;
mod kind;
mod namespace;
mod ops;
#[cfg(feature = "opentelemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "opentelemetry")))]
pub mod otel;
pub mod path;
pub mod protected;
mod reach;
mod reads;
pub mod retry;
mod retry_loop;
mod served;
mod session_client;
mod stall;
mod state;
mod status;
mod supervisor;
mod telemetry;
#[cfg(feature = "tls")]
mod tls;
mod transaction;

pub use acl::{AclProvider, CreatorAllAclProvider, OpenAclProvider};
pub use builder::ZkClientBuilder;
pub use client::{ConnectionStateStream, Session, ZkClient};
pub use create::{CreateNode, Created};
pub use deadline::{within, Deadline, Within};
pub use error::{is_retryable, is_session_error, Error, Result};
pub use guard::{run_detached, spawn_cleanup, DropGuard};
pub use kind::{Classify, ErrorKind};
pub use ops::{validate_ttl, GuaranteedDelete, Parents};
pub use path::MAX_DATA_LEN;
pub use protected::{ProtectedCreate, ProtectedNode};
pub use reads::{ReadOp, ReadResult};
pub use retry_loop::{RetryOptions, Sent};
pub use session_client::{MultiReader, MultiWriter, SessionClient};
pub use state::{
    ConnectionState, ConnectionStateErrorPolicy, SessionConnectionStateErrorPolicy,
    StandardConnectionStateErrorPolicy,
};
pub use status::Status;
pub use telemetry::describe_metrics;
pub use transaction::{OpKind, Transaction};
pub use zookeeper_client;
/// The base client's types every user names: a node's create mode, its ACL entries, its stat.
pub use zookeeper_client::{Acl, CreateMode, Stat};
