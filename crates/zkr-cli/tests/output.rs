//! Output a machine can read, and a person at a terminal too: every `--json` is valid JSON
//! (serialised, never hand-built), JSON documents are embedded as JSON, binary values are
//! not dumped raw to a terminal, and `id next` refuses a path laid out for another kind.

use std::io::Read as _;
use std::process::Stdio;

use zkr_connection::ZkClient;
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::shared_server;

mod common;
use common::{run_zkr, unique, zkr};

fn json(output: &std::process::Output) -> serde_json::Value {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[tokio::test]
async fn lock_info_json_survives_a_quote_in_the_path() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/say \"hi\"\\", unique("quote"));
    let zk = ZkClient::connect(server.connect_string()).await.unwrap();
    let guard = InterProcessMutex::new(&zk, &path).unwrap().acquire().await.unwrap();
    let line = json(&run_zkr(&server.connect_string(), &["lock-info", "--json", &path]).await);
    assert_eq!(line["node"], guard.node_path());
    assert_eq!(line["role"], "holder");
    assert_eq!(line["fencing_token"], guard.fencing_token());
    guard.release().await.unwrap();
}

#[tokio::test]
async fn id_next_and_config_set_speak_json() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let ids = json(&run_zkr(&cs, &["id", "next", &unique("json-ids"), "--count", "3", "--json"]).await);
    assert_eq!(ids["kind"], "segment");
    assert_eq!(ids["ids"], serde_json::json!([1, 2, 3]));
    let path = format!("{}/doc", unique("json-set"));
    let set = json(&run_zkr(&cs, &["config", "set", &path, r#"{"limit": [1, 2]}"#, "--json"]).await);
    assert_eq!((set["path"].as_str(), set["version"].as_i64()), (Some(path.as_str()), Some(0)));
    assert!(set["mzxid"].as_i64().is_some_and(|z| z > 0), "{set}");
    // A JSON document is embedded as JSON; a scalar stays text.
    let got = json(&run_zkr(&cs, &["config", "get", &path, "--json"]).await);
    assert_eq!(
        (got["encoding"].as_str(), &got["value"]),
        (Some("json"), &serde_json::json!({"limit": [1, 2]}))
    );
    run_zkr(&cs, &["config", "set", &path, "42"]).await;
    let got = json(&run_zkr(&cs, &["config", "get", &path, "--json"]).await);
    assert_eq!((got["encoding"].as_str(), got["value"].as_str()), (Some("text"), Some("42")));
}

/// `config get` of `value` with stdout on a pseudo-terminal: what the terminal shows.
async fn get_on_a_terminal(cs: &str, path: &str, extra: &[&str]) -> Vec<u8> {
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut get = zkr(cs);
    get.args(["config", "get", path]).args(extra).stdout(Stdio::from(pty.slave));
    assert!(get.status().await.unwrap().success());
    // The child is gone and the last copy of the slave goes with the command: reading the
    // master ends (EIO) after what the child wrote.
    drop(get);
    let mut master = std::fs::File::from(pty.master);
    let mut shown = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        shown.extend_from_slice(&buf[..n]);
    }
    shown
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_get_ends_text_with_a_newline_on_a_terminal_and_keeps_binary_off_it() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let root = unique("terminal");
    let zk = ZkClient::connect(&cs).await.unwrap();
    let text = format!("{root}/text");
    zk.create(&text, b"hello", zookeeper_client::CreateMode::Persistent).await.unwrap();
    let binary = format!("{root}/binary");
    zk.create(&binary, &[0xff, 0xfe, 0x00, 0x1b], zookeeper_client::CreateMode::Persistent).await.unwrap();

    assert_eq!(get_on_a_terminal(&cs, &text, &[]).await, b"hello\r\n");
    let piped = run_zkr(&cs, &["config", "get", &text]).await;
    assert_eq!(piped.stdout, b"hello", "to a pipe: the bytes as stored");
    let shown = String::from_utf8_lossy(&get_on_a_terminal(&cs, &binary, &[]).await).into_owned();
    assert!(shown.contains("4 bytes of binary data") && !shown.contains('\u{1b}'), "{shown:?}");
    assert!(get_on_a_terminal(&cs, &binary, &["--raw"]).await.starts_with(&[0xff, 0xfe]));
    let piped = run_zkr(&cs, &["config", "get", &binary]).await;
    assert_eq!(piped.stdout, [0xff, 0xfe, 0x00, 0x1b]);
    let got = json(&run_zkr(&cs, &["config", "get", &binary, "--json"]).await);
    assert_eq!((got["encoding"].as_str(), got["value"].as_str()), (Some("base64"), Some("//4AGw==")));
}

/// `--kind sequential` on a segment counter used to create epoch nodes under it; every kind
/// now refuses a path laid out for another, and leaves it as it was.
#[tokio::test]
async fn id_next_refuses_a_path_laid_out_for_another_kind() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let segment = unique("kind-segment");
    assert!(run_zkr(&cs, &["id", "next", &segment]).await.status.success());
    for kind in ["sequential", "snowflake"] {
        let out = run_zkr(&cs, &["id", "next", &segment, "--kind", kind]).await;
        assert_eq!(out.status.code(), Some(6), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("laid out for --kind segment"));
    }
    let admin = zookeeper_client::Client::connect(&cs).await.unwrap();
    assert_eq!(
        admin.list_children(&segment).await.unwrap(),
        Vec::<String>::new(),
        "nothing created under it"
    );

    let sequential = unique("kind-sequential");
    assert!(run_zkr(&cs, &["id", "next", &sequential, "--kind", "sequential"]).await.status.success());
    let out = run_zkr(&cs, &["id", "next", &sequential, "--kind", "snowflake"]).await;
    assert_eq!(out.status.code(), Some(6), "{}", String::from_utf8_lossy(&out.stderr));
    let snowflake = unique("kind-snowflake");
    assert!(run_zkr(&cs, &["id", "next", &snowflake, "--kind", "snowflake"]).await.status.success());
    let out = run_zkr(&cs, &["id", "next", &snowflake, "--kind", "sequential"]).await;
    assert_eq!(out.status.code(), Some(6), "{}", String::from_utf8_lossy(&out.stderr));
}
