//! Typed models: curator-x-async's `ModeledFramework` in Rust. A model is a Rust type stored
//! in the nodes of a path template (`/users/{id}`), encoded by a [`Codec`](crate::codec::Codec).
//!
//! Start with a [`ZPath`] and a [`ModelSpec`], then a [`ModeledFramework`] on a
//! [`ZkClient`](zkr_connection::ZkClient): [`resolved`](ModeledFramework::resolved) gives the
//! framework of one node, whose typed calls go through the client's retried calls.
//! [`cached`](ModeledFramework::cached) keeps every model of the template in memory and
//! streams their changes.
//!
//! | Curator (`org.apache.curator.x.async.modeled`) | zkr |
//! |---|---|
//! | `ZPath.parseWithIds(p)`, `resolved(..)`, `isResolved()`, `child`, `parent`, `fullPath` | [`ZPath::parse`], [`resolve`](ZPath::resolve), [`is_resolved`](ZPath::is_resolved), [`child`](ZPath::child), [`parent`](ZPath::parent), [`as_path`](ZPath::as_path) |
//! | `ModelSpec.builder(path, serializer)`, `withCreateMode`, `withTtl`, `withAclList`, `CreateOption.createParents*` | [`ModelSpec::builder`], [`mode`](ModelSpecBuilder::mode), [`ttl`](ModelSpecBuilder::ttl), [`acl`](ModelSpecBuilder::acl), [`parents`](ModelSpecBuilder::parents) |
//! | `ModelSerializer`, `JacksonModelSerializer` | [`Codec`](crate::codec::Codec), [`Json`](crate::codec::Json) |
//! | `ModeledFramework.wrap(client, spec)`, `resolved`, `child`, `parent` | [`ModeledFramework::new`], [`resolved`](ModeledFramework::resolved), [`child`](ModeledFramework::child), [`parent`](ModeledFramework::parent) |
//! | `set(m)`, `set(m, version)` | [`set`](ModeledFramework::set), [`set_versioned`](ModeledFramework::set_versioned) |
//! | `update(m)`, `update(m, version)` | [`update`](ModeledFramework::update), [`update_versioned`](ModeledFramework::update_versioned) |
//! | `read()`, `read(stat)`, `readAsZNode()`, `versioned().read()` | [`read`](ModeledFramework::read), [`read_with_stat`](ModeledFramework::read_with_stat), [`read_versioned`](ModeledFramework::read_versioned) |
//! | `delete()`, `delete(version)`, `checkExists()` | [`delete`](ModeledFramework::delete), [`delete_versioned`](ModeledFramework::delete_versioned), [`exists`](ModeledFramework::exists) |
//! | `children()`, `childrenAsZNodes()`, cached `list()` | [`children`](ModeledFramework::children), [`children_as_frameworks`](ModeledFramework::children_as_frameworks), [`list`](ModeledFramework::list) |
//! | `cached()`, `CachedModeledFramework`, `ModeledCacheListener` | [`cached`](ModeledFramework::cached), [`CachedModeledFramework`], [`ModelEvent`] |
//! | `ZNode<T>`, `versioned.Versioned<T>` | [`ZNode`], [`Versioned`] |
//!
//! The data is the codec's, nothing more: [`Json`](crate::codec::Json) stores the model's JSON,
//! as Curator's `JacksonModelSerializer` does, so each side reads the other's nodes when their
//! types have the same fields: `tests/tests/models.rs` runs a curator-x-async 5.9 process
//! (Maven Central) against zkr at one template, each reading, caching and updating (versioned)
//! what the other wrote.
//!
//! Absent nodes are `None` (Curator throws `NoNodeException`); a version that does not match
//! is [`ModelError::VersionConflict`], as in [`config`](crate::config); every call on a
//! template with a parameter left is [`ModelError::Unresolved`] and sends nothing. A node
//! without data that the codec does not read (a parent made as a container for a deeper
//! model) holds no model: `read` gives `None`, `list` and the cache skip it.
//!
//! # Examples
//!
//! ```no_run
//! # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::model::ModelError> {
//! use zkr_recipes::codec::Json;
//! use zkr_recipes::model::{ModelSpec, ModeledFramework, ZPath};
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct User { name: String }
//!
//! let users = ModeledFramework::new(&zk, ModelSpec::builder(ZPath::parse("/users/{id}")?, Json).build()?);
//! let alice = users.resolved(&["alice"])?;
//! alice.set(&User { name: "Alice".into() }).await?;
//! let read: Option<User> = alice.read().await?;
//! # Ok(()) }
//! ```

mod cached;
mod framework;
mod spec;
mod zpath;

use std::sync::Arc;

pub use cached::{CachedModeledFramework, ModelEvent};
pub use framework::ModeledFramework;
pub use spec::{ModelSpec, ModelSpecBuilder};
use zkr_connection::path::PathError;
use zkr_connection::Stat;
pub use zpath::{TemplateError, ZPath};

use crate::codec::CodecError;

