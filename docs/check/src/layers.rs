//! The crates' architecture, held by their imports (issue 48): a module's dependencies are the
//! modules its code names through `crate::` and `super::` (comments and `tests` modules aside).
//!
//! - `zkr-connection` stands in floors: the floor (errors, paths, deadlines, guards), `retry`
//!   on it, `session` on both, `ops` on all three; no import runs from a lower floor to a
//!   higher one, a circle of imports stays inside `session`, and inside the crate a name is
//!   imported from the module that defines it, not through `lib.rs`'s re-exports.
//! - `zkr-recipes`, `zkr-testing` and `zkr-cli` have no circle of imports at all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module (`a::b`, the crate root `""`) and the modules it names.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// Code lines that name something through the crate root's re-exports, as `file:line: text`.
type ThroughRoot = Vec<String>;

/// The module graph of the crate whose sources are under `src`.
fn graph(src: &Path) -> (Graph, ThroughRoot) {
    let mut files = Vec::new();
    crate::lint::sources(src, &mut files);
    let mut texts = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
            parts.pop();
        }
        if parts.last().is_some_and(|p| p == "tests") {
            continue;
        }
        texts.insert(parts.join("::"), (file.display().to_string(), std::fs::read_to_string(&file).unwrap()));
    }
    let modules: BTreeSet<String> = texts.keys().cloned().collect();
    let (mut graph, mut through_root) = (Graph::new(), ThroughRoot::new());
    for (module, (file, text)) in &texts {
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        let mut deps = BTreeSet::new();
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let parent: Vec<&str> = module.split("::").filter(|p| !p.is_empty()).collect();
            let parent = &parent[..parent.len().saturating_sub(1)];
            for (base, path) in named(line) {
                let base = if base == "crate" { &[][..] } else { parent };
                match resolve(&modules, base, &path) {
                    Some(found) if found != *module => drop(deps.insert(found)),
                    Some(_) => {}
                    None if module.is_empty() => {}
                    None => through_root.push(format!("{file}:{}: {}", n + 1, line.trim())),
                }
            }
        }
        graph.insert(module.clone(), deps);
    }
    (graph, through_root)
}

/// The paths a line names after `crate::` or `super::`, each as (`crate` or `super`, its
/// segments); a group (`crate::{a::b, c}`) gives one path per member.
fn named(line: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut found = Vec::new();
    for base in ["crate", "super"] {
        let needle = format!("{base}::");
        for (i, _) in line.match_indices(&needle) {
            let before = line[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
                continue;
            }
            let rest = &line[i + needle.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                for member in group.split(',') {
                    found.push((base, segments(member.trim())));
                }
            } else {
                found.push((base, segments(rest)));
            }
        }
    }
    found.retain(|(_, path)| !path.is_empty());
    found
}

/// The leading `a::b::c` of `text`, as segments.
fn segments(text: &str) -> Vec<String> {
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(text.len());
    text[..end].split("::").take_while(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// The longest module that `base` + `path` starts with, `base` itself included unless it is
/// the crate root: `None` for a name the crate root holds (one it re-exports).
fn resolve(modules: &BTreeSet<String>, base: &[&str], path: &[String]) -> Option<String> {
    let mut full: Vec<&str> = base.to_vec();
    full.extend(path.iter().map(String::as_str));
    (base.len().max(1)..=full.len()).rev().map(|k| full[..k].join("::")).find(|m| modules.contains(m))
}

/// The circles of `graph`: its strongly connected components of more than one module.
fn circles(graph: &Graph) -> Vec<BTreeSet<String>> {
    // Two modules are in one circle when each reaches the other.
    let reach = |from: &str| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from.to_owned()]);
        while let Some(m) = todo.pop() {
            for d in graph.get(&m).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|m| (m, reach(m))).collect();
    let mut found: Vec<BTreeSet<String>> = Vec::new();
    for (m, r) in &reaches {
        let circle: BTreeSet<String> = r
            .iter()
            .filter(|d| *d != *m && reaches.get(d).is_some_and(|back| back.contains(*m)))
            .cloned()
            .collect();
        if !circle.is_empty() && !found.iter().any(|c| c.contains(*m)) {
            found.push(circle.into_iter().chain([(*m).clone()]).collect());
        }
    }
    found
}

/// zkr-connection's floor of a module: 0 the floor, 1 `retry`, 2 `session`, 3 `ops`.
fn floor(module: &str) -> u8 {
    match module.split("::").next() {
        Some("retry") => 1,
        Some("session") => 2,
        Some("ops") => 3,
        _ => 0,
    }
}

