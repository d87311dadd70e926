//! [`ModelSpec`]: what a model is and how its nodes are made, Curator's `ModelSpec`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use zkr_connection::{Acl, CreateMode, Parents};

use super::{ModelError, ZPath};
use crate::codec::{Codec, CodecError};

/// A model's path template, its codec, and how its node is created: Curator's `ModelSpec`.
///
/// Built with [`ModelSpec::builder`]; the defaults are Curator's: a persistent node, the
/// client's ACL provider, no TTL, missing parents made as containers (Curator's default
/// `createParentsAsContainers`). The codec decides the data's format: [`Json`](crate::codec::Json)
/// stores the model's JSON, the same bytes Curator's `JacksonModelSerializer` writes for the
/// same fields. Cheap to clone.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::CreateMode;
/// use zkr_recipes::codec::Json;
/// use zkr_recipes::model::{ModelSpec, ZPath};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Session { user: String }
///
/// let sessions = ModelSpec::<Session>::builder(ZPath::parse("/sessions/{id}")?, Json)
///     .mode(CreateMode::Persistent)
///     .ttl(Duration::from_secs(3600))
///     .build()?;
/// assert_eq!(sessions.ttl(), Some(Duration::from_secs(3600)));
/// # Ok::<(), zkr_recipes::model::ModelError>(())
/// ```
pub struct ModelSpec<T> {
    path: ZPath,
    codec: Arc<dyn Codec<T>>,
    mode: CreateMode,
    ttl: Option<Duration>,
    acl: Option<Arc<[Acl]>>,
    parents: Parents,
}

impl<T: 'static> ModelSpec<T> {
    /// A builder of a spec for models at `path`, stored with `codec` (Curator's
    /// `ModelSpec.builder(path, serializer)`).
    ///
    /// ```
    /// use zkr_recipes::codec::Utf8;
    /// use zkr_recipes::model::{ModelSpec, ZPath};
    /// let notes = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).build()?;
    /// assert_eq!(notes.path().parameters(), ["id"]);
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    pub fn builder(path: ZPath, codec: impl Codec<T>) -> ModelSpecBuilder<T> {
        let spec = ModelSpec {
            path,
            codec: Arc::new(codec),
            mode: CreateMode::Persistent,
            ttl: None,
            acl: None,
            parents: Parents::Containers,
        };
        ModelSpecBuilder { spec }
    }

    /// The path template.
    ///
    /// ```
    /// # use zkr_recipes::{codec::Utf8, model::{ModelSpec, ZPath}};
    /// let spec = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).build()?;
    /// assert_eq!(spec.path().to_string(), "/notes/{id}");
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    pub fn path(&self) -> &ZPath {
        &self.path
    }

    /// The codec.
    ///
    /// ```
    /// # use zkr_recipes::{codec::Utf8, model::{ModelSpec, ZPath}};
    /// let spec = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).build()?;
    /// assert_eq!(spec.codec().decode(b"hello").unwrap(), "hello");
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    pub fn codec(&self) -> &dyn Codec<T> {
        &*self.codec
    }

    /// The node's create mode.
    ///
    /// ```
    /// # use zkr_recipes::{codec::Utf8, model::{ModelSpec, ZPath}};
    /// let spec = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).build()?;
    /// assert_eq!(spec.mode(), zkr_connection::CreateMode::Persistent);
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    pub fn mode(&self) -> CreateMode {
        self.mode
    }

    /// The node's time to live, if it has one.
    ///
    /// ```
    /// # use zkr_recipes::{codec::Utf8, model::{ModelSpec, ZPath}};
    /// let spec = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).build()?;
    /// assert_eq!(spec.ttl(), None);
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    pub fn ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// The node's ACL; `None`: the client's [`AclProvider`](zkr_connection::AclProvider)'s.
    ///
    /// ```
    /// # use zkr_recipes::{codec::Utf8, model::{ModelSpec, ZPath}};
    /// let spec = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).build()?;
    /// assert!(spec.acl().is_none());
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    pub fn acl(&self) -> Option<&[Acl]> {
        self.acl.as_deref()
    }

    /// How missing parents are made.
    ///
    /// ```
    /// # use zkr_recipes::{codec::Utf8, model::{ModelSpec, ZPath}};
    /// let spec = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).build()?;
    /// assert_eq!(spec.parents(), zkr_connection::Parents::Containers);
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    pub fn parents(&self) -> Parents {
        self.parents
    }

    /// The same spec at another path (Curator's `withPath`).
    ///
    /// ```
    /// use zkr_recipes::codec::Utf8;
    /// use zkr_recipes::model::{ModelSpec, ZPath};
    /// let notes = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).build()?;
    /// let drafts = notes.with_path(ZPath::parse("/drafts/{id}")?);
    /// assert_eq!(drafts.path().as_path(), "/drafts/{id}");
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    #[must_use]
    pub fn with_path(&self, path: ZPath) -> ModelSpec<T> {
        ModelSpec { path, ..self.clone() }
    }

    /// The model in `data`; `None` for a node without data that the codec does not read (a
    /// parent made for a deeper node, not a model).
    pub(super) fn decode(&self, data: &[u8]) -> Result<Option<T>, CodecError> {
        match self.codec.decode(data) {
            Ok(model) => Ok(Some(model)),
            Err(_) if data.is_empty() => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub(super) fn encode(&self, model: &T) -> Result<Vec<u8>, CodecError> {
        self.codec.encode(model)
    }
}

impl<T> Clone for ModelSpec<T> {
    fn clone(&self) -> Self {
        ModelSpec {
            path: self.path.clone(),
            codec: self.codec.clone(),
            mode: self.mode,
            ttl: self.ttl,
            acl: self.acl.clone(),
            parents: self.parents,
        }
    }
}

impl<T> fmt::Debug for ModelSpec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelSpec")
            .field("path", &self.path)
            .field("codec", &self.codec)
            .field("mode", &self.mode)
            .field("ttl", &self.ttl)
            .field("acl", &self.acl)
            .field("parents", &self.parents)
            .finish()
    }
}

