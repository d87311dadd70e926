//! `zkr config watch --exec` coalesces: while the hook runs, later changes collapse into one
//! run with the latest value, JSON lines never wait for the hook, and the hook runs neither for
//! a node absent at start nor on deletion unless `--exec-on-delete`. Hook runs are counted in a
//! file the hook appends to; every wait is for an event, with a bound.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};
use zkr_testing::{shared_server, Timing};
use zookeeper_client::{Acls, CreateMode};

mod common;
use common::{exit_status, send_signal, unique, zkr};

/// A hook that logs `start V`, blocks until the gate file exists, then logs `end V` (V is
/// `deleted` without a version).
fn gated_hook(log: &Path, gate: &Path) -> String {
    format!(
        "v=${{ZKR_CONFIG_VERSION:-deleted}}; echo \"start $v\" >> '{log}'; \
         while [ ! -e '{gate}' ]; do sleep 0.02; done; echo \"end $v\" >> '{log}'",
        log = log.display(),
        gate = gate.display()
    )
}

struct Watch {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Watch {
    fn start(
        connect: &str,
        path: &str,
        hook: impl Fn(&Path, &Path) -> String,
        extra: &[&str],
    ) -> (Watch, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (log, gate) = (dir.path().join("hook.log"), dir.path().join("gate"));
        let mut child = zkr(connect)
            .args(["config", "watch", path, "--exec", &hook(&log, &gate)])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        (Watch { child, lines, log, _dir: dir }, gate)
    }

    /// Reads JSON lines until one has `version` (`None`: a deleted node's null line).
    async fn line_with_version(&mut self, version: Option<i64>) {
        let wait = Timing::from_env().wait();
        loop {
            let line = tokio::time::timeout(wait, self.lines.next_line()).await.expect("a line in time");
            let line = line.unwrap().expect("a line");
            let json: serde_json::Value = serde_json::from_str(&line).unwrap();
            if json["version"].as_i64() == version {
                return;
            }
        }
    }

    /// The hook log's lines once its last line is `last`, within the wait bound.
    async fn log_once_it_ends_with(&self, last: &str) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + Timing::from_env().wait();
        loop {
            let log = self.log_lines();
            if log.last().map(String::as_str) == Some(last) {
                return log;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the hook log never ended with {last:?}: {log:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log).unwrap_or_default().lines().map(str::to_owned).collect()
    }

    async fn stop(mut self) {
        send_signal(&self.child, nix::sys::signal::Signal::SIGTERM);
        let status = exit_status(&mut self.child).await;
        assert!(status.success(), "{status}");
    }
}

async fn create(zk: &zookeeper_client::Client, path: &str, value: &str) {
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    zk.create(path, value.as_bytes(), &options).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_during_a_hook_collapse_into_one_run_with_the_latest_value() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique("watch-coalesce");
    let zk = zookeeper_client::Client::connect(&cs).await.unwrap();
    create(&zk, &root, "").await;
    let path = format!("{root}/price");
    let (mut watch, gate) = Watch::start(&cs, &path, gated_hook, &[]);
    watch.line_with_version(None).await; // absent at start: no hook run

    create(&zk, &path, "v0").await;
    watch.line_with_version(Some(0)).await;
    watch.log_once_it_ends_with("start 0").await;
    // Four more versions while the hook is blocked: their JSON lines arrive all the same.
    let writes: Vec<_> = (1..=4).map(|i| zk.set_data(&path, format!("v{i}").as_bytes(), None)).collect();
    for write in writes {
        write.await.unwrap();
    }
    watch.line_with_version(Some(4)).await;
    assert_eq!(watch.log_lines(), ["start 0"], "the lines came while the first run was blocked");

    std::fs::write(&gate, "").unwrap();
    let log = watch.log_once_it_ends_with("end 4").await;
    assert_eq!(log, ["start 0", "end 0", "start 4", "end 4"], "one more run, with the latest value");
    // No run after that but for a new change: the next one is 5.
    zk.set_data(&path, b"v5", None).await.unwrap();
    let log = watch.log_once_it_ends_with("end 5").await;
    assert_eq!(log[4..], ["start 5", "end 5"]);

    // Deleted: no run without --exec-on-delete; the next run is for the new node.
    zk.delete(&path, None).await.unwrap();
    watch.line_with_version(None).await;
    create(&zk, &path, "again").await;
    let log = watch.log_once_it_ends_with("end 0").await;
    assert_eq!(log[6..], ["start 0", "end 0"], "no run for the deletion: {log:?}");
    watch.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_on_delete_runs_the_hook_for_a_deletion() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique("watch-delete");
    let zk = zookeeper_client::Client::connect(&cs).await.unwrap();
    create(&zk, &root, "").await;
    let path = format!("{root}/flag");
    let open_gate = |log: &Path, gate: &Path| {
        std::fs::write(gate, "").unwrap();
        gated_hook(log, gate)
    };
    let (mut watch, _gate) = Watch::start(&cs, &path, open_gate, &["--exec-on-delete"]);
    watch.line_with_version(None).await;
    create(&zk, &path, "on").await;
    let log = watch.log_once_it_ends_with("end 0").await;
    assert_eq!(log, ["start 0", "end 0"], "absent at start: no run for it, even with --exec-on-delete");
    zk.delete(&path, None).await.unwrap();
    let log = watch.log_once_it_ends_with("end deleted").await;
    assert_eq!(log[2..], ["start deleted", "end deleted"]);
    watch.stop().await;
}
