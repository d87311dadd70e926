//! `zkr ui` as a user sees it: a real headless Chromium (Debian's `chromium` and
//! `chromium-driver`, which `scripts/ensure-deps.sh` installs) opens the page against a real
//! ZooKeeper, reads who holds a lock and who waits, and follows a release, a leader's death and
//! a server restart. Screenshots at a laptop's and a phone's width go to `target/zkr-ui/`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use tokio::io::{AsyncBufReadExt, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use zkr_connection::ZkClient;
use zkr_recipes::config::Utf8;
use zkr_recipes::leader::LeaderLatch;
use zkr_recipes::locks::InterProcessMutex;
use zkr_recipes::queues::DistributedQueue;
use zkr_testing::{TestingServer, Timing};

mod common;
use common::{first_line, send_signal, unique, zkr};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

/// `zkr ui` started on a free loopback port: the child and its URL (its first line).
async fn start_ui(connect: &str, args: &[&str]) -> (tokio::process::Child, String) {
    let mut child = zkr(connect)
        .arg("ui")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let line = first_line(&mut child).await;
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"));
    (child, url.to_owned())
}

/// chromedriver on a free port, once it says it listens.
async fn chromedriver() -> (tokio::process::Child, u16) {
    assert!(
        std::path::Path::new(CHROMEDRIVER).exists() && std::path::Path::new(CHROMIUM).exists(),
        "the zkr ui test needs Debian's chromium and chromium-driver: run scripts/ensure-deps.sh (make test does)"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = tokio::process::Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = tokio::time::timeout(Timing::from_env().wait(), lines.next_line()).await.unwrap().unwrap();
        if line.expect("chromedriver started").contains("started successfully") {
            break;
        }
    }
    (child, port)
}

/// A headless Chromium session of `width` x `height`.
async fn browser(port: u16, profile: &std::path::Path) -> Client {
    let mut caps = serde_json::Map::new();
    let args = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1366,900",
    ];
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    caps.insert("goog:chromeOptions".into(), serde_json::json!({ "binary": CHROMIUM, "args": args }));
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .unwrap()
}

/// The texts (or, with `attribute`, that attribute) of the elements `css` selects, in page order.
async fn values(client: &Client, css: &str, attribute: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    for element in client.find_all(Locator::Css(css)).await.unwrap_or_default() {
        let value = match attribute {
            Some(attribute) => element.attr(attribute).await.ok().flatten(),
            None => element.text().await.ok(),
        };
        out.push(value.unwrap_or_default());
    }
    out
}

async fn texts(client: &Client, css: &str) -> Vec<String> {
    values(client, css, None).await
}

/// Waits until the texts under `css` are `wanted`, within the wait bound; how long it took.
/// The page changes on its own (server-sent events), so this reads the DOM until it does.
async fn until_texts(client: &Client, css: &str, wanted: &[&str]) -> Duration {
    until_values(client, css, None, wanted).await
}

