//! The engine behind both watchers: one task per watcher keeps a map of key -> latest value in
//! step with ZooKeeper through a persistent (recursive) watch, resynchronising fully after
//! every reconnect and every new session.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::select_all;
use futures::FutureExt as _;
use tokio::sync::{broadcast, watch};
use zkr_connection::{path, Session, ZkClient};
use zookeeper_client::{
    AddWatchMode, Client, EventType, OneshotWatcher, PersistentWatcher, SessionState, Stat,
};

use super::{Codec, ConfigEvent, ConfigSnapshot, Versioned};

/// What a watcher covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// One node; its key is `""`.
    Node,
    /// Every node below the root that has data; keys are paths relative to the root.
    Tree,
}

/// How the watcher learns of changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WatchMode {
    /// Persistent watches (ZooKeeper 3.6+), falling back to one-shot watches when the server
    /// does not know them.
    #[default]
    Auto,
    /// Persistent (recursive for a tree) watches only.
    Persistent,
    /// One-shot watches, re-set on every change, as servers before 3.6 need: every change
    /// makes the watcher read everything again.
    OneShot,
}

/// A node as read: its data and `Stat`.
type Read = (Vec<u8>, Stat);

pub(crate) struct Engine<T> {
    pub(crate) zk: ZkClient,
    pub(crate) root: String,
    pub(crate) scope: Scope,
    pub(crate) mode: WatchMode,
    pub(crate) codec: Arc<dyn Codec<T>>,
    pub(crate) snapshot: watch::Sender<Arc<ConfigSnapshot<T>>>,
    pub(crate) events: broadcast::Sender<ConfigEvent<T>>,
    /// Closed when the last handle of the watcher is dropped.
    pub(crate) alive: watch::Receiver<()>,
    /// The working copy of the snapshot's entries.
    pub(crate) entries: BTreeMap<String, Versioned<T>>,
    /// The `mzxid` of the newest version read per key, decoded or not, so that a bad version is
    /// reported once.
    pub(crate) seen: BTreeMap<String, i64>,
}

/// The key of `node` under `root`: `""` for the node itself in [`Scope::Node`], the relative
/// path in [`Scope::Tree`] (where the root itself is no key); `None` for other nodes.
pub(crate) fn key_of(scope: Scope, root: &str, node: &str) -> Option<String> {
    match scope {
        Scope::Node => (node == root).then(String::new),
        Scope::Tree => {
            let rest = if root == "/" { Some(node) } else { node.strip_prefix(root) }?;
            let key = rest.strip_prefix('/')?;
            (!key.is_empty()).then(|| key.to_owned())
        }
    }
}

/// Resolves when the watcher's last handle is dropped.
async fn dropped(mut alive: watch::Receiver<()>) {
    while alive.changed().await.is_ok() {}
}

/// A persistent watch set (and the tree read) by `start`, for [`Engine::run`] to follow.
pub(crate) struct Established {
    session: Session,
    watcher: PersistentWatcher,
}

/// Why a watch loop ended.
enum End {
    /// The session ended: start again on the next one.
    SessionEnded,
    /// Nobody holds the watcher any more.
    Dropped,
}

