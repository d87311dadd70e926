//! ZooKeeper's server as a client sees it: the tree, sessions, requests and their replies,
//! one-shot and persistent watches ([`crate::watches`]). The network and the faults are in
//! [`crate::world`].
//!
//! What is kept: node kinds (persistent, ephemeral, sequential, container), versions, the
//! creation zxid, the parent's `cversion` as the sequence suffix (it counts child creations
//! and deletions, as ZooKeeper's does), `multi` (all or nothing, the index of the failed
//! operation), data and child watches that fire once, persistent and persistent recursive
//! watches (`addWatch`: they stay after firing, and go with the connection, see
//! [`Server::disconnect`]), ephemerals deleted when their session ends. Reads may be served by
//! a lagging server: the last few states are kept ([`Server::keep`]), and [`Server::read_at`]
//! answers from one of them. What is not: ACLs, quotas, TTL nodes, data beyond one number.

use std::collections::BTreeMap;
use std::fmt;

pub(crate) use crate::watches::Watch;

/// A session id (1, 2, ...: the server hands them out in order).
pub type Sid = u8;
/// A transaction id.
pub type Zxid = u16;

/// A node's name within its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Name {
    /// A fixed name (`ready`, `high-water`, `lock`).
    Fixed(&'static str),
    /// A sequential node's name: the prefix and the sequence the server appended.
    Seq(&'static str, u8),
    /// A name made of a prefix and a small number chosen by a recipe (`item-0`, `m1`).
    Indexed(&'static str, u8),
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Name::Fixed(name) => f.write_str(name),
            Name::Seq(prefix, n) => write!(f, "{prefix}{n:04}"),
            Name::Indexed(prefix, n) => write!(f, "{prefix}{n}"),
        }
    }
}

/// The root, for listing the top-level nodes (a recipe that needs it lists it in its setup).
pub const ROOT: Path = Path { parent: None, name: Name::Fixed("") };

/// A path of depth one or two: enough for every recipe's layout.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Path {
    /// The parent's name (`None`: a child of the root).
    pub parent: Option<Name>,
    /// The node's own name.
    pub name: Name,
}

impl Path {
    /// The root's child `name` (`/name`).
    pub const fn top(name: &'static str) -> Path {
        Path { parent: None, name: Name::Fixed(name) }
    }

    /// The child `name` of this top-level node.
    pub const fn child(self, name: Name) -> Path {
        Path { parent: Some(self.name), name }
    }

    /// The parent's path, `None` for a child of the root.
    pub fn parent_path(&self) -> Option<Path> {
        self.parent.map(|name| Path { parent: None, name })
    }

    /// Is this node a child of `dir`?
    pub fn is_child_of(&self, dir: Path) -> bool {
        if dir == ROOT {
            return self.parent.is_none() && *self != ROOT;
        }
        dir.parent.is_none() && self.parent == Some(dir.name)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.parent {
            Some(parent) => write!(f, "/{parent}/{}", self.name),
            None => write!(f, "/{}", self.name),
        }
    }
}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// How a node is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Stays until deleted.
    Persistent,
    /// Deleted with its session.
    Ephemeral,
    /// Persistent, the parent's counter appended to the name.
    PersistentSequential,
    /// Ephemeral, the parent's counter appended to the name.
    EphemeralSequential,
    /// Persistent; the server deletes it once it had children and has none.
    Container,
}

impl Mode {
    fn is_ephemeral(self) -> bool {
        matches!(self, Mode::Ephemeral | Mode::EphemeralSequential)
    }

    fn is_sequential(self) -> bool {
        matches!(self, Mode::PersistentSequential | Mode::EphemeralSequential)
    }
}

/// A node as the server keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    /// The data: one number (recipes encode what they store in it).
    pub data: u32,
    /// The data version.
    pub version: u8,
    /// The zxid of the node's creation.
    pub czxid: Zxid,
    /// The session of an ephemeral node.
    pub owner: Option<Sid>,
    /// Child creations and deletions so far: the next sequential child's suffix.
    pub cversion: u8,
    /// A container node.
    pub container: bool,
}

