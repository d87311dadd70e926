//! The libraries the benchmark compares ([`Library`] names each in the tables and the `RATIOS`
//! lines), the one abstraction of the Rust ones ([`RustLock`] on a [`Connection`]: zkr,
//! `zookeeper-client`, the floor; Curator runs as a peer JVM), and a measurement of a Rust
//! library under a [`Load`] ([`measure_lock`]).
//!
//! `zookeeper-client`'s lock is released by deleting its node explicitly and then forgetting the
//! `LockClient`: dropping it would send a second (failing) delete in the background each cycle.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::task::JoinSet;
use zkr_benches::{ensure_path, run_loop, Latencies, Measurement, Span, Window};
use zkr_connection::ZkClient;
use zkr_recipes::locks::{
    InterProcessMutex, InterProcessMutexGuard, LockInternals, StandardLockInternalsDriver,
};
use zookeeper_client::{Acls, Client, CreateMode, CreateOptions, LockClient, LockOptions, LockPrefix};

use crate::scenarios::{limit_for, measure, Job};
use crate::{LOCK_NAME, SESSION_TIMEOUT};

/// A library in the benchmark's tables, in their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    Zkr,
    /// zkr's mutex released by dropping the guard: the delete goes on in the background.
    ZkrDrop,
    /// zkr's mutex with the prompt hand-over (`LockInternals::prompt_hand_over`).
    ZkrPrompt,
    Curator,
    ZookeeperClient,
    /// Not a lock: an ephemeral sequential create and its delete.
    Floor,
    /// Not a lock: the same, the delete sent ahead of the next create.
    FloorPipelined,
}

impl Library {
    /// Its label in the tables and on stderr.
    pub fn label(self) -> &'static str {
        self.names().0
    }

    /// Its name in lock paths and in a waiters child's arguments.
    pub fn name(self) -> &'static str {
        self.names().1
    }

    /// Its name in the `RATIOS` lines.
    pub fn ratio_name(self) -> &'static str {
        self.names().2
    }

    fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Library::Zkr => ("zkr InterProcessMutex", "zkr", "zkr"),
            Library::ZkrDrop => ("zkr InterProcessMutex, released by drop", "zkr-drop", "zkr-drop"),
            Library::ZkrPrompt => ("zkr InterProcessMutex, prompt hand-over", "zkr-prompt", "zkr-prompt"),
            Library::Curator => ("Curator InterProcessMutex", "curator", "curator"),
            Library::ZookeeperClient => {
                ("zookeeper-client 0.11.2 Client::lock", "zkclient", "zookeeper-client")
            }
            Library::Floor => ("floor: create EPHEMERAL_SEQUENTIAL + delete", "floor", "floor"),
            Library::FloorPipelined => (
                "floor: the same, the delete sent ahead of the next create",
                "floor-pipelined",
                "floor-pipelined",
            ),
        }
    }
}

/// A ZooKeeper session of a Rust library.
pub trait Connection: Sized + Send + Sync + 'static {
    fn connect_to(cs: &str) -> impl Future<Output = anyhow::Result<Self>> + Send;
    fn disconnect(self) -> impl Future<Output = ()> + Send;
    /// A `zookeeper-client` handle on the session, to list a lock's children.
    fn poll_client(&self) -> impl Future<Output = anyhow::Result<Client>> + Send;
}

impl Connection for ZkClient {
    async fn connect_to(cs: &str) -> anyhow::Result<Self> {
        Ok(ZkClient::connect(cs).await?)
    }

    async fn disconnect(self) {
        self.close().await;
    }

    async fn poll_client(&self) -> anyhow::Result<Client> {
        Ok(self.client().await?.into_raw())
    }
}

/// With the benchmark's session timeout; dropped to close.
impl Connection for Client {
    async fn connect_to(cs: &str) -> anyhow::Result<Self> {
        Ok(Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(cs).await?)
    }

    async fn disconnect(self) {}

    async fn poll_client(&self) -> anyhow::Result<Client> {
        Ok(self.clone())
    }
}

