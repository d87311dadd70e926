//! Turns the cache's copy into views, then each change into a patch, without reading the whole
//! tree again: what each directory's children make is kept, and a change is looked at only
//! where it can matter (the node, its parent and grandparent, a kazoo semaphore's lock beside
//! it, the queues whose items an ephemeral node is named as). Also remembers when each holder
//! and leader was first seen holding (ZooKeeper does not record when a lock changed hands), and
//! gathers what each session holds.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use zkr_connection::path::join;
use zkr_connection::ConnectionState;

use super::layout::lock_items;
use super::recognize::{leaf, tree_node, unit};
use super::roles::{holding, sessions};
use super::tree::{split, Tree};
use super::view::{Kind, Patch, Recipe, TreeNode, View, Whole, LEAF_LIMIT, TREE_LIMIT};

/// A node the cache says changed (made, changed or deleted).
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub path: String,
    /// Was it, or is it now, ephemeral (a queue item's lock, maybe)?
    pub ephemeral: bool,
}

/// What the page shows, kept up to date change by change.
#[derive(Debug)]
pub(crate) struct Model {
    root: String,
    show_values: bool,
    /// Has no view been made yet (holders then are "held since before zkr ui started")?
    first: bool,
    /// Each directory's recipe as its children make it, with the paths it owns.
    dirs: BTreeMap<String, (Recipe, Vec<String>)>,
    /// Who owns each owned path (the directories whose recipe explains it).
    owners: HashMap<String, Vec<String>>,
    /// Every ephemeral node: a queue's items locked elsewhere are found among them.
    ephemerals: BTreeSet<String>,
    /// The directories' recipes shown: those no other recipe owns, their holders timed.
    shown: BTreeMap<String, Recipe>,
    /// Every counter and config node no recipe owns, shown or not.
    leaves: BTreeSet<String>,
    /// The first [`LEAF_LIMIT`] of them.
    shown_leaves: BTreeMap<String, Recipe>,
    /// The nodes no recipe explains.
    unexplained: BTreeMap<String, TreeNode>,
    /// When each holder or leader (by recipe path, then node) was first seen holding.
    since: HashMap<String, HashMap<String, Option<i64>>>,
    header: Whole,
}

impl Model {
    pub(crate) fn new(root: &str, show_values: bool) -> Self {
        Model {
            root: root.to_owned(),
            show_values,
            first: true,
            dirs: BTreeMap::new(),
            owners: HashMap::new(),
            ephemerals: BTreeSet::new(),
            shown: BTreeMap::new(),
            leaves: BTreeSet::new(),
            shown_leaves: BTreeMap::new(),
            unexplained: BTreeMap::new(),
            since: HashMap::new(),
            header: Whole {
                now_ms: 0,
                connection: "connected",
                stale: false,
                initialized: true,
                nodes: 0,
                tree_more: 0,
                leaves_more: 0,
            },
        }
    }

    /// The connection's state and the copy's, as the next view or patch reports them.
    pub(crate) fn set_state(&mut self, state: Option<ConnectionState>, stale: bool, initialized: bool) {
        self.header.connection = connection(state);
        self.header.stale = stale || !state.is_some_and(ConnectionState::is_connected);
        self.header.initialized = initialized;
    }

