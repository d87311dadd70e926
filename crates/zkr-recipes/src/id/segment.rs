//! Leaf-segment IDs: ranges claimed from a ZooKeeper counter by compare-and-set, handed out
//! from memory, with the next range fetched in the background.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};
use tokio::time::Instant;
use zkr_connection::ZkClient;
use zookeeper_client::CreateMode;

use super::{IdError, IdGenerator};
use crate::codec::number as codec;

/// The largest `next_batch`.
pub const MAX_BATCH: usize = 1_000_000;

/// How big a range each fetch claims.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_recipes::id::StepPolicy;
///
/// let fixed = StepPolicy::Fixed(1000);
/// // Leaf's dynamic step: double while a range lasts under 15 minutes, halve past 30.
/// let adaptive = StepPolicy::Adaptive { min: 1000, max: 1_000_000, target: Duration::from_secs(15 * 60) };
/// assert_eq!(adaptive.next_step(1000, Duration::from_secs(60)), 2000);
/// assert_eq!(fixed.next_step(1000, Duration::from_secs(60)), 1000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepPolicy {
    /// Always this many IDs per range.
    Fixed(u64),
    /// Meituan Leaf's dynamic step: a range that lasted less than `target` doubles the next
    /// step (up to `max`); one that lasted more than twice `target` halves it (down to `min`).
    /// Busy generators fetch less often; idle ones waste fewer IDs when they restart.
    Adaptive {
        /// The smallest step, and the first.
        min: u64,
        /// The largest step.
        max: u64,
        /// How long a range should last.
        target: Duration,
    },
}

impl StepPolicy {
    /// The step to start with.
    pub fn initial(&self) -> u64 {
        match *self {
            StepPolicy::Fixed(step) => step,
            StepPolicy::Adaptive { min, .. } => min,
        }
    }

    /// The step after a range of `step` IDs lasted `lasted`.
    pub fn next_step(&self, step: u64, lasted: Duration) -> u64 {
        match *self {
            StepPolicy::Fixed(step) => step,
            StepPolicy::Adaptive { min, max, target } => if lasted < target {
                step.saturating_mul(2).min(max)
            } else if lasted > target.saturating_mul(2) {
                (step / 2).max(min)
            } else {
                step
            }
            .clamp(min, max),
        }
    }

    fn validate(&self) -> Result<(), IdError> {
        let ok = match *self {
            StepPolicy::Fixed(step) => step > 0,
            StepPolicy::Adaptive { min, max, .. } => min > 0 && min <= max,
        };
        if ok {
            Ok(())
        } else {
            Err(IdError::InvalidArgument(format!("{self:?}: steps must be positive and min <= max")))
        }
    }
}

/// The counter node's value: a `DistributedAtomicLong` (the codec of [`crate::counters`]),
/// stricter than Curator: a node without data is refused rather than read as 0, and so is a
/// negative counter.
fn decode(data: &[u8]) -> Result<u64, String> {
    let wrong_length = |len: usize| format!("{len} bytes, not an 8-byte counter");
    if data.is_empty() {
        return Err(wrong_length(0));
    }
    let value = codec::decode_exact::<i64>(data).map_err(|wrong| wrong_length(wrong.data.len()))?;
    u64::try_from(value).map_err(|_| "a negative counter".to_owned())
}

fn encode(value: u64) -> [u8; 8] {
    // Callers keep values at or below i64::MAX.
    codec::encode_long(value as i64)
}

/// The `step` IDs after `value` (the last ID claimed, as `DistributedAtomicLong.add` returns
/// its new value as the ID), unless they would pass `i64::MAX`. The counter's new value is
/// `range.end - 1`.
fn claim(value: u64, step: u64) -> Option<Range<u64>> {
    let last = value.checked_add(step).filter(|e| *e <= i64::MAX as u64)?;
    Some(value + 1..last + 1)
}

/// The in-memory buffers: the range being handed out and the one fetched ahead.
#[derive(Debug)]
struct Buffers {
    current: Range<u64>,
    current_len: u64,
    next: Option<Range<u64>>,
    prefetching: bool,
}

impl Buffers {
    /// Takes up to `n` IDs from the current range (switching to the next when it is empty).
    fn take(&mut self, n: u64) -> Option<Range<u64>> {
        if self.current.is_empty() {
            let next = self.next.take()?;
            self.current_len = next.end - next.start;
            self.current = next;
        }
        let end = self.current.start + n.min(self.current.end - self.current.start);
        let taken = self.current.start..end;
        self.current.start = end;
        Some(taken)
    }