/// What a reply tells of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stat {
    /// The zxid of its creation.
    pub czxid: Zxid,
    /// Its data version.
    pub version: u8,
    /// The session of an ephemeral node.
    pub owner: Option<Sid>,
}

impl Node {
    /// The node's stat.
    pub fn stat(&self) -> Stat {
        Stat { czxid: self.czxid, version: self.version, owner: self.owner }
    }
}

/// A write, alone or in a `multi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Creates `path` (for sequential modes, `path.name`'s prefix gets the parent's counter).
    Create {
        /// The path (for sequential modes, the prefix).
        path: Path,
        /// The node kind.
        mode: Mode,
        /// The data.
        data: u32,
    },
    /// Deletes `path` (at `version` when given).
    Delete {
        /// The path.
        path: Path,
        /// The expected version.
        version: Option<u8>,
    },
    /// Sets `path`'s data (at `version` when given).
    SetData {
        /// The path.
        path: Path,
        /// The new data.
        data: u32,
        /// The expected version.
        version: Option<u8>,
    },
    /// Checks that `path` exists (at `version` when given); changes nothing.
    Check {
        /// The path.
        path: Path,
        /// The expected version.
        version: Option<u8>,
    },
}

/// A request a session sends.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    /// One write.
    Write(Op),
    /// Writes applied all or none.
    Multi(Vec<Op>),
    /// The data and stat of a node; with `watch`, a data watch when it exists.
    GetData {
        /// The path.
        path: Path,
        /// Leave a data watch.
        watch: bool,
    },
    /// The stat of a node or none; with `watch`, a data watch either way.
    Exists {
        /// The path.
        path: Path,
        /// Leave a data watch.
        watch: bool,
    },
    /// `sync`: the session's server catches up with the leader before the next read.
    Sync(Path),
    /// The children with their stats and data, with a child watch: what a children cache
    /// (`CacheMode::Children`) holds after its reads, in one step.
    ChildrenData {
        /// The path.
        path: Path,
        /// Leave a child watch.
        watch: bool,
    },
    /// `addWatch`: a watch that stays after it fires, on `path` alone (data and child events,
    /// as ZooKeeper's `PERSISTENT`) or on `path` and every node below it (`PERSISTENT_RECURSIVE`:
    /// created, deleted and data events, no child events). A lagging server may set it at an
    /// older state ([`crate::lag::Catching`]).
    AddWatch {
        /// The path.
        path: Path,
        /// Below `path` too.
        recursive: bool,
    },
    /// The children, each with its stat (the model reads them in one step, as a cache's
    /// listing and reads would see them with no change between); with `watch`, a child watch.
    Children {
        /// The path.
        path: Path,
        /// Leave a child watch.
        watch: bool,
    },
}

/// An error a request can end with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZkError {
    /// No such node.
    NoNode,
    /// The node exists.
    NodeExists,
    /// The version did not match.
    BadVersion,
    /// The node has children.
    NotEmpty,
    /// The connection dropped before the reply came: applied or not.
    ConnectionLoss,
    /// The session ended (or the request was pinned to a session that is not the client's).
    SessionExpired,
}

/// The result of one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpResult {
    /// A node was created at this path.
    Created(Path, Stat),
    /// Deleted, set (with the new stat) or checked.
    Done(Option<Stat>),
}

/// A reply to a request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    /// A write's result.
    Write(OpResult),
    /// Every write of a multi applied.
    Multi(Vec<OpResult>),
    /// A multi applied nothing: the operation at `index` failed.
    MultiFailed(u8, ZkError),
    /// A node's data and stat.
    Data(u32, Stat),
    /// A node's stat, or none.
    Exists(Option<Stat>),
    /// A node's children with their stats.
    Children(Vec<(Name, Stat)>),
    /// A node's children with their stats and data.
    ChildrenData(Vec<(Name, Stat, u32)>),
    /// A `sync` done.
    Synced,
    /// An `addWatch` done.
    Watching,
    /// The request failed.
    Err(ZkError),
}

