//! The node commands (`ls`, `get`, `stat`, `create`, `set`, `rm`, `acl`, `sync`) against a
//! real server, as an operator runs them: output, `--json`, exit codes and the namespace.

use zkr_testing::shared_server;

mod common;
use common::{run_zkr, unique};

/// Runs `zkr ARGS`: (exit code, stdout, stderr).
async fn zkr_out(cs: &str, args: &[&str]) -> (i32, String, String) {
    let out = run_zkr(cs, args).await;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// Runs `zkr ARGS` and expects success: its stdout.
async fn ok(cs: &str, args: &[&str]) -> String {
    let (code, out, err) = zkr_out(cs, args).await;
    assert_eq!(code, 0, "zkr {args:?}: {err}");
    out
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

#[tokio::test]
async fn create_ls_get_stat_set_and_rm_with_their_exit_codes() {
    let cs = shared_server().await.unwrap().connect_string();
    let root = unique("node");
    let (a, b) = (format!("{root}/a"), format!("{root}/a/b"));
    assert_eq!(ok(&cs, &["create", "--parents", &b, "hello"]).await.trim(), b);
    let (code, _, err) = zkr_out(&cs, &["create", &b]).await;
    assert_eq!(code, 6, "an existing node: {err}");
    let (code, _, err) = zkr_out(&cs, &["create", &format!("{root}/x/y")]).await;
    assert!(code == 5 && err.contains("--parents"), "{code}: {err}");
    let job = ok(&cs, &["create", "--sequential", &format!("{root}/job-"), "j"]).await;
    assert!(job.trim().starts_with(&format!("{root}/job-00000")), "{job}");

    assert_eq!(ok(&cs, &["ls", &root]).await, format!("a\n{}\n", job.trim().rsplit('/').next().unwrap()));
    assert_eq!(
        ok(&cs, &["ls", "-R", &root]).await.lines().take(2).collect::<Vec<_>>(),
        [a.as_str(), b.as_str()]
    );
    let long = ok(&cs, &["ls", "-l", &a]).await;
    assert!(long.trim().ends_with("- b") && long.contains(" 5 "), "version, length 5, name: {long}");
    let listed: Vec<_> = ok(&cs, &["ls", "-R", "--json", &root]).await.lines().map(json).collect();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[1]["path"], b.as_str());
    assert_eq!(listed[1]["stat"]["dataLength"], 5);

    assert_eq!(ok(&cs, &["get", &b]).await, "hello", "exact bytes to a pipe");
    let with_stat = ok(&cs, &["get", "--stat", &b]).await;
    assert!(
        with_stat.starts_with("hello\ncZxid = 0x") && with_stat.contains("dataVersion = 0"),
        "{with_stat}"
    );
    let got = json(&ok(&cs, &["get", "--json", &b]).await);
    assert_eq!((got["encoding"].as_str(), got["value"].as_str()), (Some("text"), Some("hello")));
    assert!(ok(&cs, &["stat", &a]).await.contains("numChildren = 1"));
    assert_eq!(json(&ok(&cs, &["stat", "--json", &a]).await)["stat"]["numChildren"], 1);

    assert_eq!(ok(&cs, &["set", &b, "v1"]).await.trim(), "1");
    let (code, _, err) = zkr_out(&cs, &["set", "--if-version", "0", &b, "v2"]).await;
    assert!(code == 6 && err.contains("it is at version 1"), "{code}: {err}");
    assert_eq!(ok(&cs, &["set", "--if-version", "1", &b, "v2"]).await.trim(), "2");

    let (code, _, err) = zkr_out(&cs, &["rm", &a]).await;
    assert!(code == 6 && err.contains("-r"), "a node with children: {code}: {err}");
    let (code, _, _) = zkr_out(&cs, &["rm", "--if-version", "0", &b]).await;
    assert_eq!(code, 6, "rm at another version");
    // Off a terminal, -r asks nothing; it never goes outside the path: the sibling stays.
    ok(&cs, &["rm", "-r", &a]).await;
    assert_eq!(zkr_out(&cs, &["get", &b]).await.0, 5);
    assert_eq!(ok(&cs, &["ls", &root]).await.lines().count(), 1, "the job node outside /a stays");
    assert_eq!(zkr_out(&cs, &["rm", &a]).await.0, 5);
    assert_eq!(zkr_out(&cs, &["rm", "-r", "/"]).await.0, 2, "never the root");
    ok(&cs, &["rm", "-r", "--yes", &root]).await;
    assert_eq!(zkr_out(&cs, &["ls", &root]).await.0, 5);
}

#[tokio::test]
async fn binary_data_stdin_acl_sync_and_the_namespace() {
    let cs = shared_server().await.unwrap().connect_string();
    let root = unique("node-bin");
    let ns = root.trim_start_matches('/');
    let admin = zookeeper_client::Client::connect(&cs).await.unwrap();
    // --stdin takes bytes as they are; --json shows binary data in base64.
    let mut create = common::zkr(&cs);
    create
        .args(["--namespace", ns, "create", "--parents", "--stdin", "/blob"])
        .stdin(std::process::Stdio::piped());
    let mut child = create.stdout(std::process::Stdio::piped()).spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&[0xff, 0x00, 0x01]).await.unwrap();
    }
    assert!(child.wait().await.unwrap().success());
    let (data, _) = admin.get_data(&format!("{root}/blob")).await.unwrap();
    assert_eq!(data, [0xff, 0x00, 0x01], "under the namespace, byte for byte");
    let got = json(&ok(&cs, &["--namespace", ns, "get", "--json", "/blob"]).await);
    assert_eq!((got["encoding"].as_str(), got["value"].as_str()), (Some("base64"), Some("/wAB")));

    let blob = format!("{root}/blob");
    assert_eq!(ok(&cs, &["acl", "get", &blob]).await.trim(), "world:anyone:cdrwa");
    ok(&cs, &["acl", "set", &blob, "world:anyone:r", "ip:127.0.0.1:cdrwa"]).await;
    let acl = json(&ok(&cs, &["acl", "get", "--json", &blob]).await);
    assert_eq!(acl["acl"][0]["perms"], "r");
    assert_eq!(acl["stat"]["aversion"], 1);
    let (code, _, _) = zkr_out(&cs, &["acl", "set", "--if-version", "0", &blob, "world:anyone:cdrwa"]).await;
    assert_eq!(code, 6, "ACL version 1, not 0");
    assert_eq!(zkr_out(&cs, &["acl", "set", &blob, "world:anyone:x"]).await.0, 2, "bad permissions");
    ok(&cs, &["acl", "set", &blob, "world:anyone:cdrwa"]).await;
    ok(&cs, &["sync", &blob]).await;
    ok(&cs, &["rm", "-r", &root]).await;
}