/// A lock of a Rust library on one session; clones share it (zkr: one mutex; the others: one
/// `Client`).
pub trait RustLock: Clone + Send + Sync + 'static {
    type Session: Connection;
    /// A held lock.
    type Held<'a>: Send
    where
        Self: 'a;

    /// The lock at `path` on `session`.
    fn open(session: &Self::Session, path: &str) -> impl Future<Output = anyhow::Result<Self>> + Send;
    fn acquire(&self) -> impl Future<Output = anyhow::Result<Self::Held<'_>>> + Send;
    fn release<'a>(&'a self, held: Self::Held<'a>) -> impl Future<Output = anyhow::Result<()>> + Send;
}

/// zkr's `InterProcessMutex`; with `DROP`, released by dropping the guard (the delete goes on
/// in the background, sent before the next acquire's create).
#[derive(Debug, Clone)]
pub struct ZkrMutex<const DROP: bool = false, const PROMPT: bool = false>(InterProcessMutex);

/// [`ZkrMutex`] released by dropping the guard.
pub type ZkrMutexDrop = ZkrMutex<true>;

/// [`ZkrMutex`] with the prompt hand-over.
pub type ZkrMutexPrompt = ZkrMutex<false, true>;

impl<const DROP: bool, const PROMPT: bool> RustLock for ZkrMutex<DROP, PROMPT> {
    type Session = ZkClient;
    type Held<'a> = InterProcessMutexGuard;

    async fn open(zk: &ZkClient, path: &str) -> anyhow::Result<Self> {
        let internals = LockInternals::new(zk, path, "lock-", StandardLockInternalsDriver, 1)?;
        let internals = if PROMPT { internals.prompt_hand_over() } else { internals };
        Ok(ZkrMutex(InterProcessMutex::from_internals(internals)?))
    }

    async fn acquire(&self) -> anyhow::Result<InterProcessMutexGuard> {
        Ok(self.0.acquire().await?)
    }

    async fn release(&self, guard: InterProcessMutexGuard) -> anyhow::Result<()> {
        if DROP {
            drop(guard);
            return Ok(());
        }
        Ok(guard.release().await?)
    }
}

/// `zookeeper-client`'s `Client::lock`, Curator-style, on a shared `Client`.
#[derive(Debug, Clone)]
pub struct ClientLock {
    client: Client,
    dir: String,
    options: LockOptions<'static>,
}

impl RustLock for ClientLock {
    type Session = Client;
    type Held<'a> = LockClient<'a>;

    /// Missing parents of the lock node become containers.
    async fn open(client: &Client, dir: &str) -> anyhow::Result<Self> {
        let options = LockOptions::new(Acls::anyone_all())
            .with_ancestor_options(CreateMode::Container.with_acls(Acls::anyone_all()))?;
        Ok(ClientLock { client: client.clone(), dir: dir.to_string(), options })
    }

    async fn acquire(&self) -> anyhow::Result<LockClient<'_>> {
        let prefix = LockPrefix::new_curator(&self.dir, LOCK_NAME)?;
        Ok(self.client.lock(prefix, b"", self.options.clone()).await?)
    }

    /// Deletes the lock node and waits for the answer. The `LockClient` is then forgotten:
    /// dropping it would send a second delete in the background (a failing request the server
    /// still logs). Forgetting leaks its path string, a few dozen bytes per cycle.
    async fn release<'a>(&'a self, lock: LockClient<'a>) -> anyhow::Result<()> {
        self.client.delete(lock.lock_path(), None).await?;
        std::mem::forget(lock);
        Ok(())
    }
}

/// The floor: an ephemeral sequential create and its delete, each awaited, on one `Client`.
/// With `PIPELINED`, the delete is sent and left unanswered; the next create is sent behind it,
/// and then both replies are awaited: the least a lock released by dropping its guard can cost.
#[derive(Clone)]
pub struct Floor<const PIPELINED: bool = false> {
    client: Client,
    prefix: String,
    options: CreateOptions<'static>,
    /// The delete sent by the last release, while `PIPELINED`.
    pending: Arc<Mutex<Option<PendingDelete>>>,
}

/// The pipelined floor.
pub type FloorPipelined = Floor<true>;

type PendingDelete = Pin<Box<dyn Future<Output = Result<(), zookeeper_client::Error>> + Send>>;

