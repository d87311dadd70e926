//! The mutex (`InterProcessMutex`): sequential ephemeral `lock-` nodes, a watch on the
//! predecessor, the guard's writes pinned to the owning session.
//!
//! Each user acquires `rounds` times; holding, it makes one guarded write (a `multi` checking
//! its node, pinned to its session, as `InterProcessMutexGuard::set_data`) and releases.

use stateright::Property;

use crate::bugs::{Bug, Bugs};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{Event, EventKind, Mode, Name, Op, Path, Reply, Request, Server, Sid, ZkError};

/// The lock's directory (a container, as zkr creates it).
pub const DIR: Path = Path::top("lock");
/// What the guarded writes write.
pub const RESOURCE: Path = Path::top("resource");
/// Protected contender names, one per user (Curator's `_c_<uuid>-lock-`).
const NAMES: [&str; 4] = ["_c_u0-lock-", "_c_u1-lock-", "_c_u2-lock-", "_c_u3-lock-"];

/// The mutex checked with these users and faults.
#[derive(Clone, Debug)]
pub struct Mutex {
    /// Each user's client.
    pub users: Vec<u8>,
    /// Acquisitions per user.
    pub rounds: u8,
    /// The faults.
    pub faults: Faults,
    /// A defect to re-introduce.
    pub bug: Bugs,
}

/// Where a user is in its acquire, hold and release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// About to create its contender node.
    Create,
    /// The create's reply was lost: list to find the node by its protected name.
    Find,
    /// The lock directory was reaped: create it.
    Parent,
    /// List the contenders (`wait.rs`, `step`).
    List,
    /// Set a data watch on the contender ahead (`turn.rs`, `turn_by_predecessor`).
    Watch(Ahead),
    /// Waiting for the watched node to go.
    Await(Ahead),
    /// Holding: make the guarded write.
    Write,
    /// Delete the node (`LockInternals::release_lock`).
    Release,
    /// All rounds done.
    Done,
}

/// The contender a waiter watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ahead {
    /// Its path.
    pub path: Path,
    /// It was the first contender (its deletion grants the lock: `OnDelete::Ours`).
    pub head: bool,
}

/// One user of the mutex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct User {
    /// Rounds left.
    pub left: u8,
    /// Where it is.
    pub phase: Phase,
    /// Its contender node and the session it lives with.
    pub node: Option<(Path, Sid)>,
    /// No disconnect since the proof was asked for (zkr's error epoch).
    pub clean: bool,
    /// Holding, as far as it knows (set when the lock is proved, cleared when it knows it lost).
    pub holds: bool,
}

/// What the properties look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// A guarded write applied while its writer's node was not the first contender.
    pub bad_write: bool,
    /// Guarded writes applied.
    pub writes: u8,
}

/// The contenders in `listing`, by sequence.
fn contenders(listing: &[(Name, crate::zk::Stat)]) -> Vec<Name> {
    let mut names: Vec<Name> =
        listing.iter().map(|(n, _)| *n).filter(|n| matches!(n, Name::Seq(..))).collect();
    names.sort_by_key(|n| match n {
        Name::Seq(_, seq) => *seq,
        _ => u8::MAX,
    });
    names
}

impl Mutex {
    fn on(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }

    fn proved(user: &mut User) {
        user.phase = Phase::Write;
        user.holds = user.clean;
    }

    /// Starts over on the current session (`LockInternals::attempt`, `WaitError::NodeMissing`).
    fn start_over(user: &mut User) {
        user.node = None;
        user.holds = false;
        user.phase = Phase::Create;
    }

    fn next_round(user: &mut User) {
        user.node = None;
        user.holds = false;
        user.left -= 1;
        user.phase = if user.left == 0 { Phase::Done } else { Phase::Create };
    }

    fn node_path(user: &User) -> Option<Path> {
        user.node.map(|(p, _)| p)
    }

    fn on_listing(&self, me: Me, user: &mut User, listing: &[(Name, crate::zk::Stat)]) {
        // wait.rs, `step`: the driver's `gets_the_lock` on the sorted contenders.
        let sorted = contenders(listing);
        let ours = Name::Fixed(NAMES[usize::from(me.user)]);
        let Some(node) = Self::node_path(user) else { return };
        match sorted.iter().position(|n| *n == node.name) {
            None => Self::start_over(user),
            Some(0) => Self::proved(user),
            Some(i) => {
                let _ = ours;
                user.phase = Phase::Watch(Ahead { path: DIR.child(sorted[i - 1]), head: i == 1 });
            }
        }
    }