    /// Recognises `tree` whole (the first view, and after missed changes).
    pub(crate) fn rebuild(&mut self, tree: &Tree<'_>, now_ms: i64) {
        self.header.now_ms = now_ms;
        self.header.nodes = tree.len();
        self.dirs.clear();
        self.owners.clear();
        self.ephemerals.clear();
        self.shown.clear();
        self.leaves.clear();
        self.shown_leaves.clear();
        self.unexplained.clear();
        for path in tree.paths() {
            if tree.get(&path).is_some_and(|n| n.stat().ephemeral_owner != 0) {
                self.ephemerals.insert(path.to_string());
            }
            match unit(tree, &path, self.show_values) {
                Some((recipe, _)) if is_leaf(&recipe.kind) => drop(self.leaves.insert(path.into_owned())),
                Some((recipe, owned)) => drop(self.dirs.insert(path.into_owned(), (recipe, owned))),
                None => {}
            }
        }
        for (path, (_, owned)) in &self.dirs {
            for o in owned {
                self.owners.entry(o.clone()).or_default().push(path.clone());
            }
        }
        let queues: Vec<String> = self
            .dirs
            .iter()
            .filter(|(_, (r, _))| matches!(r.kind, Kind::Queue { .. }))
            .map(|(p, _)| p.clone())
            .collect();
        for queue in queues {
            self.lock_queue(tree, &queue);
        }
        self.leaves.retain(|p| !self.owners.contains_key(p));
        let paths: Vec<String> =
            self.dirs.keys().filter(|p| !self.owners.contains_key(*p)).cloned().collect();
        let mut since = std::mem::take(&mut self.since);
        for path in paths {
            let mut recipe = self.dirs[&path].0.clone();
            self.stamp(&mut since, &mut recipe, now_ms);
            self.shown.insert(path, recipe);
        }
        since.retain(|path, _| self.shown.contains_key(path));
        self.since = since;
        self.reshow_leaves(tree, &BTreeSet::new(), &mut Vec::new(), &mut Vec::new());
        let root = self.root.clone();
        tree.post_order(&root, |path| {
            self.settle(tree, path);
        });
        self.first = false;
    }

    /// Applies `changes` (the cache's copy is `tree` after them) and says what changed.
    pub(crate) fn apply(&mut self, tree: &Tree<'_>, changes: &[Change], now_ms: i64) -> Patch {
        self.header.now_ms = now_ms;
        self.header.nodes = tree.len();
        let mut dirty = BTreeSet::new();
        for change in changes {
            self.mark(tree, change, &mut dirty);
        }
        let mut touched = dirty.clone();
        for path in &dirty {
            self.recognise_dir(tree, path, &mut touched);
        }
        let (mut upsert, mut remove) = (Vec::new(), Vec::new());
        let mut since = std::mem::take(&mut self.since);
        for path in &touched {
            self.reshow(tree, &mut since, path, now_ms, &mut upsert, &mut remove);
        }
        self.since = since;
        self.reshow_leaves(tree, &touched, &mut upsert, &mut remove);
        let tree_changed = self.resettle(tree, touched);
        Patch {
            whole: self.whole(),
            upsert,
            remove,
            sessions: sessions(self.shown.values()),
            tree: tree_changed.then(|| self.tree_list()),
        }
    }

    /// What a view or patch says of the whole now.
    fn whole(&self) -> Whole {
        Whole {
            tree_more: self.unexplained.len().saturating_sub(TREE_LIMIT),
            leaves_more: self.leaves.len().saturating_sub(LEAF_LIMIT),
            ..self.header
        }
    }

    /// The whole view now.
    pub(crate) fn view(&self) -> View {
        let mut recipes: Vec<Recipe> =
            self.shown.values().chain(self.shown_leaves.values()).cloned().collect();
        recipes.sort_by(|a, b| a.path.cmp(&b.path));
        View {
            root: self.root.clone(),
            show_values: self.show_values,
            whole: self.whole(),
            sessions: sessions(self.shown.values()),
            recipes,
            tree: self.tree_list(),
        }
    }

    /// The view of `tree` at `now_ms`, recognised whole (connection fields as if connected).
    #[cfg(test)]
    pub(crate) fn view_of(&mut self, tree: &Tree<'_>, now_ms: i64) -> View {
        self.rebuild(tree, now_ms);
        self.view()
    }

    /// The paths whose recipe a change at `change.path` can change: the node, its parent and
    /// grandparent (a semaphore's leases), the semaphore beside a kazoo semaphore's lock, and
    /// the queues holding an item named as an ephemeral node (its consumer's lock).
    fn mark(&mut self, tree: &Tree<'_>, change: &Change, dirty: &mut BTreeSet<String>) {
        let path = change.path.as_str();
        let ephemeral = tree.get(path).is_some_and(|n| n.stat().ephemeral_owner != 0);
        if ephemeral {
            self.ephemerals.insert(path.to_owned());
        } else {
            self.ephemerals.remove(path);
        }
        let mut up = Some(path);
        for _ in 0..3 {
            let Some(at) = up else { break };
            dirty.insert(at.to_owned());
            if let Some(semaphore) =
                at.strip_suffix(zkr_recipes::layouts::KAZOO_LOCK_NAME).and_then(|s| s.strip_suffix('-'))
            {
                dirty.insert(semaphore.to_owned());
            }
            up = split(at).map(|(parent, _)| parent);
        }
        if let (true, Some((_, name))) = (ephemeral || change.ephemeral, split(path)) {
            let queues = self.dirs.iter().filter(|(_, (r, _))| matches!(r.kind, Kind::Queue { .. }));
            dirty.extend(queues.filter(|(q, _)| tree.get(&join(q, name)).is_some()).map(|(q, _)| q.clone()));
        }
    }

