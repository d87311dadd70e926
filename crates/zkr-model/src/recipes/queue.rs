//! The lock-safe queue (`DistributedQueue` with a lock path): a consumer locks an item with an
//! ephemeral node named after it and holding its token, reads it, works, and acks by deleting
//! the item and its lock in one transaction pinned to the lock's session.
//!
//! The items are there from the start; consumers take until they see the queue empty. Several
//! consumers may share one client (one session): the case the item lock's token exists for.

use stateright::Property;

use crate::bugs::{Bug, Bugs};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{Event, Mode, Name, Op, Path, Reply, Request, Server, Sid, ZkError};

/// The queue's directory.
pub const QUEUE: Path = Path::top("queue");
/// The item locks' directory.
pub const LOCKS: Path = Path::top("locks");

fn item(k: u8) -> Path {
    QUEUE.child(Name::Indexed("item-", k))
}

fn lock(k: u8) -> Path {
    LOCKS.child(Name::Indexed("item-", k))
}

/// A consumer's token (random per acquire in zkr; one per consumer is enough here).
fn token(user: u8) -> u32 {
    u32::from(user) + 1
}

/// The queue checked with these consumers, items and faults.
#[derive(Clone, Debug)]
pub struct Queue {
    /// Each consumer's client.
    pub users: Vec<u8>,
    /// Items in the queue at the start.
    pub items: u8,
    /// The faults.
    pub faults: Faults,
    /// A defect to re-introduce.
    pub bug: Bugs,
}

/// Where a consumer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Look at the queue (core.rs, `take_by`: the items view).
    List,
    /// All items it saw are locked by others: wait for one of their locks to change.
    Wait,
    /// Create the item's lock (item.rs, `create_or_watch`).
    Lock(u8),
    /// The lock exists: read it, with a watch, to tell ours from another's.
    ReadLock(u8),
    /// Read the item on the lock's session (item.rs, `ItemLock::read`).
    Read(u8),
    /// Working on the item.
    Work(u8),
    /// Ack: the transaction (item.rs, `ItemLock::commit`); `true` once it was resent.
    Ack(u8, bool),
    /// A resent ack found the lock gone: was the first applied? (item.rs, `applied`).
    Applied(u8),
    /// Give the lock back: read it (item.rs, `delete_owned`).
    Release(u8),
    /// Delete it at the version read.
    ReleaseDelete(u8, u8),
    /// Saw the queue empty.
    Done,
}

/// A consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct User {
    /// Where it is.
    pub phase: Phase,
    /// The session its current lock is taken on.
    pub sid: Sid,
    /// Items found locked by others in this look (a bit each).
    pub skip: u8,
    /// A watched change came since the look began: look again rather than wait.
    pub woke: bool,
}

/// What the properties look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// Acks applied, per item.
    pub acks: [u8; 4],
    /// Who acked each item (user + 1).
    pub acker: [u8; 4],
    /// An ack applied while the lock it checked held another consumer's token.
    pub foreign_lock: bool,
    /// A consumer started working on an item another had acked.
    pub late_work: bool,
}

impl Queue {
    fn on(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }

    fn on_listing(&self, user: &mut User, listing: &[(Name, crate::zk::Stat)]) {
        let items: Vec<u8> = listing
            .iter()
            .filter_map(|(n, _)| match n {
                Name::Indexed(_, k) => Some(*k),
                _ => None,
            })
            .collect();
        let ready = items.iter().copied().find(|k| user.skip & (1 << k) == 0);
        user.phase = match ready {
            Some(k) => Phase::Lock(k),
            None if items.is_empty() => Phase::Done,
            None if user.woke => {
                user.woke = false;
                user.skip = 0;
                Phase::List
            }
            None => Phase::Wait,
        };
    }

    /// item.rs, `create_or_watch`: the lock exists; ours when of our session with our token.
    fn on_lock_read(&self, me: Me, user: &mut User, k: u8, data: u32, owner: Option<Sid>) {
        let ours_session = owner == Some(user.sid);
        let ours = ours_session && (data == token(me.user) || self.on(Bug::QueueLockBySessionOnly));
        if ours {
            user.phase = Phase::Read(k);
        } else {
            user.skip |= 1 << k;
            user.phase = Phase::List;
        }
    }

