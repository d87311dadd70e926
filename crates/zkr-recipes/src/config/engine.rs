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
            self.publish(false, true);
        } else {
            self.flush();
        }
        Ok(Flow::Continue(()))
    }

    fn session_ended(&mut self) {
        self.publish(true, false);
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
        let Some((data, stat)) = found else {
            self.seen.remove(key);
            let Some(old) = self.entries.remove(key) else { return false };
            self.pending.push(ConfigEvent::Changed { key: key.to_owned(), old: Some(old), new: None });
            return true;
        };
        // Versions never go backwards: an older read than what we hold is ignored.
        match self.seen.get_mut(key) {
            Some(seen) if *seen >= stat.mzxid => return false,
            Some(seen) => *seen = stat.mzxid,
            None => drop(self.seen.insert(key.to_owned(), stat.mzxid)),
        }
        match self.codec.decode(&data) {
            Ok(value) => {
                let new = Versioned::new(value, data, &stat);
                let old = match self.entries.get_mut(key) {
                    Some(slot) => Some(std::mem::replace(slot, new.clone())),
                    None => self.entries.insert(key.to_owned(), new.clone()),
                };
                self.pending.push(ConfigEvent::Changed { key: key.to_owned(), old, new: Some(new) });
                true
            }
            Err(error) => {
                tracing::warn!(node = %self.node_of(key), version = stat.version, %error, "config value does not decode; keeping the last good one");
                let (version, mzxid) = (stat.version, stat.mzxid);
                self.pending.push(ConfigEvent::DecodeFailed { key: key.to_owned(), version, mzxid, error });
                false
            }
        }
    }

    /// Publishes the snapshot, then the events of the changes it shows; `changed`: it shows a
    /// change (`zkr_config_last_update_timestamp_seconds`).
    pub(crate) fn publish(&mut self, stale: bool, changed: bool) {
        let snapshot = Arc::new(ConfigSnapshot { entries: self.entries.clone(), stale });
        self.snapshot.send_replace(snapshot);
        self.stale.set(stale);
        if changed {
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
        let mut changed = false;
        for key in gone {
            changed |= self.apply_read(&key, None);
        }
        for (key, read) in all {
            changed |= self.apply_read(&key, Some(read));
        }
        self.publish(false, changed);
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
        if let [(key, node)] = keys.as_slice() {
            // One key (a `ConfigWatcher`): no list of replies to build.
            return Ok(self.apply_read(key, found(client.get_data(node).await)?));
        }
        let replies: Vec<_> = keys.iter().map(|(_, node)| client.get_data(node)).collect();
        let mut changed = false;
        for ((key, _), reply) in keys.iter().zip(replies) {
            changed |= self.apply_read(key, found(reply.await)?);
        }
        Ok(changed)
    }
}

/// A read's reply as what it found: `NoNode` is no node.
fn found(reply: ZkResult<Read>) -> ZkResult<Option<Read>> {
    match reply {
        Ok(read) => Ok(Some(read)),
        Err(zookeeper_client::Error::NoNode) => Ok(None),
        Err(e) => Err(e),
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
