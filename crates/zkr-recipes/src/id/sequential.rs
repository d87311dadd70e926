//! IDs from ZooKeeper sequence nodes, without the seeds' leaks and wrap.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;
use zkr_connection::{path, Session, ZkClient};
use zookeeper_client::{Acls, CreateMode, MultiWriteError, MultiWriteResult};

use super::{IdError, IdGenerator};

mod epoch;
mod high_water;

use epoch::epoch_name;
use high_water::{HighWater, Verdict};

/// How many creates go in one multi-op (well under ZooKeeper's 1 MB request limit).
const OPS_PER_MULTI: usize = 1000;
/// The largest `next_batch`.
pub const MAX_BATCH: usize = 100_000;
/// Bits of an ID that hold the sequence within an epoch.
pub const SEQUENCE_BITS: u32 = 31;
/// The default number of sequences used per epoch node: ZooKeeper's 31-bit counter minus a
/// margin of 2^24 for creates still in flight when the first generator sees the limit.
pub const DEFAULT_EPOCH_CAPACITY: u32 = (1 << 31) - (1 << 24);
/// The high-water record's name under the generator's path.
pub const HIGH_WATER_NODE: &str = "high-water";
/// How long ID nodes whose sequences were read wait for the next batch's multi-op to delete
/// them before they get a delete of their own. A session's requests are applied in order, so
/// a delete sent between two batches would hold the next batch's creates up by one commit:
/// a caller that draws again at once pays one write per batch instead of two.
const DELETE_LINGER: Duration = Duration::from_millis(10);

/// Composes an ID from an epoch and a sequence within it: `epoch << 31 | sequence`.
///
/// IDs compare like `(epoch, sequence)` pairs, so they increase with ZooKeeper's sequence
/// within an epoch and jump past every earlier epoch when a new one starts.
///
/// # Examples
///
/// ```
/// use zkr_recipes::id::sequential::{compose, decompose};
/// assert_eq!(compose(0, 7), 7);
/// assert_eq!(compose(1, 0), 1 << 31);
/// assert_eq!(decompose(compose(42, 9)), (42, 9));
/// ```
pub fn compose(epoch: u32, sequence: u32) -> u64 {
    debug_assert!(sequence < (1 << SEQUENCE_BITS));
    (u64::from(epoch) << SEQUENCE_BITS) | u64::from(sequence & ((1 << SEQUENCE_BITS) - 1))
}

/// Splits an ID into `(epoch, sequence)`; the inverse of [`compose`].
///
/// # Examples
///
/// ```
/// assert_eq!(zkr_recipes::id::sequential::decompose((3 << 31) | 5), (3, 5));
/// ```
pub fn decompose(id: u64) -> (u32, u32) {
    ((id >> SEQUENCE_BITS) as u32, (id & ((1 << SEQUENCE_BITS) - 1)) as u32)
}

/// A sequence usable as an ID: in `0..capacity`. ZooKeeper's counter is a signed 32-bit
/// number that wraps to negative values; those, and everything past the capacity, are not.
fn usable_sequence(sequence: i64, capacity: u32) -> Option<u32> {
    u32::try_from(sequence).ok().filter(|s| *s < capacity)
}

