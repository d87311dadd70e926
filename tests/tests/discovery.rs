//! Service discovery against a real server and real Curator processes (curator-x-discovery
//! 5.4): an instance Curator registers is found by zkr with every field intact, one zkr
//! registers is listed and handed out by Curator's `ServiceProvider`, and a zkr instance whose
//! session expires is back in Curator's `ServiceCache` without anyone acting. Then zkr's own
//! provider strategies and down-instance policy.

use std::time::Duration;

use serde_json::{json, Value};
use zkr_integration_tests::{connect, eventually, timing, unique_root};
use zkr_recipes::discovery::{
    DownInstancePolicy, ProviderStrategy, ServiceDiscovery, ServiceInstance, ServiceProvider, ServiceType,
    UriSpec,
};
use zkr_testing::peers::{CuratorTool, PeerProcess};
use zkr_testing::{expire_session, shared_server};

type Discovery = ServiceDiscovery<Value>;

async fn finish(peer: PeerProcess) {
    let status = peer.wait().await.unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn an_instance_curator_registers_is_found_with_every_field() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let base = unique_root("disc-java");
    let curator = CuratorTool::locate().unwrap();
    let args = ["discovery-register", &cs, &base, "api", "j-1", "10.0.0.7", "8080", r#"{"zone":"a","n":1}"#];
    let mut java = curator.spawn(&args).unwrap();
    java.expect_line("READY ").await.unwrap();

    let zk = connect(&cs).await;
    let discovery = Discovery::new(&zk, &base).unwrap();
    assert_eq!(discovery.query_for_names().await.unwrap(), ["api"]);
    let found = discovery.query_for_instances("api").await.unwrap();
    let [instance] = found.as_slice() else { panic!("{found:?}") };
    assert_eq!((instance.name.as_str(), instance.id.as_str()), ("api", "j-1"));
    assert_eq!(
        (instance.address.as_str(), instance.port, instance.ssl_port),
        ("10.0.0.7", Some(8080), Some(8081))
    );
    assert_eq!(instance.payload, Some(json!({ "zone": "a", "n": 1 })));
    assert_eq!(instance.payload_class, "java.util.LinkedHashMap");
    assert_eq!(instance.service_type, ServiceType::Dynamic);
    assert!(instance.enabled);
    let now_ms = i64::try_from(std::time::SystemTime::UNIX_EPOCH.elapsed().unwrap().as_millis()).unwrap();
    assert!((now_ms - 600_000..=now_ms).contains(&instance.registration_time_utc), "{instance:?}");
    assert_eq!(
        instance.uri().as_deref(),
        Some("https://10.0.0.7:8080"),
        "Curator's scheme is https with an SSL port"
    );
    let cache = discovery.service_cache("api").await.unwrap();
    assert_eq!(cache.instances(), found);

    java.close_stdin();
    java.expect_line("DONE").await.unwrap();
    finish(java).await;
    let mut changes = cache.changes();
    while !next_instances(&mut changes).await.is_empty() {}
    assert!(cache.is_empty(), "the cache sees Curator unregister");
}

#[tokio::test]
async fn an_instance_zkr_registers_is_listed_and_handed_out_by_curator() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let base = unique_root("disc-rust");
    let zk = connect(&cs).await;
    let discovery = Discovery::new(&zk, &base).unwrap();
    let instance = ServiceInstance::builder("api", json!({ "zone": "b" }))
        .id("r-1")
        .address("10.0.0.8")
        .port(9090)
        .uri_spec(UriSpec::parse("{scheme}://{address}:{port}"))
        .build();
    discovery.register(&instance).await.unwrap();

    let curator = CuratorTool::locate().unwrap();
    let mut list = curator.spawn(&["discovery-list", &cs, &base, "api"]).unwrap();
    let line = list.expect_line("INSTANCE ").await.unwrap();
    let stored: Value = serde_json::from_str(line.strip_prefix("INSTANCE r-1 ").expect(&line)).unwrap();
    assert_eq!(stored["address"], "10.0.0.8");
    assert_eq!(stored["port"], 9090);
    assert_eq!(stored["payload"]["zone"], "b");
    assert_eq!(stored["serviceType"], "DYNAMIC");
    assert_eq!(stored["uriSpec"]["parts"][0], json!({ "value": "scheme", "variable": true }));
    assert_eq!(list.expect_line("RESULT").await.unwrap(), "RESULT count=1");
    finish(list).await;
    let mut provider = curator.spawn(&["discovery-provider", &cs, &base, "api", "2"]).unwrap();
    assert_eq!(provider.expect_line("RESULT").await.unwrap(), "RESULT ids=r-1,r-1");
    finish(provider).await;

    discovery.unregister(&instance).await.unwrap();
    assert!(discovery.query_for_instances("api").await.unwrap().is_empty());
    discovery.close().await;
}

