//! The framework's reads and writes (`ZkClient::get_data`, `exists`, `get_children`,
//! `set_data`, `delete`, `delete_recursive`, `get_acl`, `set_acl`, `sync`) against a real
//! server: absent nodes are `None`, versions are checked, the namespace applies, two users of
//! one client racing on a version get one winner, and a versioned write whose reply is lost is
//! not sent again: it is applied once and its error says it may have been.

use zkr_connection::zookeeper_client::{AuthId, Permission};
use zkr_connection::{Acl, CreateMode, Error};
use zkr_integration_tests::{builder, eventually, unique_root};
use zkr_testing::{shared_server, FaultProxy};
use zookeeper_client::Client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_writes_under_a_namespace_with_versions_and_absent_nodes() {
    let server = shared_server().await.unwrap();
    let ns = unique_root("crud").trim_start_matches('/').to_owned();
    let zk = builder(&server.connect_string()).namespace(&ns).connect().await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();

    assert_eq!(zk.get_data("/app/settings").await.unwrap(), None);
    assert_eq!(zk.exists("/app/settings").await.unwrap(), None);
    assert_eq!(zk.get_children("/app").await.unwrap(), None);
    assert_eq!(zk.get_acl("/app").await.unwrap(), None);
    assert!(zk.set_data("/app/settings", b"x", None).await.unwrap_err().is_no_node());
    assert!(zk.delete("/app/settings", None).await.unwrap_err().is_no_node());

    zk.create("/app/settings", b"v0", CreateMode::Persistent).await.unwrap();
    let (data, stat) = zk.get_data("/app/settings").await.unwrap().expect("the node");
    assert_eq!((data.as_slice(), stat.version), (&b"v0"[..], 0));
    assert_eq!(
        observer.get_data(&format!("/{ns}/app/settings")).await.unwrap().0,
        b"v0",
        "under the namespace"
    );
    let stat = zk.set_data("/app/settings", b"v1", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    let stale = zk.set_data("/app/settings", b"v2", Some(0)).await.unwrap_err();
    assert!(stale.is_bad_version() && !stale.is_ambiguous(), "{stale:?}");
    assert_eq!(zk.set_data("/app/settings", b"v2", None).await.unwrap().version, 2);
    assert_eq!(zk.exists("/app/settings").await.unwrap().map(|s| s.version), Some(2));
    let (children, parent) = zk.get_children("/app").await.unwrap().expect("the parent");
    assert_eq!((children, parent.num_children), (vec!["settings".to_owned()], 1));

    let read_only = [Acl::new(Permission::READ, AuthId::anyone())];
    zk.set_acl("/app/settings", &read_only, Some(0)).await.unwrap();
    let (acl, stat) = zk.get_acl("/app/settings").await.unwrap().expect("the node");
    assert_eq!((acl, stat.aversion), (read_only.to_vec(), 1));
    assert!(
        zk.set_data("/app/settings", b"v3", None).await.unwrap_err().zk()
            == Some(&zookeeper_client::Error::NoAuth)
    );
    zk.sync("/app/settings").await.unwrap();

    assert!(zk.delete("/app/settings", Some(7)).await.unwrap_err().is_bad_version());
    zk.delete("/app/settings", Some(2)).await.unwrap();
    assert_eq!(zk.exists("/app/settings").await.unwrap(), None);

    // A tree three deep goes, and nothing beside it.
    for path in ["/tree/a/x/1", "/tree/a/x/2", "/tree/a/y", "/tree/b", "/sibling"] {
        zk.create_parents(path).await.unwrap();
        zk.create(path, b"", CreateMode::Persistent).await.unwrap();
    }
    assert!(zk.delete_recursive("/tree").await.unwrap());
    assert_eq!(zk.exists("/tree").await.unwrap(), None);
    assert!(zk.exists("/sibling").await.unwrap().is_some());
    assert!(!zk.delete_recursive("/tree").await.unwrap(), "no node: false");
    assert!(matches!(zk.delete_recursive("/").await, Err(Error::InvalidPath { .. })));
    assert!(matches!(zk.get_data("no-slash").await, Err(Error::InvalidPath { .. })));
    zk.delete_recursive("/sibling").await.unwrap();
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_of_one_client_racing_on_a_version_get_one_winner() {
    let server = shared_server().await.unwrap();
    let zk = builder(&server.connect_string()).connect().await.unwrap();
    let path = unique_root("crud-race");
    zk.create(&path, b"0", CreateMode::Persistent).await.unwrap();
    let writers: Vec<_> = (0..2)
        .map(|i| {
            let (zk, path) = (zk.clone(), path.clone());
            tokio::spawn(async move { zk.set_data(&path, format!("from {i}").as_bytes(), Some(0)).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for writer in writers {
        outcomes.push(writer.await.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1, "{outcomes:?}");
    assert!(outcomes.iter().any(|o| o.as_ref().is_err_and(Error::is_bad_version)));
    assert_eq!(zk.exists(&path).await.unwrap().map(|s| s.version), Some(1));
    zk.delete(&path, None).await.unwrap();
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_versioned_write_whose_reply_is_lost_is_applied_once_and_says_it_may_have_been() {
    let server = shared_server().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = builder(&proxy.connect_string()).connect().await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let path = unique_root("crud-lost");
    zk.create(&path, b"0", CreateMode::Persistent).await.unwrap();
    proxy.hold_replies();
    let writing = {
        let (zk, path) = (zk.clone(), path.clone());
        tokio::spawn(async move { zk.set_data(&path, b"1", Some(0)).await })
    };
    eventually("the write to reach the server", || async {
        observer.get_data(&path).await.unwrap().1.version == 1
    })
    .await;
    proxy.cut();
    proxy.heal();
    let error = writing.await.unwrap().expect_err("the reply was lost");
    assert!(error.is_ambiguous(), "{error:?}");
    let (data, stat) = observer.get_data(&path).await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"1"[..], 1), "applied once, not twice");
    zk.delete(&path, None).await.unwrap();
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_dropped_at_every_await_leave_the_client_answering() {
    let server = shared_server().await.unwrap();
    let zk = builder(&server.connect_string()).connect().await.unwrap();
    let path = unique_root("crud-cancel");
    zk.create(&path, b"v", CreateMode::Persistent).await.unwrap();
    let reads = || async {
        let data = zk.get_data(&path).await?.map(|(data, _)| data);
        let exists = zk.exists(&path).await?.is_some();
        let children = zk.get_children(&path).await?.map(|(names, _)| names.len());
        let acl = zk.get_acl(&path).await?.map(|(acl, _)| acl.len());
        zk.sync(&path).await?;
        Ok::<_, Error>((data, exists, children, acl))
    };
    let after_drop = |k: usize| {
        let (zk, path) = (zk.clone(), path.clone());
        async move { assert!(zk.exists(&path).await.unwrap().is_some(), "answers after a drop at poll {k}") }
    };
    let (done, drops) = zkr_testing::cancel_at_every_await(reads, after_drop).await;
    assert!(drops >= 5, "dropped at {drops} awaits");
    assert_eq!(done.unwrap(), (Some(b"v".to_vec()), true, Some(0), Some(1)));
    zk.delete(&path, None).await.unwrap();
    zk.close().await;
}
