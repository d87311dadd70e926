//! The engine against a real server, through a proxy that can cut the connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use zkr_connection::SessionClient;
use zkr_testing::{shared_server, FaultProxy, Timing};
use zookeeper_client::{Acls, CreateMode, SessionState, WatchedEvent};

use super::*;

/// A consumer that keeps the root's children; its read can cut the connection once, after
/// the read's replies are in and before the engine looks at the watch's queue.
struct Probe {
    root: String,
    proxy: Arc<FaultProxy>,
    cut_after_read: AtomicBool,
    children: tokio::sync::watch::Sender<Vec<String>>,
}

impl Probe {
    async fn list(&self, client: &SessionClient) -> ZkResult<Vec<String>> {
        let mut children = client.list_children(&self.root).await?;
        children.sort();
        Ok(children)
    }
}

impl Consumer for Probe {
    type Read = Vec<String>;

    async fn read(&self, session: &zkr_connection::Session) -> ZkResult<Vec<String>> {
        let client = session.client();
        let children = self.list(client).await?;
        if self.cut_after_read.swap(false, Ordering::SeqCst) {
            // The watch is set and the read done on this connection: cut it, and return once
            // the client is connected again, with Disconnected and SyncConnected queued on the
            // watch.
            let mut state = client.state_watcher();
            self.proxy.cut();
            while state.changed().await != SessionState::SyncConnected {}
        }
        Ok(children)
    }

    fn reset(&mut self, read: Vec<String>) {
        self.children.send_replace(read);
    }

    async fn apply(&mut self, client: &SessionClient, _burst: Vec<WatchedEvent>) -> ZkResult<Flow> {
        let children = self.list(client).await?;
        self.children.send_replace(children);
        Ok(Flow::Continue(()))
    }
}

/// A disconnect queued on the watch while the engine read is handled as any other: the engine
/// used to take it off the queue with the events it applies on top of the read and drop it,
/// so it did not set the watch again after the reconnect (`zookeeper-client` does not) and
/// missed every change from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnect_right_after_the_read_sets_the_watch_again() {
    let server = shared_server().await.unwrap();
    let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
    let wait = Timing::from_env().wait();
    let zk = ZkClient::builder(proxy.connect_string()).session_timeout(wait).connect().await.unwrap();
    let writer = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
    let root = format!("/t-watch-cut-{}", uuid::Uuid::new_v4().simple());
    writer.create(&root, b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let (children, mut seen) = tokio::sync::watch::channel(Vec::new());
    let probe =
        Probe { root: root.clone(), proxy: proxy.clone(), cut_after_read: AtomicBool::new(true), children };
    let mut engine = Watch::new(&zk, &root, true, WatchMode::Persistent, probe);
    let first = engine.first_sync(wait).await.unwrap();
    assert!(
        !engine.consumer_mut().cut_after_read.load(Ordering::SeqCst),
        "the first read cut the connection"
    );
    let (alive, stop) = tokio::sync::watch::channel(());
    tokio::spawn(engine.run(Sessions::Follow, Some(first), handles_dropped(stop)));

    let child = format!("{root}/x");
    writer.create(&child, b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let found = tokio::time::timeout(wait, seen.wait_for(|c| c == &["x"])).await;
    assert!(found.is_ok(), "the change after the reconnect was missed");
    drop(alive);
}

/// A consumer whose first read fails with a connection loss, and whose `failed` ends the
/// session (as an expiry does) while the engine pauses: the engine then goes on with the
/// manager's current session, new by then (or, when the manager was slower than the pause,
/// follows the old one again until its end is reported).
/// It counts reads on a new session that were not told the old one ended.
struct Switcher {
    zk: ZkClient,
    expire: AtomicBool,
    last: parking_lot::Mutex<Option<u64>>,
    ended: Arc<AtomicBool>,
    untold: Arc<std::sync::atomic::AtomicUsize>,
    reads: tokio::sync::watch::Sender<u64>,
}

impl Consumer for Switcher {
    type Read = ();

    async fn read(&self, session: &zkr_connection::Session) -> ZkResult<()> {
        let generation = session.generation();
        let previous = self.last.lock().replace(generation);
        if previous.is_some_and(|g| g != generation) && !self.ended.swap(false, Ordering::SeqCst) {
            self.untold.fetch_add(1, Ordering::SeqCst);
        }
        if self.expire.load(Ordering::SeqCst) {
            return Err(zookeeper_client::Error::ConnectionLoss);
        }
        self.reads.send_replace(generation);
        Ok(())
    }

    fn reset(&mut self, _read: ()) {}

    async fn apply(&mut self, _client: &SessionClient, _burst: Vec<WatchedEvent>) -> ZkResult<Flow> {
        Ok(Flow::Continue(()))
    }

    fn session_ended(&mut self) {
        self.ended.store(true, Ordering::SeqCst);
    }

    fn failed(&mut self, _error: &zookeeper_client::Error) -> Flow {
        // The session ends while the engine pauses after the failure.
        if self.expire.swap(false, Ordering::SeqCst) {
            self.zk.inject_session_expiration();
        }
        Flow::Continue(())
    }
}

/// Issue 27 item 6: a session switch that came through the error path (the read failed, and
/// the manager replaced the session during the pause) skipped the consumer's `session_ended`
/// and the sync before the next read, so a cache was never marked stale and could read a
/// lagging follower. Each round takes one of the two ways; both must tell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_switch_after_a_failed_read_is_a_session_end() {
    let server = shared_server().await.unwrap();
    let wait = Timing::from_env().wait();
    let zk = ZkClient::builder(server.connect_string()).session_timeout(wait).connect().await.unwrap();
    let untold = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for round in 0..8 {
        let before = zk.generation();
        let (reads, mut read) = tokio::sync::watch::channel(0);
        let switcher = Switcher {
            zk: zk.clone(),
            expire: AtomicBool::new(true),
            last: parking_lot::Mutex::new(None),
            ended: Arc::new(AtomicBool::new(false)),
            untold: untold.clone(),
            reads,
        };
        let engine = Watch::new(&zk, "/", false, WatchMode::Persistent, switcher);
        let (alive, stop) = tokio::sync::watch::channel(());
        tokio::spawn(engine.run(Sessions::Follow, None, handles_dropped(stop)));
        let settled = tokio::time::timeout(wait, read.wait_for(|g| *g > before)).await;
        assert!(settled.is_ok(), "round {round}: no read on the new session");
        drop(alive);
    }
    assert_eq!(untold.load(Ordering::SeqCst), 0, "reads on a new session not told the old one ended");
}

