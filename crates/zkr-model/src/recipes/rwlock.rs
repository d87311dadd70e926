//! The read-write lock (`locks/read_write.rs`, `InterProcessReadWriteLock`): two
//! `InterProcessMutex`es over one directory, the lock internals' steps
//! (`recipes/internals.rs`) with the `WriteLockDriver` (`_c_<uuid>-__WRIT__`: first of read and
//! write nodes holds; a deletion means a listing, `head_release_grants` false) and the
//! `ReadLockDriver` (`_c_<uuid>-__READ__`: holds when no writer is ahead, else watches the first
//! writer ahead). Downgrades (a read node at its writer's place) are left out.
//!
//! Each user takes its side `rounds` times; a writer, holding, makes one guarded write
//! (`InterProcessMutexGuard::set_data`, as the mutex's model); a reader holds and lets go.

use stateright::Property;

use crate::bugs::Bugs;
use crate::recipes::internals::{Contender, Kind, Lock, Phase};
use crate::recipes::mutex::{guarded_write, write_out_of_turn, RESOURCE};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{Event, Mode, Path, Reply, Request, Server};

/// The lock's directory (a container, as Curator's layout makes it).
pub const DIR: Path = Path::top("rw");

/// The read-write lock checked with these users and faults.
#[derive(Clone, Debug)]
pub struct RwLock {
    /// Each user's client and side ([`Kind::Reader`] or [`Kind::Writer`]).
    pub users: Vec<(u8, Kind)>,
    /// Acquisitions per user.
    pub rounds: u8,
    /// The faults.
    pub faults: Faults,
    /// A defect to re-introduce.
    pub bug: Bugs,
}

/// One user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct User {
    /// Its side.
    pub kind: Kind,
    /// Rounds left.
    pub left: u8,
    /// Its acquire, hold and release.
    pub lock: Contender,
}

/// What the properties look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// A writer's guarded write applied while its node was not the first contender.
    pub bad_write: bool,
    /// Guarded writes applied.
    pub writes: u8,
}

impl RwLock {
    fn lock(&self) -> Lock {
        Lock { dir: DIR, container: true, bug: self.bug, sync: self.faults.lag > 0, prompt: false }
    }

    fn count(&self, kind: Kind) -> usize {
        self.users.iter().filter(|(_, k)| *k == kind).count()
    }

    fn after(was: Phase, user: &mut User) {
        if was == Phase::Release && user.lock.phase == Phase::Idle {
            user.left -= 1;
            if user.left > 0 {
                user.lock.phase = Phase::Create;
            }
        }
    }
}

/// Holders that do not know their hold lost (only those whose session lives, with `alive`):
/// (readers, writers).
fn holders(s: &State<RwLock>, alive: bool) -> (usize, usize) {
    let holding =
        s.users.iter().map(|u| &u.user).filter(|u| u.lock.holds && (!alive || s.server.alive(u.lock.sid())));
    holding.fold((0, 0), |(r, w), u| if u.kind == Kind::Writer { (r, w + 1) } else { (r + 1, w) })
}

/// No writer beside another holder.
fn exclusive((readers, writers): (usize, usize)) -> bool {
    writers == 0 || readers + writers == 1
}

impl Recipe for RwLock {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        let clients = self.users.iter().map(|(c, _)| *c).max().map_or(0, |c| c + 1);
        let user = |kind| User { kind, left: self.rounds, lock: Contender::START };
        Setup {
            nodes: vec![(DIR, Mode::Container, 0), (RESOURCE, Mode::Persistent, 0)],
            clients,
            users: self.users.iter().map(|(c, kind)| (*c, user(*kind))).collect(),
        }
    }

    fn faults(&self) -> Faults {
        self.faults
    }

    fn step(&self, me: Me, user: &mut User, _ghost: &mut Ghost) -> Step {
        match (user.lock.phase, user.lock.node) {
            (Phase::Held, Some((node, sid))) if user.lock.holds && user.kind == Kind::Writer => {
                guarded_write(me, node, sid)
            }
            // A reader, or a writer that knows it lost: release.
            (Phase::Held, _) => {
                user.lock.let_go();
                Step::Local
            }
            (was, _) => {
                let step = self.lock().step(me, user.kind, &mut user.lock);
                Self::after(was, user);
                step
            }
        }
    }

    fn on_reply(&self, me: Me, user: &mut User, reply: Reply, _ghost: &mut Ghost) {
        match user.lock.phase {
            Phase::Held => user.lock.let_go(),
            was => {
                self.lock().on_reply(me, user.kind, &mut user.lock, reply);
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
        let mut properties = vec![
            Property::always(
                "no writer holds beside another holder whose session lives",
                |_, s: &State<Self>| exclusive(holders(s, true)),
            ),
            Property::always(
                "a holder whose session ended knows it before a writer holds beside it",
                |_, s: &State<Self>| exclusive(holders(s, false)),
            ),
            Property::always(
                "a writer's guarded write applies only while its node is first",
                |_, s: &State<Self>| !s.ghost.bad_write,
            ),
        ];
        if self.count(Kind::Reader) >= 2 {
            properties.push(Property::sometimes("two readers hold at once", |_, s: &State<Self>| {
                holders(s, true).0 >= 2
            }));
        }
        if self.count(Kind::Writer) >= 1 {
            properties.push(Property::sometimes("a writer's guarded write applies", |_, s: &State<Self>| {
                s.ghost.writes > 0
            }));
        }
        properties
    }
}

impl crate::symmetry::Symmetric for RwLock {
    /// Readers with readers, writers with writers.
    fn class(user: &User) -> u8 {
        u8::from(user.kind == Kind::Writer)
    }

    fn user(user: &User, map: &crate::symmetry::Map) -> User {
        User { lock: crate::symmetry::contender(&user.lock, map), ..*user }
    }

    fn data(path: Path, data: u32, map: &crate::symmetry::Map) -> u32 {
        <crate::recipes::mutex::Mutex as crate::symmetry::Symmetric>::data(path, data, map)
    }
}
