//! [`ChildNames`]: the names of a directory's children, kept by the watch engine without
//! reading a single child. What a queue consumer waits on: it starts with one listing however
//! many items wait, holds no item's data, and reads an item only when it takes it (as Curator's
//! queues do).

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;
use zkr_connection::{Session, SessionClient, ZkClient};
use zookeeper_client::{EventType, OneshotWatcher, WatchedEvent};

use super::{Consumer, Flow, Watch, WatchMode, ZkResult};

/// The names at one moment: immutable, cheap to share (a persistent set: a change copies a
/// path of the tree, not the set).
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    names: rpds::RedBlackTreeSetSync<String>,
    initialized: bool,
    stale: bool,
}

impl Names {
    /// Read once, and not since left behind by a session that ended.
    pub(crate) fn is_confirmed(&self) -> bool {
        self.initialized && !self.stale
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// The names in byte order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    pub(crate) fn len(&self) -> usize {
        self.names.size()
    }
}

/// A live copy of the names of `dir`'s children (see the module docs). Cheap to clone; the
/// watch ends when the last clone is dropped.
#[derive(Debug, Clone)]
pub(crate) struct ChildNames {
    snapshots: watch::Receiver<Arc<Names>>,
    _alive: super::Alive,
}

impl ChildNames {
    /// Sets the watch and lists `dir` once (within the manager's connection timeout, then as
    /// its retry policy allows); then follows the manager's sessions until dropped.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is written to ZooKeeper, and the watch goes with the dropped future.
    pub(crate) async fn start(zk: &ZkClient, dir: &str) -> Result<Self, zkr_connection::Error> {
        let (snapshot, snapshots) = watch::channel(Arc::new(Names { stale: true, ..Names::default() }));
        let copy = Copy { dir: dir.to_owned(), names: Names::default(), snapshot };
        let mut engine = Watch::new(zk, dir, true, WatchMode::Auto, copy);
        let first = engine.first_sync(zk.connection_timeout()).await?;
        Ok(ChildNames { snapshots, _alive: engine.spawn_following(Some(first)) })
    }

    /// Every snapshot from now on.
    pub(crate) fn snapshots(&self) -> watch::Receiver<Arc<Names>> {
        self.snapshots.clone()
    }
}

/// The policy on the watch engine: names only, one snapshot per burst.
struct Copy {
    dir: String,
    names: Names,
    snapshot: watch::Sender<Arc<Names>>,
}

impl Copy {
    fn publish(&self) {
        self.snapshot.send_replace(Arc::new(self.names.clone()));
    }

    fn child<'p>(&self, path: &'p str) -> Option<&'p str> {
        child_name(&self.dir, path)
    }

    fn on_event(&mut self, event: WatchedEvent) {
        if event.path == self.dir {
            if event.event_type == EventType::NodeDeleted {
                self.names.names = rpds::RedBlackTreeSetSync::new_sync();
            }
            return;
        }
        let Some(name) = self.child(&event.path) else { return };
        match event.event_type {
            EventType::NodeCreated => self.names.names.insert_mut(name.to_owned()),
            EventType::NodeDeleted => {
                self.names.names.remove_mut(name);
            }
            _ => {}
        }
    }
}

/// The name of the child `path` stands for, if it is a direct child of `dir` (not `dir`
/// itself, not a grandchild).
pub(crate) fn child_name<'p>(dir: &str, path: &'p str) -> Option<&'p str> {
    let name = path.strip_prefix(dir)?;
    let name = if dir == "/" { name } else { name.strip_prefix('/')? };
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

/// The directory's children; none while it does not exist.
pub(crate) async fn list(client: &SessionClient, dir: &str) -> ZkResult<Vec<String>> {
    match client.list_children(dir).await {
        Err(zookeeper_client::Error::NoNode) => Ok(Vec::new()),
        listed => listed,
    }
}

impl Consumer for Copy {
    type Read = Vec<String>;

    fn read<'a>(&'a self, session: &'a Session) -> impl Future<Output = ZkResult<Vec<String>>> + Send + 'a {
        list(session.client(), &self.dir)
    }

    /// Before 3.6: the listing with a children watch, or an existence watch on a missing
    /// directory (listed again if it appeared in between).
    async fn read_watched(&self, session: &Session) -> ZkResult<(Vec<String>, Vec<OneshotWatcher>)> {
        let client = session.client();
        loop {
            match client.list_and_watch_children(&self.dir).await {
                Ok((names, watcher)) => return Ok((names, vec![watcher])),
                Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(e),
            }
            if let (None, watcher) = client.check_and_watch_stat(&self.dir).await? {
                return Ok((Vec::new(), vec![watcher]));
            }
        }
    }

    fn reset(&mut self, read: Vec<String>) {
        self.names.names = read.into_iter().collect();
        self.names.initialized = true;
        self.names.stale = false;
        self.publish();
    }

    fn apply<'a>(
        &'a mut self,
        _: &'a SessionClient,
        burst: Vec<WatchedEvent>,
    ) -> impl Future<Output = ZkResult<Flow>> + Send + 'a {
        for event in burst {
            self.on_event(event);
        }
        std::future::ready(Ok(Flow::Continue(())))
    }

    fn burst_done(&mut self) {
        self.publish();
    }

    fn session_ended(&mut self) {
        self.names.stale = true;
        self.publish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(dir: &str) -> (Copy, watch::Receiver<Arc<Names>>) {
        let (snapshot, snapshots) = watch::channel(Arc::new(Names::default()));
        (Copy { dir: dir.into(), names: Names::default(), snapshot }, snapshots)
    }

    fn names(snapshots: &watch::Receiver<Arc<Names>>) -> Vec<String> {
        snapshots.borrow().iter().map(str::to_owned).collect()
    }

    #[test]
    fn children_come_and_go_and_nothing_else_counts() {
        let (mut copy, snapshots) = copy("/q");
        copy.reset(vec!["b".into(), "a".into()]);
        assert!(snapshots.borrow().is_confirmed());
        assert_eq!(names(&snapshots), ["a", "b"]);
        for (kind, path) in [
            (EventType::NodeCreated, "/q/c"),
            (EventType::NodeDeleted, "/q/a"),
            (EventType::NodeCreated, "/q/c/grandchild"),
            (EventType::NodeDataChanged, "/q/b"),
            (EventType::NodeCreated, "/qq"),
            (EventType::NodeCreated, "/q"),
        ] {
            copy.on_event(WatchedEvent::new(kind, path));
        }
        copy.burst_done();
        assert_eq!(names(&snapshots), ["b", "c"]);
        copy.on_event(WatchedEvent::new(EventType::NodeDeleted, "/q"));
        copy.burst_done();
        assert!(names(&snapshots).is_empty());
        copy.session_ended();
        assert!(!snapshots.borrow().is_confirmed());
        assert_eq!(snapshots.borrow().len(), 0);
    }

    #[test]
    fn the_root_directory_names_its_children_too() {
        let (copy, _) = copy("/");
        assert_eq!(copy.child("/a"), Some("a"));
        assert_eq!(copy.child("/a/b"), None);
        assert_eq!(copy.child("/"), None);
    }
}