    fn ack_ops(k: u8) -> Vec<Op> {
        vec![
            Op::Check { path: lock(k), version: None },
            Op::Delete { path: item(k), version: None },
            Op::Delete { path: lock(k), version: None },
        ]
    }

    fn after_lock(user: &mut User) {
        user.skip = 0;
        user.phase = Phase::List;
    }
}

impl Recipe for Queue {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        let clients = self.users.iter().copied().max().map_or(0, |c| c + 1);
        let mut nodes = vec![(QUEUE, Mode::Persistent, 0), (LOCKS, Mode::Persistent, 0)];
        nodes.extend((0..self.items).map(|k| (item(k), Mode::Persistent, u32::from(k))));
        let user = User { phase: Phase::List, sid: 0, skip: 0, woke: false };
        Setup { nodes, clients, users: self.users.iter().map(|c| (*c, user)).collect() }
    }

    fn faults(&self) -> Faults {
        self.faults
    }

    fn step(&self, me: Me, user: &mut User, _ghost: &mut Ghost) -> Step {
        let pin = Some(user.sid);
        match user.phase {
            // core.rs, `take_by`: the items view (a cache of the queue, watched).
            Phase::List => {
                user.woke = false;
                Step::Send(Request::Children { path: QUEUE, watch: true }, None)
            }
            Phase::Wait | Phase::Done => Step::Blocked,
            // The work is done: ack.
            Phase::Work(k) => {
                user.phase = Phase::Ack(k, false);
                Step::Local
            }
            // item.rs, `ItemLock::acquire`: on the session current at the look, kept for the lock
            // (`owned::on_session`: a lost reply is resent there, never on a successor).
            Phase::Lock(k) => {
                let data = token(me.user);
                Step::Send(Request::Write(Op::Create { path: lock(k), mode: Mode::Ephemeral, data }), pin)
            }
            Phase::ReadLock(k) => Step::Send(Request::GetData { path: lock(k), watch: true }, pin),
            Phase::Read(k) => Step::Send(Request::GetData { path: item(k), watch: false }, pin),
            // item.rs, `ItemLock::commit`: `Owned::transaction` pins it to the lock's session.
            Phase::Ack(k, _) => {
                let pin = if self.on(Bug::QueueAckUnpinned) { None } else { pin };
                Step::Send(Request::Multi(Self::ack_ops(k)), pin)
            }
            Phase::Applied(k) => Step::Send(Request::Exists { path: item(k), watch: false }, pin),
            Phase::Release(k) => Step::Send(Request::GetData { path: lock(k), watch: false }, pin),
            Phase::ReleaseDelete(k, v) => {
                Step::Send(Request::Write(Op::Delete { path: lock(k), version: Some(v) }), pin)
            }
        }
    }

    fn on_reply(&self, me: Me, user: &mut User, reply: Reply, ghost: &mut Ghost) {
        use ZkError::{ConnectionLoss, NoNode, NodeExists};
        let lost = reply == Reply::Err(ConnectionLoss);
        match (user.phase, reply) {
            (Phase::List, Reply::Children(listing)) => {
                user.sid = me.sid;
                self.on_listing(user, &listing);
            }
            (Phase::Lock(k), Reply::Write(_)) => user.phase = Phase::Read(k),
            (Phase::Lock(k), Reply::Err(NodeExists)) => user.phase = Phase::ReadLock(k),
            (Phase::ReadLock(k), Reply::Data(data, stat)) => self.on_lock_read(me, user, k, data, stat.owner),
            (Phase::ReadLock(k), Reply::Err(NoNode)) => user.phase = Phase::Lock(k),
            (Phase::Read(k), Reply::Data(..)) => {
                let acker = ghost.acker[usize::from(k)];
                ghost.late_work |= acker != 0 && acker != me.user + 1;
                user.phase = Phase::Work(k);
            }
            // The item went before we locked it: give the lock back.
            (Phase::Read(k), Reply::Err(NoNode)) => user.phase = Phase::Release(k),
            (Phase::Ack(..), Reply::Multi(_)) => Self::after_lock(user),
            (Phase::Ack(k, true), Reply::MultiFailed(0, _)) => user.phase = Phase::Applied(k),
            // LockLost (index 0), ItemGone (index 1), the session ended: the item stays or went.
            (Phase::Ack(..), Reply::MultiFailed(..)) => Self::after_lock(user),
            (Phase::Ack(k, _), Reply::Err(ConnectionLoss)) => user.phase = Phase::Ack(k, true),
            (Phase::Applied(_), _) if !lost => Self::after_lock(user),
            (Phase::Release(k), Reply::Data(data, stat))
                if stat.owner == Some(user.sid) && data == token(me.user) =>
            {
                user.phase = Phase::ReleaseDelete(k, stat.version);
            }
            (Phase::ReleaseDelete(..) | Phase::Release(_), _) if !lost => Self::after_lock(user),
            // The retry loops resend after a lost connection, on the same session; a pinned
            // request on an ended session gives up (`SessionExpired`).
            (_, Reply::Err(ConnectionLoss)) => {}
            _ => Self::after_lock(user),
        }
    }

    fn on_event(&self, _me: Me, user: &mut User, event: Option<Event>, _ghost: &mut Ghost) {
        // core.rs, `take_by`: a busy lock changed, or the views follow a new session.
        if user.phase == Phase::Wait {
            user.skip = 0;
            user.phase = Phase::List;
        } else {
            let _ = event;
            user.woke = true;
        }
    }

    fn on_apply(&self, user: u8, request: &Request, reply: &Reply, before: &Server, ghost: &mut Ghost) {
        let (Request::Multi(ops), Reply::Multi(_)) = (request, reply) else { return };
        let Some(Op::Delete { path: Path { name: Name::Indexed(_, k), .. }, .. }) = ops.get(1) else {
            return;
        };
        let k = usize::from(*k);
        ghost.acks[k] = ghost.acks[k].saturating_add(1);
        ghost.acker[k] = user + 1;
        if let Some(Op::Check { path, .. }) = ops.first() {
            if before.nodes.get(path).is_some_and(|n| n.data != token(user)) {
                ghost.foreign_lock = true;
            }
        }
    }

    fn done(&self, user: &User) -> bool {
        user.phase == Phase::Done
    }

    fn properties(&self) -> Vec<Property<Checked<Self>>> {
        vec![
            Property::always("every item acked at most once", |_, s: &State<Self>| {
                s.ghost.acks.iter().all(|a| *a <= 1)
            }),
            Property::always("an ack commits only on its own lock", |_, s: &State<Self>| {
                !s.ghost.foreign_lock
            }),
            Property::always("no item worked after another consumer acked it", |_, s: &State<Self>| {
                !s.ghost.late_work
            }),
            Property::always("one live consumer at a time works an item", |_, s: &State<Self>| {
                (0..4).all(|k| working(s, k) <= 1)
            }),
            Property::always(
                "every item acked once when all are done",
                |m: &Checked<Self>, s: &State<Self>| {
                    !s.users.iter().all(|u| u.user.phase == Phase::Done)
                        || s.ghost.acks.iter().take(usize::from(m.0.items)).all(|a| *a == 1)
                },
            ),
            Property::sometimes("an item is acked", |_, s: &State<Self>| s.ghost.acks.iter().any(|a| *a > 0)),
        ]
    }
}

/// Consumers working on item `k` (or acking it) whose lock's session lives.
fn working(s: &State<Queue>, k: u8) -> usize {
    let on = |phase: Phase| matches!(phase, Phase::Work(j) | Phase::Ack(j, _) if j == k);
    s.users.iter().filter(|u| s.server.alive(u.user.sid) && on(u.user.phase)).count()
}
