//! The Curator docs name only what exists: every zkr name in the zkr column of
//! `docs/curator-api-index.md` and `docs/migrating-from-curator.md` (each inline-code span:
//! types, `Type::method` and `zk.method` calls, module paths, variants, struct fields) is
//! looked up among the public items of zkr-connection, zkr-recipes and zkr-testing, and of
//! zookeeper-client (which zkr re-exports, and whose calls the docs mark "raw"), read with
//! `syn`; and no Curator name is both mapped to a zkr name and listed as missing.

mod index;
mod spans;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use index::Index;
use spans::{references, Reference};

/// The two documents, by file name.
const DOCS: [&str; 2] = ["curator-api-index.md", "migrating-from-curator.md"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The public names of zkr's library crates and of zookeeper-client, read once.
fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = Index::default();
        for krate in ["zkr-connection", "zkr-recipes", "zkr-testing"] {
            index.add_crate(&krate.replace('-', "_"), &root().join("crates").join(krate).join("src"));
        }
        index.add_crate("zookeeper_client", &zookeeper_client_sources());
        index.finish();
        index
    })
}

/// The sources of the zookeeper-client release in Cargo.lock, in cargo's registry.
fn zookeeper_client_sources() -> PathBuf {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock");
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"zookeeper-client\""))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"').to_owned())
        .expect("zookeeper-client in Cargo.lock");
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let registries = std::fs::read_dir(home.join("registry/src")).expect("cargo's registry sources");
    registries
        .flatten()
        .map(|r| r.path().join(format!("zookeeper-client-{version}/src")))
        .find(|src| src.is_dir())
        .unwrap_or_else(|| panic!("zookeeper-client {version} not under {}", home.display()))
}

/// A markdown table row: where it is, its Curator cell, its zkr cell and whether its table
/// lists what zkr lacks.
#[derive(Debug)]
struct Row {
    at: String,
    /// The whole line.
    line: String,
    curator: Option<String>,
    zkr: Option<String>,
    missing_table: bool,
}

/// The rows of every table of `text` that has a Curator or a zkr column. A column is the
/// zkr one when its header starts with "zkr" (`zkr (`zkr_recipes::locks`)`); in the section
/// "Not in zkr" it is the second one (what to do instead).
fn rows(name: &str, text: &str) -> Vec<Row> {
    let lines: Vec<&str> = text.lines().collect();
    let mut rows = Vec::new();
    // The current table's Curator and zkr columns, and whether it lists what zkr lacks.
    let mut header: Option<(Option<usize>, Option<usize>, bool)> = None;
    let mut section = "";
    for (n, line) in lines.iter().enumerate() {
        if let Some(heading) = line.strip_prefix("## ") {
            section = heading.trim();
        }
        if !line.starts_with('|') {
            header = None;
            continue;
        }
        let cells = cells(line);
        if lines.get(n + 1).is_some_and(|next| next.starts_with("|---")) {
            let starts = |prefix: &str| cells.iter().position(|c| c.to_lowercase().starts_with(prefix));
            let missing_table = section == "Not in zkr";
            let zkr = if missing_table { Some(1) } else { starts("zkr") };
            header = Some((starts("curator"), zkr, missing_table));
            continue;
        }
        let Some((curator, zkr, missing_table)) = header else { continue };
        if line.starts_with("|---") {
            continue;
        }
        let cell = |i: Option<usize>| i.and_then(|i| cells.get(i).cloned());
        rows.push(Row {
            at: format!("{name}:{}", n + 1),
            line: line.to_string(),
            curator: cell(curator),
            zkr: cell(zkr),
            missing_table,
        });
    }
    rows
}

/// A table line's cells, `\|` unescaped.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => cells.last_mut().unwrap().push(chars.next().unwrap()),
            '|' => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_owned()).collect()
}

/// The inline-code spans of a cell.
fn code_spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// The spans of a zkr cell that stand for zkr names: not a shell command (`zkr service
/// list`), not a ZooKeeper path (`/zookeeper`), not a Curator name the prose introduces as one
/// ("where Curator throws `NoNodeException`", "Curator's `CachedAtomicLong`").
fn zkr_spans(cell: &str) -> Vec<&str> {
    let curators =
        |before: &str| ["Curator's", "Curator throws"].iter().any(|p| before.trim_end().ends_with(p));
    let parts: Vec<&str> = cell.split('`').collect();
    let spans = parts.iter().enumerate().skip(1).step_by(2);
    spans
        .filter(|(i, span)| !curators(parts[i - 1]) && !span.starts_with("zkr ") && !span.starts_with('/'))
        .map(|(_, span)| *span)
        .collect()
}

