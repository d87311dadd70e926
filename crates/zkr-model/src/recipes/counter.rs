//! The counter's compare-and-set (`counters/atomic_value.rs`, `DistributedAtomicValue`): an
//! increment is a read and a write at the version read (`try_once`), tried again when another
//! writer came first; a write whose reply was lost is resent (`retry_write`), and a resend
//! that loses the race is `Indeterminate` (`counters/mod.rs`, `CounterError::after_write`):
//! the first send may have applied.

use stateright::Property;

use crate::bugs::{Bug, Bugs};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{Event, Mode, Op, Path, Reply, Request, Server, ZkError};

/// The counter's node.
pub const NODE: Path = Path::top("counter");

/// The counter checked with these users and faults.
#[derive(Clone, Debug)]
pub struct Counter {
    /// Each user's client.
    pub users: Vec<u8>,
    /// Increments per user.
    pub ops: u8,
    /// The faults.
    pub faults: Faults,
    /// A defect to re-introduce.
    pub bug: Bugs,
}

/// Where a user is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Read the value (`read`).
    Read,
    /// Write `value` at `version` (`set_versioned`), sent `sends` times so far.
    Write {
        /// The value read plus one.
        value: u32,
        /// The version read.
        version: u8,
        /// Sends so far.
        sends: u8,
    },
    /// All increments reported.
    Done,
}

/// A user of the counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct User {
    /// Increments left.
    pub left: u8,
    /// Where it is.
    pub phase: Phase,
}

/// What the properties look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// Writes the server applied, per user.
    pub applied: [u8; 3],
    /// Increments reported applied, per user.
    pub reported: [u8; 3],
    /// Increments reported indeterminate, per user.
    pub unknown: [u8; 3],
    /// The values increments reported applied replaced (a bit each): two alike would not be
    /// linearizable.
    pub pres: u32,
    /// Two reported increments replaced the same value.
    pub same_pre: bool,
}

impl Counter {
    fn finish(user: &mut User) {
        user.left -= 1;
        user.phase = if user.left == 0 { Phase::Done } else { Phase::Read };
    }
}

impl Recipe for Counter {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        let clients = self.users.iter().copied().max().map_or(0, |c| c + 1);
        let user = User { left: self.ops, phase: Phase::Read };
        Setup {
            nodes: vec![(NODE, Mode::Persistent, 0)],
            clients,
            users: self.users.iter().map(|c| (*c, user)).collect(),
        }
    }

    fn faults(&self) -> Faults {
        self.faults
    }

    fn step(&self, _me: Me, user: &mut User, _ghost: &mut Ghost) -> Step {
        match user.phase {
            // atomic_value.rs, `read`: under the retry loop, on any session.
            Phase::Read => Step::Send(Request::GetData { path: NODE, watch: false }, None),
            // atomic_value.rs, `set_versioned`: `retry_write` counts the sends.
            Phase::Write { value, version, sends } => {
                user.phase = Phase::Write { value, version, sends: sends + 1 };
                Step::Send(
                    Request::Write(Op::SetData { path: NODE, data: value, version: Some(version) }),
                    None,
                )
            }
            Phase::Done => Step::Blocked,
        }
    }

    fn on_reply(&self, me: Me, user: &mut User, reply: Reply, ghost: &mut Ghost) {
        let u = usize::from(me.user);
        match (user.phase, reply) {
            (Phase::Read, Reply::Data(value, stat)) => {
                user.phase = Phase::Write { value: value + 1, version: stat.version, sends: 0 }
            }
            (Phase::Write { value, .. }, Reply::Write(_)) => {
                ghost.reported[u] += 1;
                let bit = 1u32 << (value - 1).min(31);
                ghost.same_pre |= ghost.pres & bit != 0;
                ghost.pres |= bit;
                Self::finish(user);
            }
            // counters/mod.rs, `CounterError::after_write`: a lost race on the first send is a
            // sure "not applied" (try again: `try_set`'s optimistic retry); after a resend it
            // may be our own first send that won.
            (Phase::Write { sends, .. }, Reply::Err(ZkError::BadVersion)) => {
                if sends > 1 && !self.on_bug() {
                    ghost.unknown[u] += 1;
                    Self::finish(user);
                } else {
                    user.phase = Phase::Read;
                }
            }
            // The retry loops resend after a lost connection.
            _ => {}
        }
    }

    fn on_event(&self, _me: Me, _user: &mut User, _event: Option<Event>, _ghost: &mut Ghost) {}

    fn on_apply(&self, user: u8, request: &Request, reply: &Reply, _before: &Server, ghost: &mut Ghost) {
        if let (Request::Write(Op::SetData { .. }), Reply::Write(_)) = (request, reply) {
            ghost.applied[usize::from(user)] += 1;
        }
    }

    fn done(&self, user: &User) -> bool {
        user.phase == Phase::Done
    }

    fn properties(&self) -> Vec<Property<Checked<Self>>> {
        vec![
            Property::always("every increment reported applied was, once", |_, s: &State<Self>| {
                s.users.iter().enumerate().all(|(u, slot)| {
                    let g = &s.ghost;
                    let in_flight =
                        u8::from(matches!(slot.user.phase, Phase::Write { sends, .. } if sends > 0));
                    g.reported[u] <= g.applied[u] && g.applied[u] <= g.reported[u] + g.unknown[u] + in_flight
                })
            }),
            Property::always("reported increments replaced distinct values", |_, s: &State<Self>| {
                !s.ghost.same_pre
            }),
            Property::sometimes("an increment is reported", |_, s: &State<Self>| {
                s.ghost.reported.iter().any(|r| *r > 0)
            }),
        ]
    }
}

impl Counter {
    fn on_bug(&self) -> bool {
        self.bug == Some(Bug::CounterLostReplyNotApplied)
    }
}

impl crate::symmetry::Symmetric for Counter {
    fn user(user: &User, _map: &crate::symmetry::Map) -> User {
        *user
    }

    /// The per-user counts move with their users.
    fn ghost(ghost: &Ghost, map: &crate::symmetry::Map) -> Ghost {
        let mut moved = ghost.clone();
        for u in 0..3u8 {
            let to = usize::from(map.user(u)).min(2);
            moved.applied[to] = ghost.applied[usize::from(u)];
            moved.reported[to] = ghost.reported[usize::from(u)];
            moved.unknown[to] = ghost.unknown[usize::from(u)];
        }
        moved
    }
}
