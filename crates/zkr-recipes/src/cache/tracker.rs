//! The cache's policy on the watch engine (`crate::watch`): every node under the root down to
//! a depth, with its data and `Stat`; one snapshot and one round of events per burst.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::{broadcast, watch};
use zkr_connection::path;
use zkr_connection::SessionClient;
use zookeeper_client::{EventType, MultiReadResult, Stat, WatchedEvent};

use super::store::Tree;
use super::{CacheEvent, CacheSnapshot, CachedNode};
use crate::watch::{multi_read, read_tree, Consumer, Flow, ZkResult};

/// Which nodes and what of them the cache keeps.
pub(super) struct Keep {
    /// How deep below the root nodes are kept (`Some(0)`: the root alone).
    pub(super) max_depth: Option<usize>,
    /// Whether node data is kept (Curator's `dataNotCached` when not).
    pub(super) data: bool,
    /// Which nodes below the root are kept and which are read below.
    pub(super) selector: Option<Arc<dyn super::CacheSelector>>,
}

/// The cache's copy: the consumer the watch engine feeds.
pub(super) struct Tracker {
    root: String,
    keep: Keep,
    /// The copy; the latest snapshot shares it until the next change.
    nodes: Tree,
    initialized: bool,
    snapshot: watch::Sender<Arc<CacheSnapshot>>,
    events: broadcast::Sender<CacheEvent>,
    /// The events of the burst being applied, published with its snapshot when it is done.
    pending: Vec<CacheEvent>,
    /// Whether node data is gzip to decompress (Curator's `COMPRESSED_DATA`): `Some` with the
    /// most one node may inflate to (the client's `max_decompressed_len`).
    compressed: Option<usize>,
    /// The cache's share of `zkr_cache_nodes`.
    size: crate::telemetry::SizeGauge,
}

/// How many levels below `root` `node` is: `Some(0)` for the root itself, `None` for a node
/// outside it.
pub(super) fn depth_under(root: &str, node: &str) -> Option<usize> {
    if node == root {
        return Some(0);
    }
    let rest = if root == "/" { node.strip_prefix('/') } else { node.strip_prefix(root)?.strip_prefix('/') }?;
    (!rest.is_empty()).then(|| rest.split('/').count())
}

impl Consumer for Tracker {
    type Read = BTreeMap<String, CachedNode>;

