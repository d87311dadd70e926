//! The lock internals (`locks/internals/`, `LockInternals`) as steps every lock-shaped recipe
//! takes: a protected `EPHEMERAL_SEQUENTIAL` contender, found again by its name after a lost
//! reply; a listing on the node's session; the driver's verdict; a data watch on the contender
//! it names; release pinned to the node's session. The mutex, the read-write lock, the leader
//! latch, the semaphore's acquirers' mutex and kazoo's lease lock are all made of these; the
//! drivers differ only in names and in `Kind::verdict`.

use crate::bugs::{Bug, Bugs};
use crate::world::{Me, Step};
use crate::zk::{Event, EventKind, Mode, Name, Op, OpResult, Path, Reply, Request, Sid, Stat, ZkError};

/// Which driver a contender follows: its node names and who holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `StandardLockInternalsDriver`: `_c_<uuid>-lock-<seq>`; first holds; the head's deletion
    /// grants without a listing (`turn.rs`, `OnDelete::Ours`).
    Standard,
    /// `KazooLockDriver`: `<uuid hex>__lock__<seq>`; the standard rule.
    Kazoo,
    /// `WriteLockDriver` (`read_write.rs`): `_c_<uuid>-__WRIT__<seq>`; first of read and write
    /// nodes holds; `head_release_grants` is false, so a deletion means a listing.
    Writer,
    /// `ReadLockDriver` (`read_write.rs`, `gets_the_lock`): `_c_<uuid>-__READ__<seq>`; holds when
    /// no writer is ahead, else watches the first writer ahead (and lists again when it goes).
    Reader,
}

/// Contender name prefixes per user (the uuid stands as the user's number).
pub(crate) const STANDARD: [&str; 4] = ["_c_u0-lock-", "_c_u1-lock-", "_c_u2-lock-", "_c_u3-lock-"];
pub(crate) const KAZOO: [&str; 4] = ["u0__lock__", "u1__lock__", "u2__lock__", "u3__lock__"];
pub(crate) const WRITERS: [&str; 4] =
    ["_c_u0-__WRIT__", "_c_u1-__WRIT__", "_c_u2-__WRIT__", "_c_u3-__WRIT__"];
pub(crate) const READERS: [&str; 4] =
    ["_c_u0-__READ__", "_c_u1-__READ__", "_c_u2-__READ__", "_c_u3-__READ__"];

/// Is this contender a write node (`Layout::is_writer`)?
pub fn is_writer(name: Name) -> bool {
    matches!(name, Name::Seq(prefix, _) if WRITERS.contains(&prefix))
}

/// What the driver tells a contender from a listing.
enum Verdict {
    Holds,
    /// Watch this contender; its deletion grants without a listing when `head`.
    Watch(Name, bool),
}

impl Kind {
    /// The contender name prefix of `user`.
    pub fn prefix(self, user: u8) -> &'static str {
        let names = match self {
            Kind::Standard => &STANDARD,
            Kind::Kazoo => &KAZOO,
            Kind::Writer => &WRITERS,
            Kind::Reader => &READERS,
        };
        names[usize::from(user)]
    }

    /// `gets_the_lock` on the sorted contenders, ours at `i`.
    fn verdict(self, sorted: &[Name], i: usize, bug: Bugs) -> Verdict {
        match self {
            Kind::Standard | Kind::Kazoo if i == 0 => Verdict::Holds,
            Kind::Standard | Kind::Kazoo => Verdict::Watch(sorted[i - 1], i == 1),
            Kind::Writer if i == 0 => Verdict::Holds,
            Kind::Writer => Verdict::Watch(sorted[i - 1], false),
            // The bug: only the node just ahead is looked at.
            Kind::Reader if bug == Some(Bug::RwReaderLooksOnlyJustAhead) => match i {
                0 => Verdict::Holds,
                _ if is_writer(sorted[i - 1]) => Verdict::Watch(sorted[i - 1], false),
                _ => Verdict::Holds,
            },
            // kazoo 2.8's rule (python-zk/kazoo#649): writers behind count too; the last one
            // listed is watched.
            Kind::Reader if bug == Some(Bug::RwReaderCountsLaterWriters) => {
                match sorted.iter().rev().find(|n| is_writer(**n)) {
                    Some(writer) => Verdict::Watch(*writer, false),
                    None => Verdict::Holds,
                }
            }
            Kind::Reader => match sorted[..i].iter().find(|n| is_writer(**n)) {
                Some(writer) => Verdict::Watch(*writer, false),
                None => Verdict::Holds,
            },
        }
    }
}

