//! The soak's resident: one long-lived `ZkClient` on which every recipe family works for the
//! whole soak, two users of the one client for the mutex, the counter, the queue and the
//! leader latch, through every fault the checkers and the soak inject. Its process
//! (`zkr-soak-resident`) is the one whose memory, open files, sockets and tasks the soak
//! samples; when told to stop it closes every recipe, checks that none left a node behind on
//! its live session, closes the client and checks that every task and socket is gone.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use zkr_connection::retry::RetryNTimes;
use zkr_connection::ZkClient;
use zkr_recipes::cache::CuratorCache;
use zkr_recipes::config::{ConfigPublisher, ConfigWatcher, Json};
use zkr_recipes::counters::DistributedAtomicLong;
use zkr_recipes::id::{IdGenerator as _, SegmentIdGenerator};
use zkr_recipes::leader::LeaderLatch;
use zkr_recipes::locks::InterProcessMutex;
use zkr_recipes::nodes::GroupMember;
use zkr_recipes::queues::{DistributedQueue, Utf8};

/// The resident's session timeout.
pub const SESSION: Duration = Duration::from_secs(4);

/// How long one step of a workload may take before it counts as an error (and is dropped:
/// every step's future is cancel safe).
const STEP: Duration = Duration::from_secs(10);

/// How long the background cleanups of the steps the stop cut short (a dropped acquire or take
/// deletes its node in the background) may take before a node still owned is a leak: the last
/// fault may have landed just before the stop.
const CLEANUP: Duration = Duration::from_secs(30);

/// What one workload did.
#[derive(Debug, Default)]
pub struct Tally {
    /// Steps that succeeded.
    pub ops: AtomicU64,
    /// Steps that failed or timed out.
    pub errors: AtomicU64,
    /// Steps whose outcome broke the recipe's promise (an ID or a config value that went back).
    pub violations: AtomicU64,
    /// The longest time without a successful step, ms.
    pub longest_gap_ms: AtomicU64,
    /// The last error, for the final report.
    pub last_error: Mutex<Option<String>>,
    /// Every gap of at least [`REPORTED_GAP`]: `stall <name> <gap ms> <ended, s since the start>
    /// <the distinct errors meanwhile>`, to line up with the soak's faults.
    pub stalls: Mutex<Vec<String>>,
}

/// Gaps without a success at least this long are reported one by one.
const REPORTED_GAP: Duration = Duration::from_secs(20);

/// The workloads, running until [`Resident::stop`].
#[derive(Debug)]
pub struct Resident {
    zk: ZkClient,
    root: String,
    stop: watch::Sender<bool>,
    workloads: Vec<(&'static str, Arc<Tally>, JoinHandle<()>)>,
    started: Instant,
    latches: Vec<LeaderLatch>,
    member: Option<GroupMember>,
    cache: Option<CuratorCache>,
    config_went_back: Arc<AtomicBool>,
    watcher_task: Option<JoinHandle<()>>,
}

impl Resident {
    /// Connects and starts every workload under `root`.
    ///
    /// # Errors
    /// A recipe could not be set up.
    pub async fn start(connect_string: &str, root: &str) -> Result<Resident, String> {
        let zk = ZkClient::builder(connect_string)
            .session_timeout(SESSION)
            .connect()
            .await
            .map_err(|e| e.to_string())?;
        crate::announce_sessions(&zk, "session");
        let (stop, _) = watch::channel(false);
        let mut resident = Resident {
            zk: zk.clone(),
            root: root.to_owned(),
            stop,
            workloads: Vec::new(),
            started: Instant::now(),
            latches: Vec::new(),
            member: None,
            cache: None,
            config_went_back: Arc::default(),
            watcher_task: None,
        };
        resident.start_locks_counters_and_ids()?;
        resident.start_queue()?;
        resident.start_config().await?;
        let e = |e: &dyn std::fmt::Display| e.to_string();
        for id in ["a", "b"] {
            resident
                .latches
                .push(LeaderLatch::start(&zk, &format!("{root}/latch"), id).await.map_err(|x| e(&x))?);
        }
        let group = format!("{root}/group");
        resident.member = Some(GroupMember::start(&zk, &group, "resident", b"").await.map_err(|x| e(&x))?);
        resident.cache = Some(CuratorCache::builder(&zk, root).start().await.map_err(|x| e(&x))?);
        Ok(resident)
    }

