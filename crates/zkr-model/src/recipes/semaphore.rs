//! Semaphore V2 (`locks/semaphore.rs`, `InterProcessSemaphoreV2`): an acquirer takes the
//! acquirers' mutex (`<path>/locks`, the lock internals' steps with the standard driver),
//! creates a protected `EPHEMERAL_SEQUENTIAL` lease node under `<path>/leases` on the mutex's
//! session (`lease_under_mutex_as`: `on_session(mutex)`; once that session is gone the create
//! is not sent and the acquirer queues for the mutex again, `under_mutex`, `mutex_lost`), lists
//! the leases with a watch on the lease's session until there are no more than the maximum
//! (`wait_for_room`, `children_wait.rs`, `has_room`), then releases the mutex; the lease is
//! returned by deleting its node on its session (`locks/lease.rs`, `Lease::release`). A lease
//! rides out connection losses; it is lost when its session ends (`Lease::is_lost`).
//!
//! Layout: `<path>/locks` and `<path>/leases` are `/locks` and `/leases` here (the model's
//! paths have two levels). Each user takes and returns a lease `rounds` times; an acquire that
//! fails (its lease's session ended while it waited, or its node vanished) starts again.

use stateright::Property;

use crate::bugs::{Bug, Bugs};
use crate::recipes::internals::{find_ours, Contender, Kind, Lock, Phase as LockPhase};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{Event, Mode, Name, Op, OpResult, Path, Reply, Request, Sid, ZkError};

/// The acquirers' mutex's directory.
pub const LOCKS: Path = Path::top("locks");
/// The lease nodes' directory.
pub const LEASES: Path = Path::top("leases");
/// Lease node prefixes per user (Curator's `_c_<uuid>-lease-`).
pub(crate) const NAMES: [&str; 4] = ["_c_u0-lease-", "_c_u1-lease-", "_c_u2-lease-", "_c_u3-lease-"];

/// The semaphore checked with these users and faults.
#[derive(Clone, Debug)]
pub struct Semaphore {
    /// Each user's client.
    pub users: Vec<u8>,
    /// The maximum number of leases (`MaxLeases::Fixed`).
    pub max: u8,
    /// Leases each user takes and returns.
    pub rounds: u8,
    /// The faults.
    pub faults: Faults,
    /// A defect to re-introduce.
    pub bug: Bugs,
    /// Also check that at most `max` users believe they hold a lease, those whose session
    /// ended unknown to them included (not promised: a lease learns of its session's end only
    /// when its client reconnects).
    pub strict: bool,
}

/// What follows the mutex's release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Then {
    /// Hold the lease granted.
    Hold,
    /// The acquire failed: start again.
    Retry,
    /// Wait for room (only with `SemaphoreMutexReleasedEarly`).
    Room,
}

/// Where a user is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Taking the acquirers' mutex (the contender's steps).
    Mutex,
    /// `create_protected_ext`: create the lease node.
    Create,
    /// The create's reply was lost: sync (with lagging reads), then find the node.
    Sync,
    /// The create's reply was lost: find the node by its protected name.
    Find,
    /// `leases/` was reaped: make it again (a container).
    Parent,
    /// `wait_for_children`: list the leases with a watch, on the lease's session.
    Room,
    /// Waiting for the leases to change.
    RoomWait,
    /// `guard.release()`: the mutex's release, then what follows.
    Unlock(Then),
    /// Holding a lease.
    Hold,
    /// `Lease::release`: delete the lease node on its session.
    Return,
    /// All rounds done.
    Done,
}

/// A user of the semaphore.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct User {
    /// Rounds left.
    pub left: u8,
    /// Where it is.
    pub phase: Phase,
    /// Its contender for the acquirers' mutex.
    pub mutex: Contender,
    /// Its lease node and the session it lives with.
    pub lease: Option<(Path, Sid)>,
    /// Holding a lease, as far as it knows (`Lease::is_lost` false).
    pub holds: bool,
}

/// What the properties look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// The most leases held at once by users whose lease sessions lived.
    pub most: u8,
}

impl Semaphore {
    fn on(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }

    fn mutex(&self) -> Lock {
        Lock { dir: LOCKS, container: true, bug: None, sync: self.faults.lag > 0, prompt: false }
    }

    /// The lease node exists: wait for room, having released the mutex first with the bug.
    fn created(&self, user: &mut User, node: (Path, Sid)) {
        user.lease = Some(node);
        user.phase = if self.on(Bug::SemaphoreMutexReleasedEarly) {
            user.mutex.let_go();
            Phase::Unlock(Then::Room)
        } else {
            Phase::Room
        };
    }

