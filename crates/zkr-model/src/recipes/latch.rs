//! The leader latch (`leader/latch.rs`, `LeaderLatch`): built on the lock internals
//! (`LockInternals` with the standard driver, one lease, the name `latch-`), so its steps are the
//! mutex's (`recipes/mutex.rs`): join (`attempt_lock(Wait::Forever)` in `participate`), lead
//! (`lead`: one proclaim, `LeaderLatch::proclaim`, a write pinned to the node's session behind a
//! check of it), until leadership is lost (`node.lost`: the connection's error state or the
//! session's end) or the latch closes, then leave (`release_lock`) and join again. A round of
//! the mutex's model is a term here; the properties are the latch's.

use stateright::Property;

use crate::recipes::mutex::{Ghost, Mutex, User};
use crate::world::{Checked, Faults, Me, Recipe, Setup, State, Step};
use crate::zk::{Event, Reply, Request, Server};

/// The latch checked with these participants.
#[derive(Clone, Debug)]
pub struct Latch(pub Mutex);

impl Latch {
    /// Participants on these clients, each for `terms` terms.
    pub fn new(users: Vec<u8>, terms: u8, faults: Faults) -> Self {
        Latch(Mutex { users, rounds: terms, faults, bug: None, prompt: false })
    }
}

/// Leaders that do not know their leadership lost, whose session lives (`alive`) or not.
fn leaders(s: &State<Latch>, alive: bool) -> usize {
    let live = |u: &User| s.server.alive(u.lock.sid());
    s.users.iter().filter(|u| u.user.lock.holds && (!alive || live(&u.user))).count()
}

impl Recipe for Latch {
    type User = User;
    type Ghost = Ghost;

    fn setup(&self) -> Setup<User> {
        self.0.setup()
    }

    fn faults(&self) -> Faults {
        self.0.faults()
    }

    fn step(&self, me: Me, user: &mut User, ghost: &mut Ghost) -> Step {
        self.0.step(me, user, ghost)
    }

    fn on_reply(&self, me: Me, user: &mut User, reply: Reply, ghost: &mut Ghost) {
        self.0.on_reply(me, user, reply, ghost)
    }

    fn on_event(&self, me: Me, user: &mut User, event: Option<Event>, ghost: &mut Ghost) {
        self.0.on_event(me, user, event, ghost)
    }

    fn on_disconnect(&self, me: Me, user: &mut User, ghost: &mut Ghost) {
        self.0.on_disconnect(me, user, ghost)
    }

    fn on_apply(&self, user: u8, request: &Request, reply: &Reply, before: &Server, ghost: &mut Ghost) {
        self.0.on_apply(user, request, reply, before, ghost)
    }

    fn done(&self, user: &User) -> bool {
        self.0.done(user)
    }

    fn properties(&self) -> Vec<Property<Checked<Self>>> {
        vec![
            Property::always("at most one leader whose session lives", |_, s: &State<Self>| {
                leaders(s, true) <= 1
            }),
            Property::always(
                "a leader whose session ended knows it before another leads",
                |_, s: &State<Self>| leaders(s, false) <= 1,
            ),
            Property::always(
                "a proclaim applies only while its leader's node is first",
                |_, s: &State<Self>| !s.ghost.bad_write,
            ),
            Property::sometimes("a leader proclaims", |_, s: &State<Self>| s.ghost.writes > 0),
        ]
    }
}

impl crate::symmetry::Symmetric for Latch {
    fn user(user: &User, map: &crate::symmetry::Map) -> User {
        <Mutex as crate::symmetry::Symmetric>::user(user, map)
    }

    fn data(path: crate::zk::Path, data: u32, map: &crate::symmetry::Map) -> u32 {
        <Mutex as crate::symmetry::Symmetric>::data(path, data, map)
    }
}
