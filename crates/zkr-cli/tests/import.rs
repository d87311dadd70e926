//! `zkr import` treats its document as hostile input: every node's path is checked (empty or
//! `/...`, a valid ZooKeeper path, under PATH, once) and the whole document (encodings, data,
//! ACLs, parents before children) before anything is written. A bad document exits 2 naming
//! the node, with nothing written: not the sibling a path like `-prod` would reach, not the
//! valid nodes before the bad one, not an earlier transaction of a large import.

use serde_json::{json, Value};
use zkr_testing::shared_server;
use zookeeper_client::{Acls, Client, CreateMode};

mod common;
use common::{run_zkr, unique};

/// Runs `zkr ARGS`: (exit code, stdout, stderr).
async fn zkr_out(cs: &str, args: &[&str]) -> (i32, String, String) {
    let out = run_zkr(cs, args).await;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// A document node: text data, open to anyone unless `acl` says otherwise.
fn node(path: &str, data: &str) -> Value {
    json!({
        "path": path, "encoding": "text", "data": data, "ephemeral": false, "stat": {},
        "acl": [{"scheme": "world", "id": "anyone", "perms": "cdrwa"}],
    })
}

/// Writes a document of `nodes` to a file of its own; its path.
fn document(dir: &tempfile::TempDir, name: &str, nodes: Vec<Value>) -> String {
    let file = dir.path().join(format!("{name}.json"));
    let text = json!({"format": "zkr-export/1", "root": "/elsewhere", "nodes": nodes}).to_string();
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_owned()
}

/// Every node under `root` (itself included) with its data and ACL, sorted by path.
async fn snapshot(admin: &Client, root: &str) -> Vec<(String, Vec<u8>, String)> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(path) = stack.pop() {
        let Ok((data, _)) = admin.get_data(&path).await else { continue };
        let (acl, _) = admin.get_acl(&path).await.unwrap();
        let acl: Vec<String> =
            acl.iter().map(|a| format!("{}:{}:{:?}", a.scheme(), a.id(), a.permission())).collect();
        for child in admin.list_children(&path).await.unwrap_or_default() {
            stack.push(format!("{path}/{child}"));
        }
        found.push((path, data, acl.join(",")));
    }
    found.sort();
    found
}

