//! `zkr --sasl gssapi` (Kerberos) from the shell, against a real MIT KDC in a realm made for the
//! test and a server that logs in with its keytab. The CLI takes the ticket `kinit` left in the
//! credential cache `KRB5CCNAME` names, as every Kerberos client does; each run here gets its
//! realm and ticket through its own environment.
//!
//! The Kerberos client is a build feature (`cargo install zkr-cli --features kerberos`: it links
//! the system's GSSAPI library); `make test` builds the CLI with it. Without it, `--sasl gssapi`
//! is a usage error that says how to build it (`secure.rs`).
#![cfg(feature = "kerberos")]

use std::path::Path;
use std::process::Output;

use zkr_testing::{KerberosRealm, ServerOptions, TestingServer, KERBEROS_SERVICE_HOST};

mod common;
use common::{unique, zkr};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `zkr --sasl gssapi ARGS` as the holder of the ticket in `cache`, in `realm`.
async fn as_user(realm: &KerberosRealm, cache: &Path, cs: &str, args: &[&str]) -> Output {
    zkr(cs)
        .args(["--sasl", "gssapi"])
        .args(args)
        .env("KRB5_CONFIG", realm.krb5_conf())
        .env("KRB5CCNAME", format!("FILE:{}", cache.display()))
        .output()
        .await
        .expect("run zkr")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kerberos_user_owns_a_node_from_the_shell_and_failures_say_why() {
    let realm = KerberosRealm::start("ZKR.TEST").unwrap();
    let server = TestingServer::with_options(ServerOptions::default().kerberos(&realm)).await.unwrap();
    // The servers' principal is zookeeper/localhost: dialed by that name, or by address with
    // --sasl-host naming the principal's host.
    let by_name = format!("{KERBEROS_SERVICE_HOST}:{}", server.port());
    let by_address = format!("127.0.0.1:{}", server.port());
    let root = unique("kerberos");
    let node = format!("{root}/secret");
    let (alice, bob) = (realm.kinit("alice").unwrap(), realm.kinit("bob").unwrap());

    // alice makes the node and gives it to herself alone.
    let create = as_user(&realm, &alice, &by_name, &["create", "-p", &node, "alice's"]).await;
    assert!(create.status.success(), "{}", text(&create.stderr));
    let acl = as_user(&realm, &alice, &by_name, &["acl", "set", &node, "sasl:alice:cdrwa"]).await;
    assert!(acl.status.success(), "{}", text(&acl.stderr));
    let read = as_user(&realm, &alice, &by_name, &["get", &node]).await;
    assert_eq!(text(&read.stdout), "alice's", "{}", text(&read.stderr));
    let shown = as_user(&realm, &alice, &by_name, &["acl", "get", &node]).await;
    assert_eq!(text(&shown.stdout).trim(), "sasl:alice:cdrwa", "{}", text(&shown.stderr));

    // By address, with the principal's host named: still alice; without it the client asks
    // for zookeeper/127.0.0.1, which the realm does not know, and says so.
    let named =
        as_user(&realm, &alice, &by_address, &["--sasl-host", KERBEROS_SERVICE_HOST, "get", &node]).await;
    assert_eq!(text(&named.stdout), "alice's", "{}", text(&named.stderr));
    let unnamed = as_user(&realm, &alice, &by_address, &["get", &node]).await;
    assert!(!unnamed.status.success(), "a ticket for a principal the realm lacks: {}", text(&unnamed.stdout));
    assert!(text(&unnamed.stderr).contains("127.0.0.1"), "{}", text(&unnamed.stderr));

    // A lock held through Kerberos, by alice, under her node's parent.
    let lock = format!("{root}/lock");
    let held = as_user(&realm, &alice, &by_name, &["lock", &lock, "--", "true"]).await;
    assert!(held.status.success(), "{}", text(&held.stderr));

    // bob authenticates, and is refused alice's node: NoAuth, exit 1.
    let denied = as_user(&realm, &bob, &by_name, &["get", &node]).await;
    assert_eq!(denied.status.code(), Some(1), "{}", text(&denied.stderr));
    assert!(text(&denied.stderr).contains("not authorized"), "{}", text(&denied.stderr));

    // No ticket: no session, exit 2 at --connect-timeout (a ticket may yet come: `kinit` in
    // another shell, k5start renewing it), and the error says there are no Kerberos credentials.
    let nowhere = realm.krb5_conf().with_file_name("nobody.ccache");
    let no_ticket = as_user(&realm, &nowhere, &by_name, &["--connect-timeout", "3s", "get", &node]).await;
    assert_eq!(no_ticket.status.code(), Some(2), "{}", text(&no_ticket.stderr));
    assert!(text(&no_ticket.stderr).contains("No Kerberos credentials"), "{}", text(&no_ticket.stderr));
}
