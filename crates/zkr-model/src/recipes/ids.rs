//! The sequential ID generator (`id/sequential.rs`, `SequentialIdGenerator`): an ID is an
//! epoch node's sequential child's counter under that epoch; a full epoch moves every
//! generator to the next; every ID is recorded in the high-water record, by compare-and-set,
//! before it is handed out (`record`), and one at or below the record is dropped (overtaken)
//! or moves the generator to a new epoch (the counter went back).
//!
//! Layout: the generator's path is the root here (the model's paths have two levels): epochs
//! are `/epoch-N`, IDs `/epoch-N/id-SEQ`, the record `/high-water`. One draw is one ID (zkr
//! draws batches; a batch of one keeps its steps). An administrator may delete an epoch node
//! and create it again once (the `Admin` user): its counter starts over, the case the record
//! exists for.

use stateright::Property;

use crate::bugs::{Bug, Bugs};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{Event, Mode, Name, Op, OpResult, Path, Reply, Request, Server, Stat, ZkError, Zxid, ROOT};

const EPOCHS: [&str; 4] = ["epoch-0", "epoch-1", "epoch-2", "epoch-3"];
/// The high-water record.
pub const HIGH_WATER: Path = Path::top("high-water");

fn epoch(e: u8) -> Path {
    Path::top(EPOCHS[usize::from(e.min(3))])
}

fn epoch_of(name: Name) -> Option<u8> {
    EPOCHS.iter().position(|e| name == Name::Fixed(e)).map(|e| e as u8)
}

/// An ID: its epoch and sequence, ordered as `compose(epoch, sequence)`.
fn id(epoch: u8, seq: u8) -> u32 {
    u32::from(epoch) * 16 + u32::from(seq)
}

/// The record's data: the zxid of the recorded draw and the ID.
fn record(zxid: Zxid, id: u32) -> u32 {
    (u32::from(zxid) << 8) | id
}

fn parse(data: u32) -> (Zxid, u32) {
    ((data >> 8) as Zxid, data & 0xff)
}

/// The generator checked with these users.
#[derive(Clone, Debug)]
pub struct Ids {
    /// Each generator's client.
    pub users: Vec<u8>,
    /// IDs each generator hands out.
    pub ids: u8,
    /// Sequences per epoch (`with_epoch_capacity`).
    pub capacity: u8,
    /// An administrator deletes an epoch node and creates it again (on a client of its own).
    pub reset: bool,
    /// The faults.
    pub faults: Faults,
    /// A defect to re-introduce.
    pub bug: Bugs,
}

/// Where a generator is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// `current_epoch`/`newest_epoch`: list the epochs; moving past a full one when `Some`.
    Epochs(Option<u8>),
    /// `create_epoch`: create this epoch (`create_if_absent`).
    CreateEpoch(u8),
    /// `create_all`: create an ID node.
    Draw,
    /// `record`: read the record, for the ID drawn at this zxid.
    Read(u32, Zxid),
    /// `record`: write it (at the version read, or create it).
    Write(u32, Zxid, Option<u8>),
    /// Handed out all its IDs (or ran out of epochs).
    Done,
    /// The administrator: list the epoch's children.
    AdminList,
    /// The administrator: delete them (their sequences, a bit each) and the epoch, create it
    /// again.
    AdminReset(u16),
}

/// A generator (or the administrator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct User {
    /// IDs left.
    pub left: u8,
    /// Where it is.
    pub phase: Phase,
    /// The cached epoch.
    pub epoch: Option<u8>,
    /// The largest ID handed out (plus one) when this request for an ID began: the ID must
    /// be above it (an ID handed out before the request began is smaller; requests that
    /// overlap may be ordered either way).
    pub floor: u32,
}

/// What the properties look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// The largest ID handed out, plus one (0: none).
    pub max: u32,
    /// An ID was handed out at or below one handed out before its request began.
    pub back: bool,
    /// IDs handed out (a bit each).
    pub seen: u64,
    /// An ID was handed out twice.
    pub twice: bool,
    /// IDs handed out.
    pub handed: u8,
}

impl Ids {
    fn on(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }

    /// `set_epoch`: the cached epoch only grows.
    fn set_epoch(user: &mut User, e: u8) {
        user.epoch = Some(user.epoch.map_or(e, |c| c.max(e)));
        user.phase = Phase::Draw;
    }

