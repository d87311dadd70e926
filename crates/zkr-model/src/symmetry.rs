//! Symmetry reduction: users that are interchangeable (each alone on its own client, of one
//! class, starting alike) are permuted, their clients with them, their sessions renumbered and
//! the node names that carry a user's number renamed; the checker keeps one state of each
//! class of states that differ only so ([`stateright::Representative`]). Only the
//! depth-first checker of stateright 0.31 uses it ([`crate::check::run_symmetric`]).

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

use stateright::Representative;

use crate::recipes::internals::{KAZOO, READERS, STANDARD, WRITERS};
use crate::recipes::semaphore::NAMES as LEASES;
use crate::world::{Client, Message, Recipe, Slot, State};
use crate::zk::{Event, Name, Node, Op, OpResult, Path, Reply, Request, Server, Sid, Stat};

/// Node name prefixes that carry a user's number, one per user.
const TABLES: [&[&str; 4]; 5] = [&STANDARD, &KAZOO, &WRITERS, &READERS, &LEASES];

/// A relabelling: user `u` becomes `user[u]` (and its client with it), session `s` becomes
/// `sid[s]`.
#[derive(Clone, Debug)]
pub struct Map {
    user: Vec<u8>,
    sid: Vec<Sid>,
}

impl Map {
    /// User `u`'s new number.
    pub fn user(&self, u: u8) -> u8 {
        self.user.get(usize::from(u)).copied().unwrap_or(u)
    }

    /// Session `s`'s new number (0, no session, stays).
    pub fn sid(&self, s: Sid) -> Sid {
        self.sid.get(usize::from(s)).copied().unwrap_or(s)
    }