    /// turn.rs, `turn_by_predecessor`: the watched node is gone.
    fn on_gone(&self, user: &mut User, head: bool) {
        let grants = head || self.on(Bug::MutexAnyDeletionGrants);
        if grants && user.clean {
            Self::proved(user);
        } else {
            user.phase = Phase::List;
        }
    }

    fn on_found(&self, me: Me, user: &mut User, listing: &[(Name, crate::zk::Stat)]) {
        // zkr-connection protected.rs, `create_once` after a lost reply: our node by its
        // protected name; one of an older session is deleted (CURATOR-498) and we create again.
        let ours =
            listing.iter().find(|(n, _)| matches!(n, Name::Seq(p, _) if *p == NAMES[usize::from(me.user)]));
        match ours {
            Some((name, stat)) if stat.owner == Some(me.sid) => {
                user.node = Some((DIR.child(*name), me.sid));
                user.phase = Phase::List;
            }
            _ => user.phase = Phase::Create,
        }
    }
}

impl Recipe for Mutex {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        let clients = self.users.iter().copied().max().map_or(0, |c| c + 1);
        let user = User { left: self.rounds, phase: Phase::Create, node: None, clean: true, holds: false };
        Setup {
            nodes: vec![(DIR, Mode::Container, 0), (RESOURCE, Mode::Persistent, 0)],
            clients,
            users: self.users.iter().map(|c| (*c, user)).collect(),
        }
    }

    fn faults(&self) -> Faults {
        self.faults
    }

    fn step(&self, me: Me, user: &mut User, _ghost: &mut Ghost) -> Step {
        let pinned = user.node.map(|(_, sid)| sid);
        let node = Self::node_path(user);
        match (user.phase, node) {
            // internals/mod.rs, `create_contender`: a protected EPHEMERAL_SEQUENTIAL create.
            (Phase::Create, _) => {
                let path = DIR.child(Name::Fixed(NAMES[usize::from(me.user)]));
                user.node = None;
                Step::Send(
                    Request::Write(Op::Create { path, mode: Mode::EphemeralSequential, data: 0 }),
                    None,
                )
            }
            (Phase::Find, _) => Step::Send(Request::Children { path: DIR, watch: false }, None),
            // zkr-connection: `Parents` makes the container parent on NoNode.
            (Phase::Parent, _) => {
                Step::Send(Request::Write(Op::Create { path: DIR, mode: Mode::Container, data: 0 }), None)
            }
            // wait.rs, `step`: the lister lists on the node's session; a fresh look.
            (Phase::List, _) => {
                user.clean = true;
                Step::Send(Request::Children { path: DIR, watch: false }, pinned)
            }
            // turn.rs, `turn_by_predecessor`: `watched_at` is taken before the data watch.
            (Phase::Watch(ahead), _) => {
                user.clean = true;
                Step::Send(Request::GetData { path: ahead.path, watch: true }, pinned)
            }
            (Phase::Await(_), _) | (Phase::Done, _) => Step::Blocked,
            // mutex.rs, `InterProcessMutexGuard::set_data`: `check_held`, then a multi behind
            // `check_exists(node)` on the node's session, sent once.
            (Phase::Write, Some(node)) if user.holds => {
                let ops = vec![
                    Op::Check { path: node, version: None },
                    Op::SetData { path: RESOURCE, data: u32::from(me.user) + 1, version: None },
                ];
                Step::Send(Request::Multi(ops), pinned)
            }
            (Phase::Write, _) => {
                user.holds = false;
                user.phase = Phase::Release;
                Step::Local
            }
            // internals/mod.rs, `send_release`: nothing once the session is not current, else
            // the delete on the node's session (in the background after a loss).
            (Phase::Release, Some(node)) if pinned == Some(me.sid) => {
                Step::Send(Request::Write(Op::Delete { path: node, version: None }), pinned)
            }
            (Phase::Release, _) => {
                Self::next_round(user);
                Step::Local
            }
        }
    }

    fn on_reply(&self, me: Me, user: &mut User, reply: Reply, _ghost: &mut Ghost) {
        match (user.phase, reply) {
            (Phase::Create, Reply::Write(crate::zk::OpResult::Created(path, _))) => {
                user.node = Some((path, me.sid));
                user.phase = Phase::List;
            }
            (Phase::Create, Reply::Err(ZkError::ConnectionLoss)) => user.phase = Phase::Find,
            (Phase::Create, Reply::Err(ZkError::NoNode)) => user.phase = Phase::Parent,
            (Phase::Parent, _) => user.phase = Phase::Create,
            (Phase::Find, Reply::Children(listing)) => self.on_found(me, user, &listing),
            (Phase::Find, _) => {}
            (Phase::List, Reply::Children(listing)) => self.on_listing(me, user, &listing),
            // wait.rs, `on_wait_error`: a session error or NoNode starts over; else retry.
            (Phase::List, Reply::Err(ZkError::ConnectionLoss)) => {}
            (Phase::List, Reply::Err(_)) => Self::start_over(user),
            (Phase::Watch(ahead), Reply::Data(..)) => user.phase = Phase::Await(ahead),
            (Phase::Watch(ahead), Reply::Err(ZkError::NoNode)) => self.on_gone(user, ahead.head),
            (Phase::Watch(_), Reply::Err(ZkError::ConnectionLoss)) => user.phase = Phase::List,
            (Phase::Watch(_), Reply::Err(_)) => Self::start_over(user),
            // Written, or (mutex.rs, `guarded_error`) NodeDeleted or ambiguous: either way the
            // user lets go (`InterProcessMutexGuard::release`).
            (Phase::Write, _) => {
                user.holds = false;
                user.phase = Phase::Release;
            }
            // The background delete retries while the session lives (`guaranteed_delete`).
            (Phase::Release, Reply::Err(ZkError::ConnectionLoss)) => {}
            (Phase::Release, _) => Self::next_round(user),
            _ => {}
        }
    }

    fn on_event(&self, _me: Me, user: &mut User, event: Option<Event>, _ghost: &mut Ghost) {
        match (user.phase, event) {
            // The session ended: a waiter starts over, a holder knows it lost.
            (Phase::Await(_) | Phase::Watch(_) | Phase::List, None) => Self::start_over(user),
            (_, None) => user.holds = false,
            (Phase::Await(ahead), Some(Event { path, kind })) if path == ahead.path => match kind {
                EventKind::Deleted => self.on_gone(user, ahead.head),
                _ => user.phase = Phase::List,
            },
            _ => {}
        }
    }

    fn on_disconnect(&self, _me: Me, user: &mut User, _ghost: &mut Ghost) {
        user.clean = false;
        // fence.rs, `lost_reason`: the error epoch moved (zkr's standard error policy).
        if !self.on(Bug::MutexSessionOnlyPolicy) {
            user.holds = false;
        }
    }

    fn on_apply(&self, _user: u8, request: &Request, reply: &Reply, before: &Server, ghost: &mut Ghost) {
        let (Request::Multi(ops), Reply::Multi(_)) = (request, reply) else { return };
        let Some(Op::Check { path, .. }) = ops.first() else { return };
        let listing: Vec<_> = before.children(DIR).map(|(p, n)| (p.name, n.stat())).collect();
        if contenders(&listing).first() != Some(&path.name) {
            ghost.bad_write = true;
        }
        ghost.writes = ghost.writes.saturating_add(1);
    }

    fn done(&self, user: &User) -> bool {
        user.phase == Phase::Done
    }

    fn properties(&self) -> Vec<Property<Checked<Self>>> {
        vec![
            Property::always(
                "mutual exclusion: one holder that does not know its hold lost",
                |_, s: &State<Self>| {
                    s.users
                        .iter()
                        .filter(|u| u.user.holds && s.server.alive(u.user.node.map_or(0, |n| n.1)))
                        .count()
                        <= 1
                },
            ),
            Property::always(
                "a holder whose session ended knows it before another holds",
                |_, s: &State<Self>| s.users.iter().filter(|u| u.user.holds).count() <= 1,
            ),
            Property::always(
                "guarded writes apply only while the writer's node is first",
                |_, s: &State<Self>| !s.ghost.bad_write,
            ),
            Property::sometimes("a guarded write applies", |_, s: &State<Self>| s.ghost.writes > 0),
        ]
    }
}
