//! `zkr lock-info` and `zkr elect --observe` beside kazoo processes (issue 44 item 3): they
//! answer for what `zkr ui` recognises (kazoo's `Lock` and `Election`, Curator's layouts), and a
//! directory whose children they do not understand is never called free or leaderless.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use zkr_testing::peers::KazooTool;
use zkr_testing::{shared_server, Timing};

mod common;
use common::{run_zkr, unique, zkr};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The first line of `zkr elect PATH --observe [--json]`.
async fn observed(cs: &str, path: &str, json: bool) -> String {
    let mut args = vec!["elect", path, "--observe"];
    if json {
        args.push("--json");
    }
    let mut child = zkr(cs).args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Timing::from_env().wait(), lines.next_line()).await;
    child.kill().await.unwrap();
    line.expect("a line in time").unwrap().expect("a line")
}

#[tokio::test(flavor = "multi_thread")]
async fn lock_info_and_elect_observe_see_kazoo_holders_and_leaders() {
    let cs = shared_server().await.unwrap().connect_string();
    let root = unique("layouts");
    let kazoo = KazooTool::locate().unwrap();
    let (lock, election) = (format!("{root}/nightly"), format!("{root}/compactor"));
    let mut holder = kazoo.spawn(&["hold", &cs, &lock]).unwrap();
    let held = holder.expect_line("HELD ").await.unwrap();
    let node = held.trim_start_matches("HELD ").to_owned();
    let mut leader = kazoo.spawn(&["elect", &cs, &election, "py-leader"]).unwrap();
    leader.expect_line("LEADING").await.unwrap();

    let out = run_zkr(&cs, &["lock-info", &lock]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains("holder") && table.contains(&node) && !table.contains("free"), "{table}");
    assert!(table.contains("kazoo"), "the layout is named: {table}");
    let out = run_zkr(&cs, &["lock-info", "--json", &lock]).await;
    let row: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!((row["role"].as_str(), row["node"].as_str()), (Some("holder"), Some(node.as_str())), "{row}");
    assert_eq!(row["layout"], "kazoo", "{row}");

    assert_eq!(observed(&cs, &election, false).await, "py-leader");
    let json: serde_json::Value = serde_json::from_str(&observed(&cs, &election, true).await).unwrap();
    assert_eq!(json["leader"], "py-leader", "{json}");
    assert_eq!(json["layout"], "kazoo", "{json}");

    for mut peer in [holder, leader] {
        peer.close_stdin();
        let _ = peer.wait().await;
    }
    let admin = zkr_connection::ZkClient::connect(&cs).await.unwrap();
    admin.delete_recursive(&root).await.unwrap();
    admin.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn children_no_layout_explains_are_named_not_called_free() {
    let cs = shared_server().await.unwrap().connect_string();
    let root = unique("layouts-other");
    let admin = zkr_connection::ZkClient::connect(&cs).await.unwrap();
    for child in ["alpha", "beta"] {
        admin
            .create_node(&format!("{root}/{child}"))
            .data(b"x")
            .parents(zkr_connection::Parents::Persistent)
            .await
            .unwrap();
    }
    for args in [
        vec!["lock-info", root.as_str()],
        vec!["lock-info", "--json", &root],
        vec!["elect", &root, "--observe"],
    ] {
        let out =
            tokio::time::timeout(Timing::from_env().wait(), run_zkr(&cs, &args)).await.expect("it ends");
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(6), "zkr {args:?}: {stdout}{stderr}");
        assert!(!stdout.contains("free") && !stdout.contains("no leader"), "zkr {args:?}: {stdout}");
        assert!(stderr.contains("alpha") && stderr.contains("beta"), "the children are named: {stderr}");
    }
    // An empty directory is a free lock and a leaderless election.
    let empty = format!("{root}/empty");
    admin.create_node(&empty).await.unwrap();
    let out = run_zkr(&cs, &["lock-info", &empty]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("free"), "{}", text(&out.stdout));
    assert_eq!(observed(&cs, &empty, false).await, "(no leader)");
    admin.delete_recursive(&root).await.unwrap();
    admin.close().await;
}

/// Issue 44, item 1 from the shell: beside a kazoo holder, `zkr lock --try` (Curator's
/// layout), `zkr lock -s` and `zkr elect` refuse with a usage exit naming kazoo's layout, and
/// the command is never run (before, `zkr lock --try` ran it beside kazoo's holder).
#[tokio::test(flavor = "multi_thread")]
async fn lock_and_elect_refuse_a_path_kazoo_holds() {
    let cs = shared_server().await.unwrap().connect_string();
    let root = unique("layouts-conflict");
    let path = format!("{root}/nightly");
    let kazoo = KazooTool::locate().unwrap();
    let mut holder = kazoo.spawn(&["hold", &cs, &path]).unwrap();
    holder.expect_line("HELD ").await.unwrap();
    let marker = std::env::temp_dir().join(format!("zkr-conflict-{}", std::process::id()));
    let touch = format!("touch {}", marker.display());
    for args in [
        vec!["lock", "--try", &path, "--", "sh", "-c", &touch],
        vec!["lock", "-s", "--try", &path, "--", "sh", "-c", &touch],
        vec!["elect", &path, "--", "sh", "-c", &touch],
    ] {
        let out = run_zkr(&cs, &args).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("kazoo"), "{args:?} names the layout: {stderr}");
        assert!(!marker.exists(), "{args:?} ran its command beside kazoo's holder");
    }
    holder.close_stdin();
    let _ = holder.wait().await;
}