impl<T: Send + Sync + 'static> Engine<T> {
    pub(crate) fn key_of(&self, node: &str) -> Option<String> {
        key_of(self.scope, &self.root, node)
    }

    fn node_of(&self, key: &str) -> String {
        if key.is_empty() {
            self.root.clone()
        } else {
            path::join(&self.root, key)
        }
    }

    /// Applies what a read of `key` found (`None`: no node, or a tree node without data).
    /// Returns whether the entries changed.
    pub(crate) fn apply(&mut self, key: &str, found: Option<Read>) -> bool {
        let found = found.filter(|(data, _)| self.scope == Scope::Node || !data.is_empty());
        match found {
            None => match self.entries.remove(key) {
                Some(old) => {
                    self.seen.remove(key);
                    let _ = self.events.send(ConfigEvent::Changed {
                        key: key.to_owned(),
                        old: Some(old),
                        new: None,
                    });
                    true
                }
                None => {
                    self.seen.remove(key);
                    false
                }
            },
            Some((data, stat)) => {
                // Versions never go backwards: an older read than what we hold is ignored.
                if self.seen.get(key).is_some_and(|m| *m >= stat.mzxid) {
                    return false;
                }
                self.seen.insert(key.to_owned(), stat.mzxid);
                match self.codec.decode(&data) {
                    Ok(value) => {
                        let new = Versioned::new(value, data, &stat);
                        let old = self.entries.insert(key.to_owned(), new.clone());
                        let _ = self.events.send(ConfigEvent::Changed {
                            key: key.to_owned(),
                            old,
                            new: Some(new),
                        });
                        true
                    }
                    Err(error) => {
                        tracing::warn!(node = %self.node_of(key), version = stat.version, %error, "config value does not decode; keeping the last good one");
                        let _ = self.events.send(ConfigEvent::DecodeFailed {
                            key: key.to_owned(),
                            version: stat.version,
                            mzxid: stat.mzxid,
                            error,
                        });
                        false
                    }
                }
            }
        }
    }

    pub(crate) fn publish(&self, stale: bool) {
        let snapshot = Arc::new(ConfigSnapshot { entries: self.entries.clone(), stale });
        self.snapshot.send_replace(snapshot);
    }

    /// Replaces everything with a full read: keys missing from it are removed.
    fn apply_all(&mut self, all: BTreeMap<String, Read>) {
        let gone: Vec<String> = self.entries.keys().filter(|k| !all.contains_key(*k)).cloned().collect();
        for key in gone {
            self.apply(&key, None);
        }
        for (key, read) in all {
            self.apply(&key, Some(read));
        }
        self.publish(false);
    }

    /// Reads the node, or the whole tree level by level with every request of a level
    /// pipelined; with `watch`, sets one-shot watches on everything read.
    async fn read_all(
        &self,
        client: &Client,
        watch: bool,
    ) -> Result<(BTreeMap<String, Read>, Vec<OneshotWatcher>), zookeeper_client::Error> {
        let mut all = BTreeMap::new();
        let mut watchers = Vec::new();
        let mut level = vec![self.root.clone()];
        while !level.is_empty() {
            let mut next = Vec::new();
            if watch {
                let data: Vec<_> = level.iter().map(|p| client.get_and_watch_data(p)).collect();
                let children: Vec<_> = if self.scope == Scope::Tree {
                    level.iter().map(|p| client.get_and_watch_children(p)).collect()
                } else {
                    Vec::new()
                };
                for (node, reply) in level.iter().zip(data) {
                    match reply.await {
                        Ok((bytes, stat, w)) => {
                            watchers.push(w);
                            if let Some(key) = self.key_of(node) {
                                all.insert(key, (bytes, stat));
                            }
                        }
                        Err(zookeeper_client::Error::NoNode) => {
                            // Watch for its creation.
                            let (_, w) = client.check_and_watch_stat(node).await?;
                            watchers.push(w);
                        }
                        Err(e) => return Err(e),
                    }
                }
                for (node, reply) in level.iter().zip(children) {
                    match reply.await {
                        Ok((names, _, w)) => {
                            watchers.push(w);
                            next.extend(names.iter().map(|c| path::join(node, c)));
                        }
                        Err(zookeeper_client::Error::NoNode) => {}
                        Err(e) => return Err(e),
                    }
                }
            } else {
                let data: Vec<_> = level.iter().map(|p| client.get_data(p)).collect();
                let children: Vec<_> = if self.scope == Scope::Tree {
                    level.iter().map(|p| client.list_children(p)).collect()
                } else {
                    Vec::new()
                };
                for (node, reply) in level.iter().zip(data) {
                    match reply.await {
                        Ok(read) => {
                            if let Some(key) = self.key_of(node) {
                                all.insert(key, read);
                            }
                        }
                        Err(zookeeper_client::Error::NoNode) => {}
                        Err(e) => return Err(e),
                    }
                }
                for (node, reply) in level.iter().zip(children) {
                    match reply.await {
                        Ok(names) => next.extend(names.iter().map(|c| path::join(node, c))),
                        Err(zookeeper_client::Error::NoNode) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            level = next;
        }
        Ok((all, watchers))
    }

    /// The first full read, for `start`: on the current session, within `timeout`. With
    /// persistent watches the watch is set first and handed to [`run`](Self::run), so the
    /// tree is read once, not twice.
    pub(crate) async fn initial_sync(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<Established>, zkr_connection::Error> {
        self.zk.wait_connected(timeout).await?;
        if self.mode != WatchMode::OneShot {
            let established = self
                .zk
                .retry(|s| {
                    let this = &*self;
                    async move {
                        match this.watch_and_read(&s).await {
                            Ok((watcher, all)) => Ok(Some((s, watcher, all))),
                            Err(zookeeper_client::Error::Unimplemented) if this.mode == WatchMode::Auto => {
                                Ok(None)
                            }
                            Err(e) => Err(e),
                        }
                    }
                })
                .await?;
            if let Some((session, watcher, all)) = established {
                self.apply_all(all);
                return Ok(Some(Established { session, watcher }));
            }
            tracing::info!(root = %self.root, "server has no persistent watches; using one-shot watches");
            self.mode = WatchMode::OneShot;
        }
        let all = self
            .zk
            .retry(|s| {
                let this = &*self;
                async move { this.read_all(s.client(), false).await.map(|(all, _)| all) }
            })
            .await?;
        self.apply_all(all);
        Ok(None)
    }

    /// Runs until every handle is dropped.
    pub(crate) async fn run(mut self, mut first: Option<Established>) {
        let mut mode = self.mode;
        let mut generation = None;
        loop {
            let (session, established) = match first.take() {
                Some(Established { session, watcher }) => (session, Some(watcher)),
                None => {
                    let session = tokio::select! {
                        s = self.next_session(generation) => s,
                        () = dropped(self.alive.clone()) => return,
                    };
                    let Some(session) = session else { return };
                    (session, None)
                }
            };
            generation = Some(session.generation());
            // The manager may give a session up (suspended longer than it can live) without its
            // handle ever reporting an end: stop following it as soon as it is replaced.
            let zk = self.zk.clone();
            let followed = tokio::select! {
                r = self.follow(mode, &session, established) => r,
                () = zk.session_replaced(session.generation()) => Ok(End::SessionEnded),
            };
            let end = match followed {
                Err(zookeeper_client::Error::Unimplemented) if mode == WatchMode::Auto => {
                    tracing::info!(root = %self.root, "server has no persistent watches; using one-shot watches");
                    mode = WatchMode::OneShot;
                    continue;
                }
                Err(e) => {
                    tracing::debug!(root = %self.root, session = %format!("{:#x}", session.id()), error = %e, "config watch failed; starting again");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    generation = None;
                    continue;
                }
                Ok(end) => end,
            };
            match end {
                End::Dropped => return,
                End::SessionEnded => self.publish(true),
            }
        }
    }

    /// Follows the root on one session, with persistent or one-shot watches.
    async fn follow(
        &mut self,
        mode: WatchMode,
        session: &Session,
        established: Option<PersistentWatcher>,
    ) -> Result<End, zookeeper_client::Error> {
        match mode {
            WatchMode::OneShot => Ok(self.one_shot(session).await),
            WatchMode::Auto | WatchMode::Persistent => self.persistent(session, established).await,
        }
    }

    /// The current session if it is newer than `after`, else the next one; `None` once the
    /// manager is closed.
    async fn next_session(&self, after: Option<u64>) -> Option<Session> {
        let mut sessions = self.zk.session_watch();
        loop {
            let current = sessions.borrow_and_update().clone();
            if let Some(s) = current.filter(|s| after.is_none_or(|g| s.generation() > g)) {
                return Some(s);
            }
            if self.zk.is_closed() || sessions.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Sets the persistent watch, then reads everything: whatever changes after the read is an
    /// event.
    async fn watch_and_read(
        &self,
        session: &Session,
    ) -> Result<(PersistentWatcher, BTreeMap<String, Read>), zookeeper_client::Error> {
        let mode = if self.scope == Scope::Tree {
            AddWatchMode::PersistentRecursive
        } else {
            AddWatchMode::Persistent
        };
        let watcher = session.client().watch(&self.root, mode).await?;
        let (all, _) = self.read_all(session.client(), false).await?;
        Ok((watcher, all))
    }

    /// The persistent-watch loop on one session, on a watch already set and read (`start`'s)
    /// or a new one.
    async fn persistent(
        &mut self,
        session: &Session,
        established: Option<PersistentWatcher>,
    ) -> Result<End, zookeeper_client::Error> {
        let client = session.client();
        let mut watcher = match established {
            Some(watcher) => watcher,
            None => {
                let (watcher, all) = self.watch_and_read(session).await?;
                self.apply_all(all);
                watcher
            }
        };
        let mut disconnected = false;
        loop {
            let first = tokio::select! {
                e = watcher.changed() => e,
                () = dropped(self.alive.clone()) => return Ok(End::Dropped),
            };
            // Take every event already delivered, so that a burst (a multi-op, a busy writer)
            // costs one pipelined round of reads and one new snapshot.
            let mut batch = vec![first];
            while !batch.last().is_some_and(|e| e.session_state.is_terminated()) {
                match watcher.changed().now_or_never() {
                    Some(event) => batch.push(event),
                    None => break,
                }
            }
            tracing::trace!(session = %format!("{:#x}", session.id()), events = batch.len(), "config watch: batch");
            let mut reads: Vec<(String, String)> = Vec::new();
            let mut changed = false;
            for event in batch {
                match event.event_type {
                    EventType::Session => {
                        tracing::debug!(root = %self.root, session = %format!("{:#x}", session.id()), state = ?event.session_state, "config watch: session event");
                        changed |= self.read_keys(client, std::mem::take(&mut reads)).await?;
                        if event.session_state.is_terminated() {
                            if changed {
                                self.publish(false);
                            }
                            return Ok(End::SessionEnded);
                        }
                        match event.session_state {
                            SessionState::Disconnected => disconnected = true,
                            SessionState::SyncConnected | SessionState::ConnectedReadOnly if disconnected => {
                                // Set the watch again and read everything: events may have been
                                // lost while disconnected (ZOOKEEPER-4698), and zookeeper-client
                                // 0.11.2 does not re-register persistent watches on a new
                                // connection (its `resend_watches` only ever sends the
                                // one-shot kinds), so the old watch is gone on the server. The
                                // new watcher replaces the old one before it is dropped, so no
                                // RemoveWatches goes out.
                                disconnected = false;
                                let (renewed, all) = self.watch_and_read(session).await?;
                                watcher = renewed;
                                self.apply_all(all);
                            }
                            _ => {}
                        }
                    }
                    EventType::NodeCreated | EventType::NodeDataChanged | EventType::NodeDeleted => {
                        if let Some(key) = self.key_of(&event.path) {
                            reads.push((key, event.path));
                        }
                    }
                    EventType::NodeChildrenChanged => {}
                }
            }
            changed |= self.read_keys(client, reads).await?;
            if changed {
                self.publish(false);
            }
        }
    }

    /// Reads the nodes of `keys` after their events (pipelined) and applies what they hold
    /// now, which is at least as new as the event. Returns whether anything changed.
    async fn read_keys(
        &mut self,
        client: &Client,
        keys: Vec<(String, String)>,
    ) -> Result<bool, zookeeper_client::Error> {
        let replies: Vec<_> = keys.iter().map(|(_, node)| client.get_data(node)).collect();
        let mut changed = false;
        for ((key, _), reply) in keys.iter().zip(replies) {
            let found = match reply.await {
                Ok(read) => Some(read),
                Err(zookeeper_client::Error::NoNode) => None,
                Err(e) => return Err(e),
            };
            changed |= self.apply(key, found);
        }
        Ok(changed)
    }

    /// The one-shot-watch loop on one session: read everything with watches, wait for any of
    /// them, read again.
    async fn one_shot(&mut self, session: &Session) -> End {
        let client = session.client();
        loop {
            let (all, watchers) = match self.read_all(client, true).await {
                Ok(read) => read,
                Err(e) if zkr_connection::is_session_error(&e) => return End::SessionEnded,
                Err(e) => {
                    tracing::debug!(root = %self.root, error = %e, "config read failed; trying again");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            self.apply_all(all);
            if watchers.is_empty() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            let fired = select_all(watchers.into_iter().map(|w| w.changed().boxed()));
            let event = tokio::select! {
                (e, _, _) = fired => e,
                () = dropped(self.alive.clone()) => return End::Dropped,
            };
            if event.session_state.is_terminated() {
                return End::SessionEnded;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_paths_relative_to_the_root() {
        assert_eq!(key_of(Scope::Node, "/config/a", "/config/a").as_deref(), Some(""));
        assert_eq!(key_of(Scope::Node, "/config/a", "/config/a/b"), None);
        assert_eq!(key_of(Scope::Tree, "/config", "/config/db/url").as_deref(), Some("db/url"));
        assert_eq!(key_of(Scope::Tree, "/config", "/config"), None);
        assert_eq!(key_of(Scope::Tree, "/config", "/configx/a"), None, "a sibling with the same prefix");
        assert_eq!(key_of(Scope::Tree, "/", "/a/b").as_deref(), Some("a/b"));
        assert_eq!(key_of(Scope::Tree, "/", "/"), None);
    }
}
