//! Helpers shared by the CLI tests.
#![allow(dead_code)]

use tokio::process::Command;
use zkr_testing::Timing;

/// `zkr` with `ZK_CONNECT` set and no auth, TLS or SASL from the environment.
pub fn zkr(connect: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zkr"));
    cmd.env("ZK_CONNECT", connect).kill_on_drop(true);
    for var in SECURITY_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// The environment variables of zkr's auth, TLS and SASL flags.
pub const SECURITY_VARS: [&str; 10] = [
    "ZKR_AUTH",
    "ZKR_TLS_CA",
    "ZKR_TLS_CERT",
    "ZKR_TLS_KEY",
    "ZKR_SASL",
    "ZKR_SASL_USER",
    "ZKR_SASL_PASSWORD",
    "ZKR_SASL_SERVICE",
    "ZKR_SASL_HOST",
    "KRB5CCNAME",
];

/// Runs `zkr ARGS` to completion.
pub async fn run_zkr(connect: &str, args: &[&str]) -> std::process::Output {
    zkr(connect).args(args).output().await.expect("run zkr")
}

/// A root path no other test (or earlier run) uses.
pub fn unique(name: &str) -> String {
    format!(
        "/cli-{name}-{}-{}",
        std::process::id(),
        Timing::from_env().multiplier().to_bits() ^ rand_suffix()
    )
}

pub fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(1);
    h.finish()
}

/// Sends `signal` to a running child.
pub fn send_signal(child: &tokio::process::Child, signal: nix::sys::signal::Signal) {
    let pid = child.id().expect("the child runs");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).expect("signal the child");
}

/// The first line a child with piped stdout prints, within the wait bound.
pub async fn first_line(child: &mut tokio::process::Child) -> String {
    use tokio::io::AsyncBufReadExt as _;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    tokio::time::timeout(Timing::from_env().wait(), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .expect("a line")
}

/// The child's exit status, within the wait bound.
pub async fn exit_status(child: &mut tokio::process::Child) -> std::process::ExitStatus {
    tokio::time::timeout(Timing::from_env().wait(), child.wait())
        .await
        .expect("the child exited in time")
        .expect("wait for the child")
}

/// Waits, within the wait bound, until `path` has a number of children that `wanted` accepts
/// (a missing node has none).
pub async fn wait_for_children(connect: &str, path: &str, wanted: impl Fn(usize) -> bool, what: &str) {
    let admin = zookeeper_client::Client::connect(connect).await.expect("connect");
    let deadline = tokio::time::Instant::now() + Timing::from_env().wait();
    while !wanted(admin.list_children(path).await.map(|c| c.len()).unwrap_or(0)) {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
