//! kazoo's leases in zkr (`kazoo/lease.rs`): `NonBlockingLease::obtain` takes the kazoo lock at
//! the lease's path (the lock internals' steps with `KazooLockDriver`), reads
//! `<path>/lease_holder` (the holder's identifier and the end of its lease), and, when there is
//! no holder, the holder's lease has ended or the holder is itself, replaces the holder node in
//! one transaction behind the lock (`under_lock`: `guard.transaction()`, a check of the lock
//! node on its session, a delete at the version read, a create), then releases the lock.
//! `MultiNonBlockingLease` tries `<path>/0` ... `<path>/<count - 1>` in turn.
//!
//! Time is one clock every user reads (the clock assumption: the hosts' clocks agree, as
//! kazoo's leases assume), moved on by a clock user at any point up to a bound. A holder
//! holds until its clock passes the lease's end. With `skew`, user 1's clock runs one tick
//! ahead, to show what the assumption is for.
//!
//! Layout: lease `k` is `/lease-k` (persistent, made beforehand: `ensure_path`), its lock's
//! contenders `u<n>__lock__<seq>` and its holder `/lease-k/lease_holder` beside them; the
//! holder's data is its identifier (user + 1; 15 for another process) times 16 plus the end.

use stateright::Property;

use crate::bugs::{Bug, Bugs};
use crate::recipes::internals::{Contender, Kind, Lock, Phase as LockPhase};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{Event, Mode, Name, Op, Path, Reply, Request, Server};

const DIRS: [&str; 3] = ["lease-0", "lease-1", "lease-2"];
/// The holder node's name.
pub const HOLDER: Name = Name::Fixed("lease_holder");
/// The identifier of a holder that is no user (a process gone before the check began).
const FOREIGN: u32 = 15;

fn dir(slot: u8) -> Path {
    Path::top(DIRS[usize::from(slot)])
}

fn holder(slot: u8) -> Path {
    dir(slot).child(HOLDER)
}

fn encode(id: u32, end: u8) -> u32 {
    id * 16 + u32::from(end)
}

/// The leases checked with these users.
#[derive(Clone, Debug)]
pub struct Lease {
    /// Each user's client.
    pub users: Vec<u8>,
    /// Leases (`MultiNonBlockingLease`'s count; 1: a `NonBlockingLease`).
    pub count: u8,
    /// A lease's duration, in ticks.
    pub duration: u8,
    /// How far the clock may move.
    pub ticks: u8,
    /// Every lease starts with a holder node whose lease has ended (another process's).
    pub stale: bool,
    /// User 1's clock runs one tick ahead (breaks the clock assumption).
    pub skew: bool,
    /// The faults.
    pub faults: Faults,
    /// A defect to re-introduce.
    pub bug: Bugs,
}

/// How an obtain of one lease ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Obtained (or renewed).
    Obtained,
    /// Held by another: try the next lease.
    Taken,
    /// An error (`LockError::Lost`, a refused or ambiguous commit): the call fails.
    Failed,
}

/// Where a user is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// `obtain`: the end is now + duration, taken before the lock.
    Start,
    /// `lock.acquire()`: the lock's steps.
    Lock,
    /// `under_lock`: read the holder (`zk.retry`, any session).
    Read,
    /// `guard.commit(txn)`: the holder node replaced, at the version read (`None`: none read).
    Commit(Option<u8>),
    /// `guard.release()`, then the outcome.
    Unlock(Outcome),
    /// Finished.
    Done,
    /// The clock.
    Clock,
}

/// A user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct User {
    /// Where it is.
    pub phase: Phase,
    /// The lease it tries.
    pub slot: u8,
    /// The end of the lease it asks for.
    pub end: u8,
    /// Its contender for the lease's lock.
    pub lock: Contender,
    /// The lease it obtained and its end.
    pub obtained: Option<(u8, u8)>,
}

/// What the properties look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// The clock.
    pub now: u8,
    /// Leases obtained.
    pub obtained: u8,
    /// A holder node was replaced (a lease taken over).
    pub replaced: bool,
}

impl Lease {
    fn lock(&self, slot: u8) -> Lock {
        Lock { dir: dir(slot), container: false, bug: None, sync: self.faults.lag > 0, prompt: false }
    }

