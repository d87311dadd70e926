//! The node layouts of Curator's and kazoo's recipes, each as a matcher over one directory's
//! children: the recipe it makes and the nodes it owns.

use std::collections::HashSet;

use zkr_recipes::cache::CachedNode;
use zkr_recipes::discovery::ServiceInstance;
use zkr_recipes::layouts::{
    is_queue_item, Marker, Origin, BARRIER_READY, KAZOO_LOCK_NAME, KAZOO_PARTY_NAME, QUEUE_PREFIXES,
    SEMAPHORE_LEASES, SEMAPHORE_LOCKS,
};

use zkr_connection::path::join;

use super::tree::{split, Tree};
use super::view::{contender, session_hex, Contender, Instance, Kind, LockedItem, Recipe};

/// What a matcher found: whose layout, the recipe, and the paths it owns.
pub(crate) type Match = (&'static str, Kind, Vec<String>);

/// A directory's children.
pub(crate) struct Names<'a> {
    path: &'a str,
    children: Vec<(&'a str, &'a CachedNode)>,
}

impl<'a> Names<'a> {
    pub(crate) fn new(tree: &Tree<'a>, path: &'a str) -> Self {
        Names { path, children: tree.child_nodes(path) }
    }

    /// `children`, read already, of `path`.
    pub(crate) fn of(path: &'a str, children: Vec<(&'a str, &'a CachedNode)>) -> Self {
        Names { path, children }
    }

    fn owned(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        names.into_iter().map(|n| join(self.path, n)).collect()
    }

    fn get(&self, name: &str) -> Option<&'a CachedNode> {
        self.children.iter().find(|(n, _)| *n == name).map(|(_, node)| *node)
    }
}

/// The children carrying one of `wanted` markers, in sequence order.
fn contenders<'a>(names: &Names<'a>, wanted: &[Marker]) -> Vec<(Marker, &'a str, &'a CachedNode)> {
    let mut found: Vec<(u64, Marker, &str, &CachedNode)> = names
        .children
        .iter()
        .filter_map(|&(n, node)| {
            Marker::of(n).filter(|(m, _)| wanted.contains(m)).map(|(m, seq)| (seq, m, n, node))
        })
        .collect();
    found.sort_by(|a, b| (a.0, a.2).cmp(&(b.0, b.2)));
    found.into_iter().map(|(_, m, n, node)| (m, n, node)).collect()
}

const LOCK_MARKERS: [Marker; 5] =
    [Marker::Lock, Marker::Read, Marker::Write, Marker::KazooLock, Marker::KazooRead];

/// A mutex or read-write lock: the first contender holds; for a read-write lock, every reader
/// before the first writer holds (Curator's and kazoo's rule).
pub(crate) fn lock(names: &Names<'_>) -> Option<Match> {
    let found = contenders(names, &LOCK_MARKERS);
    let first = found.first()?;
    let kazoo = first.0.origin() == Origin::Kazoo;
    let read_write = found.iter().any(|c| matches!(c.0, Marker::Read | Marker::Write | Marker::KazooRead));
    let is_write = |m: Marker| !matches!(m, Marker::Read | Marker::KazooRead);
    let held = if !read_write || is_write(first.0) {
        1
    } else {
        found.iter().take_while(|c| !is_write(c.0)).count()
    };
    let mut all: Vec<Contender> = found
        .iter()
        .map(|&(m, n, node)| Contender {
            mode: read_write.then_some(if is_write(m) { "write" } else { "read" }),
            ..contender(n, node)
        })
        .collect();
    let waiters = all.split_off(held);
    let owned = names.owned(found.iter().map(|c| c.1));
    Some((layout(kazoo), Kind::Lock { read_write, holders: all, waiters }, owned))
}

fn layout(kazoo: bool) -> &'static str {
    if kazoo {
        "kazoo"
    } else {
        "curator"
    }
}

