//! The cache on the watch engine (`watch/mod.rs`, `Watch`, fed to `cache/tracker.rs`,
//! `Tracker`): a persistent recursive watch on the root, then a full read; each event's node
//! read again; after a reconnect the watch set again and everything read again; on a new
//! session a `sync` first. A writer on its own client (or on a cache's) changes the children
//! meanwhile.
//!
//! The engine's other consumers (the lock's children view, the config watchers, persistent
//! nodes, shared values) take the same steps with another read; the queue's and the double
//! barrier's models wait on a listing instead (see `docs/reliability.md`, "What the model
//! leaves out").

use stateright::Property;

use crate::bugs::{Bug, Bugs};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{Event, Mode, Name, Op, Path, Reply, Request, Server, Stat, ZkError, Zxid};

/// The cache's root.
pub const ROOT: Path = Path::top("cache");

/// How many children the writer touches.
pub const NODES: u8 = 2;

const fn node(k: u8) -> Path {
    ROOT.child(Name::Indexed("n", k))
}

/// The writer's changes, in order: every kind of event, to both children.
pub const SCRIPT: [Op; 4] = [
    Op::Create { path: node(0), mode: Mode::Persistent, data: 1 },
    Op::SetData { path: node(0), data: 2, version: None },
    Op::Create { path: node(1), mode: Mode::Persistent, data: 3 },
    Op::Delete { path: node(0), version: None },
];

/// The cache checked with a writer and these caches.
#[derive(Clone, Debug)]
pub struct Cache {
    /// The writer's client.
    pub writer: u8,
    /// Each cache's client.
    pub caches: Vec<u8>,
    /// The faults.
    pub faults: Faults,
    /// A defect to re-introduce.
    pub bug: Bugs,
}

/// What a cache holds of a node (`CachedNode`: its data and stat).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kept {
    /// The zxid of the node's creation.
    pub czxid: Zxid,
    /// Its data version.
    pub version: u8,
    /// Its data.
    pub data: u32,
}

impl Kept {
    fn of(data: u32, stat: Stat) -> Kept {
        Kept { czxid: stat.czxid, version: stat.version, data }
    }
}

/// Where a cache is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// A session after another: `sync` before the read (`Watch::subscribe`, `sync_before_read`,
    /// set by `Watch::run` when the session switched).
    Sync,
    /// Set the persistent recursive watch (`Watch::subscribe`: `client.watch(root,
    /// PersistentRecursive)`, sent before the read).
    Watch,
    /// Set the watch again without reading again (only with `CacheNoReadAfterReconnect`).
    Rewatch,
    /// Read everything (`Consumer::read`, `Tracker::read_all`); the reply resets the copy
    /// (`Tracker::reset`) and the events queued since the watch are applied on top
    /// (`Watch::establish`).
    Read,
    /// Read an event's node again (`Tracker::apply`: `get_data` of each path of a burst).
    Get(u8),
    /// Following the watch (`Watch::persistent`).
    Idle,
}

/// A cache's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Copy {
    /// Where it is.
    pub phase: Phase,
    /// The copy of each child.
    pub nodes: [Option<Kept>; NODES as usize],
    /// Children with an event not applied yet (a bit each: a burst's paths, once each).
    pub pending: u8,
    /// The newest creation zxid of each child the copy has shown gone (for the properties).
    pub gone: [Zxid; NODES as usize],
    /// A session after another and no subscription on it done yet: a `sync` goes first
    /// (`Watch::sync_before_read`, cleared by `Watch::follow` once subscribed).
    pub unsynced: bool,
}

/// A user: the writer or a cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum User {
    /// The writer, at this step of [`SCRIPT`].
    Writer(u8),
    /// A cache.
    Cache(Copy),
}

/// What the properties look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// A cache applied a change it learnt of by its watch.
    pub followed: bool,
    /// A cache showed a node older than it had shown.
    pub went_back: bool,
}

