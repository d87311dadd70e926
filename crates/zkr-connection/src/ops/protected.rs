//! Protected create (Curator's protection mode): a node whose creation can be confirmed after
//! a lost reply, and that is never left behind by a failed or cancelled create.

use std::future::Future;
use std::time::Duration;

use uuid::Uuid;
use zookeeper_client::{CreateMode, Stat};

use crate::error::{Error, Result};
use crate::guard::DropGuard;
use crate::kind::{is_retryable, is_session_error};
use crate::ops::nodes::{create_after_no_node, ttl_error, validate_ttl, NodeSpec, Parents};
use crate::ops::retry_loop::RetryOptions;
use crate::path;
use crate::session::client::{Session, ZkClient};
use crate::session::session_client::SessionClient;

/// Curator's `ProtectedUtils.PROTECTED_PREFIX`.
pub const PROTECTED_PREFIX: &str = "_c_";

/// The name prefix of a protected node: `_c_<uuid>-`.
pub fn protected_prefix(id: &Uuid) -> String {
    let mut buffer = Uuid::encode_buffer();
    let id = id.hyphenated().encode_lower(&mut buffer);
    let mut prefix = String::with_capacity(PROTECTED_PREFIX.len() + id.len() + 1);
    prefix.push_str(PROTECTED_PREFIX);
    prefix.push_str(id);
    prefix.push('-');
    prefix
}

/// Is `name` a protected node name (`_c_` + a 36-character UUID + `-`)?
///
/// # Examples
///
/// ```
/// use zkr_connection::protected::is_protected_name;
/// assert!(is_protected_name("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007"));
/// assert!(!is_protected_name("lock-0000000007"));
/// ```
pub fn is_protected_name(name: &str) -> bool {
    name.len() >= 40
        && name.starts_with(PROTECTED_PREFIX)
        && name.as_bytes()[39] == b'-'
        && Uuid::parse_str(&name[3..39]).is_ok()
}

/// The name without its protection prefix (Curator's `ProtectedUtils.normalize`).
///
/// # Examples
///
/// ```
/// use zkr_connection::protected::normalize;
/// assert_eq!(normalize("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007"), "lock-0000000007");
/// assert_eq!(normalize("lock-1"), "lock-1");
/// ```
pub fn normalize(name: &str) -> &str {
    if is_protected_name(name) {
        &name[40..]
    } else {
        name
    }
}

/// A node made by [`ZkClient::create_protected`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProtectedNode {
    /// Full path (relative to the namespace).
    pub path: String,
    /// The node name (last segment), `<tag><name>[<sequence>]`.
    pub name: String,
    /// The unique prefix that identified the node (`_c_<uuid>-` unless a custom tag was given).
    pub tag: String,
    /// The sequence number, for sequential modes.
    pub sequence: Option<i64>,
    /// The node's `Stat` at creation (`czxid` is a fencing token: it grows with every node).
    pub stat: Stat,
    /// The session the node was created on (for ephemeral nodes: the session it lives with).
    pub session: Session,
    /// The parent's children, our node among them, when [`ProtectedCreate::list_siblings`]
    /// asked for them and the listing took no extra round trip. For sequential modes every
    /// sibling created before our node that still existed when it was created is there (some
    /// may have been deleted since); nodes created after ours are not. For other modes the
    /// listing was taken right after the create. `None` when the listing could not be proved
    /// complete, failed, or the create had to be repeated: list the parent yourself.
    pub siblings: Option<Vec<String>>,
}

/// After a lost reply the create may have landed on a server this connection has left: a
/// lagging follower's listing would miss it, and a second node would queue behind our own
/// orphan (Curator has the same hole). Syncs our server first, then [`find`]s the node.
async fn sync_and_find(
    client: &SessionClient,
    parent: &str,
    prefix: &str,
) -> std::result::Result<Option<(String, Stat)>, zookeeper_client::Error> {
    match client.sync(parent).await {
        Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
        Err(e) => return Err(e),
    }
    find(client, parent, prefix).await
}

/// Finds our node under `parent` by prefix; `(name, stat)`.
async fn find(
    client: &SessionClient,
    parent: &str,
    prefix: &str,
) -> std::result::Result<Option<(String, Stat)>, zookeeper_client::Error> {
    let children = match client.list_children(parent).await {
        Ok(children) => children,
        Err(zookeeper_client::Error::NoNode) => return Ok(None),
        Err(e) => return Err(e),
    };
    let Some(name) = children.into_iter().find(|c| c.starts_with(prefix)) else { return Ok(None) };
    match client.check_stat(&path::join(parent, &name)).await? {
        Some(stat) => Ok(Some((name, stat))),
        None => Ok(None),
    }
}

