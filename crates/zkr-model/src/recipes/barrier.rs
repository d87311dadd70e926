//! The double barrier (`barriers/double.rs`, `DistributedDoubleBarrier`): ephemeral member
//! nodes kept through an expiry (a `PersistentNode`), `ready` created in one transaction with
//! a check of every member counted, the round told by `ready`'s czxid against the member's
//! first node's, a leaver deleting only its round's `ready` at the version read.
//!
//! The waits follow a cache of the barrier's children (`crate::cache::wait_confirmed`): here a
//! listing with a child watch, listed again when it fires or the session changes.

use stateright::Property;

use crate::bugs::{Bug, Bugs, Fixes};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{
    Event, EventKind, Mode, Name, Op, OpResult, Path, Reply, Request, Server, Stat, ZkError, Zxid,
};

mod steps;

/// The barrier's node.
pub const DIR: Path = Path::top("barrier");
/// `ready`.
pub const READY: Path = DIR.child(Name::Fixed("ready"));

/// The member node named `index` ([`Barrier::name`]).
fn member(index: u8) -> Path {
    DIR.child(Name::Indexed("m", index))
}

/// The user whose member node is named `index`.
fn user_of(index: u8) -> u8 {
    index & 3
}

/// The double barrier checked with these members.
#[derive(Clone, Debug)]
pub struct Barrier {
    /// Each member's client and its number of rounds.
    pub users: Vec<(u8, u8)>,
    /// The quota (`member_qty`).
    pub qty: u8,
    /// The faults.
    pub faults: Faults,
    /// A defect to re-introduce.
    pub bug: Bugs,
    /// Check "nobody leaves before all left" without the known window's excuse.
    pub strict_leave: bool,
    /// Check that no member waits forever (off for a configuration whose rounds need not pair
    /// up: more members than the quota, so one can be left without a partner).
    pub liveness: bool,
    /// A fix to make (proposed for `barriers/double.rs`, not made there).
    pub fix: Fixes,
}

/// Where a member is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Create the member node (`PersistentNode::builder(.., Ephemeral)`).
    Create,
    /// List the barrier, with a watch (the cache's snapshot).
    List,
    /// Wait for the children to change.
    Wait,
    /// The create-ready transaction (`create_ready`): the members counted (a bit each), the
    /// stale `ready`'s version if one is replaced.
    Ready(u8, Option<u8>),
    /// The leave record: read the barrier node's data (the round recorded), with a data watch
    /// (the cache holds the barrier node too), before the listing.
    Root,
    /// The fix: mark our node as passed (`PersistentNode::set_data` with the `ready`'s czxid:
    /// a node made again after an expiry carries it too).
    Mark,
    /// Leave: delete the member node (`leave_by`, `drop(node)`).
    Delete,
    /// Leaving: list until no member is left.
    LeaveList,
    /// Leaving: wait for the children to change.
    LeaveWait,
    /// `delete_ready`: read `ready`'s stat.
    ReadReady,
    /// `delete_ready`: delete it at the version read.
    DeleteReady(Option<u8>),
    /// All rounds done.
    Done,
}

/// A member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct User {
    /// Rounds left.
    pub left: u8,
    /// Where it is.
    pub phase: Phase,
    /// The czxid of this round's first node (`PersistentNode::first_czxid`).
    pub first: Option<Zxid>,
    /// The member node must exist (entered, not left): the `PersistentNode` makes it again
    /// after an expiry.
    pub entered: bool,
    /// The node is to be made again on the new session.
    pub remake: bool,
    /// The czxid of the `ready` passed by.
    pub ready: Zxid,
    /// The fix: our node's data marks it as passed (by `ready`).
    pub marked: bool,
    /// The leave record: the barrier node's data read last (`record`).
    pub record: u32,
    /// The leave record: the version of the barrier node's data read last.
    pub root_version: u8,
    /// The leave record: the members the `ready` read by `delete_ready` named (a bit each).
    pub named: u8,
    /// The leave record: the members of the round passed (a bit each; 0: not known).
    pub round: u8,
    /// The leave record: the barrier node's data changed while the listing was on its way (the
    /// cache reads it again).
    pub reread: bool,
}

