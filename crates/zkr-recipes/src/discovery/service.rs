//! [`ServiceDiscovery`]: registering and querying instances.

use std::marker::PhantomData;
use std::sync::Arc;

use dashmap::mapref::entry::Entry;
use dashmap::DashMap;
use serde::de::DeserializeOwned;
use serde::Serialize;
use zkr_connection::{path, ZkClient};
use zookeeper_client::CreateMode;

use super::{DiscoveryError, ServiceCache, ServiceInstance, ServiceType};
use crate::nodes::{NodeError, PersistentNode};

/// The base path Curator's users and Spring Cloud Zookeeper use unless told otherwise.
pub const DEFAULT_BASE_PATH: &str = "/services";

/// Registers this process's service instances and finds everyone's (Curator's
/// `ServiceDiscovery`, same layout: `<base path>/<name>/<id>`, Curator's JSON).
///
/// Each registered instance is a [`PersistentNode`]: created again after a session expiry or
/// a delete by another client, without anyone acting (Curator re-registers on `RECONNECTED`
/// only). `P` is the payload type, `serde_json::Value` for any JSON.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::discovery::DiscoveryError> {
/// use zkr_recipes::discovery::{ServiceDiscovery, ServiceInstance};
///
/// let discovery = ServiceDiscovery::<serde_json::Value>::new(&zk, "/services")?;
/// let me = ServiceInstance::builder("orders", serde_json::json!({ "zone": "a" })).address("10.0.0.7").port(8080).build();
/// discovery.register(&me).await?;
/// for instance in discovery.query_for_instances("orders").await? {
///     println!("{} at {}:{:?}", instance.id, instance.address, instance.port);
/// }
/// discovery.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ServiceDiscovery<P> {
    zk: ZkClient,
    base_path: String,
    paths: PathConstructor,
    registered: DashMap<(String, String), Arc<PersistentNode>>,
    /// Unregistered instances whose node is being deleted: a second unregister of one waits
    /// for the same delete.
    closing: DashMap<(String, String), Arc<PersistentNode>>,
    _payload: PhantomData<fn() -> P>,
}

/// Where a service's instances live (Curator's `PathConstructor`): `<base path>/<name>`
/// unless [`ServiceDiscovery::with_path_constructor`] says otherwise.
#[derive(Clone)]
struct PathConstructor(Option<Arc<PathFn>>);

/// A service name to the parent of its instance nodes.
type PathFn = dyn Fn(&str) -> String + Send + Sync;

impl std::fmt::Debug for PathConstructor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "custom" } else { "<base path>/<name>" })
    }
}

