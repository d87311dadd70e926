//! Turns cache snapshots into views: recognises the recipes, remembers when each holder and
//! leader was first seen holding (ZooKeeper does not record when a lock changed hands), and
//! gathers what each session holds.

use std::collections::{BTreeMap, HashMap};

use zkr_connection::ConnectionState;
use zkr_recipes::cache::{CacheSnapshot, CachedNode};

use super::recognize::recognise;
use super::tree::Tree;
use super::view::{Contender, Kind, Recipe, Role, SessionView, View, TREE_LIMIT};

/// Builds views, one per snapshot, keeping what the page must remember between them.
#[derive(Debug)]
pub(crate) struct Model {
    root: String,
    show_values: bool,
    /// When each holder or leader (by node path) was first seen holding; `None` for those
    /// already holding in the first view.
    since: HashMap<String, Option<i64>>,
    first: bool,
}

impl Model {
    pub(crate) fn new(root: &str, show_values: bool) -> Self {
        Model { root: root.to_owned(), show_values, since: HashMap::new(), first: true }
    }

    /// The view of `snapshot` at `now_ms`, with the connection's state.
    pub(crate) fn view(
        &mut self,
        snapshot: &CacheSnapshot,
        state: Option<ConnectionState>,
        now_ms: i64,
    ) -> View {
        let nodes: Vec<(String, &CachedNode)> = snapshot.iter().collect();
        let tree = Tree::new(nodes.iter().map(|(p, n)| (p.as_str(), *n)));
        let mut view = self.view_of(&tree, now_ms);
        view.connection = connection(state);
        view.stale = snapshot.is_stale() || !state.is_some_and(ConnectionState::is_connected);
        view.initialized = snapshot.is_initialized();
        view
    }

    /// The view of `tree` (connection fields as if connected).
    pub(crate) fn view_of(&mut self, tree: &Tree<'_>, now_ms: i64) -> View {
        let mut found = recognise(tree, self.show_values);
        self.stamp(&mut found.recipes, now_ms);
        let sessions = sessions(&found.recipes);
        let tree_more = found.tree.len().saturating_sub(TREE_LIMIT);
        found.tree.truncate(TREE_LIMIT);
        View {
            root: self.root.clone(),
            now_ms,
            connection: "connected",
            stale: false,
            initialized: true,
            nodes: tree.len(),
            show_values: self.show_values,
            recipes: found.recipes,
            sessions,
            tree: found.tree,
            tree_more,
        }
    }

    /// Sets each holder's and leader's `since_ms`: the first view that showed it holding.
    fn stamp(&mut self, recipes: &mut [Recipe], now_ms: i64) {
        let first = std::mem::replace(&mut self.first, false);
        let mut seen = HashMap::new();
        for recipe in recipes.iter_mut() {
            for holder in holding(&mut recipe.kind) {
                let key = format!("{}/{}", recipe.path, holder.node);
                let since = *self.since.get(&key).unwrap_or(&if first { None } else { Some(now_ms) });
                holder.since_ms = since;
                seen.insert(key, since);
            }
        }
        self.since = seen;
    }
}

/// The contenders that hold: a lock's holders, a semaphore's leases, the leader.
fn holding(kind: &mut Kind) -> Vec<&mut Contender> {
    match kind {
        Kind::Lock { holders, .. } => holders.iter_mut().collect(),
        Kind::Semaphore { leases, .. } => leases.iter_mut().collect(),
        Kind::Leader { leader, participants } => {
            let node = leader.as_ref().map(|l| l.node.clone());
            let mut out: Vec<&mut Contender> = leader.iter_mut().collect();
            out.extend(participants.iter_mut().filter(|p| Some(&p.node) == node.as_ref()));
            out
        }
        _ => Vec::new(),
    }
}

/// What each session holds, the sessions with the most roles first.
fn sessions(recipes: &[Recipe]) -> Vec<SessionView> {
    let mut by_session: BTreeMap<&str, Vec<Role>> = BTreeMap::new();
    for recipe in recipes {
        for (session, role) in roles(&recipe.kind) {
            let held = by_session.entry(session).or_default();
            match held.iter_mut().find(|r| r.path == recipe.path && r.role == role) {
                Some(same) => same.count += 1,
                None => {
                    held.push(Role { path: recipe.path.clone(), kind: recipe.kind.tag(), role, count: 1 })
                }
            }
        }
    }
    let mut out: Vec<SessionView> = by_session
        .into_iter()
        .map(|(session, roles)| SessionView { session: session.to_owned(), roles })
        .collect();
    out.sort_by(|a, b| b.roles.len().cmp(&a.roles.len()).then_with(|| a.session.cmp(&b.session)));
    out
}

/// Each session's role in one recipe.
fn roles(kind: &Kind) -> Vec<(&str, &'static str)> {
    fn all<'a>(list: &'a [Contender], role: &'static str) -> Vec<(&'a str, &'static str)> {
        list.iter().map(|c| (c.session.as_str(), role)).collect()
    }
    match kind {
        Kind::Lock { holders, waiters, .. } => [all(holders, "holder"), all(waiters, "waiting")].concat(),
        Kind::Semaphore { leases, waiters, .. } => [all(leases, "lease"), all(waiters, "waiting")].concat(),
        Kind::Leader { leader, participants } => participants
            .iter()
            .map(|p| {
                let leads = leader.as_ref().is_some_and(|l| l.node == p.node);
                (p.session.as_str(), if leads { "leader" } else { "participant" })
            })
            .collect(),
        Kind::Queue { locked, .. } => locked.iter().map(|l| (l.session.as_str(), "item lock")).collect(),
        Kind::Barrier { members, .. } | Kind::Group { members } => all(members, "member"),
        Kind::Service { instances, .. } => {
            instances.iter().filter_map(|i| Some((i.session.as_deref()?, "instance"))).collect()
        }
        Kind::Conflict { contenders, .. } => all(contenders, "conflict"),
        Kind::Counter { .. } | Kind::Config { .. } => Vec::new(),
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
