//! [`ModeledFramework`]: typed calls on a model's node, Curator's `ModeledFramework`.

use std::fmt;

use futures::{StreamExt as _, TryStreamExt as _};
use zkr_connection::{path, Created, Stat, ZkClient};

use super::{CachedModeledFramework, ModelError, ModelSpec, Versioned, ZPath};

/// How many children [`ModeledFramework::list`] reads at once.
const LIST_READS: usize = 32;

/// Typed calls on the node of a [`ModelSpec`]'s path: Curator's `ModeledFramework`.
///
/// A framework on a template (`/users/{id}`) gives the framework of one node with
/// [`resolved`](Self::resolved) (or [`child`](Self::child)); every call on the node itself
/// needs a resolved path and refuses a template with [`ModelError::Unresolved`] before sending
/// anything. Each call is one of [`ZkClient`]'s retried calls (`update` without a version is
/// [`ZkClient::overwrite`]; `set` tries a create first), under the client's retry policy and
/// namespace. Cheap to clone: frameworks of many nodes share the
/// client and the codec.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::model::ModelError> {
/// use zkr_recipes::codec::Json;
/// use zkr_recipes::model::{ModelSpec, ModeledFramework, ZPath};
///
/// #[derive(serde::Serialize, serde::Deserialize, Debug)]
/// struct Order { item: String, quantity: u32 }
///
/// let spec = ModelSpec::builder(ZPath::parse("/users/{id}/orders/{order}")?, Json).build()?;
/// let orders = ModeledFramework::new(&zk, spec);
/// let first = orders.resolved(&["alice", "1"])?;
/// first.set(&Order { item: "book".into(), quantity: 2 }).await?;
/// for (id, order) in orders.resolved(&["alice", "1"])?.parent().unwrap().list().await? {
///     println!("{id}: {order:?}");
/// }
/// # Ok(()) }
/// ```
pub struct ModeledFramework<T> {
    zk: ZkClient,
    spec: ModelSpec<T>,
}

impl<T> Clone for ModeledFramework<T> {
    fn clone(&self) -> Self {
        ModeledFramework { zk: self.zk.clone(), spec: self.spec.clone() }
    }
}

impl<T> fmt::Debug for ModeledFramework<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModeledFramework").field("spec", &self.spec).finish()
    }
}

