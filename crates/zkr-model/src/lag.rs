//! Reads from a lagging server: the last few states the server kept ([`Server::keep`]), and a
//! read answered from one of them ([`Server::read_at`]). The world decides which states a
//! client's connection may still be shown (`world.rs`, `Client::floor`).

use crate::zk::{read, Event, EventKind, Fired, Node, Reply, Request, Server, Sid, Zxid};

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
                Some(kind) => fired.push((sid, user, Event { path, kind })),
                None => self.watch(true, path, child, sid, user),
            }
        }
        (reply, fired)
    }

    /// The first change a watch on a node (`then`, `now`) would have seen.
    fn changed(then: Option<&Node>, now: Option<&Node>, child: bool) -> Option<EventKind> {
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