/// What a watch reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// The watched node was created.
    Created,
    /// The watched node was deleted.
    Deleted,
    /// The watched node's data changed.
    DataChanged,
    /// The watched node's children changed.
    ChildrenChanged,
}

/// A watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// The watched path (a persistent watch's event: the node that changed).
    pub path: Path,
    /// What happened.
    pub kind: EventKind,
    /// Fired by a persistent watch: lost with the connection it was on its way over (nothing
    /// sends it again, see [`Server::disconnect`]).
    pub lasting: bool,
}

/// An event for one session's user.
pub type Fired = (Sid, u8, Event);

/// The server: the tree, the live sessions, the watches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Server {
    /// The nodes.
    pub nodes: BTreeMap<Path, Node>,
    /// The last zxid.
    pub zxid: Zxid,
    /// Is session `i + 1` alive?
    pub sessions: Vec<bool>,
    pub(crate) watches: Vec<Watch>,
    /// How many states before the current one a lagging server may still be at.
    pub keep: u8,
    /// Those states, oldest first: each the tree as of a zxid.
    pub history: Vec<(Zxid, Tree)>,
}

/// The nodes, by path.
pub type Tree = BTreeMap<Path, Node>;

/// The children of `dir` in `nodes`, in name order.
fn children_in(nodes: &Tree, dir: Path) -> impl Iterator<Item = (&Path, &Node)> {
    nodes.iter().filter(move |(p, _)| p.is_child_of(dir))
}

/// A read's reply from `nodes`, and the watch it leaves (path, child) if it asked for one.
pub(crate) fn read(nodes: &Tree, request: &Request) -> (Reply, Option<(Path, bool)>) {
    let watch = |on: bool, path: Path, child: bool| on.then_some((path, child));
    match request {
        Request::GetData { path, watch: w } => match nodes.get(path) {
            None => (Reply::Err(ZkError::NoNode), None),
            Some(node) => (Reply::Data(node.data, node.stat()), watch(*w, *path, false)),
        },
        Request::Exists { path, watch: w } => {
            (Reply::Exists(nodes.get(path).map(Node::stat)), watch(*w, *path, false))
        }
        Request::Children { path, watch: w } => match nodes.contains_key(path) {
            false => (Reply::Err(ZkError::NoNode), None),
            true => {
                let listing = children_in(nodes, *path).map(|(p, n)| (p.name, n.stat())).collect();
                (Reply::Children(listing), watch(*w, *path, true))
            }
        },
        Request::ChildrenData { path, watch: w } => match nodes.contains_key(path) {
            false => (Reply::Err(ZkError::NoNode), None),
            true => {
                let listing = children_in(nodes, *path).map(|(p, n)| (p.name, n.stat(), n.data)).collect();
                (Reply::ChildrenData(listing), watch(*w, *path, true))
            }
        },
        _ => (Reply::Err(ZkError::NoNode), None),
    }
}

/// Is this request a read a lagging server may answer?
pub fn is_read(request: &Request) -> bool {
    matches!(
        request,
        Request::GetData { .. }
            | Request::Exists { .. }
            | Request::Children { .. }
            | Request::ChildrenData { .. }
            | Request::AddWatch { .. }
    )
}

impl Server {
    /// A server holding `nodes` (created at zxid 0), with no session.
    pub fn new(nodes: &[(Path, Mode, u32)]) -> Self {
        let mut server = Server {
            nodes: BTreeMap::new(),
            zxid: 0,
            sessions: Vec::new(),
            watches: Vec::new(),
            keep: 0,
            history: Vec::new(),
        };
        for (path, mode, data) in nodes {
            let node = Node {
                data: *data,
                version: 0,
                czxid: 0,
                owner: None,
                cversion: 0,
                container: *mode == Mode::Container,
            };
            server.nodes.insert(*path, node);
        }
        server
    }