fn index(path: Path) -> Option<u8> {
    match path.name {
        Name::Indexed("n", k) if path.is_child_of(ROOT) => Some(k),
        _ => None,
    }
}

impl Cache {
    fn has(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }

    /// Where a subscription tried again starts: with the sync while no subscription on this
    /// session succeeded (`Watch::run` keeps `sync_before_read`).
    fn resubscribe(&self, copy: &Copy) -> Phase {
        if copy.unsynced && !self.has(Bug::CacheSyncOnlyOnce) {
            Phase::Sync
        } else {
            Phase::Watch
        }
    }

    fn step_cache(copy: &mut Copy) -> Step {
        let send = |request| Step::Send(request, None);
        match copy.phase {
            Phase::Sync => send(Request::Sync(ROOT)),
            Phase::Watch | Phase::Rewatch => send(Request::AddWatch { path: ROOT, recursive: true }),
            Phase::Read => send(Request::ChildrenData { path: ROOT, watch: false }),
            Phase::Idle if copy.pending != 0 => {
                let k = copy.pending.trailing_zeros() as u8;
                copy.phase = Phase::Get(k);
                send(Request::GetData { path: node(k), watch: false })
            }
            Phase::Idle | Phase::Get(_) => Step::Blocked,
        }
    }

    fn reply_cache(&self, copy: &mut Copy, reply: Reply, ghost: &mut Ghost) {
        match (copy.phase, reply) {
            (Phase::Sync, Reply::Synced) => copy.phase = Phase::Watch,
            (Phase::Watch, Reply::Watching) => copy.phase = Phase::Read,
            (Phase::Rewatch, Reply::Watching) => copy.phase = Phase::Idle,
            (Phase::Read, Reply::ChildrenData(children)) => {
                let mut read = [None; NODES as usize];
                for (name, stat, data) in children {
                    if let Some(k) = index(ROOT.child(name)) {
                        read[usize::from(k)] = Some(Kept::of(data, stat));
                    }
                }
                for k in 0..NODES {
                    show(copy, k, read[usize::from(k)], ghost);
                }
                copy.phase = Phase::Idle;
                copy.unsynced = false;
            }
            (Phase::Get(k), Reply::Data(data, stat)) => {
                let new = Kept::of(data, stat);
                // tracker.rs, `put` and `is_newer`: a read no newer than the copy changes nothing.
                let old = copy.nodes[usize::from(k)];
                if old.is_none_or(|old| old.czxid != new.czxid || new.version > old.version) {
                    ghost.followed |= old != Some(new);
                    show(copy, k, Some(new), ghost);
                }
                copy.pending &= !(1 << k);
                copy.phase = Phase::Idle;
            }
            (Phase::Get(k), Reply::Err(ZkError::NoNode)) => {
                ghost.followed |= copy.nodes[usize::from(k)].is_some();
                show(copy, k, None, ghost);
                copy.pending &= !(1 << k);
                copy.phase = Phase::Idle;
            }
            // A failure on a live session (`Watch::run`: `failed`, then `follow` subscribes again
            // on the same session): the watch set again, everything read again.
            (_, Reply::Err(ZkError::ConnectionLoss)) => {
                copy.phase = self.resubscribe(copy);
                copy.pending = 0;
            }
            _ => {}
        }
    }
}