    /// Recognises the directory at `path` again; the paths it stopped or started owning are
    /// touched (a queue's items it keeps owning are not).
    fn recognise_dir(&mut self, tree: &Tree<'_>, path: &str, touched: &mut BTreeSet<String>) {
        let before = self.dirs.remove(path).map(|(_, owned)| owned).unwrap_or_default();
        for o in &before {
            self.disown(o, path);
        }
        let found = tree.get(path).and_then(|_| unit(tree, path, self.show_values));
        if let Some((recipe, owned)) = found.filter(|(r, _)| !is_leaf(&r.kind)) {
            for o in &owned {
                self.owners.entry(o.clone()).or_default().push(path.to_owned());
            }
            let queue = matches!(recipe.kind, Kind::Queue { .. });
            self.dirs.insert(path.to_owned(), (recipe, owned));
            if queue {
                self.lock_queue(tree, path);
            }
        }
        let now = self.dirs.get(path).map(|(_, owned)| owned.as_slice()).unwrap_or_default();
        let (was, is): (HashSet<&String>, HashSet<&String>) = (before.iter().collect(), now.iter().collect());
        touched.extend(before.iter().filter(|o| !is.contains(o)).cloned());
        touched.extend(now.iter().filter(|o| !was.contains(o)).cloned());
    }

    /// Fills in the items of the queue at `path` locked by ephemeral nodes elsewhere, owning them.
    fn lock_queue(&mut self, tree: &Tree<'_>, path: &str) {
        let free: Vec<&str> =
            self.ephemerals.iter().filter(|e| !self.owners.contains_key(*e)).map(String::as_str).collect();
        let Some((recipe, _)) = self.dirs.get(path) else { return };
        let mut recipe = recipe.clone();
        let locks = lock_items(tree, &mut recipe, free);
        for lock in &locks {
            self.owners.entry(lock.clone()).or_default().push(path.to_owned());
        }
        if let Some(entry) = self.dirs.get_mut(path) {
            entry.0 = recipe;
            entry.1.extend(locks);
        }
    }

    fn disown(&mut self, owned: &str, by: &str) {
        if let Some(owners) = self.owners.get_mut(owned) {
            owners.retain(|o| o != by);
            if owners.is_empty() {
                self.owners.remove(owned);
            }
        }
    }

    /// Whether `path`'s directory recipe and leaf are shown now, recording what changed.
    fn reshow(
        &mut self,
        tree: &Tree<'_>,
        since: &mut HashMap<String, HashMap<String, Option<i64>>>,
        path: &str,
        now_ms: i64,
        upsert: &mut Vec<Recipe>,
        remove: &mut Vec<String>,
    ) {
        let owned = self.owners.contains_key(path);
        match self.dirs.get(path).filter(|_| !owned) {
            Some((recipe, _)) => {
                let mut recipe = recipe.clone();
                self.stamp(since, &mut recipe, now_ms);
                if self.shown.get(path) != Some(&recipe) {
                    upsert.push(recipe.clone());
                    self.shown.insert(path.to_owned(), recipe);
                }
            }
            None => {
                if self.shown.remove(path).is_some() {
                    since.remove(path);
                    remove.push(path.to_owned());
                }
            }
        }
        let is_leaf =
            !owned && tree.children(path).is_empty() && leaf(tree, path, self.show_values).is_some();
        if is_leaf {
            self.leaves.insert(path.to_owned());
        } else {
            self.leaves.remove(path);
        }
    }