    /// Opens a session: its id.
    pub fn open_session(&mut self) -> Sid {
        self.sessions.push(true);
        self.sessions.len() as Sid
    }

    /// Is session `sid` alive?
    pub fn alive(&self, sid: Sid) -> bool {
        self.sessions.get(usize::from(sid).wrapping_sub(1)).copied().unwrap_or(false)
    }

    /// Ends session `sid` (expired or closed): its ephemeral nodes go, each its own
    /// transaction, and so do its watches.
    pub fn end_session(&mut self, sid: Sid) -> Vec<Fired> {
        if let Some(alive) = self.sessions.get_mut(usize::from(sid).wrapping_sub(1)) {
            *alive = false;
        }
        self.watches.retain(|w| w.sid != sid);
        let owned: Vec<Path> =
            self.nodes.iter().filter(|(_, n)| n.owner == Some(sid)).map(|(p, _)| *p).collect();
        if !owned.is_empty() {
            self.remember();
        }
        let mut fired = Vec::new();
        for path in owned {
            self.zxid += 1;
            self.remove(path, &mut fired);
        }
        fired
    }

    /// Containers the server may delete now: they had children and have none.
    pub fn reapable(&self) -> Vec<Path> {
        self.nodes
            .iter()
            .filter(|(p, n)| n.container && n.cversion > 0 && !self.has_children(**p))
            .map(|(p, _)| *p)
            .collect()
    }

    /// The container reaper deletes `path`.
    pub fn reap(&mut self, path: Path) -> Vec<Fired> {
        let mut fired = Vec::new();
        self.remember();
        self.zxid += 1;
        self.remove(path, &mut fired);
        fired
    }

    /// Applies `request` from user `user` of session `sid`: the reply and the events it fired.
    pub fn apply(&mut self, sid: Sid, user: u8, request: &Request) -> (Reply, Vec<Fired>) {
        let mut fired = Vec::new();
        let reply = match request {
            Request::Write(op) => match self.check(std::slice::from_ref(op), sid) {
                Err((_, e)) => Reply::Err(e),
                Ok(()) => {
                    self.remember();
                    self.zxid += 1;
                    Reply::Write(self.write(*op, sid, &mut fired))
                }
            },
            Request::Multi(ops) => match self.check(ops, sid) {
                Err((i, e)) => Reply::MultiFailed(i, e),
                Ok(()) => {
                    self.remember();
                    self.zxid += 1;
                    Reply::Multi(ops.iter().map(|op| self.write(*op, sid, &mut fired)).collect())
                }
            },
            Request::Sync(_) => Reply::Synced,
            Request::AddWatch { path, recursive } => {
                self.add_persistent(sid, user, *path, *recursive);
                Reply::Watching
            }
            _ => {
                let (reply, watch) = read(&self.nodes, request);
                if let Some((path, child)) = watch {
                    self.watch(true, path, child, sid, user);
                }
                reply
            }
        };
        (reply, fired)
    }

    /// The children of `dir`, in name order.
    pub fn children(&self, dir: Path) -> impl Iterator<Item = (&Path, &Node)> {
        children_in(&self.nodes, dir)
    }

    fn has_children(&self, dir: Path) -> bool {
        self.children(dir).next().is_some()
    }

    /// Can every op apply, in order? The index and error of the first that cannot.
    fn check(&self, ops: &[Op], sid: Sid) -> Result<(), (u8, ZkError)> {
        // The tree alone: watches and history play no part in whether an op applies.
        let mut scratch = Server {
            nodes: self.nodes.clone(),
            zxid: self.zxid,
            sessions: Vec::new(),
            watches: Vec::new(),
            keep: 0,
            history: Vec::new(),
        };
        for (i, op) in ops.iter().enumerate() {
            let index = i as u8;
            scratch.precondition(op).map_err(|e| (index, e))?;
            let mut ignored = Vec::new();
            scratch.write(*op, sid, &mut ignored);
        }
        Ok(())
    }

