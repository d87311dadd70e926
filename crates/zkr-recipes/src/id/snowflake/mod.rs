//! Snowflake IDs: generated in memory, time-ordered, with the worker ID leased from ZooKeeper
//! and a timestamp watermark recorded there so that no clock can make an ID repeat.

mod layout;
mod lease;
mod sequencer;

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};
use tokio::sync::{watch, Notify};
use zkr_connection::{path, ZkClient};

pub use layout::{SnowflakeLayout, SnowflakeParts};
use lease::{Lease, LeasePaths, LeaseSettings};
use sequencer::{Sequencer, Step};

use super::{IdError, IdGenerator};

/// The largest `next_batch`.
pub const MAX_BATCH: usize = 1_000_000;

/// Twitter's Snowflake with the worker ID leased from ZooKeeper: 64-bit, time-ordered IDs
/// generated in memory at millions per second.
///
/// - **Unique** across every generator on the same path: a worker ID is held by one live
///   worker at a time (an ephemeral lease node), and every worker ID has a record in ZooKeeper
///   of a timestamp watermark that its IDs never pass. A worker taking an ID (after a restart,
///   or taking over a dead worker's) starts strictly after that watermark, so an ID can only
///   repeat if ZooKeeper loses acknowledged writes; no clock, fast or slow, on any machine,
///   can make one repeat.
/// - **Strictly increasing per generator**, even when the clock steps back: a step of up to
///   [`max_lead`](SnowflakeIdGeneratorBuilder::max_lead) is absorbed (IDs run slightly ahead
///   of the clock, as when a millisecond's 4096 sequences run out), up to
///   [`max_backward`](SnowflakeIdGeneratorBuilder::max_backward) is waited out, and a larger
///   one is refused with [`IdError::ClockMovedBackwards`] until the clock catches up.
/// - **Roughly time-ordered across generators** (k-sorted by the clocks' skew).
/// - **Not dense.**
/// - ZooKeeper is needed at start and then every [`window`](SnowflakeIdGeneratorBuilder::window)
///   (default 10 s): a background task records a watermark a window ahead. If ZooKeeper stays
///   unreachable longer than that, `next` stops with [`IdError::WatermarkStalled`] rather than
///   issue IDs no record covers.
/// - Worker IDs: our identity's previous ID when free (graceful restarts always get it back;
///   after a crash it is free once the old session expires, see
///   [`reclaim_wait`](SnowflakeIdGeneratorBuilder::reclaim_wait)), else the lowest free one.
///   A lost lease (the session expired) is replaced in the background.
/// - Refuses to start ([`IdError::ClockBehindRecord`]) when the clock is behind the worker
///   ID's record by more than the window plus `max_backward`.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::id::IdError> {
/// use zkr_recipes::id::{IdGenerator, SnowflakeIdGenerator};
///
/// let ids = SnowflakeIdGenerator::builder(&zk, "/ids/snowflake").identity("orders-api-1").start().await?;
/// let id = ids.next().await?;
/// println!("worker {} issued {id}", ids.worker_id());
/// ids.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SnowflakeIdGenerator {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    zk: ZkClient,
    paths: LeasePaths,
    layout: SnowflakeLayout,
    settings: LeaseSettings,
    stall_timeout: Duration,
    core: Mutex<Core>,
    /// Bumped whenever the watermark moves.
    watermark_moved: watch::Sender<u64>,
    /// Asks the recorder to record now.
    wake_recorder: Arc<Notify>,
    shutdown: Arc<Notify>,
}

#[derive(Debug)]
struct Core {
    sequencer: Sequencer,
    lease: Option<Lease>,
}

/// Builds a [`SnowflakeIdGenerator`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until start() is called"]
pub struct SnowflakeIdGeneratorBuilder {
    zk: ZkClient,
    path: String,
    identity: Option<String>,
    layout: SnowflakeLayout,
    window: Duration,
    max_lead: Duration,
    max_backward: Duration,
    reclaim_wait: Duration,
    stall_timeout: Option<Duration>,
}