    fn on_epochs(user: &mut User, past: Option<u8>, listing: &[(Name, Stat)]) {
        let newest = listing.iter().filter_map(|(n, _)| epoch_of(*n)).max();
        match (past, newest) {
            (None, Some(e)) => Self::set_epoch(user, e),
            (None, None) => user.phase = Phase::CreateEpoch(0),
            (Some(full), Some(e)) if e > full => Self::set_epoch(user, e),
            (Some(full), _) if full >= 3 => user.phase = Phase::Done,
            (Some(full), _) => user.phase = Phase::CreateEpoch(full + 1),
        }
    }

    fn on_drawn(&self, user: &mut User, path: Path, czxid: Zxid, ghost: &mut Ghost) {
        let (Some(e), Name::Seq(_, seq)) = (user.epoch, path.name) else { return };
        if seq >= self.capacity {
            user.phase = Phase::Epochs(Some(e));
        } else if self.on(Bug::IdsNoHighWater) {
            // Without the record (the bug): handed out as drawn.
            Self::hand_out(user, id(e, seq), ghost);
        } else {
            user.phase = Phase::Read(id(e, seq), czxid);
        }
    }

    /// `record`'s verdict on the record read.
    fn on_record(user: &mut User, drawn: u32, zxid: Zxid, data: u32, version: u8, ghost: &mut Ghost) {
        let (mark_zxid, mark) = parse(data);
        if mark == drawn && mark_zxid == zxid {
            Self::hand_out(user, drawn, ghost);
        } else if drawn <= mark && mark_zxid >= zxid {
            user.phase = Phase::Draw; // overtaken: drawn again
        } else if drawn <= mark {
            // `leave_epoch`: the counter went back; past the record's epoch.
            let e = user.epoch.unwrap_or(0).max((mark / 16) as u8);
            user.phase = Phase::Epochs(Some(e));
        } else {
            user.phase = Phase::Write(drawn, zxid.max(mark_zxid), Some(version));
        }
    }

    fn hand_out(user: &mut User, drawn: u32, ghost: &mut Ghost) {
        ghost.back |= drawn < user.floor;
        let bit = 1u64 << drawn.min(63);
        ghost.twice |= ghost.seen & bit != 0;
        ghost.seen |= bit;
        ghost.max = ghost.max.max(drawn + 1);
        user.floor = ghost.max;
        ghost.handed = ghost.handed.saturating_add(1);
        user.left -= 1;
        user.phase = if user.left == 0 { Phase::Done } else { Phase::Draw };
    }

    fn admin_step(user: &mut User) -> Step {
        match user.phase {
            Phase::AdminList => Step::Send(Request::Children { path: epoch(0), watch: false }, None),
            Phase::AdminReset(n) => {
                let mut ops: Vec<Op> = (0..16)
                    .filter(|seq| n & (1 << seq) != 0)
                    .map(|seq| Op::Delete { path: epoch(0).child(Name::Seq("id-", seq)), version: None })
                    .collect();
                ops.push(Op::Delete { path: epoch(0), version: None });
                ops.push(Op::Create { path: epoch(0), mode: Mode::Persistent, data: 0 });
                user.phase = Phase::Done;
                Step::Send(Request::Multi(ops), None)
            }
            _ => Step::Blocked,
        }
    }
}