/// Builds a [`ModelSpec`]: Curator's `ModelSpecBuilder`.
///
/// # Examples
///
/// ```
/// use zkr_connection::zookeeper_client::{AuthId, Permission};
/// use zkr_connection::{Acl, Parents};
/// use zkr_recipes::codec::Utf8;
/// use zkr_recipes::model::{ModelSpec, ZPath};
///
/// let public = ModelSpec::builder(ZPath::parse("/public/{key}")?, Utf8)
///     .acl(vec![Acl::new(Permission::READ, AuthId::anyone())])
///     .parents(Parents::Persistent)
///     .build()?;
/// # Ok::<(), zkr_recipes::model::ModelError>(())
/// ```
#[must_use = "a builder does nothing until build() is called"]
pub struct ModelSpecBuilder<T> {
    spec: ModelSpec<T>,
}

impl<T> ModelSpecBuilder<T> {
    /// The node's create mode (Curator's `withCreateMode`). Defaults to
    /// [`CreateMode::Persistent`]. With a sequential mode every [`set`](super::ModeledFramework::set)
    /// makes a new node, whose path it returns.
    ///
    /// ```
    /// # use zkr_recipes::{codec::Utf8, model::{ModelSpec, ZPath}};
    /// let spec = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).mode(zkr_connection::CreateMode::Ephemeral).build()?;
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    #[doc(alias = "withCreateMode")]
    pub fn mode(mut self, mode: CreateMode) -> Self {
        self.spec.mode = mode;
        self
    }