    /// `wait_for_room` ended: granted or not, the mutex goes (already gone with the bug).
    fn room_decided(&self, user: &mut User, granted: bool) {
        user.holds = granted;
        if !granted {
            user.lease = None;
        }
        let then = if granted { Then::Hold } else { Then::Retry };
        if user.mutex.phase == LockPhase::Idle {
            Self::unlocked(user, then);
        } else {
            user.mutex.let_go();
            user.phase = Phase::Unlock(then);
        }
    }

    fn unlocked(user: &mut User, then: Then) {
        user.phase = match then {
            Then::Hold => Phase::Hold,
            Then::Room => Phase::Room,
            Then::Retry => {
                user.mutex = Contender::START;
                Phase::Mutex
            }
        };
    }

    fn returned(user: &mut User) {
        user.lease = None;
        user.left -= 1;
        if user.left == 0 {
            user.phase = Phase::Done;
        } else {
            user.mutex = Contender::START;
            user.phase = Phase::Mutex;
        }
    }

    /// `has_room`: our node among the leases, and no more of them than the maximum.
    fn on_leases(&self, user: &mut User, listing: &[(Name, crate::zk::Stat)]) {
        let leases = listing.iter().filter(|(n, _)| matches!(n, Name::Seq(..))).count();
        let ours = user.lease.is_some_and(|(p, _)| listing.iter().any(|(n, _)| *n == p.name));
        match (ours, leases <= usize::from(self.max)) {
            // `LockError::NodeVanished`: the acquire fails.
            (false, _) => self.room_decided(user, false),
            (true, true) => self.room_decided(user, true),
            (true, false) => user.phase = Phase::RoomWait,
        }
    }

    /// The mutex's own steps, then what its state says.
    fn mutex_step(&self, me: Me, user: &mut User) -> Step {
        let was = user.mutex.phase;
        let step = self.mutex().step(me, Kind::Standard, &mut user.mutex);
        self.after_mutex(was, user);
        step
    }

    fn after_mutex(&self, was: LockPhase, user: &mut User) {
        match (user.phase, user.mutex.phase) {
            // Proved: the semaphore goes on (it does not look at the guard again).
            (Phase::Mutex, LockPhase::Held) => user.phase = Phase::Create,
            (Phase::Unlock(then), LockPhase::Idle) if was == LockPhase::Release => Self::unlocked(user, then),
            _ => {}
        }
    }
}