    fn prefix(&self, prefix: &'static str) -> &'static str {
        for table in TABLES {
            if let Some(u) = table.iter().position(|p| *p == prefix) {
                return table[usize::from(self.user(u as u8))];
            }
        }
        prefix
    }

    /// A name with a user's number renamed.
    pub fn name(&self, name: Name) -> Name {
        match name {
            Name::Fixed(p) => Name::Fixed(self.prefix(p)),
            Name::Seq(p, n) => Name::Seq(self.prefix(p), n),
            Name::Indexed(p, n) => Name::Indexed(p, n),
        }
    }

    /// A path with its names renamed.
    pub fn path(&self, path: Path) -> Path {
        Path { parent: path.parent.map(|n| self.name(n)), name: self.name(path.name) }
    }

    fn stat(&self, stat: Stat) -> Stat {
        Stat { owner: stat.owner.map(|s| self.sid(s)), ..stat }
    }
}

/// A recipe whose users can be permuted.
pub trait Symmetric: Recipe {
    /// Users of one class (each alone on its client) are interchangeable.
    fn class(_user: &Self::User) -> u8 {
        0
    }
    /// A user's state, relabelled.
    fn user(user: &Self::User, map: &Map) -> Self::User;
    /// The observations, relabelled.
    fn ghost(ghost: &Self::Ghost, _map: &Map) -> Self::Ghost {
        ghost.clone()
    }
    /// Node data that carries a user's number, relabelled.
    fn data(_path: Path, data: u32, _map: &Map) -> u32 {
        data
    }
}

fn op<R: Symmetric>(op: &Op, map: &Map) -> Op {
    match *op {
        Op::Create { path, mode, data } => {
            Op::Create { path: map.path(path), mode, data: R::data(path, data, map) }
        }
        Op::Delete { path, version } => Op::Delete { path: map.path(path), version },
        Op::SetData { path, data, version } => {
            Op::SetData { path: map.path(path), data: R::data(path, data, map), version }
        }
        Op::Check { path, version } => Op::Check { path: map.path(path), version },
    }
}

fn request<R: Symmetric>(request: &Request, map: &Map) -> Request {
    match request {
        Request::Write(o) => Request::Write(op::<R>(o, map)),
        Request::Multi(ops) => Request::Multi(ops.iter().map(|o| op::<R>(o, map)).collect()),
        Request::GetData { path, watch } => Request::GetData { path: map.path(*path), watch: *watch },
        Request::Exists { path, watch } => Request::Exists { path: map.path(*path), watch: *watch },
        Request::Children { path, watch } => Request::Children { path: map.path(*path), watch: *watch },
        Request::Sync(path) => Request::Sync(map.path(*path)),
        Request::AddWatch { path, recursive } => {
            Request::AddWatch { path: map.path(*path), recursive: *recursive }
        }
        Request::ChildrenData { path, watch } => {
            Request::ChildrenData { path: map.path(*path), watch: *watch }
        }
    }
}

fn result(result: &OpResult, map: &Map) -> OpResult {
    match *result {
        OpResult::Created(path, stat) => OpResult::Created(map.path(path), map.stat(stat)),
        OpResult::Done(stat) => OpResult::Done(stat.map(|s| map.stat(s))),
    }
}

fn reply(reply: &Reply, map: &Map) -> Reply {
    match reply {
        Reply::Write(r) => Reply::Write(result(r, map)),
        Reply::Multi(rs) => Reply::Multi(rs.iter().map(|r| result(r, map)).collect()),
        Reply::Data(data, stat) => Reply::Data(*data, map.stat(*stat)),
        Reply::Exists(stat) => Reply::Exists(stat.map(|s| map.stat(s))),
        Reply::Children(listing) => {
            let mut listing: Vec<(Name, Stat)> =
                listing.iter().map(|(n, s)| (map.name(*n), map.stat(*s))).collect();
            listing.sort_by_key(|(n, _)| *n);
            Reply::Children(listing)
        }
        Reply::ChildrenData(listing) => {
            let mut listing: Vec<(Name, Stat, u32)> =
                listing.iter().map(|(n, s, d)| (map.name(*n), map.stat(*s), *d)).collect();
            listing.sort_by_key(|(n, ..)| *n);
            Reply::ChildrenData(listing)
        }
        other => other.clone(),
    }
}

fn message(message: &Message, map: &Map) -> Message {
    match message {
        Message::Reply(r, at) => Message::Reply(reply(r, map), *at),
        Message::Event(e) => Message::Event(Event { path: map.path(e.path), ..*e }),
    }
}

fn tree<R: Symmetric>(nodes: &crate::zk::Tree, map: &Map) -> crate::zk::Tree {
    nodes
        .iter()
        .map(|(p, n)| {
            let node = Node { data: R::data(*p, n.data, map), owner: n.owner.map(|s| map.sid(s)), ..*n };
            (map.path(*p), node)
        })
        .collect()
}

fn server<R: Symmetric>(server: &Server, map: &Map) -> Server {
    let mut sessions = vec![false; server.sessions.len()];
    for (i, alive) in server.sessions.iter().enumerate() {
        sessions[usize::from(map.sid(i as Sid + 1)) - 1] = *alive;
    }
    let mut watches: Vec<_> = server
        .watches
        .iter()
        .map(|w| crate::zk::Watch {
            path: map.path(w.path),
            child: w.child,
            sid: map.sid(w.sid),
            user: map.user(w.user),
            lasts: w.lasts,
        })
        .collect();
    watches.sort();
    Server {
        nodes: tree::<R>(&server.nodes, map),
        zxid: server.zxid,
        sessions,
        watches,
        keep: server.keep,
        history: server.history.iter().map(|(z, t)| (*z, tree::<R>(t, map))).collect(),
    }
}

/// `state` relabelled by `map` (users and clients moved to their new places).
fn relabel<R: Symmetric>(state: &State<R>, map: &Map) -> State<R> {
    let mut clients = state.clients.clone();
    let mut users = state.users.clone();
    for (u, slot) in state.users.iter().enumerate() {
        let to = usize::from(map.user(u as u8));
        users[to] =
            Slot { client: map.user(slot.client), waiting: slot.waiting, user: R::user(&slot.user, map) };
    }
    for (c, client) in state.clients.iter().enumerate() {
        let to = usize::from(map.user(c as u8));
        clients[to] = Client {
            sid: map.sid(client.sid),
            up: client.up,
            outbox: client.outbox.iter().map(|(u, r)| (map.user(*u), request::<R>(r, map))).collect(),
            inbox: client.inbox.iter().map(|(u, m)| (map.user(*u), message(m, map))).collect(),
            seen: client.seen,
            floor: client.floor,
            catching: client
                .catching
                .iter()
                .map(|w| crate::lag::Catching {
                    user: map.user(w.user),
                    path: map.path(w.path),
                    recursive: w.recursive,
                    then: tree::<R>(&w.then, map),
                })
                .collect(),
        };
    }
    State {
        server: server::<R>(&state.server, map),
        clients,
        users,
        faults: state.faults,
        ghost: R::ghost(&state.ghost, map),
    }
}

/// Every permutation of `items`.
fn permutations(items: &[u8]) -> Vec<Vec<u8>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, first);
            all.push(tail);
        }
    }
    all
}