/// The leave record: the barrier node's data naming the round of `ready` (czxid) and its
/// members (a bit each).
fn record(ready: Zxid, members: u8) -> u32 {
    u32::from(ready) << 8 | u32::from(members)
}

/// What the properties look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// A `ready` was created while fewer than the quota of members existed.
    pub early_ready: bool,
    /// A member finished leaving while another of its round had not begun to leave.
    pub early_leave: bool,
    /// A member made its next round's node while a member of its last round had not finished
    /// leaving (its node not deleted yet, or the barrier not seen empty).
    pub reentered: bool,
    /// A member's node was made again after an expiry before it learnt its first node's czxid
    /// (that create's reply was lost with the session).
    pub first_unknown: bool,
    /// The czxid of the `ready` each member's leave read last.
    pub read_ready: [Zxid; 4],
    /// A leave's delete at the version it read removed a newer `ready` made at that version
    /// between its read and its delete (the layout has no round number: documented).
    pub version_reuse: bool,
    /// A member that had passed made its node again after an expiry, before its leave deleted
    /// it: a node the next round counts as a member.
    pub stale_member: bool,
    /// A leave deleted, without a version, a `ready` it did not pass by.
    pub foreign_delete: bool,
    /// Passes so far.
    pub passes: u8,
    /// Members that passed and have not deleted their node yet (a bit each).
    pub passed: u8,
    /// A `ready` was made counting a member that had passed an earlier one and not left.
    pub stale_counted: bool,
    /// The czxid of the last `ready` made and the members it counted (a bit each).
    pub counted: (Zxid, u8),
    /// A member that the `ready` it saw had counted did not pass by it.
    pub missed_ready: bool,
}

