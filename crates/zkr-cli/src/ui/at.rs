//! One path as the page's recognizer sees it, for the commands that answer for one recipe
//! (`zkr lock-info`, `zkr elect --observe`): the recipe there (in Curator's or kazoo's layout),
//! an empty directory, children no layout explains, or no node at all. The same layouts as the
//! page, so that the commands and the page never disagree about a path.

use std::collections::HashSet;

use zkr_connection::ZkClient;
use zkr_recipes::cache::{CacheSnapshot, CachedNode};

pub(crate) use super::view::printable;
use zkr_connection::path::join;

use super::recognize::recognise;
use super::tree::Tree;
pub(crate) use super::view::{Contender, Kind, Recipe};

/// What a path holds.
#[derive(Debug)]
pub(crate) enum At {
    /// The node does not exist.
    Missing,
    /// The node has no children.
    Empty,
    /// A recipe, and the names of the children it does not explain (in name order).
    Recipe { recipe: Recipe, others: Vec<String> },
    /// Children no layout explains as one recipe at the path (their names, in name order).
    Unexplained(Vec<String>),
}

/// Reads `path` and its children once (no watch; any server release) and recognises them.
///
/// # Errors
/// What the reads fail with (unreachable, `NoAuth`, ...).
pub(crate) async fn read(zk: &ZkClient, path: &str) -> anyhow::Result<At> {
    let Some((data, stat)) = zk.get_data(path).await? else { return Ok(At::Missing) };
    let mut nodes = vec![(path.to_owned(), CachedNode::new(&data, &stat))];
    let names = zk.get_children(path).await?.map(|(names, _)| names).unwrap_or_default();
    for name in names {
        let child = join(path, &name);
        // A child deleted between the two reads is simply gone.
        if let Some((data, stat)) = zk.get_data(&child).await? {
            nodes.push((child, CachedNode::new(&data, &stat)));
        }
    }
    Ok(recognise_at(nodes.iter().map(|(p, n)| (p.as_str(), n)), path))
}

/// What `path` holds in a cache's `snapshot` (of the path and at least its children).
pub(crate) fn in_snapshot(snapshot: &CacheSnapshot, path: &str) -> At {
    let nodes: Vec<(String, &CachedNode)> = snapshot.iter().collect();
    recognise_at(nodes.iter().map(|(p, n)| (p.as_str(), *n)), path)
}

fn recognise_at<'a>(nodes: impl IntoIterator<Item = (&'a str, &'a CachedNode)>, path: &str) -> At {
    let tree = Tree::new(nodes);
    if tree.get(path).is_none() {
        return At::Missing;
    }
    let names: Vec<String> = tree.children(path).iter().map(|n| (*n).to_owned()).collect();
    if names.is_empty() {
        return At::Empty;
    }
    let found = recognise(&tree, false);
    // Children the recipe at the path does not own: left over, or recipes of their own.
    let apart: HashSet<&str> = found
        .tree
        .iter()
        .map(|n| n.path.as_str())
        .chain(found.recipes.iter().map(|r| r.path.as_str()))
        .collect();
    let others = names.iter().filter(|n| apart.contains(join(path, n).as_str())).cloned().collect();
    match found.recipes.iter().position(|r| r.path == path) {
        Some(i) => At::Recipe { recipe: found.recipes[i].clone(), others },
        None => At::Unexplained(names),
    }
}

/// A recipe in a few words, for messages: "a kazoo lock", "a Curator semaphore".
pub(crate) fn describe(recipe: &Recipe) -> String {
    let layout = match recipe.layout {
        "kazoo" => "kazoo",
        _ => "Curator",
    };
    let what = match &recipe.kind {
        Kind::Lock { read_write: true, .. } => "read-write lock",
        Kind::Lock { .. } => "lock",
        Kind::Semaphore { .. } => "semaphore",
        Kind::Leader { .. } => "leader latch",
        Kind::Queue { .. } => "queue",
        Kind::Barrier { .. } => "double barrier",
        Kind::Group { .. } if layout == "kazoo" => "party",
        Kind::Group { .. } => "group",
        Kind::Service { .. } => "service",
        Kind::Counter { .. } => return "a counter".to_owned(),
        Kind::Config { .. } => return "a config node".to_owned(),
        Kind::Conflict { layouts, .. } => return format!("a conflict of layouts ({})", layouts.join(", ")),
    };
    format!("a {layout} {what}")
}

/// Names for a message: the first few, escaped (a node name may hold any character ZooKeeper
/// allows), and how many more there are.
pub(crate) fn list(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut out: Vec<String> = names.iter().take(SHOWN).map(|n| format!("{n:?}")).collect();
    if names.len() > SHOWN {
        out.push(format!("and {} more", names.len() - SHOWN));
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkr_connection::Stat;

    fn node(data: &[u8], owner: i64) -> CachedNode {
        let stat = Stat {
            czxid: 1,
            mzxid: 1,
            pzxid: 1,
            ctime: 0,
            mtime: 0,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: owner,
            data_length: i32::try_from(data.len()).unwrap_or(i32::MAX),
            num_children: 0,
        };
        CachedNode::new(data, &stat)
    }

    #[test]
    fn a_path_is_missing_empty_a_recipe_or_unexplained() {
        let (dir, empty) = (node(b"", 0), node(b"", 0));
        let holder = node(b"py-1", 7);
        let stray = node(b"x", 0);
        let nodes = [
            ("/l", &dir),
            ("/l/0f1e2d3c4b5a69788796a5b4c3d2e1f0__lock__0000000001", &holder),
            ("/l/stray", &stray),
            ("/e", &empty),
            ("/o", &dir),
            ("/o/a", &stray),
        ];
        assert!(matches!(recognise_at(nodes, "/nowhere"), At::Missing));
        assert!(matches!(recognise_at(nodes, "/e"), At::Empty));
        let At::Recipe { recipe, others } = recognise_at(nodes, "/l") else { panic!("a lock at /l") };
        assert_eq!((describe(&recipe).as_str(), others), ("a kazoo lock", vec!["stray".to_owned()]));
        assert!(matches!(recognise_at(nodes, "/o"), At::Unexplained(names) if names == ["a"]));
    }

    #[test]
    fn lists_are_escaped_and_bounded() {
        let names: Vec<String> = ["a\u{1b}[2J", "b", "c", "d", "e", "f", "g"].map(String::from).to_vec();
        assert_eq!(list(&names), r#""a\u{1b}[2J", "b", "c", "d", "e", and 2 more"#);
    }
}