#[tokio::test]
async fn a_zkr_instance_whose_session_expires_is_back_in_curators_view_unaided() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let base = unique_root("disc-expiry");
    let curator = CuratorTool::locate().unwrap();
    let mut watch = curator.spawn(&["discovery-watch", &cs, &base, "api"]).unwrap();
    watch.expect_line("READY").await.unwrap();
    assert_eq!(watch.expect_line("INSTANCES").await.unwrap(), "INSTANCES ");

    let zk = connect(&cs).await;
    let discovery = Discovery::new(&zk, &base).unwrap();
    let instance =
        ServiceInstance::builder("api", json!({})).id("r-2").address("10.0.0.9").port(7070).build();
    discovery.register(&instance).await.unwrap();
    while watch.expect_line("INSTANCES ").await.unwrap() != "INSTANCES r-2" {}

    let first = zk.session().await.unwrap();
    expire_session(first.client(), &cs).await.unwrap();
    // Curator's cache sees the ephemeral node go with the session, then come back.
    while watch.expect_line("INSTANCES ").await.unwrap() != "INSTANCES " {}
    while watch.expect_line("INSTANCES ").await.unwrap() != "INSTANCES r-2" {}
    assert!(zk.generation() > first.generation());
    watch.close_stdin();
    finish(watch).await;
    discovery.close().await;
}

#[tokio::test]
async fn providers_pick_by_strategy_and_skip_disabled_and_down_instances() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let base = unique_root("disc-provider");
    let discovery = Discovery::new(&zk, &base).unwrap();
    for (id, enabled) in [("a", true), ("b", true), ("c", false)] {
        let instance = ServiceInstance::builder("api", json!({})).id(id).enabled(enabled).build();
        discovery.register(&instance).await.unwrap();
    }
    let cache = discovery.service_cache("api").await.unwrap();
    eventually("three instances in the cache", || async { cache.instances().len() == 3 }).await;

    let round_robin = ServiceProvider::new(cache.clone(), ProviderStrategy::RoundRobin);
    let picked: Vec<String> = (0..4).map(|_| round_robin.get_instance().unwrap().id).collect();
    assert_eq!(picked, ["a", "b", "a", "b"], "the disabled instance is never handed out");

    let sticky = ServiceProvider::new(cache.clone(), ProviderStrategy::Sticky);
    let first = sticky.get_instance().unwrap().id;
    assert!((0..5).all(|_| sticky.get_instance().unwrap().id == first));

    let random = ServiceProvider::new(cache.clone(), ProviderStrategy::Random);
    assert!((0..20).all(|_| ["a", "b"].contains(&random.get_instance().unwrap().id.as_str())));

    let policy = DownInstancePolicy { timeout: Duration::from_millis(300), error_threshold: 2 };
    let careful = ServiceProvider::with_policy(cache.clone(), ProviderStrategy::RoundRobin, policy);
    let a = cache.instances().into_iter().find(|i| i.id == "a").unwrap();
    careful.note_error(&a);
    assert_eq!(careful.get_all_instances().len(), 2, "one error is under the threshold");
    careful.note_error(&a);
    assert!((0..4).all(|_| careful.get_instance().unwrap().id == "b"), "a is down");
    eventually("a back after the policy's timeout", || async { careful.get_all_instances().len() == 2 })
        .await;

    // A filter, and a sticky pick whose instance goes down, walk the offered ones.
    let filtered = ServiceProvider::builder(cache.clone()).filter(|i| i.id != "a").build();
    assert!((0..4).all(|_| filtered.get_instance().unwrap().id == "b"));
    let stuck = ServiceProvider::with_policy(cache.clone(), ProviderStrategy::Sticky, policy);
    let held = stuck.get_instance().unwrap();
    stuck.note_error(&held);
    stuck.note_error(&held);
    let other = stuck.get_instance().unwrap();
    assert_ne!(other.id, held.id, "a sticky instance that is down is left");
    assert!((0..4).all(|_| stuck.get_instance().unwrap().id == other.id), "and the next one sticks");
    discovery.close().await;
}