/// The Cargo features of zkr's library crates (`sasl-digest-md5`).
fn features() -> &'static Vec<String> {
    static FEATURES: OnceLock<Vec<String>> = OnceLock::new();
    FEATURES.get_or_init(|| {
        let mut found = Vec::new();
        for krate in ["zkr-connection", "zkr-recipes", "zkr-testing"] {
            let manifest = root().join("crates").join(krate).join("Cargo.toml");
            let text = std::fs::read_to_string(&manifest).expect("a manifest");
            let section = text.split("\n[features]\n").nth(1).unwrap_or("");
            let section = section.split("\n[").next().unwrap_or("");
            found
                .extend(section.lines().filter_map(|l| l.split_once(" = ")).map(|(name, _)| name.to_owned()));
        }
        assert!(found.iter().any(|f| f == "sasl-digest-md5"), "features read: {found:?}");
        found
    })
}

/// The zkr names of `docs` (name, text) that do not exist, each with where it is; and how
/// many names were looked up.
fn unknown_names(index: &Index, docs: &[(&str, &str)]) -> (Vec<String>, usize) {
    let (mut unknown, mut checked) = (Vec::new(), 0);
    for (name, text) in docs {
        for row in rows(name, text) {
            let Some(zkr) = &row.zkr else { continue };
            for span in zkr_spans(zkr) {
                // A Cargo feature (`sasl-digest-md5`, `backon`).
                let feature = span.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
                if feature && (span.contains('-') || features().iter().any(|f| f == span)) {
                    checked += 1;
                    if !features().iter().any(|f| f == span) {
                        unknown.push(format!("{}: no feature `{span}`", row.at));
                    }
                    continue;
                }
                for reference in references(span) {
                    checked += 1;
                    if !exists(index, &reference) {
                        unknown.push(format!("{}: {reference:?} in `{span}`", row.at));
                    }
                }
            }
        }
    }
    (unknown, checked)
}

/// Names of the standard library and of the runtime crates the docs use beside zkr's.
const STD: [&str; 25] = [
    "Option",
    "Some",
    "None",
    "Ok",
    "Err",
    "Vec",
    "String",
    "str",
    "Box",
    "Arc",
    "Duration",
    "SystemTime",
    "Stream",
    "StreamExt",
    "u8",
    "i32",
    "i64",
    "u32",
    "u64",
    "usize",
    "bool",
    "std",
    "tokio",
    "futures",
    "serde",
];

/// Methods of the standard library the docs call (`p.split('/')`).
const STD_METHODS: [&str; 1] = ["split"];

fn exists(index: &Index, reference: &Reference) -> bool {
    let std =
        |name: &str| STD.contains(&name) || (name.len() == 1 && name.chars().all(|c| c.is_ascii_uppercase()));
    match reference {
        // A one-letter lowercase name is an argument (`after `t``).
        Reference::Name(name) if name.len() == 1 && name.chars().all(|c| c.is_ascii_lowercase()) => true,
        Reference::Name(name) => std(name) || index.is_item(name) || index.is_member(name),
        Reference::Method { on_zk: true, name } => index.has_member("ZkClient", name),
        Reference::Method { on_zk: false, name } => {
            STD_METHODS.contains(&name.as_str()) || index.is_member(name)
        }
        Reference::Path(segments) => std(&segments[0]) || path_exists(index, segments),
        Reference::Fields { path, fields } => {
            let owner = path.last().expect("a path has a segment");
            let path_ok = match path.len() {
                1 => index.is_item(owner) || index.is_member(owner),
                _ => path_exists(index, path),
            };
            path_ok && fields.iter().all(|f| index.has_member(owner, f))
        }
        Reference::Group { path, names } => names.iter().all(|name| {
            let mut segments = path.clone();
            segments.push(name.clone());
            path_exists(index, &segments)
        }),
    }
}

/// `module::item`, `module::Type::member`, `Type::member` or `Enum::Variant`.
fn path_exists(index: &Index, segments: &[String]) -> bool {
    let members_of = |owner: &str, rest: &[String]| {
        let mut owner = owner.to_owned();
        rest.iter().all(|member| {
            let found = index.has_member(&owner, member);
            owner.clone_from(member);
            found
        })
    };
    // The longest module prefix that names a module with the next segment in it.
    let by_module = (1..segments.len()).rev().any(|k| {
        index.modules_named(&segments[..k].join("::")).iter().any(|module| {
            index.in_module(module, &segments[k]) && members_of(&segments[k], &segments[k + 1..])
        })
    });
    by_module || (index.is_item(&segments[0]) && members_of(&segments[0], &segments[1..]))
}