impl SnowflakeIdGeneratorBuilder {
    /// Who this worker is, across restarts (default: the host name). It takes back the worker
    /// ID it used last when that is free. A valid node name.
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    /// The bit layout and epoch (default: Twitter's 41/10/12 from 2024-01-01).
    pub fn layout(mut self, layout: SnowflakeLayout) -> Self {
        self.layout = layout;
        self
    }

    /// How far ahead of the clock the recorded watermark reaches, which is how long IDs keep
    /// flowing without ZooKeeper and how long a worker restarted after a crash may wait on
    /// its old worker ID (default 10 s). Recorded every quarter window.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// How far ahead of the clock timestamps may run, when a millisecond's sequences are used
    /// up or the clock steps back a little (default 5 ms).
    pub fn max_lead(mut self, lead: Duration) -> Self {
        self.max_lead = lead;
        self
    }

    /// The largest backward clock step that `next` waits out (default 100 ms); larger ones are
    /// refused with [`IdError::ClockMovedBackwards`].
    pub fn max_backward(mut self, limit: Duration) -> Self {
        self.max_backward = limit;
        self
    }

    /// How long `start` waits for this identity's previous lease to go (after a crash it lives
    /// until its session expires) before taking another worker ID (default 0: take another
    /// at once).
    pub fn reclaim_wait(mut self, wait: Duration) -> Self {
        self.reclaim_wait = wait;
        self
    }

    /// How long `next` waits for a new watermark before [`IdError::WatermarkStalled`] (default:
    /// the manager's connection timeout).
    pub fn stall_timeout(mut self, timeout: Duration) -> Self {
        self.stall_timeout = Some(timeout);
        self
    }

    /// Leases a worker ID and starts the generator.
    ///
    /// # Errors
    /// [`IdError::InvalidArgument`] for an invalid identity or a window under 100 ms;
    /// [`IdError::NoWorkerId`], [`IdError::ClockBehindRecord`], [`IdError::CorruptState`], or
    /// [`IdError::Connection`].
    ///
    /// # Cancel safety
    /// Cancel safe: a lease taken before the drop is deleted in the background.
    pub async fn start(self) -> Result<SnowflakeIdGenerator, IdError> {
        crate::errors::check_node_path(&self.zk, &self.path)?;
        let identity = match self.identity {
            Some(identity) => identity,
            None => crate::host::host_name().unwrap_or_else(|| "localhost".to_owned()),
        };
        path::validate_name(&identity)
            .map_err(|e| IdError::InvalidArgument(format!("worker identity {identity:?}: {e}")))?;
        if self.window < Duration::from_millis(100) {
            return Err(IdError::InvalidArgument(format!("window {:?} is under 100 ms", self.window)));
        }
        let settings = LeaseSettings {
            max_worker_id: self.layout.max_worker_id(),
            window: self.window,
            reclaim_wait: self.reclaim_wait,
            max_backward: self.max_backward,
        };
        let token = uuid::Uuid::new_v4().simple().to_string();
        let paths = LeasePaths { root: self.path, identity, token };
        let lease = lease::acquire(&self.zk, &paths, settings, None).await?;
        let epoch = self.layout.epoch_ms();
        let sequencer = Sequencer::new(
            self.layout,
            lease.worker_id,
            lease.after_ms.saturating_sub(epoch),
            lease.until_ms.saturating_sub(epoch),
            self.max_lead.as_millis() as u64,
            self.max_backward.as_millis() as u64,
        );
        let stall_timeout = self.stall_timeout.unwrap_or_else(|| self.zk.connection_timeout());
        let inner = Arc::new(Inner {
            zk: self.zk,
            paths,
            layout: self.layout,
            settings,
            stall_timeout,
            core: Mutex::new(Core { sequencer, lease: Some(lease) }),
            watermark_moved: watch::channel(0).0,
            wake_recorder: Arc::new(Notify::new()),
            shutdown: Arc::new(Notify::new()),
        });
        tokio::spawn(record(Arc::downgrade(&inner)));
        Ok(SnowflakeIdGenerator { inner })
    }
}