/// A consumer whose first read on every session after another fails with a connection loss
/// (sent with the sync and the watch, as a lost connection fails them all); it sends the
/// generation of each read that succeeded.
struct Stumbler {
    fail_next: AtomicBool,
    reads: tokio::sync::watch::Sender<u64>,
}

impl Consumer for Stumbler {
    type Read = ();

    async fn read(&self, session: &zkr_connection::Session) -> ZkResult<()> {
        if self.fail_next.swap(false, Ordering::SeqCst) {
            return Err(zookeeper_client::Error::ConnectionLoss);
        }
        self.reads.send_replace(session.generation());
        Ok(())
    }

    fn reset(&mut self, _read: ()) {}

    async fn apply(&mut self, _client: &SessionClient, _burst: Vec<WatchedEvent>) -> ZkResult<Flow> {
        Ok(Flow::Continue(()))
    }

    fn session_ended(&mut self) {
        self.fail_next.store(true, Ordering::SeqCst);
    }
}

/// The `sync` requests sent so far on each path, counted from the `zk.request` spans of
/// `SessionClient` by a process-wide subscriber (a subscriber scoped to the engine's task misses
/// the spans of a callsite another test's thread registered first).
fn syncs_on(path: &str) -> usize {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        use tracing_subscriber::layer::SubscriberExt as _;
        // Nothing else in this process sets one; if something did, the count stays 0 and the
        // test fails.
        let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Syncs));
    });
    SYNCS.lock().get(path).copied().unwrap_or(0)
}

static SYNCS: std::sync::LazyLock<parking_lot::Mutex<std::collections::HashMap<String, usize>>> =
    std::sync::LazyLock::new(Default::default);

/// Counts `sync` requests by path into [`SYNCS`].
struct Syncs;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Syncs {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        #[derive(Default)]
        struct Fields(Option<String>, Option<String>);
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                match field.name() {
                    "otel.name" => self.0 = Some(value.to_owned()),
                    "zk.path" => self.1 = Some(value.to_owned()),
                    _ => {}
                }
            }
            fn record_debug(&mut self, _field: &tracing::field::Field, _value: &dyn std::fmt::Debug) {}
        }
        if attrs.metadata().name() != "zk.request" {
            return;
        }
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let (Some("sync"), Some(path)) = (fields.0.as_deref(), fields.1) {
            *SYNCS.lock().entry(path).or_default() += 1;
        }
    }
}

/// The model's `CacheSyncOnlyOnce` (`crates/zkr-model`, `recipes/cache.rs`): on a session
/// after another, a subscription that failed was tried again without the sync, so a lost
/// connection before the sync's reply let a server behind the copy answer the read (the copy
/// went back). Every subscription on the new session until one succeeds syncs first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_tried_again_on_a_new_session_syncs_first() {
    let server = shared_server().await.unwrap();
    let wait = Timing::from_env().wait();
    let zk = ZkClient::builder(server.connect_string()).session_timeout(wait).connect().await.unwrap();
    let root = format!("/t-watch-resync-{}", uuid::Uuid::new_v4().simple());
    zk.create(&root, b"", CreateMode::Persistent).await.unwrap();
    assert_eq!(syncs_on(&root), 0);
    let (reads, mut read) = tokio::sync::watch::channel(0);
    let engine =
        Watch::new(&zk, &root, false, WatchMode::Persistent, Stumbler { fail_next: false.into(), reads });
    let (alive, stop) = tokio::sync::watch::channel(());
    tokio::spawn(engine.run(Sessions::Follow, None, handles_dropped(stop)));
    let first = *tokio::time::timeout(wait, read.wait_for(|g| *g > 0)).await.expect("a first read").unwrap();
    assert_eq!(syncs_on(&root), 0, "a sync on the first session");

    zk.inject_session_expiration();
    let next = tokio::time::timeout(wait, read.wait_for(|g| *g > first)).await;
    assert!(next.is_ok(), "no read on the next session");
    assert_eq!(syncs_on(&root), 2, "the failed subscription and the next each sync first");
    drop(alive);
    zk.delete(&root, None).await.unwrap();
}