    fn read<'a>(
        &'a self,
        session: &'a zkr_connection::Session,
    ) -> impl std::future::Future<Output = ZkResult<Self::Read>> + Send + 'a {
        self.read_all(session.client())
    }

    /// For servers without persistent watches (before 3.6): the whole tree, with one-shot
    /// watches on every node read.
    async fn read_watched(
        &self,
        session: &zkr_connection::Session,
    ) -> ZkResult<(Self::Read, Vec<zookeeper_client::OneshotWatcher>)> {
        let (nodes, watchers) = read_tree(session.client(), &self.root, self.keep.max_depth, true).await?;
        let nodes = nodes.into_iter().filter(|(path, _)| self.keeps(path)).map(|(path, (data, stat))| {
            let node = self.cached(&path, data, stat);
            (path, node)
        });
        Ok((nodes.collect(), watchers))
    }

    fn reset(&mut self, read: Self::Read) {
        let gone: Vec<String> = self.nodes.iter().map(|(p, _)| p).filter(|p| !read.contains_key(p)).collect();
        // A burst that failed part-way applied some of its rounds: their events go out now.
        let mut events = std::mem::take(&mut self.pending);
        // What a full read finds changed goes out in the order it was written (by `mzxid`),
        // as the events of a watch would; the deletes it finds carry no zxid and come last,
        // children before their parents. Applied in path order: parents before children.
        let (mut written, mut made) = (Vec::new(), Vec::new());
        for (path, node) in read {
            let mzxid = node.zxids().1;
            self.put(path, Some(node), &mut made);
            written.extend(made.drain(..).map(|e| (mzxid, e)));
        }
        written.sort_by_key(|(mzxid, _)| *mzxid);
        events.extend(written.into_iter().map(|(_, e)| e));
        for path in gone.into_iter().rev() {
            self.put(path, None, &mut events);
        }
        if !self.initialized {
            self.initialized = true;
            events.push(CacheEvent::Initialized);
        }
        self.pending = events;
        self.publish(false);
    }

    async fn apply(&mut self, client: &SessionClient, mut burst: Vec<WatchedEvent>) -> ZkResult<Flow> {
        burst.retain(|event| {
            let relevant = matches!(
                event.event_type,
                EventType::NodeCreated | EventType::NodeDataChanged | EventType::NodeDeleted
            );
            relevant && self.keeps(&event.path)
        });
        // A node's events in a row take one read (one read after a later event of the same
        // node finds what the first would have, and applies as nothing new).
        burst.dedup_by(|a, b| a.path == b.path);
        if let [event] = burst.as_slice() {
            // The usual burst: one read, and no vector of replies.
            let reply = client.get_data(&event.path).await;
            self.settle(burst.into_iter().map(|event| event.path), [reply])?;
            return Ok(Flow::Continue(()));
        }
        let paths: Vec<String> = burst.into_iter().map(|event| event.path).collect();
        // Pipelined: every read is sent before the first reply is awaited; each finds the node
        // at least as new as its event.
        let replies: Vec<_> = paths.iter().map(|p| client.get_data(p)).collect();
        let mut read = Vec::with_capacity(replies.len());
        for reply in replies {
            read.push(reply.await);
        }
        self.settle(paths, read)?;
        Ok(Flow::Continue(()))
    }

    fn burst_done(&mut self) {
        if !self.pending.is_empty() {
            self.publish(false);
        }
    }

    fn session_ended(&mut self) {
        self.publish(true);
    }
}

impl Tracker {
    /// An empty copy of the tree at `root` (what `keep` says of it), publishing its snapshots to
    /// `snapshot` and its events to `events`; `compressed`: the inflate cap of gzip data, if
    /// the data is to be inflated; `size`: the cache's share of `zkr_cache_nodes`.
    pub(super) fn new(
        root: &str,
        keep: Keep,
        snapshot: watch::Sender<Arc<CacheSnapshot>>,
        events: broadcast::Sender<CacheEvent>,
        compressed: Option<usize>,
        size: crate::telemetry::SizeGauge,
    ) -> Self {
        Tracker {
            root: root.to_owned(),
            keep,
            nodes: Tree::new(root),
            initialized: false,
            snapshot,
            events,
            pending: Vec::new(),
            compressed,
            size,
        }
    }

    /// The node as the cache keeps it: its data decompressed when the cache is told so (kept
    /// as it is, with a warning, when it is not gzip or inflates past the cap). `zookeeper-client` hands the data back
    /// in the reply's buffer, which also held its length prefix and the `Stat` (72 bytes more
    /// than the data); the copy keeps only the data.
    fn cached(&self, path: &str, mut data: Vec<u8>, stat: Stat) -> CachedNode {
        if let Some(max) = self.compressed {
            match zkr_connection::compression::decompress_limited(path, &data, max) {
                Ok(plain) => data = plain,
                Err(error) => tracing::warn!(%error, "cached as it is"),
            }
        }
        CachedNode::named(path::node_name(path), &data, &stat)
    }

    fn keeps(&self, node: &str) -> bool {
        let Some(depth) = depth_under(&self.root, node) else { return false };
        if self.keep.max_depth.is_some_and(|max| depth > max) {
            return false;
        }
        let Some(selector) = &self.keep.selector else { return true };
        // Every node from the root's child down to `node` accepted, every parent traversed.
        let mut at = node.len();
        for _ in 0..depth {
            let (parent, _) = node[..at].rsplit_once('/').unwrap_or_default();
            let parent = if parent.is_empty() { "/" } else { parent };
            if !selector.accept_child(&node[..at]) || !selector.traverse_children(parent) {
                return false;
            }
            at = parent.len();
        }
        true
    }

