//! Typed models (`zkr_recipes::model`) against a real ZooKeeper server: every call of
//! `ModeledFramework` round trips with the model's JSON on the server; templates with a
//! parameter left and bad ids are refused with nothing written; the spec's mode, ACL, parents
//! and TTL are what the server gets; a versioned update that loses is a `VersionConflict`;
//! two frameworks on one client see each other's writes; `list` reads many children, skips
//! vanished and empty ones and names a corrupt one; the typed cache follows another client's
//! writes in order and keeps the last good model when a node stops decoding.

use std::time::Duration;

use futures::{Stream, StreamExt as _};
use serde_json::{json, Value};
use zkr_connection::zookeeper_client::{AuthId, Permission};
use zkr_connection::Classify as _;
use zkr_connection::{Acl, CreateMode, Parents, ZkClient};
use zkr_integration_tests::{children, connect, raw, timing, unique_root};
use zkr_recipes::codec::{Codec, CodecError, Json};
use zkr_recipes::model::{ModelError, ModelEvent, ModelSpec, ModeledFramework, ZPath};
use zkr_testing::{shared_server, ServerOptions, TestingServer};
use zookeeper_client::{Client, CreateMode as RawMode};

/// Creates `path` with `data` as another program would (no codec).
async fn plant(client: &Client, path: &str, data: &[u8]) {
    let options = RawMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    client.create(path, data, &options).await.unwrap();
}

fn user(name: &str) -> Value {
    let id = name.to_lowercase();
    json!({ "id": id, "name": name, "email": format!("{id}@example.com") })
}

/// The users of `root`: `{root}/users/{id}`, JSON, the default spec.
fn users_of(zk: &ZkClient, root: &str) -> ModeledFramework<Value> {
    let template = ZPath::parse(&format!("{root}/users/{{id}}")).unwrap();
    ModeledFramework::new(zk, ModelSpec::builder(template, Json).build().unwrap())
}

