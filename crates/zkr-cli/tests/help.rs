//! Help that helps: each subcommand lists the options that apply to it, the lock's variables,
//! the exit codes and `ZKR_LOG` are documented, completions and a man page come from the clap
//! definitions, logs have no colour codes off a terminal, and `zkr server` stops on SIGTERM.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use zkr_testing::Timing;

mod common;
use common::{exit_status, run_zkr, send_signal, zkr};

async fn stdout_of(args: &[&str]) -> String {
    let out = run_zkr("127.0.0.1:1", args).await;
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn help_names_what_each_subcommand_takes() {
    let lock = stdout_of(&["lock", "--help"]).await;
    for needle in
        ["ZKR_LOCK_NODE", "ZKR_FENCING_TOKEN", "--on-suspend", "--grace", "--connect-timeout", "--connect"]
    {
        assert!(lock.contains(needle), "lock --help lacks {needle}:\n{lock}");
    }
    let server = stdout_of(&["server", "--help"]).await;
    for absent in ["--connect", "--session-timeout", "--namespace", "--auth"] {
        assert!(!server.contains(absent), "server --help offers {absent}:\n{server}");
    }
    let demo = stdout_of(&["demo", "--help"]).await;
    assert!(!demo.contains("--connect"), "{demo}");
    for args in [["config", "--help"], ["id", "--help"], ["lock-info", "--help"]] {
        assert!(stdout_of(&args).await.contains("--connect"), "{args:?}");
    }
    assert!(stdout_of(&["config", "get", "--help"]).await.contains("--connect"));
    let top = stdout_of(&["--help"]).await;
    for needle in ["Exit codes", "127", "--error-exit-code", "ZKR_LOG", "zkr completions", "zkr man"] {
        assert!(top.contains(needle), "zkr --help lacks {needle}:\n{top}");
    }
}

#[tokio::test]
async fn completions_and_the_man_page_are_generated() {
    let bash = stdout_of(&["completions", "bash"]).await;
    assert!(bash.contains("_zkr") && bash.contains("lock-info") && bash.contains("--on-suspend"), "{bash}");
    for shell in ["zsh", "fish"] {
        assert!(stdout_of(&["completions", shell]).await.contains("lock-info"), "{shell}");
    }
    let man = stdout_of(&["man"]).await;
    assert!(man.contains(".TH zkr 1") && man.contains("Exit codes"), "{man}");
    assert_eq!(run_zkr("127.0.0.1:1", &["completions", "tcsh"]).await.status.code(), Some(2));
}

#[tokio::test]
async fn logs_off_a_terminal_have_no_colour_codes() {
    let out = zkr("127.0.0.1:1")
        .args(["config", "get", "/x", "--connect-timeout", "300ms"])
        .env("ZKR_LOG", "debug")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("DEBUG"), "ZKR_LOG=debug logs: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "colour codes into a pipe: {stderr:?}");
}

#[tokio::test]
async fn server_stops_its_zookeeper_on_sigterm() {
    let mut server = zkr("127.0.0.1:1").args(["server"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let wait = Timing::from_env().wait();
    let connect =
        tokio::time::timeout(wait, lines.next_line()).await.unwrap().unwrap().expect("connect string");
    assert_eq!(zkr_testing::four_letter_word(&connect, "ruok").await.unwrap(), "imok");
    send_signal(&server, nix::sys::signal::Signal::SIGTERM);
    let status = exit_status(&mut server).await;
    assert!(status.success(), "{status}");
    assert!(zkr_testing::four_letter_word(&connect, "ruok").await.is_err(), "the server outlived zkr server");
}

/// `zkr server --port N` serves on that port, so the docs' `127.0.0.1:2181` works as written
/// with `--port 2181` (#28 item 8). A free port here: tests run at once.
#[tokio::test]
async fn server_takes_a_port() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = zkr("127.0.0.1:1")
        .args(["server", "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let wait = Timing::from_env().wait();
    let connect =
        tokio::time::timeout(wait, lines.next_line()).await.unwrap().unwrap().expect("connect string");
    assert_eq!(connect, format!("127.0.0.1:{port}"));
    assert_eq!(zkr_testing::four_letter_word(&connect, "ruok").await.unwrap(), "imok");
    send_signal(&server, nix::sys::signal::Signal::SIGTERM);
    assert!(exit_status(&mut server).await.success());
}

/// A port that is taken is a clear error at once (it used to wait on a server that could not
/// bind, without a word).
#[tokio::test]
async fn server_on_a_taken_port_fails_at_once_and_says_why() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let run = zkr("127.0.0.1:1").args(["server", "--port", &port]).output();
    let out = tokio::time::timeout(Timing::from_env().wait(), run).await.expect("no answer in time").unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("client port {port} is free")), "{stderr}");
}