#[tokio::test]
async fn a_bad_document_exits_2_naming_the_node_with_nothing_written() {
    let cs = shared_server().await.unwrap().connect_string();
    let admin = Client::connect(&cs).await.unwrap();
    let base = unique("import");
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let (app, prod) = (format!("{base}/app"), format!("{base}/app-prod"));
    admin.create(&base, b"", &open).await.unwrap();
    admin.create(&app, b"app", &open).await.unwrap();
    admin.create(&format!("{app}/kept"), b"kept", &open).await.unwrap();
    admin.create(&prod, b"prod secrets", &open).await.unwrap();
    let before = snapshot(&admin, &base).await;
    assert_eq!(before.len(), 4, "{before:?}");
    let dir = tempfile::tempdir().unwrap();

    // Each document holds valid nodes before its bad one, which a partial import would write.
    let mut hijack = node("-prod", "hijacked");
    hijack["acl"] = json!([{"scheme": "world", "id": "anyone", "perms": "r"}]);
    // Two nodes of 400 KiB fill a transaction each: an import that found the bad node only
    // when it reached it would have committed the first one (seen before the fix).
    let big = "x".repeat(400 * 1024);
    let cases: Vec<(&str, Vec<Value>, &str)> = vec![
        // Joined as a string, `-prod` under /app is the sibling /app-prod.
        ("sibling", vec![node("", "root"), node("/new", "new"), hijack], "\"-prod\""),
        (
            "dotdot",
            vec![node("", "root"), node("/new", "new"), node("/new/../../app-prod", "x")],
            "\"/new/../../app-prod\"",
        ),
        ("dot", vec![node("", "root"), node("/./new", "x")], "\"/./new\""),
        ("duplicate", vec![node("", &big), node("/new", &big), node("/new", "two")], "\"/new\""),
        (
            "empty-segment",
            vec![node("", &big), node("/new", &big), node("/new//deep", "x")],
            "\"/new//deep\"",
        ),
        ("trailing-slash", vec![node("", "root"), node("/new/", "x")], "\"/new/\""),
        ("root-twice", vec![node("", "root"), node("/", "x")], "\"/\""),
        ("nul", vec![node("", "root"), node("/new\u{0}x", "x")], "\"/new\\0x\""),
        ("orphan", vec![node("", &big), node("/new", &big), node("/new/deep/er", "x")], "\"/new/deep/er\""),
    ];
    for (name, nodes, named) in cases {
        let file = document(&dir, name, nodes);
        for overwrite in [false, true] {
            let mut args = vec!["import"];
            args.extend(overwrite.then_some("--overwrite"));
            args.extend([file.as_str(), app.as_str()]);
            let (code, out, err) = zkr_out(&cs, &args).await;
            assert_eq!(code, 2, "{name} (overwrite {overwrite}): exit 2, got {code}: {out} {err}");
            assert!(err.contains(named), "{name}: stderr names the node {named}: {err}");
            assert!(err.contains("nothing written"), "{name}: {err}");
            assert_eq!(
                snapshot(&admin, &base).await,
                before,
                "{name} (overwrite {overwrite}): nothing written"
            );
        }
        // Into a PATH that does not exist: not even PATH or its parents are created.
        let fresh = format!("{base}/fresh/copy");
        let (code, _, err) = zkr_out(&cs, &["import", &file, &fresh]).await;
        assert_eq!(code, 2, "{name} into a new PATH: {err}");
        assert_eq!(snapshot(&admin, &base).await, before, "{name}: nothing written under a new PATH");
    }

    // A bad ACL or data anywhere in the document: the same.
    let mut bad_acl = node("/new", "x");
    bad_acl["acl"] = json!([{"scheme": "world", "id": "someone", "perms": "r"}]);
    let mut bad_data = node("/new", "not base64!");
    bad_data["encoding"] = json!("base64");
    for (name, bad) in [("acl", bad_acl), ("data", bad_data)] {
        let file = document(&dir, name, vec![node("", "root"), node("/ok", "ok"), bad]);
        let (code, _, err) = zkr_out(&cs, &["import", "--overwrite", &file, &app]).await;
        assert!(code == 2 && err.contains("\"/new\""), "{name}: {code}: {err}");
        assert_eq!(snapshot(&admin, &base).await, before, "{name}: nothing written");
    }

    // Without a node for PATH itself, PATH must exist: exit 5 with nothing written (not even
    // PATH's parents), else only the nodes below it are written.
    let children = document(&dir, "children", vec![node("/only", "o")]);
    let (code, _, err) = zkr_out(&cs, &["import", &children, &format!("{base}/fresh/copy")]).await;
    assert!(code == 5 && err.contains("nothing written"), "{code}: {err}");
    assert_eq!(snapshot(&admin, &base).await, before, "nothing written for a PATH that is not there");
    let (code, out, err) = zkr_out(&cs, &["import", &children, &app]).await;
    assert!(code == 0 && out.contains("created 1, updated 0"), "{code}: {out} {err}");
    assert_eq!(admin.get_data(&app).await.unwrap().0, b"app", "PATH itself untouched");

    // A good document with unusual but valid names is imported whole, under PATH only.
    let good = document(
        &dir,
        "good",
        vec![node("", "root"), node("/..c", "c"), node("/a.b", "ab"), node("/a.b/-prod", "p")],
    );
    let (code, out, err) = zkr_out(&cs, &["import", "--overwrite", &good, &app]).await;
    assert!(code == 0 && out.contains("created 3, updated 1"), "{code}: {out} {err}");
    assert_eq!(admin.get_data(&format!("{app}/a.b/-prod")).await.unwrap().0, b"p");
    assert_eq!(admin.get_data(&prod).await.unwrap().0, b"prod secrets", "the sibling is untouched");

    for path in snapshot(&admin, &base).await.into_iter().map(|(p, _, _)| p).rev() {
        admin.delete(&path, None).await.unwrap();
    }
}
