//! Issue 49, item 1: zkr's spans in OpenTelemetry. A lock cycle (acquire, hold, release), a
//! lock-safe queue's take and ack, a cache's load and a leader latch's join go through `zkr_connection::otel::layer`
//! into the OpenTelemetry SDK's in-memory exporter; each test checks the span tree it exported:
//! one trace under the caller's span, a span per recipe operation with its ZooKeeper requests
//! under it, and the attributes named in docs/observability.md.
//!
//! Each test runs on tokio's current-thread runtime with the subscriber set for that thread,
//! so it sees every span of its own and none of another test's.

use std::collections::HashMap;

use opentelemetry::trace::{SpanId, SpanKind, Status, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt as _;
use zkr_connection::ZkClient;
use zkr_integration_tests::{connect, unique_root};
use zkr_recipes::cache::CuratorCache;
use zkr_recipes::leader::LeaderLatch;
use zkr_recipes::locks::InterProcessMutex;
use zkr_recipes::queues::{DistributedQueue, Utf8};
use zkr_testing::shared_server;

/// What the exporter received, by span id.
struct Exported(HashMap<SpanId, SpanData>);

impl Exported {
    /// Runs `work` in a span named `root` with zkr's layer on this thread, and returns what was
    /// exported once the provider flushed.
    async fn of<F: std::future::Future<Output = ()>>(work: impl FnOnce() -> F) -> Exported {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
        let subscriber =
            tracing_subscriber::registry().with(zkr_connection::otel::layer(provider.tracer("zkr-test")));
        let default = tracing::subscriber::set_default(subscriber);
        work().instrument(tracing::info_span!("root")).await;
        drop(default);
        provider.force_flush().unwrap();
        let spans = exporter.get_finished_spans().unwrap();
        Exported(spans.into_iter().map(|s| (s.span_context.span_id(), s)).collect())
    }

    /// The one span named `name`.
    fn one(&self, name: &str) -> &SpanData {
        let found: Vec<_> = self.0.values().filter(|s| s.name == name).collect();
        assert_eq!(found.len(), 1, "spans named {name}: {:?}", self.names());
        found[0]
    }

    /// Every span's name, sorted.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.0.values().map(|s| s.name.to_string()).collect();
        names.sort();
        names
    }

    /// `span`'s ancestors, nearest first.
    fn ancestors(&self, span: &SpanData) -> Vec<&SpanData> {
        let mut chain = Vec::new();
        let mut parent = span.parent_span_id;
        while let Some(up) = self.0.get(&parent) {
            chain.push(up);
            parent = up.parent_span_id;
        }
        chain
    }

    /// The request spans (`db.operation.name` = `op`) whose nearest recipe operation (one of
    /// [`OPERATIONS`], or the caller's `root`) is `operation`.
    fn requests_under(&self, operation: &SpanData, op: &str) -> Vec<&SpanData> {
        self.0
            .values()
            .filter(|s| attribute(s, "db.operation.name").as_deref() == Some(op))
            .filter(|s| {
                let nearest = self.ancestors(s).into_iter().find(|a| OPERATIONS.contains(&a.name.as_ref()));
                nearest.is_some_and(|n| n.span_context.span_id() == operation.span_context.span_id())
            })
            .collect()
    }

    /// Checks that every recipe operation's span, and every span under one, is in `root`'s
    /// trace and under it. (A cache's background reads after its load are under its `watch`
    /// span, open while the cache lives, wherever the cache was made.)
    fn all_under_root(&self) {
        let root = self.one("root");
        let operation = |s: &SpanData| OPERATIONS.contains(&s.name.as_ref());
        for span in self.0.values().filter(|s| operation(s) || self.ancestors(s).into_iter().any(&operation))
        {
            assert_eq!(
                span.span_context.trace_id(),
                root.span_context.trace_id(),
                "{} in another trace",
                span.name
            );
            let top = self.ancestors(span).last().copied().unwrap_or(span);
            assert_eq!(top.name, "root", "{} is not under the caller's span", span.name);
        }
    }
}

/// The spans of recipe operations, and the caller's.
const OPERATIONS: [&str; 8] = [
    "root",
    "lock.acquire",
    "lock.hold",
    "lock.release",
    "queue.take",
    "queue.ack",
    "cache.load",
    "leader.elect",
];

/// The string form of `span`'s attribute `key`.
fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| match &kv.value {
        Value::String(s) => s.to_string(),
        other => other.to_string(),
    })
}

/// Asserts `span`'s attribute `key` is `value`.
fn assert_attribute(span: &SpanData, key: &str, value: &str) {
    assert_eq!(attribute(span, key).as_deref(), Some(value), "{}'s {key}: {:?}", span.name, span.attributes);
}

/// Asserts the request span `request` is a client span of ZooKeeper on `session`.
fn assert_request(request: &SpanData, session: &str) {
    assert_eq!(request.span_kind, SpanKind::Client, "{}", request.name);
    assert_attribute(request, "db.system.name", "zookeeper");
    assert_attribute(request, "zk.session_id", session);
    assert_eq!(request.status, Status::Unset, "{}: {:?}", request.name, request.status);
}

async fn session_id(zk: &ZkClient) -> String {
    format!("{:#x}", zk.session().await.unwrap().id())
}

