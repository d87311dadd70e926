//! The world a recipe runs in: clients (one session each, shared by the client's users), the
//! connection between each client and the server (per-session FIFO), and the faults. It is the
//! [`stateright::Model`] every recipe is checked on; a recipe supplies its users ([`Recipe`]).
//!
//! A request a user sends waits in its client's outbox until the server applies it; the reply
//! waits in the inbox, behind the watch events the server fired before it, until the client
//! reads it. A dropped connection loses both: the outbox was not applied, the inbox's replies
//! were (the client cannot tell which: every waiting user gets `ConnectionLoss`). One-shot
//! watches survive a dropped connection (the client sets them again on reconnecting and the
//! server fires what changed meanwhile) but not the session; persistent watches go with the
//! connection, and so do their events not read yet ([`Server::disconnect`]).
//!
//! With [`Faults::lag`], a read may be answered by a lagging server: from one of the last
//! `lag` states, as long as that state is not older than what the client's connection has
//! shown it (`Client::floor`: the session's last zxid seen in a reply, `Client::seen`, which a
//! session after another starts again from 0, and the events and reads of this connection).
//! A `sync` brings the session current.

use std::fmt::Debug;
use std::hash::Hash;

use stateright::{Model, Property};

use crate::lag::Catching;
use crate::zk::{is_read, Event, Fired, Mode, Path, Reply, Request, Server, Sid, ZkError, Zxid};

/// Which faults a run may have, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Faults {
    /// At most this many per run.
    pub max: u8,
    /// A client's connection drops (the session survives).
    pub drop: bool,
    /// A client's session expires (its connection dropped first: the assumption that the
    /// client's own timeout fires before the server's, see `docs/reliability.md`).
    pub expire: bool,
    /// The server restarts: every connection drops, sessions and data survive.
    pub restart: bool,
    /// Reads may be answered from this many states before the current one (a lagging server;
    /// not a fault, not counted).
    pub lag: u8,
}

impl Faults {
    /// No faults.
    pub const NONE: Faults = Faults { max: 0, drop: false, expire: false, restart: false, lag: 0 };

    /// Up to `max` faults of every kind.
    pub const fn all(max: u8) -> Faults {
        Faults { max, drop: true, expire: true, restart: true, lag: 0 }
    }

    /// These faults, with reads answered up to `lag` states behind.
    pub const fn lagging(self, lag: u8) -> Faults {
        Faults { lag, ..self }
    }
}

/// What a user does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Send a request; pinned to a session, it fails with `SessionExpired` unsent when the
    /// client's session is another.
    Send(Request, Option<Sid>),
    /// A step of its own (its state changed; nothing sent).
    Local,
    /// Nothing to do until a reply or an event comes (or done).
    Blocked,
}

/// Who a user is, as the recipe sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Me {
    /// The user's index.
    pub user: u8,
    /// Its client's index.
    pub client: u8,
    /// Its client's session now.
    pub sid: Sid,
}

/// The nodes a check starts with and who takes part.
#[derive(Clone, Debug)]
pub struct Setup<U> {
    /// Nodes that exist at the start (persistent or containers).
    pub nodes: Vec<(Path, Mode, u32)>,
    /// How many clients (one session each).
    pub clients: u8,
    /// The users, each with its client.
    pub users: Vec<(u8, U)>,
}