impl Recipe for Ids {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        let mut clients = self.users.iter().copied().max().map_or(0, |c| c + 1);
        let generator = User { left: self.ids, phase: Phase::Epochs(None), epoch: None, floor: 0 };
        let mut users: Vec<(u8, User)> = self.users.iter().map(|c| (*c, generator)).collect();
        if self.reset {
            users.push((clients, User { left: 0, phase: Phase::AdminList, epoch: None, floor: 0 }));
            clients += 1;
        }
        Setup { nodes: vec![(ROOT, Mode::Persistent, 0)], clients, users }
    }

    fn faults(&self) -> Faults {
        self.faults
    }

    fn step(&self, _me: Me, user: &mut User, _ghost: &mut Ghost) -> Step {
        let write = |op| Step::Send(Request::Write(op), None);
        match user.phase {
            Phase::Epochs(_) => Step::Send(Request::Children { path: ROOT, watch: false }, None),
            Phase::CreateEpoch(e) => write(Op::Create { path: epoch(e), mode: Mode::Persistent, data: 0 }),
            // `create_all`: an EPHEMERAL_SEQUENTIAL child of the epoch.
            Phase::Draw => {
                let path = epoch(user.epoch.unwrap_or(0)).child(Name::Fixed("id-"));
                write(Op::Create { path, mode: Mode::EphemeralSequential, data: 0 })
            }
            Phase::Read(..) => Step::Send(Request::GetData { path: HIGH_WATER, watch: false }, None),
            Phase::Write(drawn, zxid, Some(version)) => {
                write(Op::SetData { path: HIGH_WATER, data: record(zxid, drawn), version: Some(version) })
            }
            Phase::Write(drawn, zxid, None) => {
                write(Op::Create { path: HIGH_WATER, mode: Mode::Persistent, data: record(zxid, drawn) })
            }
            Phase::Done => Step::Blocked,
            Phase::AdminList | Phase::AdminReset(_) => Self::admin_step(user),
        }
    }

    fn on_reply(&self, _me: Me, user: &mut User, reply: Reply, ghost: &mut Ghost) {
        use ZkError::{BadVersion, NoNode, NodeExists};
        match (user.phase, reply) {
            (Phase::Epochs(past), Reply::Children(listing)) => Self::on_epochs(user, past, &listing),
            (Phase::CreateEpoch(e), Reply::Write(_) | Reply::Err(NodeExists)) => Self::set_epoch(user, e),
            (Phase::Draw, Reply::Write(OpResult::Created(path, stat))) => {
                self.on_drawn(user, path, stat.czxid, ghost)
            }
            // The epoch node is gone: look again.
            (Phase::Draw, Reply::Err(NoNode)) => {
                user.epoch = None;
                user.phase = Phase::Epochs(None);
            }
            (Phase::Read(drawn, zxid), Reply::Data(data, stat)) => {
                Self::on_record(user, drawn, zxid, data, stat.version, ghost)
            }
            (Phase::Read(drawn, zxid), Reply::Err(NoNode)) => user.phase = Phase::Write(drawn, zxid, None),
            (Phase::Write(drawn, ..), Reply::Write(_)) => Self::hand_out(user, drawn, ghost),
            (Phase::Write(drawn, zxid, _), Reply::Err(BadVersion | NodeExists | NoNode)) => {
                user.phase = Phase::Read(drawn, zxid)
            }
            // A lost reply: `zk.retry` runs the closure again (reading the record afresh).
            (Phase::Write(drawn, zxid, _), Reply::Err(_)) => user.phase = Phase::Read(drawn, zxid),
            (Phase::AdminList, Reply::Children(listing)) => {
                let seqs = listing.iter().fold(0u16, |bits, (n, _)| match n {
                    Name::Seq(_, seq) => bits | (1 << (seq & 15)),
                    _ => bits,
                });
                user.phase = Phase::AdminReset(seqs);
            }
            (Phase::AdminList, Reply::Err(NoNode)) => user.phase = Phase::AdminList,
            _ => {}
        }
    }

    fn on_event(&self, _me: Me, _user: &mut User, _event: Option<Event>, _ghost: &mut Ghost) {}

    fn on_apply(&self, _user: u8, _request: &Request, _reply: &Reply, _before: &Server, _ghost: &mut Ghost) {}

    fn done(&self, user: &User) -> bool {
        user.phase == Phase::Done || matches!(user.phase, Phase::AdminList | Phase::AdminReset(_))
    }

    fn properties(&self) -> Vec<Property<Checked<Self>>> {
        vec![
            Property::always(
                "every ID is above every ID handed out before it was asked for",
                |_, s: &State<Self>| !s.ghost.back,
            ),
            Property::always("no ID is handed out twice", |_, s: &State<Self>| !s.ghost.twice),
            Property::sometimes("an ID is handed out", |_, s: &State<Self>| s.ghost.handed > 0),
        ]
    }
}

impl crate::symmetry::Symmetric for Ids {
    /// The administrator (nothing to hand out, no epoch) apart from the generators.
    fn class(user: &User) -> u8 {
        u8::from(user.left == 0 && user.epoch.is_none())
    }

    fn user(user: &User, _map: &crate::symmetry::Map) -> User {
        *user
    }
}
