//! [`LeaderObserver`]: who leads a `LeaderLatch` election and with what value, followed
//! without taking part (etcd's `Observe`).

use std::sync::Arc;

use futures::{Stream, StreamExt as _};
use tokio_stream::wrappers::WatchStream;
use zkr_connection::{path, ZkClient};

use super::latch::{Participant, LATCH_NAME};
use crate::cache::{CacheMode, CacheSnapshot, CuratorCache};
use crate::locks::{
    KazooLockDriver, LockError, LockInternalsDriver as _, LockLayout, StandardLockInternalsDriver, LOCK_NAME,
};

/// Follows an election from outside: the leader, with its value, and every change of it as a
/// stream. It holds no node and never takes part; any process can watch, participant or not.
///
/// It follows every election layout zkr knows, whichever runs at the path: Curator's and zkr's
/// [`LeaderLatch`](super::LeaderLatch) (`latch-` nodes; the value is what a participant joined
/// with or last [proclaimed](super::LeaderLatch::proclaim)), Curator's `LeaderSelector` (a
/// mutex's `lock-` nodes; the value is the participant's id) and kazoo's `Election` (kazoo
/// `__lock__` nodes; the value is its identifier). The view follows a cache of the
/// election's path (the shared watch engine), so it rides out disconnects and session
/// expiries; while the cache is not confirmed by the server, the last confirmed view stands.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use futures::StreamExt as _;
/// use zkr_recipes::leader::LeaderObserver;
///
/// let observer = LeaderObserver::start(&zk, "/services/billing/leader").await?;
/// let mut leaders = observer.changes();
/// while let Some(leader) = leaders.next().await {
///     match leader {
///         Some(leader) => println!("{} leads ({})", leader.id, leader.node),
///         None => println!("no leader"),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LeaderObserver {
    path: String,
    cache: CuratorCache,
}

impl LeaderObserver {
    /// Starts following the election at `path` (which need not exist yet).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an invalid path; a [`LockError::Connection`] error
    /// when ZooKeeper cannot be reached within the connection timeout and the retry policy.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is written; a dropped start leaves no watch behind.
    pub async fn start(zk: &ZkClient, path: &str) -> Result<Self, LockError> {
        let cache = CuratorCache::builder(zk, path).mode(CacheMode::Children).start().await?;
        Ok(LeaderObserver { path: path.to_owned(), cache })
    }

    /// The election's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The participants in queue order, the leader first, as the cache shows them now.
    pub fn participants(&self) -> Vec<Participant> {
        Election::of(&self.cache.snapshot(), &self.path).participants
    }

    /// The election layout of the participants the cache shows now: [`LockLayout::CuratorLatch`],
    /// [`LockLayout::CuratorMutex`] (a `LeaderSelector`) or [`LockLayout::Kazoo`]; `None` while
    /// nobody takes part.
    pub fn layout(&self) -> Option<LockLayout> {
        Election::of(&self.cache.snapshot(), &self.path).layout
    }

    /// The children of the path the cache shows now that are no participant of the election:
    /// another recipe's nodes, or nodes no layout explains. A path that holds them is perhaps
    /// no election at all (`zkr elect --observe` refuses it).
    pub fn strangers(&self) -> Vec<String> {
        Election::of(&self.cache.snapshot(), &self.path).strangers
    }

    /// The cache the view follows (the election's path and its children).
    pub fn cache(&self) -> &CuratorCache {
        &self.cache
    }

    /// The leader as the cache shows it now; `None` when nobody takes part.
    pub fn leader(&self) -> Option<Participant> {
        self.participants().into_iter().next()
    }

    /// The leader now, then every change of it (another participant, or a new value from the
    /// same one), each once; `None` while nobody takes part. Views the server has not
    /// confirmed (a disconnect) are skipped. Ends when the observer's connection manager
    /// closes.
    pub fn changes(&self) -> impl Stream<Item = Option<Participant>> + Send + Unpin + 'static {
        let path = self.path.clone();
        let mut last: Option<Option<Participant>> = None;
        WatchStream::new(self.cache.snapshots())
            .filter_map(move |snapshot: Arc<CacheSnapshot>| {
                let confirmed = snapshot.is_initialized() && !snapshot.is_stale();
                let leader =
                    confirmed.then(|| Election::of(&snapshot, &path).participants.into_iter().next());
                let changed = leader.filter(|l| last.as_ref() != Some(l));
                if let Some(leader) = &changed {
                    last = Some(leader.clone());
                }
                futures::future::ready(changed)
            })
            .boxed()
    }
}

/// An election as one snapshot of its path shows it.
struct Election {
    layout: Option<LockLayout>,
    /// In queue order, the leader first.
    participants: Vec<Participant>,
    strangers: Vec<String>,
}

/// The layouts of an election, in the order they are looked for.
const ELECTIONS: [LockLayout; 3] = [LockLayout::CuratorLatch, LockLayout::CuratorMutex, LockLayout::Kazoo];

impl Election {
    /// The participants under `path` in `snapshot` of the first election layout found there,
    /// sorted by sequence as that layout's driver sorts them, the first leading.
    fn of(snapshot: &CacheSnapshot, path: &str) -> Election {
        let names: Vec<String> = snapshot.children(path).map(|(name, _)| name.to_owned()).collect();
        let layout = ELECTIONS.into_iter().find(|&l| names.iter().any(|n| is_participant(n, l)));
        let sorted = match layout {
            Some(LockLayout::CuratorLatch) => StandardLockInternalsDriver.sort_children(&names, LATCH_NAME),
            Some(LockLayout::CuratorMutex) => StandardLockInternalsDriver.sort_children(&names, LOCK_NAME),
            Some(_) => KazooLockDriver.sort_children(&names, KazooLockDriver::LOCK_NAME),
            None => Vec::new(),
        };
        let strangers = names.iter().filter(|n| !sorted.contains(n)).cloned().collect();
        let participants = sorted
            .into_iter()
            .enumerate()
            .filter_map(|(at, name)| {
                let node = path::join(path, &name);
                let data = snapshot.get(&node)?.data();
                Some(Participant { id: String::from_utf8_lossy(data).into_owned(), node, is_leader: at == 0 })
            })
            .collect();
        Election { layout, participants, strangers }
    }
}

/// Is `name` a participant of an election in `layout` (kazoo's readers are no participants)?
fn is_participant(name: &str, layout: LockLayout) -> bool {
    LockLayout::of(name) == Some(layout)
        && (layout != LockLayout::Kazoo || name.contains(KazooLockDriver::LOCK_NAME))
}