impl Recipe for Barrier {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        let clients = self.users.iter().map(|(c, _)| *c).max().map_or(0, |c| c + 1);
        let user = |rounds| User {
            left: rounds,
            phase: Phase::Create,
            first: None,
            entered: false,
            remake: false,
            ready: 0,
            marked: false,
            record: 0,
            root_version: 0,
            named: 0,
            round: 0,
            reread: false,
        };
        Setup {
            nodes: vec![(DIR, Mode::Persistent, 0)],
            clients,
            users: self.users.iter().map(|(c, rounds)| (*c, user(*rounds))).collect(),
        }
    }

    fn faults(&self) -> Faults {
        self.faults
    }

    fn step(&self, me: Me, user: &mut User, _ghost: &mut Ghost) -> Step {
        let data = if user.marked { u32::from(user.ready) } else { 0 };
        let mine = member(self.name(me.user, user.left));
        let create = Request::Write(Op::Create { path: mine, mode: Mode::Ephemeral, data });
        // nodes/persistent.rs: the node is made again on the new session.
        if user.remake && user.entered {
            return Step::Send(create, None);
        }
        match user.phase {
            Phase::Create => {
                user.entered = true;
                Step::Send(create, None)
            }
            Phase::Root => Step::Send(Request::GetData { path: DIR, watch: true }, None),
            // The fix reads the cache's data too (`CacheMode::Children` holds it).
            Phase::List if self.fixed() => Step::Send(Request::ChildrenData { path: DIR, watch: true }, None),
            Phase::List | Phase::LeaveList => Step::Send(Request::Children { path: DIR, watch: true }, None),
            Phase::Wait | Phase::LeaveWait | Phase::Done => Step::Blocked,
            Phase::Ready(members, stale) => {
                Step::Send(Request::Multi(self.ready_ops(members, stale, user.root_version)), None)
            }
            Phase::Mark => {
                let data = u32::from(user.ready);
                Step::Send(Request::Write(Op::SetData { path: mine, data, version: None }), None)
            }
            Phase::Delete => {
                user.entered = false;
                Step::Send(Request::Write(Op::Delete { path: mine, version: None }), None)
            }
            // The leave record needs the names in `ready`'s data.
            Phase::ReadReady if self.recorded() => {
                Step::Send(Request::GetData { path: READY, watch: false }, None)
            }
            Phase::ReadReady => Step::Send(Request::Exists { path: READY, watch: false }, None),
            Phase::DeleteReady(version @ Some(_)) if self.recorded() => {
                let delete = Op::Delete { path: READY, version };
                let data = record(user.ready, user.named);
                Step::Send(Request::Multi(vec![delete, Op::SetData { path: DIR, data, version: None }]), None)
            }
            Phase::DeleteReady(version) => {
                Step::Send(Request::Write(Op::Delete { path: READY, version }), None)
            }
        }
    }

    fn on_reply(&self, me: Me, user: &mut User, reply: Reply, ghost: &mut Ghost) {
        let lost = reply == Reply::Err(ZkError::ConnectionLoss);
        if user.remake && user.entered {
            // The remade node: its czxid is newer than the round's first, which the member
            // may never have learnt (the first create's reply lost with the session).
            match reply {
                Reply::Write(OpResult::Created(_, stat)) => {
                    user.remake = false;
                    ghost.stale_member |= matches!(user.phase, Phase::Mark | Phase::Delete);
                    ghost.first_unknown |= user.first.is_none();
                    user.first = user.first.or(Some(stat.czxid));
                }
                Reply::Err(ZkError::NodeExists) => {
                    user.remake = false;
                    ghost.first_unknown |= user.first.is_none();
                }
                _ => {}
            }
            return;
        }
        match (user.phase, reply) {
            (Phase::Create, Reply::Write(OpResult::Created(_, stat))) => {
                user.first = Some(stat.czxid);
                user.phase = self.list();
            }
            (Phase::Create, Reply::Err(ZkError::NodeExists)) => user.phase = self.list(),
            (Phase::Root, Reply::Data(data, stat)) => {
                user.record = data;
                user.root_version = stat.version;
                user.phase = Phase::List;
            }
            (Phase::List, Reply::Children(listing)) => self.on_listing(me, user, &listing, (0, 0), ghost),
            (Phase::List, Reply::ChildrenData(listing)) => {
                let named = listing.iter().find(|(n, ..)| *n == READY.name).map_or(0, |(_, _, d)| *d as u8);
                let marked = listing.iter().fold(0u8, |bits, (n, _, d)| match n {
                    Name::Indexed(_, i) if *d != 0 => bits | 1 << i,
                    _ => bits,
                });
                let listing: Vec<(Name, Stat)> = listing.iter().map(|(n, s, _)| (*n, *s)).collect();
                self.on_listing(me, user, &listing, (named, marked), ghost);
                if user.phase == Phase::Wait && user.reread {
                    user.phase = Phase::Root;
                }
                user.reread = false;
            }
            (Phase::Ready(counted, _), Reply::Multi(results)) => {
                let made = results.iter().find_map(|r| match r {
                    OpResult::Created(_, stat) => Some(stat.czxid),
                    OpResult::Done(_) => None,
                });
                match made {
                    Some(czxid) => self.pass(user, czxid, counted, ghost),
                    None => user.phase = self.list(),
                }
            }
            // Refused, or the outcome unknown: the cache shows which next.
            (Phase::Ready(..), _) => user.phase = self.list(),
            // `write_latest` retries a lost write; a missing node gets the data when made again.
            (Phase::Mark, _) if !lost => user.phase = Phase::Delete,
            (Phase::Delete, _) if !lost => user.phase = Phase::LeaveList,
            (Phase::LeaveList, Reply::Children(listing)) => {
                // A member of a later round is not waited for (its name is new), once the
                // round's members are known.
                // (Or older than the round's `ready`: it passed by it uncounted.)
                let ours =
                    |i: u8, s: &Stat| user.round == 0 || user.round & (1 << i) != 0 || s.czxid < user.ready;
                let members = listing.iter().any(|(n, s)| matches!(n, Name::Indexed(_, i) if ours(*i, s)));
                user.phase = if members { Phase::LeaveWait } else { Phase::ReadReady };
            }
            // double.rs, `delete_ready`: only our round's `ready`, at the version read.
            (Phase::ReadReady, Reply::Exists(Some(_))) if self.on(Bug::BarrierDeleteAnyReady) => {
                ghost.read_ready[usize::from(me.user)] = user.ready;
                user.phase = Phase::DeleteReady(None);
            }
            (Phase::ReadReady, Reply::Exists(Some(stat))) if stat.czxid == user.ready => {
                ghost.read_ready[usize::from(me.user)] = stat.czxid;
                user.phase = Phase::DeleteReady(Some(stat.version));
            }
            (Phase::ReadReady, Reply::Data(named, stat)) if stat.czxid == user.ready => {
                ghost.read_ready[usize::from(me.user)] = stat.czxid;
                user.named = named as u8;
                user.phase = Phase::DeleteReady(Some(stat.version));
            }
            (Phase::ReadReady, Reply::Exists(_) | Reply::Data(..) | Reply::Err(ZkError::NoNode)) => {
                Self::round_done(user)
            }
            (Phase::DeleteReady(_), _) if !lost => Self::round_done(user),
            // A lost connection: the cache lists again, the retry loops resend.
            _ => {}
        }
    }

    fn on_event(&self, _me: Me, user: &mut User, event: Option<Event>, _ghost: &mut Ghost) {
        if event.is_none() && user.entered {
            user.remake = true;
        }
        let record_changed = event.is_some_and(|e| e.path == DIR && e.kind == EventKind::DataChanged);
        user.reread |= self.recorded() && user.phase == Phase::List && record_changed;
        // A new session: the cache reads the barrier node again too (its watch was lost).
        if self.recorded() && event.is_none() && user.phase == Phase::List {
            user.phase = Phase::Root;
        }
        user.phase = match user.phase {
            Phase::Wait => self.list(),
            Phase::LeaveWait => Phase::LeaveList,
            other => other,
        };
    }

    fn on_apply(&self, user: u8, request: &Request, reply: &Reply, before: &Server, ghost: &mut Ghost) {
        match (request, reply) {
            (Request::Multi(ops), Reply::Multi(_))
                if ops.iter().any(|op| matches!(op, Op::Create { path, .. } if *path == READY)) =>
            {
                let members =
                    before.children(DIR).filter(|(p, _)| matches!(p.name, Name::Indexed(..))).count();
                ghost.early_ready |= members < usize::from(self.qty);
                let counted = |op: &Op| match op {
                    Op::Check { path: Path { name: Name::Indexed(_, i), .. }, .. } => {
                        ghost.passed & (1 << user_of(*i)) != 0
                    }
                    _ => false,
                };
                // Not after a `ready` version reuse (window 3), whose consequences are its own.
                ghost.stale_counted |= !ghost.version_reuse && ops.iter().any(counted);
                let members = ops.iter().fold(0u8, |bits, op| match op {
                    Op::Check { path: Path { name: Name::Indexed(_, i), .. }, .. } => bits | 1 << i,
                    _ => bits,
                });
                let made = match reply {
                    Reply::Multi(results) => results.iter().find_map(|r| match r {
                        OpResult::Created(_, stat) => Some(stat.czxid),
                        OpResult::Done(_) => None,
                    }),
                    _ => None,
                };
                ghost.counted = (made.unwrap_or(0), members);
            }
            (Request::Write(Op::Delete { path, version }), Reply::Write(_)) if *path == READY => {
                Self::on_ready_deleted(user, *version, before, ghost);
            }
            // The leave record's transaction.
            (Request::Multi(ops), Reply::Multi(_)) => {
                if let Some(Op::Delete { version, .. }) =
                    ops.iter().find(|op| matches!(op, Op::Delete { path, .. } if *path == READY))
                {
                    Self::on_ready_deleted(user, *version, before, ghost);
                }
            }
            _ => {}
        }
    }

    fn observe(&self, state: &mut State<Self>) {
        state.ghost.passed = state
            .users
            .iter()
            .enumerate()
            .filter(|(_, u)| matches!(u.user.phase, Phase::Mark | Phase::Delete))
            .fold(0, |bits, (i, _)| bits | 1 << i);
        if !no_early_leave(self, state) {
            state.ghost.early_leave = true;
        }
        if !no_early_reentry(self, state) {
            state.ghost.reentered = true;
        }
    }

    fn excuse_hang(&self, ghost: &Ghost) -> bool {
        // The known window (docs/reliability.md): a leaver that saw no member while one was
        // between sessions has left, and that member may wait for a quota that is gone.
        // The leave record closes window 1's hang and window 2's (names per round: a leaver
        // does not wait for a later round's node).
        let known = (ghost.early_leave && !self.recorded())
            || (ghost.reentered && !self.recorded())
            || ghost.first_unknown
            || ghost.version_reuse
            || ghost.stale_member;
        !self.liveness || (known && !self.strict_leave)
    }

    fn done(&self, user: &User) -> bool {
        user.phase == Phase::Done
    }

    fn properties(&self) -> Vec<Property<Checked<Self>>> {
        let mut properties = vec![
            Property::always(
                "nobody passes before the quota: ready made only with the quota there",
                |_, s: &State<Self>| !s.ghost.early_ready,
            ),
            Property::sometimes("a member passes", |_, s: &State<Self>| s.ghost.passes > 0),
            Property::always("a leaver deletes no other round's ready unversioned", |_, s: &State<Self>| {
                !s.ghost.foreign_delete
            }),
        ];
        if self.strict_leave {
            properties.push(Property::always(
                "nobody leaves before all of its round left",
                |m: &Checked<Self>, s: &State<Self>| !s.ghost.early_leave && no_early_leave(&m.0, s),
            ));
            properties.push(Property::always(
                "every member knows its first node's czxid when it is made again",
                |_, s: &State<Self>| !s.ghost.first_unknown,
            ));
            properties.push(Property::always(
                "no member that passed makes its node again",
                |_, s: &State<Self>| !s.ghost.stale_member,
            ));
            properties.push(Property::always(
                "a member that a ready counted passes by it when it sees it",
                |_, s: &State<Self>| !s.ghost.missed_ready,
            ));
            properties.push(Property::always(
                "no ready counts a member that passed another and has not left",
                |_, s: &State<Self>| !s.ghost.stale_counted,
            ));
            properties.push(Property::always(
                "a leaver deletes only its own round's ready",
                |_, s: &State<Self>| !s.ghost.version_reuse,
            ));
            properties.push(Property::always(
                "nobody enters the next round while a leaver of the last waits",
                |m: &Checked<Self>, s: &State<Self>| !s.ghost.reentered && no_early_reentry(&m.0, s),
            ));
        }
        properties
    }
}

/// No member has finished leaving while another of its round (whose node was first made
/// before the `ready` it passed by) has not begun to.
fn no_early_leave(_: &Barrier, s: &State<Barrier>) -> bool {
    let users: Vec<User> = s.users.iter().map(|u| u.user).collect();
    users.iter().enumerate().all(|(u, user)| {
        let finished = matches!(user.phase, Phase::ReadReady | Phase::DeleteReady(_));
        !finished || !Barrier::round_not_left(&users, u, user.ready)
    })
}

/// No member has made a later round's node (newer than the `ready` a member passed by, or not
/// known yet after passing by that one) while that member has not finished leaving (its node
/// not deleted yet, or the barrier not seen empty).
fn no_early_reentry(_: &Barrier, s: &State<Barrier>) -> bool {
    let waiting =
        |u: &User| matches!(u.phase, Phase::Mark | Phase::Delete | Phase::LeaveList | Phase::LeaveWait);
    let later = |u: &User, ready: Zxid| match u.first {
        Some(first) => first > ready,
        None => u.ready >= ready,
    };
    s.users
        .iter()
        .all(|v| !waiting(&v.user) || !s.users.iter().any(|u| u.user.entered && later(&u.user, v.user.ready)))
}
