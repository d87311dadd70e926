//! The engine against a real server, through a proxy that can cut the connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use zkr_testing::{shared_server, FaultProxy, Timing};
use zookeeper_client::{Acls, Client, CreateMode, SessionState, WatchedEvent};

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
    async fn list(&self, client: &Client) -> ZkResult<Vec<String>> {
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

    async fn apply(&mut self, client: &Client, _burst: Vec<WatchedEvent>) -> ZkResult<Flow> {
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
    let writer = Client::connect(&server.connect_string()).await.unwrap();
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