/// IDs from ZooKeeper sequence nodes: what the seeds do (create an ephemeral sequential node
/// and take its suffix), done so that it scales and never repeats.
///
/// - **Unique** across every generator on the same path, in any process, whatever the epoch's
///   counter does: every batch is recorded in the path's high-water record (`PATH/high-water`,
///   a compare-and-set on its version) before its IDs are handed out, and only if all of them
///   are above the record. A counter that goes back (an epoch node deleted and created again,
///   or a server that rolled the node's child count back) makes the batch fail that check: the
///   generator logs a warning, drops the batch and moves to a new epoch above the record.
/// - **Ordered globally**: an ID handed out after another was handed out (anywhere) is larger.
///   In particular IDs are monotonic per generator, in the order calls were made.
/// - **Not dense**: ZooKeeper's counter counts every child created under the epoch node, so
///   lost replies, other generators and epoch switches skip numbers.
/// - **Nothing left behind**: ID nodes are ephemeral and deleted once their sequence is read:
///   by the next batch's multi-op when it comes within 10 ms, else by one of their own in the
///   background; a create whose reply was lost is found by its unique prefix and deleted.
/// - **No wrap**: ZooKeeper's counter is a signed 32-bit number per parent that wraps at
///   2147483647. IDs live under epoch nodes `<path>/epoch-NNNNNNNNNN`; when a generator sees a
///   sequence at the epoch's capacity it moves every generator on to the next epoch, and the ID
///   is `epoch << 31 | sequence` (see [`compose`]), 63 bits in all.
/// - **Fast by batching**: concurrent `next()` calls and [`next_batch`](IdGenerator::next_batch)
///   share multi-ops of up to 1000 creates, one ZooKeeper transaction per batch (which also
///   deletes the previous batch's nodes) instead of one per ID; a single caller awaiting each
///   `next()` pays two writes per ID (the create and the high-water record).
///
/// Cost: each batch is two quorum writes (the creates, and the high-water record), three when
/// it comes alone (its deletes), plus a read of the record when another generator recorded a
/// batch since. A batch that another generator's later batch overtook on the way to the
/// record is dropped and drawn again. For IDs that need no ZooKeeper round trip use
/// [`SegmentIdGenerator`](super::SegmentIdGenerator) or
/// [`SnowflakeIdGenerator`](super::SnowflakeIdGenerator).
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::id::IdError> {
/// use zkr_recipes::id::{IdGenerator, SequentialIdGenerator};
///
/// let ids = SequentialIdGenerator::new(&zk, "/ids/orders")?;
/// let a = ids.next().await?;
/// let batch = ids.next_batch(100).await?;
/// assert!(batch.iter().all(|b| *b > a));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SequentialIdGenerator {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    zk: ZkClient,
    path: String,
    capacity: u32,
    /// The epoch in use, once known.
    epoch: Mutex<Option<u32>>,
    /// The batcher's queue, started by the first call.
    queue: OnceLock<mpsc::UnboundedSender<Request>>,
    /// ID nodes whose sequences were handed out, waiting to be deleted (by the batcher only).
    spent: Mutex<Vec<Spent>>,
    /// The high-water record as this generator last saw it, with its version.
    high_water: Mutex<Option<(HighWater, i32)>>,
}

/// The sequences a batch's creates got, each with the zxid it was written at (`None` when the
/// server's reply does not carry it: ZOOKEEPER-4026).
#[derive(Debug)]
struct Drawn(Vec<(i64, Option<i64>)>);

/// ID nodes created on `session` under `parent` with `prefix`, to delete.
#[derive(Debug)]
struct Spent {
    session: Session,
    parent: String,
    prefix: String,
    paths: Vec<String>,
}

#[derive(Debug)]
struct Request {
    count: usize,
    reply: oneshot::Sender<Result<Vec<u64>, IdError>>,
}

impl SequentialIdGenerator {
    /// A generator whose epoch nodes live under `path`.
    ///
    /// # Errors
    /// [`IdError::InvalidArgument`] for an invalid path (or `/`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::id::IdError> {
    /// let ids = zkr_recipes::id::SequentialIdGenerator::new(&zk, "/ids/orders")?;
    /// # Ok(()) }
    /// ```
    pub fn new(zk: &ZkClient, path: &str) -> Result<Self, IdError> {
        Self::with_epoch_capacity(zk, path, DEFAULT_EPOCH_CAPACITY)
    }

