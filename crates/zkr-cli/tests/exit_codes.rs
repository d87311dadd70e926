//! One exit-code table for every subcommand: usage 2, not acquired 3, lost 4, absent 5,
//! conflict 6, unreachable 7, a missing command 127 (126 not executable), and `-E N` for
//! every code of zkr's own, against a real server.

use std::time::{Duration, Instant};

use zkr_connection::ZkClient;
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::shared_server;

mod common;
use common::{run_zkr, unique};

/// Nothing listens on port 1: connections are refused at once.
const NOBODY: &str = "127.0.0.1:1";

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `zkr lock --timeout 1s` with no server: it took 15 s and exited 1; now the timeout bounds
/// connecting too, and the code says ZooKeeper could not be reached. A server that accepts and
/// never answers stands in for one that is slow to come.
#[tokio::test]
async fn lock_timeout_bounds_connecting_and_unreachable_is_7() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let quiet = silent.local_addr().unwrap().to_string();
    let started = Instant::now();
    let out = run_zkr(&quiet, &["lock", "/x", "--timeout", "1s", "--", "true"]).await;
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(took >= Duration::from_millis(900), "gave up before the timeout: {took:?}");
    assert!(stderr(&out).contains(&quiet), "{}", stderr(&out));

    let started = Instant::now();
    let out = run_zkr(&quiet, &["config", "get", "/x", "--connect-timeout", "300ms"]).await;
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());
    drop(silent);
}

/// Connect strings that say what is wrong (issue 44 item 8): every host refusing fails at once
/// (it waited the whole --connect-timeout), a port where something else listens is named as
/// such (it said "no available hosts" after 15 s), `;` is told to be `,`, and a bare host is
/// port 2181 (it was refused as "not host:port").
#[tokio::test]
async fn connect_strings_say_what_is_wrong_and_refusal_is_quick() {
    let started = Instant::now();
    let out = run_zkr(NOBODY, &["get", "/x", "--connect-timeout", "30s"]).await;
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert!(stderr(&out).contains(&format!("{NOBODY}: connection refused")), "{}", stderr(&out));

    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let web = http.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt as _;
        while let Ok((mut stream, _)) = http.accept().await {
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        }
    });
    let started = Instant::now();
    let out = run_zkr(&web, &["get", "/x", "--connect-timeout", "30s"]).await;
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert!(stderr(&out).contains("not a ZooKeeper server"), "{}", stderr(&out));

    let out = run_zkr("127.0.0.1:2181;127.0.0.1:2182", &["get", "/x"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("separated by commas"), "{}", stderr(&out));

    let out = run_zkr("127.0.0.1", &["get", "/x", "--connect-timeout", "2s"]).await;
    assert_ne!(out.status.code(), Some(2), "a bare host is host:2181: {}", stderr(&out));
    if out.status.code() == Some(7) {
        assert!(stderr(&out).contains("127.0.0.1:2181"), "{}", stderr(&out));
    }
}

#[tokio::test]
async fn usage_errors_are_2_everywhere_and_said_once() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    for args in [
        vec!["config", "get", "config/x"],
        vec!["config", "watch", "config/x"],
        vec!["lock-info", "no-slash"],
        vec!["lock", "relative", "--", "true"],
        vec!["id", "next", "x/y"],
        vec!["config", "get", "/x", "--connect-timeout", "0s"],
    ] {
        let out = run_zkr(&cs, &args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    // A library error whose message already holds its cause: the cause is said once.
    let out = run_zkr(&cs, &["config", "get", "/x", "--namespace", "a//b"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out).matches("('//')").count(), 1, "{}", stderr(&out));
}

#[tokio::test]
async fn a_missing_command_is_127_and_a_non_executable_one_126() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique("no-command");
    let out = run_zkr(&cs, &["lock", &path, "--", "/nonexistent/zkr-test-command"]).await;
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-executable");
    std::fs::write(&file, "#!/bin/sh\nexit 0\n").unwrap();
    let out = run_zkr(&cs, &["lock", &path, "--", file.to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    // Both released the lock on the way out.
    let out = run_zkr(&cs, &["lock", "--try", &path, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `-E 99`: every failure of zkr's own exits 99, so a command's own 3 (or 4) stays unambiguous.
#[tokio::test]
async fn error_exit_code_replaces_zkr_codes_and_leaves_the_command_status() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique("error-exit-code");
    let own = run_zkr(&cs, &["-E", "99", "lock", &path, "--", "sh", "-c", "exit 3"]).await;
    assert_eq!(own.status.code(), Some(3), "the command's own 3: {}", stderr(&own));

    let zk = ZkClient::connect(&cs).await.unwrap();
    let held = InterProcessMutex::new(&zk, &path).unwrap().acquire().await.unwrap();
    let not_acquired = run_zkr(&cs, &["lock", "-E", "99", "--try", &path, "--", "true"]).await;
    assert_eq!(not_acquired.status.code(), Some(99), "{}", stderr(&not_acquired));
    assert!(stderr(&not_acquired).contains("not acquired"), "{}", stderr(&not_acquired));
    held.release().await.unwrap();

    let absent = run_zkr(&cs, &["--error-exit-code", "99", "config", "get", &format!("{path}/none")]).await;
    assert_eq!(absent.status.code(), Some(99), "{}", stderr(&absent));
    let unreachable =
        run_zkr(NOBODY, &["-E", "99", "config", "get", "/x", "--connect-timeout", "200ms"]).await;
    assert_eq!(unreachable.status.code(), Some(99), "{}", stderr(&unreachable));
    let usage = run_zkr(&cs, &["-E", "99", "lock", &path]).await;
    assert_eq!(usage.status.code(), Some(99), "a usage error clap reports: {}", stderr(&usage));
    let missing = run_zkr(&cs, &["-E", "99", "lock", &path, "--", "/nonexistent/zkr-test-command"]).await;
    assert_eq!(missing.status.code(), Some(127), "127 is the command's, as in a shell");
    let bad = run_zkr(&cs, &["-E", "0", "lock", &path, "--", "true"]).await;
    assert_eq!(bad.status.code(), Some(2), "-E takes 1-255");
}

/// A typo'd path is not an empty answer (issue 44 item 4): `lock-info`, `members`, `service
/// list` and `elect --observe` on a path that does not exist exit 5 at once, naming it, where
/// they printed nothing (or "free") with exit 0, or waited forever.
#[tokio::test]
async fn readers_of_a_missing_path_exit_5_naming_it() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let missing = unique("typo");
    let service = format!("{missing}/orders");
    let commands: [&[&str]; 5] = [
        &["lock-info", &missing],
        &["lock-info", "--json", &missing],
        &["members", &missing],
        &["service", "list", "orders", "--base", &missing],
        &["elect", &missing, "--observe"],
    ];
    for args in commands {
        let run = tokio::time::timeout(Duration::from_secs(20), run_zkr(&cs, args));
        let out = run.await.unwrap_or_else(|_| panic!("zkr {args:?} did not end"));
        assert_eq!(out.status.code(), Some(5), "zkr {args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "zkr {args:?}: {}", String::from_utf8_lossy(&out.stdout));
        let named = if args[0] == "service" { &service } else { &missing };
        assert!(stderr(&out).contains(&format!("{named}: no such node")), "zkr {args:?}: {}", stderr(&out));
    }
}