    /// Applies what a read of `path` found and adds its events to `events`; a read no newer
    /// than what the cache holds (same `mzxid`, same node) changes nothing, so nothing is
    /// reported twice. A node gone takes what the copy holds below it too (each reported,
    /// children first).
    fn put(&mut self, path: String, found: Option<CachedNode>, events: &mut Vec<CacheEvent>) {
        let Some(new) = found else {
            let gone = self.nodes.remove(&path);
            events.extend(gone.into_iter().map(|(path, old)| CacheEvent::Deleted { path, old }));
            return;
        };
        if self.nodes.get(&path).is_some_and(|old| !is_newer(old.zxids(), new.zxids())) {
            return;
        }
        let kept = if self.keep.data { new.clone() } else { new.without_data() };
        match self.nodes.put(&path, &kept) {
            Ok(Some(old)) => events.push(CacheEvent::Changed { path, old, new }),
            Ok(None) => events.push(CacheEvent::Created { path, node: new }),
            Err(_) => tracing::warn!(path = ?path, "not cached: its parent is not in the cache"),
        }
    }

    /// Applies a burst's reads of `paths`, all or none: when one failed, the copy stays as it
    /// was and nothing is reported, and the resync after the error reads everything again.
    /// (Applying the reads before the failure would change the copy with no event sent, so the
    /// resync would find those changes already in the copy and never report them.)
    fn settle<R>(&mut self, paths: impl IntoIterator<Item = String>, read: R) -> ZkResult<()>
    where
        R: AsRef<[ZkResult<(Vec<u8>, Stat)>]> + IntoIterator<Item = ZkResult<(Vec<u8>, Stat)>>,
    {
        let failed = |reply: &ZkResult<_>| match reply {
            Err(e) if *e != zookeeper_client::Error::NoNode => Some(e.clone()),
            _ => None,
        };
        if let Some(error) = read.as_ref().iter().find_map(failed) {
            return Err(error);
        }
        // Published when the whole burst is applied (`burst_done`).
        let mut events = std::mem::take(&mut self.pending);
        for (path, reply) in paths.into_iter().zip(read) {
            let found = reply.ok().map(|(data, stat)| self.cached(&path, data, stat));
            self.put(path, found, &mut events);
        }
        self.pending = events;
        Ok(())
    }

    /// Publishes the snapshot, then (unless it is `stale`: they wait for the resync) the
    /// pending events that made it: a subscriber that reacts to an event finds the snapshot
    /// already showing it. The pending vector keeps its room for the next burst.
    fn publish(&mut self, stale: bool) {
        let snapshot = CacheSnapshot { nodes: self.nodes.clone(), initialized: self.initialized, stale };
        self.snapshot.send_replace(Arc::new(snapshot));
        self.size.set(self.nodes.len());
        if !stale {
            for event in self.pending.drain(..) {
                let _ = self.events.send(event);
            }
        }
    }

