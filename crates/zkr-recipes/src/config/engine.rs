//! The config watchers' policy on the watch engine (`crate::watch`): a map of key -> latest
//! decoded value, published as a snapshot after every burst of changes.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt as _;
use tokio::sync::{broadcast, watch};
use zkr_connection::path;
use zkr_connection::SessionClient;
use zookeeper_client::{EventType, OneshotWatcher, Stat, WatchedEvent};

use super::{Codec, ConfigEvent, ConfigSnapshot, Versioned};
use crate::watch::{read_tree, Consumer, Flow, ZkResult};

/// What a watcher covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// One node; its key is `""`.
    Node,
    /// Every node below the root that has data; keys are paths relative to the root.
    Tree,
}

/// A node as read: its data and `Stat`.
type Read = (Vec<u8>, Stat);

/// Every key read, and the one-shot watches set by the read when it set any.
type ReadAll = (BTreeMap<String, Read>, Vec<OneshotWatcher>);

/// The watcher's copy: the consumer the watch engine feeds.
pub(crate) struct Tracker<T> {
    pub(crate) root: String,
    pub(crate) scope: Scope,
    pub(crate) codec: Arc<dyn Codec<T>>,
    pub(crate) snapshot: watch::Sender<Arc<ConfigSnapshot<T>>>,
    pub(crate) events: broadcast::Sender<ConfigEvent<T>>,
    /// The working copy of the snapshot's entries.
    pub(crate) entries: BTreeMap<String, Versioned<T>>,
    /// The `mzxid` of the newest version read per key, decoded or not, so that a bad version is
    /// reported once.
    pub(crate) seen: BTreeMap<String, i64>,
    /// Events of the changes applied since the last publish: sent after the snapshot that
    /// shows them, so a subscriber that reacts to one reads the new value.
    pub(crate) pending: Vec<ConfigEvent<T>>,
    /// The watcher's share of `zkr_config_stale`.
    pub(crate) stale: crate::telemetry::ConfigStale,
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

impl<T: Send + Sync + 'static> Consumer for Tracker<T> {
    type Read = BTreeMap<String, Read>;

    fn read<'a>(
        &'a self,
        session: &'a zkr_connection::Session,
    ) -> impl Future<Output = ZkResult<Self::Read>> + Send + 'a {
        self.read_all(session.client(), false).map(|read| read.map(|(all, _)| all))
    }

    fn read_watched<'a>(
        &'a self,
        session: &'a zkr_connection::Session,
    ) -> impl Future<Output = ZkResult<ReadAll>> + Send + 'a {
        self.read_all(session.client(), true)
    }

    fn reset(&mut self, all: Self::Read) {
        self.apply_all(all);
    }

    async fn apply(&mut self, client: &SessionClient, burst: Vec<WatchedEvent>) -> ZkResult<Flow> {
        tracing::trace!(root = %self.root, events = burst.len(), "config watch: burst");
        let keys: Vec<(String, String)> = burst
            .into_iter()
            .filter(|e| {
                matches!(
                    e.event_type,
                    EventType::NodeCreated | EventType::NodeDataChanged | EventType::NodeDeleted
                )
            })
            .filter_map(|e| self.key_of(&e.path).map(|key| (key, e.path)))
            .collect();
        if self.read_keys(client, keys).await? {
            self.publish(false);
        } else {
            self.flush();
        }
        Ok(Flow::Continue(()))
    }

    fn session_ended(&mut self) {
        self.publish(true);
    }
}

impl<T: Send + Sync + 'static> Tracker<T> {
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
    pub(crate) fn apply_read(&mut self, key: &str, found: Option<Read>) -> bool {
        let found = found.filter(|(data, _)| self.scope == Scope::Node || !data.is_empty());
        match found {
            None => match self.entries.remove(key) {
                Some(old) => {
                    self.seen.remove(key);
                    self.pending.push(ConfigEvent::Changed {
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
                        self.pending.push(ConfigEvent::Changed { key: key.to_owned(), old, new: Some(new) });
                        true
                    }
                    Err(error) => {
                        tracing::warn!(node = %self.node_of(key), version = stat.version, %error, "config value does not decode; keeping the last good one");
                        self.pending.push(ConfigEvent::DecodeFailed {
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

    /// Publishes the snapshot, then the events of the changes it shows.
    pub(crate) fn publish(&mut self, stale: bool) {
        let snapshot = Arc::new(ConfigSnapshot { entries: self.entries.clone(), stale });
        self.snapshot.send_replace(snapshot);
        self.stale.set(stale);
        if self.pending.iter().any(|e| matches!(e, ConfigEvent::Changed { .. })) {
            crate::telemetry::config_updated();
        }
        self.flush();
    }

    fn flush(&mut self) {
        for event in self.pending.drain(..) {
            let _ = self.events.send(event);
        }
    }

    /// Replaces everything with a full read: keys missing from it are removed.
    fn apply_all(&mut self, all: BTreeMap<String, Read>) {
        let gone: Vec<String> = self.entries.keys().filter(|k| !all.contains_key(*k)).cloned().collect();
        for key in gone {
            self.apply_read(&key, None);
        }
        for (key, read) in all {
            self.apply_read(&key, Some(read));
        }
        self.publish(false);
    }

    /// Reads the node, or the whole tree level by level with every request of a level
    /// pipelined; with `watch`, sets one-shot watches on everything read (and an exists watch
    /// on a missing node, for its creation).
    async fn read_all(&self, client: &SessionClient, watch: bool) -> ZkResult<ReadAll> {
        let depth = match self.scope {
            Scope::Node => Some(0),
            Scope::Tree => None,
        };
        let (nodes, watchers) = read_tree(client, &self.root, depth, watch).await?;
        let all = nodes.into_iter().filter_map(|(node, read)| Some((self.key_of(&node)?, read))).collect();
        Ok((all, watchers))
    }

    /// Reads the nodes of `keys` after their events (pipelined) and applies what they hold
    /// now, which is at least as new as the event. Returns whether anything changed.
    async fn read_keys(&mut self, client: &SessionClient, keys: Vec<(String, String)>) -> ZkResult<bool> {
        let replies: Vec<_> = keys.iter().map(|(_, node)| client.get_data(node)).collect();
        let mut changed = false;
        for ((key, _), reply) in keys.iter().zip(replies) {
            let found = match reply.await {
                Ok(read) => Some(read),
                Err(zookeeper_client::Error::NoNode) => None,
                Err(e) => return Err(e),
            };
            changed |= self.apply_read(key, found);
        }
        Ok(changed)
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
