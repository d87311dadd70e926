//! `zkr lock` through ZooKeeper faults on a real 3-server ensemble: a leader kill is ridden out
//! (the default `--on-suspend continue`) or ends the command (`--on-suspend stop`); a holder
//! partitioned for longer than its session stops its command and exits 4 before anyone else
//! gets the lock.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdout};
use zkr_testing::{FaultProxy, TestingCluster, Timing};

mod common;
use common::{exit_status, unique, wait_for_children, zkr};

/// One ensemble at a time: each test starts its own, and three JVMs are plenty for 2 cores.
static ONE_ENSEMBLE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn session_timeout_arg() -> String {
    // Long enough for an election and a reconnect (Lost comes half a session after Suspended).
    format!("{}ms", Timing::from_env().multiple(Duration::from_secs(10)).as_millis())
}

/// `zkr lock` with piped stdout and stderr.
fn spawn_lock(connect: &str, extra: &[&str], path: &str, script: &str) -> Child {
    let timeout = session_timeout_arg();
    zkr(connect)
        .args(["lock", "--session-timeout", &timeout, "--grace", "1s"])
        .args(extra)
        .args([path, "--", "sh", "-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stdout_lines(child: &mut Child) -> Lines<BufReader<ChildStdout>> {
    BufReader::new(child.stdout.take().unwrap()).lines()
}

fn stderr_lines(child: &mut Child) -> Lines<BufReader<ChildStderr>> {
    BufReader::new(child.stderr.take().unwrap()).lines()
}

/// Reads lines until one contains `needle`, within the wait bound; returns what was read.
async fn line_containing<R: tokio::io::AsyncBufRead + Unpin>(lines: &mut Lines<R>, needle: &str) -> String {
    let mut seen = String::new();
    let found = tokio::time::timeout(Timing::from_env().wait(), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(needle) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "no line with {needle:?} in:\n{seen}");
    seen
}

async fn exit_code(child: &mut Child) -> Option<i32> {
    exit_status(child).await.code()
}

fn gated_script(gate: &Path) -> String {
    format!("echo ready; while [ ! -e '{}' ]; do sleep 0.05; done; echo done", gate.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_kill_is_ridden_out_and_on_suspend_stop_ends_the_command() {
    let _one = ONE_ENSEMBLE.lock().await;
    let cluster = TestingCluster::start(3).await.unwrap();
    let cs = cluster.connect_string();
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let mut riding = spawn_lock(&cs, &[], &unique("ride-out"), &gated_script(&gate));
    let mut strict =
        spawn_lock(&cs, &["--on-suspend", "stop"], &unique("strict"), "echo ready; exec sleep 60");
    let (mut riding_out, mut riding_err) = (stdout_lines(&mut riding), stderr_lines(&mut riding));
    let mut strict_out = stdout_lines(&mut strict);
    line_containing(&mut riding_out, "ready").await;
    line_containing(&mut strict_out, "ready").await;

    let leader = cluster.leader().await.expect("a leader");
    cluster.kill(leader).unwrap();

    assert_eq!(exit_code(&mut strict).await, Some(4), "--on-suspend stop: the suspension ends the command");
    line_containing(&mut riding_err, "suspended").await;
    line_containing(&mut riding_err, "reconnected").await;
    std::fs::write(&gate, "").unwrap();
    line_containing(&mut riding_out, "done").await;
    assert_eq!(
        exit_code(&mut riding).await,
        Some(0),
        "the command finished under the lock through the election"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_holder_exits_4_before_another_process_gets_the_lock() {
    let _one = ONE_ENSEMBLE.lock().await;
    let cluster = TestingCluster::start(3).await.unwrap();
    let proxy = FaultProxy::start(&cluster.server_connect_string(0).unwrap()).await.unwrap();
    let path = unique("partitioned");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("order.log");
    let holder_script = format!(
        "trap 'echo holder-stopped >> {log}; kill $!; exit 0' TERM; echo held; sleep 60 & wait",
        log = log.display()
    );
    let mut holder = spawn_lock(&proxy.connect_string(), &[], &path, &holder_script);
    line_containing(&mut stdout_lines(&mut holder), "held").await;
    let waiter_script = format!("echo waiter-got >> {}; echo got", log.display());
    let mut waiter = spawn_lock(&cluster.connect_string(), &["--timeout", "120s"], &path, &waiter_script);
    let mut waiter_out = stdout_lines(&mut waiter);
    wait_for_children(&cluster.connect_string(), &path, |n| n >= 2, "the waiter never queued").await;

    proxy.blackhole();
    let first = tokio::time::timeout(Timing::from_env().wait(), async {
        tokio::select! {
            biased;
            status = holder.wait() => Ok(status.unwrap()),
            line = waiter_out.next_line() => Err(line),
        }
    })
    .await
    .expect("the holder exited or the waiter got the lock in time");
    let status =
        first.unwrap_or_else(|line| panic!("the waiter got the lock ({line:?}) while the holder ran"));
    assert_eq!(status.code(), Some(4), "the partitioned holder exits 4");
    let holder_exited = std::time::Instant::now();
    line_containing(&mut waiter_out, "got").await;
    eprintln!("the waiter got the lock {:?} after the holder exited", holder_exited.elapsed());
    assert_eq!(exit_code(&mut waiter).await, Some(0));
    let order = std::fs::read_to_string(&log).unwrap();
    assert_eq!(order.lines().collect::<Vec<_>>(), ["holder-stopped", "waiter-got"], "{order}");
}
