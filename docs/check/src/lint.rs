//! The rustdoc examples inside the crates are compiled by rustdoc with every dependency of
//! their crate at hand, so one that imports `zookeeper_client` compiles there but not in a
//! user's crate. This test holds them to the rule the guides are held to by this crate's
//! doctests: a doc example reaches zookeeper-client through `zkr_connection` only.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir` (none when it is missing): the sources the checks read.
pub(crate) fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The lines of doc examples (inside a doc comment's ``` fences) that name `zookeeper_client`
/// other than as `zkr_connection::zookeeper_client`, with their file and line.
fn offending(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for krate in ["zkr-connection", "zkr-recipes", "zkr-testing"] {
        sources(&root.join("crates").join(krate).join("src"), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut in_example = false;
        for (n, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            let Some(doc) = trimmed.strip_prefix("///").or_else(|| trimmed.strip_prefix("//!")) else {
                in_example = false;
                continue;
            };
            let code = doc.trim_start();
            if code.starts_with("```") {
                in_example = !in_example;
                continue;
            }
            let direct = code.match_indices("zookeeper_client::").any(|(i, _)| !code[..i].ends_with("::"));
            if in_example && direct {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn no_doc_example_imports_zookeeper_client_directly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let found = offending(&root);
    assert!(found.is_empty(), "use zkr_connection's re-exports instead:\n{}", found.join("\n"));
}

#[test]
fn the_check_finds_a_direct_import() {
    let dir = std::env::temp_dir().join(format!("zkr-guides-lint-{}", std::process::id()));
    let src = dir.join("crates/zkr-recipes/src");
    std::fs::create_dir_all(&src).unwrap();
    for krate in ["zkr-connection", "zkr-testing"] {
        std::fs::create_dir_all(dir.join("crates").join(krate).join("src")).unwrap();
    }
    let example = [
        "/// ```",
        "/// use zookeeper_client::CreateMode;",
        "/// let e = Error::Zk(zookeeper_client::Error::NoNode);",
        "/// use zkr_connection::zookeeper_client::Acl;",
        "/// ```",
        "/// Prose may name `zookeeper_client::Error`.",
    ];
    std::fs::write(src.join("a.rs"), example.join("\n")).unwrap();
    let found = offending(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 2, "{found:?}");
}
