//! The session: the [`ZkClient`](client::ZkClient) handle and its builder, the supervisor task
//! that owns the ZooKeeper session and builds a new one when it ends, and what the supervisor
//! needs on the way (connect strings, reachability, TLS and Kerberos, the ensemble's moves,
//! the stall detector, the namespace, connection states and their telemetry). Nothing here
//! depends on `ops`; the operations run on what this part publishes.

pub(crate) mod builder;
pub(crate) mod circuit;
pub(crate) mod client;
pub(crate) mod connect_string;
pub(crate) mod ensemble;
pub(crate) mod features;
#[cfg(feature = "sasl-gssapi")]
pub(crate) mod kerberos;
pub(crate) mod namespace;
pub(crate) mod reach;
pub(crate) mod served;
pub(crate) mod session_client;
pub(crate) mod stall;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod supervisor;
pub(crate) mod telemetry;
#[cfg(feature = "tls")]
pub(crate) mod tls;