/// What went wrong with a model.
///
/// [`InvalidTemplate`](Self::InvalidTemplate), [`WrongArity`](Self::WrongArity),
/// [`InvalidName`](Self::InvalidName), [`Unresolved`](Self::Unresolved),
/// [`Encode`](Self::Encode) and [`InvalidArgument`](Self::InvalidArgument) are found before
/// anything is sent; [`VersionConflict`](Self::VersionConflict) and
/// [`NotFound`](Self::NotFound) are ZooKeeper's answers, with nothing written;
/// [`Decode`](Self::Decode) comes after a read. Only a [`Connection`](Self::Connection) error
/// may leave a write's outcome unknown ([`is_ambiguous`](zkr_connection::Classify::is_ambiguous)).
///
/// # Examples
///
/// ```no_run
/// # async fn f(user: zkr_recipes::model::ModeledFramework<String>) {
/// use zkr_recipes::model::ModelError;
/// use zkr_recipes::Classify as _;
///
/// match user.update_versioned(&"new".to_owned(), 3).await {
///     Ok(stat) => println!("now at version {}", stat.version),
///     Err(ModelError::VersionConflict { .. }) => println!("someone else wrote first: read again"),
///     Err(ModelError::NotFound { .. }) => println!("no such node"),
///     Err(e) if e.is_ambiguous() => println!("may or may not be written: read to know"),
///     Err(e) => println!("{e}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// [`ZPath::parse`] was given something that is not a template.
    #[error("invalid path template {template:?}")]
    InvalidTemplate {
        /// The text.
        template: String,
        /// What is wrong with it.
        #[source]
        source: TemplateError,
    },
    /// [`ZPath::resolve`] was given more or fewer values than the template has parameters.
    #[error("{template} has {expected} parameters, {given} values were given")]
    WrongArity {
        /// The template.
        template: String,
        /// How many parameters it has.
        expected: usize,
        /// How many values were given.
        given: usize,
    },
    /// A parameter's value or a child's name is not a node name.
    #[error("{value:?} is not a node name ({} of {template})", what(parameter))]
    InvalidName {
        /// The template.
        template: String,
        /// The parameter given the value; `None` for a child's name.
        parameter: Option<String>,
        /// The value.
        value: String,
        /// Why it is not a node name.
        #[source]
        source: PathError,
    },
    /// A call that needs one node was made on a template with a parameter left: resolve it
    /// first ([`ModeledFramework::resolved`]).
    #[error("{template} is not resolved: {{{parameter}}} has no value")]
    Unresolved {
        /// The template.
        template: String,
        /// The first parameter without a value.
        parameter: String,
    },
    /// The codec cannot encode the model: nothing was sent.
    #[error("cannot encode the model for {path}")]
    Encode {
        /// The node.
        path: String,
        /// The codec's error.
        #[source]
        source: CodecError,
    },
    /// A node's data does not decode with the codec (another program wrote it).
    #[error("the data of {path} does not decode")]
    Decode {
        /// The node.
        path: String,
        /// The codec's error.
        #[source]
        source: CodecError,
    },
    /// A versioned write or delete found the node at another version: someone else wrote in
    /// between. Nothing was written.
    #[error("{path} is not at version {expected} (someone else wrote in between)")]
    VersionConflict {
        /// The node.
        path: String,
        /// The version the call expected.
        expected: i32,
    },
    /// An update of a node that does not exist (or a [`set`](ModeledFramework::set) whose node
    /// was deleted between its create and its write). Nothing was written.
    #[error("{path} does not exist")]
    NotFound {
        /// The node.
        path: String,
    },
    /// A bad setting ([`ModelSpecBuilder::build`]), a path in the reserved `/zookeeper` tree,
    /// data over the node limit: nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A ZooKeeper operation failed: the retry policy gave up, a deadline passed, the session
    /// expired, the client is closed, or an answer such as `NoAuth` or `NotEmpty`.
    #[error(transparent)]
    Connection(zkr_connection::Error),
}

crate::errors::from_connection!(ModelError);

/// What a name was given for, in messages: `{id}`, or `child`.
fn what(parameter: &Option<String>) -> String {
    parameter.as_deref().map_or_else(|| "child".to_owned(), |p| format!("{{{p}}}"))
}

impl zkr_connection::Classify for ModelError {
    /// What the error means to the caller ([`ErrorKind`](zkr_connection::ErrorKind)), as for
    /// every family.
    ///
    /// ```
    /// use zkr_connection::{Classify, ErrorKind};
    /// use zkr_recipes::model::ZPath;
    /// let error = ZPath::parse("/users/{id}").unwrap().resolve(&[]).unwrap_err();
    /// assert_eq!(error.kind(), ErrorKind::Usage);
    /// ```
    fn kind(&self) -> zkr_connection::ErrorKind {
        use zkr_connection::ErrorKind as K;
        match self {
            ModelError::Connection(e) => e.kind(),
            ModelError::InvalidTemplate { .. }
            | ModelError::WrongArity { .. }
            | ModelError::InvalidName { .. }
            | ModelError::Unresolved { .. }
            | ModelError::Encode { .. }
            | ModelError::InvalidArgument(_) => K::Usage,
            ModelError::Decode { .. } => K::Corrupt,
            ModelError::VersionConflict { .. } => K::Conflict,
            ModelError::NotFound { .. } => K::Absent,
        }
    }