    fn start_locks_counters_and_ids(&mut self) -> Result<(), String> {
        let (zk, root) = (self.zk.clone(), self.root.clone());
        for user in ["mutex a", "mutex b"] {
            let mutex = InterProcessMutex::new(&zk, &format!("{root}/lock")).map_err(|e| e.to_string())?;
            self.spawn(user, move || {
                let mutex = mutex.clone();
                async move {
                    let guard =
                        mutex.acquire_timeout(Duration::from_secs(3)).await.map_err(|e| e.to_string())?;
                    let Some(guard) = guard else { return Err("acquire timed out".to_owned()) };
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    guard.release().await.map_err(|e| e.to_string()).map(|()| true)
                }
            });
        }
        for user in ["counter a", "counter b"] {
            let retry = RetryNTimes::new(20, Duration::from_millis(5));
            let counter = Arc::new(
                DistributedAtomicLong::new(&zk, &format!("{root}/counter"), retry)
                    .map_err(|e| e.to_string())?,
            );
            self.spawn(user, move || {
                let counter = counter.clone();
                async move {
                    // Not applied within its optimistic retries (contention): an error, retried.
                    let applied = counter.increment().await.map_err(|e| e.to_string())?.succeeded;
                    applied.then_some(true).ok_or_else(|| "not applied within its retries".to_owned())
                }
            });
        }
        let ids = Arc::new(
            SegmentIdGenerator::builder(&zk, &format!("{root}/ids")).build().map_err(|e| e.to_string())?,
        );
        let last = Arc::new(AtomicU64::new(0));
        self.spawn("ids", move || {
            let (ids, last) = (ids.clone(), last.clone());
            async move {
                let id = ids.next().await.map_err(|e| e.to_string())?;
                // One generator's IDs increase; one that does not is a violation.
                Ok(last.fetch_max(id, Ordering::SeqCst) < id)
            }
        });
        Ok(())
    }

    fn start_queue(&mut self) -> Result<(), String> {
        let (zk, root) = (&self.zk, &self.root);
        let queue = DistributedQueue::builder(zk, &format!("{root}/queue"), Utf8)
            .lock_path(format!("{root}/queue-locks"))
            .build()
            .map_err(|e| e.to_string())?;
        // Puts stay at most 50 items ahead of the takes (a put waits for room: a stalled take
        // stalls the puts too).
        let (put, taken) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (q, p, t) = (queue.clone(), put.clone(), taken.clone());
        self.spawn("queue put", move || {
            let (q, p, t) = (q.clone(), p.clone(), t.clone());
            async move {
                while p.load(Ordering::SeqCst) >= t.load(Ordering::SeqCst) + 50 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                q.put(&format!("item {}", p.load(Ordering::SeqCst))).await.map_err(|e| e.to_string())?;
                p.fetch_add(1, Ordering::SeqCst);
                Ok(true)
            }
        });
        self.spawn("queue take", move || {
            let (q, t) = (queue.clone(), taken.clone());
            async move {
                q.take().await.map_err(|e| e.to_string())?.ack().await.map_err(|e| e.to_string())?;
                t.fetch_add(1, Ordering::SeqCst);
                Ok(true)
            }
        });
        Ok(())
    }

    async fn start_config(&mut self) -> Result<(), String> {
        let path = format!("{}/config", self.root);
        let publisher = Arc::new(ConfigPublisher::<u64>::new(&self.zk, Json));
        publisher.set(&path, &0).await.map_err(|e| e.to_string())?;
        let watcher =
            ConfigWatcher::<u64>::builder(&self.zk, &path, Json).start().await.map_err(|e| e.to_string())?;
        let mut snapshots = watcher.snapshots();
        let went_back = self.config_went_back.clone();
        // The watcher's values never go back; the task owns the watcher and is aborted at stop.
        self.watcher_task = Some(tokio::spawn(async move {
            let _watcher = watcher;
            let mut last = 0;
            while snapshots.changed().await.is_ok() {
                let value = snapshots.borrow_and_update().get("").map(|v| *v.value);
                if let Some(value) = value {
                    went_back.fetch_or(value < last, Ordering::SeqCst);
                    last = value;
                }
            }
        }));
        let next = Arc::new(AtomicU64::new(1));
        self.spawn("config", move || {
            let (publisher, path, next) = (publisher.clone(), path.clone(), next.clone());
            async move {
                let value = next.load(Ordering::SeqCst);
                publisher.set(&path, &value).await.map_err(|e| e.to_string())?;
                next.fetch_add(1, Ordering::SeqCst);
                Ok(true)
            }
        });
        Ok(())
    }

