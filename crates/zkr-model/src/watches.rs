//! The server's watches: one-shot data and child watches (a read's), persistent and persistent
//! recursive ones (`addWatch`), what fires them, and what a dropped connection takes.

use crate::zk::{Event, EventKind, Fired, Path, Server, Sid};

/// How long a watch lasts and what it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Lasts {
    /// Fires once (a read's watch; `child` says which kind).
    Once,
    /// Stays: data and child events of its node (`addWatch` `PERSISTENT`).
    Persistent,
    /// Stays: created, deleted and data events of its node and every node below it
    /// (`addWatch` `PERSISTENT_RECURSIVE`).
    Recursive,
}

/// A watch a session's user left.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Watch {
    pub(crate) path: Path,
    pub(crate) child: bool,
    pub(crate) sid: Sid,
    pub(crate) user: u8,
    pub(crate) lasts: Lasts,
}

impl Watch {
    /// Does a change of `kind` to `path` (reported on the data side, or with `child` on the
    /// child side) fire this watch?
    fn fires(&self, path: Path, child: bool, kind: EventKind) -> bool {
        match self.lasts {
            Lasts::Once => self.path == path && self.child == child,
            // One event per change: a node's deletion is reported on both sides, the watch
            // fires on the data side (ZooKeeper suppresses the second).
            Lasts::Persistent => self.path == path && child == (kind == EventKind::ChildrenChanged),
            Lasts::Recursive => !child && (self.path == path || path.is_child_of(self.path)),
        }
    }
}

impl Server {
    pub(crate) fn watch(&mut self, on: bool, path: Path, child: bool, sid: Sid, user: u8) {
        if on {
            self.add(Watch { path, child, sid, user, lasts: Lasts::Once });
        }
    }

    /// Sets a persistent watch (recursive or not) for user `user` of session `sid`.
    pub(crate) fn add_persistent(&mut self, sid: Sid, user: u8, path: Path, recursive: bool) {
        let lasts = if recursive { Lasts::Recursive } else { Lasts::Persistent };
        self.add(Watch { path, child: false, sid, user, lasts });
    }

    pub(crate) fn add(&mut self, watch: Watch) {
        if !self.watches.contains(&watch) {
            self.watches.push(watch);
            self.watches.sort();
        }
    }

    /// Session `sid`'s connection dropped: its persistent watches go. ZooKeeper keeps a
    /// watch with the connection that set it; on reconnecting, the client's `SetWatches`
    /// sets the one-shot ones again and fires what changed meanwhile (which the world models
    /// by keeping them), but a persistent watch is set again with nothing fired for the
    /// changes in between (`DataTree.setWatches`), and `zookeeper-client` 0.11.2, zkr's
    /// client, does not send them at all. Either way the events in between are lost, and a
    /// recipe must set the watch again and read again.
    pub fn disconnect(&mut self, sid: Sid) {
        self.watches.retain(|w| w.sid != sid || w.lasts == Lasts::Once);
    }

    /// Fires the data or child watches on `path` (the one-shot ones go), and the persistent
    /// ones that cover it: each event names the node that changed.
    pub(crate) fn fire(&mut self, path: Path, child: bool, kind: EventKind, fired: &mut Vec<Fired>) {
        self.watches.retain(|w| {
            let hit = w.fires(path, child, kind);
            if hit {
                fired.push((w.sid, w.user, Event { path, kind, lasting: w.lasts != Lasts::Once }));
            }
            !hit || w.lasts != Lasts::Once
        });
    }
}