/// The Curator names of a Curator cell: each inline-code span, a method listed in
/// parentheses after its class qualified by it (`Lease` (`getData`, `close`) gives `Lease`,
/// `Lease.getData`, `Lease.close`); arguments kept (`withACL(acl)` is not `withACL(acl, true)`),
/// a leading `.` dropped.
fn curator_names(cell: &str) -> Vec<String> {
    let (mut names, mut owner, mut depth) = (Vec::new(), String::new(), 0usize);
    for (i, part) in cell.split('`').enumerate() {
        if i % 2 == 0 {
            depth = part.chars().fold(depth, |d, c| match c {
                '(' => d + 1,
                ')' => d.saturating_sub(1),
                _ => d,
            });
            continue;
        }
        let name = part.trim().trim_start_matches('.').split_whitespace().collect::<Vec<_>>().join(" ");
        let method = name.starts_with(|c: char| c.is_ascii_lowercase());
        if depth > 0 && method && !owner.is_empty() {
            names.push(format!("{owner}.{name}"));
        } else {
            if depth == 0 {
                owner = name.split('(').next().unwrap_or(&name).to_owned();
            }
            names.push(name);
        }
    }
    names
}

/// Curator names (inline code in the Curator column) that one row maps to zkr names and
/// another lists as missing, with both places; and how many names were mapped and missing.
fn mapped_and_missing(docs: &[(&str, &str)]) -> (Vec<String>, usize, usize) {
    let (mut mapped, mut missing) = (BTreeMap::<String, String>::new(), BTreeMap::<String, String>::new());
    for (name, text) in docs {
        for row in rows(name, text) {
            let (Some(curator), Some(zkr)) = (&row.curator, &row.zkr) else { continue };
            let says_missing = zkr.to_lowercase().replace('*', "").trim().starts_with("not in zkr");
            let into = match (row.missing_table || says_missing, code_spans(zkr).is_empty()) {
                (true, _) => &mut missing,
                // A row that is partly missing ("`uri()` | **Not in zkr**: extra variables")
                // is neither.
                (false, false) if !row.line.to_lowercase().contains("not in zkr") => &mut mapped,
                _ => continue,
            };
            for key in curator_names(curator) {
                into.entry(key).or_insert_with(|| row.at.clone());
            }
        }
    }
    let both = mapped
        .iter()
        .filter_map(|(key, at)| missing.get(key).map(|m| format!("`{key}`: mapped at {at}, missing at {m}")))
        .collect();
    (both, mapped.len(), missing.len())
}

/// The two documents as they are in the tree.
fn documents() -> Vec<(&'static str, String)> {
    DOCS.iter().map(|d| (*d, std::fs::read_to_string(root().join("docs").join(d)).expect(d))).collect()
}

fn borrowed<'a>(docs: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    docs.iter().map(|(n, t)| (*n, t.as_str())).collect()
}

/// Issue 48, item 2: every public error type of the libraries implements `Classify`, and
/// `zkr_recipes::classify` (which the CLI's exit codes go through) knows it.
#[test]
fn every_public_error_is_classified() {
    let index = index();
    let errors = index.error_types(&["zkr_connection", "zkr_recipes"]);
    assert!(errors.len() >= 14 && errors.contains(&"LockError".to_owned()), "{errors:?}");
    let unclassified: Vec<_> = errors.iter().filter(|e| !index.implements(e, "Classify")).collect();
    assert!(unclassified.is_empty(), "public errors that do not implement Classify: {unclassified:?}");
    let list = std::fs::read_to_string(root().join("crates/zkr-recipes/src/classify.rs")).unwrap();
    let listed = |e: &&String| list.contains(&format!("::{e},"));
    let unlisted: Vec<_> = errors.iter().filter(|e| !listed(e)).collect();
    assert!(unlisted.is_empty(), "public errors zkr_recipes::classify does not know: {unlisted:?}");
}

#[test]
fn every_zkr_name_in_the_curator_docs_exists() {
    let docs = documents();
    for (name, text) in &docs {
        let (unknown, checked) = unknown_names(index(), &[(name, text)]);
        assert!(unknown.is_empty(), "{} zkr names that do not exist:\n{}", unknown.len(), unknown.join("\n"));
        // Not vacuous: the tables were found and their spans read.
        assert!(checked > 300, "{name}: only {checked} names found");
    }
}

#[test]
fn no_curator_name_is_both_mapped_and_missing() {
    let docs = documents();
    let (both, mapped, missing) = mapped_and_missing(&borrowed(&docs));
    assert!(both.is_empty(), "mapped to zkr and listed as missing:\n{}", both.join("\n"));
    assert!(mapped > 400 && missing > 50, "{mapped} mapped and {missing} missing Curator names found");
}

