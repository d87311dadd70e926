//! The document of `zkr export` and `zkr import`, and the checks an import makes of the whole
//! document before it writes anything. A document comes from elsewhere (a file, a pipe, another
//! team): a node's path is joined to PATH only once it is known to be `""` (PATH itself) or a
//! valid ZooKeeper path below it (`path::check_path`: no empty, `.` or `..` segment, no trailing
//! slash, none of the characters ZooKeeper refuses), so that no node lands beside PATH (`-prod`
//! under `/app` would be `/app-prod`) or above it.

use std::collections::HashMap;
use std::net::IpAddr;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use zkr_connection::path::{self, PathError};
use zkr_connection::zookeeper_client::AuthId;
use zkr_connection::{Acl, MAX_DATA_LEN};

/// The document's `format`.
pub(super) const FORMAT: &str = "zkr-export/1";

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Document {
    pub(super) format: String,
    /// The exported root, for the reader.
    pub(super) root: String,
    pub(super) nodes: Vec<Node>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Node {
    /// Relative to the root: "" for the root itself, "/a/b" below it.
    pub(super) path: String,
    /// `text` (UTF-8) or `base64`.
    pub(super) encoding: String,
    pub(super) data: String,
    pub(super) acl: Vec<AclEntry>,
    pub(super) ephemeral: bool,
    pub(super) stat: serde_json::Value,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct AclEntry {
    pub(super) scheme: String,
    pub(super) id: String,
    pub(super) perms: String,
}

/// A node of a checked document: where it goes, its data and ACL.
#[derive(Debug)]
pub(super) struct Checked {
    pub(super) target: String,
    pub(super) data: Vec<u8>,
    pub(super) acl: Vec<Acl>,
    /// Never written: it would go with zkr's session.
    pub(super) ephemeral: bool,
}

/// A checked document: its nodes in the document's order (parents before children).
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) nodes: Vec<Checked>,
    /// Whether the document has a node for PATH itself (`""`); without one, PATH must exist.
    pub(super) has_root: bool,
}

/// The first node of a document that cannot be imported, and why.
#[derive(Debug, thiserror::Error)]
#[error("node {index} (path {path:?}): {problem}")]
pub(super) struct BadNode {
    /// Its position in `nodes`, from 0.
    pub(super) index: usize,
    /// Its path as the document gives it (shown escaped).
    pub(super) path: String,
    pub(super) problem: Problem,
}