/// A recipe's users, the steps they take, and what must hold.
pub trait Recipe: Sized + Send + Sync + 'static {
    /// One user's state.
    type User: Clone + Debug + Hash + Eq + Send + Sync;
    /// What the properties look at besides the world (who holds what, what was handed out).
    type Ghost: Clone + Debug + Hash + Eq + Default + Send + Sync;
    /// The start.
    fn setup(&self) -> Setup<Self::User>;
    /// The faults a run may have.
    fn faults(&self) -> Faults;
    /// The user's next step when it awaits no reply.
    fn step(&self, me: Me, user: &mut Self::User, ghost: &mut Self::Ghost) -> Step;
    /// A reply to the user's request.
    fn on_reply(&self, me: Me, user: &mut Self::User, reply: Reply, ghost: &mut Self::Ghost);
    /// A watch event for the user, or its session's end (`None`: the session expired).
    fn on_event(&self, me: Me, user: &mut Self::User, event: Option<Event>, ghost: &mut Self::Ghost);
    /// The client's connection dropped.
    fn on_disconnect(&self, _me: Me, _user: &mut Self::User, _ghost: &mut Self::Ghost) {}
    /// The server applied the user's request (an observation for the properties only).
    fn on_apply(
        &self,
        _user: u8,
        _request: &Request,
        _reply: &Reply,
        _before: &Server,
        _ghost: &mut Self::Ghost,
    ) {
    }
    /// Looks at the whole state after each transition (to note what the properties need).
    fn observe(&self, _state: &mut State<Self>) {}
    /// Is a hang in this state one the recipe's docs already own (a known window)?
    fn excuse_hang(&self, _ghost: &Self::Ghost) -> bool {
        false
    }
    /// Is the user finished (a terminal state with an unfinished user is a hang)?
    fn done(&self, user: &Self::User) -> bool;
    /// The recipe's own properties.
    fn properties(&self) -> Vec<Property<Checked<Self>>>;
}

/// A client: its session and its connection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    /// The session.
    pub sid: Sid,
    /// Connected.
    pub up: bool,
    /// Sent, not applied yet: (user, request).
    pub outbox: Vec<(u8, Request)>,
    /// Applied replies and fired events not read yet: (user, message).
    pub inbox: Vec<(u8, Message)>,
    /// The last zxid a reply to the session showed (its `lastZxid`; only with lagging reads).
    pub seen: Zxid,
    /// No read on this connection may be answered from a state older than this (only with
    /// lagging reads).
    pub floor: Zxid,
    /// Persistent watches its lagging server set at an older state and has not caught up with.
    pub catching: Vec<Catching>,
}

/// What the server sends a session.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Message {
    /// A reply, and the zxid its header carries (0 without lagging reads).
    Reply(Reply, Zxid),
    /// A watch event.
    Event(Event),
}

/// A user and whether it awaits a reply.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Slot<U> {
    /// Its client.
    pub client: u8,
    /// Awaits a reply.
    pub waiting: bool,
    /// The recipe's state.
    pub user: U,
}

/// The whole world.
pub struct State<R: Recipe> {
    /// The server.
    pub server: Server,
    /// The clients.
    pub clients: Vec<Client>,
    /// The users.
    pub users: Vec<Slot<R::User>>,
    /// Faults so far.
    pub faults: u8,
    /// The recipe's observations.
    pub ghost: R::Ghost,
}

/// A state's fields, borrowed: what equality and hashing look at.
type Parts<'a, R> = (&'a Server, &'a [Client], &'a [Slot<<R as Recipe>::User>], u8, &'a <R as Recipe>::Ghost);

impl<R: Recipe> State<R> {
    fn parts(&self) -> Parts<'_, R> {
        (&self.server, &self.clients, &self.users, self.faults, &self.ghost)
    }
}

impl<R: Recipe> Clone for State<R> {
    fn clone(&self) -> Self {
        State {
            server: self.server.clone(),
            clients: self.clients.clone(),
            users: self.users.clone(),
            faults: self.faults,
            ghost: self.ghost.clone(),
        }
    }
}

impl<R: Recipe> Debug for State<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("server", &self.server)
            .field("clients", &self.clients)
            .field("users", &self.users)
            .field("faults", &self.faults)
            .field("ghost", &self.ghost)
            .finish()
    }
}

impl<R: Recipe> PartialEq for State<R> {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl<R: Recipe> Eq for State<R> {}

impl<R: Recipe> Hash for State<R> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

/// A transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A user takes its next step.
    Step(u8),
    /// The server applies the oldest request of a client's session.
    Serve(u8),
    /// A lagging server answers a client's oldest request, a read, from this many states back.
    ServeLate(u8, u8),
    /// A client reads the oldest reply or event.
    Deliver(u8),
    /// A client's connection drops (fault).
    Drop(u8),
    /// A client's session expires (fault).
    Expire(u8),
    /// The server restarts (fault).
    Restart,
    /// A client reconnects (and learns whether its session survived).
    Reconnect(u8),
    /// The server deletes an empty container.
    Reap(Path),
    /// A client's lagging server catches up with the current state (only after it set a
    /// persistent watch late).
    CatchUp(u8),
}

