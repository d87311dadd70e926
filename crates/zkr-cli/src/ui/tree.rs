//! The nodes under the page's root as the recognizer and the layouts walk them: either the
//! cache's own copy (what `zkr ui` follows: looked up in place, nothing indexed per view) or
//! nodes read once and indexed by parent (`zkr lock-info`, `zkr elect`, the tests).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use zkr_recipes::cache::{CacheSnapshot, CachedNode};

/// The nodes, with their children by parent. ZooKeeper's own `/zookeeper` (quotas, the
/// ensemble's config) is no recipe and no app's: it is left out of both kinds.
pub(crate) enum Tree<'a> {
    /// Nodes read once, indexed by parent.
    Indexed { nodes: BTreeMap<&'a str, &'a CachedNode>, children: HashMap<&'a str, Vec<&'a str>> },
    /// The cache's copy.
    Snapshot(&'a CacheSnapshot),
}

impl<'a> Tree<'a> {
    /// Indexes `nodes` (paths under one root).
    pub(crate) fn new(nodes: impl IntoIterator<Item = (&'a str, &'a CachedNode)>) -> Self {
        let nodes: BTreeMap<&str, &CachedNode> = nodes.into_iter().filter(|(p, _)| !hidden(p)).collect();
        let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
        for path in nodes.keys() {
            if let Some((parent, name)) = split(path) {
                if nodes.contains_key(parent) {
                    children.entry(parent).or_default().push(name);
                }
            }
        }
        Tree::Indexed { nodes, children }
    }

    pub(crate) fn get(&self, path: &str) -> Option<&'a CachedNode> {
        match self {
            Tree::Indexed { nodes, .. } => nodes.get(path).copied(),
            Tree::Snapshot(snapshot) => (!hidden(path)).then(|| snapshot.get(path)).flatten(),
        }
    }

    /// The names of `path`'s children, in name order.
    pub(crate) fn children(&self, path: &str) -> Vec<&'a str> {
        match self {
            Tree::Indexed { children, .. } => children.get(path).cloned().unwrap_or_default(),
            Tree::Snapshot(_) => self.child_nodes(path).into_iter().map(|(name, _)| name).collect(),
        }
    }

    /// `path`'s children with their nodes, in name order.
    pub(crate) fn child_nodes(&self, path: &str) -> Vec<(&'a str, &'a CachedNode)> {
        match self {
            Tree::Indexed { children, .. } => children
                .get(path)
                .into_iter()
                .flatten()
                .filter_map(|&name| Some((name, self.get(&zkr_connection::path::join(path, name))?)))
                .collect(),
            Tree::Snapshot(snapshot) if !hidden(path) => {
                snapshot.children(path).filter(|(name, _)| path != "/" || *name != "zookeeper").collect()
            }
            Tree::Snapshot(_) => Vec::new(),
        }
    }

    /// How many nodes there are.
    pub(crate) fn len(&self) -> usize {
        match self {
            Tree::Indexed { nodes, .. } => nodes.len(),
            Tree::Snapshot(snapshot) => {
                let mut hidden = 0;
                let mut below = vec![String::from("/zookeeper")];
                while let Some(path) = below.pop() {
                    if snapshot.get(&path).is_some() {
                        hidden += 1;
                        below.extend(
                            snapshot.children(&path).map(|(n, _)| zkr_connection::path::join(&path, n)),
                        );
                    }
                }
                snapshot.len() - hidden.min(snapshot.len())
            }
        }
    }

    /// Every path, parents before their children.
    pub(crate) fn paths(&self) -> Box<dyn Iterator<Item = Cow<'a, str>> + '_> {
        match self {
            Tree::Indexed { nodes, .. } => Box::new(nodes.keys().map(|&p| Cow::Borrowed(p))),
            Tree::Snapshot(snapshot) => {
                Box::new(snapshot.iter().map(|(p, _)| p).filter(|p| !hidden(p)).map(Cow::Owned))
            }
        }
    }

    /// Visits every node at or below `root` (nodes read once: every node), each after its
    /// children. The walk keeps its own stack: a deep tree cannot overflow the thread's.
    pub(crate) fn post_order(&self, root: &str, mut visit: impl FnMut(&str)) {
        let tops: Vec<String> = match self {
            Tree::Indexed { nodes, .. } => nodes
                .keys()
                .filter(|p| split(p).is_none_or(|(parent, _)| !nodes.contains_key(parent)))
                .map(|p| (*p).to_owned())
                .collect(),
            Tree::Snapshot(_) => vec![root.to_owned()],
        };
        let mut stack: Vec<(String, bool)> = tops.into_iter().rev().map(|p| (p, false)).collect();
        while let Some((path, settled_below)) = stack.pop() {
            if settled_below {
                visit(&path);
                continue;
            }
            let children = self.children(&path);
            let below: Vec<(String, bool)> =
                children.iter().rev().map(|c| (zkr_connection::path::join(&path, c), false)).collect();
            stack.push((path, true));
            stack.extend(below);
        }
    }

    /// Every ephemeral node's path.
    pub(crate) fn ephemerals(&self) -> Vec<Cow<'a, str>> {
        self.paths().filter(|p| self.get(p).is_some_and(|n| n.stat().ephemeral_owner != 0)).collect()
    }
}

/// Is `path` ZooKeeper's own?
fn hidden(path: &str) -> bool {
    path == "/zookeeper" || path.starts_with("/zookeeper/")
}

/// `(parent, name)` of a path other than `/`.
pub(crate) fn split(path: &str) -> Option<(&str, &str)> {
    let i = path.rfind('/')?;
    let name = &path[i + 1..];
    if name.is_empty() {
        return None;
    }
    Some((if i == 0 { "/" } else { &path[..i] }, name))
}
