//! Reads from a lagging server: the last few states the server kept ([`Server::keep`]), and a
//! read answered from one of them ([`Server::read_at`]). The world decides which states a
//! client's connection may still be shown (`world.rs`, `Client::floor`).

use crate::zk::{read, Event, EventKind, Fired, Node, Path, Reply, Request, Server, Sid, Tree, Zxid};

/// A persistent watch a lagging server set at an older state (`then`) and has not caught up
/// with yet: the world fires, as that server catches up, an event for each node it covers that
/// changed since (one event a node, however many changes: what the watch fires for them in
/// order the recipes read as one), and sets it on the server once it is current.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Catching {
    /// The user that set it.
    pub user: u8,
    /// Its path.
    pub path: Path,
    /// Recursive.
    pub recursive: bool,
    /// The state its server is at, as far as this watch knows.
    pub then: Tree,
}

impl Catching {
    /// The events it fires as its server goes from `then` to `now` (and it is then at `now`):
    /// a data event for each node it covers that changed, and (not recursive) a child event
    /// for its path when the children changed.
    pub(crate) fn catch_up(&mut self, now: &Tree, sid: Sid) -> Vec<Fired> {
        let (path, recursive, then) = (self.path, self.recursive, &self.then);
        let covers = |p: &Path| *p == path || (recursive && p.is_child_of(path));
        let mut paths: Vec<Path> = then.keys().chain(now.keys()).copied().filter(covers).collect();
        paths.sort();
        paths.dedup();
        let event = |path, kind| (sid, self.user, Event { path, kind, lasting: true });
        let mut fired = Vec::new();
        for p in paths {
            if let Some(kind) = Server::changed(then.get(&p), now.get(&p), false) {
                fired.push(event(p, kind));
            }
        }
        let children = Server::changed(then.get(&path), now.get(&path), true);
        if !recursive && children == Some(EventKind::ChildrenChanged) {
            fired.push(event(path, EventKind::ChildrenChanged));
        }
        self.then = now.clone();
        fired
    }
}

impl Server {
    /// Keeps the current state for lagging reads (the `keep` newest).
    pub(crate) fn remember(&mut self) {
        if self.keep == 0 {
            return;
        }
        self.history.push((self.zxid, self.nodes.clone()));
        if self.history.len() > usize::from(self.keep) {
            self.history.remove(0);
        }
    }

    /// The zxid of the state `back` states before the current one, if kept.
    pub fn kept(&self, back: u8) -> Option<Zxid> {
        let i = self.history.len().checked_sub(usize::from(back))?;
        self.history.get(i).map(|(zxid, _)| *zxid)
    }

    /// Answers the read `request` of user `user` of session `sid` from the state `back` states
    /// before the current one, as a lagging server would: the reply and the events. A watch it
    /// leaves fires at once when what it watches changed since that state (that server fires
    /// it when it applies the change, after this reply).
    pub fn read_at(&mut self, back: u8, sid: Sid, user: u8, request: &Request) -> (Reply, Vec<Fired>) {
        let i = self.history.len() - usize::from(back);
        let (reply, watch) = read(&self.history[i].1, request);
        let mut fired = Vec::new();
        if let Some((path, child)) = watch {
            let then = self.history[i].1.get(&path).copied();
            match Self::changed(then.as_ref(), self.nodes.get(&path), child) {
                Some(kind) => fired.push((sid, user, Event { path, kind, lasting: false })),
                None => self.watch(true, path, child, sid, user),
            }
        }
        (reply, fired)
    }

    /// The tree as of `back` states before the current one (0: the current one).
    pub fn tree(&self, back: u8) -> &Tree {
        match back {
            0 => &self.nodes,
            _ => &self.history[self.history.len() - usize::from(back)].1,
        }
    }

    /// The first change a watch on a node (`then`, `now`) would have seen.
    pub(crate) fn changed(then: Option<&Node>, now: Option<&Node>, child: bool) -> Option<EventKind> {
        match (then, now) {
            (None, None) => None,
            (None, Some(_)) => (!child).then_some(EventKind::Created),
            (Some(_), None) => Some(EventKind::Deleted),
            (Some(t), Some(n)) if t.czxid != n.czxid => Some(EventKind::Deleted),
            (Some(t), Some(n)) if child && t.cversion != n.cversion => Some(EventKind::ChildrenChanged),
            (Some(t), Some(n)) if !child && t.version != n.version => Some(EventKind::DataChanged),
            _ => None,
        }
    }
}
