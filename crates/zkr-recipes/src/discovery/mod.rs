//! Service discovery: Curator's `curator-x-discovery` in Rust, in its layout and JSON, so Java
//! services (Curator, Spring Cloud Zookeeper) and Rust services find each other.
//!
//! - [`ServiceDiscovery`] registers this process's [`ServiceInstance`]s as nodes at
//!   `<base path>/<name>/<id>`, each a [`PersistentNode`](crate::nodes::PersistentNode): back
//!   after a session expiry without anyone acting;
//! - [`ServiceCache`] keeps a service's instances up to date, decoded (on the watch engine);
//! - [`ServiceProvider`] picks one, round robin, at random or sticky, skipping instances
//!   reported down.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::discovery::DiscoveryError> {
//! use zkr_recipes::discovery::{ProviderStrategy, ServiceDiscovery, ServiceInstance, ServiceProvider};
//!
//! let discovery = ServiceDiscovery::<serde_json::Value>::new(&zk, "/services")?;
//! discovery.register(&ServiceInstance::builder("orders", serde_json::json!({})).address("10.0.0.7").port(8080).build()).await?;
//! let provider = ServiceProvider::new(discovery.service_cache("orders").await?, ProviderStrategy::RoundRobin);
//! println!("{:?}", provider.get_instance().map(|i| (i.address, i.port)));
//! # Ok(()) }
//! ```

mod cache;
mod instance;
mod provider;
mod service;

pub use cache::ServiceCache;
pub use instance::{
    ServiceInstance, ServiceInstanceBuilder, ServiceType, UriPart, UriSpec, DEFAULT_PAYLOAD_CLASS,
};
pub use provider::{DownInstancePolicy, ProviderStrategy, ServiceProvider, ServiceProviderBuilder};
pub use service::{ServiceDiscovery, DEFAULT_BASE_PATH};

use crate::nodes::NodeError;

/// What went wrong in service discovery.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// A bad base path, name or id: nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An instance's JSON or payload did not (de)serialize.
    #[error("service instance JSON")]
    Payload(#[from] serde_json::Error),
    /// `update` of an instance this discovery did not register.
    #[error("instance {id} of {name} is not registered here")]
    NotRegistered {
        /// The service.
        name: String,
        /// The instance.
        id: String,
    },
    /// The instance's node could not be kept.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// A ZooKeeper operation failed.
    #[error(transparent)]
    Connection(zkr_connection::Error),
}

crate::errors::from_connection!(DiscoveryError);

impl zkr_connection::Classify for DiscoveryError {
    /// What the error means to the caller ([`ErrorKind`](zkr_connection::ErrorKind)), as for every family.
    fn kind(&self) -> zkr_connection::ErrorKind {
        match self {
            DiscoveryError::Connection(e) => e.kind(),
            DiscoveryError::Node(e) => e.kind(),
            DiscoveryError::InvalidArgument(_) | DiscoveryError::NotRegistered { .. } => {
                zkr_connection::ErrorKind::Usage
            }
            DiscoveryError::Payload(_) => zkr_connection::ErrorKind::Corrupt,
        }
    }

    /// Might the failed write have been applied all the same
    /// ([`zkr_connection::Error::is_ambiguous`](zkr_connection::Classify::is_ambiguous))?
    fn is_ambiguous(&self) -> bool {
        match self {
            DiscoveryError::Connection(e) => e.is_ambiguous(),
            DiscoveryError::Node(e) => e.is_ambiguous(),
            _ => false,
        }
    }
}
