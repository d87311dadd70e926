//! `CuratorCache` over 1,000 nodes on a 3-server ensemble while a writer makes random creates,
//! sets and deletes, through a leader crash and through session expiries. When the writes stop,
//! the copy equals the server's tree (data and `Stat` zxids), and the events replayed from the
//! start give the same tree, each reporting a later state of its node than the one before
//! (strictly increasing `mzxid` per path: nothing reported twice, nothing reported stale).
//!
//! The writer's seed is printed (shown on failure); `ZKR_CACHE_SEED=<n>` replays one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use futures::StreamExt as _;
use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use zkr_connection::{path, ZkClient};
use zkr_integration_tests::{connect, timing, unique_root};
use zkr_recipes::cache::{CacheEvent, CacheMode, CuratorCache};
use zkr_testing::{expire_session_id, probe_session, TestingCluster};
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

/// Directories under the root, and nodes in each at the start: 20 + 20 * 50 = 1,020 nodes.
const DIRS: usize = 20;
const PER_DIR: usize = 50;
/// Names the writer picks from in each directory: more than there are at the start, so that
/// creates, sets and deletes all find something to do.
const NAMES: usize = 75;
/// Writers, each with its own connection and random sequence: writes in flight together make
/// bursts of several events, and some of them are cut short by the faults.
const LANES: u64 = 8;
/// Writes between two phases of a test (each phase a second or less).
const PHASE: u64 = 400;
/// Leaders killed (and restarted) in the leader test, one after the other.
const LEADER_CRASHES: usize = 1;
/// Session expiries in the expiry test.
const EXPIRIES: usize = 4;

/// A node as compared: data, `czxid`, `mzxid`.
type Node = (Vec<u8>, i64, i64);
type Tree = BTreeMap<String, Node>;

fn persistent() -> zookeeper_client::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

fn seed() -> u64 {
    zkr_integration_tests::trace_from_env();
    let seed = std::env::var("ZKR_CACHE_SEED").ok().and_then(|s| s.parse().ok());
    let seed = seed.unwrap_or_else(|| rand::rng().random());
    println!("writer seed {seed} (ZKR_CACHE_SEED={seed} replays it)");
    seed
}

