//! Issue 47 item 6: the model kept change by change says what a model built afresh says, and
//! its patches, applied as the page applies them, give the page that view.

use std::collections::BTreeMap;

use super::super::model::{Change, Model};
use super::super::roles::holding;
use super::super::tree::Tree;
use super::super::view::{Kind, Recipe, View};
use super::{Nodes, A, B};

/// Nodes that come and go (path, data, session), beside the directories that stay: every layout
/// the page knows, a leaf that gains a child, and plain nodes.
fn candidates() -> Vec<(String, Vec<u8>, i64)> {
    let instance = br#"{"name":"orders","id":"i-1","address":"10.0.0.7","port":8080,"sslPort":null,
        "payload":null,"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}"#;
    vec![
        (format!("/l/{A}-lock-0000000001"), b"10.0.0.1".to_vec(), 0x11),
        (format!("/l/{B}-lock-0000000002"), b"".to_vec(), 0x22),
        ("/l/lock-0000000003".into(), b"".to_vec(), 0x22),
        ("/l/9a1b__lock__0000000004".into(), b"py".to_vec(), 0x33),
        (format!("/rw/{A}-__READ__0000000001"), b"".to_vec(), 0x11),
        (format!("/rw/{B}-__WRIT__0000000002"), b"".to_vec(), 0x22),
        (format!("/e/{A}-latch-0000000001"), b"a".to_vec(), 0x11),
        (format!("/e/{B}-latch-0000000002"), b"b".to_vec(), 0x22),
        (format!("/s/leases/{A}-lease-0000000001"), b"".to_vec(), 0x11),
        (format!("/s/locks/{B}-lock-0000000002"), b"".to_vec(), 0x22),
        ("/ks/0123456789abcdef0123456789abcdef".into(), b"py-1".to_vec(), 0x44),
        ("/ks-__lock__".into(), b"".to_vec(), 0),
        ("/ks-__lock__/ff__lock__0000000001".into(), b"py-2".to_vec(), 0x55),
        ("/q/queue-0000000000".into(), b"job".to_vec(), 0),
        ("/q/queue-0000000001".into(), b"job".to_vec(), 0),
        ("/q-locks/queue-0000000000".into(), b"".to_vec(), 0x66),
        ("/q-locks/queue-0000000001".into(), b"".to_vec(), 0x77),
        ("/svc/orders/i-1".into(), instance.to_vec(), 0x11),
        ("/b/53345f98-9423-4e0c-a7b5-9f819e3ec2e1".into(), b"".to_vec(), 0x11),
        ("/b/ready".into(), b"".to_vec(), 0),
        ("/g/worker-1".into(), b"host-1:80".to_vec(), 0x11),
        ("/c/count".into(), 42i32.to_be_bytes().to_vec(), 0),
        ("/c/url".into(), b"postgres://db".to_vec(), 0),
        ("/c/url/child".into(), b"x".to_vec(), 0),
        ("/c/word".into(), b"true".to_vec(), 0),
        ("/p/plain".into(), b"".to_vec(), 0),
        ("/p/eph".into(), b"".to_vec(), 0x88),
    ]
}

const DIRS: [&str; 15] = [
    "/",
    "/l",
    "/rw",
    "/e",
    "/s",
    "/s/leases",
    "/s/locks",
    "/q",
    "/q-locks",
    "/svc",
    "/svc/orders",
    "/b",
    "/g",
    "/c",
    "/p",
];

/// What the view says, holders' times aside (a model built afresh has seen no hand-over).
fn untimed(mut view: View) -> View {
    for recipe in &mut view.recipes {
        for holder in holding(&mut recipe.kind) {
            holder.since_ms = None;
        }
    }
    view
}

fn tree_of(nodes: &Nodes) -> Tree<'_> {
    Tree::new(nodes.0.iter().map(|(p, n)| (p.as_str(), n)))
}

/// One random change to `nodes` (a node made, deleted, or given a new value), if it can be made.
fn change(nodes: &mut Nodes, next: &mut impl FnMut(usize) -> usize) -> Option<Change> {
    let candidates = candidates();
    let (path, data, session) = &candidates[next(candidates.len())];
    let parent = match path.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((parent, _)) => parent,
    };
    let present = nodes.0.iter().position(|(p, _)| p == path);
    let has_children = nodes.0.iter().any(|(p, _)| p.starts_with(&format!("{path}/")));
    match present {
        Some(i) if has_children || next(3) == 0 => {
            let old = nodes.0.remove(i);
            nodes.add(path, &[data.as_slice(), b"!"].concat(), old.1.stat().ephemeral_owner);
        }
        Some(i) => drop(nodes.0.remove(i)),
        None if nodes.0.iter().any(|(p, _)| p == parent) => drop(nodes.add(path, data, *session)),
        None => return None,
    }
    Some(Change { path: path.clone(), ephemeral: *session != 0 })
}

#[test]
fn patches_say_what_a_model_built_afresh_says() {
    for seed in 1..=40u64 {
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut next = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            usize::try_from(rng % n as u64).unwrap_or(0)
        };
        let mut nodes = Nodes::default();
        for dir in DIRS {
            nodes.dir(dir);
        }
        nodes.add("/ks", b"2", 0);
        let mut model = Model::new("/", false);
        model.rebuild(&tree_of(&nodes), 1_000);
        let mut page: BTreeMap<String, Recipe> =
            model.view().recipes.into_iter().map(|r| (r.path.clone(), r)).collect();
        for step in 0..60 {
            let Some(change) = change(&mut nodes, &mut next) else { continue };
            let context = format!("seed {seed}, step {step}, {}", change.path);
            let now = 2_000 + step;
            let patch = model.apply(&tree_of(&nodes), &[change], now);
            for gone in &patch.remove {
                page.remove(gone);
            }
            for recipe in patch.upsert {
                page.insert(recipe.path.clone(), recipe);
            }
            let kept = model.view();
            let mut afresh = Model::new("/", false);
            afresh.rebuild(&tree_of(&nodes), now);
            assert_eq!(untimed(kept.clone()), untimed(afresh.view()), "{context}");
            let paged: Vec<Recipe> = page.values().cloned().collect();
            assert_eq!(paged, kept.recipes, "the page after the patch, {context}");
        }
    }
}

#[test]
fn a_holder_handed_the_lock_in_a_patch_is_timed_from_it() {
    let mut nodes = Nodes::default();
    nodes.dir("/").dir("/l").add("/l/lock-0000000001", b"", 1).add("/l/lock-0000000002", b"", 2);
    let mut model = Model::new("/", false);
    model.rebuild(&tree_of(&nodes), 1_000);
    nodes.0.retain(|(p, _)| p != "/l/lock-0000000001");
    let change = Change { path: "/l/lock-0000000001".into(), ephemeral: true };
    let patch = model.apply(&tree_of(&nodes), &[change], 5_000);
    let [Recipe { kind: Kind::Lock { holders, .. }, .. }] = patch.upsert.as_slice() else {
        panic!("{patch:#?}")
    };
    assert_eq!((holders[0].node.as_str(), holders[0].since_ms), ("lock-0000000002", Some(5_000)));
    assert!(patch.remove.is_empty() && patch.tree.is_none(), "{patch:#?}");
}