impl<const PIPELINED: bool> RustLock for Floor<PIPELINED> {
    type Session = Client;
    /// The created node's path.
    type Held<'a> = String;

    async fn open(client: &Client, dir: &str) -> anyhow::Result<Self> {
        ensure_path(client, dir).await?;
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let pending = Arc::new(Mutex::new(None));
        Ok(Floor { client: client.clone(), prefix: format!("{dir}/n-"), options, pending })
    }

    async fn acquire(&self) -> anyhow::Result<String> {
        // zookeeper-client sends a request when it is made: the create goes behind the delete.
        let creating = self.client.create(&self.prefix, b"", &self.options);
        let deleting = self.pending.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(deleting) = deleting {
            deleting.await?;
        }
        let (_, sequence) = creating.await?;
        Ok(format!("{}{sequence}", self.prefix))
    }

    async fn release(&self, path: String) -> anyhow::Result<()> {
        let deleting = self.client.delete(&path, None);
        if PIPELINED {
            *self.pending.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::pin(deleting));
            return Ok(());
        }
        Ok(deleting.await?)
    }
}

/// How the lock is used during a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// One session, acquire + release cycles; each whole cycle is timed.
    Cycles,
    /// This many sessions, one loop each; the waits in `acquire` are timed.
    Sessions(usize),
    /// One session, this many loops (tasks) sharing its lock; the waits in `acquire` are timed.
    Tasks(usize),
}

/// A [`Job`] that measures `L` at `path` under `load`, as a task of its own.
pub fn rust_job<L: RustLock>(cs: String, path: String, load: Load) -> Job {
    Box::new(move |s| Box::pin(measure(limit_for(s), measure_lock::<L>(cs.clone(), path.clone(), load, s))))
}

/// Connects, opens the lock on every session, runs the loops of `load` for a warm-up and a
/// window of `seconds`, then closes the sessions.
pub async fn measure_lock<L: RustLock>(
    cs: String,
    path: String,
    load: Load,
    seconds: f64,
) -> anyhow::Result<Measurement> {
    let count = if let Load::Sessions(n) = load { n } else { 1 };
    let mut sessions = Vec::new();
    for _ in 0..count {
        sessions.push(L::Session::connect_to(&cs).await?);
    }
    let mut locks = Vec::new();
    for session in &sessions {
        locks.push(L::open(session, &path).await?);
    }
    let window = Window::after_warmup(seconds);
    let latencies = match load {
        Load::Cycles => lock_loop(&locks[0], window, true).await?,
        Load::Sessions(_) => join_loops(locks.into_iter().map(|lock| wait_loop(lock, window))).await?,
        Load::Tasks(n) => join_loops((0..n).map(|_| wait_loop(locks[0].clone(), window))).await?,
    };
    for session in sessions {
        session.disconnect().await;
    }
    Ok(latencies.measurement(seconds))
}

/// Acquires and releases `lock` until `window` ends; records whole cycles, or only the waits
/// in `acquire`.
async fn lock_loop<L: RustLock>(lock: &L, window: Window, whole_cycles: bool) -> anyhow::Result<Latencies> {
    run_loop(window, move || async move {
        let start = Instant::now();
        let held = lock.acquire().await?;
        let wait = (!whole_cycles).then(|| Span::since(start));
        lock.release(held).await?;
        Ok::<_, anyhow::Error>(wait.unwrap_or_else(|| Span::since(start)))
    })
    .await
}

/// [`lock_loop`] of the waits, as a task of its own.
async fn wait_loop<L: RustLock>(lock: L, window: Window) -> anyhow::Result<Latencies> {
    lock_loop(&lock, window, false).await
}

/// Runs each loop as a task and merges their latencies; the first error aborts the rest.
async fn join_loops<F>(loops: impl IntoIterator<Item = F>) -> anyhow::Result<Latencies>
where
    F: Future<Output = anyhow::Result<Latencies>> + Send + 'static,
{
    let mut tasks = JoinSet::new();
    for work in loops {
        tasks.spawn(work);
    }
    let mut all = Latencies::default();
    while let Some(result) = tasks.join_next().await {
        all.extend(result??);
    }
    Ok(all)
}