/// What is wrong with a node.
#[derive(Debug, thiserror::Error)]
pub(super) enum Problem {
    /// Neither `""` nor a path starting with `/`.
    #[error("a node's path is \"\" (PATH itself) or starts with '/'")]
    NotRelative,
    /// `"/"`: PATH itself is `""`.
    #[error("\"/\" is not a node below PATH (PATH itself is \"\")")]
    Root,
    /// Not a path ZooKeeper takes.
    #[error("not a valid path: {0}")]
    InvalidPath(PathError),
    /// The joined path is not PATH or below it (kept as a second line of defence).
    #[error("{0:?} is not under PATH")]
    Outside(String),
    /// The joined path is in ZooKeeper's own tree.
    #[error("{0:?} is in ZooKeeper's reserved /zookeeper tree")]
    Reserved(String),
    /// A path given twice.
    #[error("the same path as node {0}")]
    Duplicate(usize),
    /// A node whose parent the document does not create before it.
    #[error("its parent {0:?} is not a node before it in the document")]
    NoParent(String),
    /// A node below an ephemeral node (which is skipped, and cannot have children anyway).
    #[error("its parent {0:?} is ephemeral")]
    EphemeralParent(String),
    #[error("unknown encoding {0:?} (text or base64)")]
    Encoding(String),
    #[error("data not in base64: {0}")]
    Base64(base64::DecodeError),
    #[error("{0} bytes of data; ZooKeeper takes at most {MAX_DATA_LEN}")]
    TooLarge(usize),
    #[error("an empty ACL (ZooKeeper refuses it)")]
    EmptyAcl,
    /// An entry ZooKeeper would refuse; `entry` is `scheme:id:perms`.
    #[error("ACL entry {index} ({entry:?}): {reason}")]
    Acl { index: usize, entry: String, reason: &'static str },
}

/// Checks every node of `document` for an import to `root` (a valid path) and returns what to
/// write, in the document's order; the first bad node is the error, and nothing is written.
pub(super) fn check(document: &Document, root: &str) -> Result<Plan, BadNode> {
    let has_root = document.nodes.iter().any(|n| n.path.is_empty());
    // Each path seen so far: its index and whether it is ephemeral.
    let mut seen: HashMap<&str, (usize, bool)> = HashMap::with_capacity(document.nodes.len());
    let mut nodes = Vec::with_capacity(document.nodes.len());
    for (index, node) in document.nodes.iter().enumerate() {
        let bad = |problem| BadNode { index, path: node.path.clone(), problem };
        let target = target(root, &node.path).map_err(bad)?;
        if let Some(&(first, _)) = seen.get(node.path.as_str()) {
            return Err(bad(Problem::Duplicate(first)));
        }
        if !node.path.is_empty() {
            let parent = parent_of(&node.path);
            match seen.get(parent) {
                Some((_, true)) => return Err(bad(Problem::EphemeralParent(parent.to_owned()))),
                Some((_, false)) => {}
                // Without a node for PATH, PATH must exist (the importer checks it).
                None if parent.is_empty() && !has_root => {}
                None => return Err(bad(Problem::NoParent(parent.to_owned()))),
            }
        }
        let data = data_of(node).map_err(bad)?;
        let acl = acl_of(&node.acl).map_err(bad)?;
        seen.insert(&node.path, (index, node.ephemeral));
        nodes.push(Checked { target, data, acl, ephemeral: node.ephemeral });
    }
    Ok(Plan { nodes, has_root })
}

/// The node's path under `root`, checked.
fn target(root: &str, relative: &str) -> Result<String, Problem> {
    let target = match relative {
        "" => root.to_owned(),
        "/" => return Err(Problem::Root),
        _ if !relative.starts_with('/') => return Err(Problem::NotRelative),
        _ => {
            path::check_path(relative).map_err(Problem::InvalidPath)?;
            if root == "/" {
                relative.to_owned()
            } else {
                format!("{root}{relative}")
            }
        }
    };
    path::check_path(&target).map_err(Problem::InvalidPath)?;
    let below = root == "/" || target.strip_prefix(root).is_some_and(|r| r.is_empty() || r.starts_with('/'));
    if !below {
        return Err(Problem::Outside(target));
    }
    if path::is_reserved(&target) {
        return Err(Problem::Reserved(target));
    }
    Ok(target)
}

/// The relative path of a node's parent (`""` for PATH); `relative` is a checked, non-empty path.
fn parent_of(relative: &str) -> &str {
    relative.rfind('/').map_or("", |i| &relative[..i])
}

fn data_of(node: &Node) -> Result<Vec<u8>, Problem> {
    let data = match node.encoding.as_str() {
        "text" => node.data.as_bytes().to_vec(),
        "base64" => base64::engine::general_purpose::STANDARD.decode(&node.data).map_err(Problem::Base64)?,
        other => return Err(Problem::Encoding(other.to_owned())),
    };
    if data.len() > MAX_DATA_LEN {
        return Err(Problem::TooLarge(data.len()));
    }
    Ok(data)
}

/// The entries as ZooKeeper would take them: checked as the server checks the ids of its
/// built-in schemes, so that no create or ACL change of the import is refused half-way.
fn acl_of(entries: &[AclEntry]) -> Result<Vec<Acl>, Problem> {
    if entries.is_empty() {
        return Err(Problem::EmptyAcl);
    }
    let mut acl = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let problem = |reason| Problem::Acl {
            index,
            entry: format!("{}:{}:{}", entry.scheme, entry.id, entry.perms),
            reason,
        };
        let permission = super::acl::permission_of(&entry.perms)
            .ok_or_else(|| problem("permissions are letters of cdrwa"))?;
        if let Some(reason) = id_problem(&entry.scheme, &entry.id) {
            return Err(problem(reason));
        }
        acl.push(Acl::new(permission, AuthId::new(&entry.scheme, &entry.id)));
    }
    Ok(acl)
}