fn parse_sequence(name: &str, node_prefix: &str) -> Option<i64> {
    name.strip_prefix(node_prefix).and_then(|s| s.parse::<i64>().ok())
}

/// The name ZooKeeper gave a node created as `<node_prefix>` in `mode`.
fn node_name(node_prefix: &str, mode: CreateMode, seq: zookeeper_client::CreateSequence) -> String {
    if is_sequential(mode) {
        use std::fmt::Write as _;
        // ZooKeeper's `%010d`: ten characters, eleven for the most negative.
        let mut name = String::with_capacity(node_prefix.len() + 11);
        name.push_str(node_prefix);
        let _ = write!(name, "{seq}");
        name
    } else {
        node_prefix.to_string()
    }
}

/// Was a listing of a parent whose `Stat` is `parent` taken when exactly `sequence` children had
/// ever been created under it, that is, right before the create that got `sequence`?
///
/// ZooKeeper names a sequential child after its parent's count of child creates, and reports
/// `cversion` as the count of child changes (creates plus deletes), so the count of creates is
/// `(cversion + num_children) / 2`. Both wrap as 32-bit integers; the comparison is modulo
/// 2^31, which the halving leaves (two billion creates between a listing and the next create
/// are not a case to plan for).
pub(crate) fn listing_precedes(parent: &Stat, sequence: i64) -> bool {
    let changes_plus_children = (parent.cversion as u32).wrapping_add(parent.num_children as u32);
    changes_plus_children.is_multiple_of(2) && changes_plus_children / 2 == (sequence as u32) & 0x7fff_ffff
}

/// Does a listing of `parent` taken just before a sequential create hold every sibling older
/// than the node created, which got `sequence`? `listed` is the parent's `Stat` from the
/// listing, `after` the parent's `Stat` read right after the create.
///
/// Two things must hold: no child was created between the listing and the create
/// (the sequence is the listing's count of creates), and the parent is the same node, not a
/// new one of the same name. A lock directory is a container, which ZooKeeper deletes once it is
/// empty; a recreated one counts its sequence from 0 again, so without the second check a
/// foreign node in the new directory could hide behind a sequence that happens to match
/// (issue 16, item 11). The parent's creation zxid tells the two incarnations apart.
///
/// # Examples
///
/// ```
/// use zkr_connection::protected::listing_is_complete;
/// use zkr_connection::Stat;
///
/// let directory = |czxid, cversion| Stat {
///     czxid, mzxid: czxid, pzxid: czxid, ctime: 0, mtime: 0, version: 0, cversion,
///     aversion: 0, ephemeral_owner: 0, data_length: 0, num_children: 0,
/// };
/// // One child created and deleted (cversion 2): the next create gets sequence 1.
/// assert!(listing_is_complete(&directory(7, 2), 1, &directory(7, 3)));
/// // The directory was deleted and made again in between: the listing proves nothing.
/// assert!(!listing_is_complete(&directory(7, 2), 1, &directory(9, 3)));
/// ```
pub fn listing_is_complete(listed: &Stat, sequence: i64, after: &Stat) -> bool {
    listed.czxid == after.czxid && listing_precedes(listed, sequence)
}

pub(crate) fn is_sequential(mode: CreateMode) -> bool {
    matches!(mode, CreateMode::EphemeralSequential | CreateMode::PersistentSequential)
}

fn is_ephemeral(mode: CreateMode) -> bool {
    matches!(mode, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
}

/// A protected create, for [`ZkClient::create_protected_ext`]: the parent, the name, the mode,
/// and the options the simple [`ZkClient::create_protected`] does not take.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
/// use zkr_connection::protected::ProtectedCreate;
/// use zkr_connection::CreateMode;
///
/// // kazoo's lock naming: `<uuid hex>__lock__<seq>`, and the siblings listed in the same round trip.
/// let tag = uuid::Uuid::new_v4().simple().to_string();
/// let node = zk
///     .create_protected_ext(ProtectedCreate::new("/locks/x", "__lock__", CreateMode::EphemeralSequential).tag(tag).list_siblings(true))
///     .await?;
/// // `None` when another contender was created between the listing and ours: list again then.
/// if let Some(siblings) = node.siblings {
///     assert!(siblings.contains(&node.name));
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a ProtectedCreate does nothing until passed to create_protected_ext"]
pub struct ProtectedCreate<'a> {
    parent: &'a str,
    name: &'a str,
    mode: CreateMode,
    data: &'a [u8],
    tag: Option<String>,
    list_siblings: bool,
    ttl: Option<Duration>,
    acl: Option<Vec<zookeeper_client::Acl>>,
    parents: Parents,
    options: RetryOptions,
}