impl<T: Send + Sync + 'static> ModeledFramework<T> {
    /// A framework for `spec`'s models on `zk` (Curator's `ModeledFramework.wrap`). Nothing
    /// is sent.
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::model::ModelError> {
    /// use zkr_recipes::codec::Utf8;
    /// use zkr_recipes::model::{ModelSpec, ModeledFramework, ZPath};
    /// let notes = ModeledFramework::new(&zk, ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).build()?);
    /// # Ok(()) }
    /// ```
    #[doc(alias = "wrap")]
    pub fn new(zk: &ZkClient, spec: ModelSpec<T>) -> Self {
        ModeledFramework { zk: zk.clone(), spec }
    }

    /// The spec.
    ///
    /// ```no_run
    /// # fn f(alice: zkr_recipes::model::ModeledFramework<String>) {
    /// println!("{:?}", alice.spec().mode());
    /// # }
    /// ```
    pub fn spec(&self) -> &ModelSpec<T> {
        &self.spec
    }

    /// The path (template or resolved).
    ///
    /// ```no_run
    /// # fn f(alice: zkr_recipes::model::ModeledFramework<String>) {
    /// assert!(alice.path().is_resolved());
    /// # }
    /// ```
    pub fn path(&self) -> &ZPath {
        self.spec.path()
    }

    /// The client (Curator's `unwrap()`).
    ///
    /// ```no_run
    /// # fn f(alice: zkr_recipes::model::ModeledFramework<String>) {
    /// let raw_calls = alice.client().clone();
    /// # }
    /// ```
    #[doc(alias = "unwrap")]
    pub fn client(&self) -> &ZkClient {
        &self.zk
    }

    /// The framework of the node that `ids` name, one per parameter in order (Curator's
    /// `resolved`). Nothing is sent.
    ///
    /// # Errors
    /// As [`ZPath::resolve`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(users: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// let alice = users.resolved(&["alice"])?;
    /// assert_eq!(alice.path().as_path(), "/users/alice");
    /// # Ok(()) }
    /// ```
    #[doc(alias = "resolve")]
    pub fn resolved(&self, ids: &[&str]) -> Result<Self, ModelError> {
        Ok(self.at(self.path().resolve(ids)?))
    }

    /// The framework one level deeper, at the node `name`, with the same spec (Curator's
    /// `child`). Nothing is sent.
    ///
    /// # Errors
    /// As [`ZPath::child`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(settings: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// let theme = settings.child("theme")?;
    /// # Ok(()) }
    /// ```
    pub fn child(&self, name: &str) -> Result<Self, ModelError> {
        Ok(self.at(self.path().child(name)?))
    }

    /// The framework one level up, with the same spec (Curator's `parent`); `None` at the
    /// root. For `/users/{id}` it is `/users`, whose [`list`](Self::list) reads every user.
    ///
    /// ```no_run
    /// # fn f(users: zkr_recipes::model::ModeledFramework<String>) {
    /// let all_users = users.parent().expect("/users");
    /// # }
    /// ```
    pub fn parent(&self) -> Option<Self> {
        self.path().parent().map(|p| self.at(p))
    }

    fn at(&self, path: ZPath) -> Self {
        ModeledFramework { zk: self.zk.clone(), spec: self.spec.with_path(path) }
    }

    /// The node's path: a resolved path outside the reserved `/zookeeper` tree.
    fn node(&self) -> Result<&str, ModelError> {
        let path = self.path();
        if let Some(parameter) = path.first_parameter() {
            return Err(ModelError::Unresolved {
                template: path.to_string(),
                parameter: parameter.to_owned(),
            });
        }
        self.zk.validate_recipe_path(path.as_path())?;
        Ok(path.as_path())
    }

    fn encode(&self, path: &str, model: &T) -> Result<Vec<u8>, ModelError> {
        self.spec.encode(model).map_err(|source| ModelError::Encode { path: path.to_owned(), source })
    }

    fn decode(&self, path: &str, data: &[u8]) -> Result<Option<T>, ModelError> {
        self.spec.decode(data).map_err(|source| ModelError::Decode { path: path.to_owned(), source })
    }

    /// Stores `model`: creates the node with the spec's mode, TTL, ACL and parents, or, when
    /// it exists, sets its data (Curator's `set`, with `setDataIfExists`). Returns the node's
    /// path (with the sequence, for a sequential mode) and `Stat`.
    ///
    /// # Errors
    /// [`ModelError::Unresolved`], [`ModelError::Encode`] or [`ModelError::InvalidArgument`]
    /// (data over the node limit) with nothing sent; [`ModelError::NotFound`] when the node was
    /// deleted between the create and the write; [`ModelError::Connection`] for the rest
    /// (`NoNode` for a missing parent with [`Parents::None`](zkr_connection::Parents::None),
    /// [`TtlDisabled`](zkr_connection::Error::TtlDisabled)).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after a request was sent, the node may have been created, or
    /// its data set, with this model (never with anything else); its parents may exist. With an
    /// ephemeral mode, a node made that way belongs to the session until it ends.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(alice: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// let (path, stat) = alice.set(&"Alice".to_owned()).await?;
    /// println!("{path} at version {}", stat.version);
    /// # Ok(()) }
    /// ```
    pub async fn set(&self, model: &T) -> Result<(String, Stat), ModelError> {
        self.write(model, None).await
    }

    /// [`set`](Self::set), where an existing node's data is set only if it is at `version`
    /// (Curator's `set(model, version)`); a node that does not exist is created.
    ///
    /// # Errors
    /// [`ModelError::VersionConflict`] when the node is at another version; as
    /// [`set`](Self::set) otherwise, and a lost reply of the versioned write is not resent: it
    /// [is ambiguous](zkr_connection::Classify::is_ambiguous).
    ///
    /// # Cancel safety
    /// As [`set`](Self::set).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(alice: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// alice.set_versioned(&"Alice".to_owned(), 0).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_versioned(&self, model: &T, version: i32) -> Result<(String, Stat), ModelError> {
        self.write(model, Some(version)).await
    }

    async fn write(&self, model: &T, version: Option<i32>) -> Result<(String, Stat), ModelError> {
        let path = self.node()?;
        let data = self.encode(path, model)?;
        match self.create(path, &data).await {
            Ok(created) => Ok((created.path, created.stat)),
            Err(e) if e.is_node_exists() => Ok((path.to_owned(), self.set_data(path, &data, version).await?)),
            Err(e) => Err(e.into()),
        }
    }

    async fn create(&self, path: &str, data: &[u8]) -> zkr_connection::Result<Created> {
        let spec = &self.spec;
        let mut create = self.zk.create_node(path).data(data).mode(spec.mode()).parents(spec.parents());
        if let Some(ttl) = spec.ttl() {
            create = create.ttl(ttl);
        }
        if let Some(acl) = spec.acl() {
            create = create.acl(acl.to_vec());
        }
        create.await
    }

    /// Sets the data of an existing node to `model` (Curator's `update`). Returns its new
    /// `Stat`.
    ///
    /// # Errors
    /// [`ModelError::NotFound`] when there is no node; as [`set`](Self::set) otherwise.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after it was sent, the data may be set.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(alice: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// let stat = alice.update(&"Alice Liddell".to_owned()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn update(&self, model: &T) -> Result<Stat, ModelError> {
        let path = self.node()?;
        self.set_data(path, &self.encode(path, model)?, None).await
    }

    /// [`update`](Self::update) only if the node is at `version` (compare-and-set; Curator's
    /// `update(model, version)`).
    ///
    /// # Errors
    /// [`ModelError::VersionConflict`] when the node is at another version (nothing was
    /// written); as [`update`](Self::update) otherwise. A lost reply is not resent: the error
    /// [is ambiguous](zkr_connection::Classify::is_ambiguous).
    ///
    /// # Cancel safety
    /// As [`update`](Self::update).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(alice: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// use zkr_recipes::model::ModelError;
    /// let Some(current) = alice.read_versioned().await? else { return Ok(()) };
    /// match alice.update_versioned(&format!("{}!", current.model), current.version).await {
    ///     Err(ModelError::VersionConflict { .. }) => println!("changed meanwhile"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn update_versioned(&self, model: &T, version: i32) -> Result<Stat, ModelError> {
        let path = self.node()?;
        self.set_data(path, &self.encode(path, model)?, Some(version)).await
    }

    /// Without a version, every attempt is conditional all the same ([`ZkClient::overwrite`]),
    /// so that none lands after a later write.
    async fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat, ModelError> {
        let written = match version {
            Some(_) => self.zk.set_data(path, data, version).await,
            None => self.zk.overwrite(path, &self.zk.stored(data), None).await,
        };
        match written {
            Ok(stat) => Ok(stat),
            Err(e) if e.is_bad_version() => {
                Err(ModelError::VersionConflict { path: path.to_owned(), expected: version.unwrap_or(-1) })
            }
            Err(e) if e.is_no_node() => Err(ModelError::NotFound { path: path.to_owned() }),
            Err(e) => Err(e.into()),
        }
    }

    /// The model; `None` when there is no node (or a node without data that the codec does
    /// not read). Curator's `read()`.
    ///
    /// # Errors
    /// [`ModelError::Unresolved`]; [`ModelError::Decode`] when the data does not decode;
    /// [`ModelError::Connection`].
    ///
    /// # Cancel safety
    /// Cancel safe: a read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(alice: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// if let Some(name) = alice.read().await? {
    ///     println!("{name}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn read(&self) -> Result<Option<T>, ModelError> {
        Ok(self.read_with_stat().await?.map(|(model, _)| model))
    }

    /// [`read`](Self::read) with the node's `Stat` (Curator's `read(storingStatIn)`).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    ///
    /// # Cancel safety
    /// Cancel safe: a read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(alice: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// if let Some((name, stat)) = alice.read_with_stat().await? {
    ///     println!("{name}, written at zxid {:#x}", stat.mzxid);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn read_with_stat(&self) -> Result<Option<(T, Stat)>, ModelError> {
        let path = self.node()?;
        let Some((data, stat)) = self.zk.get_data(path).await? else { return Ok(None) };
        Ok(self.decode(path, &data)?.map(|model| (model, stat)))
    }

    /// [`read`](Self::read) with the data version, for
    /// [`update_versioned`](Self::update_versioned) (Curator's `versioned().read()`).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    ///
    /// # Cancel safety
    /// Cancel safe: a read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(alice: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// if let Some(v) = alice.read_versioned().await? {
    ///     println!("{} at version {}", v.model, v.version);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn read_versioned(&self) -> Result<Option<Versioned<T>>, ModelError> {
        Ok(self.read_with_stat().await?.map(|(model, stat)| Versioned::new(model, stat.version)))
    }

    /// Deletes the node (Curator's `delete()`, without its `guaranteed` option: see
    /// [`ZkClient::guaranteed_delete`]); `true` when there was one.
    ///
    /// # Errors
    /// [`ModelError::Unresolved`]; [`ModelError::Connection`] (`NotEmpty` for a node with
    /// children).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after it was sent, the node may be gone; nothing else changes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(alice: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// let existed = alice.delete().await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<bool, ModelError> {
        self.remove(None).await
    }

    /// [`delete`](Self::delete) only if the node is at `version` (Curator's `delete(version)`);
    /// `false` when there is no node.
    ///
    /// # Errors
    /// [`ModelError::VersionConflict`] when it is at another version; as
    /// [`delete`](Self::delete) otherwise, and a lost reply is not resent: the error
    /// [is ambiguous](zkr_connection::Classify::is_ambiguous).
    ///
    /// # Cancel safety
    /// As [`delete`](Self::delete).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(alice: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// if let Some(v) = alice.read_versioned().await? {
    ///     alice.delete_versioned(v.version).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete_versioned(&self, version: i32) -> Result<bool, ModelError> {
        self.remove(Some(version)).await
    }

    async fn remove(&self, version: Option<i32>) -> Result<bool, ModelError> {
        let path = self.node()?;
        match self.zk.delete(path, version).await {
            Ok(()) => Ok(true),
            Err(e) if e.is_no_node() => Ok(false),
            Err(e) if e.is_bad_version() => {
                Err(ModelError::VersionConflict { path: path.to_owned(), expected: version.unwrap_or(-1) })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The node's `Stat`; `None` when there is no node (Curator's `checkExists()`).
    ///
    /// # Errors
    /// [`ModelError::Unresolved`]; [`ModelError::Connection`].
    ///
    /// # Cancel safety
    /// Cancel safe: a read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(alice: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// let exists = alice.exists().await?.is_some();
    /// # Ok(()) }
    /// ```
    #[doc(alias = "checkExists")]
    pub async fn exists(&self) -> Result<Option<Stat>, ModelError> {
        Ok(self.zk.exists(self.node()?).await?)
    }

    /// The names of the node's children, sorted; none when there is no node (Curator's
    /// `children()`, which gives paths).
    ///
    /// # Errors
    /// As [`exists`](Self::exists).
    ///
    /// # Cancel safety
    /// Cancel safe: a read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(users: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// let ids = users.parent().unwrap().children().await?;
    /// # Ok(()) }
    /// ```
    pub async fn children(&self) -> Result<Vec<String>, ModelError> {
        let found = self.zk.get_children(self.node()?).await?;
        let mut names = found.map(|(names, _)| names).unwrap_or_default();
        names.sort_unstable();
        Ok(names)
    }

    /// A framework, with this spec, for each of the node's children, in name order.
    ///
    /// # Errors
    /// As [`children`](Self::children).
    ///
    /// # Cancel safety
    /// Cancel safe: a read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(users: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// for user in users.parent().unwrap().children_as_frameworks().await? {
    ///     println!("{}: {:?}", user.path(), user.read().await?);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn children_as_frameworks(&self) -> Result<Vec<Self>, ModelError> {
        self.children().await?.iter().map(|name| self.child(name)).collect()
    }

    /// Every child's model, by name, in name order: the children are listed, then read (up to
    /// 32 at once). A child deleted between the two, and a child without data that the codec
    /// does not read, is left out.
    ///
    /// # Errors
    /// [`ModelError::Decode`] naming the first child (in name order) whose data does not
    /// decode; as [`children`](Self::children) otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe: reads.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(users: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// for (id, name) in users.parent().unwrap().list().await? {
    ///     println!("{id}: {name}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list(&self) -> Result<Vec<(String, T)>, ModelError> {
        let parent = self.node()?;
        let names = self.children().await?;
        let reads =
            futures::stream::iter(names).map(|name| self.read_child(parent, name)).buffered(LIST_READS);
        let found: Vec<_> = reads.try_collect().await?;
        Ok(found.into_iter().flatten().collect())
    }

    async fn read_child(&self, parent: &str, name: String) -> Result<Option<(String, T)>, ModelError> {
        let child = path::join(parent, &name);
        let Some((data, _)) = self.zk.get_data(&child).await? else { return Ok(None) };
        Ok(self.decode(&child, &data)?.map(|model| (name, model)))
    }

    /// A typed cache of every model of this framework's path: the nodes that fit the template,
    /// kept by one [`CuratorCache`](crate::cache::CuratorCache) over its longest resolved
    /// prefix (Curator's `cached()`, started). Returns once the first read is applied.
    ///
    /// # Errors
    /// [`ModelError::InvalidArgument`] for a prefix in the reserved `/zookeeper` tree;
    /// [`ModelError::Connection`] when ZooKeeper cannot be reached within the client's
    /// connection timeout, or `Unimplemented` from a server before 3.6 that the cache cannot
    /// fall back on.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is written, and the watch goes with the dropped future.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(users: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
    /// let cached = users.cached().await?;
    /// println!("{} users", cached.current_children().len());
    /// # Ok(()) }
    /// ```
    pub async fn cached(&self) -> Result<CachedModeledFramework<T>, ModelError> {
        CachedModeledFramework::start(self.clone()).await
    }
}