    /// Should a fetch of the next range start now? Leaf's rule: once 10% of the current
    /// range is used, with no next range and no fetch under way.
    fn wants_prefetch(&self) -> bool {
        let left = self.current.end - self.current.start;
        !self.prefetching
            && self.next.is_none()
            && left.saturating_mul(10) < self.current_len.saturating_mul(9)
    }

    fn is_empty(&self) -> bool {
        self.current.is_empty() && self.next.is_none()
    }

    fn install(&mut self, range: Range<u64>) {
        if self.current.is_empty() {
            self.current_len = range.end - range.start;
            self.current = range;
        } else {
            self.next = Some(range);
        }
    }
}

/// Meituan Leaf's segment mode on ZooKeeper: dense, roughly increasing IDs handed out from
/// memory at millions per second.
///
/// A counter node (8 bytes, big-endian, as Apache Curator's `DistributedAtomicLong` keeps it)
/// holds the last ID claimed, so that Java processes calling `increment()` on it and zkr
/// generators never hand out the same ID. A generator claims the next `step` IDs by a
/// compare-and-set on the node's version, hands them out from memory, and fetches the next
/// range in the background once 10% of the current one is used (double buffering), so
/// callers rarely wait for ZooKeeper and short outages go unnoticed.
///
/// - **Unique** across every generator on the same counter, in any process: each range is
///   claimed by exactly one successful compare-and-set. A lost reply to that write never
///   leads to a reuse: the range is given up and a fresh one claimed (it may be skipped).
/// - **Monotonic per generator**; **not globally ordered** (two generators interleave ranges).
/// - **Nearly dense**: the unused rest of a range is lost when the process stops.
/// - Limits: IDs stay at or below `i64::MAX`; a counter written by something else is refused
///   ([`IdError::CorruptState`]).
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::id::IdError> {
/// use zkr_recipes::id::{IdGenerator, SegmentIdGenerator, StepPolicy};
///
/// let ids = SegmentIdGenerator::builder(&zk, "/ids/orders").step(StepPolicy::Fixed(10_000)).build()?;
/// let order_id = ids.next().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SegmentIdGenerator {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    zk: ZkClient,
    path: String,
    first_id: u64,
    policy: StepPolicy,
    prefetch: bool,
    buffers: Mutex<Buffers>,
    /// Held while a range is fetched, so that only one fetch runs at a time.
    fetching: tokio::sync::Mutex<FetchState>,
}

#[derive(Debug)]
struct FetchState {
    step: u64,
    last_fetch: Option<Instant>,
}

/// Builds a [`SegmentIdGenerator`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until build() is called"]
pub struct SegmentIdGeneratorBuilder {
    zk: ZkClient,
    path: String,
    first_id: u64,
    policy: StepPolicy,
    prefetch: bool,
}