    /// User `user`'s clock.
    fn now(&self, user: u8, ghost: &Ghost) -> u8 {
        ghost.now + u8::from(self.skew && user == 1)
    }

    fn unlock(user: &mut User, outcome: Outcome) {
        user.lock.let_go();
        user.phase = Phase::Unlock(outcome);
    }

    /// The lock is released: the next lease, or done.
    fn unlocked(&self, user: &mut User, outcome: Outcome) {
        user.lock = Contender::IDLE;
        user.phase = match outcome {
            Outcome::Taken if user.slot + 1 < self.count => {
                user.slot += 1;
                Phase::Start
            }
            _ => Phase::Done,
        };
    }

    fn after_lock(&self, was: LockPhase, user: &mut User) {
        match (user.phase, user.lock.phase) {
            (Phase::Lock, LockPhase::Held) => user.phase = Phase::Read,
            (Phase::Unlock(outcome), LockPhase::Idle) if was == LockPhase::Release => {
                self.unlocked(user, outcome)
            }
            _ => {}
        }
    }

    /// `under_lock` on the holder read (`None`: no holder node).
    fn on_holder(&self, me: Me, user: &mut User, found: Option<(u32, u8)>, ghost: &Ghost) {
        match found {
            Some((data, version)) => {
                let (id, end) = (data / 16, (data % 16) as u8);
                if id != u32::from(me.user) + 1 && self.now(me.user, ghost) < end {
                    Self::unlock(user, Outcome::Taken);
                } else {
                    user.phase = Phase::Commit(Some(version));
                }
            }
            None => user.phase = Phase::Commit(None),
        }
    }

    fn commit(&self, me: Me, user: &mut User) -> Step {
        let Some((node, sid)) = user.lock.node else { return Step::Blocked };
        let unguarded = self.bug == Some(Bug::LeaseTxnUnguarded);
        // `guard.transaction()`: `check_held` first.
        if !user.lock.holds && !unguarded {
            Self::unlock(user, Outcome::Failed);
            return Step::Local;
        }
        let Phase::Commit(version) = user.phase else { return Step::Blocked };
        let path = holder(user.slot);
        let mut ops = Vec::new();
        if !unguarded {
            ops.push(Op::Check { path: node, version: None });
        }
        if let Some(version) = version {
            ops.push(Op::Delete { path, version: Some(version) });
        }
        let data = encode(u32::from(me.user) + 1, user.end);
        ops.push(Op::Create { path, mode: Mode::Persistent, data });
        Step::Send(Request::Multi(ops), (!unguarded).then_some(sid))
    }
}

/// Users holding lease `slot` (any with `None`) whose lease has not ended by their clock.
fn holders(m: &Lease, s: &State<Lease>, slot: Option<u8>) -> usize {
    s.users
        .iter()
        .enumerate()
        .filter(|(u, slot_user)| match slot_user.user.obtained {
            Some((k, end)) => slot.is_none_or(|x| x == k) && m.now(*u as u8, &s.ghost) < end,
            None => false,
        })
        .count()
}

