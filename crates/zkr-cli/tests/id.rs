//! `zkr id next` against a real server, as a shell script runs it.

use std::collections::HashSet;

use zkr_testing::shared_server;

mod common;
use common::{run_zkr, unique};

fn ids_of(output: &std::process::Output) -> Vec<u64> {
    assert!(output.status.success(), "zkr id next failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone())
        .expect("utf-8")
        .lines()
        .map(|l| l.parse().unwrap_or_else(|_| panic!("not an ID: {l:?}")))
        .collect()
}

/// Four `zkr id next` processes at once, for every kind: no ID is printed twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_processes_never_print_the_same_id() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    for kind in ["sequential", "segment", "snowflake"] {
        let path = format!("{}/{kind}", unique("id"));
        let args = ["id", "next", &path, "--kind", kind, "--count", "250"];
        let runs = (0..4).map(|_| run_zkr(&cs, &args));
        let outputs = futures::future::join_all(runs).await;
        let mut all = Vec::new();
        for output in &outputs {
            let ids = ids_of(output);
            assert_eq!(ids.len(), 250);
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{kind}: one process's IDs increase");
            all.extend(ids);
        }
        let unique: HashSet<u64> = all.iter().copied().collect();
        assert_eq!(unique.len(), 1000, "{kind}: duplicates among {} IDs", all.len());
        if kind == "segment" {
            // Each process claims exactly the range it prints: dense from 1.
            assert_eq!(*all.iter().max().unwrap(), 1000);
        }
    }
}

#[tokio::test]
async fn bad_id_arguments_exit_with_2() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    for args in [
        vec!["id", "next", "/x", "--count", "0"],
        vec!["id", "next", "/x", "--kind", "uuid"],
        vec!["id", "next"],
    ] {
        let output = run_zkr(&cs, &args).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}");
    }
    let output = run_zkr(&cs, &["id", "next", "not-a-path"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not-a-path"));
}
