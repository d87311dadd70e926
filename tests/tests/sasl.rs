//! SASL DIGEST-MD5 end to end against a real server whose JAAS configuration lists two users:
//! a node whose ACL is `sasl:alice` is alice's alone, her access survives a session expiry
//! (the new session authenticates again), a lock and a cache work through it, and a wrong
//! password is `Error::AuthFailed` at once, not at the connection timeout.

use std::time::Duration;

use futures::StreamExt as _;
use zkr_connection::Classify as _;
use zkr_connection::{Acl, CreateMode, ZkClient};
use zkr_integration_tests::{builder, eventually, unique_root};
use zkr_recipes::cache::CuratorCache;
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::{expire_session, ServerOptions, TestingServer};
use zookeeper_client::{Client, Error as ZkError};

async fn server() -> TestingServer {
    let options =
        ServerOptions::default().sasl_digest_user("alice", "alice-pw").sasl_digest_user("bob", "bob-pw");
    TestingServer::with_options(options).await.unwrap()
}

/// A manager authenticated as `user`, whose nodes are creator-only (`sasl:<user>`).
async fn as_user(cs: &str, user: &str, password: &str) -> ZkClient {
    builder(cs).sasl_digest_md5(user, password).creator_only_acl().connect().await.expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_users_node_is_theirs_alone_and_stays_theirs_after_an_expiry() {
    let server = server().await;
    let cs = server.connect_string();
    let root = unique_root("sasl");
    let alice = as_user(&cs, "alice", "alice-pw").await;
    let node = format!("{root}/secret");
    // Through the manager's provider: creator-only, so `sasl:alice`.
    alice.create_parents(&node).await.unwrap();
    alice.create(&node, b"alice's", CreateMode::Persistent).await.unwrap();
    let session = alice.session().await.unwrap();
    let (acl, _) = session.client().get_acl(&node).await.unwrap();
    let ids: Vec<(String, String)> =
        acl.iter().map(|a: &Acl| (a.scheme().to_owned(), a.id().to_owned())).collect();
    assert_eq!(ids, [("sasl".to_owned(), "alice".to_owned())]);

    let bob = as_user(&cs, "bob", "bob-pw").await;
    let bob_session = bob.session().await.unwrap();
    assert!(matches!(bob_session.client().get_data(&node).await, Err(ZkError::NoAuth)));
    let anonymous = Client::connect(&cs).await.unwrap();
    assert!(matches!(anonymous.get_data(&node).await, Err(ZkError::NoAuth)));

    // A new session (after a real expiry) authenticates again and keeps alice's access.
    expire_session(session.client(), &cs).await.unwrap();
    eventually("alice's next session", || async { alice.generation() > session.generation() }).await;
    let (data, _) = alice
        .retry(|s| {
            let node = node.clone();
            async move { s.client().get_data(&node).await }
        })
        .await
        .unwrap();
    assert_eq!(data, b"alice's");
    for zk in [alice, bob] {
        zk.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_and_a_cache_work_through_sasl_and_a_wrong_password_is_refused() {
    let server = server().await;
    let cs = server.connect_string();
    let root = unique_root("sasl-recipes");
    let alice = as_user(&cs, "alice", "alice-pw").await;
    let (cache, mut events) =
        CuratorCache::builder(&alice, &format!("{root}/tree")).start_with_events().await.unwrap();
    let mutex = InterProcessMutex::new(&alice, &format!("{root}/lock")).unwrap();
    let guard = mutex.acquire().await.unwrap();
    // Another task (another owner) on the same client is excluded.
    let other = InterProcessMutex::new(&alice, &format!("{root}/lock")).unwrap();
    let tried = tokio::spawn(async move { other.try_acquire().await.unwrap().is_none() });
    assert!(tried.await.unwrap(), "a second owner got a held lock");
    guard.release().await.unwrap();
    alice.create(&format!("{root}/tree"), b"v1", CreateMode::Persistent).await.unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = events.next().await {
            if matches!(event, zkr_recipes::cache::CacheEvent::Created { .. }) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(seen, Ok(true), "the cache saw alice's node");

    // Refused at once, not at the connection timeout: only the refusal path gives AuthFailed
    // (waiting out the timeout gives ConnectTimeout).
    let refused = builder(&cs)
        .connection_timeout(Duration::from_secs(30))
        .sasl_digest_md5("alice", "wrong")
        .connect()
        .await
        .expect_err("a wrong password must not connect");
    assert!(matches!(refused, zkr_connection::Error::AuthFailed { .. }), "{refused:?}");
    assert!(refused.to_string().contains("refused this client's credentials"), "{refused}");
    assert_eq!(refused.kind(), zkr_connection::ErrorKind::Usage);
    drop(cache);
    alice.close().await;
}
