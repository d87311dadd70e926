//! [`LeaderObserver`]: who leads a `LeaderLatch` election and with what value, followed
//! without taking part (etcd's `Observe`).

use std::sync::Arc;

use futures::{Stream, StreamExt as _};
use tokio_stream::wrappers::WatchStream;
use zkr_connection::{path, ZkClient};

use super::latch::{Participant, LATCH_NAME};
use crate::cache::{CacheMode, CacheSnapshot, CuratorCache};
use crate::locks::{LockError, LockInternalsDriver as _, StandardLockInternalsDriver};

/// Follows a [`LeaderLatch`](super::LeaderLatch) election (zkr's or Curator's: the same
/// nodes) from outside: the leader, with the value it joined with or last
/// [proclaimed](super::LeaderLatch::proclaim), and every change of it as a stream. It holds no
/// node and never takes part; any process can watch, participant or not. The view follows a
/// cache of the election's path (the shared watch engine), so it rides out disconnects and
/// session expiries; while the cache is not confirmed by the server, the last confirmed view
/// stands.
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
        path::validate_path(path)?;
        let cache = CuratorCache::builder(zk, path).mode(CacheMode::Children).start().await?;
        Ok(LeaderObserver { path: path.to_owned(), cache })
    }

    /// The election's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The participants in queue order, the leader first, as the cache shows them now.
    pub fn participants(&self) -> Vec<Participant> {
        participants(&self.cache.snapshot(), &self.path)
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
                let leader = confirmed.then(|| participants(&snapshot, &path).into_iter().next());
                let changed = leader.filter(|l| last.as_ref() != Some(l));
                if let Some(leader) = &changed {
                    last = Some(leader.clone());
                }
                futures::future::ready(changed)
            })
            .boxed()
    }
}

/// The latch participants in `snapshot` under `path`, in queue order (Curator's and zkr's
/// `latch-` nodes, sorted by sequence; other children ignored), the first leading.
fn participants(snapshot: &CacheSnapshot, path: &str) -> Vec<Participant> {
    let names: Vec<String> = snapshot.children(path).map(|(name, _)| name.to_owned()).collect();
    let sorted = StandardLockInternalsDriver.sort_children(&names, LATCH_NAME);
    sorted
        .into_iter()
        .enumerate()
        .filter_map(|(at, name)| {
            let node = path::join(path, &name);
            let data = &snapshot.get(&node)?.data;
            Some(Participant { id: String::from_utf8_lossy(data).into_owned(), node, is_leader: at == 0 })
        })
        .collect()
}
