//! The rows: one operation each, written once on zkr and once on the raw `zookeeper-client`
//! sending the same requests (listed in `REQUESTS`, checked by `--requests`).

use std::time::Duration;

use anyhow::{ensure, Context};
use tokio::sync::mpsc;
use zkr_connection::retry::RetryNTimes;
use zkr_connection::ZkClient;
use zkr_recipes::cache::{CacheEvent, CuratorCache};
use zkr_recipes::config::{ConfigWatcher, Json};
use zkr_recipes::counters::DistributedAtomicLong;
use zkr_recipes::locks::InterProcessMutex;
use zkr_recipes::queues::{DistributedQueue, Utf8};
use zookeeper_client::{Acls, AddWatchMode, Client, CreateMode, EventType, PersistentWatcher};

/// The rows, in the order of the table.
pub const ROWS: [&str; 5] = ["lock", "cache", "config", "queue", "counter"];

/// What one operation of each row is, and the requests both sides send for it.
pub const REQUESTS: [(&str, &str, &str); 5] = [
    (
        "lock",
        "an uncontended `InterProcessMutex` acquire + release",
        "create (ephemeral sequential), delete; both sides hold a persistent recursive watch on the lock directory (set once) and read its 2 notifications",
    ),
    (
        "cache",
        "a data change applied by a `CuratorCache` of the node's parent",
        "(the writer's setData, not counted); getData on the persistent recursive watch's event",
    ),
    (
        "config",
        "a change delivered by a `ConfigWatcher` of one node",
        "(the writer's setData, not counted); getData on the persistent watch's event",
    ),
    (
        "queue",
        "a `DistributedQueue` put, then take + ack",
        "create (persistent sequential), getData on the created event, delete, getData on the deleted event (NoNode; a persistent recursive watch on the queue, set once)",
    ),
    ("counter", "a `DistributedAtomicLong` increment", "getData; setData (versioned)"),
];

/// One side of a row, set up, then run `ops` times by [`Side::op`].
pub enum Side {
    ZkrLock(InterProcessMutex),
    RawLock(Client, PersistentWatcher, String),
    ZkrCounter(DistributedAtomicLong),
    RawCounter(Client, String),
    ZkrCache(CuratorCache, futures::stream::BoxStream<'static, CacheEvent>, Writer, String),
    ZkrConfig(ConfigWatcher<u64>, Snapshots, Writer),
    /// The raw cache and config rows: a persistent watch, a read on each change.
    RawWatch(Client, PersistentWatcher, Writer, String),
    ZkrQueue(DistributedQueue<String>),
    RawQueue(Client, PersistentWatcher, String),
}

/// A raw client on a thread of its own: its work is not counted with the measured thread's.
type Snapshots = tokio::sync::watch::Receiver<std::sync::Arc<zkr_recipes::config::ConfigSnapshot<u64>>>;

pub struct Writer {
    tx: mpsc::UnboundedSender<(String, Vec<u8>)>,
}

impl Writer {
    fn start(cs: &str) -> anyhow::Result<Self> {
        let (tx, mut rx) = mpsc::unbounded_channel::<(String, Vec<u8>)>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let cs = cs.to_string();
        std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async move {
                let client = match Client::connect(&cs).await {
                    Ok(client) => client,
                    Err(e) => return drop(ready_tx.send(Err(e.to_string()))),
                };
                let _ = ready_tx.send(Ok(()));
                while let Some((path, data)) = rx.recv().await {
                    client.set_data(&path, &data, None).await.expect("the writer's setData");
                }
            });
        });
        ready_rx.recv()?.map_err(anyhow::Error::msg).context("the writer's connection")?;
        Ok(Writer { tx })
    }

    fn set(&self, path: &str, value: u64) -> anyhow::Result<()> {
        self.tx.send((path.to_string(), value.to_string().into_bytes())).context("the writer stopped")
    }
}

fn value(data: &[u8]) -> Option<u64> {
    std::str::from_utf8(data).ok()?.parse().ok()
}

