//! What every queue shares: its nodes, the names its consumers wait on, taking a node (with or
//! without its lock) and creating one.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::{watch, OnceCell};
use tokio::time::Duration;
use tracing::Instrument as _;
use zkr_connection::{path, Deadline, RetryOptions, ZkClient};
use zookeeper_client::{Acls, CreateMode};

use super::item::{Busy, ItemLock};
use super::{framing, QueueError};
use crate::telemetry;
use crate::watch::names::{ChildNames, Names};
use zkr_connection::Classify as _;

/// How many ready nodes one look at the snapshot tries before looking again.
const BATCH: usize = 16;

/// How a queue orders its nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// By name: the sequence (and a priority queue's priority before it).
    Name,
    /// By the delay-until time in the name, then the sequence; a node is ready once its time
    /// has come (Curator's delay queue).
    Delay,
    /// By the name without its `|id|` (Curator's id queue).
    Id,
}

/// A queue's fixed parts and the names of its items and locks, started when first needed.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) zk: ZkClient,
    pub(crate) path: String,
    pub(crate) prefix: &'static str,
    order: Order,
    lock_path: Option<String>,
    max_items: Option<usize>,
    /// Its own node and the lock path made with persistent parents (kazoo's `ensure_path`),
    /// not containers.
    persistent_parents: bool,
    ensured: OnceCell<()>,
    items: OnceCell<ChildNames>,
    locks: OnceCell<ChildNames>,
    /// This consumer's share of `zkr_queue_items`.
    size: crate::telemetry::SizeGauge,
}

/// A node a consumer took: its path, its bytes and (lock-safe) the lock it holds.
pub(crate) struct Taken {
    pub(crate) node: String,
    pub(crate) data: Vec<u8>,
    pub(crate) lock: Option<ItemLock>,
}

/// The names a waiting consumer follows.
struct Views {
    items: watch::Receiver<Arc<Names>>,
    locks: Option<watch::Receiver<Arc<Names>>>,
}

/// Retry options for calls that are safe on any session (reads, versioned deletes, creates not
/// yet sent): a session expiry between attempts does not end them.
fn any_session() -> RetryOptions {
    RetryOptions::default().across_sessions(true)
}