/// A lock: where its contenders live and how the directory is made.
#[derive(Clone, Copy, Debug)]
pub struct Lock {
    /// The lock's directory.
    pub dir: Path,
    /// Made as a container when missing (Curator's layouts; kazoo's is persistent and made
    /// once, `ensure_path`, so it never goes).
    pub container: bool,
    /// A defect to re-introduce.
    pub bug: Bugs,
    /// Reads may lag: a lost create's node is looked for after a `sync` (protected.rs,
    /// `sync_and_find`); with every read current the sync changes nothing and is left out.
    pub sync: bool,
    /// The prompt hand-over (`LockInternals::prompt_hand_over`): a waiter not second in line
    /// watches the contender ahead of the one it waits on too, and lists when that one goes.
    pub prompt: bool,
}

/// Where a contender is in its acquire and release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Not contending.
    Idle,
    /// About to create its contender node.
    Create,
    /// The create's reply was lost: sync before looking for it.
    Sync,
    /// The create's reply was lost: list to find the node by its protected name.
    Find,
    /// The lock directory was reaped: create it.
    Parent,
    /// List the contenders (`wait.rs`, `step`).
    List,
    /// Set a data watch on the contender named (`turn.rs`, `turn_by_predecessor`).
    Watch(Ahead),
    /// The prompt hand-over's second data watch (`turn.rs`, `watch_second`), with what the
    /// watched node's event was if it came meanwhile (`true`: deleted).
    WatchSecond(Ahead, Option<bool>),
    /// Waiting for the watched node (or the second) to go.
    Await(Ahead),
    /// The second went: list to learn whether the watched node leads (`turn.rs`, `relist`);
    /// with what the watched node's event was if it came meanwhile (`true`: deleted).
    Relist(Ahead, Option<bool>),
    /// Proved: the recipe's turn.
    Held,
    /// Delete the node (`LockInternals::release_lock`).
    Release,
}

/// The contender a waiter watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ahead {
    /// Its path.
    pub path: Path,
    /// Its deletion grants the lock (`OnDelete::Ours`).
    pub head: bool,
    /// The prompt hand-over's second: the contender ahead of it.
    pub second: Option<Path>,
}

/// One contender's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Contender {
    /// Where it is.
    pub phase: Phase,
    /// Its contender node and the session it lives with.
    pub node: Option<(Path, Sid)>,
    /// No disconnect since the proof was asked for (zkr's error epoch).
    pub clean: bool,
    /// Holding, as far as it knows (set when the lock is proved, cleared when it knows it lost).
    pub holds: bool,
}

impl Contender {
    /// A contender about to create its node.
    pub const START: Contender = Contender { phase: Phase::Create, node: None, clean: true, holds: false };
    /// A contender with nothing to do.
    pub const IDLE: Contender = Contender { phase: Phase::Idle, node: None, clean: true, holds: false };

    /// The session of its node (0: none).
    pub fn sid(&self) -> Sid {
        self.node.map_or(0, |n| n.1)
    }

    /// Starts over on the current session (`LockInternals::attempt`, `WaitError::NodeMissing`).
    pub fn start_over(&mut self) {
        self.node = None;
        self.holds = false;
        self.phase = Phase::Create;
    }

    /// Lets go: the next step releases the node.
    pub fn let_go(&mut self) {
        self.holds = false;
        self.phase = Phase::Release;
    }

    fn proved(&mut self) {
        self.phase = Phase::Held;
        self.holds = self.clean;
    }

    fn released(&mut self) {
        self.node = None;
        self.holds = false;
        self.phase = Phase::Idle;
    }
}

/// The sequential children in `listing`, by sequence (`sort_children`).
pub fn contenders(listing: &[(Name, Stat)]) -> Vec<Name> {
    let mut names: Vec<Name> =
        listing.iter().map(|(n, _)| *n).filter(|n| matches!(n, Name::Seq(..))).collect();
    names.sort_by_key(|n| match n {
        Name::Seq(_, seq) => *seq,
        _ => u8::MAX,
    });
    names
}

/// zkr-connection protected.rs, `create_once` after a lost reply: our node by its protected
/// prefix, if it lives with our session (one of an older session is deleted, CURATOR-498, and
/// we create again).
pub fn find_ours(me: Me, listing: &[(Name, Stat)], dir: Path, prefix: &str) -> Option<(Path, Sid)> {
    let (name, stat) = listing.iter().find(|(n, _)| matches!(n, Name::Seq(p, _) if *p == prefix))?;
    (stat.owner == Some(me.sid)).then_some((dir.child(*name), me.sid))
}

impl Lock {
    fn on(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }

    /// wait.rs, `step`: the driver's verdict on a listing.
    fn on_listing(&self, kind: Kind, c: &mut Contender, listing: &[(Name, Stat)]) {
        let sorted = contenders(listing);
        let Some((node, _)) = c.node else { return };
        match sorted.iter().position(|n| *n == node.name) {
            None => c.start_over(),
            Some(i) => match kind.verdict(&sorted, i, self.bug) {
                Verdict::Holds => c.proved(),
                Verdict::Watch(name, head) => {
                    let prompt = self.prompt && !head && matches!(kind, Kind::Standard | Kind::Kazoo);
                    let second = prompt.then(|| self.dir.child(sorted[i - 2]));
                    c.phase = Phase::Watch(Ahead { path: self.dir.child(name), head, second })
                }
            },
        }
    }

    /// turn.rs, `relist`: the listing after the second went. `p1`: the watched node's event,
    /// if it came meanwhile (its deletion grants only if the listing showed it leading; the
    /// code's loop finds the queued event after a new second watch, which is left out here).
    fn on_relist(&self, c: &mut Contender, ahead: Ahead, p1: Option<bool>, listing: &[(Name, Stat)]) {
        let sorted = contenders(listing);
        let Some((node, _)) = c.node else { return };
        let position = |name: Name| sorted.iter().position(|n| *n == name);
        match (position(ahead.path.name), position(node.name), p1) {
            (Some(0), Some(1), Some(true)) => self.on_gone(c, true),
            (Some(0), Some(1), None) => c.phase = Phase::Await(Ahead { head: true, second: None, ..ahead }),
            (Some(at), Some(ours), None) if at > 0 && at + 1 == ours => {
                let second = Some(self.dir.child(sorted[at - 1]));
                c.phase = Phase::WatchSecond(Ahead { second, ..ahead }, None);
            }
            _ => c.phase = Phase::List,
        }
    }

    /// turn.rs, `turn_by_predecessor`: the watched node is gone.
    fn on_gone(&self, c: &mut Contender, head: bool) {
        let grants = head || self.on(Bug::MutexAnyDeletionGrants);
        if grants && c.clean {
            c.proved();
        } else {
            c.phase = Phase::List;
        }
    }

    /// The contender's next step while it acquires or releases (`Blocked` when it waits, is
    /// held or idle: the recipe's turn).
    pub fn step(&self, me: Me, kind: Kind, c: &mut Contender) -> Step {
        let pinned = c.node.map(|(_, sid)| sid);
        match c.phase {
            // internals/mod.rs, `create_contender`: a protected EPHEMERAL_SEQUENTIAL create.
            Phase::Create => {
                let path = self.dir.child(Name::Fixed(kind.prefix(me.user)));
                c.node = None;
                Step::Send(
                    Request::Write(Op::Create { path, mode: Mode::EphemeralSequential, data: 0 }),
                    None,
                )
            }
            Phase::Sync => Step::Send(Request::Sync(self.dir), None),
            Phase::Find => Step::Send(Request::Children { path: self.dir, watch: false }, None),
            // zkr-connection: `Parents` makes the container parent on NoNode.
            Phase::Parent => {
                let mode = if self.container { Mode::Container } else { Mode::Persistent };
                Step::Send(Request::Write(Op::Create { path: self.dir, mode, data: 0 }), None)
            }
            // wait.rs, `step`: the lister lists on the node's session; a fresh look.
            Phase::List => {
                c.clean = true;
                Step::Send(Request::Children { path: self.dir, watch: false }, pinned)
            }
            // turn.rs, `turn_by_predecessor`: `watched_at` is taken before the data watch.
            Phase::Watch(ahead) => {
                c.clean = true;
                Step::Send(Request::GetData { path: ahead.path, watch: true }, pinned)
            }
            // The second watch and the listing after it keep `watched_at` (the first watch's).
            Phase::WatchSecond(Ahead { second: Some(second), .. }, _) => {
                Step::Send(Request::GetData { path: second, watch: true }, pinned)
            }
            Phase::Relist(..) => Step::Send(Request::Children { path: self.dir, watch: false }, pinned),
            Phase::WatchSecond(..) | Phase::Await(_) | Phase::Held | Phase::Idle => Step::Blocked,
            // internals/mod.rs, `send_release`: nothing once the session is not current, else
            // the delete on the node's session (in the background after a loss).
            Phase::Release => match c.node {
                Some((node, sid)) if sid == me.sid => {
                    Step::Send(Request::Write(Op::Delete { path: node, version: None }), pinned)
                }
                _ => {
                    c.released();
                    Step::Local
                }
            },
        }
    }