/// Creates `path` (persistent) with `data` unless it exists.
async fn ensure(client: &Client, path: &str, data: &[u8]) -> anyhow::Result<()> {
    match client.create(path, data, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await {
        Ok(_) | Err(zookeeper_client::Error::NodeExists) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating {path}")),
    }
}

impl Side {
    /// Sets up `row` on zkr (`zkr`) or the raw client under the fresh node `root`.
    pub async fn open(
        row: &str,
        zkr: bool,
        cs: &str,
        zk: &ZkClient,
        raw: &Client,
        root: &str,
    ) -> anyhow::Result<Self> {
        ensure(raw, root, b"").await?;
        let node = format!("{root}/node");
        Ok(match (row, zkr) {
            ("lock", true) => Side::ZkrLock(InterProcessMutex::new(zk, root)?),
            ("lock", false) => {
                let watcher = raw.watch(root, AddWatchMode::PersistentRecursive).await?;
                Side::RawLock(raw.clone(), watcher, root.to_string())
            }
            ("counter", true) => {
                Side::ZkrCounter(DistributedAtomicLong::new(zk, &node, RetryNTimes::new(0, Duration::ZERO))?)
            }
            ("counter", false) => {
                ensure(raw, &node, &0i64.to_be_bytes()).await?;
                Side::RawCounter(raw.clone(), node)
            }
            ("cache", true) => {
                ensure(raw, &node, b"0").await?;
                let cache = CuratorCache::builder(zk, root).start().await?;
                let events = Box::pin(cache.events());
                Side::ZkrCache(cache, events, Writer::start(cs)?, node)
            }
            ("cache", false) => {
                ensure(raw, &node, b"0").await?;
                let watcher = raw.watch(root, AddWatchMode::PersistentRecursive).await?;
                Side::RawWatch(raw.clone(), watcher, Writer::start(cs)?, node)
            }
            ("config", true) => {
                ensure(raw, &node, b"0").await?;
                let watcher = ConfigWatcher::<u64>::builder(zk, &node, Json).start().await?;
                let snapshots = watcher.snapshots();
                Side::ZkrConfig(watcher, snapshots, Writer::start(cs)?)
            }
            ("config", false) => {
                ensure(raw, &node, b"0").await?;
                let watcher = raw.watch(&node, AddWatchMode::Persistent).await?;
                Side::RawWatch(raw.clone(), watcher, Writer::start(cs)?, node)
            }
            ("queue", true) => Side::ZkrQueue(DistributedQueue::builder(zk, root, Utf8).build()?),
            ("queue", false) => {
                let watcher = raw.watch(root, AddWatchMode::PersistentRecursive).await?;
                Side::RawQueue(raw.clone(), watcher, root.to_string())
            }
            (other, _) => anyhow::bail!("unknown row {other}: one of {}", ROWS.join(", ")),
        })
    }

    /// One operation; `i` numbers it (the value written where there is one).
    pub async fn op(&mut self, i: u64) -> anyhow::Result<()> {
        match self {
            Side::ZkrLock(mutex) => mutex.acquire().await?.release().await?,
            Side::RawLock(client, watcher, root) => raw_lock_cycle(client, watcher, root).await?,
            Side::ZkrCounter(counter) => ensure!(counter.increment().await?.succeeded, "a lost race"),
            Side::RawCounter(client, node) => {
                let (data, stat) = client.get_data(node).await?;
                let n = i64::from_be_bytes(data.as_slice().try_into()?);
                client.set_data(node, &(n + 1).to_be_bytes(), Some(stat.version)).await?;
            }
            Side::ZkrCache(_cache, events, writer, node) => {
                writer.set(node, i)?;
                use futures::StreamExt as _;
                while let Some(event) = events.next().await {
                    if let CacheEvent::Changed { new, .. } = event {
                        if value(new.data()) == Some(i) {
                            return Ok(());
                        }
                    }
                }
                anyhow::bail!("the cache's events ended");
            }
            Side::RawWatch(client, watcher, writer, node) => {
                writer.set(node, i)?;
                loop {
                    let event = watcher.changed().await;
                    if event.event_type == EventType::NodeDataChanged {
                        let (data, _) = client.get_data(&event.path).await?;
                        if value(&data) == Some(i) {
                            return Ok(());
                        }
                    }
                }
            }
            Side::ZkrConfig(watcher, snapshots, writer) => {
                writer.set(watcher.path(), i)?;
                loop {
                    if snapshots.borrow_and_update().get("").map(|v| *v.value) == Some(i) {
                        return Ok(());
                    }
                    snapshots.changed().await?;
                }
            }
            Side::ZkrQueue(queue) => {
                queue.put(&format!("item-{i:05}")).await?;
                queue.take().await?.ack().await?;
            }
            Side::RawQueue(client, watcher, root) => raw_queue_cycle(client, watcher, root, i).await?,
        }
        Ok(())
    }
}

/// The lock's requests as zkr sends them for a lock nobody else holds: the create, then the
/// delete; zkr learns that nobody is ahead from its watch on the lock directory, whose two
/// notifications per cycle the raw side reads as well.
async fn raw_lock_cycle(client: &Client, watcher: &mut PersistentWatcher, root: &str) -> anyhow::Result<()> {
    let prefix = format!("{root}/_c_00000000-0000-0000-0000-000000000000-lock-");
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (_, sequence) = client.create(&prefix, b"", &options).await?;
    client.delete(&format!("{prefix}{sequence}"), None).await?;
    for expected in [EventType::NodeCreated, EventType::NodeDeleted] {
        let event = watcher.changed().await;
        ensure!(event.event_type == expected, "{event:?} instead of {expected:?}");
    }
    Ok(())
}

/// The queue's requests as zkr sends them: the put's create, the item read on the watch's
/// event, its delete, and on the delete's event the cache's read of it (`NoNode`).
async fn raw_queue_cycle(
    client: &Client,
    watcher: &mut PersistentWatcher,
    root: &str,
    i: u64,
) -> anyhow::Result<()> {
    let options = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    client.create(&format!("{root}/queue-"), format!("item-{i:05}").as_bytes(), &options).await?;
    loop {
        let event = watcher.changed().await;
        if event.event_type == EventType::NodeCreated {
            let (data, _) = client.get_data(&event.path).await?;
            ensure!(data == format!("item-{i:05}").into_bytes(), "another item");
            client.delete(&event.path, None).await?;
            // The cache reads a node on its delete event too (see zkr_recipes' cache tracker).
            loop {
                let event = watcher.changed().await;
                if event.event_type == EventType::NodeDeleted {
                    let gone = client.get_data(&event.path).await;
                    ensure!(matches!(gone, Err(zookeeper_client::Error::NoNode)), "{gone:?}");
                    return Ok(());
                }
            }
        }
    }
}
