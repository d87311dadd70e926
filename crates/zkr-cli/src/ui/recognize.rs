//! Recognises Curator's and kazoo's recipes by their node layout: each directory under the root
//! is matched against the layouts in turn (locks, semaphores, elections, queues, services,
//! barriers, groups), each leaf against counters and config; what no layout explains is the
//! plain tree.

use std::collections::HashSet;

use zkr_connection::path::join;

use zkr_recipes::cache::CachedNode;

use super::layout::{self, Names};
use super::tree::Tree;
use super::view::{contender, printable, session_hex, Kind, Recipe, TreeNode};

/// The recipes found and the nodes left over.
pub(crate) struct Found {
    pub recipes: Vec<Recipe>,
    pub tree: Vec<TreeNode>,
}

/// Walks the tree: a directory's children are matched against each layout; the nodes a recipe
/// explains are claimed, and the rest of the tree is walked on.
pub(crate) fn recognise(tree: &Tree<'_>, show_values: bool) -> Found {
    let mut claimed: HashSet<String> = HashSet::new();
    let mut recipes = Vec::new();
    for path in tree.paths() {
        if claimed.contains(path.as_ref()) {
            continue;
        }
        if let Some((recipe, owned)) = unit(tree, &path, show_values) {
            claimed.extend(owned);
            claimed.insert(path.into_owned());
            recipes.push(recipe);
        }
    }
    let mut queues_locks = layout::queue_locks(tree, &mut recipes, &claimed);
    claimed.extend(queues_locks.drain(..));
    let tree_nodes = leftovers(tree, &claimed);
    Found { recipes, tree: tree_nodes }
}

/// The recipe at `path` alone, with the paths it owns: a leaf's counter or config, or what a
/// directory's children make (a queue's items locked elsewhere are not looked for here).
pub(crate) fn unit(tree: &Tree<'_>, path: &str, show_values: bool) -> Option<(Recipe, Vec<String>)> {
    let children = tree.child_nodes(path);
    if children.is_empty() {
        return leaf(tree, path, show_values).map(|recipe| (recipe, Vec::new()));
    }
    directory(tree, path, children)
}

/// The recipe a directory's children make, with the paths it owns (its children, and the
/// directories a layout owns).
fn directory<'a>(
    tree: &Tree<'a>,
    path: &'a str,
    children: Vec<(&'a str, &'a CachedNode)>,
) -> Option<(Recipe, Vec<String>)> {
    if let Some(found) = conflict(path, &children) {
        return Some(found);
    }
    let names = Names::of(path, children);
    let (layout, kind, owned) = layout::lock(&names)
        .or_else(|| layout::semaphore(tree, &names))
        .or_else(|| layout::kazoo_semaphore(tree, &names))
        .or_else(|| layout::leader(&names))
        .or_else(|| layout::queue(&names))
        .or_else(|| layout::service(&names))
        .or_else(|| layout::barrier(&names))
        .or_else(|| layout::group(&names))?;
    Some((Recipe { path: path.to_owned(), layout, kind }, owned))
}

/// Contenders of two or more layouts in `path` (the recipes' own classification,
/// `LockLayout`), owning them: no layout's view of it would be true, each may have a holder.
fn conflict(path: &str, children: &[(&str, &CachedNode)]) -> Option<(Recipe, Vec<String>)> {
    use zkr_recipes::locks::LockLayout;
    let mut layouts: Vec<LockLayout> = Vec::new();
    let mut contenders = Vec::new();
    for &(name, node) in children {
        let Some(layout) = LockLayout::of(name) else { continue };
        if !layouts.contains(&layout) {
            layouts.push(layout);
        }
        if node.stat().ephemeral_owner != 0 {
            contenders.push(contender(name, node));
        }
    }
    // A semaphore's own directories beside nothing else are no conflict, nor one layout.
    if layouts.len() < 2 {
        return None;
    }
    contenders.sort_by_key(|c| c.fencing_token);
    let owned = contenders.iter().map(|c| join(path, &c.node)).collect();
    let layouts = layouts.into_iter().map(LockLayout::describe).collect();
    Some((
        Recipe { path: path.to_owned(), layout: "mixed", kind: Kind::Conflict { layouts, contenders } },
        owned,
    ))
}

/// A counter or a config node.
pub(crate) fn leaf(tree: &Tree<'_>, path: &str, show_values: bool) -> Option<Recipe> {
    let node = tree.get(path)?;
    if node.stat().ephemeral_owner != 0 || node.data().is_empty() {
        return None;
    }
    let kind = match counter(node.data()) {
        Some((value, bits)) => Kind::Counter { value, bits },
        None => Kind::Config {
            version: node.stat().version,
            mtime_ms: node.stat().mtime,
            size: node.data().len(),
            value: show_values.then(|| String::from_utf8_lossy(node.data()).into_owned()),
        },
    };
    Some(Recipe { path: path.to_owned(), layout: "curator", kind })
}

/// A `SharedCount` (4 bytes, big-endian) or `DistributedAtomicLong` (8 bytes) value: binary,
/// so that a 4-letter text value is not taken for one.
fn counter(data: &[u8]) -> Option<(i64, u8)> {
    if printable(data).is_some() {
        return None;
    }
    match data.len() {
        4 => Some((i64::from(i32::from_be_bytes(data.try_into().ok()?)), 32)),
        8 => Some((i64::from_be_bytes(data.try_into().ok()?), 64)),
        _ => None,
    }
}

/// The nodes no recipe claimed, but for directories holding nothing else (no data, and every
/// node below claimed or such a directory itself). A descendant's path sorts after its
/// ancestor's, so walking backwards settles children first.
fn leftovers(tree: &Tree<'_>, claimed: &HashSet<String>) -> Vec<TreeNode> {
    let mut explained: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let paths: Vec<_> = tree.paths().collect();
    for path in paths.iter().rev() {
        let Some(node) = tree.get(path) else { continue };
        let children = tree.children(path);
        let container = node.data().is_empty()
            && !children.is_empty()
            && children.iter().all(|c| {
                let child = join(path, c);
                claimed.contains(&child) || explained.contains(&child)
            });
        if claimed.contains(path.as_ref()) || container {
            explained.insert(path.to_string());
            continue;
        }
        out.push(tree_node(path, node, children.len()));
    }
    out.reverse();
    out
}

/// A node no recipe explains, as the page lists it.
pub(crate) fn tree_node(path: &str, node: &CachedNode, children: usize) -> TreeNode {
    TreeNode {
        path: path.to_owned(),
        children,
        size: node.data().len(),
        session: (node.stat().ephemeral_owner != 0).then(|| session_hex(node.stat().ephemeral_owner)),
    }
}