    /// Reads the root and every node below it down to the depth limit, level by level, with
    /// every request of a level sent before the first reply is awaited. Children are listed
    /// only for nodes whose `Stat` counts some: the watch is set before the read, so a child
    /// created after its parent was read is an event (and a leaf costs one request, not two).
    async fn read_all(&self, client: &SessionClient) -> ZkResult<BTreeMap<String, CachedNode>> {
        let mut all = BTreeMap::new();
        let mut level = vec![self.root.clone()];
        let mut depth = 0;
        while !level.is_empty() {
            let deeper = self.keep.max_depth.is_none_or(|max| depth < max);
            let data = multi_read(client, &level, false).await?;
            let mut parents = Vec::new();
            for (node, reply) in level.iter().zip(data) {
                match reply {
                    MultiReadResult::Data { data, stat } => {
                        let traverse = self.keep.selector.as_ref().is_none_or(|s| s.traverse_children(node));
                        if deeper && traverse && stat.num_children > 0 {
                            parents.push(node.clone());
                        }
                        all.insert(node.clone(), self.cached(node, data, stat));
                    }
                    MultiReadResult::Error { err: zookeeper_client::Error::NoNode } => {}
                    MultiReadResult::Error { err } => return Err(err),
                    _ => {}
                }
            }
            let children = multi_read(client, &parents, true).await?;
            let mut next = Vec::new();
            for (node, reply) in parents.iter().zip(children) {
                match reply {
                    MultiReadResult::Children { children } => {
                        let accepted =
                            |c: &String| self.keep.selector.as_ref().is_none_or(|s| s.accept_child(c));
                        next.extend(children.iter().map(|c| path::join(node, c)).filter(accepted))
                    }
                    MultiReadResult::Error { err: zookeeper_client::Error::NoNode } => {}
                    MultiReadResult::Error { err } => return Err(err),
                    _ => {}
                }
            }
            level = next;
            depth += 1;
        }
        Ok(all)
    }
}

