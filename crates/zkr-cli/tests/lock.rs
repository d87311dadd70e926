//! `zkr lock` and `zkr lock-info` against a real server, as a user runs them.

use std::process::Stdio;

use zkr_connection::ZkClient;
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::{shared_server, Timing};

mod common;
use common::{exit_status, first_line, rand_suffix, run_zkr, send_signal, unique, wait_for_children, zkr};

#[tokio::test]
async fn lock_processes_never_overlap() {
    let server = shared_server().await.unwrap();
    let path = unique("overlap");
    let log = tempfile_path("overlap");
    let script = format!("echo start $$ >> {log}; sleep 0.1; echo end $$ >> {log}");
    let mut children = Vec::new();
    for _ in 0..4 {
        children.push(
            zkr(&server.connect_string()).args(["lock", &path, "--", "sh", "-c", &script]).spawn().unwrap(),
        );
    }
    for mut child in children {
        assert!(child.wait().await.unwrap().success());
    }
    let lines = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 8, "{lines:?}");
    for pair in lines.chunks(2) {
        let (start, end) = (pair[0], pair[1]);
        assert!(start.starts_with("start ") && end.starts_with("end "), "interleaved: {lines:?}");
        assert_eq!(start[6..], end[4..], "interleaved: {lines:?}");
    }
    let _ = std::fs::remove_file(log);
}

fn tempfile_path(name: &str) -> String {
    std::env::temp_dir()
        .join(format!("zkr-cli-{name}-{}-{}", std::process::id(), rand_suffix()))
        .display()
        .to_string()
}