/// Curator's `InterProcessSemaphoreV2`: leases under `leases`, acquirers queued on the mutex at
/// `locks`. The maximum lives in the acquiring processes, not in ZooKeeper.
pub(crate) fn semaphore(tree: &Tree<'_>, names: &Names<'_>) -> Option<Match> {
    names.get(SEMAPHORE_LEASES)?;
    let leases_path = join(names.path, SEMAPHORE_LEASES);
    let locks_path = join(names.path, SEMAPHORE_LOCKS);
    let leases = Names::new(tree, &leases_path);
    let locks = Names::new(tree, &locks_path);
    let held = contenders(&leases, &[Marker::Lease]);
    if held.len() != leases.children.len() || (held.is_empty() && names.get(SEMAPHORE_LOCKS).is_none()) {
        return None;
    }
    let waiting = contenders(&locks, &[Marker::Lock]);
    let mut owned = vec![leases_path.clone(), locks_path.clone()];
    owned.extend(leases.owned(held.iter().map(|c| c.1)));
    owned.extend(locks.owned(waiting.iter().map(|c| c.1)));
    let kind = Kind::Semaphore {
        max: None,
        leases: held.iter().map(|&(_, n, node)| contender(n, node)).collect(),
        waiters: waiting.iter().map(|&(_, n, node)| contender(n, node)).collect(),
    };
    Some(("curator", kind, owned))
}

/// kazoo's `Semaphore`: the maximum as decimal text in the node, a lease per ephemeral child
/// named by a hex UUID, acquirers queued on the kazoo lock at the sibling `<path>-__lock__`.
pub(crate) fn kazoo_semaphore(tree: &Tree<'_>, names: &Names<'_>) -> Option<Match> {
    let max: u64 = std::str::from_utf8(tree.get(names.path)?.data()).ok()?.trim().parse().ok()?;
    let all_leases = names.children.iter().all(|(n, node)| node.stat().ephemeral_owner != 0 && is_uuid(n));
    if names.children.is_empty() || !all_leases {
        return None;
    }
    let lock_path = format!("{}-{KAZOO_LOCK_NAME}", names.path);
    let queue = Names::new(tree, &lock_path);
    let waiting = contenders(&queue, &[Marker::KazooLock]);
    let mut owned = names.owned(names.children.iter().map(|c| c.0));
    owned.extend(queue.owned(waiting.iter().map(|c| c.1)));
    if tree.get(&lock_path).is_some() {
        owned.push(lock_path.clone());
    }
    let kind = Kind::Semaphore {
        max: Some(max),
        leases: names.children.iter().map(|&(n, node)| contender(n, node)).collect(),
        waiters: waiting.iter().map(|&(_, n, node)| contender(n, node)).collect(),
    };
    Some(("kazoo", kind, owned))
}

/// Curator's `LeaderLatch`: the first latch node leads.
pub(crate) fn leader(names: &Names<'_>) -> Option<Match> {
    let found = contenders(names, &[Marker::Latch]);
    let participants: Vec<Contender> = found.iter().map(|&(_, n, node)| contender(n, node)).collect();
    let leader = participants.first()?.clone();
    let owned = names.owned(found.iter().map(|c| c.1));
    Some(("curator", Kind::Leader { leader: Some(leader), participants }, owned))
}

/// A queue: persistent sequential items under one prefix (an ephemeral node of that name is a
/// consumer's lock on an item).
pub(crate) fn queue(names: &Names<'_>) -> Option<Match> {
    let is_item = |(name, node): &(&str, &CachedNode), prefix: &str| {
        node.stat().ephemeral_owner == 0 && is_queue_item(name, prefix)
    };
    let (prefix, origin) =
        QUEUE_PREFIXES.iter().find(|(p, _)| names.children.iter().any(|c| is_item(c, p)))?;
    let items: Vec<(&str, &CachedNode)> =
        names.children.iter().copied().filter(|c| is_item(c, prefix)).collect();
    let oldest_ms = items.iter().map(|(_, node)| node.stat().ctime).min();
    let owned = names.owned(items.iter().map(|c| c.0));
    Some((origin.name(), Kind::Queue { depth: items.len(), oldest_ms, locked: Vec::new() }, owned))
}

/// Fills in the items consumers hold locked: an ephemeral node elsewhere named as an item of
/// the queue (`<lockPath>/<item>`, kazoo's `taken/<item>`). Returns the lock nodes.
pub(crate) fn queue_locks(tree: &Tree<'_>, recipes: &mut [Recipe], claimed: &HashSet<String>) -> Vec<String> {
    let ephemerals: Vec<String> =
        tree.ephemerals().into_iter().filter(|p| !claimed.contains(p.as_ref())).map(Into::into).collect();
    let mut owned = Vec::new();
    for recipe in recipes.iter_mut() {
        owned.extend(lock_items(tree, recipe, ephemerals.iter().map(String::as_str)));
    }
    owned
}