    /// A generator that moves to the next epoch after `capacity` sequences (at most
    /// [`DEFAULT_EPOCH_CAPACITY`]); small values let tests see epoch switches. Every generator
    /// on a path should use the same capacity; mixed capacities stay unique but lose the
    /// global order around a switch.
    ///
    /// # Errors
    /// [`IdError::Connection`] with an invalid path; [`IdError::InvalidArgument`] for a capacity
    /// of 0 or over the default.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::id::IdError> {
    /// let ids = zkr_recipes::id::SequentialIdGenerator::with_epoch_capacity(&zk, "/ids/test", 100)?;
    /// # Ok(()) }
    /// ```
    pub fn with_epoch_capacity(zk: &ZkClient, path: &str, capacity: u32) -> Result<Self, IdError> {
        crate::errors::check_node_path(zk, path)?;
        if capacity == 0 || capacity > DEFAULT_EPOCH_CAPACITY {
            return Err(IdError::InvalidArgument(format!(
                "epoch capacity must be in 1..={DEFAULT_EPOCH_CAPACITY}, not {capacity}"
            )));
        }
        Ok(SequentialIdGenerator {
            inner: Arc::new(Inner {
                zk: zk.clone(),
                path: path.to_owned(),
                capacity,
                epoch: Mutex::new(None),
                queue: OnceLock::new(),
                spent: Mutex::new(Vec::new()),
                high_water: Mutex::new(None),
            }),
        })
    }

    /// The path the generator's epoch nodes live under.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    async fn request(&self, count: usize) -> Result<Vec<u64>, IdError> {
        if count > MAX_BATCH {
            return Err(IdError::InvalidArgument(format!("a batch is at most {MAX_BATCH} IDs, not {count}")));
        }
        if count == 0 {
            return Ok(Vec::new());
        }
        let queue = self.inner.queue.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(Arc::clone(&self.inner).run(rx));
            tx
        });
        let (reply, answer) = oneshot::channel();
        queue.send(Request { count, reply }).map_err(|_| IdError::Closed)?;
        answer.await.map_err(|_| IdError::Closed)?
    }
}

#[async_trait::async_trait]
impl IdGenerator for SequentialIdGenerator {
    /// One ID.
    ///
    /// # Cancel safety
    /// Cancel safe: the batch it joined is drawn and cleaned up by the generator's background
    /// task whether or not anyone waits for it; a dropped call's ID is simply never used.
    async fn next(&self) -> Result<u64, IdError> {
        let ids = self.request(1).await?;
        ids.first().copied().ok_or(IdError::Closed)
    }

    /// `n` IDs (at most [`MAX_BATCH`]), increasing, in as few round trips as possible.
    ///
    /// # Cancel safety
    /// As [`next`](IdGenerator::next).
    async fn next_batch(&self, n: usize) -> Result<Vec<u64>, IdError> {
        self.request(n).await
    }
}

impl Inner {
    /// The batcher: takes every request waiting, draws their IDs together, hands them out in
    /// order. Runs until every generator handle is dropped.
    async fn run(self: Arc<Self>, mut queue: mpsc::UnboundedReceiver<Request>) {
        loop {
            let next = if self.spent.lock().is_empty() {
                queue.recv().await
            } else {
                match tokio::time::timeout(DELETE_LINGER, queue.recv()).await {
                    Ok(next) => next,
                    Err(_) => {
                        self.delete_spent(None);
                        continue;
                    }
                }
            };
            let Some(first) = next else { break };
            let mut total = first.count;
            let mut requests = vec![first];
            while total < OPS_PER_MULTI {
                match queue.try_recv() {
                    Ok(r) => {
                        total += r.count;
                        requests.push(r);
                    }
                    Err(_) => break,
                }
            }
            requests.retain(|r| !r.reply.is_closed());
            let total: usize = requests.iter().map(|r| r.count).sum();
            if total == 0 {
                continue;
            }
            match self.draw(total).await {
                Ok(ids) => {
                    let mut ids = ids.into_iter();
                    for r in requests {
                        let _ = r.reply.send(Ok(ids.by_ref().take(r.count).collect()));
                    }
                }
                Err(e) => {
                    for r in requests {
                        let _ = r.reply.send(Err(e.clone()));
                    }
                }
            }
        }
        self.delete_spent(None);
    }