    /// Runs `step` again and again (20 ms apart) until stopped, each within [`STEP`]:
    /// `Ok(true)` counts an operation, `Ok(false)` a violation, `Err` an error.
    fn spawn<F, Fut>(&mut self, name: &'static str, mut step: F)
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<bool, String>> + Send,
    {
        let tally = Arc::new(Tally::default());
        let (t, mut stop, started) = (tally.clone(), self.stop.subscribe(), self.started);
        let task = tokio::spawn(async move {
            let mut last_success = Instant::now();
            let mut errors_in_gap: Vec<String> = Vec::new();
            loop {
                let outcome = tokio::select! {
                    _ = stop.changed() => break,
                    outcome = tokio::time::timeout(STEP, step()) => outcome,
                };
                let error = match outcome {
                    Ok(Ok(true)) => {
                        let gap = last_success.elapsed();
                        if gap >= REPORTED_GAP {
                            let ended = started.elapsed().as_secs();
                            let (ms, errors) = (gap.as_millis(), errors_in_gap.join(" | "));
                            t.stalls.lock().unwrap().push(format!("stall {name} {ms} {ended} {errors}"));
                        }
                        errors_in_gap.clear();
                        t.longest_gap_ms.fetch_max(gap.as_millis() as u64, Ordering::SeqCst);
                        last_success = Instant::now();
                        t.ops.fetch_add(1, Ordering::SeqCst);
                        None
                    }
                    Ok(Ok(false)) => {
                        t.violations.fetch_add(1, Ordering::SeqCst);
                        None
                    }
                    Ok(Err(e)) => Some(e),
                    Err(_) => Some(format!("no answer within {STEP:?}")),
                };
                if let Some(e) = error {
                    t.errors.fetch_add(1, Ordering::SeqCst);
                    if errors_in_gap.len() < 4 && !errors_in_gap.contains(&e) {
                        errors_in_gap.push(e.clone());
                    }
                    *t.last_error.lock().unwrap() = Some(e);
                }
                tokio::select! {
                    _ = stop.changed() => break,
                    () = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
            }
        });
        self.workloads.push((name, tally, task));
    }

    /// Every workload's operations so far, summed.
    pub fn operations(&self) -> u64 {
        self.workloads.iter().map(|(_, t, _)| t.ops.load(Ordering::SeqCst)).sum()
    }

    /// Stops every workload, closes every recipe, and returns the report's lines: one per
    /// workload (`tally <name> <ops> <errors> <violations> <longest gap ms> <last error>`, then
    /// its `stall` lines, see [`Tally::stalls`]) and
    /// `left <n> <paths>`: the nodes under the root that the client's live session still owns
    /// (each one a leak: every recipe was closed).
    pub async fn stop(mut self) -> Vec<String> {
        let _ = self.stop.send(true);
        let mut lines = Vec::new();
        for (name, tally, task) in std::mem::take(&mut self.workloads) {
            let _ = task.await;
            let error = tally.last_error.lock().unwrap().clone().unwrap_or_default();
            lines.push(format!(
                "tally {} {} {} {} {} {error}",
                name.replace(' ', "-"),
                tally.ops.load(Ordering::SeqCst),
                tally.errors.load(Ordering::SeqCst),
                tally.violations.load(Ordering::SeqCst),
                tally.longest_gap_ms.load(Ordering::SeqCst)
            ));
            lines.append(&mut tally.stalls.lock().unwrap());
        }
        for latch in self.latches.drain(..) {
            latch.close().await;
        }
        if let Some(member) = self.member.take() {
            member.close().await;
        }
        drop(self.cache.take());
        if let Some(task) = self.watcher_task.take() {
            task.abort();
            let _ = task.await;
        }
        let went_back = u64::from(self.config_went_back.load(Ordering::SeqCst));
        lines.push(format!("tally config-watcher 0 0 {went_back} 0"));
        lines.push(self.left_behind().await);
        self.zk.close().await;
        lines
    }

    /// `left <n> <paths>`: the ephemeral nodes under the root that this client's session owns
    /// once the cleanups of the steps cut short by the stop (each deletes its node in the
    /// background) have had [`CLEANUP`] to finish.
    async fn left_behind(&self) -> String {
        let Ok(session) = self.zk.session().await else { return "left ? (no session)".to_owned() };
        let deadline = Instant::now() + CLEANUP;
        loop {
            let left = self.owned_by(session.id()).await;
            if left.is_empty() || Instant::now() >= deadline {
                return format!("left {} {}", left.len(), left.join(" "));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The nodes under the root whose ephemeral owner is `owner`.
    async fn owned_by(&self, owner: i64) -> Vec<String> {
        let mut left = Vec::new();
        let mut pending = vec![self.root.clone()];
        while let Some(path) = pending.pop() {
            let p = path.as_str();
            let listed = self.zk.retry(|s| async move { s.client().get_children(p).await }).await;
            let Ok((children, stat)) = listed else { continue };
            if stat.ephemeral_owner == owner {
                left.push(path.clone());
            }
            pending.extend(children.into_iter().map(|c| format!("{path}/{c}")));
        }
        left
    }
}
