//! A full read of a subtree, level by level, with one-shot watches on everything read when the
//! server has no persistent ones (before 3.6): what the consumers that keep a tree (the cache,
//! the config watchers) read to resync.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use futures::FutureExt as _;
use zkr_connection::path;
use zkr_connection::SessionClient;
use zookeeper_client::{MultiReadResult, OneshotWatcher, Stat};

use super::ZkResult;

/// A node's data and `Stat`.
type NodeRead = (Vec<u8>, Stat);

/// Every node read, by path, and the watches set on them.
pub(crate) type TreeRead = (BTreeMap<String, NodeRead>, Vec<OneshotWatcher>);

/// How often a read starts over because the root was created between its two reads.
const ROOT_RACES: usize = 8;

/// Reads `root` and every node below it down to `max_depth` levels (`Some(0)`: the root
/// alone), with every request of a level sent before the first reply is awaited. With
/// `watch`, each node read gets a data watch and, above the depth limit, a children watch; a
/// missing root gets an existence watch. Any change after a node's read fires one of them.
pub(crate) async fn read_tree(
    client: &SessionClient,
    root: &str,
    max_depth: Option<usize>,
    watch: bool,
) -> ZkResult<TreeRead> {
    for _ in 0..ROOT_RACES {
        if let Some(read) = read_once(client, root, max_depth, watch).await? {
            return Ok(read);
        }
    }
    // A root created and deleted over and over: what the last watch sees will be read again.
    Ok((BTreeMap::new(), vec![client.check_and_watch_stat(root).await?.1]))
}

/// One read; `None` when the root was missing for the data read but there for the existence
/// watch (created in between), which a watch set on it then would not report.
async fn read_once(
    client: &SessionClient,
    root: &str,
    max_depth: Option<usize>,
    watch: bool,
) -> ZkResult<Option<TreeRead>> {
    let mut all = BTreeMap::new();
    let mut watchers = Vec::new();
    let mut level = vec![root.to_owned()];
    let mut depth = 0;
    while !level.is_empty() {
        let deeper = max_depth.is_none_or(|max| depth < max);
        let data: Vec<_> = level.iter().map(|node| get_data(client, node, watch)).collect();
        let children: Vec<_> = if deeper {
            level.iter().map(|node| get_children(client, node, watch)).collect()
        } else {
            Vec::new()
        };
        for (node, reply) in level.iter().zip(data) {
            match reply.await {
                Ok((read, watcher)) => {
                    watchers.extend(watcher);
                    all.insert(node.clone(), read);
                }
                // A missing node below the root is a child its parent's watch reports.
                Err(zookeeper_client::Error::NoNode) if watch && depth == 0 => {
                    match client.check_and_watch_stat(node).await? {
                        (None, watcher) => watchers.push(watcher),
                        (Some(_), _) => return Ok(None),
                    }
                }
                Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        let mut next = Vec::new();
        for (node, reply) in level.iter().zip(children) {
            match reply.await {
                Ok((names, watcher)) => {
                    watchers.extend(watcher);
                    next.extend(names.iter().map(|c| path::join(node, c)));
                }
                Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        level = next;
        depth += 1;
    }
    Ok(Some((all, watchers)))
}

/// A node's data, with a one-shot watch when `watch`; the request is sent now.
fn get_data<'a>(
    client: &'a SessionClient,
    node: &str,
    watch: bool,
) -> BoxFuture<'a, ZkResult<(NodeRead, Option<OneshotWatcher>)>> {
    if watch {
        client.get_and_watch_data(node).map(|r| r.map(|(data, stat, w)| ((data, stat), Some(w)))).boxed()
    } else {
        client.get_data(node).map(|r| r.map(|read| (read, None))).boxed()
    }
}

/// A node's children, with a one-shot watch when `watch`; the request is sent now.
fn get_children<'a>(
    client: &'a SessionClient,
    node: &str,
    watch: bool,
) -> BoxFuture<'a, ZkResult<(Vec<String>, Option<OneshotWatcher>)>> {
    if watch {
        client.get_and_watch_children(node).map(|r| r.map(|(names, _, w)| (names, Some(w)))).boxed()
    } else {
        client.list_children(node).map(|r| r.map(|names| (names, None))).boxed()
    }
}

/// Reads `nodes` (their data, or with `children` their children) in multi-reads (ZooKeeper
/// 3.6+, as the cache's persistent watch) of up to `MULTI_READ` operations, all sent before the
/// first reply is awaited. One multi-read costs the server and `zookeeper-client` far less than
/// as many requests: the first read of 10,101 nodes went from ~520 ms to ~44 ms
/// (docs/benchmarks.md). A reply holds up to `MULTI_READ` nodes' data: 64 MB at worst with
/// ZooKeeper's 1 MB node limit, a few KB for typical nodes.
pub(crate) async fn multi_read(
    client: &SessionClient,
    nodes: &[String],
    children: bool,
) -> ZkResult<Vec<MultiReadResult>> {
    const MULTI_READ: usize = 64;
    let mut batches = Vec::new();
    for chunk in nodes.chunks(MULTI_READ) {
        let mut reader = client.new_multi_reader();
        for node in chunk {
            if children {
                reader.add_get_children(node)?;
            } else {
                reader.add_get_data(node)?;
            }
        }
        batches.push(reader.commit());
    }
    let mut results = Vec::with_capacity(nodes.len());
    for batch in batches {
        results.extend(batch.await?);
    }
    Ok(results)
}