/// Fills in a queue's items locked by `ephemerals` (paths) elsewhere; returns those lock nodes.
pub(crate) fn lock_items<'p>(
    tree: &Tree<'_>,
    recipe: &mut Recipe,
    ephemerals: impl IntoIterator<Item = &'p str>,
) -> Vec<String> {
    let Kind::Queue { locked, .. } = &mut recipe.kind else { return Vec::new() };
    let mut owned = Vec::new();
    for path in ephemerals {
        let Some((parent, item)) = split(path) else { continue };
        let Some(node) = tree.get(path) else { continue };
        if parent == recipe.path || tree.get(&join(&recipe.path, item)).is_none() {
            continue;
        }
        locked.push(LockedItem {
            item: item.to_owned(),
            session: session_hex(node.stat().ephemeral_owner),
            since_ms: node.stat().ctime,
        });
        owned.push(path.to_owned());
    }
    locked.sort_by(|a, b| (&a.item, a.since_ms, &a.session).cmp(&(&b.item, b.since_ms, &b.session)));
    owned
}

/// Curator's service discovery: a service's instances as JSON in its children.
pub(crate) fn service(names: &Names<'_>) -> Option<Match> {
    let mut name = None;
    let mut instances = Vec::new();
    let mut owned = Vec::new();
    for &(child, node) in &names.children {
        let Ok(instance) = ServiceInstance::<serde_json::Value>::from_json(node.data()) else { continue };
        name.get_or_insert_with(|| instance.name.clone());
        instances.push(Instance {
            id: instance.id,
            address: instance.address,
            port: instance.port,
            ssl_port: instance.ssl_port,
            enabled: instance.enabled,
            registered_ms: instance.registration_time_utc,
            session: (node.stat().ephemeral_owner != 0).then(|| session_hex(node.stat().ephemeral_owner)),
        });
        owned.push(join(names.path, child));
    }
    Some(("curator", Kind::Service { name: name?, instances }, owned))
}

/// A double barrier (Curator's `DistributedDoubleBarrier`, kazoo's `DoubleBarrier`): members
/// as ephemeral nodes named by UUIDs, and `ready` once the quota was met. The quota itself
/// lives in the processes.
pub(crate) fn barrier(names: &Names<'_>) -> Option<Match> {
    let ready = names.get(BARRIER_READY).is_some();
    let members: Vec<(&str, &CachedNode)> = names
        .children
        .iter()
        .copied()
        .filter(|(n, node)| node.stat().ephemeral_owner != 0 && is_uuid(n))
        .collect();
    let others = names.children.len() - members.len() - usize::from(ready);
    if others != 0 || (members.is_empty() && !ready) {
        return None;
    }
    let kazoo = members.first().is_some_and(|(n, _)| n.len() == 32);
    let mut owned = names.owned(members.iter().map(|c| c.0));
    if ready {
        owned.push(join(names.path, BARRIER_READY));
    }
    let members = members.iter().map(|&(n, node)| contender(n, node)).collect();
    Some((layout(kazoo), Kind::Barrier { members, ready }, owned))
}

/// A UUID, with dashes (Java's) or as 32 hex digits (Python's `uuid4().hex`).
fn is_uuid(name: &str) -> bool {
    let hex = name.bytes().filter(|b| b.is_ascii_hexdigit()).count();
    let dashes = name.bytes().filter(|&b| b == b'-').count();
    match name.len() {
        32 => hex == 32,
        36 => hex == 32 && dashes == 4 && [8, 13, 18, 23].iter().all(|&i| name.as_bytes()[i] == b'-'),
        _ => false,
    }
}

/// A group: Curator's `GroupMember` (an ephemeral node per member id) or kazoo's `Party`
/// (`<uuid>__party__`, the member's identifier as data).
pub(crate) fn group(names: &Names<'_>) -> Option<Match> {
    // An ephemeral node named as a queue item is a consumer's lock on it, not a member.
    let item = |n: &str| QUEUE_PREFIXES.iter().any(|(p, _)| is_queue_item(n, p));
    let ephemeral = names
        .children
        .iter()
        .all(|(n, node)| node.stat().ephemeral_owner != 0 && Marker::of(n).is_none() && !item(n));
    if names.children.is_empty() || !ephemeral {
        return None;
    }
    let kazoo = names.children.iter().all(|(n, _)| n.ends_with(KAZOO_PARTY_NAME));
    let members = names.children.iter().map(|&(n, node)| contender(n, node)).collect();
    Some((layout(kazoo), Kind::Group { members }, names.owned(names.children.iter().map(|c| c.0))))
}