    /// Deletes the spent ID nodes in the background, but for those of `keep`'s session that fit
    /// in `room` more operations: those are returned, for a multi-op on that session to delete.
    fn delete_spent(&self, keep: Option<(&Session, usize)>) -> Vec<Spent> {
        let mut kept = Vec::new();
        let mut room = keep.map_or(0, |(_, room)| room);
        for spent in self.spent.lock().drain(..) {
            let same = keep.is_some_and(|(s, _)| s.generation() == spent.session.generation());
            if same && spent.paths.len() <= room {
                room -= spent.paths.len();
                kept.push(spent);
            } else {
                self.delete_in_background(spent, false);
            }
        }
        kept
    }

    /// Draws `n` IDs, in order, moving to a new epoch when the current one is full or its
    /// counter went back. Every part is recorded in the high-water record before it is kept.
    async fn draw(&self, n: usize) -> Result<Vec<u64>, IdError> {
        let mut ids = Vec::with_capacity(n);
        // Batches refused in a row without zxids to tell overtaken from gone back.
        let mut refused = 0u32;
        while ids.len() < n {
            let epoch = self.current_epoch().await?;
            let parent = path::join(&self.path, &epoch_name(epoch));
            let wanted = n - ids.len();
            let drawn = self
                .zk
                .retry(|s| {
                    let parent = &parent;
                    async move { self.attempt(&s, parent, wanted).await }
                })
                .await;
            let drawn = match drawn {
                Ok(drawn) => drawn,
                Err(e) if e.is_no_node() => {
                    // The epoch node is gone (deleted by an administrator): look again.
                    *self.epoch.lock() = None;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let mut full = false;
            let mut batch = Vec::with_capacity(drawn.0.len());
            let mut zxids = Vec::with_capacity(drawn.0.len());
            for (sequence, zxid) in drawn.0 {
                match usable_sequence(sequence, self.capacity) {
                    Some(s) if !full => {
                        batch.push(compose(epoch, s));
                        zxids.push(zxid);
                    }
                    _ => full = true,
                }
            }
            if !batch.is_empty() {
                match self.record(&batch, &zxids, refused > 0).await? {
                    Verdict::Recorded => {
                        refused = 0;
                        ids.extend(batch);
                    }
                    Verdict::Overtaken => {
                        // A batch applied after this one was recorded first: these IDs may be
                        // below IDs already handed out, so they are dropped and drawn again.
                        refused += 1;
                        if !full {
                            continue;
                        }
                    }
                    Verdict::WentBack { mark } => {
                        refused = 0;
                        self.leave_epoch(epoch, &batch, mark).await?;
                        continue;
                    }
                }
            }
            if full {
                self.next_epoch(epoch).await?;
            }
        }
        Ok(ids)
    }

    /// One multi-op per [`OPS_PER_MULTI`] creates, all pipelined, the first also deleting the
    /// spent ID nodes of this session that fit in it; the new nodes are spent once this returns
    /// (see [`DELETE_LINGER`]). Returns the sequences in order.
    async fn attempt(
        &self,
        session: &Session,
        parent: &str,
        n: usize,
    ) -> Result<Drawn, zookeeper_client::Error> {
        let first = n.min(OPS_PER_MULTI);
        let piggyback = self.delete_spent(Some((session, OPS_PER_MULTI - first)));
        match self.create_all(session, parent, n, &piggyback).await {
            // A delete of a spent node failed (someone deleted it): nothing was applied.
            Err((Some(index), e)) if index >= first => {
                tracing::debug!(error = %e, parent, "a spent ID node was gone; creating without deletes");
                piggyback.into_iter().for_each(|spent| self.delete_in_background(spent, true));
                self.create_all(session, parent, n, &[]).await.map_err(|(_, e)| e)
            }
            Err((index, e)) => {
                // Applied or not (a lost reply): the spent nodes are looked for and deleted.
                let unknown = index.is_none();
                piggyback.into_iter().for_each(|spent| self.delete_in_background(spent, unknown));
                Err(e)
            }
            Ok(sequences) => Ok(sequences),
        }
    }

    /// The creates of [`attempt`](Self::attempt), with `piggyback`'s deletes at the end of the
    /// first multi-op. On failure, the index of the failed operation of the first multi-op
    /// when it names one (then nothing of it was applied), or `None`.
    async fn create_all(
        &self,
        session: &Session,
        parent: &str,
        n: usize,
        piggyback: &[Spent],
    ) -> Result<Drawn, (Option<usize>, zookeeper_client::Error)> {
        let client = session.client();
        let prefix = format!("{}-", Uuid::new_v4().simple());
        let node = path::join(parent, &prefix);
        let acls = self.zk.acl_for_path(&node);
        let options = CreateMode::EphemeralSequential.with_acls(Acls::new(&acls));
        let mut commits = Vec::new();
        let mut left = n;
        while left > 0 {
            let chunk = left.min(OPS_PER_MULTI);
            let mut writer = client.new_multi_writer();
            for _ in 0..chunk {
                writer.add_create(&node, &[], &options).map_err(|e| (None, e))?;
            }
            if commits.is_empty() {
                for path in piggyback.iter().flat_map(|spent| &spent.paths) {
                    writer.add_delete(path, None).map_err(|e| (None, e))?;
                }
            }
            commits.push(writer.commit());
            left -= chunk;
        }
        let mut paths = Vec::with_capacity(n);
        // The zxid each created node was written at (`None`: a server that does not say).
        let mut zxids = Vec::with_capacity(n);
        let mut failure = None;
        for (i, commit) in commits.into_iter().enumerate() {
            match commit.await {
                Ok(results) => {
                    for r in results {
                        if let MultiWriteResult::Create { path, stat } = r {
                            paths.push(path);
                            zxids.push((!stat.is_invalid()).then_some(stat.czxid));
                        }
                    }
                }
                Err(e) => {
                    let index = match &e {
                        MultiWriteError::OperationFailed { index, .. } if i == 0 => Some(*index),
                        _ => None,
                    };
                    let unknown = matches!(e, MultiWriteError::RequestFailed { .. });
                    failure = failure.or(Some((index, unknown, e)));
                }
            }
        }
        let spent = Spent { session: session.clone(), parent: parent.to_owned(), prefix, paths };
        let drawn: Vec<(i64, Option<i64>)> = spent
            .paths
            .iter()
            .zip(zxids)
            .filter_map(|(p, z)| Some((p.strip_prefix(&node)?.parse().ok()?, z)))
            .collect();
        match failure {
            // A multi-op that failed on one of its operations changed nothing; one whose reply
            // was lost may have created its nodes: find them by the prefix.
            Some((index, unknown, e)) => {
                self.delete_in_background(spent, unknown);
                Err((index, e.into()))
            }
            None => {
                self.spent.lock().push(spent);
                Ok(Drawn(drawn))
            }
        }
    }

    /// Deletes spent ID nodes: one multi-op; if that fails (or `search`: a create's outcome is
    /// unknown), by listing the epoch node for their prefix until they are gone.
    fn delete_in_background(&self, spent: Spent, search: bool) {
        let zk = self.zk.clone();
        tokio::spawn(async move {
            let Spent { session, parent, prefix, paths } = spent;
            let mut search = search;
            for chunk in paths.chunks(OPS_PER_MULTI) {
                let mut writer = session.client().new_multi_writer();
                for p in chunk {
                    if writer.add_delete(p, None).is_err() {
                        search = true;
                    }
                }
                if let Err(e) = writer.commit().await {
                    tracing::debug!(error = %e, parent, "batch delete of ID nodes failed; searching");
                    search = true;
                }
            }
            if search {
                if zk.generation() > session.generation() {
                    return; // The session ended, and its ephemeral ID nodes with it.
                }
                zk.find_and_delete_protected(&parent, &prefix).await;
            }
        });
    }
}

/// Why a node with no epochs under it is laid out for another generator, if it is: a segment
/// counter is the node's own 8-byte value; a snowflake generator keeps `leases`, `workers`
/// and `identities` under it. Epochs written there would hand out IDs from the wrong scheme.
fn foreign_layout(stat: &zookeeper_client::Stat, children: &[String]) -> Option<&'static str> {
    if stat.data_length == 8 {
        Some("it holds a segment counter (an 8-byte value), not sequential epochs")
    } else if crate::layouts::is_snowflake(children) {
        Some("it holds a snowflake generator's leases, not sequential epochs")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::epoch::parse_epoch;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn epoch_names_sort_like_numbers() {
        assert_eq!(epoch_name(0), "epoch-0000000000");
        assert_eq!(epoch_name(u32::MAX), "epoch-4294967295");
        assert_eq!(parse_epoch("epoch-0000000012"), Some(12));
        assert_eq!(parse_epoch("epoch-12"), None);
        assert_eq!(parse_epoch("lock-0000000012"), None);
    }

    #[test]
    fn wrapped_and_overfull_sequences_are_not_ids() {
        assert_eq!(usable_sequence(0, 10), Some(0));
        assert_eq!(usable_sequence(9, 10), Some(9));
        assert_eq!(usable_sequence(10, 10), None);
        assert_eq!(usable_sequence(-2_147_483_648, DEFAULT_EPOCH_CAPACITY), None);
        assert_eq!(usable_sequence(2_147_483_647, DEFAULT_EPOCH_CAPACITY), None);
        assert_eq!(
            usable_sequence(i64::from(DEFAULT_EPOCH_CAPACITY) - 1, DEFAULT_EPOCH_CAPACITY),
            Some(DEFAULT_EPOCH_CAPACITY - 1)
        );
    }

    #[test]
    fn high_water_records_round_trip_and_refuse_other_lengths() {
        let mark = HighWater { zxid: 0x1_0000_002a, id: compose(16, 344) };
        assert_eq!(HighWater::parse(&mark.bytes()), Some(mark));
        assert_eq!(&mark.bytes()[..8], &0x1_0000_002a_i64.to_be_bytes());
        assert_eq!(HighWater::parse(&[0; 8]), None);
        assert_eq!(HighWater::parse(&[]), None);
        assert_eq!(parse_epoch(HIGH_WATER_NODE), None, "never taken for an epoch");
    }

    #[test]
    fn ids_fit_63_bits() {
        assert_eq!(compose(u32::MAX, DEFAULT_EPOCH_CAPACITY - 1) >> 63, 0);
    }

    proptest! {
        #[test]
        fn compose_round_trips(epoch in any::<u32>(), sequence in 0u32..(1 << 31)) {
            prop_assert_eq!(decompose(compose(epoch, sequence)), (epoch, sequence));
        }

        #[test]
        fn ids_order_like_epoch_then_sequence(a in (any::<u32>(), 0u32..(1 << 31)), b in (any::<u32>(), 0u32..(1 << 31))) {
            prop_assert_eq!(compose(a.0, a.1).cmp(&compose(b.0, b.1)), a.cmp(&b));
        }

        #[test]
        fn usable_sequences_are_below_capacity(sequence in any::<i64>(), capacity in 1u32..=DEFAULT_EPOCH_CAPACITY) {
            if let Some(s) = usable_sequence(sequence, capacity) {
                prop_assert!(s < capacity);
                prop_assert_eq!(i64::from(s), sequence);
            } else {
                prop_assert!(sequence < 0 || sequence >= i64::from(capacity));
            }
        }
    }
}