impl<'a> ProtectedCreate<'a> {
    /// A create of `<parent>/<tag><name>` in `mode`, with empty data and a fresh `_c_<uuid>-`
    /// tag.
    pub fn new(parent: &'a str, name: &'a str, mode: CreateMode) -> Self {
        ProtectedCreate {
            parent,
            name,
            mode,
            data: &[],
            tag: None,
            list_siblings: false,
            ttl: None,
            acl: None,
            parents: Parents::Containers,
            options: RetryOptions::default(),
        }
    }

    /// The node's data. Defaults to empty.
    pub fn data(mut self, data: &'a [u8]) -> Self {
        self.data = data;
        self
    }

    /// The unique prefix that identifies our node among its siblings. It must be unique to this
    /// create (contain a fresh UUID). Defaults to Curator's `_c_<uuid>-`.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tag = Some(tag.into());
        self
    }

    /// Also list the parent's children in the same round trip as the create; the listing
    /// includes our node (see [`ProtectedNode::siblings`]). Defaults to false.
    ///
    /// For sequential modes the listing is sent *before* the create, so the server answers it
    /// at once instead of after the create is written, and costs the caller no time. Our
    /// sequence number then says whether it is complete: ZooKeeper numbers a sequential child
    /// by the count of children ever created under its parent, which the listing's parent
    /// `Stat` gives (`cversion` counts creates and deletes, `num_children` the difference). When
    /// no child was created between the listing and our create, the listing holds every
    /// older sibling; otherwise `siblings` is `None`.
    pub fn list_siblings(mut self, list: bool) -> Self {
        self.list_siblings = list;
        self
    }

    /// A time to live, for the persistent modes (Curator's `*_WITH_TTL` modes): the server
    /// deletes the node once it has had no children for `ttl` after its last change. See
    /// [`ZkClient::create_with_ttl`]; a server without TTL nodes answers
    /// [`Error::TtlDisabled`].
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The node's ACL instead of the manager's [`AclProvider`](crate::AclProvider)'s.
    pub fn acl(mut self, acl: Vec<zookeeper_client::Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// How missing parents are made. Defaults to [`Parents::Containers`].
    pub fn parents(mut self, parents: Parents) -> Self {
        self.parents = parents;
        self
    }

    /// Retry options (deadline, policy).
    pub fn retry_options(mut self, options: RetryOptions) -> Self {
        self.options = options;
        self
    }
}

/// One protected create's fixed parts, for each of its attempts.
struct Attempt<'a> {
    parent: &'a str,
    prefix: &'a str,
    node_prefix: &'a str,
    node_path: &'a str,
    data: &'a [u8],
    spec: NodeSpec<'a>,
    list_siblings: bool,
}

/// What an attempt created or found: name, `Stat`, sequence, siblings.
type Created = (String, Stat, Option<i64>, Option<Vec<String>>);

impl ZkClient {
    /// One attempt of a protected create on `session`; after a lost reply (`look_first`) it
    /// looks for the node first.
    async fn create_once(
        &self,
        session: &Session,
        a: &Attempt<'_>,
        look_first: bool,
    ) -> std::result::Result<Created, zookeeper_client::Error> {
        let client = session.client();
        if look_first {
            // Boxed, as the rare path: a pending create's future stays small.
            if let Some((found, stat)) = Box::pin(sync_and_find(client, a.parent, a.prefix)).await? {
                if is_ephemeral(a.spec.mode) && stat.ephemeral_owner != session.id() {
                    // CURATOR-498: a node of a session that has ended (seen through a
                    // lagging server): not ours any more.
                    tracing::debug!(node = %found, "protected node from an older session; deleting it");
                    let _ = self.guaranteed_delete(path::join(a.parent, &found), None);
                } else {
                    return Ok((found, stat, None, None));
                }
            }
        }
        // Every request is sent before any reply is awaited: one round trip. A listing for
        // a sequential create goes first (see `ProtectedCreate::list_siblings`).
        let acls = a.spec.acl_for(self, a.node_path);
        let create_options = a.spec.options(&acls);
        let list_first = a.list_siblings && is_sequential(a.spec.mode);
        let before = list_first.then(|| client.get_children(a.parent));
        let create = client.create(a.node_path, a.data, &create_options);
        let after = (a.list_siblings && !list_first).then(|| client.list_children(a.parent));
        // The parent as it is after the create: the same directory the listing saw?
        let incarnation = list_first.then(|| client.check_stat(a.parent));
        let created = create.await;
        let before = match before {
            Some(listing) => listing.await.ok(),
            None => None,
        };
        let after = match after {
            Some(listing) => listing.await.ok(),
            None => None,
        };
        let (stat, seq) = match created {
            Err(zookeeper_client::Error::NoNode) if a.spec.parents != Parents::None => {
                let created =
                    Box::pin(create_after_no_node(self, client, a.node_path, a.data, &a.spec)).await?;
                let name = node_name(a.node_prefix, a.spec.mode, created.1);
                return Ok((name, created.0, is_sequential(a.spec.mode).then(|| created.1.into_i64()), None));
            }
            other => other?,
        };
        let sequence = is_sequential(a.spec.mode).then(|| seq.into_i64());
        let name = node_name(a.node_prefix, a.spec.mode, seq);
        let incarnation = match incarnation {
            Some(stat) => stat.await.ok().flatten(),
            None => None,
        };
        let siblings = match (before, sequence, incarnation) {
            (Some((mut children, listed)), Some(sequence), Some(after))
                if listing_is_complete(&listed, sequence, &after) =>
            {
                children.push(name.clone());
                Some(children)
            }
            _ => after,
        };
        Ok((name, stat, sequence, siblings))
    }
}