#[tokio::test]
async fn bad_names_are_refused_and_updates_need_a_registration() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let discovery = Discovery::new(&zk, &unique_root("disc-bad")).unwrap();
    let bad = ServiceInstance::builder("a/b", json!({})).build();
    assert!(matches!(
        discovery.register(&bad).await,
        Err(zkr_recipes::discovery::DiscoveryError::InvalidArgument(_))
    ));
    let unknown = ServiceInstance::builder("api", json!({})).id("nobody").build();
    let refused = discovery.update(&unknown).await;
    assert!(
        matches!(refused, Err(zkr_recipes::discovery::DiscoveryError::NotRegistered { .. })),
        "{refused:?}"
    );
    assert!(Discovery::new(&zk, "relative").is_err());
}

/// Issue 27 item 9: an instance node that could not be read was dropped from the list, which
/// was returned as complete. A node the client may not read (`NoAuth`) fails the query.
#[tokio::test]
async fn an_instance_that_cannot_be_read_fails_the_query_instead_of_a_partial_list() {
    use zookeeper_client::{Acl, Acls, AuthId, CreateMode, Permission};
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let base = unique_root("disc-unreadable");
    let zk = connect(&cs).await;
    let discovery = Discovery::new(&zk, &base).unwrap();
    let readable = ServiceInstance::builder("api", json!({})).id("i-1").build();
    discovery.register(&readable).await.unwrap();
    let raw = zookeeper_client::Client::connect(&cs).await.unwrap();
    let no_read = [Acl::new(Permission::WRITE | Permission::DELETE, AuthId::anyone())];
    let options = CreateMode::Persistent.with_acls(Acls::new(&no_read));
    raw.create(&format!("{base}/api/i-2"), b"{}", &options).await.unwrap();
    let listed = discovery.query_for_instances("api").await;
    assert!(listed.is_err(), "a partial list as if complete: {listed:?}");
    raw.delete(&format!("{base}/api/i-2"), None).await.unwrap();
    assert_eq!(discovery.query_for_instances("api").await.unwrap().len(), 1);
    discovery.close().await;
}

/// The next instances a cache's change stream gives, within the test's bound.
async fn next_instances(
    changes: &mut (impl futures::Stream<Item = Vec<ServiceInstance<Value>>> + Unpin),
) -> Vec<ServiceInstance<Value>> {
    use futures::StreamExt;
    tokio::time::timeout(timing().wait(), changes.next()).await.expect("a change in time").expect("open")
}

/// The extension points: a path constructor puts a service's instances where it says (and its
/// cache and queries read them there), filters and a custom strategy choose among them, and a
/// cache's change stream hands out the instances after each registration and removal. Two
/// discoveries on one client register side by side.
#[tokio::test]
async fn a_path_constructor_filters_a_custom_strategy_and_cache_changes() {
    let server = shared_server().await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let base = unique_root("disc-extend");
    let layout = |base: &str| {
        let base = base.to_owned();
        move |name: &str| format!("{base}/{name}/instances")
    };
    let first = Discovery::new(&zk, &base).unwrap().with_path_constructor(layout(&base));
    let second = Discovery::new(&zk, &base).unwrap().with_path_constructor(layout(&base));
    assert_eq!(first.path_for_name("api"), format!("{base}/api/instances"));
    let cache = first.service_cache("api").await.unwrap();
    let mut changes = cache.changes();
    assert!(next_instances(&mut changes).await.is_empty(), "the instances now: none");

    for (discovery, id, port, zone) in
        [(&first, "a", 8001, "x"), (&second, "b", 8002, "y"), (&first, "c", 8003, "x")]
    {
        let instance = ServiceInstance::builder("api", json!({ "zone": zone })).id(id).port(port).build();
        discovery.register(&instance).await.unwrap();
    }
    let mut seen = Vec::new();
    while seen.len() < 3 {
        seen = next_instances(&mut changes).await.into_iter().map(|i| i.id).collect();
    }
    assert_eq!(seen, ["a", "b", "c"]);
    let ids: Vec<String> =
        first.query_for_instances("api").await.unwrap().into_iter().map(|i| i.id).collect();
    assert_eq!(ids, ["a", "b", "c"], "queries read the constructed path");
    let observer = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
    let nodes = zkr_integration_tests::children(&observer, &format!("{base}/api/instances")).await;
    assert_eq!(nodes.len(), 3, "{nodes:?}");

    let in_x = ServiceProvider::builder(cache.clone())
        .filter(|i| i.payload.as_ref().is_some_and(|p| p["zone"] == "x"))
        .custom_strategy(|offered| offered.iter().enumerate().max_by_key(|(_, i)| i.port).map(|(k, _)| k))
        .build();
    assert_eq!(in_x.get_all_instances().len(), 2);
    assert!((0..3).all(|_| in_x.get_instance().unwrap().id == "c"), "the highest port in zone x");
    let nobody = ServiceProvider::builder(cache.clone()).custom_strategy(|_| None).build();
    assert!(nobody.get_instance().is_none());
    let out_of_range = ServiceProvider::builder(cache.clone()).custom_strategy(|_| Some(99)).build();
    assert!(out_of_range.get_instance().is_none(), "an index past the end gives none");

    second.close().await;
    loop {
        let now: Vec<String> = next_instances(&mut changes).await.into_iter().map(|i| i.id).collect();
        if now == ["a", "c"] {
            break;
        }
    }
    first.close().await;
}