    /// Shows the first [`LEAF_LIMIT`] leaves, recording those that came, went or changed.
    fn reshow_leaves(
        &mut self,
        tree: &Tree<'_>,
        touched: &BTreeSet<String>,
        upsert: &mut Vec<Recipe>,
        remove: &mut Vec<String>,
    ) {
        let wanted: BTreeSet<&String> = self.leaves.iter().take(LEAF_LIMIT).collect();
        let gone: Vec<String> = self.shown_leaves.keys().filter(|p| !wanted.contains(p)).cloned().collect();
        for path in gone {
            self.shown_leaves.remove(&path);
            remove.push(path);
        }
        for path in wanted {
            if self.shown_leaves.contains_key(path) && !touched.contains(path) {
                continue;
            }
            let Some(recipe) = leaf(tree, path, self.show_values) else { continue };
            if self.shown_leaves.get(path) != Some(&recipe) {
                upsert.push(recipe.clone());
                self.shown_leaves.insert(path.clone(), recipe);
            }
        }
    }

    /// Sets each holder's and leader's `since_ms`: when a view first showed it holding.
    fn stamp(
        &self,
        since: &mut HashMap<String, HashMap<String, Option<i64>>>,
        recipe: &mut Recipe,
        now_ms: i64,
    ) {
        let before = since.remove(&recipe.path).unwrap_or_default();
        let mut seen = HashMap::new();
        for holder in holding(&mut recipe.kind) {
            let at = *before.get(&holder.node).unwrap_or(&if self.first { None } else { Some(now_ms) });
            holder.since_ms = at;
            seen.insert(holder.node.clone(), at);
        }
        if !seen.is_empty() {
            since.insert(recipe.path.clone(), seen);
        }
    }

    /// Settles the nodes at `seeds` again, deepest first; a node whose standing changed
    /// unsettles its parent. Says whether the plain nodes changed.
    fn resettle(&mut self, tree: &Tree<'_>, seeds: BTreeSet<String>) -> bool {
        let mut queue: BTreeSet<(std::cmp::Reverse<usize>, String)> =
            seeds.into_iter().map(|p| (std::cmp::Reverse(depth(&p)), p)).collect();
        let mut changed = false;
        while let Some((_, path)) = queue.pop_first() {
            if self.settle(tree, &path) {
                changed = true;
                if let Some((parent, _)) = split(&path) {
                    queue.insert((std::cmp::Reverse(depth(parent)), parent.to_owned()));
                }
            }
        }
        changed
    }

    /// Is the node at `path` explained (owned, a recipe, or a directory of explained nodes
    /// without data of its own)? Records it among the plain nodes if not; says whether that
    /// changed.
    fn settle(&mut self, tree: &Tree<'_>, path: &str) -> bool {
        let plain = tree.get(path).and_then(|node| {
            if self.owners.contains_key(path) || self.shown.contains_key(path) || self.leaves.contains(path) {
                return None;
            }
            let children = tree.children(path);
            let container = node.data().is_empty()
                && !children.is_empty()
                && children.iter().all(|c| !self.unexplained.contains_key(&join(path, c)));
            (!container).then(|| tree_node(path, node, children.len()))
        });
        let before = match plain.clone() {
            Some(node) => self.unexplained.insert(path.to_owned(), node),
            None => self.unexplained.remove(path),
        };
        before != plain
    }

    fn tree_list(&self) -> Vec<TreeNode> {
        self.unexplained.values().take(TREE_LIMIT).cloned().collect()
    }
}

/// A counter or config node: a leaf's recipe.
fn is_leaf(kind: &Kind) -> bool {
    matches!(kind, Kind::Counter { .. } | Kind::Config { .. })
}

/// How far below `/` a path is (`/` itself 0).
fn depth(path: &str) -> usize {
    if path == "/" {
        0
    } else {
        path.bytes().filter(|&b| b == b'/').count()
    }
}

/// The connection state as the page names it.
fn connection(state: Option<ConnectionState>) -> &'static str {
    match state {
        None => "connecting",
        Some(ConnectionState::Connected | ConnectionState::Reconnected) => "connected",
        Some(ConnectionState::Suspended) => "suspended",
        Some(ConnectionState::Lost) => "lost",
        Some(ConnectionState::ReadOnly) => "read-only",
        Some(_) => "unknown",
    }
}
