//! [`PersistentWatcher`]: Curator's `PersistentWatcher`, a persistent watch that outlives
//! reconnects and session expiry, on the watch engine (`crate::watch`).

use std::future::Future;

use futures::Stream;
use tokio::sync::broadcast;
use zkr_connection::SessionClient;
use zkr_connection::{path, Session, ZkClient};
use zookeeper_client::{EventType, WatchedEvent};

use crate::watch::{Consumer, Flow, Watch, WatchMode, ZkResult};

/// What a [`PersistentWatcher`] hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatcherEvent {
    /// A node under the watch was created, deleted or changed its data (or, for a watch that
    /// is not recursive, its children changed): ZooKeeper's event, path in the namespace.
    Node {
        /// What happened.
        event_type: EventType,
        /// The node it happened to.
        path: String,
    },
    /// The watch was set again after a reconnect or on a new session (Curator's
    /// `getResetListenable()`): changes while it was gone have no events, so read what you
    /// depend on again.
    Reset,
    /// This subscriber fell behind and missed `missed` events: read again as after a
    /// [`Reset`](Self::Reset).
    Lagged {
        /// How many events it missed.
        missed: u64,
    },
}

/// A persistent watch on a node (and, when recursive, everything below it) that is set again
/// after every reconnect and on every new session, until the last clone is dropped. It needs
/// ZooKeeper 3.6 or later. Cheap to clone; every clone hands out the same events.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_connection::Error> {
/// use futures::StreamExt;
/// use zkr_recipes::cache::{PersistentWatcher, WatcherEvent};
///
/// let (watcher, mut events) = PersistentWatcher::start(&zk, "/app/jobs", true).await?;
/// while let Some(event) = events.next().await {
///     match event {
///         WatcherEvent::Node { event_type, path } => println!("{event_type:?} {path}"),
///         _ => println!("watch set again: read what matters again"),
///     }
/// }
/// # drop(watcher); Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PersistentWatcher {
    path: String,
    events: broadcast::Sender<WatcherEvent>,
    _alive: crate::watch::Alive,
}

/// The engine's consumer: no copy, only events.
struct Forward {
    events: broadcast::Sender<WatcherEvent>,
    set: bool,
}

impl Consumer for Forward {
    type Read = ();

    fn read<'a>(&'a self, _session: &'a Session) -> impl Future<Output = ZkResult<()>> + Send + 'a {
        std::future::ready(Ok(()))
    }

    fn reset(&mut self, (): ()) {
        if std::mem::replace(&mut self.set, true) {
            let _ = self.events.send(WatcherEvent::Reset);
        }
    }

    async fn apply(&mut self, _client: &SessionClient, burst: Vec<WatchedEvent>) -> ZkResult<Flow> {
        for event in burst {
            let _ = self.events.send(WatcherEvent::Node { event_type: event.event_type, path: event.path });
        }
        Ok(Flow::Continue(()))
    }
}

impl PersistentWatcher {
    /// Sets the watch on `path` (recursive: also everything below it), waiting for the
    /// connection up to the manager's connection timeout; the events from then on.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](zkr_connection::Error::InvalidPath); `Unimplemented` as
    /// [`Error::Zk`](zkr_connection::Error::Zk) on a server before 3.6; a connection or retry
    /// error when the watch could not be set.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, no watch is kept.
    pub async fn start(
        zk: &ZkClient,
        path: &str,
        recursive: bool,
    ) -> Result<
        (PersistentWatcher, impl Stream<Item = WatcherEvent> + Send + Unpin + 'static),
        zkr_connection::Error,
    > {
        path::validate_path(path)?;
        let (events, first) = broadcast::channel(1024);
        let forward = Forward { events: events.clone(), set: false };
        let mut engine = Watch::new(zk, path, recursive, WatchMode::Persistent, forward);
        let established = engine.first_sync(zk.connection_timeout()).await?;
        let watcher = PersistentWatcher {
            path: path.to_owned(),
            events,
            _alive: engine.spawn_following(Some(established)),
        };
        Ok((watcher, lagging(first)))
    }

    /// The watched path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The events from now on, for another subscriber.
    pub fn events(&self) -> impl Stream<Item = WatcherEvent> + Send + Unpin + 'static {
        lagging(self.events.subscribe())
    }
}

fn lagging(
    events: broadcast::Receiver<WatcherEvent>,
) -> impl Stream<Item = WatcherEvent> + Send + Unpin + 'static {
    crate::watch::event_stream(events, |missed| WatcherEvent::Lagged { missed })
}