/// A recipe made into a [`Model`].
#[derive(Clone, Debug)]
pub struct Checked<R>(pub R);

impl<R: Recipe> Checked<R> {
    fn me(state: &State<R>, user: u8) -> Me {
        let client = state.users[usize::from(user)].client;
        Me { user, client, sid: state.clients[usize::from(client)].sid }
    }

    /// Can nothing but a fault happen (the faults stopped here: what is left to do is done)?
    pub fn quiescent(&self, state: &State<R>) -> bool {
        let mut actions = Vec::new();
        self.actions(state, &mut actions);
        actions.iter().all(|a| matches!(a, Action::Drop(_) | Action::Expire(_) | Action::Restart))
    }

    /// Can nothing but a fault happen, with a user not finished?
    pub fn hung(&self, state: &State<R>) -> bool {
        self.quiescent(state)
            && state.users.iter().any(|slot| !self.0.done(&slot.user))
            && !self.0.excuse_hang(&state.ghost)
    }

    /// The step user `u` would take, on a copy.
    fn peek(&self, state: &State<R>, u: u8) -> (Step, State<R>) {
        let mut next = state.clone();
        let me = Self::me(state, u);
        let slot = &mut next.users[usize::from(u)];
        let step = self.0.step(me, &mut slot.user, &mut next.ghost);
        (step, next)
    }

    fn user_actions(&self, state: &State<R>, actions: &mut Vec<Action>) {
        for (u, slot) in state.users.iter().enumerate() {
            if slot.waiting {
                continue;
            }
            // The step alone: a copy of the user and the observations, not of the world.
            let me = Self::me(state, u as u8);
            let step = self.0.step(me, &mut slot.user.clone(), &mut state.ghost.clone());
            let up = state.clients[usize::from(slot.client)].up;
            let enabled = match step {
                Step::Blocked => false,
                Step::Local => true,
                Step::Send(_, Some(pin)) if pin != state.clients[usize::from(slot.client)].sid => true,
                Step::Send(..) => up,
            };
            if enabled {
                actions.push(Action::Step(u as u8));
            }
        }
    }

    fn fault_actions(&self, state: &State<R>, actions: &mut Vec<Action>) {
        let faults = self.0.faults();
        if state.faults >= faults.max {
            return;
        }
        for (c, client) in state.clients.iter().enumerate() {
            if faults.drop && client.up {
                actions.push(Action::Drop(c as u8));
            }
            if faults.expire && state.server.alive(client.sid) {
                actions.push(Action::Expire(c as u8));
            }
        }
        if faults.restart && state.clients.iter().any(|c| c.up) {
            actions.push(Action::Restart);
        }
    }

    fn step_user(&self, state: &mut State<R>, u: u8) {
        let (step, mut next) = self.peek(state, u);
        let me = Self::me(state, u);
        if let Step::Send(request, pin) = step {
            if pin.is_some_and(|p| p != me.sid) {
                let slot = &mut next.users[usize::from(u)];
                self.0.on_reply(me, &mut slot.user, Reply::Err(ZkError::SessionExpired), &mut next.ghost);
            } else {
                next.users[usize::from(u)].waiting = true;
                next.clients[usize::from(me.client)].outbox.push((u, request));
            }
        }
        *state = next;
    }

    fn serve(&self, state: &mut State<R>, c: u8, back: u8) {
        Self::catch_up(state, c, back);
        let client = &mut state.clients[usize::from(c)];
        let (u, request) = client.outbox.remove(0);
        let sid = client.sid;
        let before = state.server.clone();
        let (reply, fired, at) = match (back, &request) {
            (0, _) => {
                let (reply, fired) = state.server.apply(sid, u, &request);
                (reply, fired, state.server.zxid)
            }
            (_, Request::AddWatch { path, recursive }) => {
                let then = state.server.tree(back).clone();
                let watch = Catching { user: u, path: *path, recursive: *recursive, then };
                state.clients[usize::from(c)].catching.push(watch);
                (Reply::Watching, Vec::new(), state.server.kept(back).unwrap_or(state.server.zxid))
            }
            _ => {
                let at = state.server.kept(back).unwrap_or(state.server.zxid);
                let (reply, fired) = state.server.read_at(back, sid, u, &request);
                (reply, fired, at)
            }
        };
        self.0.on_apply(u, &request, &reply, &before, &mut state.ghost);
        // The reply's zxid: the state read, or (a write, a sync) the current one. The
        // connection's server is at least that fresh; the session's last zxid follows when the
        // client reads the reply.
        let at = if self.0.faults().lag > 0 { at } else { 0 };
        let client = &mut state.clients[usize::from(c)];
        client.floor = client.floor.max(at);
        let (now, late): (Vec<Fired>, Vec<Fired>) = match back {
            0 => (fired, Vec::new()),
            _ => (Vec::new(), fired),
        };
        Self::route(state, now);
        state.clients[usize::from(c)].inbox.push((u, Message::Reply(reply, at)));
        // A watch a late read left on what changed since fires after its reply.
        Self::route(state, late);
    }