/// Why ZooKeeper would refuse `scheme:id` (`PrepRequestProcessor.fixupACL` and the
/// providers' `isValid`); `None` when it takes it, or when the scheme is one only the server
/// knows (sasl, x509, a custom provider).
fn id_problem(scheme: &str, id: &str) -> Option<&'static str> {
    match scheme {
        "" => Some("no scheme"),
        "world" if id != "anyone" => Some("the world scheme's only id is anyone"),
        // Stands for the importing session's own ids: an export never holds it (the server
        // stores the ids it stood for), and a session without auth has it refused.
        "auth" => Some("auth stands for the importing session's ids: give them instead"),
        "digest" if java_split_len(id, ':') != 2 => Some("a digest id is user:base64-hash"),
        "ip" if !valid_ip(id) => Some("an ip id is an address or address/bits"),
        _ => None,
    }
}

/// How many parts Java's `String.split` gives (trailing empty parts dropped), as
/// `DigestAuthenticationProvider.isValid` counts them.
fn java_split_len(s: &str, separator: char) -> usize {
    let parts: Vec<&str> = s.split(separator).collect();
    match parts.iter().rposition(|p| !p.is_empty()) {
        Some(last) => last + 1,
        None if s.is_empty() => 1,
        None => 0,
    }
}

/// `IPAuthenticationProvider.isValid`: an address, optionally `/bits` within its length.
fn valid_ip(id: &str) -> bool {
    let (address, bits) = match id.split_once('/') {
        Some((address, bits)) => (address, Some(bits)),
        None => (id, None),
    };
    let Ok(address) = address.parse::<IpAddr>() else { return false };
    let width = if address.is_ipv4() { 32 } else { 128 };
    bits.is_none_or(|bits| bits.parse::<u32>().is_ok_and(|b| b <= width))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str) -> Node {
        let acl = vec![AclEntry { scheme: "world".into(), id: "anyone".into(), perms: "cdrwa".into() }];
        Node {
            path: path.into(),
            encoding: "text".into(),
            data: "d".into(),
            acl,
            ephemeral: false,
            stat: serde_json::Value::Null,
        }
    }

    fn document(nodes: Vec<Node>) -> Document {
        Document { format: FORMAT.into(), root: "/x".into(), nodes }
    }

    fn problem(nodes: Vec<Node>, root: &str) -> (usize, Problem) {
        let bad = check(&document(nodes), root).expect_err("a bad document");
        (bad.index, bad.problem)
    }

    #[test]
    fn targets_are_path_or_below_it() {
        let plan = check(&document(vec![node(""), node("/a"), node("/a/-b"), node("/..c")]), "/app").unwrap();
        let targets: Vec<_> = plan.nodes.iter().map(|n| n.target.as_str()).collect();
        assert_eq!(targets, ["/app", "/app/a", "/app/a/-b", "/app/..c"]);
        let plan = check(&document(vec![node(""), node("/a")]), "/").unwrap();
        assert_eq!(plan.nodes[1].target, "/a");
        assert!(plan.has_root);
    }

    #[test]
    fn every_bad_path_is_refused_and_named() {
        type Expected = fn(&Problem) -> bool;
        let cases: [(&str, Expected); 8] = [
            ("-prod", |p| matches!(p, Problem::NotRelative)),
            ("/", |p| matches!(p, Problem::Root)),
            ("/a/..", |p| matches!(p, Problem::InvalidPath(PathError::RelativeSegment("..")))),
            ("/./a", |p| matches!(p, Problem::InvalidPath(PathError::RelativeSegment(".")))),
            ("//a", |p| matches!(p, Problem::InvalidPath(PathError::EmptySegment(_)))),
            ("/a/", |p| matches!(p, Problem::InvalidPath(PathError::TrailingSlash))),
            ("/a\0", |p| matches!(p, Problem::InvalidPath(PathError::InvalidCharacter { .. }))),
            ("/a\u{1b}[2J", |p| matches!(p, Problem::InvalidPath(PathError::InvalidCharacter { .. }))),
        ];
        for (path, expected) in cases {
            let bad = check(&document(vec![node(""), node("/a"), node(path)]), "/app").expect_err(path);
            assert_eq!(bad.index, 2, "{path:?}");
            assert!(expected(&bad.problem), "{path:?}: {:?}", bad.problem);
            let shown = bad.to_string();
            assert!(shown.contains(&format!("{path:?}")) && !shown.contains('\u{1b}'), "escaped: {shown}");
        }
    }

    #[test]
    fn the_reserved_tree_is_refused() {
        let (_, p) = problem(vec![node(""), node("/zookeeper")], "/");
        assert!(matches!(p, Problem::Reserved(t) if t == "/zookeeper"));
        let (_, p) = problem(vec![node("")], "/zookeeper");
        assert!(matches!(p, Problem::Reserved(_)));
    }

    #[test]
    fn duplicates_and_parents_after_children_are_refused() {
        assert!(matches!(
            problem(vec![node(""), node("/a"), node("/a")], "/app"),
            (2, Problem::Duplicate(1))
        ));
        assert!(matches!(problem(vec![node(""), node(""), node("/a")], "/app"), (1, Problem::Duplicate(0))));
        let (index, p) = problem(vec![node(""), node("/a/b"), node("/a")], "/app");
        assert!(index == 1 && matches!(&p, Problem::NoParent(parent) if parent == "/a"), "{p:?}");
        // PATH's own node, when the document has one, comes first.
        assert!(
            matches!(problem(vec![node("/a"), node("")], "/app"), (0, Problem::NoParent(p)) if p.is_empty())
        );
        let mut ephemeral = node("/e");
        ephemeral.ephemeral = true;
        assert!(matches!(
            problem(vec![node(""), ephemeral, node("/e/x")], "/app"),
            (2, Problem::EphemeralParent(_))
        ));
        // Without PATH's node, its children are fine (PATH must then exist).
        let plan = check(&document(vec![node("/a"), node("/a/b")]), "/app").unwrap();
        assert!(!plan.has_root && plan.nodes.len() == 2);
    }

    #[test]
    fn data_and_acls_are_checked_as_zookeeper_would() {
        let with = |f: fn(&mut Node)| {
            let mut bad = node("/a");
            f(&mut bad);
            problem(vec![node(""), bad], "/app").1
        };
        assert!(matches!(with(|n| n.encoding = "hex".into()), Problem::Encoding(_)));
        assert!(matches!(with(|n| (n.encoding, n.data) = ("base64".into(), "!".into())), Problem::Base64(_)));
        assert!(matches!(with(|n| n.data = "x".repeat(MAX_DATA_LEN + 1)), Problem::TooLarge(_)));
        assert!(matches!(with(|n| n.acl.clear()), Problem::EmptyAcl));
        for (scheme, id, perms) in [
            ("world", "anyone", "rx"),
            ("world", "someone", "r"),
            ("", "anyone", "r"),
            ("auth", "", "cdrwa"),
            ("digest", "user", "r"),
            ("digest", "user:", "r"),
            ("digest", "a:b:c", "r"),
            ("ip", "10.0.0.256", "r"),
            ("ip", "10.0.0.0/33", "r"),
            ("ip", "fe80::1/129", "r"),
            ("ip", "host.example", "r"),
        ] {
            let mut bad = node("/a");
            bad.acl.push(AclEntry { scheme: scheme.into(), id: id.into(), perms: perms.into() });
            let (_, p) = problem(vec![node(""), bad], "/app");
            assert!(matches!(p, Problem::Acl { index: 1, .. }), "{scheme}:{id}:{perms}: {p:?}");
        }
        let mut good = node("/a");
        for (scheme, id) in [
            ("digest", "ops:c2FsdA=="),
            ("ip", "10.0.0.0/8"),
            ("ip", "fe80::1"),
            ("sasl", "svc@REALM"),
            ("x509", "CN=a"),
        ] {
            good.acl.push(AclEntry { scheme: scheme.into(), id: id.into(), perms: "r".into() });
        }
        assert_eq!(check(&document(vec![node(""), good]), "/app").unwrap().nodes[1].acl.len(), 6);
    }

    #[test]
    fn java_split_counts_as_java_does() {
        assert_eq!(java_split_len("a:b", ':'), 2);
        assert_eq!(java_split_len(":b", ':'), 2);
        assert_eq!(java_split_len("a:", ':'), 1);
        assert_eq!(java_split_len("a:b::", ':'), 2);
        assert_eq!(java_split_len(":", ':'), 0);
        assert_eq!(java_split_len("", ':'), 1);
    }
}
