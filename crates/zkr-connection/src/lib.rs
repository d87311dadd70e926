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

// The crate in three parts over a floor (issue 48): `session` (the handle, its builder and the
// supervisor that keeps a session), `ops` (what runs on a session: CRUD, creates, protected
// create, reads, transactions and the retry loop that runs them) and `retry` (the policies and
// the budget). The floor (errors, paths, deadlines, the drop guard, ACL providers, compression)
// depends on none of them; `retry` on the floor alone; `session` on both; `ops` on all three.
// Inside the crate a name is imported from the module that defines it, not through the
// re-exports below (docs/check's `layers` test holds all of this).
mod acl;
pub mod compression;
mod deadline;
mod error;
mod guard;
mod kind;
mod ops;
#[cfg(feature = "opentelemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "opentelemetry")))]
pub mod otel;
pub mod path;
pub mod retry;
mod session;

pub use acl::{AclProvider, CreatorAllAclProvider, OpenAclProvider};
pub use deadline::{within, Deadline, Within};
pub use error::{Error, OpKind, Result};
pub use guard::{detach_on_drop, run_detached, spawn_cleanup, Detached, DropGuard};
pub use kind::{is_retryable, is_session_error, Classify, ErrorKind};
pub use ops::create::{CreateNode, Created};
pub use ops::nodes::{validate_ttl, GuaranteedDelete, Parents};
pub use ops::protected::{self, ProtectedCreate, ProtectedNode};
pub use ops::reads::{ReadOp, ReadResult};
pub use ops::retry_loop::{RetryOptions, Sent};
pub use ops::transaction::Transaction;
pub use path::MAX_DATA_LEN;
pub use session::builder::ZkClientBuilder;
pub use session::client::{ConnectionStateStream, Session, ZkClient};
pub use session::session_client::{MultiReader, MultiWriter, SessionClient};
pub use session::state::{
    ConnectionState, ConnectionStateErrorPolicy, SessionConnectionStateErrorPolicy,
    StandardConnectionStateErrorPolicy,
};
pub use session::status::Status;
pub use session::telemetry::describe_metrics;
pub use zookeeper_client;
/// The base client's types every user names: a node's create mode, its ACL entries, its stat.
pub use zookeeper_client::{Acl, CreateMode, Stat};