impl ZkClient {
    /// Creates `<parent>/_c_<uuid>-<name>` (plus the sequence for sequential modes), creating
    /// missing parents as containers: Curator's `create().withProtection()`.
    ///
    /// When a create's reply is lost (connection loss), the next attempt first lists `parent`
    /// and finds our node by its unique prefix instead of creating a second one. For ephemeral
    /// modes a node found from an older session is ignored and deleted (CURATOR-498). When the
    /// create gives up, fails with an unknown outcome, or the future is dropped, a background
    /// task finds and deletes the node, so nothing is left behind.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] (bad parent or name), [`Error::DataTooLarge`], or as
    /// [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped create leaves no node behind (a background task deletes it if the
    /// server applied it).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// use zkr_connection::CreateMode;
    /// let node = zk.create_protected("/locks/orders", "lock-", b"", CreateMode::EphemeralSequential).await?;
    /// println!("{} (sequence {:?})", node.path, node.sequence);
    /// # Ok(()) }
    /// ```
    pub async fn create_protected(
        &self,
        parent: &str,
        name: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<ProtectedNode> {
        self.create_protected_ext(ProtectedCreate::new(parent, name, mode).data(data)).await
    }

    /// [`create_protected`](Self::create_protected) with retry options (deadline, policy).
    ///
    /// # Errors
    /// As [`create_protected`](Self::create_protected).
    ///
    /// # Cancel safety
    /// As [`create_protected`](Self::create_protected).
    pub async fn create_protected_with(
        &self,
        parent: &str,
        name: &str,
        data: &[u8],
        mode: CreateMode,
        options: RetryOptions,
    ) -> Result<ProtectedNode> {
        self.create_protected_ext(ProtectedCreate::new(parent, name, mode).data(data).retry_options(options))
            .await
    }

    /// The general protected create: a custom tag (for other clients' naming schemes, such as
    /// kazoo's `<uuid hex>__lock__`) and the siblings listed in the same round trip.
    ///
    /// # Errors
    /// As [`create_protected`](Self::create_protected), and [`Error::InvalidPath`] for a tag
    /// that makes an invalid name.
    ///
    /// # Cancel safety
    /// As [`create_protected`](Self::create_protected).
    pub fn create_protected_ext<'a>(
        &'a self,
        request: ProtectedCreate<'a>,
    ) -> impl Future<Output = Result<ProtectedNode>> + Send + 'a {
        use tracing::Instrument as _;
        // The span around a plain async fn, not `#[tracing::instrument]`, which would keep the
        // request twice in every pending create's future.
        let span = tracing::debug_span!("zk.create_protected", parent = request.parent, name = request.name);
        self.create_protected_in_span(request).instrument(span)
    }

    async fn create_protected_in_span(&self, request: ProtectedCreate<'_>) -> Result<ProtectedNode> {
        let ProtectedCreate { parent, name, mode, data, tag, list_siblings, ttl, acl, parents, options } =
            request;
        path::validate_path(parent)?;
        if let Some(ttl) = ttl {
            validate_ttl(mode, ttl)?;
        }
        let prefix = tag.unwrap_or_else(|| protected_prefix(&Uuid::new_v4()));
        if prefix.is_empty() {
            return Err(Error::InvalidArgument("a protected create needs a non-empty tag"));
        }
        let node_prefix = [prefix.as_str(), name].concat();
        path::validate_name(&node_prefix)?;
        let node_path = path::join(parent, &node_prefix);
        path::validate_data(&node_path, data)?;
        let mut budget = options.budget(self.retry_policy());
        let deadline = budget.deadline();
        // Deletes whatever the create left behind if it is dropped or gives up while its
        // outcome is unknown.
        let mut guard = {
            let (zk, parent, prefix) = (self.clone(), parent.to_string(), prefix.clone());
            DropGuard::deferred("a possibly orphaned protected node", move || async move {
                zk.find_and_delete_protected(&parent, &prefix).await
            })
        };
        let attempt = Attempt {
            parent,
            prefix: &prefix,
            node_prefix: &node_prefix,
            node_path: &node_path,
            data,
            spec: NodeSpec { mode, ttl, acl: acl.as_deref(), parents },
            list_siblings,
        };
        let mut attempted = false;
        loop {
            let session = self.session_for(deadline).await?;
            let look_first = std::mem::replace(&mut attempted, true);
            let step = self.create_once(&session, &attempt, look_first);
            let step = crate::ops::retry_loop::nudged(step, session.generation(), &self.shared);
            let Some(outcome) = crate::deadline::within(deadline, step).await else {
                let deadline = deadline.map(|d| d.timeout()).unwrap_or_default();
                return Err(Error::DeadlineExceeded { deadline, last: None });
            };
            let error = match outcome {
                Ok((node_name, stat, sequence, siblings)) => {
                    guard.disarm();
                    let sequence = sequence.or_else(|| {
                        is_sequential(mode).then(|| parse_sequence(&node_name, &node_prefix)).flatten()
                    });
                    return Ok(ProtectedNode {
                        path: path::join(parent, &node_name),
                        name: node_name,
                        tag: prefix,
                        sequence,
                        stat,
                        session,
                        siblings,
                    });
                }
                Err(e) => e,
            };
            let retry_it = (is_retryable(&error) || is_session_error(&error)) && budget.allows(&error);
            if !retry_it {
                if !is_retryable(&error) && !is_session_error(&error) {
                    // A definite answer (NodeExists, NoAuth, ...): nothing was created.
                    guard.disarm();
                }
                return Err(ttl_error(Error::Zk(error), &node_path));
            }
            if self.is_closed() {
                return Err(Error::Closed);
            }
            let sleep = budget.next_sleep().map_err(|stop| stop.into_error(Some(error.clone())))?;
            tracing::debug!(attempt = budget.retries(), delay = ?sleep, error = %error, path = %node_path, "protected create will retry");
            crate::session::telemetry::retry(&self.shared.config.name, "protected_create");
            tokio::time::sleep(sleep).await;
        }
    }

    /// Deletes every child of `parent` whose name starts with `prefix`, retrying through
    /// connection loss and session rebuilds until done, `parent` is gone, or the manager closes
    /// (Curator's `FindAndDeleteProtectedNodeInBackground`). Recipes call it, usually in a
    /// spawned task, after a create whose outcome is unknown: with a unique prefix it finds what
    /// that create left behind.
    ///
    /// # Cancel safety
    /// Cancel safe: nodes are deleted or not; call it again to finish.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) {
    /// zk.find_and_delete_protected("/ids/orders/epoch-0000000000", "3f0c9e4be1d24c0f8e8f2c52b6a1f0aa-").await;
    /// # }
    /// ```
    pub async fn find_and_delete_protected(&self, parent: &str, prefix: &str) {
        let mut pause = crate::retry::SessionPause::default();
        loop {
            if self.is_closed() {
                return;
            }
            let Ok(session) = self.session().await else { continue };
            match session.client().list_children(parent).await {
                Ok(children) => {
                    let ours: Vec<String> = children.into_iter().filter(|c| c.starts_with(prefix)).collect();
                    let mut all_gone = true;
                    for child in ours {
                        let child_path = path::join(parent, &child);
                        match session.client().delete(&child_path, None).await {
                            Ok(()) | Err(zookeeper_client::Error::NoNode) => {
                                tracing::info!(node = %child_path, "deleted an orphaned protected node");
                            }
                            Err(_) => all_gone = false,
                        }
                    }
                    if all_gone {
                        return;
                    }
                }
                Err(zookeeper_client::Error::NoNode) => return,
                Err(e) if is_retryable(&e) || is_session_error(&e) => {}
                Err(e) => {
                    tracing::warn!(parent, error = %e, "cannot look for an orphaned protected node");
                    return;
                }
            }
            pause.sleep().await;
        }
    }
}

#[cfg(test)]
mod tests;
