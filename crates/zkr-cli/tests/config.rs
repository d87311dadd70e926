//! `zkr config get|set|watch` against a real server, as scripts and services run them.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use zkr_testing::{shared_server, Timing};

mod common;
use common::{exit_status, run_zkr, send_signal, unique, zkr};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_set_with_versions_and_exit_codes() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = format!("{}/url", unique("config"));
    let absent = run_zkr(&cs, &["config", "get", &path]).await;
    assert_eq!(absent.status.code(), Some(5));
    let set = run_zkr(&cs, &["config", "set", &path, "jdbc:mysql://a"]).await;
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    assert_eq!(stdout(&set).trim(), "0");
    let got = run_zkr(&cs, &["config", "get", &path]).await;
    assert_eq!(stdout(&got), "jdbc:mysql://a");
    let json = run_zkr(&cs, &["config", "get", &path, "--json"]).await;
    let line: serde_json::Value = serde_json::from_str(stdout(&json).trim()).unwrap();
    assert_eq!(line["version"], 0);
    assert_eq!(line["value"], "jdbc:mysql://a");
    let cas = run_zkr(&cs, &["config", "set", &path, "jdbc:mysql://b", "--if-version", "0"]).await;
    assert_eq!(stdout(&cas).trim(), "1");
    let conflict = run_zkr(&cs, &["config", "set", &path, "jdbc:mysql://c", "--if-version", "0"]).await;
    assert_eq!(conflict.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&conflict.stderr).contains("version 0"));
    let missing = run_zkr(&cs, &["config", "set", &format!("{path}-x"), "v", "--if-version", "0"]).await;
    assert_eq!(missing.status.code(), Some(5));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("value.txt");
    std::fs::write(&file, "from a file").unwrap();
    let from_file = run_zkr(&cs, &["config", "set", &path, &format!("@{}", file.display())]).await;
    assert!(from_file.status.success());
    assert_eq!(stdout(&run_zkr(&cs, &["config", "get", &path]).await), "from a file");
    assert_eq!(run_zkr(&cs, &["config", "set", "no-slash", "v"]).await.status.code(), Some(2));
    assert_eq!(run_zkr(&cs, &["config", "set", &path]).await.status.code(), Some(2));
}

/// `zkr config watch` prints a change made by another process and runs --exec after it.
/// The next line of `zkr config watch`, as JSON.
async fn next(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    wait: std::time::Duration,
) -> serde_json::Value {
    let line = tokio::time::timeout(wait, lines.next_line())
        .await
        .expect("a line in time")
        .unwrap()
        .expect("a line");
    serde_json::from_str(&line).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_changes_from_another_process_and_runs_exec() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = format!("{}/price", unique("config-watch"));
    assert!(run_zkr(&cs, &["config", "set", &path, "10"]).await.status.success());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("reloads.log");
    let exec = format!("echo \"$ZKR_CONFIG_VERSION=$ZKR_CONFIG_VALUE\" >> '{}'", log.display());
    let mut watch =
        zkr(&cs).args(["config", "watch", &path, "--exec", &exec]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let wait = Timing::from_env().wait();
    let first = next(&mut lines, wait).await;
    assert_eq!(first["value"], "10");
    assert!(run_zkr(&cs, &["config", "set", &path, "12"]).await.status.success());
    let second = next(&mut lines, wait).await;
    assert_eq!((second["value"].as_str(), second["version"].as_i64()), (Some("12"), Some(1)));
    // The node deleted by someone else: a null line.
    let observer = zookeeper_client::Client::connect(&cs).await.unwrap();
    observer.delete(&path, None).await.unwrap();
    let third = next(&mut lines, wait).await;
    assert!(third["value"].is_null());
    send_signal(&watch, nix::sys::signal::Signal::SIGINT);
    let status = exit_status(&mut watch).await;
    assert!(status.success(), "Ctrl-C ends the watch cleanly: {status}");
    let reloads = std::fs::read_to_string(&log).unwrap();
    assert_eq!(reloads.lines().take(2).collect::<Vec<_>>(), ["0=10", "1=12"], "{reloads}");
}