#[test]
fn a_misspelt_or_unknown_name_fails() {
    let docs = documents();
    let index_doc = &docs[0].1;
    let (before, _) = unknown_names(index(), &[("curator-api-index.md", index_doc)]);
    for (right, wrong) in [
        ("`InterProcessMutex::new(&zk, p)?`", "`InterProcessMutex::neww(&zk, p)?`"),
        ("`zkr_recipes::id::SegmentIdGenerator`", "`zkr_recipes::ids::SegmentIdGenerator`"),
        ("`zkr_recipes::id::SegmentIdGenerator`", "`zkr_recipes::id::SegmentIdGenerater`"),
        ("`acquire_timeout(d)`", "`acquire_timeuot(d)`"),
        ("`zk.session_timeout()`", "`zk.session_timeuot()`"),
        (
            "`AtomicStats { optimistic_tries, promoted_tries,",
            "`AtomicStats { optimistic_tries, promotion_tries,",
        ),
        ("`CacheMode::Tree { max_depth }`", "`CacheMode::Forest { max_depth }`"),
        (
            "`zkr_connection::compression::{compress, decompress}`",
            "`zkr_connection::compression::{compress, inflate}`",
        ),
        ("`sasl-digest-md5`", "`sasl-digest`"),
    ] {
        assert!(index_doc.contains(right), "{right} is in the index");
        let changed = index_doc.replacen(right, wrong, 1);
        let (unknown, _) = unknown_names(index(), &[("curator-api-index.md", &changed)]);
        let new: Vec<_> = unknown.iter().filter(|u| !before.contains(u)).collect();
        assert_eq!(new.len(), 1, "{wrong}: {new:?}");
    }
}

#[test]
fn curator_names_qualify_the_methods_of_a_class() {
    assert_eq!(
        curator_names(
            "`Lease` (`getNodeName`, `close`), `.withACL(acl, true)` (parents too), `CuratorTempFramework`"
        ),
        ["Lease", "Lease.getNodeName", "Lease.close", "withACL(acl, true)", "CuratorTempFramework"]
    );
    assert_eq!(curator_names("`.quietly()` (`RemoveWatchesType`)"), ["quietly()", "RemoveWatchesType"]);
}

#[test]
fn a_name_both_mapped_and_missing_is_found() {
    let index_doc = "## a\n\n| Curator | zkr | notes |\n|---|---|---|\n| `Foo.bar(x)`, `Baz` | `baz()` | |\n";
    let guide = "## Not in zkr\n\n| Curator | why |\n|---|---|\n| `Baz` on a 4-byte node | none |\n";
    let (both, mapped, missing) = mapped_and_missing(&[("index", index_doc), ("guide", guide)]);
    assert_eq!((mapped, missing), (2, 1));
    assert_eq!(both, ["`Baz`: mapped at index:5, missing at guide:5"]);
    let marked = "| Curator | zkr |\n|---|---|\n| `.qux()` | **Not in zkr** |\n| `qux()` | `zk.qux()` |\n";
    assert_eq!(mapped_and_missing(&[("d", marked)]).0.len(), 1);
}

/// `reference` with its last name misspelt (`None` for what is not looked up by name).
fn misspelt(reference: &Reference) -> Option<Reference> {
    let mut wrong = reference.clone();
    match &mut wrong {
        Reference::Name(name) | Reference::Method { name, .. } => name.push('q'),
        Reference::Path(path) => path.last_mut()?.push('q'),
        Reference::Fields { fields, .. } => fields.last_mut()?.push('q'),
        Reference::Group { names, .. } => names.last_mut()?.push('q'),
    }
    Some(wrong)
}

#[test]
fn every_name_of_the_docs_misspelt_is_caught() {
    let (mut mutants, mut missed) = (0, Vec::new());
    for (name, text) in &documents() {
        for row in rows(name, text) {
            let Some(zkr) = &row.zkr else { continue };
            for reference in zkr_spans(zkr).into_iter().flat_map(references) {
                // What the check takes without looking it up (`Duration`, an argument `t`).
                let std = |n: &String| STD.contains(&n.as_str()) || n.len() == 1;
                let looked_up = match &reference {
                    Reference::Name(n) => !std(n),
                    Reference::Path(p) => !std(&p[0]),
                    _ => true,
                };
                let Some(wrong) = misspelt(&reference).filter(|_| looked_up) else { continue };
                mutants += 1;
                if exists(index(), &wrong) {
                    missed.push(format!("{}: {wrong:?}", row.at));
                }
            }
        }
    }
    assert!(missed.is_empty(), "misspelt names taken for zkr's:\n{}", missed.join("\n"));
    assert!(mutants > 800, "only {mutants} names misspelt");
}