#[tokio::test]
async fn a_lock_cycle_is_one_trace_with_its_requests_under_each_operation() {
    let zk = connect(&shared_server().await.unwrap().connect_string()).await;
    let session = session_id(&zk).await;
    let path = format!("{}/lock", unique_root("traces"));
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let mut node = String::new();
    let spans = Exported::of(|| async {
        let guard = mutex.acquire().await.unwrap();
        node = guard.node_path().to_owned();
        guard.release().await.unwrap();
    })
    .await;
    spans.all_under_root();
    let (root, acquire, hold, release) =
        (spans.one("root"), spans.one("lock.acquire"), spans.one("lock.hold"), spans.one("lock.release"));

    // The acquire: under the caller's span, with its create and its listing under it.
    assert_eq!(acquire.parent_span_id, root.span_context.span_id());
    assert_attribute(acquire, "zk.path", &path);
    assert_attribute(acquire, "zk.outcome", "acquired");
    assert_attribute(acquire, "zk.session_id", &session);
    assert_attribute(acquire, "zk.node", node.rsplit('/').next().unwrap());
    assert!(attribute(acquire, "zk.wait_ms").is_some() && attribute(acquire, "zk.fencing_token").is_some());
    // The lock node's create (a protected create, in its own `zk.create_protected` span), and
    // its parents'.
    let creates = spans.requests_under(acquire, "create");
    // Sent before its parents were there (`no_node`), then made.
    let made = |c: &&&SpanData| attribute(c, "db.response.status_code").is_none();
    let ours: Vec<_> = creates
        .iter()
        .filter(|c| attribute(c, "zk.path").is_some_and(|p| p.contains("-lock-")))
        .filter(made)
        .collect();
    assert_eq!(ours.len(), 1, "the acquire's creates: {:?}", spans.names());
    assert_request(ours[0], &session);
    assert!(attribute(ours[0], "zk.path").is_some_and(|p| p.starts_with(&format!("{path}/"))));
    assert!(!spans.requests_under(acquire, "get_children").is_empty(), "no listing under the acquire");

    // The hold: beside the acquire, linked to it, from the grant to the release.
    assert_eq!(hold.parent_span_id, root.span_context.span_id());
    assert!(hold.links.links.iter().any(|l| l.span_context.span_id() == acquire.span_context.span_id()));
    assert_attribute(hold, "zk.path", &node);
    assert!(hold.start_time >= acquire.start_time && hold.end_time >= release.end_time);

    // The release: under the hold, its delete of our node under it.
    assert_eq!(release.parent_span_id, hold.span_context.span_id());
    assert_attribute(release, "zk.outcome", "deleted");
    let deletes = spans.requests_under(release, "delete");
    assert_eq!(deletes.len(), 1, "the release's deletes: {:?}", spans.names());
    assert_request(deletes[0], &session);
    assert_attribute(deletes[0], "zk.path", &node);
    zk.close().await;
}

#[tokio::test]
async fn a_take_an_ack_and_a_cache_load_each_have_their_span() {
    let zk = connect(&shared_server().await.unwrap().connect_string()).await;
    let session = session_id(&zk).await;
    let root = unique_root("traces-queue");
    let queue = DistributedQueue::builder(&zk, &format!("{root}/q"), Utf8)
        .lock_path(format!("{root}/locks"))
        .build()
        .unwrap();
    queue.put(&"job".to_owned()).await.unwrap();
    let spans = Exported::of(|| async {
        let item = queue.take().await.unwrap();
        item.ack().await.unwrap();
        let cache = CuratorCache::builder(&zk, &format!("{root}/q")).start().await.unwrap();
        drop(cache);
    })
    .await;
    spans.all_under_root();
    let (take, ack) = (spans.one("queue.take"), spans.one("queue.ack"));
    // The queue's own caches (its items and their locks) load under the take.
    let loads: Vec<_> = spans.0.values().filter(|s| s.name == "cache.load").collect();
    assert_eq!(loads.iter().filter(|l| l.parent_span_id == take.span_context.span_id()).count(), 2);
    let ours: Vec<_> =
        loads.iter().filter(|l| l.parent_span_id == spans.one("root").span_context.span_id()).collect();
    assert_eq!(ours.len(), 1, "the cache's load");
    let load = ours[0];
    assert_attribute(take, "zk.outcome", "taken");
    assert_attribute(take, "zk.path", &format!("{root}/q"));
    let item = attribute(take, "zk.node").expect("the item taken");
    assert_eq!(spans.requests_under(take, "create").len(), 1, "the item's lock: {:?}", spans.names());
    assert_attribute(ack, "zk.outcome", "acked");
    assert_attribute(ack, "zk.path", &format!("{root}/q/{item}"));
    let multis = spans.requests_under(ack, "multi");
    assert_eq!(multis.len(), 1, "the ack's transaction: {:?}", spans.names());
    assert_request(multis[0], &session);
    assert_attribute(load, "zk.outcome", "loaded");
    assert!(
        !spans.requests_under(load, "get_children").is_empty()
            || !spans.requests_under(load, "add_watch").is_empty()
    );
    zk.close().await;
}

/// A `LeaderLatch` joins in a task of its own: each `leader.elect` starts a trace, with the
/// latch node's `lock.acquire` and its requests under it.
#[tokio::test]
async fn a_latch_joining_is_a_leader_elect_span_with_its_acquire_under_it() {
    let zk = connect(&shared_server().await.unwrap().connect_string()).await;
    let path = format!("{}/leader", unique_root("traces-leader"));
    let spans = Exported::of(|| async {
        let latch = LeaderLatch::start(&zk, &path, "node-1").await.unwrap();
        latch.await_leadership().await.unwrap();
        latch.close().await;
    })
    .await;
    let elect = spans.one("leader.elect");
    assert_eq!(elect.parent_span_id, SpanId::INVALID, "a trace of its own");
    assert_attribute(elect, "zk.path", &path);
    assert_attribute(elect, "zk.outcome", "elected");
    let acquire = spans.one("lock.acquire");
    assert_eq!(acquire.parent_span_id, elect.span_context.span_id());
    assert!(!spans.requests_under(acquire, "get_children").is_empty(), "{:?}", spans.names());
    zk.close().await;
}