    /// Client `c`'s server reaches the state `back` states behind the current one (0: the
    /// current one): the persistent watches it set late fire for what changed on the way, and
    /// are set on the server once it is current.
    fn catch_up(state: &mut State<R>, c: u8, back: u8) {
        let State { server, clients, .. } = state;
        let client = &mut clients[usize::from(c)];
        if client.catching.is_empty() {
            return;
        }
        let (sid, now) = (client.sid, server.tree(back));
        let mut fired = Vec::new();
        for watch in &mut client.catching {
            fired.extend(watch.catch_up(now, sid));
        }
        client.inbox.extend(fired.into_iter().map(|(_, user, event)| (user, Message::Event(event))));
        client.floor = client.floor.max(server.kept(back).unwrap_or(server.zxid));
        if back == 0 {
            for watch in std::mem::take(&mut client.catching) {
                server.add_persistent(sid, watch.user, watch.path, watch.recursive);
            }
        }
    }

    /// The states `back` a lagging server may answer client `c`'s next request from.
    fn late(&self, state: &State<R>, c: u8) -> Vec<u8> {
        let client = &state.clients[usize::from(c)];
        match client.outbox.first() {
            Some((_, request)) if is_read(request) => (1..=self.0.faults().lag)
                .filter(|back| state.server.kept(*back).is_some_and(|z| z >= client.floor))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Puts fired events in their sessions' inboxes.
    fn route(state: &mut State<R>, fired: Vec<Fired>) {
        let zxid = state.server.zxid;
        let lagging = state.server.keep > 0;
        for (sid, user, event) in fired {
            if let Some(client) = state.clients.iter_mut().find(|c| c.sid == sid) {
                client.inbox.push((user, Message::Event(event)));
                // The server that fired it has applied the change.
                if lagging {
                    client.floor = client.floor.max(zxid);
                }
            }
        }
    }

    fn deliver(&self, state: &mut State<R>, c: u8) {
        let (u, message) = state.clients[usize::from(c)].inbox.remove(0);
        let me = Self::me(state, u);
        let slot = &mut state.users[usize::from(u)];
        match message {
            Message::Reply(reply, at) => {
                let client = &mut state.clients[usize::from(c)];
                client.seen = client.seen.max(at);
                slot.waiting = false;
                self.0.on_reply(me, &mut slot.user, reply, &mut state.ghost);
            }
            Message::Event(event) => self.0.on_event(me, &mut slot.user, Some(event), &mut state.ghost),
        }
    }

    /// The connection of client `c` drops: requests in flight end with `ConnectionLoss`.
    fn drop_connection(&self, state: &mut State<R>, c: u8) {
        let client = &mut state.clients[usize::from(c)];
        client.up = false;
        client.outbox.clear();
        client.catching.clear();
        client.inbox.retain(|(_, m)| matches!(m, Message::Event(e) if !e.lasting));
        let sid = client.sid;
        state.server.disconnect(sid);
        for u in 0..state.users.len() as u8 {
            if state.users[usize::from(u)].client != c {
                continue;
            }
            let me = Self::me(state, u);
            let slot = &mut state.users[usize::from(u)];
            self.0.on_disconnect(me, &mut slot.user, &mut state.ghost);
            if slot.waiting {
                slot.waiting = false;
                self.0.on_reply(me, &mut slot.user, Reply::Err(ZkError::ConnectionLoss), &mut state.ghost);
            }
        }
    }

    fn expire(&self, state: &mut State<R>, c: u8) {
        if state.clients[usize::from(c)].up {
            self.drop_connection(state, c);
        }
        let sid = state.clients[usize::from(c)].sid;
        let fired = state.server.end_session(sid);
        Self::route(state, fired);
    }

    /// Client `c` reconnects: to its session if it lives, else it learns of the expiry and
    /// opens a new one (what zkr's connection manager does).
    fn reconnect(&self, state: &mut State<R>, c: u8) {
        let sid = state.clients[usize::from(c)].sid;
        let client = &mut state.clients[usize::from(c)];
        client.up = true;
        // Another server, no older than the session's last zxid (or the events still to read).
        if !client.inbox.iter().any(|(_, m)| matches!(m, Message::Event(_))) {
            client.floor = client.seen;
        }
        if state.server.alive(sid) {
            return;
        }
        let new = state.server.open_session();
        let client = &mut state.clients[usize::from(c)];
        client.sid = new;
        client.inbox.clear();
        // A new session starts from zxid 0 (zkr opens a new handle).
        client.seen = 0;
        client.floor = 0;
        for u in 0..state.users.len() as u8 {
            if state.users[usize::from(u)].client == c {
                let me = Self::me(state, u);
                let slot = &mut state.users[usize::from(u)];
                self.0.on_event(me, &mut slot.user, None, &mut state.ghost);
            }
        }
    }
}

impl<R: Recipe> Model for Checked<R> {
    type State = State<R>;
    type Action = Action;

    fn init_states(&self) -> Vec<State<R>> {
        let setup = self.0.setup();
        let mut server = Server::new(&setup.nodes);
        server.keep = self.0.faults().lag;
        let clients = (0..setup.clients)
            .map(|_| Client {
                sid: server.open_session(),
                up: true,
                outbox: Vec::new(),
                inbox: Vec::new(),
                seen: 0,
                floor: 0,
                catching: Vec::new(),
            })
            .collect();
        let users =
            setup.users.into_iter().map(|(client, user)| Slot { client, waiting: false, user }).collect();
        vec![State { server, clients, users, faults: 0, ghost: R::Ghost::default() }]
    }

    fn actions(&self, state: &State<R>, actions: &mut Vec<Action>) {
        self.user_actions(state, actions);
        for (c, client) in state.clients.iter().enumerate() {
            if client.up && !client.outbox.is_empty() {
                actions.push(Action::Serve(c as u8));
                actions.extend(
                    self.late(state, c as u8).into_iter().map(|back| Action::ServeLate(c as u8, back)),
                );
            }
            if client.up && !client.inbox.is_empty() {
                actions.push(Action::Deliver(c as u8));
            }
            if !client.up {
                actions.push(Action::Reconnect(c as u8));
            }
            if client.up && !client.catching.is_empty() {
                actions.push(Action::CatchUp(c as u8));
            }
        }
        actions.extend(state.server.reapable().into_iter().map(Action::Reap));
        self.fault_actions(state, actions);
    }

    fn next_state(&self, last: &State<R>, action: Action) -> Option<State<R>> {
        let mut state = last.clone();
        match action {
            Action::Step(u) => self.step_user(&mut state, u),
            Action::Serve(c) => self.serve(&mut state, c, 0),
            Action::ServeLate(c, back) => self.serve(&mut state, c, back),
            Action::Deliver(c) => self.deliver(&mut state, c),
            Action::Reconnect(c) => self.reconnect(&mut state, c),
            Action::CatchUp(c) => Self::catch_up(&mut state, c, 0),
            Action::Reap(path) => {
                let fired = state.server.reap(path);
                Self::route(&mut state, fired);
            }
            Action::Drop(c) => {
                state.faults += 1;
                self.drop_connection(&mut state, c);
            }
            Action::Expire(c) => {
                state.faults += 1;
                self.expire(&mut state, c);
            }
            Action::Restart => {
                state.faults += 1;
                for c in 0..state.clients.len() as u8 {
                    if state.clients[usize::from(c)].up {
                        self.drop_connection(&mut state, c);
                    }
                }
            }
        }
        self.0.observe(&mut state);
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = self.0.properties();
        properties
            .push(Property::always("no user hangs once faults stop", |m: &Self, s: &State<R>| !m.hung(s)));
        properties
    }
}