/// Milliseconds since the Unix epoch (the delay queue's clock, as Curator's).
pub(crate) fn now_epoch_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Core {
    pub(crate) fn new(
        zk: &ZkClient,
        path: &str,
        prefix: &'static str,
        order: Order,
        lock_path: Option<String>,
        max_items: Option<usize>,
    ) -> Result<Self, QueueError> {
        zk.validate_recipe_path(path)?;
        if let Some(lock_path) = &lock_path {
            zk.validate_recipe_path(lock_path)?;
            if lock_path == path {
                return Err(QueueError::InvalidArgument(
                    "the lock path must differ from the queue path".into(),
                ));
            }
        }
        if max_items == Some(0) {
            return Err(QueueError::InvalidArgument("max_items must be at least 1".into()));
        }
        Ok(Core {
            size: crate::telemetry::SizeGauge::queue_items(path, zk.metrics_path_labels()),
            zk: zk.clone(),
            path: path.to_owned(),
            prefix,
            order,
            lock_path,
            max_items,
            persistent_parents: false,
            ensured: OnceCell::new(),
            items: OnceCell::new(),
            locks: OnceCell::new(),
        })
    }

    /// Makes the queue's node, the lock path and their missing parents persistent, as kazoo
    /// does (its directories are never containers).
    pub(crate) fn persistent_parents(mut self) -> Self {
        self.persistent_parents = true;
        self
    }

    pub(crate) fn is_lock_safe(&self) -> bool {
        self.lock_path.is_some()
    }

    /// Creates the queue's node (and the lock path) as persistent nodes once, as Curator's
    /// `start()` does; their parents are containers, unless made
    /// [persistent](Self::persistent_parents).
    async fn ensure(&self) -> Result<(), QueueError> {
        self.ensured
            .get_or_try_init(|| async {
                for path in std::iter::once(&self.path).chain(&self.lock_path) {
                    match self.persistent_parents {
                        true => crate::kazoo::ensure_path(&self.zk, path, &[]).await.map(drop)?,
                        false => {
                            self.zk.create_if_absent(path, &[], CreateMode::Persistent).await.map(drop)?
                        }
                    }
                }
                Ok::<(), QueueError>(())
            })
            .await
            .map(drop)
    }

    /// The names of `path`'s children (the items or their locks), listed once and then kept
    /// by a watch: no item is read before a consumer takes it.
    async fn names<'a>(
        &self,
        cell: &'a OnceCell<ChildNames>,
        path: &str,
    ) -> Result<&'a ChildNames, QueueError> {
        self.ensure().await?;
        Ok(cell.get_or_try_init(|| ChildNames::start(&self.zk, path)).await?)
    }

    async fn views(&self) -> Result<Views, QueueError> {
        let items = self.names(&self.items, &self.path).await?.snapshots();
        let locks = match &self.lock_path {
            Some(lock_path) => Some(self.names(&self.locks, lock_path).await?.snapshots()),
            None => None,
        };
        Ok(Views { items, locks })
    }

    /// The queue's node names in queue order (the prefix's nodes only: others are foreign).
    pub(crate) fn sort(&self, names: &mut Vec<String>) {
        names.retain(|n| n.starts_with(self.prefix));
        match self.order {
            Order::Name => names.sort_unstable_by(|a, b| {
                framing::split_sequence(a, self.prefix).cmp(&framing::split_sequence(b, self.prefix))
            }),
            Order::Delay => {
                names.sort_by_cached_key(|n| (framing::parse_delay(n), framing::sequence(n, self.prefix)))
            }
            Order::Id => names.sort_by_cached_key(|n| {
                let cleaned = framing::parse_id(n).map_or_else(|| n.clone(), |(_, k)| k);
                let (head, sequence) = framing::split_sequence(&cleaned, self.prefix);
                (head.to_owned(), sequence)
            }),
        }
    }

    /// The nodes to try now, in order, and when the next delayed one is due (epoch ms).
    fn ready(
        &self,
        items: &Names,
        locks: Option<&Names>,
        skip: &HashSet<String>,
    ) -> (Vec<String>, Option<u64>) {
        // Name order is the set's own order (until the sequence wraps past 2^31, when the
        // newest names sort first): walk it lazily instead of sorting it all. Wrapped names
        // (a negative sequence) sort before every other name with the prefix, so the first one
        // tells whether there are any: no walk of the whole queue per take.
        let ours = || items.iter().filter(|n| n.starts_with(self.prefix));
        let in_name_order =
            self.order == Order::Name && !ours().next().is_some_and(|n| framing::is_wrapped(n, self.prefix));
        let names: Box<dyn Iterator<Item = String>> = if in_name_order {
            Box::new(ours().map(str::to_owned))
        } else {
            let mut names: Vec<String> = items.iter().map(str::to_owned).collect();
            self.sort(&mut names);
            Box::new(names.into_iter())
        };
        let now = now_epoch_ms();
        let mut next_due = None;
        let mut ready = Vec::new();
        for name in names {
            if self.order == Order::Delay {
                let due = framing::parse_delay(&name);
                if due > now {
                    next_due = Some(due); // sorted: the first not due is the soonest
                    break;
                }
            }
            if locks.is_some_and(|l| l.contains(&name)) || skip.contains(&name) {
                continue;
            }
            ready.push(name);
            if ready.len() == BATCH {
                break;
            }
        }
        (ready, next_due)
    }

    /// Takes the first node in queue order, waiting for one until `deadline`; `None` then. In
    /// a `queue.take` span.
    pub(crate) async fn take_by(&self, deadline: Option<Deadline>) -> Result<Option<Taken>, QueueError> {
        let span = telemetry::operation_span!("queue.take", self.path.as_str());
        let started = tokio::time::Instant::now();
        let taken = self.take_waiting(deadline).instrument(span.clone()).await;
        if let Ok(Some(taken)) = &taken {
            span.record("zk.node", taken.node.rsplit('/').next().unwrap_or_default());
        }
        let outcome = taken.as_ref().map(|t| if t.is_some() { "taken" } else { "timed_out" });
        telemetry::ended(&span, started, outcome.map_err(QueueError::kind));
        taken
    }

    async fn take_waiting(&self, deadline: Option<Deadline>) -> Result<Option<Taken>, QueueError> {
        let mut views = self.views().await?;
        // Nodes another consumer got first, and the locks that keep them, looked at again
        // when the views change or such a lock does.
        let mut skip = HashSet::new();
        let mut busy = Vec::new();
        loop {
            let (ready, next_due) = self.look(&mut views, &skip);
            for name in &ready {
                match self.take_node(name).await? {
                    Ok(taken) => return Ok(Some(taken)),
                    Err(missed) => busy.extend(missed),
                }
                skip.insert(name.clone());
            }
            if !ready.is_empty() {
                continue; // look again before waiting: later nodes may be ready
            }
            let due =
                next_due.map(|ms| Deadline::after(Duration::from_millis(ms.saturating_sub(now_epoch_ms()))));
            let wake = due.into_iter().chain(deadline).min();
            let woke = zkr_connection::within(wake, changed(&mut views, std::mem::take(&mut busy))).await;
            skip.clear();
            match woke {
                Some(false) => return Err(zkr_connection::Error::Closed.into()),
                None if deadline.is_some_and(|d| d.has_passed()) => return Ok(None),
                Some(true) | None => {}
            }
        }
    }

    /// The ready nodes of the latest confirmed snapshots (none while they are unconfirmed).
    fn look(&self, views: &mut Views, skip: &HashSet<String>) -> (Vec<String>, Option<u64>) {
        let items = views.items.borrow_and_update().clone();
        let locks = views.locks.as_mut().map(|l| l.borrow_and_update().clone());
        if !items.is_confirmed() || locks.as_deref().is_some_and(|l| !l.is_confirmed()) {
            return (Vec::new(), None);
        }
        self.size.set(items.len());
        self.ready(&items, locks.as_deref(), skip)
    }

    /// Takes the node `name`: reads and deletes it (plain) or locks it and reads it (lock-safe).
    /// `Err` when another consumer got it first: with the lock that another consumer holds on
    /// it, if any.
    pub(crate) async fn take_node(&self, name: &str) -> Result<Result<Taken, Option<Busy>>, QueueError> {
        let node = path::join(&self.path, name);
        if let Some(lock_path) = &self.lock_path {
            let lock = match ItemLock::acquire(&self.zk, &path::join(lock_path, name)).await? {
                Ok(lock) => lock,
                Err(busy) => return Ok(Err(Some(busy))),
            };
            return Ok(lock
                .read(&node)
                .await?
                .map(|data| Taken { node, data, lock: Some(lock) })
                .ok_or(None));
        }
        // Read, then delete the version read: an item this consumer cannot read (no READ
        // permission, more than the client accepts) stays in the queue for one that can.
        let read = self.zk.retry_with(any_session(), |s| {
            let node = &node;
            async move { s.client().get_data(node).await }
        });
        let (data, version) = match read.await {
            Ok((data, stat)) => (data, stat.version),
            Err(e) if e.is_no_node() => return Ok(Err(None)),
            Err(e) => return Err(e.into()),
        };
        let mut attempts = 0u32;
        let deleted = self.zk.retry_with(any_session(), |s| {
            attempts += 1;
            let node = &node;
            async move { s.client().delete(node, Some(version)).await }
        });
        match deleted.await {
            Ok(()) => Ok(Ok(Taken { node, data, lock: None })),
            Err(e) if e.is_no_node() || e.is_bad_version() => {
                if attempts > 1 {
                    tracing::warn!(node = %node, "a queue item's delete lost its reply: the item may be lost (use lock safety)");
                }
                Ok(Err(None))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Takes the first node in queue order from a listing of the queue (no cache, no wait).
    pub(crate) async fn poll(&self) -> Result<Option<Taken>, QueueError> {
        for name in self.listing().await? {
            if self.order == Order::Delay && framing::parse_delay(&name) > now_epoch_ms() {
                break;
            }
            if let Ok(taken) = self.take_node(&name).await? {
                return Ok(Some(taken));
            }
        }
        Ok(None)
    }

    /// The first node's data in queue order, left in the queue.
    pub(crate) async fn peek(&self) -> Result<Option<Vec<u8>>, QueueError> {
        for name in self.listing().await? {
            let node = path::join(&self.path, &name);
            let node = &node;
            match self.zk.retry_with(any_session(), |s| async move { s.client().get_data(node).await }).await
            {
                Ok((data, _)) => return Ok(Some(data)),
                Err(e) if e.is_no_node() => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }

    /// The queue's node names, in queue order.
    pub(crate) async fn listing(&self) -> Result<Vec<String>, QueueError> {
        let listed = self
            .zk
            .retry_with(any_session(), |s| async move { s.client().list_children(&self.path).await })
            .await;
        let mut names = match listed {
            Ok(names) => names,
            Err(e) if e.is_no_node() => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        self.sort(&mut names);
        Ok(names)
    }

    /// Puts one node `<prefix><infix><sequence>` holding `data`; with a bound, waits until the
    /// queue holds fewer nodes than it, until `deadline` (`false` then, nothing created).
    pub(crate) async fn put(
        &self,
        infix: &str,
        data: &[u8],
        deadline: Option<Deadline>,
    ) -> Result<bool, QueueError> {
        let node = path::join(&self.path, &format!("{}{infix}", self.prefix));
        zkr_connection::path::validate_data(&node, data)?;
        self.ensure().await?;
        if let Some(max) = self.max_items {
            if !self.wait_for_room(max, deadline).await? {
                return Ok(false);
            }
        }
        self.create(&node, data).await.map(|_| true)
    }

    /// Puts one node `<prefix><infix><sequence>` per value, all in one transaction (kazoo's
    /// `put_all`): all of them or none. Never sent again after a lost reply (as
    /// [`create`](Self::create)). No bound applies.
    pub(crate) async fn put_all(&self, infix: &str, values: &[&[u8]]) -> Result<(), QueueError> {
        let node = path::join(&self.path, &format!("{}{infix}", self.prefix));
        for data in values {
            zkr_connection::path::validate_data(&node, data)?;
        }
        if values.is_empty() {
            return Ok(());
        }
        self.ensure().await?;
        let txn = values
            .iter()
            .fold(self.zk.transaction(), |txn, data| {
                txn.create(&node, data, CreateMode::PersistentSequential)
            })
            .retry_options(any_session().no_resend());
        txn.commit().await.map(drop).map_err(|e| self.put_failed(e))
    }

    /// A put's error: [`QueueError::Indeterminate`] when it may have been applied.
    fn put_failed(&self, e: zkr_connection::Error) -> QueueError {
        match e.is_ambiguous() {
            true => QueueError::Indeterminate { path: self.path.clone(), source: e },
            false => e.into(),
        }
    }

    /// Waits until the queue holds fewer than `max` nodes, read from ZooKeeper (the cache may
    /// not show our own latest puts yet) and waiting on the cache for a change; `false` at
    /// `deadline`.
    async fn wait_for_room(&self, max: usize, deadline: Option<Deadline>) -> Result<bool, QueueError> {
        let mut items = self.names(&self.items, &self.path).await?.snapshots();
        loop {
            items.borrow_and_update();
            let stat = self
                .zk
                .retry_with(any_session(), |s| async move { s.client().check_stat(&self.path).await })
                .await?;
            if stat.is_none_or(|s| (s.num_children as usize) < max) {
                return Ok(true);
            }
            match zkr_connection::within(deadline, items.changed()).await {
                Some(Ok(())) => {}
                Some(Err(_)) => return Err(zkr_connection::Error::Closed.into()),
                None => return Ok(false),
            }
        }
    }

    /// One sequential create, never repeated: after a lost reply it cannot be told whether it
    /// was applied (a second create could duplicate the item), so that is
    /// [`QueueError::Indeterminate`].
    async fn create(&self, node: &str, data: &[u8]) -> Result<(), QueueError> {
        let acls = self.zk.acl_for_path(node);
        // An attempt that may have been applied (its reply was lost, or its session ended with
        // it in flight) is never sent again: a second create could duplicate the item.
        let created = self.zk.retry_with(any_session().no_resend(), |s| {
            let acls = &acls;
            async move {
                let options = CreateMode::PersistentSequential.with_acls(Acls::new(acls));
                s.client().create(node, data, &options).await
            }
        });
        created.await.map(drop).map_err(|e| self.put_failed(e))
    }
}

/// Waits until one of the views has a new snapshot; `false` when a cache stopped.
/// Waits until a view changed (`false` when its cache closed) or one of the `busy` locks did.
async fn changed(views: &mut Views, busy: Vec<Busy>) -> bool {
    let Views { items, locks } = views;
    let locks = async {
        match locks.as_mut() {
            Some(locks) => locks.changed().await,
            None => std::future::pending().await,
        }
    };
    let released = async {
        if busy.is_empty() {
            std::future::pending::<()>().await;
        }
        futures::future::select_all(busy.into_iter().map(|b| Box::pin(b.released()))).await;
    };
    tokio::select! {
        changed = items.changed() => changed.is_ok(),
        changed = locks => changed.is_ok(),
        () = released => true,
    }
}