impl SegmentIdGeneratorBuilder {
    /// How big a range each fetch claims (default: Leaf's dynamic step from 1000 to 1,000,000
    /// with a 15-minute target).
    pub fn step(mut self, policy: StepPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Fetch the next range in the background once 10% of the current one is used (default
    /// `true`). Turn it off in one-shot processes that draw a known number of IDs, so that no
    /// range is claimed and then lost at exit.
    pub fn prefetch(mut self, prefetch: bool) -> Self {
        self.prefetch = prefetch;
        self
    }

    /// The first ID when the counter node does not exist yet (default 1).
    pub fn first_id(mut self, first: u64) -> Self {
        self.first_id = first;
        self
    }

    /// The generator. Nothing is read from ZooKeeper until the first ID is asked for.
    ///
    /// # Errors
    /// [`IdError::Connection`] for an invalid path; [`IdError::InvalidArgument`] for a zero
    /// step, `min > max`, or a first ID of 0 or over `i64::MAX`.
    pub fn build(self) -> Result<SegmentIdGenerator, IdError> {
        crate::errors::check_node_path(&self.zk, &self.path)?;
        self.policy.validate()?;
        if self.first_id == 0 || self.first_id > i64::MAX as u64 {
            return Err(IdError::InvalidArgument(format!(
                "first ID {} is not in 1..=i64::MAX",
                self.first_id
            )));
        }
        Ok(SegmentIdGenerator {
            inner: Arc::new(Inner {
                zk: self.zk,
                path: self.path,
                first_id: self.first_id,
                policy: self.policy,
                prefetch: self.prefetch,
                buffers: Mutex::new(Buffers {
                    current: 0..0,
                    current_len: 0,
                    next: None,
                    prefetching: false,
                }),
                fetching: tokio::sync::Mutex::new(FetchState {
                    step: self.policy.initial(),
                    last_fetch: None,
                }),
            }),
        })
    }
}

/// The default step policy: Leaf's.
const DEFAULT_POLICY: StepPolicy =
    StepPolicy::Adaptive { min: 1000, max: 1_000_000, target: Duration::from_secs(15 * 60) };

impl SegmentIdGenerator {
    /// A builder for a generator whose counter node is `path`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::id::IdError> {
    /// let ids = zkr_recipes::id::SegmentIdGenerator::builder(&zk, "/ids/orders").first_id(1_000_000).build()?;
    /// # Ok(()) }
    /// ```
    pub fn builder(zk: &ZkClient, path: &str) -> SegmentIdGeneratorBuilder {
        SegmentIdGeneratorBuilder {
            zk: zk.clone(),
            path: path.to_owned(),
            first_id: 1,
            policy: DEFAULT_POLICY,
            prefetch: true,
        }
    }

    /// A generator on counter node `path` with the default settings.
    ///
    /// # Errors
    /// [`IdError::InvalidArgument`] for an invalid path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::id::IdError> {
    /// let ids = zkr_recipes::id::SegmentIdGenerator::new(&zk, "/ids/orders")?;
    /// # Ok(()) }
    /// ```
    pub fn new(zk: &ZkClient, path: &str) -> Result<Self, IdError> {
        Self::builder(zk, path).build()
    }

    /// The counter node's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// IDs left in memory (current and next range).
    pub fn buffered(&self) -> u64 {
        let b = self.inner.lock();
        (b.current.end - b.current.start) + b.next.as_ref().map_or(0, |n| n.end - n.start)
    }

    /// Takes up to `n` IDs from memory, starting a background fetch when it is time.
    fn take(&self, n: u64) -> Option<Range<u64>> {
        let mut buffers = self.inner.lock();
        let taken = buffers.take(n);
        if self.inner.prefetch && buffers.wants_prefetch() {
            buffers.prefetching = true;
            drop(buffers);
            tokio::spawn(Arc::clone(&self.inner).prefetch());
        }
        taken
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Buffers> {
        self.buffers.lock()
    }

    /// Fetches a range now, unless another caller's fetch already refilled the buffers.
    async fn refill(&self) -> Result<(), IdError> {
        let mut state = self.fetching.lock().await;
        if !self.lock().is_empty() {
            return Ok(());
        }
        let range = self.fetch(&mut state).await?;
        self.lock().install(range);
        Ok(())
    }

    /// The background fetch of the next range.
    async fn prefetch(self: Arc<Self>) {
        let mut state = self.fetching.lock().await;
        if self.lock().next.is_none() {
            match self.fetch(&mut state).await {
                Ok(range) => self.lock().install(range),
                Err(e) => tracing::warn!(path = %self.path, error = %e, "fetching the next ID range failed"),
            }
        }
        self.lock().prefetching = false;
    }

    /// Claims the next range by compare-and-set on the counter node, retrying lost races.
    async fn fetch(&self, state: &mut FetchState) -> Result<Range<u64>, IdError> {
        if let Some(last) = state.last_fetch {
            state.step = self.policy.next_step(state.step, last.elapsed());
        }
        let step = state.step;
        let path = &self.path;
        loop {
            let outcome = self
                .zk
                .retry(|s| async move {
                    let client = s.client();
                    let (data, stat) = match client.get_data(path).await {
                        Ok(found) => found,
                        Err(zookeeper_client::Error::NoNode) => return Ok(Cas::Absent),
                        Err(e) => return Err(e),
                    };
                    let value = match decode(&data) {
                        Ok(v) => v,
                        Err(reason) => return Ok(Cas::Corrupt(reason)),
                    };
                    let Some(range) = claim(value, step) else { return Ok(Cas::Exhausted) };
                    match client.set_data(path, &encode(range.end - 1), Some(stat.version)).await {
                        Ok(_) => Ok(Cas::Won(range)),
                        Err(zookeeper_client::Error::BadVersion) => Ok(Cas::Lost),
                        Err(e) => Err(e),
                    }
                })
                .await?;
            match outcome {
                Cas::Won(range) => {
                    state.last_fetch = Some(Instant::now());
                    tracing::debug!(path = %self.path, ?range, "claimed an ID range");
                    return Ok(range);
                }
                Cas::Lost => tokio::task::yield_now().await,
                Cas::Absent => {
                    let range = claim(self.first_id - 1, step)
                        .ok_or_else(|| IdError::Exhausted { path: path.clone() })?;
                    // Created by us: the first range is ours. NodeExists (someone else, or our
                    // own create whose reply was lost): read it again.
                    if self.zk.create_if_absent(path, &encode(range.end - 1), CreateMode::Persistent).await? {
                        state.last_fetch = Some(Instant::now());
                        return Ok(range);
                    }
                }
                Cas::Corrupt(reason) => return Err(IdError::CorruptState { path: path.clone(), reason }),
                Cas::Exhausted => return Err(IdError::Exhausted { path: path.clone() }),
            }
        }
    }
}

/// One compare-and-set attempt on the counter.
enum Cas {
    Won(Range<u64>),
    Lost,
    Absent,
    Corrupt(String),
    Exhausted,
}

#[async_trait::async_trait]
impl IdGenerator for SegmentIdGenerator {
    /// One ID, from memory unless both ranges are used up.
    ///
    /// # Cancel safety
    /// Cancel safe: a fetch dropped after its compare-and-set was sent may skip a range, never
    /// hand one out twice; no node is created but the counter.
    async fn next(&self) -> Result<u64, IdError> {
        loop {
            if let Some(ids) = self.take(1) {
                if !ids.is_empty() {
                    return Ok(ids.start);
                }
            }
            self.inner.refill().await?;
        }
    }

    /// `n` IDs (at most [`MAX_BATCH`]), increasing, across as many ranges as it takes.
    ///
    /// # Cancel safety
    /// As [`next`](IdGenerator::next); IDs taken before the drop are not handed out again.
    async fn next_batch(&self, n: usize) -> Result<Vec<u64>, IdError> {
        if n > MAX_BATCH {
            return Err(IdError::InvalidArgument(format!("a batch is at most {MAX_BATCH} IDs, not {n}")));
        }
        let mut ids = Vec::with_capacity(n);
        while ids.len() < n {
            match self.take((n - ids.len()) as u64) {
                Some(range) if !range.is_empty() => ids.extend(range),
                _ => self.inner.refill().await?,
            }
        }
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counter_is_curators_long() {
        assert_eq!(encode(1), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(decode(&encode(i64::MAX as u64)), Ok(i64::MAX as u64));
        assert!(decode(b"12").is_err());
        assert!(decode(&(-1i64).to_be_bytes()).is_err());
    }

    #[test]
    fn claims_stop_at_i64_max() {
        assert_eq!(claim(0, 10), Some(1..11));
        assert_eq!(claim(i64::MAX as u64 - 10, 10), Some(i64::MAX as u64 - 9..i64::MAX as u64 + 1));
        assert_eq!(claim(i64::MAX as u64 - 9, 10), None);
    }

    #[test]
    fn leaf_step_doubles_when_fast_and_halves_when_slow() {
        let p = StepPolicy::Adaptive { min: 100, max: 1000, target: Duration::from_secs(10) };
        assert_eq!(p.next_step(100, Duration::from_secs(1)), 200);
        assert_eq!(p.next_step(800, Duration::from_secs(1)), 1000);
        assert_eq!(p.next_step(400, Duration::from_secs(15)), 400);
        assert_eq!(p.next_step(400, Duration::from_secs(25)), 200);
        assert_eq!(p.next_step(100, Duration::from_secs(25)), 100);
        assert!(StepPolicy::Fixed(0).validate().is_err());
        assert!(StepPolicy::Adaptive { min: 2, max: 1, target: Duration::ZERO }.validate().is_err());
    }

    #[test]
    fn buffers_switch_to_the_prefetched_range() {
        let mut b = Buffers { current: 0..0, current_len: 0, next: None, prefetching: false };
        assert_eq!(b.take(1), None);
        b.install(10..20);
        assert_eq!(b.take(1), Some(10..11));
        assert!(!b.wants_prefetch(), "10% used is not yet more than 10%");
        assert_eq!(b.take(1), Some(11..12));
        assert!(b.wants_prefetch());
        b.install(100..110);
        assert!(!b.wants_prefetch());
        assert_eq!(b.take(100), Some(12..20));
        assert_eq!(b.take(3), Some(100..103));
        assert_eq!(b.take(100), Some(103..110));
        assert_eq!(b.take(1), None);
    }

    proptest! {
        /// Whatever the order of takes and installs of increasing ranges, IDs come out unique
        /// and increasing.
        #[test]
        fn taken_ids_increase(ops in proptest::collection::vec((1u64..50, any::<bool>()), 1..200)) {
            let mut b = Buffers { current: 0..0, current_len: 0, next: None, prefetching: false };
            let mut counter = 0u64;
            let mut last: Option<u64> = None;
            for (n, refill) in ops {
                if refill && b.next.is_none() {
                    b.install(counter..counter + n);
                    counter += n + 3; // a skipped gap, as after a lost reply
                }
                if let Some(r) = b.take(n) {
                    prop_assert!(r.end - r.start <= n);
                    for id in r {
                        prop_assert!(last.is_none_or(|l| id > l));
                        last = Some(id);
                    }
                }
            }
        }
    }
}
