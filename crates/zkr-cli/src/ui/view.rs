//! What `zkr ui` sends the page: the recipes under the root, who holds what by session, and
//! the nodes no recipe explains, as one JSON document; then a patch per change.

use serde::Serialize;
use zkr_recipes::cache::CachedNode;

/// Everything the page shows at one moment.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct View {
    /// The subtree shown.
    pub root: String,
    /// Are config values shown (`--show-values`)?
    pub show_values: bool,
    #[serde(flatten)]
    pub whole: Whole,
    /// Every recipe recognised, by path (counters and config nodes: the first [`LEAF_LIMIT`]).
    pub recipes: Vec<Recipe>,
    /// What each session holds, busiest first.
    pub sessions: Vec<SessionView>,
    /// The nodes no recipe explains, by path (at most [`TREE_LIMIT`]).
    pub tree: Vec<TreeNode>,
}

/// What changed since the last view or patch: the recipes added or changed (whole), the paths
/// of those gone, and the lists that are cheap to send whole.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Patch {
    #[serde(flatten)]
    pub whole: Whole,
    /// Recipes new or changed, whole.
    pub upsert: Vec<Recipe>,
    /// Paths of recipes gone.
    pub remove: Vec<String>,
    pub sessions: Vec<SessionView>,
    /// The plain nodes, when they changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<Vec<TreeNode>>,
}

/// What a view and a patch say of the whole.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub(crate) struct Whole {
    /// When this was made, in milliseconds since the Unix epoch (the page ages from it).
    pub now_ms: i64,
    /// The connection: "connecting", "connected", "suspended", "lost" or "read-only".
    pub connection: &'static str,
    /// Is the copy unconfirmed by ZooKeeper (a session ended, or the connection is down)?
    pub stale: bool,
    /// Has the first full read been applied?
    pub initialized: bool,
    /// How many nodes the cache holds.
    pub nodes: usize,
    /// How many more plain nodes there are past [`TREE_LIMIT`].
    pub tree_more: usize,
    /// How many more counters and config nodes there are past [`LEAF_LIMIT`].
    pub leaves_more: usize,
}

/// The most plain nodes a view lists.
pub(crate) const TREE_LIMIT: usize = 2000;

/// The most counters and config nodes a view lists (a million of them make no page).
pub(crate) const LEAF_LIMIT: usize = 2000;

/// One recipe at one path.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Recipe {
    /// Its path.
    pub path: String,
    /// Whose node names it uses: "curator", "kazoo", or "mixed" for a conflict.
    pub layout: &'static str,
    /// What it is, with what it holds.
    #[serde(flatten)]
    pub kind: Kind,
}

/// The recipes `zkr ui` recognises.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Kind {
    /// A mutex (`InterProcessMutex`, a `LeaderSelector`'s lock, kazoo's `Lock`) or a read-write
    /// lock: who holds it, then who waits, in order.
    Lock { read_write: bool, holders: Vec<Contender>, waiters: Vec<Contender> },
    /// A semaphore: the leases held (of `max` when ZooKeeper stores it), then who waits.
    Semaphore { max: Option<u64>, leases: Vec<Contender>, waiters: Vec<Contender> },
    /// A leader election (`LeaderLatch`): the leader first among the participants.
    Leader { leader: Option<Contender>, participants: Vec<Contender> },
    /// A queue: depth, the oldest item's creation time, and items consumers have locked.
    Queue { depth: usize, oldest_ms: Option<i64>, locked: Vec<LockedItem> },
    /// A double barrier: its members, and whether the member that met the quota said so.
    Barrier { members: Vec<Contender>, ready: bool },
    /// A group (`GroupMember`, kazoo's `Party`): its members.
    Group { members: Vec<Contender> },
    /// A service (Curator's service discovery): its instances.
    Service { name: String, instances: Vec<Instance> },
    /// A counter (`SharedCount` as 4 bytes, `DistributedAtomicLong` as 8).
    Counter { value: i64, bits: u8 },
    /// A config node: version and last change; the value only with `--show-values`.
    Config { version: i32, mtime_ms: i64, size: usize, value: Option<String> },
    /// Contenders of two or more recipe layouts in one directory (a kazoo `Lock` beside
    /// Curator's mutex, readers of a read-write lock beside a plain mutex): each layout orders
    /// only its own, so each may have a holder. The layouts found, and every contender.
    Conflict { layouts: Vec<&'static str>, contenders: Vec<Contender> },
}

