//! The layouts, on trees made by hand as Curator and kazoo leave them.

use zkr_connection::Stat;
use zkr_recipes::cache::CachedNode;

use super::model::Model;
use super::tree::Tree;
use super::view::{Kind, View};

mod changes;

/// A tree under construction: `(path, node)` pairs, czxid in order of adding.
#[derive(Default)]
pub(super) struct Nodes(Vec<(String, CachedNode)>);

impl Nodes {
    pub(super) fn add(&mut self, path: &str, data: &[u8], session: i64) -> &mut Self {
        let czxid = self.0.len() as i64 + 1;
        let stat = Stat {
            czxid,
            mzxid: czxid,
            pzxid: czxid,
            ctime: 1_000 * czxid,
            mtime: 1_000 * czxid,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: session,
            data_length: data.len() as i32,
            num_children: 0,
        };
        self.0.push((path.to_owned(), CachedNode::new(data, &stat)));
        self
    }

    pub(super) fn dir(&mut self, path: &str) -> &mut Self {
        self.add(path, b"", 0)
    }

    fn view(&self, model: &mut Model) -> View {
        model.view_of(&Tree::new(self.0.iter().map(|(p, n)| (p.as_str(), n))), 100_000)
    }
}

fn kind<'a>(view: &'a View, path: &str) -> &'a Kind {
    &view
        .recipes
        .iter()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("no recipe at {path}: {view:#?}"))
        .kind
}

pub(super) const A: &str = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1";
pub(super) const B: &str = "_c_0f3c61aa-1b2c-4d5e-8f90-123456789abc";

#[test]
fn a_lock_holder_is_the_lowest_sequence_and_the_waiters_follow_in_order() {
    let mut n = Nodes::default();
    n.dir("/l").add(&format!("/l/{B}-lock-0000000002"), b"", 0x22).add(
        &format!("/l/{A}-lock-0000000001"),
        b"10.0.0.1",
        0x11,
    );
    n.add("/l/lock-0000000003", b"", 0x33);
    let view = n.view(&mut Model::new("/", false));
    let Kind::Lock { read_write: false, holders, waiters } = kind(&view, "/l") else { panic!("{view:#?}") };
    assert_eq!(holders.iter().map(|h| h.session.as_str()).collect::<Vec<_>>(), ["0x11"]);
    assert_eq!(holders[0].id.as_deref(), Some("10.0.0.1"));
    assert_eq!(waiters.iter().map(|h| h.session.as_str()).collect::<Vec<_>>(), ["0x22", "0x33"]);
    assert!(view.tree.is_empty(), "{:?}", view.tree);
    let roles: Vec<_> = view.sessions.iter().map(|s| (s.session.as_str(), s.roles[0].role)).collect();
    assert_eq!(roles, [("0x11", "holder"), ("0x22", "waiting"), ("0x33", "waiting")]);
}

#[test]
fn two_users_of_one_session_waiting_for_one_lock_are_one_role_counted_twice() {
    let mut n = Nodes::default();
    n.dir("/l").add("/l/lock-0000000001", b"", 0x11);
    n.add("/l/lock-0000000002", b"", 0x22).add("/l/lock-0000000003", b"", 0x22);
    let view = n.view(&mut Model::new("/", false));
    let waiting = view.sessions.iter().find(|s| s.session == "0x22").expect("the waiting session");
    assert_eq!(waiting.roles.len(), 1, "{waiting:?}");
    assert_eq!((waiting.roles[0].role, waiting.roles[0].count), ("waiting", 2));
}

#[test]
fn readers_before_the_first_writer_hold_a_read_write_lock() {
    let mut n = Nodes::default();
    n.dir("/rw");
    n.add(&format!("/rw/{A}-__READ__0000000001"), b"", 1).add(&format!("/rw/{B}-__READ__0000000002"), b"", 2);
    n.add(&format!("/rw/{A}-__WRIT__0000000003"), b"", 3).add(&format!("/rw/{B}-__READ__0000000004"), b"", 4);
    let view = n.view(&mut Model::new("/", false));
    let Kind::Lock { read_write: true, holders, waiters } = kind(&view, "/rw") else { panic!("{view:#?}") };
    assert_eq!(holders.iter().map(|h| h.mode.unwrap()).collect::<Vec<_>>(), ["read", "read"]);
    assert_eq!(waiters.iter().map(|h| h.mode.unwrap()).collect::<Vec<_>>(), ["write", "read"]);

    let mut n = Nodes::default();
    n.dir("/k").add("/k/aa__lock__0000000001", b"writer", 1).add("/k/bb__rlock__0000000002", b"reader", 2);
    let view = n.view(&mut Model::new("/", false));
    assert_eq!(view.recipes[0].layout, "kazoo");
    let Kind::Lock { holders, .. } = kind(&view, "/k") else { panic!() };
    assert_eq!(
        (holders.len(), holders[0].mode, holders[0].id.as_deref()),
        (1, Some("write"), Some("writer"))
    );
}