impl<P: Serialize + DeserializeOwned + Send + Sync + 'static> ServiceDiscovery<P> {
    /// A discovery under `base_path`.
    ///
    /// # Errors
    /// [`DiscoveryError::InvalidArgument`] for an invalid or reserved path.
    pub fn new(zk: &ZkClient, base_path: &str) -> Result<Self, DiscoveryError> {
        crate::errors::check_node_path(zk, base_path)?;
        Ok(ServiceDiscovery {
            zk: zk.clone(),
            base_path: base_path.to_owned(),
            paths: PathConstructor(None),
            registered: DashMap::new(),
            closing: DashMap::new(),
            _payload: PhantomData,
        })
    }

    /// The base path.
    pub fn base_path(&self) -> &str {
        &self.base_path
    }

    /// Where each service's instances live (Curator's `pathConstructor`): `paths(name)` gives
    /// the parent of the service's instance nodes instead of `<base path>/<name>`, for layouts
    /// such as `/services/<name>/instances`. Every reader of the service must use the same.
    /// [`query_for_names`](Self::query_for_names) still lists the base path's children.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::discovery::DiscoveryError> {
    /// use zkr_recipes::discovery::ServiceDiscovery;
    ///
    /// let discovery = ServiceDiscovery::<serde_json::Value>::new(&zk, "/services")?
    ///     .with_path_constructor(|name| format!("/services/{name}/instances"));
    /// assert_eq!(discovery.path_for_name("orders"), "/services/orders/instances");
    /// # Ok(()) }
    /// ```
    pub fn with_path_constructor(mut self, paths: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        self.paths = PathConstructor(Some(Arc::new(paths)));
        self
    }

    /// The path of a service's instances.
    pub fn path_for_name(&self, name: &str) -> String {
        match &self.paths.0 {
            Some(paths) => paths(name),
            None => path::join(&self.base_path, name),
        }
    }

    /// Registers `instance` and waits (at most the connection timeout) until its node exists;
    /// registering an instance already registered updates it. The node is kept from then on
    /// (see the type's docs).
    ///
    /// # Errors
    /// [`DiscoveryError::InvalidArgument`] for a name or id that is not a node name;
    /// [`DiscoveryError::Payload`]; [`DiscoveryError::Node`] when the node could not be created
    /// in time (it is still being tried until [`unregister`](Self::unregister)).
    ///
    /// # Cancel safety
    /// Cancel safe: the instance stays registered (in the background) as if the call had
    /// returned; [`unregister`](Self::unregister) removes it.
    pub async fn register(&self, instance: &ServiceInstance<P>) -> Result<(), DiscoveryError> {
        let key = self.validated_key(instance)?;
        let data = instance.to_json()?;
        let node_path = path::join(&self.path_for_name(&instance.name), &instance.id);
        let (mode, keep) = match instance.service_type {
            ServiceType::Dynamic => (CreateMode::Ephemeral, false),
            ServiceType::DynamicSequential => (CreateMode::EphemeralSequential, false),
            ServiceType::Static => (CreateMode::Persistent, false),
            ServiceType::Permanent => (CreateMode::Persistent, true),
        };
        // One node per instance, decided under the map's lock: a second register of the same
        // instance updates the first one's node instead of starting a rival on our session.
        let node = match self.registered.entry(key) {
            Entry::Occupied(entry) => {
                let node = entry.get().clone();
                drop(entry);
                return Ok(node.set_data(data).await?);
            }
            Entry::Vacant(entry) => {
                let builder = PersistentNode::builder(&self.zk, &node_path, mode);
                entry.insert(Arc::new(builder.data(data).delete_on_close(!keep).start().await?)).clone()
            }
        };
        match node.wait_for_initial_create_timeout(self.zk.connection_timeout()).await? {
            Some(_) => Ok(()),
            None => Err(node.creation_error().unwrap_or(NodeError::Closed).into()),
        }
    }

    /// Writes `instance`'s new data to its node (Curator's `updateService`).
    ///
    /// # Errors
    /// [`DiscoveryError::NotRegistered`] unless this discovery registered it; otherwise as
    /// [`register`](Self::register).
    ///
    /// # Cancel safety
    /// Cancel safe: the new data is kept for the node either way.
    pub async fn update(&self, instance: &ServiceInstance<P>) -> Result<(), DiscoveryError> {
        let key = self.validated_key(instance)?;
        let node = self.registered.get(&key).map(|n| n.clone());
        let node =
            node.ok_or_else(|| DiscoveryError::NotRegistered { name: key.0.clone(), id: key.1.clone() })?;
        Ok(node.set_data(instance.to_json()?).await?)
    }

    /// Unregisters `instance`: its node is deleted (a [`ServiceType::Permanent`] one too).
    /// Returns when the delete is done, also to a second caller while the first one's is under
    /// way; at once when the connection is lost, the delete going on in the background (see
    /// [`PersistentNode::close`]).
    ///
    /// # Errors
    /// [`DiscoveryError::InvalidArgument`] for an invalid name or id.
    ///
    /// # Cancel safety
    /// Cancel safe: the delete goes on in the background.
    pub async fn unregister(&self, instance: &ServiceInstance<P>) -> Result<(), DiscoveryError> {
        let key = self.validated_key(instance)?;
        let node_path = path::join(&self.path_for_name(&instance.name), &instance.id);
        // Moved to `closing` under the map's lock (always `registered`, then `closing`), so
        // that a second unregister finds it there and waits for the same delete.
        let node = match self.registered.entry(key.clone()) {
            Entry::Occupied(entry) => {
                self.closing.insert(key.clone(), entry.get().clone());
                Some(entry.remove())
            }
            Entry::Vacant(_) => self.closing.get(&key).map(|node| node.clone()),
        };
        if let Some(node) = node {
            // Closed even while a register still holds it: its drop must not delete a node
            // registered again since.
            node.close_shared().await;
            self.closing.remove_if(&key, |_, closing| Arc::ptr_eq(closing, &node));
        }
        if instance.service_type == ServiceType::Permanent {
            self.zk.delete_if_present(&node_path).await?;
        }
        Ok(())
    }

    /// The names of the services under the base path (Curator's `queryForNames`).
    ///
    /// # Errors
    /// As [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// Cancel safe: reads only.
    pub async fn query_for_names(&self) -> Result<Vec<String>, DiscoveryError> {
        let base = self.base_path.as_str();
        let listed = self.zk.retry(|s| async move { s.client().list_children(base).await }).await;
        match listed {
            Ok(mut names) => {
                names.sort();
                Ok(names)
            }
            Err(e) if e.is_no_node() => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// The instances of `name`, read now, sorted by id (Curator's `queryForInstances`); nodes
    /// that are not Curator's JSON are skipped with a warning.
    ///
    /// # Errors
    /// As [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// Cancel safe: reads only.
    pub async fn query_for_instances(&self, name: &str) -> Result<Vec<ServiceInstance<P>>, DiscoveryError> {
        let parent = self.path_for_name(name);
        let parent = parent.as_str();
        let read = self.zk.retry(|s| async move {
            let children = match s.client().list_children(parent).await {
                Err(zookeeper_client::Error::NoNode) => return Ok(Vec::new()),
                other => other?,
            };
            let paths: Vec<String> = children.iter().map(|c| path::join(parent, c)).collect();
            let reads = paths.iter().map(|p| s.client().get_data(p));
            let reads = futures::future::join_all(reads).await;
            let mut found = Vec::with_capacity(paths.len());
            for (path, read) in paths.into_iter().zip(reads) {
                match read {
                    Ok((data, _)) => found.push((path, data)),
                    // Unregistered between the listing and the read: not an instance now.
                    Err(zookeeper_client::Error::NoNode) => {}
                    // Any other failure fails the attempt: never a partial list as complete.
                    Err(e) => return Err(e),
                }
            }
            Ok(found)
        });
        let mut instances: Vec<ServiceInstance<P>> =
            read.await?.iter().filter_map(|(path, data)| parse(path, data)).collect();
        instances.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(instances)
    }

    /// One instance, or `None` (Curator's `queryForInstance`).
    ///
    /// # Errors
    /// [`DiscoveryError::Payload`] when the node is not Curator's JSON; as
    /// [`ZkClient::retry`].
    ///
    /// # Cancel safety
    /// Cancel safe: reads only.
    pub async fn query_for_instance(
        &self,
        name: &str,
        id: &str,
    ) -> Result<Option<ServiceInstance<P>>, DiscoveryError> {
        let node_path = path::join(&self.path_for_name(name), id);
        let node_path = node_path.as_str();
        match self.zk.retry(|s| async move { s.client().get_data(node_path).await }).await {
            Ok((data, _)) => Ok(Some(ServiceInstance::from_json(&data)?)),
            Err(e) if e.is_no_node() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// A cache of `name`'s instances (Curator's `serviceCacheBuilder().name(name).build()`,
    /// started).
    ///
    /// # Errors
    /// As [`CuratorCacheBuilder::start`](crate::cache::CuratorCacheBuilder::start).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn service_cache(&self, name: &str) -> Result<ServiceCache<P>, DiscoveryError> {
        ServiceCache::start(&self.zk, &self.path_for_name(name)).await
    }

    /// Unregisters every instance this discovery registered (a [`ServiceType::Permanent`] one
    /// stays): see [`PersistentNode::close`].
    ///
    /// # Cancel safety
    /// Cancel safe: the deletes go on in the background.
    pub async fn close(self) {
        let closing = self.closing.into_iter().map(|(_, node)| node);
        let nodes: Vec<_> = self.registered.into_iter().map(|(_, node)| node).chain(closing).collect();
        futures::future::join_all(nodes.iter().map(|node| node.close_shared())).await;
    }

    fn validated_key(&self, instance: &ServiceInstance<P>) -> Result<(String, String), DiscoveryError> {
        for part in [&instance.name, &instance.id] {
            path::validate_name(part)?;
        }
        Ok((instance.name.clone(), instance.id.clone()))
    }
}

/// An instance from a node's data; `None` (and a warning) when it is not Curator's JSON.
pub(crate) fn parse<P: DeserializeOwned>(path: &str, data: &[u8]) -> Option<ServiceInstance<P>> {
    match ServiceInstance::from_json(data) {
        Ok(instance) => Some(instance),
        Err(error) => {
            tracing::warn!(path = ?path, %error, "not a service instance; skipped");
            None
        }
    }
}