/// Is `new` a later state of the node than `old` (each `(czxid, mzxid)`): a later change, or
/// a node created again?
fn is_newer((old_czxid, old_mzxid): (i64, i64), (new_czxid, new_mzxid): (i64, i64)) -> bool {
    new_mzxid > old_mzxid || new_czxid != old_czxid
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_are_counted_below_the_root() {
        assert_eq!(depth_under("/a", "/a"), Some(0));
        assert_eq!(depth_under("/a", "/a/b"), Some(1));
        assert_eq!(depth_under("/a", "/a/b/c"), Some(2));
        assert_eq!(depth_under("/a", "/ab"), None, "a sibling with the same prefix");
        assert_eq!(depth_under("/a", "/b"), None);
        assert_eq!(depth_under("/", "/"), Some(0));
        assert_eq!(depth_under("/", "/x/y"), Some(2));
    }

    fn tracker(max_depth: Option<usize>) -> (Tracker, broadcast::Receiver<CacheEvent>) {
        let (events, receiver) = broadcast::channel(64);
        let snapshot = watch::channel(Arc::new(CacheSnapshot::default())).0;
        let size = crate::telemetry::SizeGauge::cache_nodes("/r", false);
        let keep = Keep { max_depth, data: true, selector: None };
        let tracker = Tracker::new("/r", keep, snapshot, events, None, size);
        (tracker, receiver)
    }

    fn node(czxid: i64, mzxid: i64, data: &str) -> CachedNode {
        CachedNode::made(czxid, mzxid, data.as_bytes())
    }

    fn kinds(receiver: &mut broadcast::Receiver<CacheEvent>) -> Vec<String> {
        std::iter::from_fn(|| receiver.try_recv().ok())
            .map(|e| match e {
                CacheEvent::Initialized => "initialized".to_owned(),
                CacheEvent::Created { path, .. } => format!("created {path}"),
                CacheEvent::Changed { path, .. } => format!("changed {path}"),
                CacheEvent::Deleted { path, .. } => format!("deleted {path}"),
                CacheEvent::Lagged { .. } => "lagged".to_owned(),
            })
            .collect()
    }

    #[test]
    fn a_resync_reports_only_what_changed_and_initialized_once() {
        let (mut tracker, mut events) = tracker(None);
        let first = BTreeMap::from([("/r".to_owned(), node(1, 1, "")), ("/r/a".to_owned(), node(2, 2, "x"))]);
        tracker.reset(first);
        assert_eq!(kinds(&mut events), ["created /r", "created /r/a", "initialized"]);
        // Read again after a reconnect: /r unchanged, /r/a changed, /r/b new; then /r/a deleted
        // and created again with the same data.
        let second = BTreeMap::from([
            ("/r".to_owned(), node(1, 1, "")),
            ("/r/a".to_owned(), node(2, 5, "y")),
            ("/r/b".to_owned(), node(6, 6, "")),
        ]);
        tracker.reset(second);
        assert_eq!(kinds(&mut events), ["changed /r/a", "created /r/b"]);
        // Deletes carry no zxid: they come after what the read found written.
        let third = BTreeMap::from([("/r".to_owned(), node(1, 1, "")), ("/r/a".to_owned(), node(9, 9, "y"))]);
        tracker.reset(third);
        assert_eq!(kinds(&mut events), ["changed /r/a", "deleted /r/b"]);
        // What was written goes out in the order it was written (`mzxid`), not by path.
        let fourth = BTreeMap::from([
            ("/r".to_owned(), node(1, 12, "")),
            ("/r/a".to_owned(), node(9, 11, "z")),
            ("/r/c".to_owned(), node(10, 10, "")),
        ]);
        tracker.reset(fourth);
        assert_eq!(kinds(&mut events), ["created /r/c", "changed /r/a", "changed /r"]);
        assert!(tracker.snapshot.borrow().initialized);
    }

    #[test]
    fn an_older_read_is_ignored() {
        let (mut tracker, mut events) = tracker(None);
        let mut put = |path: &str, node| {
            let mut made = Vec::new();
            tracker.put(path.to_owned(), Some(node), &mut made);
            made.len()
        };
        assert_eq!(put("/r", node(1, 1, "")), 1);
        assert_eq!(put("/r/a", node(2, 7, "new")), 1);
        assert_eq!(put("/r/a", node(2, 5, "old")), 0);
        assert!(kinds(&mut events).is_empty(), "put reports; publish sends");
        assert_eq!(tracker.nodes.get("/r/a").unwrap().data(), b"new");
    }

    /// Issue: across disconnects and expiries, every change is reported once. A burst whose
    /// reads failed part-way (the connection lost, the session expired) used to be applied up
    /// to the failure with its events dropped; the resync then found those changes in the copy
    /// and reported nothing (tests/tests/cache_faults.rs: replayed events missing changes).
    #[test]
    fn a_burst_with_a_failed_read_changes_nothing_and_the_resync_reports_it() {
        let (mut tracker, mut events) = tracker(None);
        tracker
            .reset(BTreeMap::from([("/r".to_owned(), node(1, 1, "")), ("/r/a".to_owned(), node(2, 2, "x"))]));
        assert_eq!(kinds(&mut events).len(), 3);
        let paths = ["/r/a".to_owned(), "/r/b".to_owned()];
        let read =
            vec![Ok((b"y".to_vec(), node(2, 5, "y").stat())), Err(zookeeper_client::Error::ConnectionLoss)];
        assert_eq!(tracker.settle(paths.clone(), read), Err(zookeeper_client::Error::ConnectionLoss));
        assert!(kinds(&mut events).is_empty());
        assert_eq!(tracker.nodes.get("/r/a").unwrap().data(), b"x", "the copy is as it was");
        // The resync after the error finds the change and reports it.
        tracker
            .reset(BTreeMap::from([("/r".to_owned(), node(1, 1, "")), ("/r/a".to_owned(), node(2, 5, "y"))]));
        assert_eq!(kinds(&mut events), ["changed /r/a"]);
        // A node gone (NoNode) is a read like any other.
        let read = vec![Ok((b"z".to_vec(), node(2, 6, "z").stat())), Err(zookeeper_client::Error::NoNode)];
        assert_eq!(tracker.settle(paths, read), Ok(()));
        assert!(kinds(&mut events).is_empty(), "published when the burst is done");
        tracker.burst_done();
        assert_eq!(kinds(&mut events), ["changed /r/a"]);
    }

    /// Issue 27 item 7: a burst applied in rounds (what came behind the first reads) publishes
    /// one snapshot; a round that fails leaves its events to the resync, which reports them.
    #[test]
    fn a_burst_applied_in_rounds_is_published_once_and_a_failed_round_loses_nothing() {
        let (mut tracker, mut events) = tracker(None);
        tracker.reset(BTreeMap::from([("/r".to_owned(), node(1, 1, ""))]));
        assert_eq!(kinds(&mut events).len(), 2);
        let mut snapshots = tracker.snapshot.subscribe();
        let round =
            |path: &str, zxid| (vec![path.to_owned()], vec![Ok((Vec::new(), node(zxid, zxid, "").stat()))]);
        let (paths, read) = round("/r/a", 3);
        tracker.settle(paths, read).unwrap();
        let (paths, read) = round("/r/b", 3);
        tracker.settle(paths, read).unwrap();
        assert!(!snapshots.has_changed().unwrap(), "nothing published inside the burst");
        tracker.burst_done();
        assert_eq!(snapshots.borrow_and_update().len(), 3);
        assert_eq!(kinds(&mut events), ["created /r/a", "created /r/b"]);
        // One round applied, the next failed: the resync reports both.
        let (paths, read) = round("/r/c", 4);
        tracker.settle(paths, read).unwrap();
        let failed = vec![Err(zookeeper_client::Error::ConnectionLoss)];
        assert!(tracker.settle(["/r/d".to_owned()], failed).is_err());
        let mut resync = tracker.nodes.iter().map(|(p, n)| (p, n.clone())).collect::<BTreeMap<_, _>>();
        resync.insert("/r/d".to_owned(), node(4, 4, ""));
        tracker.reset(resync);
        assert_eq!(kinds(&mut events), ["created /r/c", "created /r/d"]);
    }

    /// Issue 47 item 1: a selector's answers for a node and every node above it decide.
    #[test]
    fn a_selector_keeps_what_it_accepts_below_what_it_traverses() {
        struct Picky;
        impl super::super::CacheSelector for Picky {
            fn traverse_children(&self, path: &str) -> bool {
                path != "/r/leaf"
            }
            fn accept_child(&self, path: &str) -> bool {
                !path.ends_with("/no")
            }
        }
        let (mut tracker, mut events) = tracker(None);
        tracker.keep.selector = Some(Arc::new(Picky));
        assert!(tracker.keeps("/r") && tracker.keeps("/r/a") && tracker.keeps("/r/leaf"));
        assert!(!tracker.keeps("/r/no") && !tracker.keeps("/r/no/yes") && !tracker.keeps("/r/a/no"));
        assert!(!tracker.keeps("/r/leaf/a") && tracker.keeps("/r/a/leaf/a"));
        // Without data: the copy keeps the Stat, the event the data read.
        tracker.keep.data = false;
        tracker
            .reset(BTreeMap::from([("/r".to_owned(), node(1, 1, "")), ("/r/a".to_owned(), node(2, 2, "x"))]));
        assert_eq!(kinds(&mut events).len(), 3);
        let (paths, read) = (["/r/a".to_owned()], vec![Ok((b"yz".to_vec(), node(2, 5, "yz").stat()))]);
        tracker.settle(paths, read).unwrap();
        tracker.burst_done();
        match events.try_recv() {
            Ok(CacheEvent::Changed { old, new, .. }) => {
                assert_eq!((old.data(), new.data()), (&b""[..], &b"yz"[..]))
            }
            other => panic!("a change, not {other:?}"),
        }
        let kept = tracker.nodes.get("/r/a").unwrap();
        assert_eq!((kept.data(), kept.stat().data_length, kept.stat().mzxid), (&b""[..], 2, 5));
    }

    #[test]
    fn the_depth_limit_keeps_what_is_below_it() {
        let (tracker, _) = tracker(Some(1));
        assert!(tracker.keeps("/r") && tracker.keeps("/r/a"));
        assert!(!tracker.keeps("/r/a/b") && !tracker.keeps("/other"));
    }
}