/// The maps that permute interchangeable users (user `u` on client `u`, alone on it).
fn user_maps<R: Symmetric>(state: &State<R>) -> Vec<Vec<u8>> {
    let n = state.users.len();
    let alone = |u: usize| {
        state.users[u].client as usize == u
            && state.users.iter().filter(|s| s.client as usize == u).count() == 1
    };
    let mut maps = vec![(0..n as u8).collect::<Vec<u8>>()];
    let mut classes: Vec<(u8, Vec<u8>)> = Vec::new();
    for u in (0..n).filter(|u| alone(*u)) {
        let class = R::class(&state.users[u].user);
        match classes.iter_mut().find(|(c, _)| *c == class) {
            Some((_, members)) => members.push(u as u8),
            None => classes.push((class, vec![u as u8])),
        }
    }
    for (_, members) in classes.iter().filter(|(_, m)| m.len() > 1) {
        let mut next = Vec::new();
        for map in &maps {
            for perm in permutations(members) {
                let mut m = map.clone();
                for (from, to) in members.iter().zip(&perm) {
                    m[usize::from(*from)] = *to;
                }
                next.push(m);
            }
        }
        maps = next;
    }
    maps
}

/// Sessions renumbered in the order the relabelled state names them: the clients' sessions in
/// client order, then the rest (ended ones) in their order.
fn sid_map<R: Symmetric>(state: &State<R>, users: &[u8]) -> Vec<Sid> {
    let count = state.server.sessions.len();
    let mut order: Vec<Sid> = Vec::new();
    let mut by_new = vec![0u8; users.len()];
    for (u, to) in users.iter().enumerate() {
        by_new[usize::from(*to)] = u as u8;
    }
    for old in &by_new {
        if let Some(client) = state.clients.get(usize::from(*old)) {
            if !order.contains(&client.sid) {
                order.push(client.sid);
            }
        }
    }
    for client in state.clients.iter().skip(users.len()) {
        if !order.contains(&client.sid) {
            order.push(client.sid);
        }
    }
    for sid in 1..=count as Sid {
        if !order.contains(&sid) {
            order.push(sid);
        }
    }
    let mut map = vec![0; count + 1];
    for (new, old) in order.iter().enumerate() {
        map[usize::from(*old)] = new as Sid + 1;
    }
    map
}

impl<R: Symmetric> Representative for State<R> {
    fn representative(&self) -> Self {
        let mut best: Option<(u64, State<R>)> = None;
        for users in user_maps(self) {
            let map = Map { sid: sid_map(self, &users), user: users };
            let candidate = relabel(self, &map);
            // Any deterministic hash keeps the choice canonical (a tie only costs reduction);
            // SipHash's many short writes were a fifth of the mutex model's time.
            let mut hasher = FxHasher::default();
            candidate.hash(&mut hasher);
            let key = hasher.finish();
            if best.as_ref().is_none_or(|(k, _)| key < *k) {
                best = Some((key, candidate));
            }
        }
        best.map_or_else(|| self.clone(), |(_, s)| s)
    }
}

/// A contender's state, relabelled.
pub fn contender(
    c: &crate::recipes::internals::Contender,
    map: &Map,
) -> crate::recipes::internals::Contender {
    use crate::recipes::internals::{Ahead, Phase};
    let ahead =
        |a: Ahead| Ahead { path: map.path(a.path), head: a.head, second: a.second.map(|p| map.path(p)) };
    let phase = match c.phase {
        Phase::Watch(a) => Phase::Watch(ahead(a)),
        Phase::WatchSecond(a, p1) => Phase::WatchSecond(ahead(a), p1),
        Phase::Await(a) => Phase::Await(ahead(a)),
        Phase::Relist(a, p1) => Phase::Relist(ahead(a), p1),
        other => other,
    };
    crate::recipes::internals::Contender { phase, node: c.node.map(|(p, s)| (map.path(p), map.sid(s))), ..*c }
}