impl Recipe for Semaphore {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        let clients = self.users.iter().copied().max().map_or(0, |c| c + 1);
        let user = User {
            left: self.rounds,
            phase: Phase::Mutex,
            mutex: Contender::START,
            lease: None,
            holds: false,
        };
        Setup {
            nodes: vec![(LOCKS, Mode::Container, 0), (LEASES, Mode::Container, 0)],
            clients,
            users: self.users.iter().map(|c| (*c, user)).collect(),
        }
    }

    fn faults(&self) -> Faults {
        self.faults
    }

    fn step(&self, me: Me, user: &mut User, _ghost: &mut Ghost) -> Step {
        let pinned = user.lease.map(|(_, sid)| sid);
        // The lease's create (and its sync and find) on the mutex's session; with the bug, on
        // whatever session the client has.
        let guarded = (!self.on(Bug::SemaphoreLeaseOffMutexSession)).then(|| user.mutex.sid());
        match user.phase {
            Phase::Mutex | Phase::Unlock(_) => self.mutex_step(me, user),
            Phase::Create => {
                let path = LEASES.child(Name::Fixed(NAMES[usize::from(me.user)]));
                Step::Send(
                    Request::Write(Op::Create { path, mode: Mode::EphemeralSequential, data: 0 }),
                    guarded,
                )
            }
            Phase::Sync => Step::Send(Request::Sync(LEASES), guarded),
            Phase::Find => Step::Send(Request::Children { path: LEASES, watch: false }, guarded),
            Phase::Parent => Step::Send(
                Request::Write(Op::Create { path: LEASES, mode: Mode::Container, data: 0 }),
                guarded,
            ),
            // children_wait.rs: `fence.client(zk)`, the lease's session.
            Phase::Room => Step::Send(Request::Children { path: LEASES, watch: true }, pinned),
            Phase::RoomWait | Phase::Done => Step::Blocked,
            // `Lease::release`: a lost lease reports `Lost` and sends nothing.
            Phase::Hold => {
                user.holds = false;
                match user.lease {
                    Some((_, sid)) if sid == me.sid => user.phase = Phase::Return,
                    _ => Self::returned(user),
                }
                Step::Local
            }
            Phase::Return => match user.lease {
                Some((node, sid)) if sid == me.sid => {
                    Step::Send(Request::Write(Op::Delete { path: node, version: None }), pinned)
                }
                _ => {
                    Self::returned(user);
                    Step::Local
                }
            },
        }
    }

    fn on_reply(&self, me: Me, user: &mut User, reply: Reply, _ghost: &mut Ghost) {
        match (user.phase, reply) {
            (Phase::Mutex | Phase::Unlock(_), reply) => {
                let was = user.mutex.phase;
                self.mutex().on_reply(me, Kind::Standard, &mut user.mutex, reply);
                self.after_mutex(was, user);
            }
            (Phase::Create, Reply::Write(OpResult::Created(path, _))) => self.created(user, (path, me.sid)),
            (Phase::Create, Reply::Err(ZkError::ConnectionLoss)) => {
                user.phase = if self.faults.lag > 0 { Phase::Sync } else { Phase::Find }
            }
            (Phase::Sync, Reply::Synced | Reply::Err(ZkError::NoNode)) => user.phase = Phase::Find,
            (Phase::Create, Reply::Err(ZkError::NoNode)) => user.phase = Phase::Parent,
            // `mutex_lost`: the mutex's session ended before the lease was made: queue again.
            (
                Phase::Create | Phase::Sync | Phase::Find | Phase::Parent,
                Reply::Err(ZkError::SessionExpired),
            ) => self.room_decided(user, false),
            (Phase::Parent, _) => user.phase = Phase::Create,
            (Phase::Find, Reply::Children(listing)) => {
                match find_ours(me, &listing, LEASES, NAMES[usize::from(me.user)]) {
                    Some(node) => self.created(user, node),
                    None => user.phase = Phase::Create,
                }
            }
            (Phase::Room, Reply::Children(listing)) => self.on_leases(user, &listing),
            // A connection loss the session survives: look again.
            (Phase::Room, Reply::Err(ZkError::ConnectionLoss)) => {}
            // The lease's session ended (`LockError::Lost`), or the directory is gone.
            (Phase::Room, Reply::Err(_)) => self.room_decided(user, false),
            (Phase::Return, Reply::Err(ZkError::ConnectionLoss)) => {}
            (Phase::Return, _) => Self::returned(user),
            _ => {}
        }
    }

    fn on_event(&self, _me: Me, user: &mut User, event: Option<Event>, _ghost: &mut Ghost) {
        match (user.phase, event) {
            (Phase::RoomWait, Some(Event { path, .. })) if path == LEASES => user.phase = Phase::Room,
            // `session_replaced`: the waiting lease is lost.
            (Phase::Room | Phase::RoomWait, None) => self.room_decided(user, false),
            // `Lease::is_lost`.
            (_, None) => user.holds = false,
            _ => {}
        }
        let was = user.mutex.phase;
        self.mutex().on_event(&mut user.mutex, event);
        self.after_mutex(was, user);
    }

    fn on_disconnect(&self, _me: Me, user: &mut User, _ghost: &mut Ghost) {
        self.mutex().on_disconnect(&mut user.mutex);
    }

    fn observe(&self, state: &mut State<Self>) {
        let held = live_holders(state) as u8;
        state.ghost.most = state.ghost.most.max(held);
    }

    fn done(&self, user: &User) -> bool {
        user.phase == Phase::Done
    }

    fn properties(&self) -> Vec<Property<Checked<Self>>> {
        let mut properties = vec![
            Property::always(
                "at most max leases held by users whose lease sessions live",
                |m: &Checked<Self>, s: &State<Self>| live_holders(s) <= usize::from(m.0.max),
            ),
            Property::sometimes("max leases held at once", |m: &Checked<Self>, s: &State<Self>| {
                s.ghost.most >= m.0.max
            }),
        ];
        if self.strict {
            properties.push(Property::always(
                "at most max users believe they hold a lease",
                |m: &Checked<Self>, s: &State<Self>| {
                    s.users.iter().filter(|u| u.user.holds).count() <= usize::from(m.0.max)
                },
            ));
        }
        properties
    }
}

/// Users holding a lease whose session lives.
fn live_holders(s: &State<Semaphore>) -> usize {
    s.users.iter().filter(|u| u.user.holds && s.server.alive(u.user.lease.map_or(0, |l| l.1))).count()
}

impl crate::symmetry::Symmetric for Semaphore {
    fn user(user: &User, map: &crate::symmetry::Map) -> User {
        User {
            mutex: crate::symmetry::contender(&user.mutex, map),
            lease: user.lease.map(|(p, s)| (map.path(p), map.sid(s))),
            ..*user
        }
    }
}
