//! `zkr elect` against a real server, beside a real Curator `LeaderLatch` (Debian's Curator):
//! leaders take turns, and through a hand-over on SIGTERM and a leader killed outright no two
//! commands (or Curator terms) ever overlap.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};
use zkr_recipes::leader::latch_participants;
use zkr_testing::peers::CuratorTool;
use zkr_testing::{shared_server, Timing};

mod common;
use common::{exit_status, run_zkr, send_signal, unique, zkr};

/// Microseconds since the epoch, the clock of the commands' `date +%s%6N` and of Curator's
/// `LEADER <epoch_us>` lines.
fn epoch_us() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    i64::try_from(now.as_micros()).unwrap()
}

/// A command that prints `start <id> <pid> <epoch_us>` and, on SIGTERM, `end <id> <epoch_us>`.
const COMMAND: &str = r#"echo "start $1 $$ $(date +%s%6N)"; trap 'echo "end $1 $(date +%s%6N)"; exit 0' TERM; while :; do sleep 0.02; done"#;

struct Elector {
    process: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

fn elector(cs: &str, path: &str, id: &str, session: &str) -> Elector {
    let mut process = zkr(cs)
        .args(["elect", path, "--id", id, "--session-timeout", session, "--grace", "2s"])
        .args(["--", "sh", "-c", COMMAND, "sh", id])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(process.stdout.take().unwrap()).lines();
    Elector { process, lines }
}

/// The next line, within the wait bound (a leader hand-over after a kill takes a session
/// timeout).
async fn next(lines: &mut Lines<BufReader<ChildStdout>>, bound: std::time::Duration) -> String {
    tokio::time::timeout(bound, lines.next_line()).await.expect("a line in time").unwrap().expect("a line")
}

fn field(line: &str, index: usize) -> i64 {
    line.split_whitespace().nth(index).and_then(|f| f.parse().ok()).unwrap_or_else(|| panic!("{line:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_and_curator_leaders_never_overlap_through_a_handover_and_a_kill() {
    let cs = shared_server().await.unwrap().connect_string();
    let path = unique("elect");
    let timing = Timing::from_env();
    let session = format!("{}ms", timing.session().as_millis());
    let bound = timing.wait() + timing.session() * 3;
    let curator = CuratorTool::locate().unwrap();
    let mut first = curator.spawn(&["bench-leader-failover", &cs, &path]).unwrap();
    let curator_start = field(&first.expect_line("LEADER").await.unwrap(), 1);
    let mut a = elector(&cs, &path, "a", &session);
    let mut b = elector(&cs, &path, "b", &session);
    let zk = zkr_connection::ZkClient::connect(&cs).await.unwrap();
    zkr_integration_wait(|| async { latch_participants(&zk, &path).await.unwrap().len() == 3 }).await;

    // Curator's leader leaves (its latch is closed when its stdin closes; a closed latch tells
    // no listener): one zkr command starts, and not before that.
    let curator_end = epoch_us();
    first.close_stdin();
    let started = tokio::select! {
        line = next(&mut a.lines, bound) => (line, 'a'),
        line = next(&mut b.lines, bound) => (line, 'b'),
    };
    let (mut leader, mut follower) = if started.1 == 'a' { (a, b) } else { (b, a) };
    let leader_start = field(&started.0, 3);
    assert!(curator_start <= curator_end && curator_end <= leader_start, "{curator_end} > {leader_start}");

    // A second Curator latch queues behind; the zkr leader hands over on SIGTERM.
    let mut second = curator.spawn(&["bench-leader-failover", &cs, &path]).unwrap();
    zkr_integration_wait(|| async { latch_participants(&zk, &path).await.unwrap().len() == 3 }).await;
    send_signal(&leader.process, nix::sys::signal::Signal::SIGTERM);
    let leader_end = field(&next(&mut leader.lines, bound).await, 2);
    assert_eq!(exit_status(&mut leader.process).await.code(), Some(0), "the command's own status");
    let line = next(&mut follower.lines, bound).await;
    let (follower_pid, follower_start) = (field(&line, 2), field(&line, 3));
    assert!(leader_end <= follower_start, "the next command started before the last one ended");

    // The new leader dies outright (zkr and its command): Curator leads once its session is gone.
    let killed = epoch_us();
    follower.process.start_kill().unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(follower_pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    second.set_line_timeout(bound);
    let curator_again = field(&second.expect_line("LEADER").await.unwrap(), 1);
    assert!(killed <= curator_again, "Curator led before the killed leader's session ended");
    second.close_stdin();
    let _ = second.wait().await;
    zk.close().await;
}

#[tokio::test]
async fn observe_prints_each_leader_and_a_timeout_exits_3() {
    let cs = shared_server().await.unwrap().connect_string();
    let path = unique("elect-observe");
    // A path that does not exist is exit 5 (a typo), not an election without a leader.
    assert_eq!(run_zkr(&cs, &["create", &path]).await.status.code(), Some(0));
    let mut observer = zkr(&cs).args(["elect", &path, "--observe"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(observer.stdout.take().unwrap()).lines();
    let bound = Timing::from_env().wait();
    assert_eq!(next(&mut lines, bound).await, "(no leader)");
    let mut one = elector(&cs, &path, "one", "10s");
    assert!(next(&mut one.lines, bound).await.starts_with("start one"));
    assert_eq!(next(&mut lines, bound).await, "one");
    let waited = run_zkr(&cs, &["elect", &path, "--id", "two", "--timeout", "300ms", "--", "true"]).await;
    assert_eq!(waited.status.code(), Some(3), "{}", String::from_utf8_lossy(&waited.stderr));
    send_signal(&one.process, nix::sys::signal::Signal::SIGTERM);
    assert_eq!(exit_status(&mut one.process).await.code(), Some(0));
    assert_eq!(next(&mut lines, bound).await, "(no leader)");
    let json = run_json_observer(&cs, &path).await;
    assert!(json["leader"].is_null() && json["participants"].as_array().unwrap().is_empty(), "{json}");
    observer.kill().await.unwrap();
    let _ = observer.stdin.take().map(|mut s| async move { s.shutdown().await });
}

/// The first line of `zkr elect --observe --json`.
async fn run_json_observer(cs: &str, path: &str) -> serde_json::Value {
    let mut child =
        zkr(cs).args(["elect", path, "--observe", "--json"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = next(&mut lines, Timing::from_env().wait()).await;
    child.kill().await.unwrap();
    serde_json::from_str(&line).unwrap()
}

/// Waits, within the wait bound, until `check` holds.
async fn zkr_integration_wait<F, Fut>(mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Timing::from_env().wait();
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "not in time");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `zkr elect --observe` follows the leader's value: what a `LeaderLatch` proclaims (etcd's
/// `Proclaim`) is printed as the leader's line, leadership unchanged (issue 49 item 2).
#[tokio::test]
async fn observe_prints_what_the_leader_proclaims() {
    let cs = shared_server().await.unwrap().connect_string();
    let path = unique("elect-proclaim");
    let zk = zkr_connection::ZkClient::builder(&cs).connect().await.unwrap();
    let latch = zkr_recipes::leader::LeaderLatch::start(&zk, &path, "svc-1").await.unwrap();
    latch.await_leadership().await.unwrap();
    let mut observer = zkr(&cs).args(["elect", &path, "--observe"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(observer.stdout.take().unwrap()).lines();
    let bound = Timing::from_env().wait();
    assert_eq!(next(&mut lines, bound).await, "svc-1");
    latch.proclaim("svc-1 at 10.0.0.7:8080").await.unwrap();
    assert_eq!(next(&mut lines, bound).await, "svc-1 at 10.0.0.7:8080");
    latch.close().await;
    assert_eq!(next(&mut lines, bound).await, "(no leader)");
    observer.kill().await.unwrap();
    zk.close().await;
}
