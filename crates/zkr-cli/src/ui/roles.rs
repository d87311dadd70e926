//! Who does what: the contenders that hold in a recipe, and each session's roles across them.

use std::collections::BTreeMap;

use super::view::{Contender, Kind, Recipe, Role, SessionView};

/// The contenders that hold: a lock's holders, a semaphore's leases, the leader.
pub(crate) fn holding(kind: &mut Kind) -> Vec<&mut Contender> {
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
pub(crate) fn sessions<'a>(recipes: impl IntoIterator<Item = &'a Recipe>) -> Vec<SessionView> {
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