    fn precondition(&self, op: &Op) -> Result<(), ZkError> {
        let versioned = |path: &Path, version: &Option<u8>| match self.nodes.get(path) {
            None => Err(ZkError::NoNode),
            Some(node) if version.is_some_and(|v| v != node.version) => Err(ZkError::BadVersion),
            Some(_) => Ok(()),
        };
        match op {
            Op::Create { path, mode, .. } => {
                let parent = path.parent_path().map(|p| self.nodes.get(&p));
                match parent {
                    Some(None) => Err(ZkError::NoNode),
                    _ if !mode.is_sequential() && self.nodes.contains_key(path) => Err(ZkError::NodeExists),
                    _ => Ok(()),
                }
            }
            Op::Delete { path, version } => {
                versioned(path, version)?;
                if self.has_children(*path) {
                    return Err(ZkError::NotEmpty);
                }
                Ok(())
            }
            Op::SetData { path, version, .. } | Op::Check { path, version } => versioned(path, version),
        }
    }

    /// Applies one write whose precondition holds, at the current zxid.
    fn write(&mut self, op: Op, sid: Sid, fired: &mut Vec<Fired>) -> OpResult {
        match op {
            Op::Create { path, mode, data } => {
                let path = self.sequenced(path, mode);
                let owner = mode.is_ephemeral().then_some(sid);
                let node = Node {
                    data,
                    version: 0,
                    czxid: self.zxid,
                    owner,
                    cversion: 0,
                    container: mode == Mode::Container,
                };
                self.nodes.insert(path, node);
                self.fire(path, false, EventKind::Created, fired);
                if let Some(parent) = path.parent_path() {
                    self.bump_cversion(parent);
                    self.fire(parent, true, EventKind::ChildrenChanged, fired);
                }
                OpResult::Created(path, node.stat())
            }
            Op::Delete { path, .. } => {
                self.remove(path, fired);
                OpResult::Done(None)
            }
            Op::SetData { path, data, .. } => {
                let Some(node) = self.nodes.get_mut(&path) else { return OpResult::Done(None) };
                node.data = data;
                node.version = node.version.wrapping_add(1);
                let stat = node.stat();
                self.fire(path, false, EventKind::DataChanged, fired);
                OpResult::Done(Some(stat))
            }
            Op::Check { .. } => OpResult::Done(None),
        }
    }

    /// The path a create makes: a sequential node's name gets the parent's counter.
    fn sequenced(&self, path: Path, mode: Mode) -> Path {
        if !mode.is_sequential() {
            return path;
        }
        let counter = path.parent_path().and_then(|p| self.nodes.get(&p)).map_or(0, |n| n.cversion);
        let prefix = match path.name {
            Name::Fixed(prefix) | Name::Seq(prefix, _) | Name::Indexed(prefix, _) => prefix,
        };
        Path { parent: path.parent, name: Name::Seq(prefix, counter) }
    }

    fn bump_cversion(&mut self, parent: Path) {
        if let Some(node) = self.nodes.get_mut(&parent) {
            node.cversion = node.cversion.wrapping_add(1);
        }
    }

    fn remove(&mut self, path: Path, fired: &mut Vec<Fired>) {
        if self.nodes.remove(&path).is_none() {
            return;
        }
        self.fire(path, false, EventKind::Deleted, fired);
        self.fire(path, true, EventKind::Deleted, fired);
        if let Some(parent) = path.parent_path() {
            self.bump_cversion(parent);
            self.fire(parent, true, EventKind::ChildrenChanged, fired);
        }
    }
}