/// A raw client of the ensemble, retried while no server answers.
async fn raw(connect_string: &str) -> Client {
    let deadline = Instant::now() + timing().wait();
    loop {
        match Client::connect(connect_string).await {
            Ok(client) => return client,
            Err(e) => assert!(Instant::now() < deadline, "no raw client in time: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The root, `DIRS` directories and `PER_DIR` nodes in each, every level pipelined.
async fn populate(client: &Client, root: &str) {
    client.create(root, b"", &persistent()).await.unwrap();
    let dirs: Vec<String> = (0..DIRS).map(|d| format!("{root}/d{d}")).collect();
    for reply in join_all(dirs.iter().map(|d| client.create(d, b"", &persistent()))).await {
        reply.unwrap();
    }
    let nodes: Vec<String> =
        dirs.iter().flat_map(|d| (0..PER_DIR).map(move |n| format!("{d}/k{n}"))).collect();
    for reply in join_all(nodes.iter().map(|n| client.create(n, b"0", &persistent()))).await {
        reply.unwrap();
    }
}

/// The server's tree under `root` as `client`'s server has it after a `sync` (so no older than
/// any write acknowledged before the call), read level by level.
async fn server_tree(client: &Client, root: &str) -> Tree {
    client.sync(root).await.unwrap();
    let mut tree = Tree::new();
    let mut level = vec![root.to_owned()];
    while !level.is_empty() {
        let data = join_all(level.iter().map(|p| client.get_data(p)));
        let children = join_all(level.iter().map(|p| client.list_children(p)));
        let (data, children) = futures::join!(data, children);
        let mut next = Vec::new();
        for ((node, data), children) in level.iter().zip(data).zip(children) {
            let (Ok((data, stat)), Ok(children)) = (data, children) else { panic!("{node} went") };
            tree.insert(node.clone(), (data, stat.czxid, stat.mzxid));
            next.extend(children.iter().map(|c| path::join(node, c)));
        }
        level = next;
    }
    tree
}

fn cache_tree(cache: &CuratorCache) -> Tree {
    cache
        .snapshot()
        .iter()
        .map(|(p, n)| (p.to_owned(), (n.data().to_vec(), n.stat().czxid, n.stat().mzxid)))
        .collect()
}

/// `LANES` writers of random creates, sets and deletes under the directories until stopped;
/// `done` counts the writes ZooKeeper acknowledged.
struct Writer {
    stop: Arc<AtomicBool>,
    done: watch::Receiver<u64>,
    task: JoinHandle<()>,
}

impl Writer {
    fn spawn(connect_string: String, root: String, seed: u64) -> Writer {
        let stop = Arc::new(AtomicBool::new(false));
        let (count, done) = watch::channel(0);
        let count = Arc::new(count);
        let lanes: Vec<_> = (0..LANES)
            .map(|lane| {
                let (connect_string, root, stop, count) =
                    (connect_string.clone(), root.clone(), stop.clone(), count.clone());
                tokio::spawn(write_randomly(connect_string, root, seed.wrapping_add(lane), stop, count))
            })
            .collect();
        let task = tokio::spawn(async move {
            for lane in lanes {
                lane.await.unwrap();
            }
        });
        Writer { stop, done, task }
    }

    /// Waits until `more` further writes have been acknowledged.
    async fn progress(&mut self, more: u64) {
        let target = *self.done.borrow() + more;
        let reached = tokio::time::timeout(timing().wait(), self.done.wait_for(|n| *n >= target));
        assert!(matches!(reached.await, Ok(Ok(_))), "the writer made no progress in time");
    }

    async fn finish(self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.unwrap();
        let done = *self.done.borrow();
        done
    }
}

async fn write_randomly(
    connect_string: String,
    root: String,
    seed: u64,
    stop: Arc<AtomicBool>,
    count: Arc<watch::Sender<u64>>,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut client = raw(&connect_string).await;
    while !stop.load(Ordering::SeqCst) {
        let node = format!("{root}/d{}/k{}", rng.random_range(0..DIRS), rng.random_range(0..NAMES));
        let data = rng.random::<u32>().to_be_bytes();
        let reply = match rng.random_range(0..3) {
            0 => client.create(&node, &data, &persistent()).await.map(drop),
            1 => client.set_data(&node, &data, None).await.map(drop),
            _ => client.delete(&node, None).await,
        };
        match reply {
            Ok(()) => count.send_modify(|n| *n += 1),
            Err(ZkError::NoNode | ZkError::NodeExists) => {}
            Err(ZkError::SessionExpired | ZkError::ClientClosed) => client = raw(&connect_string).await,
            // Connection loss while the ensemble elects: pace the retries.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// The ensemble, the populated root, and a cache of it with every event from the start.
struct Fixture {
    cluster: TestingCluster,
    root: String,
    zk: ZkClient,
    cache: CuratorCache,
    events: JoinHandle<Vec<CacheEvent>>,
    started: Instant,
}

impl Fixture {
    async fn start(name: &str) -> Fixture {
        let started = Instant::now();
        let cluster = TestingCluster::start(3).await.unwrap();
        let root = unique_root(name);
        populate(&raw(&cluster.connect_string()).await, &root).await;
        let zk = connect(&cluster.connect_string()).await;
        // Room for every event of the test: a subscriber that lags would miss some.
        let (cache, stream) = CuratorCache::builder(&zk, &root)
            .mode(CacheMode::Tree { max_depth: None })
            .event_capacity(1 << 17)
            .start_with_events()
            .await
            .unwrap();
        let events = tokio::spawn(stream.collect::<Vec<_>>());
        println!(
            "{name}: cluster and {} nodes ready after {:?}",
            1 + DIRS * (1 + PER_DIR),
            started.elapsed()
        );
        Fixture { cluster, root, zk, cache, events, started }
    }

    /// Expires the cache's session on the ensemble and waits for the manager's next one.
    /// (Not `expire_session`, which waits for the client to see `Expired`: on a loaded machine
    /// the manager may give the session up first, suspended for half its timeout, and close it.)
    async fn expire(&self) {
        let session = self.zk.session().await.unwrap();
        println!("expiring session {:#x} at {:?}", session.id(), self.started.elapsed());
        let (id, timeout) = (session.id(), session.client().session_timeout());
        expire_session_id(id, timeout, &self.cluster.connect_string()).await.unwrap();
        let mut sessions = self.zk.session_watch();
        let renewed =
            sessions.wait_for(|s| s.as_ref().is_some_and(|s| s.generation() > session.generation()));
        tokio::pin!(renewed);
        let waited = Instant::now();
        // The handle may be left serving the closed session (`zkr_testing::probe_session`): a
        // write tells it. Said, not hidden: the line is in the test's output.
        let mut renewed_in_time = tokio::time::timeout(timeout * 2, &mut renewed).await.is_ok();
        if !renewed_in_time {
            let answer = probe_session(session.client().raw()).await;
            println!(
                "no new session after {:?}: a write on the old one answered {answer:?}",
                waited.elapsed()
            );
            renewed_in_time = tokio::time::timeout(timing().wait(), renewed).await.is_ok();
        }
        let renewed = renewed_in_time;
        // What the manager and the old session's handle were doing, should it fail again.
        let old = session.client().raw().state();
        assert!(
            renewed,
            "no new session in time; the old one's handle {old:?}, the manager {:?}",
            self.zk.status()
        );
        println!("a new session after {:?}", waited.elapsed());
    }

    fn writer(&self, seed: u64) -> Writer {
        Writer::spawn(self.cluster.connect_string(), self.root.clone(), seed)
    }

    /// Waits until the copy equals the server's tree, then stops the cache and checks its
    /// events: replayed from an empty tree they give the same tree, with no repeat.
    async fn converge_and_replay(self, writes: u64, seed: u64) {
        let expected = server_tree(&raw(&self.cluster.connect_string()).await, &self.root).await;
        let mut snapshots = self.cache.snapshots();
        let converged = tokio::time::timeout(timing().wait(), async {
            while cache_tree(&self.cache) != expected || self.cache.snapshot().is_stale() {
                snapshots.changed().await.expect("the cache runs");
            }
        });
        if converged.await.is_err() {
            let diff = differences(&cache_tree(&self.cache), &expected);
            panic!("seed {seed}: the cache did not converge in time; cache vs server: {diff:?}");
        }
        // The stream ends once every handle is gone and the engine has stopped.
        drop(self.cache);
        let events = tokio::time::timeout(timing().wait(), self.events).await.expect("the stream ends");
        let events = events.unwrap();
        let replayed = replay(&events).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        if replayed != expected {
            let diff = differences(&replayed, &expected);
            panic!("seed {seed}: the replayed events differ from the server; replayed vs server: {diff:?}");
        }
        println!(
            "{writes} writes, {} events, {} nodes at the end; {:?} in all",
            events.len(),
            expected.len(),
            self.started.elapsed()
        );
        drop(self.zk);
    }
}

/// The paths where two trees differ, with each side's node (first 10).
fn differences(left: &Tree, right: &Tree) -> Vec<(String, Option<Node>, Option<Node>)> {
    let paths: std::collections::BTreeSet<&String> = left.keys().chain(right.keys()).collect();
    paths
        .into_iter()
        .filter(|p| left.get(*p) != right.get(*p))
        .take(10)
        .map(|p| (p.clone(), left.get(p).cloned(), right.get(p).cloned()))
        .collect()
}

/// Replays `events` from an empty tree. Fails on `Lagged`, on a `Created` of a node the tree
/// has, a `Changed` or `Deleted` of one it has not (or whose `old` is not what it has), an
/// `Initialized` that is not the one after the first read, and on a node state reported that
/// is no later (`mzxid`) than one reported before for the same path.
fn replay(events: &[CacheEvent]) -> Result<Tree, String> {
    let mut tree = Tree::new();
    let mut latest: BTreeMap<&str, i64> = BTreeMap::new();
    let mut initialized = false;
    for (i, event) in events.iter().enumerate() {
        let node = |n: &zkr_recipes::cache::CachedNode| (n.data().to_vec(), n.stat().czxid, n.stat().mzxid);
        let (path, new) = match event {
            CacheEvent::Initialized if !initialized => {
                initialized = true;
                continue;
            }
            CacheEvent::Created { path, node: new } if !tree.contains_key(path) => (path, Some(new)),
            CacheEvent::Changed { path, old, new } if tree.get(path) == Some(&node(old)) => (path, Some(new)),
            CacheEvent::Deleted { path, old } if tree.get(path) == Some(&node(old)) => (path, None),
            other => return Err(format!("event {i} does not fit the replayed tree: {other:?}")),
        };
        let Some(new) = new else {
            tree.remove(path);
            continue;
        };
        if latest.get(path.as_str()).is_some_and(|m| *m >= new.stat().mzxid) {
            return Err(format!(
                "event {i} reports {path} at mzxid {} again or older: {event:?}",
                new.stat().mzxid
            ));
        }
        latest.insert(path, new.stat().mzxid);
        tree.insert(path.clone(), node(new));
    }
    if !initialized {
        return Err("no Initialized event".into());
    }
    Ok(tree)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_leader_crash_the_copy_and_the_replayed_events_equal_the_server() {
    let seed = seed();
    let fixture = Fixture::start("cache-leader").await;
    let mut writer = fixture.writer(seed);
    writer.progress(PHASE).await;
    for _ in 0..LEADER_CRASHES {
        let leader = fixture.cluster.leader().await.expect("a leader");
        fixture.cluster.kill(leader).unwrap();
        println!("killed the leader, server {leader}, at {:?}", fixture.started.elapsed());
        // The other two elect a leader and the writes go on; then the old leader comes back.
        writer.progress(PHASE).await;
        fixture.cluster.restart(leader).await.unwrap();
        writer.progress(PHASE).await;
    }
    let writes = writer.finish().await;
    fixture.converge_and_replay(writes, seed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_session_expiries_the_copy_and_the_replayed_events_equal_the_server() {
    let seed = seed();
    let fixture = Fixture::start("cache-expiry").await;
    let mut writer = fixture.writer(seed);
    for _ in 0..EXPIRIES {
        writer.progress(PHASE).await;
        fixture.expire().await;
    }
    writer.progress(PHASE).await;
    let writes = writer.finish().await;
    fixture.converge_and_replay(writes, seed).await;
}
