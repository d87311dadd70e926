//! `zkr tree watch`: every node present at start, `initialized`, then a line per change, with
//! `--depth`; SIGTERM exits 0.

use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};
use zkr_testing::{shared_server, Timing};
use zookeeper_client::{Acls, CreateMode};

mod common;
use common::{exit_status, send_signal, unique, zkr};

struct TreeWatch {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl TreeWatch {
    fn start(connect: &str, args: &[&str]) -> TreeWatch {
        let mut child =
            zkr(connect).args(["tree", "watch"]).args(args).stdout(Stdio::piped()).spawn().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        TreeWatch { child, lines }
    }

    /// The next line, as (event, path, value).
    async fn next(&mut self) -> (String, String, Value) {
        let line = tokio::time::timeout(Timing::from_env().wait(), self.lines.next_line())
            .await
            .expect("a line in time");
        let json: Value = serde_json::from_str(&line.unwrap().expect("a line")).unwrap();
        let text = |key: &str| json[key].as_str().unwrap_or_default().to_owned();
        (text("event"), text("path"), json["value"].clone())
    }

    async fn stop(mut self) {
        send_signal(&self.child, nix::sys::signal::Signal::SIGTERM);
        let status = exit_status(&mut self.child).await;
        assert!(status.success(), "{status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tree_then_initialized_then_each_change_within_the_depth() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique("tree-watch");
    let zk = zookeeper_client::Client::connect(&cs).await.unwrap();
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for (path, value) in [("", ""), ("/db", r#"{"pool":4}"#), ("/db/url", "pg://a")] {
        zk.create(&format!("{root}{path}"), value.as_bytes(), &options).await.unwrap();
    }
    let mut watch = TreeWatch::start(&cs, &[root.as_str(), "--depth", "1"]);
    assert_eq!(watch.next().await, ("created".into(), root.clone(), Value::String(String::new())));
    let (event, path, value) = watch.next().await;
    assert_eq!((event.as_str(), path), ("created", format!("{root}/db")));
    assert_eq!(value, serde_json::json!({"pool": 4}), "a JSON document is embedded");
    assert_eq!(watch.next().await.0, "initialized", "{root}/db/url is below --depth 1");

    zk.set_data(&format!("{root}/db"), b"x", None).await.unwrap();
    zk.set_data(&format!("{root}/db/url"), b"pg://b", None).await.unwrap();
    zk.create(&format!("{root}/cache"), b"", &options).await.unwrap();
    assert_eq!(watch.next().await, ("changed".into(), format!("{root}/db"), Value::String("x".into())));
    assert_eq!(watch.next().await, ("created".into(), format!("{root}/cache"), Value::String(String::new())));
    // Deleted only once seen created: a create and a delete in one burst are one read that
    // finds nothing, and the cache reports no change (the tree is the same).
    zk.delete(&format!("{root}/cache"), None).await.unwrap();
    assert_eq!(watch.next().await, ("deleted".into(), format!("{root}/cache"), Value::String(String::new())));
    watch.stop().await;
}