impl Recipe for Lease {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        let clients = self.users.iter().copied().max().map_or(0, |c| c + 1);
        let user = User { phase: Phase::Start, slot: 0, end: 0, lock: Contender::IDLE, obtained: None };
        let mut users: Vec<(u8, User)> = self.users.iter().map(|c| (*c, user)).collect();
        if self.ticks > 0 {
            users.push((0, User { phase: Phase::Clock, ..user }));
        }
        let mut nodes: Vec<(Path, Mode, u32)> =
            (0..self.count).map(|k| (dir(k), Mode::Persistent, 0)).collect();
        if self.stale {
            nodes.extend((0..self.count).map(|k| (holder(k), Mode::Persistent, encode(FOREIGN, 0))));
        }
        Setup { nodes, clients, users }
    }

    fn faults(&self) -> Faults {
        self.faults
    }

    fn step(&self, me: Me, user: &mut User, ghost: &mut Ghost) -> Step {
        match user.phase {
            Phase::Clock if ghost.now < self.ticks => {
                ghost.now += 1;
                Step::Local
            }
            Phase::Clock | Phase::Done => Step::Blocked,
            Phase::Start => {
                user.end = (self.now(me.user, ghost) + self.duration).min(15);
                user.lock = Contender::START;
                user.phase = Phase::Lock;
                Step::Local
            }
            Phase::Lock | Phase::Unlock(_) => {
                let was = user.lock.phase;
                let step = self.lock(user.slot).step(me, Kind::Kazoo, &mut user.lock);
                self.after_lock(was, user);
                step
            }
            Phase::Read => Step::Send(Request::GetData { path: holder(user.slot), watch: false }, None),
            Phase::Commit(_) => self.commit(me, user),
        }
    }

    fn on_reply(&self, me: Me, user: &mut User, reply: Reply, ghost: &mut Ghost) {
        match (user.phase, reply) {
            (Phase::Lock | Phase::Unlock(_), reply) => {
                let was = user.lock.phase;
                self.lock(user.slot).on_reply(me, Kind::Kazoo, &mut user.lock, reply);
                self.after_lock(was, user);
            }
            (Phase::Read, Reply::Data(data, stat)) => {
                self.on_holder(me, user, Some((data, stat.version)), ghost)
            }
            (Phase::Read, Reply::Err(crate::zk::ZkError::NoNode)) => self.on_holder(me, user, None, ghost),
            // `zk.retry`: read again.
            (Phase::Read, _) => {}
            (Phase::Commit(_), Reply::Multi(_)) => {
                user.obtained = Some((user.slot, user.end));
                ghost.obtained = ghost.obtained.saturating_add(1);
                Self::unlock(user, Outcome::Obtained);
            }
            // Lost (the check, or the lock's session), refused, or ambiguous: an error.
            (Phase::Commit(_), _) => Self::unlock(user, Outcome::Failed),
            _ => {}
        }
    }

    fn on_event(&self, _me: Me, user: &mut User, event: Option<Event>, _ghost: &mut Ghost) {
        let was = user.lock.phase;
        self.lock(user.slot).on_event(&mut user.lock, event);
        self.after_lock(was, user);
    }

    fn on_disconnect(&self, _me: Me, user: &mut User, _ghost: &mut Ghost) {
        self.lock(user.slot).on_disconnect(&mut user.lock);
    }

    fn on_apply(&self, _user: u8, request: &Request, reply: &Reply, _before: &Server, ghost: &mut Ghost) {
        if let (Request::Multi(ops), Reply::Multi(_)) = (request, reply) {
            ghost.replaced |= ops.iter().any(|op| matches!(op, Op::Delete { .. }));
        }
    }

    fn done(&self, user: &User) -> bool {
        matches!(user.phase, Phase::Done | Phase::Clock)
    }

    fn properties(&self) -> Vec<Property<Checked<Self>>> {
        let mut properties = vec![
            Property::always(
                "at most one holder per lease whose lease has not ended",
                |m: &Checked<Self>, s: &State<Self>| (0..m.0.count).all(|k| holders(&m.0, s, Some(k)) <= 1),
            ),
            Property::always(
                "at most count holders whose leases have not ended",
                |m: &Checked<Self>, s: &State<Self>| holders(&m.0, s, None) <= usize::from(m.0.count),
            ),
            Property::sometimes("a lease is obtained", |_, s: &State<Self>| s.ghost.obtained > 0),
        ];
        if self.stale {
            properties.push(Property::sometimes("a lease that ended is taken over", |_, s: &State<Self>| {
                s.ghost.replaced
            }));
        }
        properties
    }
}

impl crate::symmetry::Symmetric for Lease {
    /// The clock apart from the users.
    fn class(user: &User) -> u8 {
        u8::from(user.phase == Phase::Clock)
    }

    fn user(user: &User, map: &crate::symmetry::Map) -> User {
        User { lock: crate::symmetry::contender(&user.lock, map), ..*user }
    }

    /// A holder node names its holder (user + 1).
    fn data(path: Path, data: u32, map: &crate::symmetry::Map) -> u32 {
        match (path.name == HOLDER, data / 16) {
            (true, id @ 1..=4) => encode(u32::from(map.user(id as u8 - 1)) + 1, (data % 16) as u8),
            _ => data,
        }
    }
}