    /// Might the failed write have been applied all the same
    /// ([`zkr_connection::Error::is_ambiguous`](zkr_connection::Classify::is_ambiguous): its reply was lost)? Read the node to know.
    ///
    /// ```
    /// use zkr_connection::zookeeper_client::Error as ZkError;
    /// use zkr_connection::Classify;
    /// use zkr_recipes::model::ModelError;
    /// let lost = ModelError::from(zkr_connection::Error::Zk(ZkError::ConnectionLoss));
    /// assert!(lost.is_ambiguous());
    /// assert!(!ModelError::NotFound { path: "/n".into() }.is_ambiguous());
    /// ```
    fn is_ambiguous(&self) -> bool {
        matches!(self, ModelError::Connection(e) if e.is_ambiguous())
    }
}

/// A model with the data version it was read at: Curator's `Versioned<T>`, what
/// [`ModeledFramework::update_versioned`] compares against.
///
/// (Not [`config::Versioned`](crate::config::Versioned), which holds a config value.)
///
/// # Examples
///
/// ```no_run
/// # async fn f(user: zkr_recipes::model::ModeledFramework<String>) -> Result<(), zkr_recipes::model::ModelError> {
/// if let Some(current) = user.read_versioned().await? {
///     let renamed = current.model.to_uppercase();
///     user.update_versioned(&renamed, current.version).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Versioned<T> {
    /// The model.
    pub model: T,
    /// The node's data version (`Stat.version`).
    pub version: i32,
}

impl<T> Versioned<T> {
    /// A model at `version` (Curator's `Versioned.from(model, version)`).
    ///
    /// ```
    /// let v = zkr_recipes::model::Versioned::new("x", 3);
    /// assert_eq!((v.model, v.version), ("x", 3));
    /// ```
    pub fn new(model: T, version: i32) -> Self {
        Versioned { model, version }
    }
}

/// A model with its node's path and `Stat`, as a [`CachedModeledFramework`] holds it:
/// Curator's `ZNode<T>`. Cheap to clone (the model is shared).
///
/// # Examples
///
/// ```no_run
/// # fn f(users: zkr_recipes::model::CachedModeledFramework<String>) {
/// for user in users.current_children() {
///     println!("{} = {} (version {})", user.path.node_name(), user.model, user.stat.version);
/// }
/// # }
/// ```
#[non_exhaustive]
pub struct ZNode<T> {
    /// The node's path (resolved).
    pub path: ZPath,
    /// Its `Stat` when the model was read.
    pub stat: Stat,
    /// The model.
    pub model: Arc<T>,
}

impl<T> Clone for ZNode<T> {
    fn clone(&self) -> Self {
        ZNode { path: self.path.clone(), stat: self.stat, model: self.model.clone() }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for ZNode<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZNode")
            .field("path", &self.path)
            .field("version", &self.stat.version)
            .field("model", &self.model)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkr_connection::Classify as _;

    #[test]
    fn messages_name_the_node_and_say_each_cause_once() {
        let template = ZPath::parse("/u/{id}/o/{order}").unwrap();
        let unresolved = ModelError::Unresolved { template: template.to_string(), parameter: "id".into() };
        assert_eq!(unresolved.to_string(), "/u/{id}/o/{order} is not resolved: {id} has no value");
        let bad = template.resolve(&["a", "x/y"]).unwrap_err();
        assert_eq!(bad.to_string(), r#""x/y" is not a node name ({order} of /u/{id}/o/{order})"#);
        assert_eq!(std::error::Error::source(&bad).unwrap().to_string(), "invalid node name");
        let child = template.child("").unwrap_err();
        assert_eq!(child.to_string(), r#""" is not a node name (child of /u/{id}/o/{order})"#);
        let source = crate::codec::CodecError::new("JSON", "oops");
        let decode = ModelError::Decode { path: "/u/a".into(), source };
        assert_eq!(decode.to_string(), "the data of /u/a does not decode");
        assert_eq!(std::error::Error::source(&decode).unwrap().to_string(), "not valid JSON");
        assert_eq!(decode.kind(), zkr_connection::ErrorKind::Corrupt);
        let reserved = ModelError::from(zkr_connection::path::validate_node_path("/").unwrap_err());
        assert!(matches!(reserved, ModelError::InvalidArgument(_)), "{reserved:?}");
        let lost = zkr_connection::Error::Zk(zkr_connection::zookeeper_client::Error::ConnectionLoss);
        let lost = ModelError::from(lost);
        assert!(lost.is_ambiguous() && !unresolved.is_ambiguous());
        assert_eq!(ModelError::NotFound { path: "/n".into() }.kind(), zkr_connection::ErrorKind::Absent);
    }
}
