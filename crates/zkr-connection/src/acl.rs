//! Which ACL a node gets when zkr creates it: Curator's `ACLProvider`.

use std::fmt;

use zookeeper_client::{Acl, Acls};

/// Chooses the ACL for every node the connection manager and the recipes create.
///
/// # Examples
///
/// ```
/// use zkr_connection::AclProvider;
/// use zkr_connection::zookeeper_client::{Acl, AuthId, Permission};
///
/// /// Everyone may read; the creator may do anything.
/// #[derive(Debug)]
/// struct ReadableByAll;
///
/// impl AclProvider for ReadableByAll {
///     fn acl_for_path(&self, _path: &str) -> Vec<Acl> {
///         vec![Acl::new(Permission::READ, AuthId::anyone()), Acl::new(Permission::ALL, AuthId::authed())]
///     }
/// }
/// assert_eq!(ReadableByAll.acl_for_path("/x").len(), 2);
/// ```
pub trait AclProvider: Send + Sync + fmt::Debug {
    /// The ACL for a node created at `path` (relative to the namespace).
    fn acl_for_path(&self, path: &str) -> Vec<Acl>;
}

/// `world:anyone` may do anything (ZooKeeper's `OPEN_ACL_UNSAFE`, Curator's default).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAclProvider;

impl AclProvider for OpenAclProvider {
    fn acl_for_path(&self, _path: &str) -> Vec<Acl> {
        Acls::anyone_all().to_vec()
    }
}

/// Only the creator's authenticated identities may do anything (ZooKeeper's
/// `CREATOR_ALL_ACL`). Needs auth (for example a digest) on the connection; nodes are then
/// invisible and untouchable to anonymous clients and to clients with other credentials.
#[derive(Debug, Clone, Copy, Default)]
pub struct CreatorAllAclProvider;

impl AclProvider for CreatorAllAclProvider {
    fn acl_for_path(&self, _path: &str) -> Vec<Acl> {
        Acls::creator_all().to_vec()
    }
}