#[test]
fn semaphores_in_both_layouts() {
    let mut n = Nodes::default();
    n.dir("/s").dir("/s/leases").dir("/s/locks");
    n.add(&format!("/s/leases/{A}-lease-0000000000"), b"", 1).add(
        &format!("/s/locks/{B}-lock-0000000001"),
        b"",
        2,
    );
    n.add("/ks", b"2", 0).add("/ks/0123456789abcdef0123456789abcdef", b"py-1", 3);
    n.dir("/ks-__lock__").add("/ks-__lock__/ff__lock__0000000001", b"py-2", 4);
    let view = n.view(&mut Model::new("/", false));
    let Kind::Semaphore { max: None, leases, waiters } = kind(&view, "/s") else { panic!("{view:#?}") };
    assert_eq!((leases.len(), waiters.len()), (1, 1));
    let Kind::Semaphore { max: Some(2), leases, waiters } = kind(&view, "/ks") else { panic!("{view:#?}") };
    assert_eq!((leases[0].id.as_deref(), waiters[0].id.as_deref()), (Some("py-1"), Some("py-2")));
    assert_eq!(view.recipes.len(), 2, "the kazoo semaphore's lock is part of it: {:#?}", view.recipes);
    assert!(view.tree.is_empty(), "{:?}", view.tree);
}

#[test]
fn elections_queues_and_their_locked_items() {
    let mut n = Nodes::default();
    n.dir("/e").add(&format!("/e/{B}-latch-0000000001"), b"b", 2).add(
        &format!("/e/{A}-latch-0000000000"),
        b"a",
        1,
    );
    n.dir("/q").add("/q/queue-0000000000", b"job", 0).add("/q/queue-0000000001", b"job", 0);
    n.dir("/q-locks").add("/q-locks/queue-0000000000", b"", 9);
    let view = n.view(&mut Model::new("/", false));
    let Kind::Leader { leader: Some(leader), participants } = kind(&view, "/e") else { panic!("{view:#?}") };
    assert_eq!((leader.id.as_deref(), participants.len()), (Some("a"), 2));
    let Kind::Queue { depth: 2, oldest_ms: Some(oldest), locked } = kind(&view, "/q") else {
        panic!("{view:#?}")
    };
    assert_eq!(*oldest, 5_000);
    assert_eq!((locked[0].item.as_str(), locked[0].session.as_str()), ("queue-0000000000", "0x9"));
    assert!(view.tree.is_empty(), "{:?}", view.tree);
}

#[test]
fn services_barriers_and_groups() {
    let instance = br#"{"name":"orders","id":"i-1","address":"10.0.0.7","port":8080,"sslPort":null,
        "payload":null,"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}"#;
    let mut n = Nodes::default();
    n.dir("/services").dir("/services/orders").add("/services/orders/i-1", instance, 5);
    n.dir("/b").add("/b/53345f98-9423-4e0c-a7b5-9f819e3ec2e1", b"", 6).add("/b/ready", b"", 0);
    n.dir("/g").add("/g/worker-1", b"host-1:80", 7).add("/g/worker-2", b"", 8);
    n.dir("/p").add("/p/0123456789abcdef0123456789abcdef__party__", b"py", 9);
    let view = n.view(&mut Model::new("/", false));
    let Kind::Service { name, instances } = kind(&view, "/services/orders") else { panic!("{view:#?}") };
    assert_eq!(
        (name.as_str(), instances[0].port, instances[0].session.as_deref()),
        ("orders", Some(8080), Some("0x5"))
    );
    let Kind::Barrier { members, ready: true } = kind(&view, "/b") else { panic!("{view:#?}") };
    assert_eq!(members.len(), 1);
    let Kind::Group { members } = kind(&view, "/g") else { panic!("{view:#?}") };
    assert_eq!(members.iter().map(|m| m.node.as_str()).collect::<Vec<_>>(), ["worker-1", "worker-2"]);
    assert_eq!(view.recipes.iter().find(|r| r.path == "/p").unwrap().layout, "kazoo");
    assert!(view.tree.is_empty(), "{:?}", view.tree);
}

