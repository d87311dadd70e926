//! The barrier's steps: how a member reads a listing, passes, names its nodes and writes
//! `ready`; the recipe's callbacks (`super`) call them.

use super::{member, Barrier, Ghost, Phase, User, DIR, READY};
use crate::bugs::{Bug, Fix};
use crate::world::Me;
use crate::zk::{Mode, Name, Op, Server, Stat, Zxid};

impl Barrier {
    pub(super) fn on(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }

    /// double.rs, `step`: what a snapshot tells an entering member.
    pub(super) fn on_listing(
        &self,
        me: Me,
        user: &mut User,
        listing: &[(Name, Stat)],
        (named, marked): (u8, u8),
        ghost: &mut Ghost,
    ) {
        let find = |name: Name| listing.iter().find(|(n, _)| *n == name).map(|(_, s)| *s);
        let mine = self.name(me.user, user.left);
        let Some(ours) = find(member(mine).name) else {
            user.phase = Phase::Wait;
            return;
        };
        let entered_at = if self.on(Bug::BarrierRoundFromCurrentNode) {
            ours.czxid
        } else {
            user.first.unwrap_or(ours.czxid).min(ours.czxid)
        };
        let members =
            listing.iter().filter(|(n, _)| matches!(n, Name::Indexed(..))).fold(0u8, |bits, (n, _)| {
                bits | match n {
                    Name::Indexed(_, i) => 1 << i,
                    _ => 0,
                }
            });
        let ready = find(READY.name);
        // The fix: a `ready` that names our node, newer than the last we passed, is ours
        // (window 4); members that a stale `ready` names, or whose node is marked as passed,
        // have not left an earlier round and do not count for this one (window 5).
        let fixed = self.fixed();
        let names_us = fixed && named & (1 << mine) != 0 && ready.is_some_and(|r| r.czxid > user.ready);
        let members = match (fixed, ready.is_some() && !names_us) {
            (false, _) => members,
            (true, true) => members & !named & !marked,
            (true, false) => members & !marked,
        };
        // The leave record: members it names are of that round, and pass by it.
        let (round, recorded_names) = ((user.record >> 8) as Zxid, user.record as u8);
        let members = if self.recorded() { members & !recorded_names } else { members };
        let quota = members.count_ones() >= u32::from(self.qty);
        let counted_us = ready.is_some_and(|r| {
            ghost.counted.0 == r.czxid && ghost.counted.1 & (1 << mine) != 0 && r.czxid > user.ready
        });
        let passes = ready.is_some_and(|r| r.czxid > entered_at || names_us);
        ghost.missed_ready |= counted_us && !passes;
        // The leave record: the round that counted our first node, whose members left and
        // deleted its `ready` before we saw it.
        // (A member's name is new for each round, so a record naming it is of this round.)
        let recorded = self.recorded() && !passes && recorded_names & (1 << mine) != 0 && round > user.ready;
        user.phase = match ready {
            _ if recorded => return self.pass(user, round, recorded_names, ghost),
            Some(ready) if passes => return self.pass(user, ready.czxid, named, ghost),
            Some(stale) if quota => Phase::Ready(members, Some(stale.version)),
            None if quota => Phase::Ready(members, None),
            _ => Phase::Wait,
        };
    }

    /// `user` passes by the `ready` (or recorded round) of czxid `ready`, which named `names`
    /// (a bit each; none for a `ready` that names nobody).
    pub(super) fn pass(&self, user: &mut User, ready: Zxid, names: u8, ghost: &mut Ghost) {
        ghost.passes = ghost.passes.saturating_add(1);
        user.ready = ready;
        // The leave record's names per round: the leave waits for its round's members only.
        user.round = if self.recorded() { names } else { 0 };
        // The fix: the mark is the node's data from here on (`PersistentNode::set_data` keeps
        // it for a node made again), then written to the node there is.
        user.marked = self.fixed();
        user.phase = if self.fixed() { Phase::Mark } else { Phase::Delete };
    }

    pub(super) fn fixed(&self) -> bool {
        matches!(self.fix, Some(Fix::BarrierReadyNamesMembers | Fix::BarrierLeaveRecord))
    }

    pub(super) fn recorded(&self) -> bool {
        self.fix == Some(Fix::BarrierLeaveRecord)
    }

    /// The name of `user`'s member node with `left` rounds to go: with the leave record, new for
    /// each round (two names, taken in turn), so that a stale create-ready's check of an
    /// earlier round's node fails on the next round's.
    pub(super) fn name(&self, user: u8, left: u8) -> u8 {
        if self.recorded() {
            user | (left % 2) << 2
        } else {
            user
        }
    }

    pub(super) fn ready_ops(&self, members: u8, stale: Option<u8>, root_version: u8) -> Vec<Op> {
        let mut ops: Vec<Op> = (0..8)
            .filter(|i| members & (1 << i) != 0)
            .map(|i| Op::Check { path: member(i), version: None })
            .collect();
        // The leave record: no round recorded since the view the quota was counted in (its
        // members may be counted again in a later round's nodes).
        if self.recorded() {
            ops.push(Op::Check { path: DIR, version: Some(root_version) });
        }
        if let Some(version) = stale {
            ops.push(Op::Delete { path: READY, version: Some(version) });
        }
        // The fix: `ready` holds the members it counted (Curator and kazoo never read it).
        let data = if self.fixed() { u32::from(members) } else { 0 };
        ops.push(Op::Create { path: READY, mode: Mode::Persistent, data });
        ops
    }

    /// Where an entering member reads the barrier: the barrier node first with the leave record.
    pub(super) fn list(&self) -> Phase {
        if self.recorded() {
            Phase::Root
        } else {
            Phase::List
        }
    }

    /// A leave deleted `ready` (at `version`, or any): was it another round's than it read?
    pub(super) fn on_ready_deleted(user: u8, version: Option<u8>, before: &Server, ghost: &mut Ghost) {
        let read = ghost.read_ready[usize::from(user)];
        let other = before.nodes.get(&READY).is_some_and(|n| n.czxid != read);
        match version {
            Some(_) => ghost.version_reuse |= other,
            None => ghost.foreign_delete |= other,
        }
    }

    pub(super) fn round_done(user: &mut User) {
        user.left -= 1;
        user.round = 0;
        user.first = None;
        user.marked = false;
        user.phase = if user.left == 0 { Phase::Done } else { Phase::Create };
    }

    /// Has a member of the round of `ready` other than `me` not begun to leave? (Its node was
    /// first made before that `ready`, or, not knowing when, it has not passed by it yet; and it
    /// has not deleted its node.)
    pub(super) fn round_not_left(users: &[User], me: usize, ready: Zxid) -> bool {
        users.iter().enumerate().any(|(v, u)| {
            let this_round = match u.first {
                Some(first) => first < ready,
                None => u.ready < ready,
            };
            v != me && u.entered && this_round
        })
    }
}