    /// A time to live (Curator's `withTtl`): the server deletes the node once it has had no
    /// change and no children for `ttl` (checked every `znode.container.checkIntervalMs`).
    /// Needs a persistent mode and a server with TTL nodes on. Defaults to none.
    ///
    /// ```
    /// # use zkr_recipes::{codec::Utf8, model::{ModelSpec, ZPath}};
    /// let spec = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).ttl(std::time::Duration::from_secs(60)).build()?;
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    #[doc(alias = "withTtl")]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.spec.ttl = Some(ttl);
        self
    }

    /// The node's ACL (Curator's `withAclList`). Defaults to the client's
    /// [`AclProvider`](zkr_connection::AclProvider)'s, which parents made by a create always get.
    ///
    /// ```
    /// # use zkr_recipes::{codec::Utf8, model::{ModelSpec, ZPath}};
    /// let spec = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).acl(zkr_connection::zookeeper_client::Acls::anyone_all().to_vec()).build()?;
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    #[doc(alias = "withAclList")]
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.spec.acl = Some(acl.into());
        self
    }

    /// How missing parents are made (Curator's `CreateOption.createParentsAsContainers` or
    /// `createParentsIfNeeded`). Defaults to [`Parents::Containers`], which the server deletes
    /// once they are empty: a model whose node was made as such a parent goes with its last
    /// child, so create a model before the models below it, or use [`Parents::Persistent`].
    ///
    /// ```
    /// # use zkr_recipes::{codec::Utf8, model::{ModelSpec, ZPath}};
    /// let spec = ModelSpec::builder(ZPath::parse("/notes/{id}")?, Utf8).parents(zkr_connection::Parents::Persistent).build()?;
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    pub fn parents(mut self, parents: Parents) -> Self {
        self.spec.parents = parents;
        self
    }

    /// The spec.
    ///
    /// # Errors
    /// [`ModelError::InvalidArgument`] for a TTL with a mode other than `Persistent` or
    /// `PersistentSequential`, a TTL under 1 ms or over 2^40 - 1 ms, or an empty ACL.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use zkr_connection::CreateMode;
    /// use zkr_recipes::codec::Utf8;
    /// use zkr_recipes::model::{ModelSpec, ZPath};
    /// let spec = ModelSpec::builder(ZPath::parse("/n")?, Utf8).mode(CreateMode::Ephemeral).ttl(Duration::from_secs(1));
    /// assert!(spec.build().is_err(), "an ephemeral node has no TTL");
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    pub fn build(self) -> Result<ModelSpec<T>, ModelError> {
        if let Some(ttl) = self.spec.ttl {
            zkr_connection::validate_ttl(self.spec.mode, ttl)?;
        }
        if self.spec.acl.as_ref().is_some_and(|acl| acl.is_empty()) {
            return Err(ModelError::InvalidArgument("an empty ACL: ZooKeeper refuses it".into()));
        }
        Ok(self.spec)
    }
}

impl<T> fmt::Debug for ModelSpecBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ModelSpecBuilder").field(&self.spec).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Json, Utf8};

    #[test]
    fn defaults_are_curators_and_build_checks_ttl_and_acl() {
        let spec = ModelSpec::<String>::builder(ZPath::parse("/n/{id}").unwrap(), Utf8).build().unwrap();
        assert_eq!(
            (spec.mode(), spec.ttl(), spec.acl(), spec.parents()),
            (CreateMode::Persistent, None, None, Parents::Containers)
        );
        let ttl = |mode, ttl| ModelSpec::<String>::builder(ZPath::root(), Utf8).mode(mode).ttl(ttl).build();
        assert!(ttl(CreateMode::PersistentSequential, Duration::from_secs(1)).is_ok());
        let Err(ModelError::InvalidArgument(why)) = ttl(CreateMode::Container, Duration::from_secs(1)) else {
            panic!("a container with a TTL")
        };
        assert!(why.contains("TTL"), "{why}");
        assert!(ttl(CreateMode::Persistent, Duration::ZERO).is_err());
        let empty = ModelSpec::<String>::builder(ZPath::root(), Utf8).acl(Vec::new()).build();
        assert!(matches!(empty, Err(ModelError::InvalidArgument(_))), "{empty:?}");
    }

    #[test]
    fn empty_data_the_codec_cannot_read_is_no_model() {
        let json = ModelSpec::<u32>::builder(ZPath::root(), Json).build().unwrap();
        assert_eq!(json.decode(b"").unwrap(), None);
        assert_eq!(json.decode(b"7").unwrap(), Some(7));
        assert_eq!(json.decode(b"x").unwrap_err().format(), "JSON");
        let text = ModelSpec::<String>::builder(ZPath::root(), Utf8).build().unwrap();
        assert_eq!(text.decode(b"").unwrap(), Some(String::new()), "empty text is a model");
    }
}