#[test]
fn counters_and_config_whose_values_stay_hidden_unless_asked() {
    let mut n = Nodes::default();
    n.dir("/c").add("/c/count", &42i32.to_be_bytes(), 0).add("/c/long", &(-7i64).to_be_bytes(), 0);
    n.add("/c/url", b"postgres://user:secret@db", 0).add("/c/word", b"true", 0);
    let hidden = n.view(&mut Model::new("/", false));
    assert_eq!(kind(&hidden, "/c/count"), &Kind::Counter { value: 42, bits: 32 });
    assert_eq!(kind(&hidden, "/c/long"), &Kind::Counter { value: -7, bits: 64 });
    let Kind::Config { value: None, size: 25, .. } = kind(&hidden, "/c/url") else { panic!("{hidden:#?}") };
    assert!(!serde_json::to_string(&hidden).unwrap().contains("secret"));
    let shown = n.view(&mut Model::new("/", true));
    let Kind::Config { value: Some(word), .. } = kind(&shown, "/c/word") else { panic!() };
    assert_eq!(word, "true");
}

#[test]
fn unexplained_nodes_are_the_plain_tree_and_zookeepers_own_are_left_out() {
    let mut n = Nodes::default();
    n.dir("/")
        .dir("/app")
        .dir("/app/empty")
        .add("/app/eph", b"", 0x5)
        .dir("/zookeeper")
        .dir("/zookeeper/quota");
    n.dir("/app/l").add("/app/l/lock-0000000000", b"", 1);
    let view = n.view(&mut Model::new("/", false));
    let paths: Vec<_> = view.tree.iter().map(|t| t.path.as_str()).collect();
    assert_eq!(paths, ["/", "/app", "/app/empty", "/app/eph"]);
    assert_eq!(view.tree[3].session.as_deref(), Some("0x5"));
}

#[test]
fn a_holder_is_timed_from_the_view_that_first_showed_it_holding() {
    let mut model = Model::new("/", false);
    let mut n = Nodes::default();
    n.dir("/l").add("/l/lock-0000000001", b"", 1).add("/l/lock-0000000002", b"", 2);
    let first = n.view(&mut model);
    let Kind::Lock { holders, .. } = kind(&first, "/l") else { panic!() };
    assert_eq!(holders[0].since_ms, None, "held before zkr ui started: unknown");
    n.0.remove(1);
    let tree = Tree::new(n.0.iter().map(|(p, node)| (p.as_str(), node)));
    let second = model.view_of(&tree, 200_000);
    let Kind::Lock { holders, .. } = kind(&second, "/l") else { panic!() };
    assert_eq!(holders[0].since_ms, Some(200_000));
    let third = model.view_of(&tree, 300_000);
    let Kind::Lock { holders, .. } = kind(&third, "/l") else { panic!() };
    assert_eq!(holders[0].since_ms, Some(200_000), "kept between views");
}

/// Issue 44, item 1: a kazoo `Lock`'s contender beside Curator mutex contenders, and a
/// read-write lock's reader beside a plain mutex's, are a conflict of layouts, not a lock and
/// "other nodes"; a semaphore's own directories beside nothing else are not.
#[test]
fn two_layouts_at_one_path_are_a_conflict() {
    let mut n = Nodes::default();
    n.dir("/x").add(&format!("/x/{A}-lock-0000000001"), b"", 0x11).add(
        "/x/9a1b__lock__0000000002",
        b"py-1",
        0x22,
    );
    n.dir("/y").add(&format!("/y/{A}-__READ__0000000001"), b"", 0x11).add(
        &format!("/y/{B}-lock-0000000002"),
        b"",
        0x22,
    );
    n.dir("/s").dir("/s/leases").dir("/s/locks").add(&format!("/s/leases/{A}-lease-0000000001"), b"", 0x11);
    let view = n.view(&mut Model::new("/", false));
    let Kind::Conflict { layouts, contenders } = kind(&view, "/x") else { panic!("{view:#?}") };
    assert_eq!(layouts.len(), 2, "{layouts:?}");
    assert!(layouts.iter().any(|l| l.contains("kazoo")), "{layouts:?}");
    assert_eq!(contenders.len(), 2);
    assert_eq!(contenders[1].id.as_deref(), Some("py-1"));
    assert!(matches!(kind(&view, "/y"), Kind::Conflict { .. }), "{view:#?}");
    assert!(matches!(kind(&view, "/s"), Kind::Semaphore { .. }), "{view:#?}");
    assert!(
        view.tree.iter().all(|t| !t.path.starts_with("/x/") && !t.path.starts_with("/y/")),
        "{:#?}",
        view.tree
    );
}
