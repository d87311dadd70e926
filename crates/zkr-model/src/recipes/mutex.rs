//! The mutex (`InterProcessMutex`): the lock internals' steps (`recipes/internals.rs`) with the
//! standard driver, the guard's writes pinned to the owning session.
//!
//! Each user acquires `rounds` times; holding, it makes one guarded write (a `multi` checking
//! its node, pinned to its session, as `InterProcessMutexGuard::set_data`) and releases.

use stateright::Property;

use crate::bugs::Bugs;
use crate::recipes::internals::{contenders, Contender, Kind, Lock, Phase};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{Event, Mode, Op, Path, Reply, Request, Server};

/// The lock's directory (a container, as zkr creates it).
pub const DIR: Path = Path::top("lock");
/// What the guarded writes write.
pub const RESOURCE: Path = Path::top("resource");

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
    /// The prompt hand-over (`LockInternals::prompt_hand_over`).
    pub prompt: bool,
}

/// One user of the mutex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct User {
    /// Rounds left.
    pub left: u8,
    /// Its acquire, hold and release.
    pub lock: Contender,
}

/// What the properties look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// A guarded write applied while its writer's node was not the first contender.
    pub bad_write: bool,
    /// Guarded writes applied.
    pub writes: u8,
}

/// The guarded write of a holder of `node` (mutex.rs, `InterProcessMutexGuard::set_data`:
/// `check_held`, then a multi behind `check_exists(node)` on the node's session, sent once).
pub fn guarded_write(me: Me, node: Path, sid: crate::zk::Sid) -> Step {
    let ops = vec![
        Op::Check { path: node, version: None },
        Op::SetData { path: RESOURCE, data: u32::from(me.user) + 1, version: None },
    ];
    Step::Send(Request::Multi(ops), Some(sid))
}

/// Was a guarded write applied while its writer's node was not the first contender of `dir`?
pub fn write_out_of_turn(dir: Path, request: &Request, reply: &Reply, before: &Server) -> Option<bool> {
    let (Request::Multi(ops), Reply::Multi(_)) = (request, reply) else { return None };
    let Some(Op::Check { path, .. }) = ops.first() else { return None };
    let listing: Vec<_> = before.children(dir).map(|(p, n)| (p.name, n.stat())).collect();
    Some(contenders(&listing).first() != Some(&path.name))
}

impl Mutex {
    fn lock(&self) -> Lock {
        Lock { dir: DIR, container: true, bug: self.bug, sync: self.faults.lag > 0, prompt: self.prompt }
    }

    /// A release just completed: the next round, or done.
    fn after(was: Phase, user: &mut User) {
        if was == Phase::Release && user.lock.phase == Phase::Idle {
            user.left -= 1;
            if user.left > 0 {
                user.lock.phase = Phase::Create;
            }
        }
    }
}

impl Recipe for Mutex {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        let clients = self.users.iter().copied().max().map_or(0, |c| c + 1);
        let user = User { left: self.rounds, lock: Contender::START };
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
        match (user.lock.phase, user.lock.node) {
            (Phase::Held, Some((node, sid))) if user.lock.holds => guarded_write(me, node, sid),
            (Phase::Held, _) => {
                user.lock.let_go();
                Step::Local
            }
            (was, _) => {
                let step = self.lock().step(me, Kind::Standard, &mut user.lock);
                Self::after(was, user);
                step
            }
        }
    }

    fn on_reply(&self, me: Me, user: &mut User, reply: Reply, _ghost: &mut Ghost) {
        match user.lock.phase {
            // Written, or (mutex.rs, `guarded_error`) NodeDeleted or ambiguous: either way the
            // user lets go (`InterProcessMutexGuard::release`).
            Phase::Held => user.lock.let_go(),
            was => {
                self.lock().on_reply(me, Kind::Standard, &mut user.lock, reply);
                Self::after(was, user);
            }
        }
    }

    fn on_event(&self, _me: Me, user: &mut User, event: Option<Event>, _ghost: &mut Ghost) {
        self.lock().on_event(&mut user.lock, event);
    }

    fn on_disconnect(&self, _me: Me, user: &mut User, _ghost: &mut Ghost) {
        self.lock().on_disconnect(&mut user.lock);
    }

    fn on_apply(&self, _user: u8, request: &Request, reply: &Reply, before: &Server, ghost: &mut Ghost) {
        if let Some(bad) = write_out_of_turn(DIR, request, reply, before) {
            ghost.bad_write |= bad;
            ghost.writes = ghost.writes.saturating_add(1);
        }
    }

    fn done(&self, user: &User) -> bool {
        user.lock.phase == Phase::Idle
    }

    fn properties(&self) -> Vec<Property<Checked<Self>>> {
        vec![
            Property::always(
                "mutual exclusion: one holder that does not know its hold lost",
                |_, s: &State<Self>| {
                    s.users.iter().filter(|u| u.user.lock.holds && s.server.alive(u.user.lock.sid())).count()
                        <= 1
                },
            ),
            Property::always(
                "a holder whose session ended knows it before another holds",
                |_, s: &State<Self>| s.users.iter().filter(|u| u.user.lock.holds).count() <= 1,
            ),
            Property::always(
                "guarded writes apply only while the writer's node is first",
                |_, s: &State<Self>| !s.ghost.bad_write,
            ),
            Property::sometimes("a guarded write applies", |_, s: &State<Self>| s.ghost.writes > 0),
        ]
    }
}

impl crate::symmetry::Symmetric for Mutex {
    fn user(user: &User, map: &crate::symmetry::Map) -> User {
        User { left: user.left, lock: crate::symmetry::contender(&user.lock, map) }
    }

    /// The guarded writes write their writer's number plus one.
    fn data(path: Path, data: u32, map: &crate::symmetry::Map) -> u32 {
        match (path == RESOURCE, data) {
            (true, 1..=4) => u32::from(map.user(data as u8 - 1)) + 1,
            _ => data,
        }
    }
}