/// Issue 43, item 9: two unregisters of one instance at once both return only once its node
/// is gone (the second used to return at once, the node still there, while the first waited
/// for the delete).
#[tokio::test]
async fn every_concurrent_unregister_returns_once_the_node_is_gone() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let base = unique_root("disc-unregister");
    let zk = connect(&cs).await;
    let observer = zkr_integration_tests::raw(&cs).await;
    let discovery = Discovery::new(&zk, &base).unwrap();
    for round in 0..5 {
        let me = ServiceInstance::builder("api", json!({})).id(format!("i-{round}")).build();
        discovery.register(&me).await.unwrap();
        let node = format!("{base}/api/i-{round}");
        assert!(observer.check_stat(&node).await.unwrap().is_some(), "registered");
        let first = std::pin::pin!(discovery.unregister(&me));
        let second = std::pin::pin!(discovery.unregister(&me));
        let (done, other) = match futures::future::select(first, second).await {
            futures::future::Either::Left(pair) | futures::future::Either::Right(pair) => pair,
        };
        done.unwrap();
        let left = observer.check_stat(&node).await.unwrap();
        assert!(left.is_none(), "round {round}: an unregister returned with the node still there");
        other.await.unwrap();
    }
    zk.close().await;
}

/// Issue 47 item 2: the cache keeps instances decoded, and follows them by node name: an
/// update, a `DynamicSequential` instance (its node named `<id><sequence>`) registered and
/// unregistered, and nodes that are no instance of theirs (not JSON, another id) skipped. Two
/// caches and the discovery share one client.
#[tokio::test]
async fn the_cache_follows_updates_and_sequential_instances_and_skips_foreign_nodes() {
    use zkr_recipes::discovery::ServiceType;
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let base = unique_root("disc-decoded");
    let zk = connect(&cs).await;
    let discovery = Discovery::new(&zk, &base).unwrap();
    let plain = ServiceInstance::builder("api", json!({ "n": 1 })).id("a").address("10.0.0.1").build();
    discovery.register(&plain).await.unwrap();
    let first = discovery.service_cache("api").await.unwrap();
    let second = discovery.service_cache("api").await.unwrap();
    let raw = zkr_integration_tests::raw(&cs).await;
    let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    let other = ServiceInstance::builder("api", json!({})).id("y").build().to_json().unwrap();
    raw.create(&format!("{base}/api/x"), &other, &persistent).await.unwrap();
    raw.create(&format!("{base}/api/junk"), b"not json", &persistent).await.unwrap();
    let sequential = ServiceInstance::builder("api", json!({}))
        .id("s")
        .service_type(ServiceType::DynamicSequential)
        .build();
    discovery.register(&sequential).await.unwrap();
    let ids = |cache: &zkr_recipes::discovery::ServiceCache<Value>| {
        cache.instances().into_iter().map(|i| i.id).collect::<Vec<_>>()
    };
    eventually("a and s in both caches", || async {
        ids(&first) == ["a", "s"] && ids(&second) == ["a", "s"]
    })
    .await;
    let nodes = zkr_integration_tests::children(&raw, &format!("{base}/api")).await;
    let sequential_node = |n: &String| n.starts_with("_c_") && n.ends_with("s0000000003");
    assert!(nodes.iter().any(sequential_node), "a protected sequential node: {nodes:?}");

    let mut moved = plain.clone();
    moved.address = "10.0.0.2".into();
    discovery.update(&moved).await.unwrap();
    eventually("the update in the cache", || async {
        first.instances().iter().any(|i| i.id == "a" && i.address == "10.0.0.2")
    })
    .await;
    discovery.unregister(&sequential).await.unwrap();
    eventually("s gone from both caches", || async { ids(&first) == ["a"] && ids(&second) == ["a"] }).await;
    raw.delete(&format!("{base}/api/x"), None).await.unwrap();
    raw.delete(&format!("{base}/api/junk"), None).await.unwrap();
    discovery.close().await;
    eventually("nothing left", || async { first.is_empty() && second.is_empty() }).await;
    assert!(!first.is_stale());
}