    /// A reply to the contender's request.
    pub fn on_reply(&self, me: Me, kind: Kind, c: &mut Contender, reply: Reply) {
        match (c.phase, reply) {
            (Phase::Create, Reply::Write(OpResult::Created(path, _))) => {
                c.node = Some((path, me.sid));
                c.phase = Phase::List;
            }
            (Phase::Create, Reply::Err(ZkError::ConnectionLoss)) => {
                let sync = self.sync && !self.on(Bug::MutexFindWithoutSync);
                c.phase = if sync { Phase::Sync } else { Phase::Find }
            }
            (Phase::Sync, Reply::Synced | Reply::Err(ZkError::NoNode)) => c.phase = Phase::Find,
            (Phase::Create, Reply::Err(ZkError::NoNode)) => c.phase = Phase::Parent,
            (Phase::Parent, _) => c.phase = Phase::Create,
            (Phase::Find, Reply::Children(listing)) => {
                match find_ours(me, &listing, self.dir, kind.prefix(me.user)) {
                    Some(node) => {
                        c.node = Some(node);
                        c.phase = Phase::List;
                    }
                    None => c.phase = Phase::Create,
                }
            }
            (Phase::Find, _) => {}
            (Phase::List, Reply::Children(listing)) => self.on_listing(kind, c, &listing),
            // wait.rs, `on_wait_error`: a session error or NoNode starts over; else retry.
            (Phase::List, Reply::Err(ZkError::ConnectionLoss)) => {}
            (Phase::List, Reply::Err(_)) => c.start_over(),
            (Phase::Watch(ahead), Reply::Data(..)) if ahead.second.is_some() => {
                c.phase = Phase::WatchSecond(ahead, None)
            }
            (Phase::Watch(ahead), Reply::Data(..)) => c.phase = Phase::Await(ahead),
            (Phase::WatchSecond(ahead, None), Reply::Data(..)) => c.phase = Phase::Await(ahead),
            // The watched node's event came first: the loop takes it (that node was not the
            // head, so its deletion lists again).
            (Phase::WatchSecond(_, Some(_)), Reply::Data(..)) => c.phase = Phase::List,
            // The second is gone: the loop lists before it looks at any event.
            (Phase::WatchSecond(ahead, p1), Reply::Err(ZkError::NoNode)) => {
                c.phase = Phase::Relist(ahead, p1)
            }
            (Phase::Relist(ahead, p1), Reply::Children(listing)) => self.on_relist(c, ahead, p1, &listing),
            (Phase::WatchSecond(..) | Phase::Relist(..), Reply::Err(ZkError::ConnectionLoss)) => {
                c.phase = Phase::List
            }
            (Phase::WatchSecond(..) | Phase::Relist(..), Reply::Err(_)) => c.start_over(),
            (Phase::Watch(ahead), Reply::Err(ZkError::NoNode)) => self.on_gone(c, ahead.head),
            (Phase::Watch(_), Reply::Err(ZkError::ConnectionLoss)) => c.phase = Phase::List,
            (Phase::Watch(_), Reply::Err(_)) => c.start_over(),
            // The background delete retries while the session lives (`guaranteed_delete`).
            (Phase::Release, Reply::Err(ZkError::ConnectionLoss)) => {}
            (Phase::Release, _) => c.released(),
            _ => {}
        }
    }

    /// A watch event, or the session's end (`None`).
    pub fn on_event(&self, c: &mut Contender, event: Option<Event>) {
        match (c.phase, event) {
            // The session ended: a waiter starts over, a holder knows it lost.
            (
                Phase::Await(_) | Phase::Watch(_) | Phase::WatchSecond(..) | Phase::Relist(..) | Phase::List,
                None,
            ) => c.start_over(),
            (_, None) => c.holds = false,
            (Phase::Await(ahead), Some(Event { path, kind, .. })) if path == ahead.path => match kind {
                EventKind::Deleted => self.on_gone(c, ahead.head),
                _ => c.phase = Phase::List,
            },
            // Any event of the second: list (`Second::Gone`).
            (Phase::Await(ahead), Some(Event { path, .. })) if Some(path) == ahead.second => {
                c.phase = Phase::Relist(ahead, None)
            }
            // The watched node's event while the second's watch or the listing is under way: its
            // watcher keeps it for the loop.
            (Phase::WatchSecond(ahead, None), Some(Event { path, kind, .. })) if path == ahead.path => {
                c.phase = Phase::WatchSecond(ahead, Some(kind == EventKind::Deleted))
            }
            (Phase::Relist(ahead, None), Some(Event { path, kind, .. })) if path == ahead.path => {
                c.phase = Phase::Relist(ahead, Some(kind == EventKind::Deleted))
            }
            _ => {}
        }
    }

    /// The connection dropped.
    pub fn on_disconnect(&self, c: &mut Contender) {
        c.clean = false;
        // fence.rs, `lost_reason`: the error epoch moved (zkr's standard error policy).
        if !self.on(Bug::MutexSessionOnlyPolicy) {
            c.holds = false;
        }
    }
}