#[tokio::test]
async fn not_acquired_exits_3_and_the_command_status_passes_through() {
    let server = shared_server().await.unwrap();
    let path = unique("held");
    let zk = ZkClient::connect(server.connect_string()).await.unwrap();
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();

    let out = run_zkr(&server.connect_string(), &["lock", "--try", &path, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not acquired"));
    let out = run_zkr(&server.connect_string(), &["lock", "--timeout", "300ms", &path, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(3));

    let info = run_zkr(&server.connect_string(), &["lock-info", "--json", &path]).await;
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("\"role\":\"holder\"") && info.contains(guard.node_path()), "{info}");
    assert!(info.contains(&format!("\"fencing_token\":{}", guard.fencing_token())), "{info}");
    guard.release().await.unwrap();

    let out = run_zkr(&server.connect_string(), &["lock", &path, "--", "sh", "-c", "exit 7"]).await;
    assert_eq!(out.status.code(), Some(7));
}

#[tokio::test]
async fn bad_arguments_exit_2() {
    let server = shared_server().await.unwrap();
    let missing_command = run_zkr(&server.connect_string(), &["lock", "/x"]).await;
    assert_eq!(missing_command.status.code(), Some(2));
    let root = run_zkr(&server.connect_string(), &["lock", "/", "--", "true"]).await;
    assert_eq!(root.status.code(), Some(2));
    let bad_timeout =
        run_zkr(&server.connect_string(), &["lock", "--timeout", "soon", "/x", "--", "true"]).await;
    assert_eq!(bad_timeout.status.code(), Some(2));
}

#[tokio::test]
async fn a_lost_lock_stops_the_command_and_exits_4() {
    let server = shared_server().await.unwrap();
    let path = unique("lost");
    let mut child = zkr(&server.connect_string())
        .args([
            "lock",
            "--grace",
            "2s",
            &path,
            "--",
            "sh",
            "-c",
            "echo $ZKR_LOCK_NODE $ZKR_FENCING_TOKEN; exec sleep 60",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let line = first_line(&mut child).await;
    let mut fields = line.split_whitespace();
    let node = fields.next().unwrap().to_string();
    let token: i64 = fields.next().unwrap().parse().unwrap();
    assert!(node.starts_with(&format!("{path}/_c_")), "{line}");
    assert!(token > 0);

    // An operator breaks the lock: the command must be stopped and zkr must say so.
    let admin = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
    admin.delete(&node, None).await.unwrap();
    assert_eq!(exit_status(&mut child).await.code(), Some(4));
}

#[tokio::test]
async fn lock_info_on_a_free_lock() {
    let server = shared_server().await.unwrap();
    let path = unique("free");
    let zk = ZkClient::connect(server.connect_string()).await.unwrap();
    zk.create_node(&path).await.unwrap();
    let out = run_zkr(&server.connect_string(), &["lock-info", &path]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("free"));
    zk.delete(&path, None).await.unwrap();
    zk.close().await;
}

#[tokio::test]
async fn ctrl_c_is_forwarded_and_the_lock_released() {
    let server = shared_server().await.unwrap();
    let path = unique("sigint");
    let mut child = zkr(&server.connect_string())
        .args(["lock", &path, "--", "sh", "-c", "trap 'exit 42' INT; echo ready; sleep 60 & wait"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(first_line(&mut child).await, "ready");
    send_signal(&child, nix::sys::signal::Signal::SIGINT);
    let status = exit_status(&mut child).await;
    assert_eq!(status.code(), Some(42), "the command's own exit status after its INT trap");
    // Released: the lock is free at once for someone else.
    let out = run_zkr(&server.connect_string(), &["lock", "--try", &path, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(0));
}

/// `kill -9` of a `zkr lock` holder: nothing releases the lock, but its session expires on the
/// server and the lock node goes with it, so another `zkr lock` gets it within the session
/// timeout (plus the server's expiry tick).
#[tokio::test]
async fn a_killed_holder_frees_the_lock_within_the_session_timeout() {
    let server = shared_server().await.unwrap();
    let path = unique("kill9");
    let session_timeout = Timing::from_env().session();
    let timeout_arg = format!("{}ms", session_timeout.as_millis());
    let mut holder = zkr(&server.connect_string())
        .args([
            "lock",
            "--session-timeout",
            &timeout_arg,
            &path,
            "--",
            "sh",
            "-c",
            "echo held $$; exec sleep 60",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let line = first_line(&mut holder).await;
    let command_pid: i32 = line
        .strip_prefix("held ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("expected `held <pid>`, got {line:?}"));
    let held = run_zkr(&server.connect_string(), &["lock", "--try", &path, "--", "true"]).await;
    assert_eq!(held.status.code(), Some(3), "held while the holder lives");

    let killed_at = std::time::Instant::now();
    holder.start_kill().unwrap(); // SIGKILL: no release, no session close
    holder.wait().await.unwrap();
    let waited = format!("{}ms", (session_timeout * 4).as_millis());
    let next = run_zkr(&server.connect_string(), &["lock", "--timeout", &waited, &path, "--", "true"]).await;
    assert_eq!(next.status.code(), Some(0), "{}", String::from_utf8_lossy(&next.stderr));
    let freed_after = killed_at.elapsed();
    // The server expires a session between one and two of its ticks (500 ms) after the timeout.
    assert!(
        freed_after <= session_timeout * 2 + std::time::Duration::from_secs(2),
        "freed after {freed_after:?}, session timeout {session_timeout:?}"
    );
    assert!(
        freed_after >= session_timeout / 2,
        "freed after {freed_after:?}: too soon for a session expiry, so something else released it"
    );
    // The command outlived its killed zkr (nothing was there to stop it); stop it now.
    let _ =
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(command_pid), nix::sys::signal::Signal::SIGKILL);
}

/// Ctrl-C while `zkr lock` waits: it gives up its place in the queue and exits 130, leaving no
/// node behind.
#[tokio::test]
async fn ctrl_c_while_waiting_gives_up_and_exits_130() {
    let server = shared_server().await.unwrap();
    let path = unique("sigint-waiting");
    let zk = ZkClient::connect(server.connect_string()).await.unwrap();
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let held = mutex.acquire().await.unwrap();
    let mut waiter = zkr(&server.connect_string()).args(["lock", &path, "--", "true"]).spawn().unwrap();
    let cs = server.connect_string();
    wait_for_children(&cs, &path, |n| n >= 2, "zkr lock never queued").await;
    send_signal(&waiter, nix::sys::signal::Signal::SIGINT);
    assert_eq!(exit_status(&mut waiter).await.code(), Some(130));
    wait_for_children(&cs, &path, |n| n == 1, "the waiter's node was left behind").await;
    held.release().await.unwrap();
}

/// `zkr lock ARGS -- sh -c 'echo started; read x'`: holds until a line arrives on its stdin.
fn holder(cs: &str, args: &[&str]) -> tokio::process::Child {
    zkr(cs)
        .args(args)
        .args(["--", "sh", "-c", "echo started; read x"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Lets a [`holder`] go and expects it to exit 0.
async fn let_go(mut child: tokio::process::Child) {
    use tokio::io::AsyncWriteExt as _;
    child.stdin.take().unwrap().write_all(b"done\n").await.unwrap();
    assert!(exit_status(&mut child).await.success());
}

async fn try_status(cs: &str, args: &[&str]) -> i32 {
    let mut all = args.to_vec();
    all.extend(["--try", "--", "true"]);
    run_zkr(cs, &all).await.status.code().unwrap()
}

#[tokio::test]
async fn leases_let_n_commands_run_at_once() {
    let cs = shared_server().await.unwrap().connect_string();
    let path = unique("leases");
    let mut a = holder(&cs, &["lock", "-n", "2", &path]);
    let mut b = holder(&cs, &["lock", "-n", "2", &path]);
    // Both print `started` while holding: two commands run at once.
    assert_eq!(first_line(&mut a).await, "started");
    assert_eq!(first_line(&mut b).await, "started");
    assert_eq!(try_status(&cs, &["lock", "-n", "2", &path]).await, 3, "a third lease of 2");
    let_go(a).await;
    assert_eq!(try_status(&cs, &["lock", "-n", "2", &path]).await, 0, "one lease free again");
    let_go(b).await;
    assert_eq!(run_zkr(&cs, &["lock", "-n", "0", &path, "--", "true"]).await.status.code(), Some(2));
}

#[tokio::test]
async fn shared_locks_run_together_and_exclusive_ones_alone() {
    let cs = shared_server().await.unwrap().connect_string();
    let path = unique("shared");
    let mut r1 = holder(&cs, &["lock", "--shared", &path]);
    let mut r2 = holder(&cs, &["lock", "-s", &path]);
    assert_eq!(first_line(&mut r1).await, "started");
    assert_eq!(first_line(&mut r2).await, "started");
    assert_eq!(try_status(&cs, &["lock", "--exclusive", &path]).await, 3, "a writer beside readers");
    assert_eq!(try_status(&cs, &["lock", "-s", &path]).await, 0, "a third reader");
    let_go(r1).await;
    let_go(r2).await;
    let mut w = holder(&cs, &["lock", "-x", &path]);
    assert_eq!(first_line(&mut w).await, "started");
    assert_eq!(try_status(&cs, &["lock", "-s", &path]).await, 3, "a reader beside a writer");
    let_go(w).await;
    assert_eq!(try_status(&cs, &["lock", "-x", &path]).await, 0);
    let both = run_zkr(&cs, &["lock", "-s", "-x", &path, "--", "true"]).await;
    assert_eq!(both.status.code(), Some(2), "shared and exclusive at once is a usage error");
}