impl Recipe for Cache {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        let clients = self.caches.iter().copied().chain([self.writer]).max().map_or(0, |c| c + 1);
        let cache = Copy {
            phase: Phase::Watch,
            nodes: [None; NODES as usize],
            pending: 0,
            gone: [0; NODES as usize],
            unsynced: false,
        };
        let mut users = vec![(self.writer, User::Writer(0))];
        users.extend(self.caches.iter().map(|c| (*c, User::Cache(cache))));
        Setup { nodes: vec![(ROOT, Mode::Persistent, 0)], clients, users }
    }

    fn faults(&self) -> Faults {
        self.faults
    }

    fn step(&self, _me: Me, user: &mut User, _ghost: &mut Ghost) -> Step {
        match user {
            User::Writer(next) => match SCRIPT.get(usize::from(*next)) {
                Some(op) => Step::Send(Request::Write(*op), None),
                None => Step::Blocked,
            },
            User::Cache(copy) => Self::step_cache(copy),
        }
    }

    fn on_reply(&self, _me: Me, user: &mut User, reply: Reply, ghost: &mut Ghost) {
        match user {
            // Whatever the answer (a lost reply leaves it unknown): the next change.
            User::Writer(next) => *next += 1,
            User::Cache(copy) => self.reply_cache(copy, reply, ghost),
        }
    }

    fn on_event(&self, _me: Me, user: &mut User, event: Option<Event>, _ghost: &mut Ghost) {
        let User::Cache(copy) = user else { return };
        match event {
            Some(event) => {
                if let Some(k) = index(event.path) {
                    copy.pending |= 1 << k;
                }
            }
            // The session ended (`Watch::run`: `session_ended`, then the next session, followed
            // with a sync first). The copy stays until the next read replaces it.
            None => {
                copy.unsynced = !self.has(Bug::CacheNoSyncOnNewSession);
                copy.phase = if copy.unsynced { Phase::Sync } else { Phase::Watch };
                copy.pending = 0;
            }
        }
    }

    /// `Watch::persistent`: a disconnect, then on reconnecting the watch set again and
    /// everything read again (a request in flight fails too, and `on_reply` does the same).
    fn on_disconnect(&self, _me: Me, user: &mut User, _ghost: &mut Ghost) {
        let User::Cache(copy) = user else { return };
        if self.has(Bug::CacheNoReadAfterReconnect) {
            copy.phase = Phase::Rewatch;
            return;
        }
        // The read replaces the copy: the events before it need no read of their own.
        copy.pending = 0;
        copy.phase =
            if self.has(Bug::CacheNoRewatchAfterReconnect) { Phase::Read } else { self.resubscribe(copy) };
    }

    fn on_apply(&self, _user: u8, _request: &Request, _reply: &Reply, _before: &Server, _ghost: &mut Ghost) {}

    fn done(&self, user: &User) -> bool {
        match user {
            User::Writer(next) => usize::from(*next) == SCRIPT.len(),
            User::Cache(copy) => copy.phase == Phase::Idle && copy.pending == 0,
        }
    }

    fn properties(&self) -> Vec<Property<Checked<Self>>> {
        vec![
            Property::always(
                "every cache holds what the server holds once nothing but a fault can happen",
                |m: &Checked<Self>, s: &State<Self>| {
                    !m.quiescent(s) || s.users.iter().all(|u| holds(&u.user, &s.server))
                },
            ),
            Property::always("no cache shows a node older than it showed", |_, s: &State<Self>| {
                !s.ghost.went_back
            }),
            Property::sometimes("a cache applies a change its watch told it of", |_, s: &State<Self>| {
                s.ghost.followed
            }),
        ]
    }
}

/// The copy shows `new` for child `k`: older than what it showed is going back (an older
/// creation, an older version of the same one, or a creation it had shown gone).
fn show(copy: &mut Copy, k: u8, new: Option<Kept>, ghost: &mut Ghost) {
    let i = usize::from(k);
    let back = match (copy.nodes[i], new) {
        (Some(old), Some(new)) => (new.czxid, new.version) < (old.czxid, old.version),
        (None, Some(new)) => new.czxid <= copy.gone[i],
        (Some(old), None) => {
            copy.gone[i] = copy.gone[i].max(old.czxid);
            false
        }
        (None, None) => false,
    };
    ghost.went_back |= back;
    copy.nodes[i] = new;
}

/// Does this user, if a cache, hold the server's children of the root?
fn holds(user: &User, server: &Server) -> bool {
    let User::Cache(copy) = user else { return true };
    (0..NODES).all(|k| {
        let now =
            server.nodes.get(&node(k)).map(|n| Kept { czxid: n.czxid, version: n.version, data: n.data });
        copy.nodes[usize::from(k)] == now
    })
}
