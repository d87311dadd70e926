//! The cache's nodes under the page's root, indexed by parent: what the recognizer and the
//! layouts walk.

use std::collections::{BTreeMap, HashMap};

use zkr_recipes::cache::CachedNode;

/// The cache's nodes with a children index.
pub(crate) struct Tree<'a> {
    nodes: BTreeMap<&'a str, &'a CachedNode>,
    children: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> Tree<'a> {
    /// Indexes `nodes` (paths under one root).
    pub(crate) fn new(nodes: impl IntoIterator<Item = (&'a str, &'a CachedNode)>) -> Self {
        // ZooKeeper's own `/zookeeper` (quotas, the ensemble's config) is no recipe and no app's.
        let nodes: BTreeMap<&str, &CachedNode> =
            nodes.into_iter().filter(|(p, _)| *p != "/zookeeper" && !p.starts_with("/zookeeper/")).collect();
        let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
        for path in nodes.keys() {
            if let Some((parent, name)) = split(path) {
                if nodes.contains_key(parent) {
                    children.entry(parent).or_default().push(name);
                }
            }
        }
        Tree { nodes, children }
    }

    pub(crate) fn get(&self, path: &str) -> Option<&'a CachedNode> {
        self.nodes.get(path).copied()
    }

    /// The names of `path`'s children, in name order.
    pub(crate) fn children(&self, path: &str) -> &[&'a str] {
        self.children.get(path).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn paths(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.nodes.keys().copied()
    }

    /// Every ephemeral node as `(parent, name, node)`.
    pub(crate) fn ephemerals(&self) -> impl Iterator<Item = (&'a str, &'a str, &'a CachedNode)> + '_ {
        self.nodes.iter().filter(|(_, node)| node.stat().ephemeral_owner != 0).filter_map(|(&path, &node)| {
            let (parent, name) = split(path)?;
            Some((parent, name, node))
        })
    }
}

/// `(parent, name)` of a path other than `/`.
fn split(path: &str) -> Option<(&str, &str)> {
    let i = path.rfind('/')?;
    let name = &path[i + 1..];
    if name.is_empty() {
        return None;
    }
    Some((if i == 0 { "/" } else { &path[..i] }, name))
}