impl SnowflakeIdGenerator {
    /// A builder for a generator keeping its leases and records under `path`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::id::IdError> {
    /// use std::time::Duration;
    /// let ids = zkr_recipes::id::SnowflakeIdGenerator::builder(&zk, "/ids/snowflake")
    ///     .window(Duration::from_secs(30))
    ///     .start()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn builder(zk: &ZkClient, path: &str) -> SnowflakeIdGeneratorBuilder {
        SnowflakeIdGeneratorBuilder {
            zk: zk.clone(),
            path: path.to_owned(),
            identity: None,
            layout: SnowflakeLayout::default(),
            window: Duration::from_secs(10),
            max_lead: Duration::from_millis(5),
            max_backward: Duration::from_millis(100),
            reclaim_wait: Duration::ZERO,
            stall_timeout: None,
        }
    }

    /// The worker ID in use.
    pub fn worker_id(&self) -> u64 {
        self.inner.core().sequencer.worker_id()
    }

    /// The bit layout, to take IDs apart with [`SnowflakeLayout::decompose`].
    pub fn layout(&self) -> SnowflakeLayout {
        self.inner.layout
    }

    /// The watermark recorded in ZooKeeper (Unix milliseconds): no ID of this worker ID has a
    /// later timestamp.
    pub fn watermark_ms(&self) -> u64 {
        self.inner.core().sequencer.watermark() + self.inner.layout.epoch_ms()
    }

    /// Stops the generator: records the exact last timestamp (so the next holder of the
    /// worker ID need not wait) and deletes the lease. Later calls fail with
    /// [`IdError::Closed`]. Dropping every handle does the same in the background.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, the release goes on in the background, and the generator refuses
    /// further IDs either way.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(ids: zkr_recipes::id::SnowflakeIdGenerator) {
    /// ids.close().await;
    /// # }
    /// ```
    pub async fn close(&self) {
        let taken = {
            let mut core = self.inner.core();
            core.lease.take().map(|l| (l, core.sequencer.last_ts()))
        };
        self.inner.shutdown.notify_waiters();
        self.inner.shutdown.notify_one();
        if let Some((lease, last)) = taken {
            // In a task of its own: dropped, the close still records and deletes; returns at
            // once when the lease's session is lost (the node went with it).
            let lost = lease.node.fence().clone();
            let (zk, paths) = (self.inner.zk.clone(), self.inner.paths.clone());
            let last = last + self.inner.layout.epoch_ms();
            let release = async move { lease::release(&paths, &lease, last, &zk).await };
            let _ =
                zkr_connection::run_detached(release, async move { lost.lost(&self.inner.zk).await }).await;
        }
    }

    fn now_offset(&self) -> Result<u64, IdError> {
        let epoch = self.inner.layout.epoch_ms();
        lease::unix_ms()
            .checked_sub(epoch)
            .ok_or_else(|| IdError::InvalidArgument("the clock reads before the layout's epoch".into()))
    }

    /// Issues up to `n` IDs into `out`; returns what stopped it when it is not done.
    fn fill(&self, out: &mut Vec<u64>, n: usize) -> Result<Option<Step>, IdError> {
        let now = self.now_offset()?;
        let mut core = self.inner.core();
        if core.lease.is_none() {
            return Err(IdError::Closed);
        }
        while out.len() < n {
            match core.sequencer.next(now) {
                Step::Id(id) => out.push(id),
                other => return Ok(Some(other)),
            }
        }
        Ok(None)
    }

    async fn issue(&self, n: usize) -> Result<Vec<u64>, IdError> {
        let mut out = Vec::with_capacity(n);
        let mut stalled_since = None;
        let mut watermarks = self.inner.watermark_moved.subscribe();
        loop {
            watermarks.borrow_and_update();
            let step = match self.fill(&mut out, n)? {
                None => return Ok(out),
                Some(step) => step,
            };
            match step {
                Step::Id(_) => {}
                Step::WaitUntil(t) => {
                    let now = self.now_offset()?;
                    tokio::time::sleep(Duration::from_millis(t.saturating_sub(now).max(1))).await;
                }
                Step::ClockBack(by) => {
                    return Err(IdError::ClockMovedBackwards {
                        by: Duration::from_millis(by),
                        limit: self.inner.settings.max_backward,
                    })
                }
                Step::Exhausted => return Err(IdError::Exhausted { path: self.inner.paths.root.clone() }),
                Step::Watermark => {
                    let since = *stalled_since.get_or_insert_with(tokio::time::Instant::now);
                    self.inner.wake_recorder.notify_one();
                    let deadline = since + self.inner.stall_timeout;
                    if tokio::time::timeout_at(deadline, watermarks.changed()).await.is_err() {
                        return Err(IdError::WatermarkStalled {
                            worker_id: self.worker_id(),
                            waited: since.elapsed(),
                        });
                    }
                }
            }
        }
    }
}