#[tokio::test]
async fn an_ephemeral_node_lives_while_zkr_holds_it() {
    let cs = shared_server().await.unwrap().connect_string();
    let root = unique("node-eph");
    let node = format!("{root}/owner");
    let mut holder = common::zkr(&cs)
        .args(["create", "--ephemeral", "--parents", &node, "host-3"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(holder.stdout.take().unwrap()));
    let created =
        tokio::time::timeout(zkr_testing::Timing::from_env().wait(), lines.next_line()).await.unwrap();
    assert_eq!(created.unwrap().as_deref(), Some(node.as_str()));
    let stat = json(&ok(&cs, &["stat", "--json", &node]).await);
    assert_ne!(stat["stat"]["ephemeralOwner"], 0);
    common::send_signal(&holder, nix::sys::signal::Signal::SIGTERM);
    assert_eq!(common::exit_status(&mut holder).await.code(), Some(143));
    assert_eq!(zkr_out(&cs, &["get", &node]).await.0, 5, "gone with zkr");
}

/// `zkr ARGS` on a terminal (util-linux's `script` gives it one), `input` typed at it: (exit
/// code, what the terminal showed).
async fn on_a_terminal(cs: &str, args: &[&str], input: &str) -> (i32, String) {
    let command =
        std::iter::once(env!("CARGO_BIN_EXE_zkr")).chain(args.iter().copied()).collect::<Vec<_>>().join(" ");
    let mut script = tokio::process::Command::new("script");
    script.args(["-qec", &command, "/dev/null"]).env("ZK_CONNECT", cs).kill_on_drop(true);
    script.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    let mut child = script.spawn().expect("util-linux script");
    {
        use tokio::io::AsyncWriteExt as _;
        child.stdin.take().unwrap().write_all(input.as_bytes()).await.unwrap();
    }
    let out = tokio::time::timeout(zkr_testing::Timing::from_env().wait(), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn on_a_terminal_rm_r_asks_first_and_binary_data_is_described() {
    let cs = shared_server().await.unwrap().connect_string();
    let root = unique("node-tty");
    ok(&cs, &["create", "--parents", &format!("{root}/a/b")]).await;
    let (code, shown) = on_a_terminal(&cs, &["rm", "-r", &root], "n\n").await;
    assert!(code == 1 && shown.contains("[y/N]") && shown.contains("nothing deleted"), "{code}: {shown}");
    assert_eq!(ok(&cs, &["ls", &root]).await.trim(), "a", "kept");
    let (code, shown) = on_a_terminal(&cs, &["rm", "-r", &root], "y\n").await;
    assert_eq!(code, 0, "{shown}");
    assert_eq!(zkr_out(&cs, &["ls", &root]).await.0, 5, "deleted after yes");

    let admin = zookeeper_client::Client::connect(&cs).await.unwrap();
    let blob = format!("{root}-blob");
    admin
        .create(
            &blob,
            &[0xff, 0xfe, 0x00],
            &zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let (code, shown) = on_a_terminal(&cs, &["get", &blob], "").await;
    assert!(code == 0 && shown.contains("3 bytes of binary data"), "{code}: {shown}");
    ok(&cs, &["rm", &blob]).await;
}

/// Every node of an export, without its stat (which a copy cannot share).
fn nodes_without_stats(export: &str) -> Vec<serde_json::Value> {
    let mut document = json(export);
    let nodes = document["nodes"].as_array_mut().unwrap();
    for node in nodes.iter_mut() {
        node.as_object_mut().unwrap().remove("stat");
    }
    nodes.clone()
}

#[tokio::test]
async fn export_and_import_reproduce_a_tree_byte_for_byte() {
    let cs = shared_server().await.unwrap().connect_string();
    let (src, dst) = (unique("export-src"), unique("export-dst"));
    let admin = zookeeper_client::Client::connect(&cs).await.unwrap();
    let open = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    admin.create(&src, b"root", &open).await.unwrap();
    admin.create(&format!("{src}/text"), "héllo\n".as_bytes(), &open).await.unwrap();
    admin.create(&format!("{src}/bin"), &[0, 159, 146, 150, 255], &open).await.unwrap();
    admin.create(&format!("{src}/text/deep"), b"{\"json\": 1}", &open).await.unwrap();
    let read_only = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_read());
    admin.create(&format!("{src}/frozen"), b"", &read_only).await.unwrap();
    let ephemeral = zookeeper_client::CreateMode::Ephemeral.with_acls(zookeeper_client::Acls::anyone_all());
    admin.create(&format!("{src}/owner"), b"me", &ephemeral).await.unwrap();

    let exported = ok(&cs, &["export", &src]).await;
    let file = std::env::temp_dir().join(format!("zkr-export-{}.json", std::process::id()));
    std::fs::write(&file, &exported).unwrap();
    let file = file.to_str().unwrap();
    // A dry run writes nothing.
    let planned = ok(&cs, &["import", "--dry-run", file, &dst]).await;
    assert!(planned.contains(&format!("create {dst}/bin (5 bytes)")), "{planned}");
    assert_eq!(zkr_out(&cs, &["stat", &dst]).await.0, 5, "nothing written by a dry run");
    let (_, out, err) = zkr_out(&cs, &["import", file, &format!("{dst}/copy")]).await;
    assert!(
        out.contains("created 5, updated 0") && err.contains("skipping the ephemeral node"),
        "{out} {err}"
    );

    // The copy's export equals the original's, ephemeral node aside, byte for byte and ACL.
    let copy = ok(&cs, &["export", &format!("{dst}/copy")]).await;
    let original: Vec<_> =
        nodes_without_stats(&exported).into_iter().filter(|n| n["ephemeral"] == false).collect();
    assert_eq!(nodes_without_stats(&copy), original);
    let (bin, _) = admin.get_data(&format!("{dst}/copy/bin")).await.unwrap();
    assert_eq!(bin, [0, 159, 146, 150, 255]);
    assert_eq!(ok(&cs, &["acl", "get", &format!("{dst}/copy/frozen")]).await.trim(), "world:anyone:r");

    // Into an existing tree: refused with nothing written, unless --overwrite.
    admin.set_data(&format!("{dst}/copy/text"), b"changed", None).await.unwrap();
    let (code, _, err) = zkr_out(&cs, &["import", file, &format!("{dst}/copy")]).await;
    assert!(code == 6 && err.contains("--overwrite"), "{code}: {err}");
    assert_eq!(admin.get_data(&format!("{dst}/copy/text")).await.unwrap().0, b"changed");
    // (A node whose ACL forbids writing cannot be overwritten, nor its ACL changed: delete it
    // first; the import creates it again with its read-only ACL.)
    let frozen = format!("{dst}/copy/frozen");
    admin.delete(&frozen, None).await.unwrap();
    let out = ok(&cs, &["import", "--overwrite", file, &format!("{dst}/copy")]).await;
    assert_eq!(ok(&cs, &["acl", "get", &frozen]).await.trim(), "world:anyone:r");
    assert!(out.contains("created 1, updated 4"), "{out}");
    assert_eq!(admin.get_data(&format!("{dst}/copy/text")).await.unwrap().0, "héllo\n".as_bytes());
    assert_eq!(zkr_out(&cs, &["import", "/nonexistent.json", &dst]).await.0, 1);
    std::fs::remove_file(file).unwrap();
    ok(&cs, &["rm", "-r", &dst]).await;
    admin.delete(&format!("{src}/owner"), None).await.unwrap();
    ok(&cs, &["rm", "-r", &src]).await;
}

/// ZooKeeper's own `/zookeeper` tree (quotas, the ensemble's config): every write refused
/// alike, exit 2 with the reason (issue 44 item 7: `create` wrote there and `rm` then refused
/// without one); reads allowed; a namespace moves the path away from it.
#[tokio::test]
async fn writes_under_zookeeper_are_refused_with_a_reason() {
    let cs = shared_server().await.unwrap().connect_string();
    let admin = zookeeper_client::Client::connect(&cs).await.unwrap();
    let name = unique("reserved").trim_start_matches('/').to_owned();
    let node = format!("/zookeeper/{name}");
    let writes: [&[&str]; 5] = [
        &["create", &node, "x"],
        &["create", "--parents", &format!("{node}/deep")],
        &["set", "/zookeeper", "x"],
        &["acl", "set", "/zookeeper", "world:anyone:r"],
        &["rm", &node],
    ];
    for args in writes {
        let (code, out, err) = zkr_out(&cs, args).await;
        assert_eq!(code, 2, "zkr {args:?}: {out}{err}");
        assert!(err.contains("ZooKeeper's own tree") && err.contains("/zookeeper"), "zkr {args:?}: {err}");
    }
    assert_eq!(admin.check_stat(&node).await.unwrap(), None, "nothing written under /zookeeper");
    assert!(ok(&cs, &["ls", "/zookeeper"]).await.contains("quota"), "reads are allowed");

    // Under a namespace, /zookeeper/x is /NS/zookeeper/x: an ordinary node, written and removed.
    let ns = unique("reserved-ns").trim_start_matches('/').to_owned();
    ok(&cs, &["--namespace", &ns, "create", "--parents", "/zookeeper/x"]).await;
    assert!(admin.check_stat(&format!("/{ns}/zookeeper/x")).await.unwrap().is_some());
    ok(&cs, &["--namespace", &ns, "rm", "/zookeeper/x"]).await;
    ok(&cs, &["rm", "-r", &format!("/{ns}")]).await;
}

/// A chroot in the connect string (`host:port/chroot`) against a real server: every command
/// reads and writes under it, paths come back relative to it, and `ls /` lists only its
/// children; a lock taken through it holds its node under the chroot (issue 49 item 5).
#[tokio::test]
async fn a_chroot_in_the_connect_string_confines_every_command() {
    let cs = shared_server().await.unwrap().connect_string();
    let root = unique("chroot");
    let admin = zookeeper_client::Client::connect(&cs).await.unwrap();
    let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    admin.create(&root, b"", &persistent).await.unwrap();
    let rooted = format!("{cs}{root}");

    assert_eq!(ok(&rooted, &["create", "--parents", "/app/config", "v1"]).await.trim(), "/app/config");
    let (data, _) = admin.get_data(&format!("{root}/app/config")).await.unwrap();
    assert_eq!(data, b"v1", "written under the chroot");
    assert_eq!(ok(&rooted, &["ls", "/"]).await, "app\n", "the chroot's children only");
    assert_eq!(ok(&rooted, &["get", "/app/config"]).await, "v1");
    assert_eq!(
        json(ok(&rooted, &["ls", "-R", "--json", "/app"]).await.lines().next().unwrap())["path"],
        "/app/config"
    );
    let job = ok(&rooted, &["create", "--sequential", "/app/job-", "j"]).await;
    assert!(job.trim().starts_with("/app/job-00000"), "a created path relative to the chroot: {job}");

    // `cat` holds the lock until its stdin closes: the lock node is under the chroot meanwhile.
    let mut holder = common::zkr(&rooted)
        .args(["lock", "/app/lock", "--", "cat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    common::wait_for_children(&cs, &format!("{root}/app/lock"), |n| n == 1, "the lock node under the chroot")
        .await;
    drop(holder.stdin.take());
    assert!(holder.wait().await.unwrap().success());
    let (code, _, err) = zkr_out(&rooted, &["get", &format!("{root}/app/config")]).await;
    assert_eq!(code, 5, "the server's absolute path does not exist under the chroot: {err}");
    ok(&rooted, &["rm", "-r", "--yes", "/app"]).await;
    assert!(admin.list_children(&root).await.unwrap().is_empty());
    admin.delete(&root, None).await.unwrap();
}
