//! The connection options before the subcommand or after its name, for every subcommand that
//! connects: `ZK_CONNECT` points nowhere, so only the flag can reach the server, and
//! `--namespace` shows that the options took effect.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use zkr_testing::{shared_server, Timing};

mod common;
use common::{unique, zkr};

/// `zkr` with the connection options before (`before`) or after the subcommand's words.
fn with_options(before: bool, words: &[&str], options: &[&str]) -> tokio::process::Command {
    let mut cmd = zkr("127.0.0.1:1");
    let (head, tail): (Vec<&str>, Vec<&str>) = match words.iter().position(|w| *w == "--") {
        Some(at) => (words[..at].to_vec(), words[at..].to_vec()),
        None => (words.to_vec(), Vec::new()),
    };
    if before {
        cmd.args(options).args(&head);
    } else {
        cmd.args(&head).args(options);
    }
    cmd.args(&tail);
    cmd
}

#[tokio::test]
async fn every_subcommand_takes_the_connection_options_on_either_side() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let admin = zookeeper_client::Client::connect(&cs).await.unwrap();
    let empty_export = std::env::temp_dir().join(format!("zkr-options-{}.json", std::process::id()));
    std::fs::write(&empty_export, r#"{"format": "zkr-export/1", "root": "/x", "nodes": []}"#).unwrap();
    let empty_export = empty_export.to_str().unwrap().to_owned();
    for before in [true, false] {
        let ns = unique(if before { "opts-before" } else { "opts-after" });
        let ns = ns.trim_start_matches('/').to_owned();
        let options = ["--connect", cs.as_str(), "--namespace", ns.as_str(), "--session-timeout", "10s"];
        let side = if before { "before" } else { "after" };
        let one_shots: [&[&str]; 19] = [
            &["create", "--parents", "/nodes/n", "x"],
            &["create", "/members"],
            &["create", "--parents", "/services/web"],
            &["set", "/nodes/n", "y"],
            &["get", "/nodes/n"],
            &["stat", "/nodes/n"],
            &["ls", "-R", "/nodes"],
            &["acl", "get", "/nodes/n"],
            &["sync", "/nodes"],
            &["export", "/nodes"],
            &["import", "--dry-run", empty_export.as_str(), "/elsewhere"],
            &["rm", "-r", "/nodes"],
            &["config", "set", "/settings", "v1"],
            &["config", "get", "/settings"],
            &["id", "next", "/ids"],
            &["lock", "/locks/a", "--", "true"],
            &["lock-info", "/locks/a"],
            &["members", "/members"],
            &["service", "list", "web"],
        ];
        for words in one_shots {
            let output = with_options(before, words, &options).output().await.unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "{words:?} with the options {side}: {stderr}");
        }
        let (data, _) = admin.get_data(&format!("/{ns}/settings")).await.unwrap();
        assert_eq!(data, b"v1", "config set went under the namespace ({side})");
        // A command that follows until stopped: its first lines arrive through the flag.
        let mut tree =
            with_options(before, &["tree", "watch", "/"], &options).stdout(Stdio::piped()).spawn().unwrap();
        let mut lines = BufReader::new(tree.stdout.take().unwrap()).lines();
        let initialized = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("initialized") {
                    return;
                }
            }
            panic!("tree watch ended without initializing ({side})");
        };
        tokio::time::timeout(Timing::from_env().wait(), initialized).await.expect("tree watch initialized");
        tree.kill().await.unwrap();
    }
}
