//! Kerberos (SASL GSSAPI) end to end: a real MIT KDC in a realm made for the test
//! (`zkr_testing::KerberosRealm`), a server that logs in with its keytab, and clients that
//! authenticate with the tickets `kinit` left in their credential caches. A node whose ACL is
//! `sasl:alice` is alice's alone; her access survives a session expiry (the new session
//! authenticates again); a lock and a cache work through it; no ticket and an unreachable KDC
//! are errors that say so.
//!
//! The client's realm and ticket come from the process environment (`KRB5_CONFIG`,
//! `KRB5CCNAME`), as for every Kerberos client: this binary holds one test, which changes
//! them between its clients.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt as _;
use zkr_connection::{CreateMode, Error, ZkClient};
use zkr_integration_tests::{builder, eventually, unique_root};
use zkr_recipes::cache::{CacheEvent, CuratorCache};
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::{expire_session, KerberosRealm, ServerOptions, TestingServer};
use zookeeper_client::Error as ZkError;

/// The client's ticket: the credential cache `KRB5CCNAME` names.
fn use_ticket(cache: &Path) {
    std::env::set_var("KRB5CCNAME", format!("FILE:{}", cache.display()));
}

/// A manager that authenticates with the current ticket, whose nodes are creator-only.
async fn kerberos_client(cs: &str) -> ZkClient {
    builder(cs).sasl_gssapi().creator_only_acl().connect().await.expect("a Kerberos session")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kerberos_users_own_their_nodes_through_expiry_locks_and_caches_and_failures_say_why() {
    let realm = KerberosRealm::start("ZKR.TEST").unwrap();
    std::env::set_var("KRB5_CONFIG", realm.krb5_conf());
    let server = TestingServer::with_options(ServerOptions::default().kerberos(&realm)).await.unwrap();
    // The servers' principal is zookeeper/localhost: the client names the host it connects to.
    let cs = format!("{}:{}", zkr_testing::KERBEROS_SERVICE_HOST, server.port());
    let root = unique_root("kerberos");
    let node = format!("{root}/secret");

    use_ticket(&realm.kinit("alice").unwrap());
    let alice = kerberos_client(&cs).await;
    let session = alice.session().await.unwrap();
    let users = session.client().list_auth_users().await.unwrap();
    assert!(users.iter().any(|u| u.scheme() == "sasl" && u.user() == "alice"), "{users:?}");
    alice.create_parents(&node).await.unwrap();
    alice.create(&node, b"alice's", CreateMode::Persistent).await.unwrap();
    let (acl, _) = session.client().get_acl(&node).await.unwrap();
    assert_eq!(acl.iter().map(|a| format!("{}:{}", a.scheme(), a.id())).collect::<Vec<_>>(), ["sasl:alice"]);

    // A lock and a cache through Kerberos.
    let (cache, mut events) =
        CuratorCache::builder(&alice, &format!("{root}/tree")).start_with_events().await.unwrap();
    let mutex = InterProcessMutex::new(&alice, &format!("{root}/lock")).unwrap();
    let guard = mutex.acquire().await.unwrap();
    let other = InterProcessMutex::new(&alice, &format!("{root}/lock")).unwrap();
    assert!(other.try_acquire().await.unwrap().is_none(), "a second owner got a held lock");
    guard.release().await.unwrap();
    alice.create(&format!("{root}/tree"), b"v1", CreateMode::Persistent).await.unwrap();
    let created = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = events.next().await {
            if matches!(event, CacheEvent::Created { .. }) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(created, Ok(true), "the cache saw alice's node");
    drop(cache);

    // A real expiry: the next session authenticates again and keeps alice's access.
    expire_session(session.client(), &server.connect_string()).await.unwrap();
    eventually("alice's next session", || async { alice.generation() > session.generation() }).await;
    let read = alice.retry(|s| {
        let node = node.clone();
        async move { s.client().get_data(&node).await }
    });
    assert_eq!(read.await.unwrap().0, b"alice's");
    alice.close().await;

    // Bob is authenticated, and refused alice's node; so is a client without SASL.
    use_ticket(&realm.kinit("bob").unwrap());
    let bob = kerberos_client(&cs).await;
    let denied = bob.client().await.unwrap().get_data(&node).await;
    assert!(matches!(denied, Err(ZkError::NoAuth)), "{denied:?}");
    bob.close().await;
    let anonymous = ZkClient::connect(cs.as_str()).await.unwrap();
    assert!(matches!(anonymous.client().await.unwrap().get_data(&node).await, Err(ZkError::NoAuth)));
    anonymous.close().await;

    // No ticket: no session, and the error says there are no Kerberos credentials.
    let nowhere = realm.krb5_conf().with_file_name("nobody.ccache");
    use_ticket(&nowhere);
    let no_ticket = builder(&cs).sasl_gssapi().connection_timeout(Duration::from_secs(2)).connect().await;
    let error = no_ticket.expect_err("no session without a ticket");
    assert!(error.to_string().contains("No Kerberos credentials"), "{error}");

    // The KDC is unreachable and carol has no ticket for the servers yet: the error says so.
    use_ticket(&realm.kinit("carol").unwrap());
    realm.stop_kdc();
    let no_kdc = builder(&cs).sasl_gssapi().connection_timeout(Duration::from_secs(2)).connect().await;
    let error = no_kdc.expect_err("no session without the KDC");
    assert!(error.to_string().contains("Cannot contact any KDC"), "{error}");
    assert!(matches!(error, Error::Sasl { .. }), "{error:?}");
}