/// [`until_texts`] for an attribute.
async fn until_values(client: &Client, css: &str, attribute: Option<&str>, wanted: &[&str]) -> Duration {
    let start = Instant::now();
    let deadline = start + Timing::from_env().wait();
    loop {
        let got = values(client, css, attribute).await;
        if got == wanted {
            return start.elapsed();
        }
        assert!(Instant::now() < deadline, "{css}: {got:?}, wanted {wanted:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Waits until the page says its view is stale.
async fn until_stale(client: &Client) {
    let deadline = Instant::now() + Timing::from_env().wait();
    loop {
        let state = texts(client, "#state").await;
        if state.first().is_some_and(|s| s.starts_with("stale")) {
            return;
        }
        assert!(Instant::now() < deadline, "the page never said stale: {state:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn screenshots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/zkr-ui");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The last name of a path.
fn name(path: &str) -> &str {
    path.rsplit('/').next().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_shows_holders_waiters_leaders_and_queues_live() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique("ui");
    let lock_path = format!("{root}/locks/db");
    let (holder_zk, waiters_zk) =
        (ZkClient::connect(&connect).await.unwrap(), ZkClient::connect(&connect).await.unwrap());

    // A lock held, with two waiters: two users of one client.
    let holder = InterProcessMutex::new(&holder_zk, &lock_path).unwrap().acquire().await.unwrap();
    let mut waiting = Vec::new();
    for expected in [2, 3] {
        let mutex = InterProcessMutex::new(&waiters_zk, &lock_path).unwrap();
        waiting.push(tokio::spawn(async move { mutex.acquire().await.map(|guard| guard.release()) }));
        let probe = InterProcessMutex::new(&holder_zk, &lock_path).unwrap();
        let deadline = Instant::now() + Timing::from_env().wait();
        while probe.participant_nodes().await.unwrap().len() < expected {
            assert!(Instant::now() < deadline, "the waiter queued");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let nodes = InterProcessMutex::new(&holder_zk, &lock_path).unwrap().participant_nodes().await.unwrap();
    let nodes: Vec<&str> = nodes.iter().map(|n| name(n)).collect();

    // A leader, with a second participant behind it, each on its own session.
    let election = format!("{root}/election");
    let (first_zk, second_zk) =
        (ZkClient::connect(&connect).await.unwrap(), ZkClient::connect(&connect).await.unwrap());
    let first = LeaderLatch::start(&first_zk, &election, "scheduler-a").await.unwrap();
    first.await_leadership().await.unwrap();
    let second = LeaderLatch::start(&second_zk, &election, "scheduler-b").await.unwrap();

    // A queue of three jobs.
    let queue = DistributedQueue::builder(&holder_zk, &format!("{root}/jobs"), Utf8).build().unwrap();
    for job in ["resize", "encode", "upload"] {
        queue.put(&job.to_owned()).await.unwrap();
    }

    // A short session, so that the lost session is given up soon.
    let (mut ui, url) = start_ui(&connect, &["--root", &root, "--session-timeout", "4s"]).await;
    let (_driver, port) = chromedriver().await;
    let profile = tempfile::tempdir().unwrap();
    let client = browser(port, profile.path()).await;
    client.goto(&url).await.unwrap();

    let lock = format!("[data-kind=lock][data-path=\"{lock_path}\"]");
    let leader = format!("[data-kind=leader][data-path=\"{election}\"]");
    let holder_css = format!("{lock} [data-role=holder]");
    let waiters_css = format!("{lock} [data-role=waiter]");
    let node = Some("data-node");
    until_values(&client, &holder_css, node, &[nodes[0]]).await;
    until_values(&client, &waiters_css, node, &[nodes[1], nodes[2]]).await;
    let session = format!("{:#x}", holder_zk.session().await.unwrap().id());
    until_texts(&client, &format!("{lock} [data-role=holder] [data-field=session]"), &[&session]).await;
    until_texts(&client, &format!("{leader} [data-role=leader] [data-field=id]"), &["scheduler-a"]).await;
    until_texts(&client, &format!("[data-kind=queue][data-path=\"{root}/jobs\"] [data-field=depth]"), &["3"])
        .await;
    until_texts(&client, "#state", &["live"]).await;

    let dir = screenshots();
    std::fs::write(dir.join("laptop.png"), client.screenshot().await.unwrap()).unwrap();
    client.set_window_size(390, 844).await.unwrap();
    std::fs::write(dir.join("phone.png"), client.screenshot().await.unwrap()).unwrap();
    client.set_window_size(1366, 900).await.unwrap();

    // The holder lets go: the first waiter holds, the second waits alone.
    holder.release().await.unwrap();
    let took = until_values(&client, &holder_css, node, &[nodes[1]]).await;
    until_values(&client, &waiters_css, node, &[nodes[2]]).await;
    eprintln!("the page showed the new holder {took:?} after the release");

    // The leader's process dies: the other participant leads.
    first_zk.close().await;
    until_texts(&client, &format!("{leader} [data-role=leader] [data-field=id]"), &["scheduler-b"]).await;

    // The server restarts: stale while it is down, live again after.
    server.stop().unwrap();
    until_stale(&client).await;
    server.restart().await.unwrap();
    until_texts(&client, "#state", &["live"]).await;
    until_texts(&client, &format!("{leader} [data-role=leader] [data-field=id]"), &["scheduler-b"]).await;

    // The server comes back without its data: every session is gone, zkr ui's too. Stale, then
    // live again on a new session, the tree read anew.
    server.stop().unwrap();
    until_stale(&client).await;
    server.restart_without_data().await.unwrap();
    until_texts(&client, "#state", &["live"]).await;

    // Ctrl-C ends `zkr ui` at once, with the page's event stream open; the page says so.
    send_signal(&ui, nix::sys::signal::Signal::SIGINT);
    let status =
        tokio::time::timeout(Timing::from_env().wait(), ui.wait()).await.expect("zkr ui stopped").unwrap();
    assert!(status.success(), "{status:?}");
    until_texts(&client, "#state", &["disconnected from zkr ui"]).await;
    let _ = client.close().await;

    second.close().await;
    for task in waiting {
        task.abort();
    }
    let admin = ZkClient::connect(&connect).await.unwrap();
    admin.delete_recursive(&root).await.unwrap();
    for zk in [holder_zk, waiters_zk, second_zk, admin] {
        zk.close().await;
    }
}

/// One HTTP/1.1 GET: the status and the body.
async fn get(address: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {address}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn it_refuses_what_it_should() {
    let server = zkr_testing::shared_server().await.unwrap();
    let connect = server.connect_string();
    let root = unique("ui-guard");

    // Beyond loopback without a token: refused at start, naming the flag.
    let out = zkr(&connect).args(["ui", "--listen", "0.0.0.0:0", "--root", &root]).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a usage error: {stderr}");
    assert!(stderr.contains("--token"), "{stderr}");

    // No token: loopback host names only (no DNS rebinding).
    let (mut open, url) = start_ui(&connect, &["--root", &root]).await;
    let address = url.trim_start_matches("http://").trim_end_matches('/').to_owned();
    assert_eq!(get(&address, "/api/view", &[]).await.0, 200);
    assert_eq!(get(&address, "/api/view", &[("Host", "evil.example:7070")]).await.0, 403);
    send_signal(&open, nix::sys::signal::Signal::SIGTERM);
    assert!(open.wait().await.unwrap().success());

    // A token: the page loads, the data needs the token.
    let (mut guarded, url) = start_ui(&connect, &["--root", &root, "--token", "s3cret"]).await;
    let address = url.trim_start_matches("http://").trim_end_matches('/').to_owned();
    assert_eq!(get(&address, "/", &[]).await.0, 200);
    assert_eq!(get(&address, "/icon.svg", &[]).await.0, 200, "the page's assets need no token");
    assert_eq!(get(&address, "/api/view", &[]).await.0, 401);
    assert_eq!(get(&address, "/events", &[("Authorization", "Bearer wrong")]).await.0, 401);
    let (status, body) = get(&address, "/api/view", &[("Authorization", "Bearer s3cret")]).await;
    assert_eq!(status, 200);
    let view: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(view["root"], root.as_str());
    assert_eq!(get(&address, "/api/view?token=s3cret", &[]).await.0, 200);
    // Read-only: nothing but GET.
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let post = format!("POST /api/view?token=s3cret HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    stream.write_all(post.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 405"), "{response}");
    send_signal(&guarded, nix::sys::signal::Signal::SIGTERM);
    assert!(guarded.wait().await.unwrap().success());
}

/// The recipe `zkr ui` shows at `path`, from its JSON.
fn recipe<'a>(view: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    view["recipes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == path)
        .unwrap_or_else(|| panic!("no recipe at {path} in {view:#}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn it_recognises_what_curator_and_kazoo_processes_hold() {
    use zkr_testing::peers::{CuratorTool, KazooTool};
    let server = zkr_testing::shared_server().await.unwrap();
    let connect = server.connect_string();
    let root = unique("ui-peers");
    let at = |name: &str| format!("{root}/{name}");
    let (curator, kazoo) = (CuratorTool::locate().unwrap(), KazooTool::locate().unwrap());
    let mut peers = vec![
        curator.spawn(&["hold", &connect, &at("c-lock")]).unwrap(),
        curator.spawn(&["hold-rw", &connect, &at("c-rw"), "read"]).unwrap(),
        curator.spawn(&["semaphore-hold", &connect, &at("c-sem"), "3"]).unwrap(),
        kazoo.spawn(&["hold", &connect, &at("k-lock")]).unwrap(),
        kazoo.spawn(&["semaphore-hold", &connect, &at("k-sem"), "py-1", "2"]).unwrap(),
        kazoo.spawn(&["party", &connect, &at("k-party"), "py-member", "deep"]).unwrap(),
        kazoo.spawn(&["elect", &connect, &at("k-elect"), "py-leader"]).unwrap(),
    ];
    for (peer, line) in peers.iter_mut().zip(["HELD", "HELD", "HELD", "HELD", "HELD", "JOINED", "LEADING"]) {
        peer.expect_line(line).await.unwrap();
    }

    let (mut ui, url) = start_ui(&connect, &["--root", &root]).await;
    let address = url.trim_start_matches("http://").trim_end_matches('/').to_owned();
    let view: serde_json::Value = serde_json::from_str(&get(&address, "/api/view", &[]).await.1).unwrap();
    let lock = recipe(&view, &at("c-lock"));
    assert_eq!(
        (&lock["kind"], &lock["layout"], lock["holders"].as_array().unwrap().len()),
        (&"lock".into(), &"curator".into(), 1)
    );
    let rw = recipe(&view, &at("c-rw"));
    assert_eq!((&rw["read_write"], &rw["holders"][0]["mode"]), (&true.into(), &"read".into()), "{rw:#}");
    let sem = recipe(&view, &at("c-sem"));
    assert_eq!(
        (&sem["kind"], sem["leases"].as_array().unwrap().len(), &sem["max"]),
        (&"semaphore".into(), 1, &serde_json::Value::Null)
    );
    let lock = recipe(&view, &at("k-lock"));
    assert_eq!((&lock["kind"], &lock["layout"]), (&"lock".into(), &"kazoo".into()), "{lock:#}");
    let sem = recipe(&view, &at("k-sem"));
    assert_eq!(
        (&sem["layout"], &sem["max"], &sem["leases"][0]["id"]),
        (&"kazoo".into(), &2.into(), &"py-1".into()),
        "{sem:#}"
    );
    let party = recipe(&view, &at("k-party"));
    assert_eq!(
        (&party["kind"], &party["members"][0]["id"]),
        (&"group".into(), &"py-member".into()),
        "{party:#}"
    );
    // kazoo's Election is its lock, the leader's identifier in its node.
    let election = recipe(&view, &at("k-elect"));
    assert_eq!(
        (&election["kind"], &election["holders"][0]["id"]),
        (&"lock".into(), &"py-leader".into()),
        "{election:#}"
    );
    assert!(view["tree"].as_array().unwrap().is_empty(), "every node explained: {:#}", view["tree"]);

    send_signal(&ui, nix::sys::signal::Signal::SIGTERM);
    assert!(ui.wait().await.unwrap().success());
    for mut peer in peers {
        peer.close_stdin();
        let _ = peer.wait().await;
    }
    let admin = ZkClient::connect(&connect).await.unwrap();
    admin.delete_recursive(&root).await.unwrap();
    admin.close().await;
}