impl Inner {
    fn core(&self) -> MutexGuard<'_, Core> {
        self.core.lock()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let core = self.core.get_mut();
        let Some(lease) = core.lease.take() else { return };
        let last = core.sequencer.last_ts() + self.layout.epoch_ms();
        let (zk, paths) = (self.zk.clone(), self.paths.clone());
        zkr_connection::spawn_cleanup("a dropped snowflake lease", async move {
            lease::release(&paths, &lease, last, &zk).await
        });
    }
}

/// The recorder: every quarter window (or when `next` is waiting for it), records a
/// watermark a window ahead; replaces a lost lease.
async fn record(inner: Weak<Inner>) {
    loop {
        let Some(this) = inner.upgrade() else { return };
        let interval = this.settings.window / 4;
        let lease = match this.core().lease.clone() {
            Some(lease) => lease,
            None => return,
        };
        let until = lease::unix_ms() + this.settings.window.as_millis() as u64;
        // Within half a window: the watermark recorded last still covers the clock meanwhile.
        match lease::extend(&this.zk, &this.paths, &lease, until, this.settings.window / 2).await {
            Ok(Some(version)) => {
                let mut core = this.core();
                if let Some(held) = core.lease.as_mut() {
                    held.record_version = version;
                    held.until_ms = until;
                    core.sequencer.set_watermark(until - this.layout.epoch_ms());
                    this.watermark_moved.send_modify(|v| *v += 1);
                }
            }
            Ok(None) => {
                tracing::warn!(worker_id = lease.worker_id, "snowflake worker ID lease lost; leasing again");
                match lease::acquire(&this.zk, &this.paths, this.settings, Some(&lease)).await {
                    Ok(new) => {
                        let epoch = this.layout.epoch_ms();
                        let mut core = this.core();
                        if core.lease.is_some() {
                            core.sequencer.switch_worker(
                                new.worker_id,
                                new.after_ms.saturating_sub(epoch),
                                new.until_ms.saturating_sub(epoch),
                            );
                            core.lease = Some(new);
                            this.watermark_moved.send_modify(|v| *v += 1);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "leasing a snowflake worker ID failed; will retry"),
                }
            }
            Err(e) => tracing::debug!(error = %e, "recording the snowflake watermark failed; will retry"),
        }
        let (shutdown, wake) = (Arc::clone(&this.shutdown), Arc::clone(&this.wake_recorder));
        drop(this);
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = wake.notified() => {}
            _ = shutdown.notified() => return,
        }
    }
}

#[async_trait::async_trait]
impl IdGenerator for SnowflakeIdGenerator {
    /// One ID, from memory; waits only when the clock must catch up (or for a watermark).
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is written to ZooKeeper by this call.
    async fn next(&self) -> Result<u64, IdError> {
        let mut out = Vec::with_capacity(1);
        if let Ok(None) = self.fill(&mut out, 1) {
            return Ok(out[0]);
        }
        Ok(self.issue(1).await?[0])
    }

    /// `n` IDs (at most [`MAX_BATCH`]), strictly increasing.
    ///
    /// # Cancel safety
    /// As [`next`](IdGenerator::next).
    async fn next_batch(&self, n: usize) -> Result<Vec<u64>, IdError> {
        if n > MAX_BATCH {
            return Err(IdError::InvalidArgument(format!("a batch is at most {MAX_BATCH} IDs, not {n}")));
        }
        self.issue(n).await
    }
}