async fn connected() -> (ZkClient, Client, String) {
    let cs = shared_server().await.unwrap().connect_string();
    (connect(&cs).await, raw(&cs).await, cs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_round_trips_with_the_models_json_on_the_server() {
    let (zk, observer, _) = connected().await;
    let root = unique_root("models-ops");
    let users = users_of(&zk, &root);
    let alice = users.resolved(&["alice"]).unwrap();
    let path = format!("{root}/users/alice");
    assert_eq!(alice.path().as_path(), path);

    assert_eq!(alice.read().await.unwrap(), None);
    assert_eq!(alice.read_versioned().await.unwrap(), None);
    assert_eq!(alice.exists().await.unwrap(), None);
    assert!(!alice.delete().await.unwrap());
    let missing = alice.update(&user("Alice")).await;
    assert!(matches!(&missing, Err(ModelError::NotFound { path: p }) if *p == path), "{missing:?}");

    let (created, stat) = alice.set(&user("Alice")).await.unwrap();
    assert_eq!((created.as_str(), stat.version), (path.as_str(), 0));
    let stored = observer.get_data(&path).await.unwrap().0;
    assert_eq!(stored, serde_json::to_vec(&user("Alice")).unwrap(), "the codec's bytes, nothing more");
    assert_eq!(alice.read().await.unwrap(), Some(user("Alice")));
    let (model, stat) = alice.read_with_stat().await.unwrap().unwrap();
    assert_eq!((model, stat.version), (user("Alice"), 0));

    // set on an existing node sets its data; update, update_versioned, set_versioned too.
    assert_eq!(alice.set(&user("Alice B")).await.unwrap().1.version, 1);
    let current = alice.read_versioned().await.unwrap().unwrap();
    assert_eq!((current.model, current.version), (user("Alice B"), 1));
    assert_eq!(alice.update(&user("Alice C")).await.unwrap().version, 2);
    assert_eq!(alice.update_versioned(&user("Alice D"), 2).await.unwrap().version, 3);
    assert_eq!(alice.set_versioned(&user("Alice E"), 3).await.unwrap().1.version, 4);
    let stale = alice.set_versioned(&user("stale"), 3).await;
    assert!(matches!(stale, Err(ModelError::VersionConflict { expected: 3, .. })), "{stale:?}");
    assert_eq!(alice.exists().await.unwrap().unwrap().version, 4);

    // set_versioned creates a node that is not there, whatever the version.
    let bob = users.resolved(&["bob"]).unwrap();
    assert_eq!(bob.set_versioned(&user("Bob"), 7).await.unwrap().1.version, 0);
    let all = users.parent().unwrap();
    assert_eq!(all.children().await.unwrap(), ["alice", "bob"]);
    let each: Vec<String> =
        all.children_as_frameworks().await.unwrap().iter().map(|f| f.path().to_string()).collect();
    assert_eq!(each, [path.clone(), format!("{root}/users/bob")]);
    let listed = all.list().await.unwrap();
    assert_eq!(listed, [("alice".to_owned(), user("Alice E")), ("bob".to_owned(), user("Bob"))]);

    let conflict = bob.delete_versioned(5).await;
    assert!(matches!(conflict, Err(ModelError::VersionConflict { expected: 5, .. })), "{conflict:?}");
    assert!(bob.delete_versioned(0).await.unwrap());
    assert!(alice.delete().await.unwrap());
    assert!(!alice.delete().await.unwrap());
    assert!(!alice.delete_versioned(0).await.unwrap());
    assert_eq!(alice.read().await.unwrap(), None);
    assert!(all.list().await.unwrap().is_empty());
    assert!(children(&observer, &format!("{root}/users")).await.is_empty());
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spec_decides_the_mode_the_acl_and_the_parents() {
    let (zk, observer, _) = connected().await;
    let root = unique_root("models-spec");
    let spec = |template: &str| ModelSpec::builder(ZPath::parse(&format!("{root}{template}")).unwrap(), Json);

    let sessions =
        ModeledFramework::new(&zk, spec("/sessions/{id}").mode(CreateMode::Ephemeral).build().unwrap());
    let (path, stat) = sessions.resolved(&["s1"]).unwrap().set(&json!(1)).await.unwrap();
    let session = zk.session().await.unwrap().id();
    assert_eq!(stat.ephemeral_owner, session, "{path} is our session's");

    let jobs = ModeledFramework::new(
        &zk,
        spec("/jobs/{id}").mode(CreateMode::PersistentSequential).build().unwrap(),
    );
    let job = jobs.resolved(&["job-"]).unwrap();
    let (first, _) = job.set(&json!("a")).await.unwrap();
    let (second, _) = job.set(&json!("b")).await.unwrap();
    assert_eq!(first, format!("{root}/jobs/job-0000000000"));
    assert_eq!(second, format!("{root}/jobs/job-0000000001"), "each set makes a node");
    assert_eq!(jobs.parent().unwrap().list().await.unwrap().len(), 2);

    let read_only = vec![Acl::new(Permission::READ, AuthId::anyone())];
    let public = ModeledFramework::new(&zk, spec("/public/{key}").acl(read_only.clone()).build().unwrap());
    let motd = public.resolved(&["motd"]).unwrap();
    motd.set(&json!("hello")).await.unwrap();
    assert_eq!(zk.get_acl(motd.path().as_path()).await.unwrap().unwrap().0, read_only);
    let refused = motd.update(&json!("changed")).await.unwrap_err();
    assert!(
        matches!(&refused, ModelError::Connection(e) if e.zk() == Some(&zookeeper_client::Error::NoAuth))
    );
    assert_eq!(motd.read().await.unwrap(), Some(json!("hello")));
    let parent_acl = zk.get_acl(&format!("{root}/public")).await.unwrap().unwrap().0;
    assert_eq!(parent_acl, zk.acl_for_path(&format!("{root}/public")), "parents get the provider's ACL");

    let strict = ModeledFramework::new(&zk, spec("/strict/{id}").parents(Parents::None).build().unwrap());
    let orphan = strict.resolved(&["x"]).unwrap().set(&json!(0)).await.unwrap_err();
    assert!(matches!(&orphan, ModelError::Connection(e) if e.is_no_node()), "{orphan:?}");
    assert!(children(&observer, &root).await.iter().all(|c| c != "strict"));
    zk.close().await;
}

/// A codec that refuses every model: an encoding failure.
#[derive(Debug)]
struct Refuses;

impl Codec<Value> for Refuses {
    fn decode(&self, data: &[u8]) -> Result<Value, CodecError> {
        Json.decode(data)
    }

    fn encode(&self, _: &Value) -> Result<Vec<u8>, CodecError> {
        Err(CodecError::new("test", "refused"))
    }
}

fn assert_unresolved<T: std::fmt::Debug>(result: Result<T, ModelError>, parameter: &str) {
    match result {
        Err(ModelError::Unresolved { parameter: p, .. }) if p == parameter => {}
        other => panic!("expected {{{parameter}}} unresolved: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unresolved_paths_bad_ids_and_unencodable_models_are_refused_with_nothing_written() {
    let (zk, observer, _) = connected().await;
    let root = unique_root("models-refused");
    let users = users_of(&zk, &root);
    let model = user("Eve");
    assert_unresolved(users.set(&model).await, "id");
    assert_unresolved(users.set_versioned(&model, 0).await, "id");
    assert_unresolved(users.update(&model).await, "id");
    assert_unresolved(users.update_versioned(&model, 0).await, "id");
    assert_unresolved(users.read().await, "id");
    assert_unresolved(users.read_with_stat().await, "id");
    assert_unresolved(users.read_versioned().await, "id");
    assert_unresolved(users.delete().await, "id");
    assert_unresolved(users.delete_versioned(0).await, "id");
    assert_unresolved(users.exists().await, "id");
    assert_unresolved(users.children().await, "id");
    assert_unresolved(users.children_as_frameworks().await, "id");
    assert_unresolved(users.list().await, "id");
    // The error names the parameter left, wherever it is.
    let orders = ZPath::parse(&format!("{root}/users/alice/orders/{{order}}")).unwrap();
    let orders = ModeledFramework::new(&zk, ModelSpec::builder(orders, Json).build().unwrap());
    assert_unresolved(orders.set(&model).await, "order");
    let error = orders.read().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("{root}/users/alice/orders/{{order}} is not resolved: {{order}} has no value")
    );

    for bad in ["", "a/b", ".", "..", "\u{1}"] {
        let refused = users.resolved(&[bad]);
        assert!(
            matches!(&refused, Err(ModelError::InvalidName { value, .. }) if value == bad),
            "{refused:?}"
        );
        assert!(users.resolved(&["alice"]).unwrap().child(bad).is_err(), "child {bad:?}");
    }
    assert!(matches!(users.resolved(&[]), Err(ModelError::WrongArity { expected: 1, given: 0, .. })));
    assert!(matches!(users.resolved(&["a", "b"]), Err(ModelError::WrongArity { expected: 1, given: 2, .. })));

    let reserved = ModelSpec::builder(ZPath::parse("/zookeeper/{x}").unwrap(), Json).build().unwrap();
    let reserved = ModeledFramework::new(&zk, reserved).resolved(&["x"]).unwrap().set(&model).await;
    assert!(matches!(&reserved, Err(ModelError::InvalidArgument(_))), "{reserved:?}");
    let template = ZPath::parse(&format!("{root}/users/{{id}}")).unwrap();
    let refusing = ModeledFramework::new(&zk, ModelSpec::builder(template, Refuses).build().unwrap());
    let unencodable = refusing.resolved(&["eve"]).unwrap().set(&model).await;
    assert!(matches!(&unencodable, Err(ModelError::Encode { path, .. }) if path.ends_with("/users/eve")));
    let cause = std::error::Error::source(&unencodable.unwrap_err()).unwrap().to_string();
    assert_eq!(cause, "not valid test");

    assert!(observer.check_stat(&root).await.unwrap().is_none(), "nothing was written");
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_frameworks_on_one_client_see_each_others_writes_and_one_versioned_update_loses() {
    let (zk, _, _) = connected().await;
    let root = unique_root("models-two");
    let (mine, theirs) = (
        users_of(&zk, &root).resolved(&["carol"]).unwrap(),
        users_of(&zk, &root).resolved(&["carol"]).unwrap(),
    );
    mine.set(&user("Carol")).await.unwrap();
    assert_eq!(theirs.read().await.unwrap(), Some(user("Carol")));
    theirs.update(&user("Carol T")).await.unwrap();
    assert_eq!(mine.read().await.unwrap(), Some(user("Carol T")));

    // Both read version 1; the first versioned update wins, the second gets the typed outcome
    // and writes nothing.
    let (seen_mine, seen_theirs) =
        (mine.read_versioned().await.unwrap().unwrap(), theirs.read_versioned().await.unwrap().unwrap());
    assert_eq!((seen_mine.version, seen_theirs.version), (1, 1));
    assert_eq!(mine.update_versioned(&user("Mine"), seen_mine.version).await.unwrap().version, 2);
    let lost = theirs.update_versioned(&user("Theirs"), seen_theirs.version).await;
    assert!(
        matches!(&lost, Err(ModelError::VersionConflict { expected: 1, path }) if path.ends_with("/carol")),
        "{lost:?}"
    );
    assert_eq!(lost.unwrap_err().kind(), zkr_connection::ErrorKind::Conflict);
    assert_eq!(theirs.read().await.unwrap(), Some(user("Mine")));

    // At once: exactly one of two updates at the same version is applied.
    let (model_a, model_b) = (user("A"), user("B"));
    let (a, b) = tokio::join!(mine.update_versioned(&model_a, 2), theirs.update_versioned(&model_b, 2));
    let conflicts = [&a, &b].iter().filter(|r| matches!(r, Err(ModelError::VersionConflict { .. }))).count();
    assert_eq!((a.is_ok() as usize + b.is_ok() as usize, conflicts), (1, 1), "{a:?} {b:?}");
    let winner = if a.is_ok() { model_a } else { model_b };
    assert_eq!(mine.read().await.unwrap(), Some(winner));
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_reads_many_children_skips_empty_ones_and_names_a_corrupt_one() {
    let (zk, observer, _) = connected().await;
    let root = unique_root("models-list");
    let users = users_of(&zk, &root);
    let names: Vec<String> = (0..150).map(|i| format!("u{i:03}")).collect();
    let sets = names.iter().map(|name| {
        let one = users.resolved(&[name]).unwrap();
        async move { one.set(&user(name)).await.map(|_| ()) }
    });
    futures::future::try_join_all(sets).await.unwrap();
    // A node without data (made as a parent for a deeper node) holds no model.
    plant(&observer, &format!("{root}/users/parent-only"), b"").await;
    let all = users.parent().unwrap();
    let listed = all.list().await.unwrap();
    assert_eq!(listed.len(), 150);
    assert!(listed.iter().zip(&names).all(|((id, model), name)| id == name && *model == user(name)));
    assert_eq!(users.resolved(&["parent-only"]).unwrap().read().await.unwrap(), None);

    plant(&observer, &format!("{root}/users/u100x"), b"{not json").await;
    let corrupt = all.list().await.unwrap_err();
    let ModelError::Decode { path, source } = &corrupt else { panic!("{corrupt:?}") };
    assert_eq!(path, &format!("{root}/users/u100x"));
    assert_eq!((source.format(), corrupt.kind()), ("JSON", zkr_connection::ErrorKind::Corrupt));
    let read = users.resolved(&["u100x"]).unwrap().read().await;
    assert!(matches!(read, Err(ModelError::Decode { .. })), "{read:?}");
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_while_another_client_deletes_the_children_never_fails() {
    let (zk, _, cs) = connected().await;
    let root = unique_root("models-vanish");
    let users = users_of(&zk, &root);
    let names: Vec<String> = (0..200).map(|i| format!("u{i:03}")).collect();
    let sets = names.iter().map(|name| {
        let one = users.resolved(&[name]).unwrap();
        async move { one.set(&user(name)).await.map(|_| ()) }
    });
    futures::future::try_join_all(sets).await.unwrap();
    let deleter = connect(&cs).await;
    let doomed: Vec<_> = names.iter().map(|n| users_of(&deleter, &root).resolved(&[n]).unwrap()).collect();
    let deleting = tokio::spawn(async move {
        for one in doomed {
            one.delete().await.unwrap();
        }
    });
    let all = users.parent().unwrap();
    let mut sizes = Vec::new();
    loop {
        let listed = all.list().await.expect("a child deleted meanwhile is skipped, never an error");
        assert!(listed.iter().all(|(id, model)| *model == user(id)));
        sizes.push(listed.len());
        if listed.is_empty() {
            break;
        }
    }
    deleting.await.unwrap();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
    zk.close().await;
}

/// Names an event as "kind path model".
fn describe(event: &ModelEvent<Value>) -> String {
    let name = |v: &Value| v["name"].as_str().unwrap_or_default().to_owned();
    match event {
        ModelEvent::Created { node } => format!("created {} {}", node.path.node_name(), name(&node.model)),
        ModelEvent::Changed { old, new } => {
            format!("changed {} {} -> {}", new.path.node_name(), name(&old.model), name(&new.model))
        }
        ModelEvent::Deleted { old } => format!("deleted {} {}", old.path.node_name(), name(&old.model)),
        ModelEvent::DecodeFailed { path, .. } => format!("undecodable {}", path.node_name()),
        other => format!("{other:?}"),
    }
}

async fn next_event(events: &mut (impl Stream<Item = ModelEvent<Value>> + Unpin)) -> String {
    let event = tokio::time::timeout(timing().wait(), events.next()).await.expect("an event in time");
    describe(&event.expect("the stream goes on"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typed_cache_follows_another_client_in_order_and_keeps_the_last_good_model() {
    let (zk, observer, cs) = connected().await;
    let root = unique_root("models-cache");
    let users = users_of(&zk, &root);
    users.resolved(&["alice"]).unwrap().set(&user("Alice")).await.unwrap();
    let cached = users.cached().await.unwrap();
    let alice = cached.current(&["alice"]).unwrap().expect("read at start");
    assert_eq!((*alice.model).clone(), user("Alice"));
    assert_eq!(alice.path.as_path(), format!("{root}/users/alice"));
    let mut events = cached.events();

    let other = connect(&cs).await;
    let bob = users_of(&other, &root).resolved(&["bob"]).unwrap();
    bob.set(&user("Bob")).await.unwrap();
    assert_eq!(next_event(&mut events).await, "created bob Bob");
    assert_eq!(cached.current(&["bob"]).unwrap().unwrap().stat.version, 0, "current before the event");
    bob.update(&user("Bob 2")).await.unwrap();
    assert_eq!(next_event(&mut events).await, "changed bob Bob -> Bob 2");

    // Bad data: reported, and the last good model stays.
    let bob_path = bob.path().as_path().to_owned();
    observer.set_data(&bob_path, b"{oops", None).await.unwrap();
    assert_eq!(next_event(&mut events).await, "undecodable bob");
    assert_eq!((*cached.current(&["bob"]).unwrap().unwrap().model).clone(), user("Bob 2"));

    // Nodes that hold no model, or do not fit the template, are no event: the next event is
    // the next model's.
    plant(&observer, &format!("{root}/users/empty"), b"").await;
    plant(&observer, &format!("{root}/users/alice/orders"), b"{}").await;
    plant(&observer, &format!("{root}/not-a-user"), b"{}").await;
    bob.update(&user("Bob 3")).await.unwrap();
    assert_eq!(next_event(&mut events).await, "changed bob Bob 2 -> Bob 3", "from the last good model");
    bob.delete().await.unwrap();
    assert_eq!(next_event(&mut events).await, "deleted bob Bob 3");

    let current: Vec<String> = cached.current_children().iter().map(|n| n.path.to_string()).collect();
    assert_eq!(current, [format!("{root}/users/alice")]);
    assert!(cached.current(&["empty"]).unwrap().is_none());
    assert!(cached.current_at(&format!("{root}/users/bob")).is_none());
    // Writes through the cached framework's own framework are seen too.
    cached.framework().resolved(&["dave"]).unwrap().set(&user("Dave")).await.unwrap();
    assert_eq!(next_event(&mut events).await, "created dave Dave");
    drop(cached);
    assert!(
        tokio::time::timeout(timing().wait(), events.next()).await.unwrap().is_none(),
        "ends with the cache"
    );
    zk.close().await;
    other.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_with_a_ttl_is_deleted_by_the_server_once_it_expires() {
    let options = ServerOptions::default().container_check_interval(Duration::from_millis(100));
    let server = TestingServer::with_options(options).await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let template = ZPath::parse("/sessions/{id}").unwrap();
    let spec =
        ModelSpec::builder(template, Json).ttl(Duration::from_millis(300)).parents(Parents::Persistent);
    let sessions = ModeledFramework::new(&zk, spec.build().unwrap());
    let cached = sessions.cached().await.unwrap();
    let mut events = cached.events();
    sessions.resolved(&["s1"]).unwrap().set(&user("Sam")).await.unwrap();
    assert_eq!(next_event(&mut events).await, "created s1 Sam");
    assert_eq!(next_event(&mut events).await, "deleted s1 Sam", "the server deleted it");
    assert!(sessions.resolved(&["s1"]).unwrap().read().await.unwrap().is_none());
    zk.close().await;
}

/// Issue 49, item 4: a real curator-x-async 5.9 process (Maven Central) and zkr share typed
/// models at one template both ways: each reads, caches and updates what the other wrote
/// (Curator's `JacksonModelSerializer` and zkr's `Json`), and versioned updates refuse a stale
/// version on either side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_x_async_and_zkr_share_models_both_ways_with_versions() {
    use zkr_testing::peers::CuratorTool;
    let (zk, _, cs) = connected().await;
    let root = unique_root("models-curator");
    let template = format!("{root}/people/{{id}}");
    let curator = CuratorTool::for_release("5.9.0").expect("Curator 5.9.0 from Maven Central");
    let says = |args: Vec<String>| {
        let curator = curator.clone();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            curator.spawn(&args).unwrap().next_line().await.unwrap().expect("a line from CuratorTool")
        }
    };
    let person = |name: &str, age: u32| json!({ "name": name, "age": age });
    let args = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let people = ModeledFramework::new(
        &zk,
        ModelSpec::builder(ZPath::parse(&template).unwrap(), Json).build().unwrap(),
    );
    let cached = people.cached().await.unwrap();
    let mut events = cached.events();

    // Curator writes alice; zkr reads her at her version, and its cache sees her come.
    let set = says(args(&["modeled-set", &cs, &template, "alice", "Alice", "30"])).await;
    assert_eq!(set, format!("SET {root}/people/alice"));
    let alice = people.resolved(&["alice"]).unwrap();
    let read = alice.read_versioned().await.unwrap().expect("Curator's model");
    assert_eq!((read.model, read.version), (person("Alice", 30), 0));
    let seen = next_event(&mut events).await;
    assert_eq!(seen, "created alice Alice");

    // zkr updates at version 0; Curator reads zkr's model at version 1.
    assert_eq!(alice.update_versioned(&person("Alice", 31), 0).await.unwrap().version, 1);
    let read = says(args(&["modeled-read", &cs, &template, "alice"])).await;
    assert_eq!(read, "MODEL name=Alice age=31 version=1");
    // Curator's versioned update at a stale version is refused, at the current one it lands;
    // then zkr's at the stale one is refused in turn.
    let stale = says(args(&["modeled-update", &cs, &template, "alice", "Alice", "32", "0"])).await;
    assert_eq!(stale, "BAD_VERSION");
    let landed = says(args(&["modeled-update", &cs, &template, "alice", "Alice", "32", "1"])).await;
    assert_eq!(landed, "UPDATED version=2");
    let refused = alice.update_versioned(&person("Alice", 99), 1).await;
    assert!(matches!(refused, Err(ModelError::VersionConflict { .. })), "{refused:?}");
    let read = alice.read_versioned().await.unwrap().unwrap();
    assert_eq!((read.model, read.version), (person("Alice", 32), 2));

    // zkr writes bob; Curator's cache loads alice and bob, then sees zkr's update of bob.
    let bob = people.resolved(&["bob"]).unwrap();
    bob.set(&person("Bob", 40)).await.unwrap();
    let mut watching = curator.spawn(&["modeled-cached", &cs, &template]).unwrap();
    let mut loaded = Vec::new();
    loop {
        let line = watching.next_line().await.unwrap().expect("a cache event from Curator");
        if line == "INITIALIZED" {
            break;
        }
        loaded.push(line);
    }
    loaded.sort();
    assert_eq!(
        loaded,
        [
            "EVENT NODE_ADDED alice name=Alice age=32 version=2",
            "EVENT NODE_ADDED bob name=Bob age=40 version=0"
        ]
    );
    bob.update(&person("Bob", 41)).await.unwrap();
    assert_eq!(
        watching.next_line().await.unwrap().as_deref(),
        Some("EVENT NODE_UPDATED bob name=Bob age=41 version=1")
    );
}