/// What is wrong with zkr-connection's structure, one line each.
fn connection_faults(graph: &Graph, through_root: &ThroughRoot) -> Vec<String> {
    let mut faults: Vec<String> =
        through_root.iter().map(|l| format!("through the crate root: {l}")).collect();
    for (m, deps) in graph.iter().filter(|(m, _)| !m.is_empty()) {
        for d in deps.iter().filter(|d| floor(d) > floor(m)) {
            faults.push(format!("{m} (floor {}) imports {d} (floor {})", floor(m), floor(d)));
        }
    }
    for circle in circles(graph) {
        if !circle.iter().all(|m| m.starts_with("session::")) {
            faults.push(format!("a circle outside session: {circle:?}"));
        }
    }
    faults
}

fn crate_src(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates").join(name).join("src")
}

#[test]
fn zkr_connection_stands_in_floors() {
    let (graph, through_root) = graph(&crate_src("zkr-connection"));
    assert!(graph.keys().any(|m| m == "session::supervisor") && graph.keys().any(|m| m == "ops::crud"));
    let faults = connection_faults(&graph, &through_root);
    assert!(faults.is_empty(), "zkr-connection's structure:\n{}", faults.join("\n"));
}

#[test]
fn the_other_crates_have_no_circle_of_imports() {
    for name in ["zkr-recipes", "zkr-testing", "zkr-cli"] {
        let (graph, _) = graph(&crate_src(name));
        assert!(graph.len() > 10, "{name}: {} modules", graph.len());
        let circles = circles(&graph);
        assert!(circles.is_empty(), "{name} has circles of imports: {circles:?}");
    }
}

#[test]
fn the_checks_find_a_circle_an_arrow_up_and_a_name_through_the_root() {
    let dir = std::env::temp_dir().join(format!("zkr-layers-{}", std::process::id()));
    let write = |file: &str, text: &str| {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod error;\nmod ops;\nmod session;\npub use session::client::ZkClient;\n");
    write("error.rs", "// crate::ops::crud in a comment is no import\npub struct Error;\n");
    write("session/mod.rs", "pub(crate) mod client;\n");
    write("session/client.rs", "use crate::ops::crud::get;\nuse crate::error::Error;\n");
    write("ops/mod.rs", "pub(crate) mod crud;\npub(crate) mod create;\n");
    write("ops/crud.rs", "use crate::{ZkClient, error::Error};\nuse super::create::make;\n");
    write("ops/create.rs", "fn f() { crate::ops::crud::get(); }\n");
    let (graph, through_root) = graph(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(graph["error"], BTreeSet::new());
    assert_eq!(graph["ops::crud"], ["error", "ops::create"].map(String::from).into());
    let faults = connection_faults(&graph, &through_root);
    assert_eq!(faults.len(), 3, "{faults:#?}");
    assert!(faults[0].contains("through the crate root") && faults[0].contains("ops/crud.rs:1"));
    assert!(faults[1].contains("session::client (floor 2) imports ops::crud (floor 3)"));
    assert!(faults[2].contains("a circle outside session") && faults[2].contains("ops::create"));
}

/// The node names `zkr_recipes::layouts` declares, as the string literals that would restate
/// them (the distinctive ones: `ready` or `locks` are words other code uses too).
const LAYOUT_LITERALS: [&str; 14] = [
    "\"__READ__\"",
    "\"__WRIT__\"",
    "\"__rlock__\"",
    "\"__lock__\"",
    "\"lock-\"",
    "\"latch-\"",
    "\"lease-\"",
    "\"queue-\"",
    "\"qn-\"",
    "\"entry-\"",
    "\"epoch-\"",
    "\"__party__\"",
    "\"identities\"",
    "\"workers\"",
];

/// Code lines (tests and comments aside) under `dirs` that restate a layout's node name instead
/// of naming `zkr_recipes::layouts`, as `file:line: text`.
fn restated_layouts(dirs: &[std::path::PathBuf]) -> Vec<String> {
    let mut files = Vec::new();
    for dir in dirs {
        crate::lint::sources(dir, &mut files);
    }
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("layouts.rs") && !f.ends_with("tests.rs")) {
        let text = std::fs::read_to_string(file).unwrap();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            let comment = line.trim_start().starts_with("//");
            if !comment && LAYOUT_LITERALS.iter().any(|l| line.contains(l)) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn node_layouts_are_declared_once() {
    let found = restated_layouts(&[crate_src("zkr-recipes"), crate_src("zkr-cli")]);
    assert!(found.is_empty(), "name these through zkr_recipes::layouts:\n{}", found.join("\n"));
}

#[test]
fn the_layout_check_finds_a_restated_name() {
    let dir = std::env::temp_dir().join(format!("zkr-layouts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let code = "/// `lock-` in a doc is prose\nconst MINE: &str = \"lock-\";\n#[cfg(test)]\nmod tests {\n    const T: &str = \"qn-\";\n}\n";
    std::fs::write(dir.join("a.rs"), code).unwrap();
    std::fs::write(dir.join("layouts.rs"), "pub const LOCK_NAME: &str = \"lock-\";\n").unwrap();
    let found = restated_layouts(std::slice::from_ref(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].ends_with("a.rs:2: const MINE: &str = \"lock-\";"), "{found:?}");
}