/// An ephemeral node taking part in a recipe: a lock's holder or waiter, a participant, a member.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Contender {
    /// The node's name.
    pub node: String,
    /// The session that owns it, as `0x...`.
    pub session: String,
    /// The node's creation zxid: the fencing token of a lock's holder.
    pub fencing_token: i64,
    /// When the node was made (when a waiter started waiting).
    pub created_ms: i64,
    /// When this page saw it become the holder or leader (`None`: before `zkr ui` started).
    pub since_ms: Option<i64>,
    /// The node's data when it is short text: a participant id, a host.
    pub id: Option<String>,
    /// For a read-write lock: "read" or "write".
    pub mode: Option<&'static str>,
}

/// A queue item a consumer has locked (Curator's `lockPath`, kazoo's `LockingQueue`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct LockedItem {
    /// The item's name.
    pub item: String,
    /// The consumer's session.
    pub session: String,
    /// When it was locked.
    pub since_ms: i64,
}

/// A registered service instance.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Instance {
    pub id: String,
    pub address: String,
    pub port: Option<u16>,
    pub ssl_port: Option<u16>,
    pub enabled: bool,
    pub registered_ms: i64,
    /// The registering session (`None` for a permanent instance).
    pub session: Option<String>,
}

/// Everything one session holds or waits for.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct SessionView {
    pub session: String,
    pub roles: Vec<Role>,
}

/// One thing a session does in one recipe.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Role {
    /// The recipe's path.
    pub path: String,
    /// The recipe's kind, as in [`Kind`]'s tag.
    pub kind: &'static str,
    /// "holder", "waiting", "lease", "leader", "participant", "member", "instance", "item lock".
    pub role: &'static str,
    /// How many of the recipe's nodes the session has in this role (two users of one client share
    /// a session, so one session can wait twice for one lock).
    pub count: usize,
}

/// A node no recipe explains.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct TreeNode {
    pub path: String,
    pub children: usize,
    pub size: usize,
    /// The owning session of an ephemeral node.
    pub session: Option<String>,
}

impl Kind {
    /// The kind's tag, as serialized.
    pub(crate) fn tag(&self) -> &'static str {
        match self {
            Kind::Lock { .. } => "lock",
            Kind::Semaphore { .. } => "semaphore",
            Kind::Leader { .. } => "leader",
            Kind::Queue { .. } => "queue",
            Kind::Barrier { .. } => "barrier",
            Kind::Group { .. } => "group",
            Kind::Service { .. } => "service",
            Kind::Counter { .. } => "counter",
            Kind::Config { .. } => "config",
            Kind::Conflict { .. } => "conflict",
        }
    }
}

/// A session id as the page and `zkr lock-info` print it.
pub(crate) fn session_hex(session: i64) -> String {
    format!("{session:#x}")
}

/// The data as text when it is short printable UTF-8 (an id or a host, not a payload).
pub(crate) fn printable(data: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(data).ok()?;
    (!text.is_empty() && text.len() <= 128 && !text.chars().any(char::is_control)).then(|| text.to_owned())
}

/// A node as a recipe's participant.
pub(crate) fn contender(name: &str, node: &CachedNode) -> Contender {
    Contender {
        node: name.to_owned(),
        session: session_hex(node.stat().ephemeral_owner),
        fencing_token: node.stat().czxid,
        created_ms: node.stat().ctime,
        since_ms: None,
        id: printable(node.data()),
        mode: None,
    }
}
